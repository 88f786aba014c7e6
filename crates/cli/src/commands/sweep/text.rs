//! `clockscope sweep`'s text table and Prometheus exposition (the JSON form
//! is the report serialised, documented in docs/schema/sweep.schema.json).

use crate::commands::sweep::model::{RestoreOutcome, SweepReport, SweepResult};
use crate::i18n::{num, pad_right};
use crate::report::prometheus::{flag, Families};
use crate::report::text::{column_width, head_widths, table_row, write_line};
use crate::{t, tn};
use std::io::{self, Write};

/// The human report: the one screen (the default: the table, the problems
/// and the recommendation), or (`verbose`) the full one, adding what is
/// available and where it was read, and the column legend.
pub fn write_text(out: &mut dyn Write, r: &SweepReport, verbose: bool) -> io::Result<()> {
    // Every line fitted to 100 columns (crate::report::text).
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    crate::report::text::write_header(out, &r.stamp)?;
    writeln!(out)?;
    write_clocksources(out, r, verbose)?;
    writeln!(out)?;
    if !r.applied {
        write_plan(out, r)?;
        return match &r.server {
            Some(server) => crate::commands::sweep::server_text::write_plan(out, server),
            None => Ok(()),
        };
    }
    // With the server's table (`--dsn`), which repeats each read cost, the
    // one screen leaves out the system clock's own table (`--verbose` has it).
    let server_table = r
        .server
        .as_ref()
        .is_some_and(|_| r.results.iter().any(|x| x.server_explain.is_some()));
    if verbose || !server_table {
        write_table(out, r, verbose)?;
        write_intervals(out, r)?;
    }
    write_notes(out, r)?;
    crate::commands::sweep::server_text::write(out, r, verbose)?;
    write_restore(out, r)?;
    write_recommendation(out, r)?;
    if verbose {
        return Ok(());
    }
    write_line(
        out,
        if server_table {
            t!("Full detail, with the system clock's own table: clockscope sweep --apply --verbose")
        } else {
            t!("Where it was read and what the columns mean: clockscope sweep --apply --verbose")
        },
    )
}

/// The clocksource in use, those available, and (`verbose`) where they were read.
fn write_clocksources(out: &mut dyn Write, r: &SweepReport, verbose: bool) -> io::Result<()> {
    // The labels padded to one width, counted in display columns.
    let labels = [t!("Clocksource in use:"), t!("Available:"), t!("Sysfs directory:")];
    let w = crate::report::text::column_width(labels, 1, 0);
    writeln_escaped!(out, "{}{}", pad_right(labels[0], w), r.original)?;
    writeln_escaped!(out, "{}{}", pad_right(labels[1], w), r.available.join(" "))?;
    if verbose {
        writeln_escaped!(out, "{}{}", pad_right(labels[2], w), r.clocksource_dir)?;
    }
    if !r.live_sysfs {
        write_line(
            out,
            t!(
                "Note: the swept sysfs is not /sys (--root): switching there changes no kernel clock, so every row \
                 measures the clocksource really in use."
            ),
        )?;
    } else if !r.clocksource_dir.starts_with("/sys/") {
        write_line(
            out,
            &t!(
                "Note: {dir} is on the kernel's sysfs (under another name): switching there changes the kernel's \
                 clocksource, as /sys does.",
                dir = r.clocksource_dir
            ),
        )?;
    }
    Ok(())
}

/// Without `--apply`: what the sweep would do.
fn write_plan(out: &mut dyn Write, r: &SweepReport) -> io::Result<()> {
    if !r.available.contains(&r.original) {
        write_line(
            out,
            &t!(
                "--apply would refuse: the clocksource in use, {original}, is not in available_clocksource, so \
                 once switched away it could not be put back.",
                original = r.original
            ),
        )?;
        return writeln!(out, "{}", t!("Nothing was changed."));
    }
    write_line(
        out,
        &t!(
            "Would switch to {planned} in turn, measure clock_gettime (CLOCK_MONOTONIC) for {secs} s under each \
             with `clockscope check`'s loop, then put {original} back.",
            planned = r.planned.join(", "),
            secs = crate::i18n::localize_number(r.duration_per_clocksource_s.to_string()),
            original = r.original
        ),
    )?;
    write_line(
        out,
        t!("Nothing was changed. Run `clockscope sweep --apply` as root to do it (a second Ctrl-C still restores)."),
    )
}

/// One row per clocksource measured, and (`verbose`) what the columns mean.
/// The first column is as wide as the longest name, so that the header fits
/// 100 columns for names up to 28 characters (a fixed 28 made it 104, and
/// the fitting wrapped `EXPLAIN` under the first column).
fn write_table(out: &mut dyn Write, r: &SweepReport, verbose: bool) -> io::Result<()> {
    // Each column as wide as its English heading, or wider for a longer
    // translation; padded by display columns (Cyrillic is one column a letter).
    let heads = [
        t!("clocksource"),
        t!("read cost"),
        t!("avg loop"),
        "p99",
        t!("max"),
        "clock_gettime",
        t!("PG rule"),
        "EXPLAIN",
    ];
    let (pass, fail) = (t!("pass"), t!("FAIL"));
    let name_w = crate::commands::sweep::server_text::name_width(r);
    let mut cols = head_widths(&heads, &[name_w, 10, 10, 9, 10, 13, 8, 9]);
    cols[6] = column_width([pass, fail], 0, cols[6]);
    writeln!(out, "{}", table_row(heads[0], &heads[1..], &cols))?;
    let ns = |v: String| t!("{value} ns", value = v);
    for x in &r.results {
        if !x.valid {
            writeln_escaped!(
                out,
                "{} {}",
                pad_right(&x.clocksource, cols[0]),
                t!("invalid: the clocksource changed during the measurement (below)")
            )?;
            continue;
        }
        let cells = [
            ns(num(x.read_cost.median_ns, 1)),
            ns(num(x.avg_loop_ns, 2)),
            ns(x.percentiles_ns.p99.to_string()),
            ns(x.percentiles_ns.max.to_string()),
            if x.syscall_fallback.is_some() {
                "syscall"
            } else {
                "vDSO"
            }
            .to_string(),
            match &x.postgresql_rule {
                Some(p) if p.passed => pass,
                Some(_) => fail,
                None => "-",
            }
            .to_string(),
            x.explain
                .as_ref()
                .and_then(|e| e.slowdown)
                .map_or("-".to_string(), |x| format!("{}x", num(x, 2))),
        ];
        writeln_escaped!(out, "{}", table_row(&x.clocksource, &cells, &cols))?;
    }
    if !verbose {
        return Ok(());
    }
    let legend = t!(
        "read cost: mean read without interference gaps (as in check), median of the rounds; EXPLAIN: predicted \
         count(*) slowdown at {row} ns/row ({source}).",
        row = crate::i18n::localize_number(r.baseline_row_ns.to_string()),
        source = crate::i18n::library::reason(&r.baseline_source)
    );
    writeln!(out, "{legend}")
}

/// Under the table: each valid row's read cost with its interval.
fn write_intervals(out: &mut dyn Write, r: &SweepReport) -> io::Result<()> {
    let rows: Vec<String> = r
        .results
        .iter()
        .filter(|x| x.valid)
        .map(|x| match &x.read_cost.interval {
            Some(i) => t!(
                "{clock} {cost} ({low} to {high})",
                clock = x.clocksource,
                cost = num(x.read_cost.median_ns, 1),
                low = num(i.low, 1),
                high = num(i.high, 1)
            ),
            None => t!(
                "{clock} {cost} (no interval: {n} round(s))",
                clock = x.clocksource,
                cost = num(x.read_cost.median_ns, 1),
                n = x.read_cost.samples_ns.len()
            ),
        })
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    write_line(
        out,
        &tn!(
            "Read cost, ns: the median of {n} interleaved rounds with its 95% interval: {rows}.",
            "Read cost, ns: the median of {n} interleaved rounds with its 95% interval: {rows}.",
            r.rounds,
            n = r.rounds,
            rows = rows.join(", ")
        ),
    )
}

/// Under the table: why a clocksource is a syscall, why a row is invalid,
/// and whether the sweep stopped early.
fn write_notes(out: &mut dyn Write, r: &SweepReport) -> io::Result<()> {
    for x in r.results.iter().filter(|x| x.syscall_fallback.is_some()) {
        let why = super::words::syscall_fallback(&x.clocksource, x.syscall_fallback.as_deref().unwrap_or_default());
        writeln_escaped!(out, "{}: {why}", x.clocksource)?;
    }
    for x in &r.results {
        if let Some(why) = &x.invalid_reason {
            write_line(
                out,
                &t!("Invalid row {clock}: {why}.", clock = x.clocksource, why = why),
            )?;
        }
    }
    if r.interrupted {
        writeln!(out, "{}", t!("Interrupted: the sweep stopped early."))?;
    }
    if let Some(why) = &r.changed_by_others {
        write_line(out, &t!("Stopped: {why}.", why = why))?;
    }
    Ok(())
}

/// Whether the original clocksource was put back, or left alone.
fn write_restore(out: &mut dyn Write, r: &SweepReport) -> io::Result<()> {
    match r.restore {
        Some(RestoreOutcome::LeftAlone) => write_line(
            out,
            &t!(
                "Not restored: {current} is in use, put there by someone else after the sweep's last switch, and \
                 is left alone; the original was {original} (echo {original} > {dir}/current_clocksource puts it \
                 back).",
                current = r.final_clocksource.as_deref().unwrap_or("?"),
                original = r.original,
                dir = r.clocksource_dir
            ),
        ),
        _ => write_line(out, &t!("Restored: {original} (read back).", original = r.original)),
    }
}

/// Why the recommendation (the report's English, for JSON) in the reader's
/// language: judged again from the report's rows in that language, used
/// only when its English is exactly the report's.
fn recommendation_why(r: &SweepReport, why: &str) -> String {
    if crate::i18n::current().is_english() {
        return why.to_string();
    }
    let repeat = r.server.as_ref().and_then(|s| s.original_again.as_ref());
    let again = || crate::commands::sweep::judge::recommend_words(&r.results, &r.original, repeat).map(|x| x.why);
    match crate::i18n::in_english(again) {
        Some(english) if english == why => again().unwrap_or(english),
        _ => crate::i18n::library::reason(why),
    }
}

/// The recommended clocksource and how to make it persist.
fn write_recommendation(out: &mut dyn Write, r: &SweepReport) -> io::Result<()> {
    if let Some(rec) = &r.recommendation {
        writeln!(out)?;
        let why = recommendation_why(r, &rec.why);
        let line = if rec.in_use {
            t!(
                "Recommendation: {clocksource} (in use, keep it): {why}",
                clocksource = rec.clocksource,
                why = why
            )
        } else {
            t!(
                "Recommendation: {clocksource}: {why}",
                clocksource = rec.clocksource,
                why = why
            )
        };
        writeln_escaped!(out, "{line}")?;
        // The advice the report holds (English, for JSON), in the reader's language.
        let advice = if r.persistence.is_empty() || crate::i18n::current().is_english() {
            r.persistence.clone()
        } else {
            crate::commands::sweep::judge::persistence_advice(&rec.clocksource)
        };
        for line in &advice {
            writeln_escaped!(out, "  - {line}")?;
        }
    }
    Ok(())
}

/// A per-clocksource gauge: its name, help, and value of a row (if it has one).
type PerClocksource = (&'static str, &'static str, fn(&SweepResult) -> Option<f64>);

/// The per-clocksource gauges, in the order they are rendered.
fn per_clocksource_gauges() -> [PerClocksource; 9] {
    [
        (
            "sweep_read_cost_ns",
            "Read cost of clock_gettime under this clocksource (as check's: the mean read without interference gaps; the median of the interleaved rounds), nanoseconds.",
            |x| Some(x.read_cost.median_ns),
        ),
        (
            "sweep_read_cost_low_ns",
            "Lower end of the 95% interval of the median read cost under this clocksource, nanoseconds (absent under 6 rounds).",
            |x| x.read_cost.interval.map(|i| i.low),
        ),
        (
            "sweep_read_cost_high_ns",
            "Upper end of the 95% interval of the median read cost under this clocksource, nanoseconds (absent under 6 rounds).",
            |x| x.read_cost.interval.map(|i| i.high),
        ),
        (
            "sweep_avg_loop_ns",
            "Average time of one clock_gettime read plus loop bookkeeping under this clocksource, nanoseconds.",
            |x| Some(x.avg_loop_ns),
        ),
        (
            "sweep_p99_ns",
            "99th percentile of the successive-read differences, nanoseconds.",
            |x| Some(x.percentiles_ns.p99 as f64),
        ),
        ("sweep_max_ns", "Largest successive-read difference, nanoseconds.", |x| {
            Some(x.percentiles_ns.max as f64)
        }),
        (
            "sweep_syscall_fallback",
            "1 when clock_gettime behaves like a syscall under this clocksource, 0 when it stays in the vDSO.",
            |x| Some(flag(x.syscall_fallback.is_some())),
        ),
        (
            "sweep_postgresql_rule_passed",
            "1 when the system clock passes PostgreSQL's pg_test_timing rule under this clocksource.",
            |x| x.postgresql_rule.as_ref().map(|p| flag(p.passed)),
        ),
        (
            "sweep_explain_slowdown",
            "Predicted EXPLAIN ANALYZE slowdown of a row-heavy count(*) under this clocksource (ratio).",
            |x| x.explain.as_ref().and_then(|e| e.slowdown),
        ),
    ]
}

/// Writes the Prometheus text: gauges prefixed `clockscope_sweep_`, labelled by clocksource.
pub fn write_prometheus(out: &mut dyn Write, r: &SweepReport) -> io::Result<()> {
    let mut f = Families::new();
    per_clocksource(&mut f, r, &per_clocksource_gauges());
    if r.server.is_some() {
        per_clocksource(&mut f, r, &server_gauges());
    }
    clocksource_families(&mut f, r);
    run_families(&mut f, r);
    out.write_all(f.out.as_bytes())
}

/// One family per gauge, a sample per valid row that has a value.
fn per_clocksource(f: &mut Families, r: &SweepReport, gauges: &[PerClocksource]) {
    for (name, help, get) in gauges {
        f.head(name, help);
        // An invalid row measured another clocksource too: no numbers under this name.
        for x in r.results.iter().filter(|x| x.valid) {
            if let Some(v) = get(x) {
                f.sample(name, &[("clocksource", &x.clocksource)], v);
            }
        }
    }
}

/// `--dsn`: the server's measured EXPLAIN ANALYZE overhead per clocksource.
fn server_gauges() -> [PerClocksource; 4] {
    [
        (
            "sweep_server_overhead_per_row_ns",
            "EXPLAIN ANALYZE's measured overhead per row on the server (--dsn) under this clocksource, nanoseconds.",
            |x| x.server_explain.as_ref().map(|e| e.overhead_per_row_ns),
        ),
        (
            "sweep_server_overhead_per_row_low_ns",
            "Lower end of the 95% interval of that overhead per row, nanoseconds (absent without an interval).",
            |x| x.server_explain.as_ref().and_then(|e| e.overhead_per_row_low_ns),
        ),
        (
            "sweep_server_overhead_per_row_high_ns",
            "Upper end of the 95% interval of that overhead per row, nanoseconds (absent without an interval).",
            |x| x.server_explain.as_ref().and_then(|e| e.overhead_per_row_high_ns),
        ),
        (
            "sweep_server_slowdown",
            "EXPLAIN ANALYZE's measured slowdown (TIMING ON / OFF, the median block) on the server under this clocksource (ratio).",
            |x| x.server_explain.as_ref().map(|e| e.slowdown),
        ),
    ]
}

/// Which clocksource was the original, which is recommended, which rows are invalid.
fn clocksource_families(f: &mut Families, r: &SweepReport) {
    f.head(
        "sweep_original",
        "1 for the clocksource in use before the sweep (restored after it).",
    );
    f.sample("sweep_original", &[("clocksource", &r.original)], 1.0);
    if let Some(rec) = &r.recommendation {
        f.head("sweep_recommended", "1 for the clocksource clockscope recommends.");
        f.sample("sweep_recommended", &[("clocksource", &rec.clocksource)], 1.0);
    }
    f.head(
        "sweep_invalid",
        "1 for a clocksource whose measurement is invalid: the clocksource changed during it, not by the sweep.",
    );
    for x in &r.results {
        f.sample("sweep_invalid", &[("clocksource", &x.clocksource)], flag(!x.valid));
    }
}

/// The sweep itself: left alone, applied, interrupted.
fn run_families(f: &mut Families, r: &SweepReport) {
    f.single(
        "sweep_left_alone",
        "1 when someone else changed the clocksource under the sweep and it was left in place, not restored.",
        flag(r.restore == Some(RestoreOutcome::LeftAlone)),
    );
    f.single(
        "sweep_applied",
        "1 when clocksources were switched (--apply).",
        flag(r.applied),
    );
    f.single(
        "sweep_interrupted",
        "1 when Ctrl-C or SIGTERM stopped the sweep early.",
        flag(r.interrupted),
    );
}

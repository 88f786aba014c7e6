//! The full human report of `clockscope check -v`: environment with every
//! check, one row per clock with every percentile, the interference, and the
//! verdict with every rule and piece of advice and the numbers behind them.
//! The default is the one-screen [`super::screen`].

use crate::commands::check::model::stats::ClockStats;
use crate::commands::check::model::verdict::{ExplainPrediction, Status};
use crate::commands::check::model::{CheckReport, MeasurementQuality};
use crate::i18n::num;
use crate::t;
use clockscope_system::escape::escape_untrusted as esc;
use std::io::{self, Write};

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// The headline: ns TIMING ON adds per row per timed plan node in the
/// instrumentation model, with its interval, or why there is none; the
/// back-to-back read cost beside it for comparison.
fn prediction_line(p: &ExplainPrediction) -> String {
    t!(
        "{clock}: {per_row}; back to back 2 x {ns} ns",
        clock = esc(&p.clock),
        per_row = p.per_row_text(),
        ns = num(p.per_read_ns, 1)
    )
}

/// The slowdown at the baseline, labelled an example unless it was
/// measured; `None` without a prediction.
fn slowdown_line(p: &ExplainPrediction, example: bool) -> Option<String> {
    let (on, x) = (p.count_timing_on_ms?, p.slowdown?);
    let interval = match (p.slowdown_low, p.slowdown_high) {
        (Some(lo), Some(hi)) => t!(", 95% interval {low}x to {high}x", low = num(lo, 3), high = num(hi, 3)),
        _ => String::new(),
    };
    let line = t!(
        "count(*) of 1M rows {off} ms -> {on} ms ({x}x{interval})",
        off = num(p.count_timing_off_ms, 1),
        on = num(on, 1),
        x = num(x, 2),
        interval = interval
    );
    Some(if example {
        t!("example: {line}", line = line)
    } else {
        line
    })
}

/// How long each clock was measured, from the measurements: "0.38 s each,
/// within 1 s per clock" ("0.38-0.50 s each, ..."), or, for an interrupted
/// run, "measured 0.20 s each of 20 s asked for, interrupted".
pub fn measured_time(r: &CheckReport) -> String {
    let secs: Vec<f64> = r.clocks.iter().map(|c| c.elapsed_ns as f64 / 1e9).collect();
    let lo = secs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = secs.iter().copied().fold(0.0, f64::max);
    let asked = r.duration_per_clock_s;
    let asked = crate::i18n::localize_number(asked.to_string());
    if secs.is_empty() {
        return t!("none measured of {asked} s asked for", asked = asked);
    }
    // Two decimals, more below 0.1 s (a 1 ms run is not "0.00 s").
    let fmt = |s: f64| if s >= 0.1 { num(s, 2) } else { num(s, 4) };
    let span = if fmt(lo) == fmt(hi) {
        t!("{seconds} s", seconds = fmt(hi))
    } else {
        t!("{low}-{high} s", low = fmt(lo), high = fmt(hi))
    };
    // `-d` is each clock's budget: its measurement (half of it when the
    // first run is clean; repeats of a noisy run inside it) and its EXPLAIN
    // model; a chunk may overrun it on a busy machine.
    if r.interrupted {
        t!(
            "measured {span} each of {asked} s asked for, interrupted",
            span = span,
            asked = asked
        )
    } else {
        t!("{span} each, within {asked} s per clock", span = span, asked = asked)
    }
}

/// How noisy the run was, as a figure, for both text forms: "measurement:
/// 0.3% of the run lost to interference (quiet; noisy from 10%)" or
/// "measurement: NOISY, 45.2% of the run lost to interference (noisy from
/// 10%)".
pub fn interference_words(r: &CheckReport) -> String {
    let pct = r.interference_lost_fraction * 100.0;
    let from = clockscope_system::interference::NOISY_LOST_FRACTION * 100.0;
    // One decimal, two below 1% (a quiet run is not "0.0%").
    let figure = if pct >= 1.0 { num(pct, 1) } else { num(pct, 2) };
    let from = num(from, 0);
    match r.measurement_quality {
        MeasurementQuality::Clean => t!(
            "measurement: {figure}% of the run lost to interference (quiet; noisy from {from}%)",
            figure = figure,
            from = from
        ),
        MeasurementQuality::Noisy => t!(
            "measurement: NOISY, {figure}% of the run lost to interference (noisy from {from}%)",
            figure = figure,
            from = from
        ),
    }
}

/// One clock's interference line (at most 100 columns for names up to 16):
/// read cost beside the average loop, time lost in gaps, steal, cgroup
/// throttling, involuntary context switches ("?" when unknown here).
pub fn interference_line(c: &ClockStats, name_w: usize) -> String {
    let i = &c.interference;
    let unknown = || "?".to_string();
    let steal = i.steal_ns.map_or_else(unknown, |s| t!("{ms} ms", ms = s / 1_000_000));
    let throttled = match (i.throttled_periods, i.periods) {
        (Some(t), Some(p)) => format!("{t}/{p}"),
        _ => unknown(),
    };
    let csw = i.involuntary_switches.map_or_else(unknown, |n| n.to_string());
    let rest = crate::tn!(
        "ns (avg loop {avg}); lost {lost}% in {gaps} gaps; steal {steal}; throttled {throttled}; csw {csw}",
        "ns (avg loop {avg}); lost {lost}% in {gaps} gaps; steal {steal}; throttled {throttled}; csw {csw}",
        i.gaps,
        avg = num(c.avg_loop_ns, 2),
        lost = num(i.lost_fraction * 100.0, 1),
        gaps = i.gaps,
        steal = steal,
        throttled = throttled,
        csw = csw
    );
    format!(
        "  {} {} {rest}",
        crate::i18n::pad_right(&c.name, name_w),
        crate::i18n::pad_left(&num(c.read_cost_ns, 2), 8)
    )
}

/// Writes the interference block: one line per clock, what a noisy or
/// repeated clock saw, and the run's quality.
fn write_interference(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    if r.clocks.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        t!("Read cost without interference (gaps: differences > 20 x p50, at least 1 us, taken out)")
    )?;
    let name_w = r.clocks.iter().map(|c| c.name.len()).max().unwrap_or(5).max(5);
    for c in &r.clocks {
        writeln!(out, "{}", interference_line(c, name_w))?;
        let i = &c.interference;
        let repeats = crate::commands::check::model::repeats_words(c, r.duration_per_clock_s);
        let repeats = if repeats.is_empty() {
            repeats
        } else {
            format!("; {repeats}")
        };
        let seen = match c.noise() {
            Some(why) => Some(t!("noisy: {why}{repeats}", why = why, repeats = repeats)),
            None if i.runs > 1 => {
                let first = i.noise_by_run.iter().flatten().next().map_or("", String::as_str);
                Some(t!(
                    "clean after repeats (run 1 noisy: {first}){repeats}",
                    first = first,
                    repeats = repeats
                ))
            }
            None => None,
        };
        if let Some(seen) = seen {
            for line in crate::report::fit::wrap(&esc(&seen), "      ", 100) {
                writeln!(out, "{line}")?;
            }
        }
    }
    for line in crate::report::fit::wrap(&interference_words(r), "  ", 100) {
        writeln!(out, "{line}")?;
    }
    for line in [
        t!("  ns = read cost without the gaps (avg loop = with them); steal in ms; throttled = cgroup periods;"),
        t!("  csw = involuntary context switches of the measuring thread; ? = not readable here."),
        t!("  The read cost is the clock's own cost: lower than pg_test_timing's loop by design (its loop"),
        t!("  converts and counts every difference as PostgreSQL 19's does; run pg_test_timing for its numbers)."),
    ] {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// Writes the full text report (`-v/--verbose`).
pub fn write(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    // Every line fitted to 100 columns (crate::report::text).
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    crate::report::text::write_header(out, &r.stamp)?;
    writeln!(out)?;
    write_environment(out, r)?;
    writeln!(out)?;
    write_clocks(out, r)?;
    write_interference(out, r)?;
    writeln!(out)?;
    write_verdict(out, r)?;
    write_interrupted(out, r)?;
    Ok(())
}

/// The environment block: kernel, clocksource, CPU, hypervisor,
/// PostgreSQL, the CPU counter, NTP and the kernel's messages.
fn write_environment(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let e = &r.environment;
    let label = |l: &str| crate::i18n::pad_right(l, env_label_width());
    let or = |v: Option<&str>, none: &str| v.map_or_else(|| none.to_string(), |s| esc(s).into_owned());
    writeln!(out, "{}", t!("Environment"))?;
    writeln!(
        out,
        "  {}{}",
        label(t!("kernel")),
        or(e.kernel_release.as_deref(), t!("unknown"))
    )?;
    let avail = if e.available_clocksources.is_empty() {
        String::new()
    } else {
        t!(" (available: {list})", list = esc(&e.available_clocksources.join(" ")))
    };
    let cs = or(e.current_clocksource.as_deref(), t!("unknown"));
    writeln!(out, "  {}{cs}{avail}", label(t!("clocksource")))?;
    let cpus = e.cpus.map_or(String::new(), |n| {
        let cpuset = match e.cgroup_cpuset_cpus {
            Some(c) if c != n => format!(" (cgroup cpuset: {c})"),
            _ => String::new(),
        };
        format!(
            ", {}{cpuset}",
            crate::tn!("{n} CPU usable", "{n} CPUs usable", n, n = n)
        )
    });
    let cpu = or(e.cpu_model.as_deref(), t!("unknown"));
    writeln!(out, "  {}{cpu} ({}){cpus}", label(t!("CPU")), e.arch)?;
    let hv = or(e.hypervisor.as_deref(), t!("none detected"));
    writeln!(out, "  {}{hv}", label(t!("hypervisor")))?;
    let installed = if e.postgresql_installed_majors.is_empty() {
        t!("none found in /usr/lib/postgresql").to_string()
    } else {
        let list: Vec<String> = e.postgresql_installed_majors.iter().map(u32::to_string).collect();
        t!("{versions} installed (/usr/lib/postgresql)", versions = list.join(", "))
    };
    writeln!(out, "  {}{installed}", label("PostgreSQL"))?;
    write_counter(out, r)
}

/// The environment's label column: 14 in English, as wide as the widest
/// label (and a space) in the report's language.
fn env_label_width() -> usize {
    let labels = [
        t!("kernel"),
        t!("clocksource"),
        t!("CPU"),
        t!("hypervisor"),
        t!("CPU counter"),
        t!("frequency"),
    ];
    labels
        .iter()
        .map(|l| textwrap::core::display_width(l) + 1)
        .max()
        .unwrap_or(0)
        .max(14)
}

/// The environment's CPU counter (trust, frequency, evidence), NTP and
/// kernel messages.
fn write_counter(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let e = &r.environment;
    let w = env_label_width();
    let label = |l: &str| crate::i18n::pad_right(l, w);
    let trust = match e.counter_trusted {
        Some(true) => t!("trusted"),
        Some(false) => t!("NOT trusted"),
        None => t!("not assessed"),
    };
    writeln!(out, "  {}{trust}", label(t!("CPU counter")))?;
    if let Some(k) = e.counter_frequency_khz {
        let source = e.counter_frequency_source.as_deref().map_or_else(
            || t!("source unknown").to_string(),
            |s| esc(&crate::i18n::library::reason(s)).into_owned(),
        );
        let freq = t!("{khz} kHz, from {source}", khz = k, source = source);
        writeln!(out, "  {}{freq}", label(t!("frequency")))?;
    }
    for ev in &e.counter_evidence {
        writeln!(out, "  {}{}", " ".repeat(w), esc(&crate::i18n::library::reason(ev)))?;
    }
    if let Some(clockscope_system::counter::CounterDetails::Tsc(t)) = &r.tsc {
        if let Some(v) = &t.postgresql19 {
            writeln!(out, "  PostgreSQL 19")?;
            crate::commands::tsc::pg19::write(out, "    ", v)?;
        }
    }
    writeln!(out, "  NTP")?;
    crate::commands::tsc::evidence::write_ntp(
        out,
        "    ",
        e.ntp.as_ref().ok_or(e.ntp_unavailable.as_deref().unwrap_or("not read")),
    )?;
    if !e.kernel_messages.is_empty() {
        writeln!(out, "  kernel log")?;
        crate::commands::tsc::evidence::write_kernel_messages(out, "    ", &e.kernel_messages, e.machine)?;
    }
    Ok(())
}

/// The clocks table: one row per clock, the skipped ones, the names in
/// full and what the columns mean.
fn write_clocks(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    writeln!(
        out,
        "{}",
        t!(
            "Clocks ({measured}; differences between successive reads, ns)",
            measured = measured_time(r)
        )
    )?;
    // Rows are named as `--clock` names them (at most 16 columns), so the
    // table fits 100 columns; the legend below names each clock in full.
    let name_w = r.clocks.iter().map(|c| c.name.len()).max().unwrap_or(5).max(5);
    let heads = [
        t!("clock"),
        t!("avg loop"),
        "p50",
        "p90",
        "p99",
        "p99.9",
        "p99.99",
        "max",
        "res",
        "zero%",
        t!("backward"),
        "getres",
    ];
    let mut w = [5, 8, 5, 5, 5, 6, 7, 8, 7, 6, 8, 7];
    for (w, h) in w.iter_mut().zip(heads) {
        *w = (*w).max(textwrap::core::display_width(h));
    }
    w[0] = w[0].max(name_w);
    let mut head = format!("  {}", crate::i18n::pad_right(heads[0], w[0]));
    for (h, w) in heads.iter().zip(w).skip(1) {
        head.push(' ');
        head.push_str(&crate::i18n::pad_left(h, w));
    }
    writeln!(out, "{head}")?;
    for c in &r.clocks {
        writeln!(out, "{}", clock_row(c, &w))?;
    }
    write_skipped_and_names(out, r, w[0])?;
    for line in [
        t!("  avg loop = average time per read in clockscope's lean loop, interference included (the read cost"),
        t!("  below leaves it out); res = smallest non-zero step; backward = count/largest ns (0 when none);"),
        t!("  percentiles above 10000 ns are log2-bucket upper bounds, max is exact."),
    ] {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// One clock's row of the clocks table, in the columns `w`.
fn clock_row(c: &ClockStats, w: &[usize; 12]) -> String {
    let p = &c.percentiles_ns;
    let back = if c.backward_steps == 0 {
        "0".to_string()
    } else {
        format!("{}/{}", c.backward_steps, c.largest_backward_ns)
    };
    let cells = [
        num(c.avg_loop_ns, 2),
        p.p50.to_string(),
        p.p90.to_string(),
        p.p99.to_string(),
        p.p99_9.to_string(),
        p.p99_99.to_string(),
        p.max.to_string(),
        opt(&c.resolution_ns),
        num(c.zero_steps_pct, 2),
        back,
        opt(&c.clock_getres_ns),
    ];
    let mut row = format!("  {}", crate::i18n::pad_right(&esc(&c.name), w[0]));
    for (cell, w) in cells.iter().zip(&w[1..]) {
        row.push(' ');
        row.push_str(&crate::i18n::pad_left(cell, *w));
    }
    if c.interrupted {
        row.push_str(t!("  (interrupted)"));
    }
    row
}

/// One verdict line: a label in one column, then the finding (which may
/// quote the kernel: a clocksource name).
fn item(out: &mut dyn Write, label: &str, text: &str) -> io::Result<()> {
    writeln!(out, "  {} {}", crate::i18n::pad_right(label, 24), esc(text))
}

fn pass(b: bool) -> &'static str {
    if b {
        t!("pass")
    } else {
        t!("FAIL")
    }
}

/// The verdict: its status and summary, the rules, the EXPLAIN ANALYZE
/// prediction, the advice and the problems.
fn write_verdict(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    // The sentences in the report's language.
    let v = r.verdict.text();
    let word = status_word(v.status);
    writeln!(
        out,
        "{}",
        t!(
            "Verdict: {status}. {headline}",
            status = word,
            headline = esc(&v.summary)
        )
    )?;
    if let Some(p) = &v.postgresql_rule {
        item(
            out,
            t!("PostgreSQL's rule"),
            &format!("{}: {}", pass(p.passed), p.detail),
        )?;
    }
    if let Some(n) = &v.interference_note {
        // Wrapped under the findings' column: it is long and says why the status is not BAD.
        for line in crate::report::fit::wrap(n, "", 100 - 27) {
            item(out, "", &line)?;
        }
    }
    if let Some(m) = &v.modern_rule {
        item(
            out,
            t!("clockscope's rule"),
            &format!("{}: {}", pass(m.passed), m.detail),
        )?;
    }
    write_explain(out, r)?;
    for (name, advice) in [
        ("track_io_timing", &v.track_io_timing),
        ("track_wal_io_timing", &v.track_wal_io_timing),
        ("auto_explain.log_timing", &v.auto_explain_log_timing),
    ] {
        if let Some(a) = advice {
            item(out, name, &format!("{}: {}", advice_word(a.word()), a.why))?;
        }
    }
    if let Some(p) = &v.postgresql19_auto_picks {
        item(
            out,
            "PostgreSQL 19",
            &t!("timing_clock_source=auto picks '{value}' here", value = p),
        )?;
    }
    if let Some(rec) = &v.timing_clock_source_recommendation {
        item(out, t!("recommendation"), rec)?;
    }
    super::write_problems(out, &v.problems, item)
}

/// The EXPLAIN ANALYZE lines of the verdict: the baseline, then each
/// clock's prediction with its slowdown.
fn write_explain(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let v = &r.verdict;
    if v.explain_system.is_some() || v.explain_tsc.is_some() {
        let baseline = if v.baseline_is_example {
            t!("example baseline, measured elsewhere")
        } else {
            t!("your baseline")
        };
        let line = t!(
            "{baseline}: {ns} ns/row with TIMING OFF ({source})",
            baseline = baseline,
            ns = num(v.baseline_row_ns, 2),
            source = v.baseline_source
        );
        item(out, "EXPLAIN ANALYZE", &line)?;
    }
    if let Some(p) = &v.explain_system {
        item(out, "", &prediction_line(p))?;
        if let Some(line) = slowdown_line(p, v.baseline_is_example) {
            item(out, "", &format!("  {line}"))?;
        }
    }
    if let Some(p) = &v.explain_tsc {
        let who = if p.used_by_postgresql {
            t!("PostgreSQL 19 fast read")
        } else {
            t!("not read by PostgreSQL 19 here")
        };
        item(out, "", &format!("{who}, {}", prediction_line(p)))?;
        if let Some(line) = slowdown_line(p, v.baseline_is_example) {
            item(out, "", &format!("  {line}"))?;
        }
    }
    Ok(())
}

/// An advice's word ([`Advice::word`](crate::commands::check::model::verdict::Advice::word)) in the report's language.
fn advice_word(word: &'static str) -> &'static str {
    match word {
        "safe" => t!("safe"),
        "costly" => t!("costly"),
        "NOT safe" => t!("NOT safe"),
        "not resolved" => t!("not resolved"),
        "not priced" => t!("not priced"),
        "cheap" => t!("cheap"),
        other => other,
    }
}

/// The verdict's status as the report prints it.
pub fn status_word(s: Status) -> &'static str {
    match s {
        Status::Good => t!("GOOD"),
        Status::Fair => t!("FAIR"),
        Status::Bad => t!("BAD"),
        Status::Broken => t!("BROKEN"),
        Status::NoVerdict => t!("NO VERDICT"),
    }
}

/// The skipped clocks' rows and the legend naming each clock in full (both
/// text forms print them under their clocks table).
pub(super) fn write_skipped_and_names(out: &mut dyn Write, r: &CheckReport, name_w: usize) -> io::Result<()> {
    for s in &r.skipped {
        let skipped = t!(
            "skipped: {reason}",
            reason = esc(&crate::i18n::library::reason(&s.reason))
        );
        writeln!(out, "  {} {skipped}", crate::i18n::pad_right(&esc(&s.name), name_w))?;
    }
    let names: Vec<String> = r
        .clocks
        .iter()
        .map(|c| format!("{} = {}", esc(&c.name), esc(&c.display_name)))
        .collect();
    if !names.is_empty() {
        writeln!(out, "  {}", names.join("; "))?;
    }
    Ok(())
}

/// The line that says a Ctrl-C (or SIGTERM) cut the run short (both text forms).
pub(super) fn write_interrupted(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    if r.interrupted {
        writeln!(
            out,
            "{}",
            t!("Interrupted: the numbers above cover only what was measured before Ctrl-C (or SIGTERM).")
        )?;
    }
    Ok(())
}

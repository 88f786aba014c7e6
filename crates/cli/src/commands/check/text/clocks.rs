//! The clocks section at both levels: one row per clock (read cost, average
//! loop, p99 and backward steps on the one screen; every percentile, the
//! resolution and the backward steps' size in the full report), the skipped
//! clocks and each clock's name in full, and the full report's interference
//! block.

use super::{interference_words, measured_time, write_skipped_and_names, Detail};
use crate::commands::check::model::stats::ClockStats;
use crate::commands::check::model::CheckReport;
use crate::i18n::{library::reason, num};
use crate::report::text::{column_width, head_widths, or_dash, table_row, write_line};
use crate::t;
use clockscope_system::escape::escape_untrusted as esc;
use std::io::{self, Write};

/// Writes the clocks table at `detail`.
pub(super) fn write(out: &mut dyn Write, r: &CheckReport, detail: Detail) -> io::Result<()> {
    match detail {
        Detail::Screen => {
            writeln!(out, "{}", t!("Clocks ({measured}; ns)", measured = measured_time(r)))?;
            let heads = [t!("clock"), t!("read cost"), t!("avg loop"), "p99", t!("backward")];
            write_table(out, r, &heads, &[5, 10, 9, 7, 9], |c| {
                vec![
                    num(c.read_cost_ns, 2),
                    num(c.avg_loop_ns, 2),
                    c.percentiles_ns.p99.to_string(),
                    c.backward_steps.to_string(),
                ]
            })?;
            let legend = t!(
                "read cost = per read, interference gaps taken out; avg loop = with them; backward = backward steps"
            );
            writeln!(out, "  {legend}")?;
            writeln!(out, "  {}", interference_words(r))
        }
        Detail::Full => {
            let title = t!(
                "Clocks ({measured}; differences between successive reads, ns)",
                measured = measured_time(r)
            );
            writeln!(out, "{title}")?;
            // Rows are named as `--clock` names them (at most 16 columns), so the
            // table fits 100 columns; the legend below names each clock in full.
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
            write_table(out, r, &heads, &[5, 8, 5, 5, 5, 6, 7, 8, 7, 6, 8, 7], full_cells)?;
            for line in [
                t!("  avg loop = average time per read in clockscope's lean loop, interference included (the read cost"),
                t!("  below leaves it out); res = smallest non-zero step; backward = count/largest ns (0 when none);"),
                t!("  percentiles above 10000 ns are log2-bucket upper bounds, max is exact."),
            ] {
                writeln!(out, "{line}")?;
            }
            Ok(())
        }
    }
}

/// The table: the headings, one row per clock (its name, then `cells`),
/// the skipped clocks and the clocks' names in full. Each column is as wide
/// as its heading in the report's language and at least `min_widths`; the
/// first as wide as the longest clock name.
fn write_table(
    out: &mut dyn Write,
    r: &CheckReport,
    heads: &[&str],
    min_widths: &[usize],
    cells: impl Fn(&ClockStats) -> Vec<String>,
) -> io::Result<()> {
    let mut w = head_widths(heads, min_widths);
    w[0] = column_width(r.clocks.iter().map(|c| &c.name), 0, w[0]);
    writeln!(out, "  {}", table_row(heads[0], &heads[1..], &w))?;
    for c in &r.clocks {
        let mut row = format!("  {}", table_row(&esc(&c.name), &cells(c), &w));
        if c.interrupted {
            row.push_str(t!("  (interrupted)"));
        }
        writeln!(out, "{row}")?;
    }
    write_skipped_and_names(out, r, w[0])
}

/// One clock's cells in the full table (after its name).
fn full_cells(c: &ClockStats) -> Vec<String> {
    let p = &c.percentiles_ns;
    let back = if c.backward_steps == 0 {
        "0".to_string()
    } else {
        format!("{}/{}", c.backward_steps, c.largest_backward_ns)
    };
    vec![
        num(c.avg_loop_ns, 2),
        p.p50.to_string(),
        p.p90.to_string(),
        p.p99.to_string(),
        p.p99_9.to_string(),
        p.p99_99.to_string(),
        p.max.to_string(),
        or_dash(c.resolution_ns),
        num(c.zero_steps_pct, 2),
        back,
        or_dash(c.clock_getres_ns),
    ]
}

/// One clock's interference line (at most 100 columns for names up to 16):
/// read cost beside the average loop, time lost in gaps, steal, cgroup
/// throttling, involuntary context switches ("?" when unknown here).
fn interference_line(c: &ClockStats, name_w: usize) -> String {
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
pub(super) fn write_interference(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    if r.clocks.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    write_line(
        out,
        t!("Read cost without interference (gaps: differences > 20 x p50, at least 1 us, taken out)"),
    )?;
    let name_w = r.clocks.iter().map(|c| c.name.len()).max().unwrap_or(5).max(5);
    for c in &r.clocks {
        writeln!(out, "{}", interference_line(c, name_w))?;
        let i = &c.interference;
        let repeats = crate::commands::check::model::repeats_words(c, r.duration_per_clock_s);
        let repeats = if repeats.is_empty() {
            repeats
        } else {
            format!("; {}", reason(&repeats))
        };
        let seen = match c.noise() {
            Some(why) => Some(t!("noisy: {why}{repeats}", why = reason(why), repeats = repeats)),
            None if i.runs > 1 => {
                let first = i.noise_by_run.iter().flatten().next().map_or("", String::as_str);
                Some(t!(
                    "clean after repeats (run 1 noisy: {first}){repeats}",
                    first = reason(first),
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

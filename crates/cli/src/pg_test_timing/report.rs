//! PostgreSQL 19's pg_test_timing output, byte for byte, from a
//! [`PgTimingRun`] (PostgreSQL 19's loop, `clockscope::measure::pg_loop`):
//! the average loop time, the log2 histogram and the list of exact durations
//! up to the cutoff.

use clockscope::measure::pg_loop::{PgTimingRun, NUM_DIRECT};
use std::io::{self, Write};

/// `Testing timing overhead for N second(s).` and an empty line.
pub fn write_intro(out: &mut dyn Write, duration_s: u32) -> io::Result<()> {
    let unit = if duration_s == 1 { "second" } else { "seconds" };
    write!(out, "Testing timing overhead for {duration_s} {unit}.\n\n")
}

/// `Average loop time including overhead: %0.2f ns`.
pub fn write_average(out: &mut dyn Write, run: &PgTimingRun) -> io::Result<()> {
    // PostgreSQL: INSTR_TIME_GET_DOUBLE(elapsed) * 1e9 / loop_count.
    let avg = run.avg_loop_ns();
    writeln!(out, "Average loop time including overhead: {avg:0.2} ns")
}

/// Column headers of both tables, as PostgreSQL's `output()` names them.
const HEADER_LE_NS: &str = "<= ns";
const HEADER_NS: &str = "ns";
const HEADER_PERCENT: &str = "% of total";
const HEADER_RUNNING: &str = "running %";
const HEADER_COUNT: &str = "count";

/// The four column widths of both tables, computed as upstream's `output()`
/// does: each header's length raised to a minimum, 19 for the label column
/// (`Max(19, len1)` with `len1` the length of `<= ns`, used for the `ns`
/// table too), 10 for the others. Numbers wider than their column are
/// printed whole, as `%*` does.
pub fn column_widths() -> (usize, usize, usize, usize) {
    (
        HEADER_LE_NS.len().max(19),
        HEADER_PERCENT.len().max(10),
        HEADER_RUNNING.len().max(10),
        HEADER_COUNT.len().max(10),
    )
}

/// PostgreSQL's `output()`: histogram, then exact durations up to `cutoff_pct`.
pub fn write_histograms(out: &mut dyn Write, run: &PgTimingRun, cutoff_pct: f64) -> io::Result<()> {
    let loops = run.loop_count as f64;
    let (len1, len2, len3, len4) = column_widths();
    writeln!(out, "Histogram of timing durations:")?;
    writeln!(
        out,
        "{HEADER_LE_NS:>len1$}   {HEADER_PERCENT:>len2$} {HEADER_RUNNING:>len3$} {HEADER_COUNT:>len4$}"
    )?;
    let mut rprct = 0.0f64;
    for (i, &count) in run.histogram.iter().enumerate().take(run.max_bucket() + 1) {
        let prct = count as f64 * 100.0 / loops;
        rprct += prct;
        let label = if i >= 64 { u64::MAX } else { (1u64 << i) - 1 };
        writeln!(out, "{label:>len1$}   {prct:>len2$.4} {rprct:>len3$.4} {count:>len4$}")?;
    }

    writeln!(out, "\nObserved timing durations up to {cutoff_pct:.4}%:")?;
    writeln!(
        out,
        "{HEADER_NS:>len1$}   {HEADER_PERCENT:>len2$} {HEADER_RUNNING:>len3$} {HEADER_COUNT:>len4$}"
    )?;
    let largest = run.largest_diff_ns;
    let mut rprct = 0.0f64;
    let mut stopped = false;
    for (i, &count) in run.direct_histogram.iter().enumerate() {
        if count == 0 {
            continue;
        }
        let prct = count as f64 * 100.0 / loops;
        let mut print_it = !stopped;
        rprct += prct;
        // The largest difference is always printed, after "..." if the
        // cutoff already stopped the list.
        if i as u64 == largest {
            if stopped {
                writeln!(out, "...")?;
            }
            print_it = true;
        }
        if print_it {
            writeln!(out, "{i:>len1$}   {prct:>len2$.4} {rprct:>len3$.4} {count:>len4$}")?;
        }
        if rprct >= cutoff_pct {
            stopped = true;
        }
    }
    if largest >= NUM_DIRECT as u64 {
        let count = run.largest_diff_count;
        let prct = count as f64 * 100.0 / loops;
        writeln!(out, "...")?;
        writeln!(
            out,
            "{largest:>len1$}   {prct:>len2$.4} {:>len3$.4} {count:>len4$}",
            100.0
        )?;
    }
    Ok(())
}

/// The two lines PostgreSQL prints on stderr when time goes backwards.
pub fn write_time_warp(err: &mut dyn Write, backward_ns: u64) -> io::Result<()> {
    writeln!(err, "Detected clock going backwards in time.")?;
    writeln!(err, "Time warp: -{backward_ns} ns")
}

/// The sentence printed when the TSC cannot be used at all.
pub const TSC_NOT_USABLE: &str = "TSC clock source is not usable. Likely unable to determine TSC frequency. \
Are you running in an unsupported virtualized environment?";

/// The aarch64 counterpart (clockscope's; PostgreSQL has no ARM counter
/// support): CNTFRQ_EL0 reads 0, so the generic timer has no frequency.
pub const GENERIC_TIMER_NOT_USABLE: &str = "Generic timer clock source is not usable. CNTFRQ_EL0 reads 0: \
the firmware did not program the counter frequency.";

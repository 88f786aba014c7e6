//! PostgreSQL 19's pg_test_timing output, byte for byte, from a
//! [`PgTimingRun`] (PostgreSQL 19's loop, `clockscope_pg::pg_loop`):
//! the average loop time, the log2 histogram and the list of exact durations
//! up to the cutoff, each message through the locale ([`PgLocale`]: its
//! catalog and its decimal point) and formatted as C's `printf` formats it.

use super::locale::PgLocale;
use super::printf::Arg;
use clockscope_pg::pg_loop::{PgTimingRun, NUM_DIRECT};
use std::io::{self, Write};

/// `PACKAGE_BUGREPORT`.
pub const BUG_REPORT: &str = "pgsql-bugs@lists.postgresql.org";

/// `Testing timing overhead for N second(s).` and an empty line.
pub fn write_intro(out: &mut dyn Write, l: &PgLocale, duration_s: u32) -> io::Result<()> {
    let fmt = l.ntr(
        "Testing timing overhead for %u second.\n\n",
        "Testing timing overhead for %u seconds.\n\n",
        u64::from(duration_s),
    );
    out.write_all(&l.format(fmt, &[Arg::Int(i128::from(duration_s))]))
}

/// `Average loop time including overhead: %0.2f ns`.
pub fn write_average(out: &mut dyn Write, l: &PgLocale, run: &PgTimingRun) -> io::Result<()> {
    // PostgreSQL: INSTR_TIME_GET_DOUBLE(elapsed) * NS_PER_S / loop_count.
    let avg = run.avg_loop_ns();
    out.write_all(&l.msg("Average loop time including overhead: %0.2f ns\n", &[Arg::Float(avg)]))
}

/// Minimum column widths of upstream's `output()`: 19 for the label, 10 for
/// the others, each raised to its (translated) header's length in bytes.
pub fn column_widths(l: &PgLocale) -> (usize, usize, usize, usize) {
    (
        l.tr("<= ns").len().max(19),
        l.tr("% of total").len().max(10),
        l.tr("running %").len().max(10),
        l.tr("count").len().max(10),
    )
}

fn int(v: impl Into<i128>) -> Arg<'static> {
    Arg::Int(v.into())
}

/// PostgreSQL's `output()`: histogram, then exact durations up to
/// `cutoff_pct`; a block without loops prints upstream's warning instead.
pub fn write_histograms(out: &mut dyn Write, l: &PgLocale, run: &PgTimingRun, cutoff_pct: f64) -> io::Result<()> {
    if run.loop_count == 0 {
        let msg = "WARNING: No timing measurements collected. Report this as a bug to <%s>.\n";
        return out.write_all(&l.msg(msg, &[Arg::Str(BUG_REPORT.as_bytes())]));
    }
    let loops = run.loop_count as f64;
    let (len1, len2, len3, len4) = column_widths(l);
    let (w1, w2, w3, w4) = (int(len1 as u64), int(len2 as u64), int(len3 as u64), int(len4 as u64));
    let header = |first: &str| {
        l.format(
            "%*s   %*s %*s %*s\n",
            &[
                w1,
                Arg::Str(l.tr(first).as_bytes()),
                w2,
                Arg::Str(l.tr("% of total").as_bytes()),
                w3,
                Arg::Str(l.tr("running %").as_bytes()),
                w4,
                Arg::Str(l.tr("count").as_bytes()),
            ],
        )
    };
    let row = |label: i128, prct: f64, rprct: f64, count: u64| {
        l.format(
            "%*llu   %*.4f %*.4f %*lld\n",
            &[
                w1,
                int(label),
                w2,
                Arg::Float(prct),
                w3,
                Arg::Float(rprct),
                w4,
                int(count),
            ],
        )
    };
    out.write_all(l.tr("Histogram of timing durations:\n").as_bytes())?;
    out.write_all(&header("<= ns"))?;
    let mut rprct = 0.0f64;
    for (i, &count) in run.histogram.iter().enumerate().take(run.max_bucket() + 1) {
        let prct = count as f64 * 100.0 / loops;
        rprct += prct;
        let label = if i >= 64 { u64::MAX } else { (1u64 << i) - 1 };
        out.write_all(&row(label.into(), prct, rprct, count))?;
    }

    out.write_all(&l.msg("\nObserved timing durations up to %.4f%%:\n", &[Arg::Float(cutoff_pct)]))?;
    out.write_all(&header("ns"))?;
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
                out.write_all(b"...\n")?;
            }
            print_it = true;
        }
        if print_it {
            out.write_all(&row(i as i128, prct, rprct, count))?;
        }
        if rprct >= cutoff_pct {
            stopped = true;
        }
    }
    if largest >= NUM_DIRECT as u64 {
        let count = run.largest_diff_count;
        let prct = count as f64 * 100.0 / loops;
        out.write_all(b"...\n")?;
        out.write_all(&row(largest.into(), prct, 100.0, count))?;
    }
    Ok(())
}

/// The two lines PostgreSQL prints on stderr when time goes backwards.
pub fn write_time_warp(err: &mut dyn Write, l: &PgLocale, backward_ns: u64) -> io::Result<()> {
    err.write_all(l.tr("Detected clock going backwards in time.\n").as_bytes())?;
    // `Time warp: %<PRId64> ns`: `%ld` once libintl has expanded it.
    err.write_all(&l.msg("Time warp: %ld ns\n", &[Arg::Int(-i128::from(backward_ns))]))
}

/// The sentence printed when the TSC cannot be used at all (its msgid
/// begins with the empty line).
pub const TSC_NOT_USABLE: &str = "\nTSC clock source is not usable. Likely unable to determine TSC frequency. \
Are you running in an unsupported virtualized environment?\n";

/// The aarch64 counterpart (clockscope's; PostgreSQL has no ARM counter
/// support): CNTFRQ_EL0 reads 0, so the generic timer has no frequency.
pub const GENERIC_TIMER_NOT_USABLE: &str = "Generic timer clock source is not usable. CNTFRQ_EL0 reads 0: \
the firmware did not program the counter frequency.";

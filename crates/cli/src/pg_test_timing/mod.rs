//! The drop-in for PostgreSQL 19.0's `pg_test_timing`: the same command
//! line, messages, exit codes and output, on any machine, with clockscope's
//! clocks. The reference is the REL_19_STABLE branch point (9cfd19bc10ac,
//! 19beta1; `src/bin/pg_test_timing/pg_test_timing.c` and
//! `src/common/instr_time.c`), which 19.0 ships unchanged.
//!
//! `Testing timing overhead ...`, the system clock block, then on x86-64
//! `test_tsc_timing()`: an empty line; when PostgreSQL can read the TSC the
//! precise (RDTSCP) block, an empty line, the fast (RDTSC) block, an empty
//! line; then always `TSC frequency source`, `TSC frequency in use`, the
//! calibration line (PostgreSQL's calibration, run once per process and
//! cached: [`clockscope_system::tsc::pg19`]), the >10% WARNING/HINT with exit 1,
//! and the closing sentence after an empty line. A backward step ends the
//! run with PostgreSQL's two-line message and exit 1.
//!
//! - [`args`]: PostgreSQL's `handle_args`, over [`getopt`] (glibc's
//!   `getopt_long`) and [`c_numbers`] (the C library's `strtoul`/`strtod`).
//! - [`report`]: the average line and the two tables of each block.
//! - [`locale`], [`glibc_locale`], [`mo`], [`printf`]: PostgreSQL's locale:
//!   the decimal point of `LC_NUMERIC` and the `pg_test_timing-19` catalog.

pub mod args;
// The crate's only unsafe code: calls into the C library's strtod/strtoul.
#[allow(unsafe_code)]
pub mod c_numbers;
pub mod getopt;
pub mod glibc_locale;
pub mod locale;
pub mod mo;
pub mod printf;
pub mod report;

use clockscope_pg::pg_loop::{PgOutcome, PgTicksToNs, PgTimingRun, TimedBlock};
use clockscope_system::tsc::pg19::PgTscInfo;
use locale::PgLocale;
use printf::Arg;
use std::io::{self, Write};

/// What is printed after the counter's blocks, computed at that point (the
/// calibration may run there, as upstream's does), with the exit code;
/// called with the locale and whether the counter's blocks ran.
pub type ClosingLines<'a> = Box<dyn FnOnce(&PgLocale, bool) -> (Vec<u8>, u8) + 'a>;

/// The CPU-counter part of the run: its precise and fast reads and the lines
/// that close it.
pub struct CounterSection<'a> {
    /// Read for the `Clock source:` block (RDTSCP).
    pub precise: &'a dyn TimedBlock,
    /// Read inside the `Fast clock source:` loop (RDTSC); its ordered read
    /// takes the start and end.
    pub fast: &'a dyn TimedBlock,
    /// PostgreSQL's conversion of the counter's ticks (its kHz).
    pub conv: PgTicksToNs,
    /// Printed after the fast block and an empty line ([`tsc_closing`] on
    /// x86-64).
    pub closing_lines: ClosingLines<'a>,
}

/// Whether the counter can be measured, and if not, what to print instead.
pub enum Counter<'a> {
    Usable(CounterSection<'a>),
    /// Printed after the system block's empty line (x86-64: [`tsc_closing`]
    /// of an unusable TSC).
    NotUsable(ClosingLines<'a>),
    /// Nothing at all (PostgreSQL builds without a counter clock).
    Absent,
}

/// `test_tsc_timing()` after the blocks, from PostgreSQL's TSC state
/// (already [`PgTscInfo::complete`]d): the source line when not empty, the
/// frequency in use, the calibration line or the 10% WARNING and HINT (exit
/// 1), then the closing sentence. `measured`: the TSC blocks ran.
pub fn tsc_closing(l: &PgLocale, info: &PgTscInfo, measured: bool) -> (Vec<u8>, u8) {
    let mut out = Vec::new();
    if !info.frequency_source.is_empty() {
        out.extend(l.msg(
            "TSC frequency source: %s\n",
            &[Arg::Str(info.frequency_source.as_bytes())],
        ));
    }
    out.extend(l.msg("TSC frequency in use: %d kHz\n", &[Arg::Int(info.frequency_khz.into())]));
    match info.calibration_diff_pct() {
        Some(diff_pct) => {
            out.extend(l.msg(
                "TSC frequency from calibration: %d kHz\n",
                &[Arg::Int(info.calibrated_frequency_khz.into())],
            ));
            if info.cross_check_fails() {
                out.extend(l.msg(
                    "WARNING: Calibrated TSC frequency differs by %.1f%% from the TSC frequency in use\n",
                    &[Arg::Float(diff_pct)],
                ));
                out.extend(l.msg(
                    "HINT: Consider setting timing_clock_source to 'system'. Report bugs to <%s>.\n",
                    &[Arg::Str(report::BUG_REPORT.as_bytes())],
                ));
                return (out, 1);
            }
        }
        None => out.extend_from_slice(l.tr("TSC calibration did not converge\n").as_bytes()),
    }
    let closing = if !measured {
        report::TSC_NOT_USABLE
    } else if info.auto_uses_tsc() {
        "\nTSC clock source will be used by default, unless timing_clock_source is set to 'system'.\n"
    } else {
        "\nTSC clock source will not be used by default, unless timing_clock_source is set to 'tsc'.\n"
    };
    out.extend_from_slice(l.tr(closing).as_bytes());
    (out, 0)
}

/// One timed block, PostgreSQL 19's `test_timing()` converting with `conv`:
/// the loop and its average line; `Err(backward_ns)` when time went
/// backwards.
fn timed_block(
    out: &mut dyn Write,
    l: &PgLocale,
    clock: &dyn TimedBlock,
    conv: PgTicksToNs,
    duration_s: u32,
) -> io::Result<Result<Box<PgTimingRun>, u64>> {
    out.flush()?;
    match clock.run(conv, u64::from(duration_s) * 1_000_000_000) {
        PgOutcome::Backward { ns } => Ok(Err(ns)),
        PgOutcome::Done(run) => {
            report::write_average(out, l, &run)?;
            Ok(Ok(run))
        }
    }
}

/// The one line on stderr that says whose output this is, when the newest
/// PostgreSQL installed here (`installed`, its major versions) is older than
/// 19: its own pg_test_timing prints microsecond buckets and tests the system
/// clock only, and its server never reads the TSC. `None` when 19 or newer is
/// installed, or none. The binary prints it only to a terminal, so stdout and
/// a captured stderr stay PostgreSQL 19's byte for byte.
pub fn older_postgresql_note(installed: &[u32]) -> Option<String> {
    let newest = *installed.iter().max()?;
    (newest < 19).then(|| {
        format!(
            "pg_test_timing: note: this is PostgreSQL 19's pg_test_timing (clockscope's drop-in); PostgreSQL \
             {newest} is installed here, whose own pg_test_timing prints microsecond buckets and tests the system \
             clock only (docs/pg_test_timing-before-19.md)"
        )
    })
}

/// Runs pg_test_timing with `opts` on the given clocks; returns the exit code.
pub fn run(
    opts: &args::Options,
    l: &PgLocale,
    system: &dyn TimedBlock,
    counter: Counter<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    let warp = |out: &mut dyn Write, err: &mut dyn Write, ns| {
        out.flush()?;
        report::write_time_warp(err, l, ns).map(|_| 1u8)
    };
    let (d, cutoff) = (opts.duration_s, opts.cutoff_pct);
    report::write_intro(out, l, d)?;
    out.write_all(&l.msg("System clock source: %s\n", &[Arg::Str(system.name().as_bytes())]))?;
    match timed_block(out, l, system, PgTicksToNs::SYSTEM, d)? {
        Err(ns) => return warp(out, err, ns),
        Ok(run) => report::write_histograms(out, l, &run, cutoff)?,
    }
    let (closing, code) = match counter {
        Counter::Absent => (Vec::new(), 0),
        Counter::NotUsable(closing) => {
            writeln!(out)?;
            closing(l, false)
        }
        Counter::Usable(section) => {
            writeln!(out)?;
            out.write_all(&l.msg("Clock source: %s\n", &[Arg::Str(section.precise.name().as_bytes())]))?;
            let mut loops = match timed_block(out, l, section.precise, section.conv, d)? {
                Err(ns) => return warp(out, err, ns),
                Ok(run) => {
                    // Upstream prints the tables, and runs the fast block,
                    // only after a precise block with loops.
                    if run.loop_count > 0 {
                        report::write_histograms(out, l, &run, cutoff)?;
                    }
                    run.loop_count
                }
            };
            if loops > 0 {
                writeln!(out)?;
                out.write_all(&l.msg("Fast clock source: %s\n", &[Arg::Str(section.fast.name().as_bytes())]))?;
                match timed_block(out, l, section.fast, section.conv, d)? {
                    Err(ns) => return warp(out, err, ns),
                    Ok(run) => {
                        report::write_histograms(out, l, &run, cutoff)?;
                        loops = run.loop_count;
                    }
                }
                writeln!(out)?;
            }
            out.flush()?;
            (section.closing_lines)(l, loops > 0)
        }
    };
    out.write_all(&closing)?;
    out.flush()?;
    Ok(code)
}

#[cfg(test)]
mod note_tests {
    use super::older_postgresql_note;

    #[test]
    fn the_note_names_the_newest_older_postgresql_and_only_then() {
        assert_eq!(older_postgresql_note(&[]), None);
        assert_eq!(older_postgresql_note(&[15, 19]), None);
        assert_eq!(older_postgresql_note(&[20]), None);
        let note = older_postgresql_note(&[13, 15]).unwrap();
        assert!(note.contains("PostgreSQL 15 is installed here"), "{note}");
        assert!(
            note.starts_with("pg_test_timing: note: this is PostgreSQL 19's"),
            "{note}"
        );
        assert_eq!(note.lines().count(), 1);
    }
}

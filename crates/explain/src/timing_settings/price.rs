//! The prices the timing settings are judged with, each with the read
//! PostgreSQL makes and an interval:
//!
//! - `io_read_price`: `INSTR_TIME_SET_CURRENT`, the read around every
//!   timed I/O (`pgstat_prepare_io_time` / `pgstat_count_io_op_time`):
//!   RDTSCP when the server's `timing_clock_source` resolves to the TSC, the
//!   system clock otherwise (and before PostgreSQL 19), at this machine's
//!   back-to-back read cost (two reads around a system call have nothing to
//!   overlap with): the number `clockscope check` prices track_io_timing with.
//! - `explain_read_price`: EXPLAIN's fast read, inferred on the server
//!   from its own runs (the measured source matching its setting): its
//!   per-read cost and interval, from the one block slowdown estimate;
//!   "not resolved" unless that source's result is stated (its interval
//!   clear of the A/A control's and of 1.0).
//! - `measure_page_cache_read`: the 8 kB page-cache read an I/O's timing
//!   is set against, with the interval of its median.

use crate::clockcost::{ClockCost, MachineClocks};
use crate::report::model::SourceResult;
use crate::timing_settings::model::{ReadPrice, ServerSetting, PAGE_BYTES, PAGE_READ_PAGES};

/// The server's `timing_clock_source` as SHOW printed it, when it has one.
fn clock_source_setting(settings: &[ServerSetting]) -> Option<&ServerSetting> {
    settings.iter().find(|s| s.name == "timing_clock_source")
}

/// Whether the server's own setting reads the TSC (`tsc`, `auto (tsc)`).
pub(crate) fn server_uses_tsc(settings: &[ServerSetting]) -> bool {
    clock_source_setting(settings).is_some_and(|s| crate::clock_source::current_is(&s.shown, "tsc"))
}

fn usable(v: f64) -> Option<f64> {
    Some(v).filter(|v| v.is_finite() && *v > 0.0)
}

fn from_read_cost(c: &ClockCost, why: &str) -> Option<ReadPrice> {
    Some(ReadPrice {
        clock: c.clock.clone(),
        ns: usable(c.read_cost_ns)?,
        low_ns: c.read_cost_interval.map(|i| i.low),
        high_ns: c.read_cost_interval.map(|i| i.high),
        source: format!(
            "INSTR_TIME_SET_CURRENT {why}: this machine's {} read cost back to back (pg_test_timing's loop without \
             interference, median of {} chunks)",
            c.clock,
            clockscope::predict::read_cost::CHUNKS
        ),
    })
}

/// The price of the server's `INSTR_TIME_SET_CURRENT` (see the module docs);
/// `Err` says why there is none.
pub(crate) fn io_read_price(settings: &[ServerSetting], machine: Option<&MachineClocks>) -> Result<ReadPrice, String> {
    let m = machine.ok_or("this machine's clocks were not measured")?;
    if server_uses_tsc(settings) {
        let c = m.rdtscp.as_ref().ok_or_else(|| {
            format!(
                "the server reads RDTSCP around each I/O (timing_clock_source = tsc), which this machine could not \
                 measure: {}",
                m.rdtsc_unavailable.as_deref().unwrap_or("stopped")
            )
        })?;
        from_read_cost(c, "under timing_clock_source = tsc (RDTSCP)").ok_or_else(|| "RDTSCP was not measured".into())
    } else {
        from_read_cost(&m.system, "with the system clock").ok_or_else(|| "the system clock was not measured".into())
    }
}

/// The measured source a setting's EXPLAIN reads are priced with: the one
/// matching the server's `timing_clock_source` (PostgreSQL 19), else the
/// first (before 19 the only one, `system`).
pub(crate) fn pricing_source<'a>(settings: &[ServerSetting], sources: &'a [SourceResult]) -> Option<&'a SourceResult> {
    clock_source_setting(settings)
        .and_then(|c| {
            sources.iter().find(|r| {
                r.clock_source == c.shown
                    || ["tsc", "system"].iter().any(|w| {
                        crate::clock_source::current_is(&c.shown, w)
                            && crate::clock_source::current_is(&r.clock_source, w)
                    })
            })
        })
        .or_else(|| sources.first())
}

/// The observed per-read cost of `r` with its interval, both from the one
/// block slowdown estimate (`report`); `Err` when the result is not stated
/// (its interval reaches the A/A control's or 1.0, or it has none).
pub(crate) fn observed_read_price(r: &SourceResult) -> Result<ReadPrice, String> {
    if r.result != crate::report::model::Resolution::Resolved || r.clock_reads_per_run == 0 {
        return Err(r.result_reason.clone());
    }
    Ok(ReadPrice {
        clock: r.clock_source.clone(),
        ns: r.overhead_per_read_ns,
        low_ns: r.overhead_per_read_low_ns,
        high_ns: r.overhead_per_read_high_ns,
        source: format!(
            "EXPLAIN's read inferred on the server ({}): the median block slowdown's added time / clock reads, \
             with its interval",
            r.clock_source
        ),
    })
}

/// The price of EXPLAIN's read on this server, with the source it comes
/// from; `Err` when there is no source or its cost is not resolved.
pub(crate) fn explain_read_price<'a>(
    settings: &[ServerSetting],
    sources: &'a [SourceResult],
) -> Result<(ReadPrice, &'a SourceResult), String> {
    let r = pricing_source(settings, sources).ok_or("no clock source was measured")?;
    observed_read_price(r).map(|p| (p, r))
}

/// One page-cache read: the median ns per 8 kB `pread` over the passes and
/// its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PageReadSample {
    pub ns: f64,
    pub low_ns: Option<f64>,
    pub high_ns: Option<f64>,
}

/// Reads 8 kB pages of a 2 MiB file in the temp dir over and over (after one
/// warming pass, so they come from the page cache): the median ns per read
/// of `rounds` passes and its interval; None when the file cannot be made or
/// read (then the I/O costs have no reference). About 256 x `rounds` reads.
#[cfg(unix)]
pub(crate) fn measure_page_cache_read(rounds: usize) -> Option<PageReadSample> {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    const PAGES: u64 = PAGE_READ_PAGES;
    let mut file = tempfile::tempfile().ok()?;
    let page = vec![0x5a_u8; PAGE_BYTES];
    for _ in 0..PAGES {
        file.write_all(&page).ok()?;
    }
    let mut buf = vec![0_u8; PAGE_BYTES];
    let pass = |buf: &mut [u8]| -> Option<std::time::Duration> {
        let start = std::time::Instant::now();
        for i in 0..PAGES {
            if file.read_at(buf, i * PAGE_BYTES as u64).ok()? != PAGE_BYTES {
                return None;
            }
        }
        Some(start.elapsed())
    };
    pass(&mut buf)?;
    let per_read: Vec<f64> = (0..rounds.max(1))
        .map(|_| pass(&mut buf).map(|d| d.as_nanos() as f64 / PAGES as f64))
        .collect::<Option<_>>()?;
    let ns = clockscope::stats::median(&per_read).filter(|v| v.is_finite() && *v > 0.0)?;
    let interval = clockscope::stats::median_interval(&per_read, clockscope::stats::CONFIDENCE);
    Some(PageReadSample {
        ns,
        low_ns: interval.map(|i| i.low),
        high_ns: interval.map(|i| i.high),
    })
}

/// No page-cache reference off unix.
#[cfg(not(unix))]
pub(crate) fn measure_page_cache_read(_rounds: usize) -> Option<PageReadSample> {
    None
}

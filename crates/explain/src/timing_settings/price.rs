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
use crate::timing_settings::model::{ReadPrice, ServerSetting};

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
            clockscope_pg::predict::read_cost::CHUNKS
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
        let mut price = from_read_cost(&m.system, "with the system clock")
            .ok_or_else(|| "the system clock was not measured".to_string())?;
        // Before PostgreSQL 19 (no timing_clock_source) the system clock is
        // the only one; the TSC is said for the version that reads it.
        if clock_source_setting(settings).is_none() {
            price.source.push_str(&pre_19_tsc_note(m));
        }
        Ok(price)
    }
}

/// What a server without `timing_clock_source` (before PostgreSQL 19)
/// reads around an I/O, and what PostgreSQL 19 would read here instead.
fn pre_19_tsc_note(m: &MachineClocks) -> String {
    let tsc = m
        .rdtscp
        .as_ref()
        .filter(|c| c.read_cost_ns.is_finite() && c.read_cost_ns > 0.0)
        .map_or_else(
            || "PostgreSQL 19 could not read a TSC here either".to_string(),
            |c| {
                format!(
                    "only PostgreSQL 19 reads the TSC, with timing_clock_source = tsc (auto{} picks it here): RDTSCP, \
                     {:.1} ns here",
                    if m.tsc_auto { "" } else { " never" },
                    c.read_cost_ns
                )
            },
        );
    format!(
        "; this server has no timing_clock_source (before PostgreSQL 19), so it always reads the system clock; {tsc}"
    )
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

/// The 8 kB page-cache read the I/O timing costs are set against: the
/// library's, which `clockscope check` measures too (one reference, one
/// judge: [`clockscope_pg::predict::settings`]).
pub(crate) use clockscope_pg::predict::settings::page_read::measure_page_cache_read;

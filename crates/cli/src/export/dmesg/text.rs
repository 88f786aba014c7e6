//! The text form of `clockscope dmesg`: the TSC and clocksource events in
//! order with their times, the summary (frequencies, the TSC marked unstable
//! and why, the watchdog's reads, TSC_ADJUST, switches, the hypervisor), then
//! what it means for PostgreSQL and what to do. One screen by default (runs
//! of one kind folded, a long timeline shortened); `-v` lists every event
//! with its detail lines and meaning. Every line from the log is escaped.

use crate::model::dmesg::DmesgReport;
use crate::model::stamp::Stamped;
use clockscope::kernel_log::{Event, Kind, LogTime, Summary};
use std::io::{self, Write};

/// Timeline rows shown by default: the first and the last half of them.
const DEFAULT_EVENT_ROWS: usize = 16;

/// `2194.917 MHz`: the kernel's `%lu.%03lu`, exact.
fn mhz(khz: u64) -> String {
    format!("{}.{:03} MHz", khz / 1000, khz % 1000)
}

/// `[    9.632421]`, a wall-clock stamp as printed, or `-`.
fn time_text(t: &LogTime) -> String {
    match (&t.wall, t.monotonic_us) {
        (Some(w), _) => w.clone(),
        (None, Some(us)) => format!("[{:5}.{:06}]", us / 1_000_000, us % 1_000_000),
        (None, None) => "-".to_string(),
    }
}

/// Writes the report.
pub fn write(out: &mut dyn Write, m: &Stamped<'_, DmesgReport>) -> io::Result<()> {
    // Every line fitted to 100 columns (crate::export::text).
    let mut fit = crate::export::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    crate::export::text::write_header(out, m.stamp)?;
    let r = m.report;
    let s = &r.summary;
    writeln_escaped!(
        out,
        "kernel log: {} ({} kernel lines, {} events; machine: {}, from {})",
        r.source,
        s.lines,
        s.events.len() as u64 + s.events_not_listed,
        s.machine.label(),
        r.machine_from
    )?;
    if let Some(why) = &r.stopped_early {
        writeln_escaped!(out, "  read only in part: {why}")?;
    }
    writeln!(out)?;
    if r.verbose {
        write_every_event(out, s)?;
    } else {
        write_timeline(out, s)?;
    }
    writeln!(out)?;
    write_summary(out, s)?;
    writeln!(out)?;
    writeln_escaped!(out, "PostgreSQL: {}", s.postgres)?;
    writeln_escaped!(out, "what to do: {}", s.advice)
}

/// Consecutive events of one kind, folded into their first.
fn folded(events: &[Event]) -> Vec<(&Event, usize)> {
    let mut rows: Vec<(&Event, usize)> = Vec::new();
    for e in events {
        match rows.last_mut() {
            Some((first, n)) if first.kind == e.kind && e.kind != Kind::ClocksourceSwitched => *n += 1,
            _ => rows.push((e, 1)),
        }
    }
    rows
}

fn event_row(e: &Event, times: usize) -> String {
    let more = match times {
        1 => String::new(),
        n => format!(" (and {} more like it)", n - 1),
    };
    format!("  {}  {}{more}", time_text(&e.time), e.message)
}

/// The events in order, one line each, folded and shortened to one screen.
fn write_timeline(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    if s.events.is_empty() {
        return writeln!(out, "events: no TSC or clocksource message in this log");
    }
    writeln!(out, "events (-v: every event with its meaning):")?;
    let rows = folded(&s.events);
    let half = DEFAULT_EVENT_ROWS / 2;
    for (i, (e, n)) in rows.iter().enumerate() {
        if rows.len() > DEFAULT_EVENT_ROWS && i == half {
            writeln!(
                out,
                "  ... {} more rows (-v lists them)",
                rows.len() - DEFAULT_EVENT_ROWS
            )?;
        }
        if rows.len() <= DEFAULT_EVENT_ROWS || i < half || i >= rows.len() - half {
            writeln_escaped!(out, "{}", event_row(e, *n))?;
        }
    }
    if s.events_not_listed > 0 {
        writeln!(out, "  ... {} later events not kept", s.events_not_listed)?;
    }
    Ok(())
}

/// `-v`: every event with its kind, detail lines and meaning.
fn write_every_event(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    if s.events.is_empty() {
        return writeln!(out, "events: no TSC or clocksource message in this log");
    }
    writeln!(out, "events:")?;
    for e in &s.events {
        writeln_escaped!(out, "  {}  {}: {}", time_text(&e.time), e.kind.name(), e.message)?;
        for d in &e.detail {
            writeln_escaped!(out, "      {d}")?;
        }
        if !e.meaning.is_empty() {
            writeln_escaped!(out, "      meaning: {}", e.meaning)?;
        }
    }
    if s.events_not_listed > 0 {
        writeln!(out, "  ... {} later events not kept", s.events_not_listed)?;
    }
    Ok(())
}

fn write_summary(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    writeln!(out, "summary:")?;
    write_frequencies(out, s)?;
    write_unstable(out, s)?;
    write_watchdog_reads(out, s)?;
    write_switches(out, s)?;
    let hv = match (&s.hypervisor, s.machine) {
        (Some(h), _) => h.clone(),
        (None, clockscope::kernel_log::Machine::BareMetal) => "none (bare metal)".to_string(),
        (None, _) => "not shown".to_string(),
    };
    writeln_escaped!(out, "  hypervisor: {hv}")
}

fn write_frequencies(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    let mut parts = Vec::new();
    if let Some(k) = s.detected_processor_khz {
        parts.push(format!("processor {} (detected)", mhz(k)));
    }
    if let Some(k) = s.detected_tsc_khz {
        parts.push(format!("TSC {} (detected)", mhz(k)));
    }
    if let Some(k) = s.refined_khz {
        parts.push(format!("TSC {} (refined)", mhz(k)));
    }
    if let Some(k) = s.hypervisor_tsc_khz {
        parts.push(format!("TSC {} (from the hypervisor)", mhz(k)));
    }
    if parts.is_empty() {
        return writeln!(out, "  frequency: not in this log");
    }
    writeln!(out, "  frequency: {}", parts.join(", "))
}

/// The TSC marked unstable: when, why, by which watchdog, its skew and
/// interval; each sync warp; TSC_ADJUST and P0 firmware bugs.
fn write_unstable(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    if !s.tsc_marked_unstable {
        writeln!(out, "  TSC marked unstable: no")?;
    } else {
        let when = s
            .events
            .iter()
            .find(|e| is_unstable_event(e))
            .map_or(String::new(), |e| {
                format!(" at {}", time_text(&e.time).trim_matches(['[', ']', ' ']))
            });
        writeln_escaped!(
            out,
            "  TSC marked unstable: yes{when}: {}",
            s.unstable_reasons.join("; ")
        )?;
    }
    if !s.clocksources_marked_unstable.is_empty() {
        writeln_escaped!(
            out,
            "  condemned by the watchdog: {}",
            s.clocksources_marked_unstable.join(", ")
        )?;
    }
    if let Some(e) = s.events.iter().find(|e| e.kind == Kind::WatchdogMarkedUnstable) {
        writeln_escaped!(out, "    {}", watchdog_text(e, s.watchdog.as_deref()))?;
    }
    for e in s.events.iter().filter(|e| e.kind == Kind::TscSyncWarp) {
        let f = &e.facts;
        let cpus = match (f.from_cpu, f.to_cpu) {
            (Some(a), Some(b)) => format!(" between CPU {a} and CPU {b}"),
            _ => String::new(),
        };
        let cycles = f.warp_cycles.map_or("a".to_string(), |c| format!("{c} cycles"));
        writeln_escaped!(out, "    sync warp at {}: {cycles} TSC warp{cpus}", time_text(&e.time))?;
    }
    let adjust = |k: Kind| {
        matches!(
            k,
            Kind::TscAdjustForceZero
                | Kind::TscAdjustDiffers
                | Kind::TscAdjustSynchronize
                | Kind::TscAdjustRestored
                | Kind::TscAdjustCompensate
                | Kind::FirmwareBugP0
        )
    };
    write_counted(out, s, "firmware (TSC_ADJUST, P0)", adjust)
}

fn is_unstable_event(e: &Event) -> bool {
    matches!(e.kind, Kind::TscMarkedUnstable | Kind::TscSyncWarp)
        || (matches!(e.kind, Kind::WatchdogMarkedUnstable | Kind::WatchdogReadbackUnstable)
            && matches!(e.facts.clocksource.as_deref(), Some("tsc" | "tsc-early")))
}

/// `watchdog hpet on CPU 2: skew -863625 ns over an interval of 496465510 ns`.
fn watchdog_text(e: &Event, watchdog: Option<&str>) -> String {
    let f = &e.facts;
    let cs = f.clocksource.as_deref().unwrap_or("a clocksource");
    let wd = f.watchdog.as_deref().or(watchdog).unwrap_or("not named");
    let cpu = f.cpu.map_or(String::new(), |c| format!(" on CPU {c}"));
    let mut text = format!("watchdog {wd}{cpu} condemned {cs}");
    if let Some(skew) = f.skew_ns {
        text.push_str(&format!(": skew {skew} ns"));
    }
    if let Some(i) = f.interval_ns.or(f.wd_nsec) {
        text.push_str(&format!(" over an interval of {i} ns"));
    }
    if let (Some(w), Some(c)) = (f.wd_nsec, f.cs_nsec) {
        text.push_str(&format!(" (wd_nsec {w}, cs_nsec {c})"));
    }
    text
}

/// One line for the events `pick` selects: how many, and the first.
fn write_counted(out: &mut dyn Write, s: &Summary, what: &str, pick: impl Fn(Kind) -> bool) -> io::Result<()> {
    let mut found = s.events.iter().filter(|e| pick(e.kind));
    let Some(first) = found.next() else { return Ok(()) };
    let n = 1 + found.count();
    let times = if n == 1 {
        String::new()
    } else {
        format!(" ({n} messages)")
    };
    writeln_escaped!(out, "  {what}{times}: {}", first.message)
}

/// Read-back delays, skipped skew checks, retries and long intervals.
fn write_watchdog_reads(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    let delays: Vec<i64> = s
        .events
        .iter()
        .filter(|e| e.kind == Kind::WatchdogReadbackUnstable)
        .filter_map(|e| e.facts.delay_ns)
        .collect();
    if let Some(max) = delays.iter().max() {
        writeln!(out, "  watchdog read-back delays: {} (largest {max} ns)", delays.len())?;
    }
    write_counted(out, s, "skew checks skipped", |k| k == Kind::WatchdogSkewTestSkipped)?;
    write_counted(out, s, "watchdog reads retried", |k| k == Kind::WatchdogRetried)?;
    write_counted(out, s, "long readout intervals", |k| k == Kind::WatchdogLongReadout)
}

fn write_switches(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    match &s.final_clocksource {
        None => writeln!(out, "  clocksource: no switch in this log"),
        Some(last) => writeln_escaped!(
            out,
            "  clocksource: {} (the log ends on {last})",
            s.clocksource_switches.join(" -> ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequencies_are_the_kernels_exact_digits() {
        assert_eq!(mhz(2_194_917), "2194.917 MHz");
        assert_eq!(mhz(2_600_005), "2600.005 MHz");
    }

    #[test]
    fn times_show_what_the_paste_shows() {
        let t = LogTime {
            monotonic_us: Some(9_632_421),
            wall: None,
        };
        assert_eq!(time_text(&t), "[    9.632421]");
        assert_eq!(time_text(&LogTime::default()), "-");
    }
}

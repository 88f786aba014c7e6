//! The text form of `clockscope dmesg`: the TSC and clocksource events in
//! order with their times, the summary (frequencies, the TSC marked unstable
//! and why, the watchdog's reads, TSC_ADJUST, switches, the hypervisor), then
//! what it means for PostgreSQL, whether to act, what to do and the next
//! command. Each fact of the summary cites the line it was read from. One
//! screen by default whatever the log (runs of one kind folded with their
//! count and last line, a long timeline shortened, lists and messages cut);
//! `-v` lists every event with its detail lines and meaning. Every line from
//! the log is escaped.

use crate::commands::dmesg::model::DmesgReport;
use crate::i18n::library::reason;
use crate::report::stamp::Stamped;
use crate::report::text::write_line;
use crate::{t, tn};
use clockscope_system::kernel_log::{Citation, Event, Kind, LogTime, Summary};
use std::io::{self, Write};

/// Timeline rows shown by default: the first and the last half of them.
const DEFAULT_EVENT_ROWS: usize = 12;

/// Characters of a message shown by default (`-v` and JSON carry up to 1 KiB).
const SHOWN_CHARS: usize = 150;

/// Characters of a cited message shown.
const CITED_CHARS: usize = 72;

/// Items of a list shown (reasons, switches, condemned clocksources).
const SHOWN_ITEMS: usize = 4;

/// Earlier boots shown one line each.
const SHOWN_BOOTS: usize = 3;

/// `text` cut to [`SHOWN_CHARS`] characters, marked when cut.
fn shown(text: &str) -> String {
    cut_to(text, SHOWN_CHARS)
}

/// `text` cut to `chars` characters (a TAB shown as a space), marked when cut.
fn cut_to(text: &str, chars: usize) -> String {
    let text = &text.replace('\t', " ");
    match text.char_indices().nth(chars) {
        None => text.to_string(),
        Some((i, _)) => format!("{} [...]", &text[..i]),
    }
}

/// The first items of a list, with how many more.
fn listed(items: &[String], sep: &str) -> String {
    let mut text = items
        .iter()
        .take(SHOWN_ITEMS)
        .map(|i| shown(i))
        .collect::<Vec<_>>()
        .join(sep);
    if items.len() > SHOWN_ITEMS {
        text.push_str(&format!("{sep}{}", t!("... ({n} in all)", n = items.len())));
    }
    text
}

/// ` (line 12: "...")`: where a fact was read (its message; JSON has the
/// line as it stood).
fn cited(c: Option<&Citation>) -> String {
    c.map_or(String::new(), |c| {
        t!(
            " (line {line}: \"{message}\")",
            line = c.line,
            message = cut_to(&c.message, CITED_CHARS)
        )
    })
}

/// `2194.917 MHz`: the kernel's `%lu.%03lu`, exact (`2194,917 МГц` in Russian).
fn mhz(khz: u64) -> String {
    let digits = crate::i18n::localize_number(format!("{}.{:03}", khz / 1000, khz % 1000));
    t!("{mhz} MHz", mhz = digits)
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
    // Every line fitted to 100 columns (crate::report::text).
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    crate::report::text::write_header(out, m.stamp)?;
    let r = m.report;
    let s = &r.summary;
    let events = s.events.len() as u64 + s.events_not_listed;
    let head = tn!(
        "kernel log: {source} ({lines} kernel lines, {events} events; machine: {machine}, from {from})",
        "kernel log: {source} ({lines} kernel lines, {events} events; machine: {machine}, from {from})",
        events,
        source = r.source,
        lines = s.lines,
        events = events,
        machine = reason(s.machine.label()),
        from = reason(&r.machine_from)
    );
    writeln_escaped!(out, "{head}")?;
    if s.boots > 1 {
        let boots = tn!(
            "  {boots} boots in this log: the last (from line {line}) is judged; the earlier ones are listed below",
            "  {boots} boots in this log: the last (from line {line}) is judged; the earlier ones are listed below",
            s.boots,
            boots = s.boots,
            line = s.boot_first_line
        );
        writeln!(out, "{boots}")?;
    }
    if let Some(why) = &r.stopped_early {
        write_line(out, &t!("  read only in part: {why}", why = why))?;
    }
    writeln!(out)?;
    write_events(out, s, r.verbose)?;
    writeln!(out)?;
    write_summary(out, s)?;
    writeln!(out)?;
    let words = super::words::library_words;
    write_line(out, &t!("PostgreSQL: {meaning}", meaning = words(&s.postgres)))?;
    write_line(out, &t!("verdict: {verdict}", verdict = words(&s.verdict)))?;
    write_line(out, &t!("what to do: {advice}", advice = words(&s.advice)))?;
    write_line(out, &t!("next: {command}", command = words(&s.next_command)))
}

/// One row of the timeline: a run of events of one kind (a flapping
/// watchdog's switches included), its first and last event and its length.
struct Row<'a> {
    first: &'a Event,
    last: &'a Event,
    count: usize,
}

/// Runs of one kind folded into one row; a run of switches too when it
/// alternates (tsc/hpet flapping), a single switch stays its own row.
fn folded(events: &[Event]) -> Vec<Row<'_>> {
    let mut rows: Vec<Row<'_>> = Vec::new();
    for e in events {
        match rows.last_mut() {
            Some(r) if r.first.kind == e.kind => {
                r.last = e;
                r.count += 1;
            }
            _ => rows.push(Row {
                first: e,
                last: e,
                count: 1,
            }),
        }
    }
    rows
}

/// One row, one screen line: the time, the message cut to what is left of
/// 100 columns, and for a run its length and last line.
fn event_row(r: &Row<'_>) -> String {
    let e = r.first;
    let time = time_text(&e.time);
    let more = match r.count {
        1 => String::new(),
        n => t!(" (x{n}, to line {line})", n = n, line = r.last.line),
    };
    let more_w = textwrap::core::display_width(&more);
    let room = 98usize.saturating_sub(4 + time.chars().count() + more_w).max(40);
    format!("  {time}  {}{more}", cut_to(&e.message, room.saturating_sub(6)))
}

/// The events: that there are none, every one (`verbose`) or the timeline.
fn write_events(out: &mut dyn Write, s: &Summary, verbose: bool) -> io::Result<()> {
    if s.events.is_empty() {
        writeln!(out, "{}", t!("events: no TSC or clocksource message in this log"))
    } else if verbose {
        write_every_event(out, s)
    } else {
        write_timeline(out, s)
    }
}

/// The events in order, one line each, folded and shortened to one screen.
fn write_timeline(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    writeln!(out, "{}", t!("events (-v: every event with its meaning):"))?;
    let rows = folded(&s.events);
    let half = DEFAULT_EVENT_ROWS / 2;
    // Hiding fewer than three rows saves no screen lines.
    let shortened = rows.len() > DEFAULT_EVENT_ROWS + 2;
    for (i, row) in rows.iter().enumerate() {
        if shortened && i == half {
            let n = rows.len() - DEFAULT_EVENT_ROWS;
            let more = tn!(
                "  ... {n} more rows (-v lists them)",
                "  ... {n} more rows (-v lists them)",
                n,
                n = n
            );
            writeln!(out, "{more}")?;
        }
        if !shortened || i < half || i >= rows.len() - half {
            writeln_escaped!(out, "{}", event_row(row))?;
        }
    }
    write_not_kept(out, s)
}

/// How many later events the summary did not keep (a flapping log's).
fn write_not_kept(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    if s.events_not_listed > 0 {
        let line = tn!(
            "  ... {n} later events not kept",
            "  ... {n} later events not kept",
            s.events_not_listed,
            n = s.events_not_listed
        );
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// `-v`: every event with its kind, detail lines and meaning.
fn write_every_event(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    writeln!(out, "{}", t!("events:"))?;
    for e in &s.events {
        let line = t!(
            "line {line}: {kind}: {message}",
            line = e.line,
            kind = e.kind.name(),
            message = e.message
        );
        writeln_escaped!(out, "  {}  {line}", time_text(&e.time))?;
        for d in &e.detail {
            writeln_escaped!(out, "      {d}")?;
        }
        if !e.meaning.is_empty() {
            writeln_escaped!(out, "      {}", t!("meaning: {meaning}", meaning = reason(&e.meaning)))?;
        }
    }
    write_not_kept(out, s)
}

fn write_summary(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    writeln!(out, "{}", t!("summary:"))?;
    write_frequencies(out, s)?;
    write_unstable(out, s)?;
    write_watchdog_reads(out, s)?;
    write_switches(out, s)?;
    let hv = match (&s.hypervisor, s.machine) {
        (Some(h), _) => h.clone(),
        (None, clockscope_system::kernel_log::Machine::BareMetal) => t!("none (bare metal)").to_string(),
        (None, _) => t!("not shown (no line of the log names one)").to_string(),
    };
    let hv = t!(
        "  hypervisor: {hypervisor}{cited}",
        hypervisor = hv,
        cited = cited(s.cited.hypervisor.as_ref())
    );
    writeln_escaped!(out, "{hv}")?;
    write_earlier_boots(out, s)
}

/// One line per earlier boot (the first few), then how many more.
fn write_earlier_boots(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    for b in s.earlier_boots.iter().take(SHOWN_BOOTS) {
        let kernel = b.kernel.as_deref().map_or(String::new(), |k| {
            format!(" {}", k.split_whitespace().next().unwrap_or(""))
        });
        let unstable = if b.tsc_marked_unstable {
            t!(
                "TSC marked unstable ({reasons})",
                reasons = listed(&b.unstable_reasons, "; ")
            )
        } else {
            t!("TSC not marked unstable").to_string()
        };
        let cs = b.final_clocksource.as_deref().unwrap_or(t!("no switch shown"));
        let line = tn!(
            "  earlier boot at line {line}{kernel} ({n} lines): {unstable}; ended on {clocksource}",
            "  earlier boot at line {line}{kernel} ({n} lines): {unstable}; ended on {clocksource}",
            b.lines,
            line = b.first_line,
            kernel = kernel,
            n = b.lines,
            unstable = unstable,
            clocksource = cs
        );
        writeln_escaped!(out, "{line}")?;
    }
    let listed_boots = s.earlier_boots.len().min(SHOWN_BOOTS) as u64;
    let more = s.boots.saturating_sub(1).saturating_sub(listed_boots);
    if more > 0 {
        let line = tn!(
            "  ... {n} more earlier boots (--format json lists them)",
            "  ... {n} more earlier boots (--format json lists them)",
            more,
            n = more
        );
        writeln!(out, "{line}")?;
    }
    Ok(())
}

fn write_frequencies(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    let mut parts = Vec::new();
    if let Some(k) = s.detected_processor_khz {
        parts.push(t!("processor {mhz} (detected)", mhz = mhz(k)));
    }
    if let Some(k) = s.detected_tsc_khz {
        parts.push(t!("TSC {mhz} (detected)", mhz = mhz(k)));
    }
    if let Some(k) = s.refined_khz {
        parts.push(t!("TSC {mhz} (refined)", mhz = mhz(k)));
    }
    if let Some(k) = s.hypervisor_tsc_khz {
        parts.push(t!("TSC {mhz} (from the hypervisor)", mhz = mhz(k)));
    }
    if parts.is_empty() {
        return writeln!(out, "{}", t!("  frequency: not in this log"));
    }
    writeln!(out, "{}", t!("  frequency: {list}", list = parts.join(", ")))
}

/// The TSC marked unstable: when, why, by which watchdog, its skew and
/// interval; each sync warp; TSC_ADJUST and P0 firmware bugs.
fn write_unstable(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    if !s.tsc_marked_unstable {
        writeln!(out, "{}", t!("  TSC marked unstable: no"))?;
    } else {
        let when = s
            .events
            .iter()
            .find(|e| is_unstable_event(e))
            .map_or(String::new(), |e| {
                t!(" at {time}", time = time_text(&e.time).trim_matches(['[', ']', ' ']))
            });
        let line = t!(
            "  TSC marked unstable: yes{when}: {reasons}{cited}",
            when = when,
            reasons = listed(&s.unstable_reasons, "; "),
            cited = cited(s.cited.tsc_marked_unstable.as_ref())
        );
        writeln_escaped!(out, "{line}")?;
    }
    if !s.clocksources_marked_unstable.is_empty() {
        let line = t!(
            "  condemned by the watchdog: {list}",
            list = listed(&s.clocksources_marked_unstable, ", ")
        );
        writeln_escaped!(out, "{line}")?;
    }
    let verdicts = s
        .events
        .iter()
        .filter(|e| e.kind == Kind::WatchdogMarkedUnstable)
        .count();
    if let Some(e) = s.events.iter().find(|e| e.kind == Kind::WatchdogMarkedUnstable) {
        let times = if verdicts > 1 {
            t!(" (the first of {n} verdicts)", n = verdicts)
        } else {
            String::new()
        };
        let named = s
            .cited
            .watchdog
            .as_ref()
            .map_or(String::new(), |c| t!("; named at line {line}", line = c.line));
        let line = t!(
            "    {watchdog} (line {line}{named}){times}",
            watchdog = watchdog_text(e, s.watchdog.as_deref()),
            line = e.line,
            named = named,
            times = times
        );
        writeln_escaped!(out, "{line}")?;
    } else if let Some(w) = &s.watchdog {
        let line = t!(
            "  watchdog: {watchdog}{cited}",
            watchdog = w,
            cited = cited(s.cited.watchdog.as_ref())
        );
        writeln_escaped!(out, "{line}")?;
    }
    let warps: Vec<&Event> = s.events.iter().filter(|e| e.kind == Kind::TscSyncWarp).collect();
    match warps.as_slice() {
        [] => {}
        [one] => writeln_escaped!(out, "    {}", warp_text(one))?,
        [first, .., last] => {
            let line = tn!(
                "    {n} sync warps; the first {warp}",
                "    {n} sync warps; the first {warp}",
                warps.len(),
                n = warps.len(),
                warp = warp_text(first)
            );
            writeln_escaped!(out, "{line}")?;
            write_line(out, &t!("    the last {warp}", warp = warp_text(last)))?;
        }
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
    write_counted(out, s, t!("firmware (TSC_ADJUST, P0)"), adjust)
}

/// `sync warp at [ 0.51]: 4123 cycles TSC warp between CPU 0 and CPU 8 (line 40)`.
fn warp_text(e: &Event) -> String {
    let f = &e.facts;
    let cpus = match (f.from_cpu, f.to_cpu) {
        (Some(a), Some(b)) => t!(" between CPU {a} and CPU {b}", a = a, b = b),
        _ => String::new(),
    };
    match f.warp_cycles {
        Some(c) => tn!(
            "sync warp at {time}: {n} cycles TSC warp{cpus} (line {line})",
            "sync warp at {time}: {n} cycles TSC warp{cpus} (line {line})",
            c.unsigned_abs(),
            time = time_text(&e.time),
            n = c,
            cpus = cpus,
            line = e.line
        ),
        None => t!(
            "sync warp at {time}: a TSC warp{cpus} (line {line})",
            time = time_text(&e.time),
            cpus = cpus,
            line = e.line
        ),
    }
}

fn is_unstable_event(e: &Event) -> bool {
    matches!(e.kind, Kind::TscMarkedUnstable | Kind::TscSyncWarp)
        || (matches!(e.kind, Kind::WatchdogMarkedUnstable | Kind::WatchdogReadbackUnstable)
            && matches!(e.facts.clocksource.as_deref(), Some("tsc" | "tsc-early")))
}

/// `watchdog hpet on CPU 2: skew -863625 ns over an interval of 496465510 ns`.
fn watchdog_text(e: &Event, watchdog: Option<&str>) -> String {
    let f = &e.facts;
    let cs = f.clocksource.as_deref().unwrap_or(t!("a clocksource"));
    let wd = f.watchdog.as_deref().or(watchdog).unwrap_or(t!("not named"));
    let cpu = f.cpu.map_or(String::new(), |c| t!(" on CPU {cpu}", cpu = c));
    let mut text = t!(
        "watchdog {watchdog}{cpu} condemned {clocksource}",
        watchdog = wd,
        cpu = cpu,
        clocksource = cs
    );
    if let Some(skew) = f.skew_ns {
        text.push_str(&t!(": skew {ns} ns", ns = skew));
    }
    if let Some(i) = f.interval_ns.or(f.wd_nsec) {
        text.push_str(&t!(" over an interval of {ns} ns", ns = i));
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
    let (n, last) = found.fold((1, first), |(n, _), e| (n + 1, e));
    let times = if n == 1 {
        t!(" (line {line})", line = first.line)
    } else {
        tn!(
            " ({n} messages, lines {first} to {last})",
            " ({n} messages, lines {first} to {last})",
            n,
            n = n,
            first = first.line,
            last = last.line
        )
    };
    writeln_escaped!(out, "  {what}{times}: {}", shown(&first.message))
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
        let line = t!(
            "  watchdog read-back delays: {n} (largest {max} ns)",
            n = delays.len(),
            max = max
        );
        writeln!(out, "{line}")?;
    }
    write_counted(out, s, t!("skew checks skipped"), |k| {
        k == Kind::WatchdogSkewTestSkipped
    })?;
    write_counted(out, s, t!("watchdog reads retried"), |k| k == Kind::WatchdogRetried)?;
    write_counted(out, s, t!("long readout intervals"), |k| k == Kind::WatchdogLongReadout)
}

fn write_switches(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    let all = &s.clocksource_switches;
    let path = if all.len() <= 2 * SHOWN_ITEMS {
        all.join(" -> ")
    } else {
        tn!(
            "{first} -> ... ({n} switches) ... -> {last}",
            "{first} -> ... ({n} switches) ... -> {last}",
            all.len(),
            first = all[..SHOWN_ITEMS].join(" -> "),
            n = all.len(),
            last = all[all.len() - 2..].join(" -> ")
        )
    };
    match &s.final_clocksource {
        None => writeln!(out, "{}", t!("  clocksource: no switch in this log")),
        Some(last) => {
            let line = t!(
                "  clocksource: {path} (the log ends on {last}){cited}",
                path = shown(&path),
                last = shown(last),
                cited = cited(s.cited.final_clocksource.as_ref())
            );
            writeln_escaped!(out, "{line}")
        }
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

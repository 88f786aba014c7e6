//! A kernel log's TSC and clocksource events, in order, and what they add up
//! to: whether and why the TSC was marked unstable, by which watchdog, the
//! frequencies the kernel detected, the clocksource it ends on, the
//! hypervisor it shows. Multi-line events are one event: the watchdog's
//! verdict with its detail lines, a failed sync check with its warp, the
//! wd-wd read-back pair. Lines a mail client wrapped are joined back where
//! only the joined text is a message ([`Builder::add`]). Each fact the
//! summary states cites the line it was read from ([`Cited`]). A log of
//! several boots is cut at each boot ([`super::boots`]): the summary is the
//! last boot's, with what the earlier ones showed.

use serde::Serialize;
use std::collections::HashSet;

use super::advice;
use super::evidence::{self, clocksource_hypervisor};
use super::formats::{recognise, Citation, Facts, Kind, Role};
use super::meaning::{self, Machine};
use super::paste::{self, LogTime};

/// Upper bound on the earlier boots listed (every boot is still counted).
pub const MAX_EARLIER_BOOTS: usize = 100;

/// What an earlier boot of the log showed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct EarlierBoot {
    /// The 1-based line of the text where it starts.
    pub first_line: u64,
    /// Its kernel lines.
    pub lines: u64,
    /// The kernel's `Linux version ...` text, when the boot shows it (cut to 1 KiB).
    pub kernel: Option<String>,
    /// Whether its kernel marked the TSC unstable.
    pub tsc_marked_unstable: bool,
    /// Why (its first reasons).
    pub unstable_reasons: Vec<String>,
    /// The clocksource it ended on.
    pub final_clocksource: Option<String>,
    /// The watchdog a line named.
    pub watchdog: Option<String>,
    /// Whether it would have asked the user to act.
    pub act: bool,
}

pub use super::evidence::hypervisor_name;

/// One event of the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Event {
    /// When its first line was printed, as far as the paste shows.
    pub time: LogTime,
    /// What it says.
    pub kind: Kind,
    /// The first line's message, verbatim (untrusted: escape when shown),
    /// cut to 1 KiB.
    pub message: String,
    /// The 1-based number of its first line in the text read.
    pub line: u64,
    /// The event's further lines (watchdog detail, warp), verbatim.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub detail: Vec<String>,
    /// The console level of the first line, when shown.
    pub level: Option<u8>,
    /// The values the lines carry.
    pub facts: Facts,
    /// What it means.
    pub meaning: String,
}

/// The line each fact of a summary was read from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Cited {
    /// The line that shows the hypervisor (or bare hardware).
    pub hypervisor: Option<Citation>,
    /// The line that names the watchdog.
    pub watchdog: Option<Citation>,
    /// The first line that marks the TSC unstable.
    pub tsc_marked_unstable: Option<Citation>,
    /// The last clocksource switch.
    pub final_clocksource: Option<Citation>,
}

/// What a kernel log says about the TSC and clocksources.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Summary {
    /// Kernel lines read, every boot (after the paste prefixes; other
    /// programs' lines not counted).
    pub lines: u64,
    /// Of those, the lines that look like kernel output (a kernel prefix, or
    /// printable text with a word); 0 means the text is not a kernel log
    /// (random bytes, a binary file) and `clockscope dmesg` exits 2.
    pub kernel_like_lines: u64,
    /// Boots in the log (a `Linux version` line, or the monotonic time
    /// starting again at 0); at least 1 when any kernel line was read.
    pub boots: u64,
    /// The 1-based line of the text where the boot judged here (the last)
    /// starts.
    pub boot_first_line: u64,
    /// What each earlier boot showed, oldest first (at most
    /// [`MAX_EARLIER_BOOTS`] listed).
    pub earlier_boots: Vec<EarlierBoot>,
    /// The sequence number of the first `/dev/kmsg` record, when records were read.
    pub first_sequence: Option<u64>,
    /// The kernel marked the TSC unstable (a reason, a watchdog verdict on
    /// `tsc`/`tsc-early`, or a sync warp).
    pub tsc_marked_unstable: bool,
    /// Why, in the kernel's own words, in order of first appearance (each
    /// once; at most [`super::MAX_EVENTS`] distinct ones kept).
    pub unstable_reasons: Vec<String>,
    /// The clocksource of the last switch (`Switched to clocksource X`).
    pub final_clocksource: Option<String>,
    /// Every clocksource switched to, in order.
    pub clocksource_switches: Vec<String>,
    /// The clocksource watchdog that judged the TSC, when a line names it.
    pub watchdog: Option<String>,
    /// Clocksources the watchdog condemned, in order.
    pub clocksources_marked_unstable: Vec<String>,
    /// Every `Measured N cycles TSC warp`, in order.
    pub warp_cycles: Vec<i64>,
    /// `Detected %lu.%03lu MHz processor` (cpu_khz), the last one.
    pub detected_processor_khz: Option<u64>,
    /// `Detected %lu.%03lu MHz TSC` (tsc_khz when it differs), the last one.
    pub detected_tsc_khz: Option<u64>,
    /// `Refined TSC clocksource calibration`, the last one.
    pub refined_khz: Option<u64>,
    /// `TSC freq read from hypervisor` (VMware), the last one.
    pub hypervisor_tsc_khz: Option<u64>,
    /// The hypervisor the log shows, lower case (`kvm`, `xen`, `hyper-v`,
    /// `vmware`, ...); `None` on bare hardware or when no line says.
    pub hypervisor: Option<String>,
    /// Bare metal or guest: from the log (hypervisor lines, `on bare
    /// hardware`) unless the caller knows better.
    pub machine: Machine,
    /// The events, in log order (at most [`super::MAX_EVENTS`]).
    pub events: Vec<Event>,
    /// Events beyond [`super::MAX_EVENTS`], not listed.
    pub events_not_listed: u64,
    /// What the log means for PostgreSQL's clock reads.
    pub postgres: String,
    /// What to do.
    pub advice: String,
    /// Whether the user should act (`clockscope dmesg` exits 1): the log
    /// ends on a clocksource that costs a system call per read, or the
    /// kernel marked the TSC unstable and no fast clocksource follows.
    pub act: bool,
    /// Why (or why not), in one sentence.
    pub verdict: String,
    /// The one command to run next, on the machine the log came from.
    pub next_command: String,
    /// The line each fact above was read from.
    pub cited: Cited,
}

/// Incremental construction, line by line.
#[derive(Default)]
pub struct Builder {
    s: Summary,
    /// The kind of the event still open for detail lines, if any.
    open: Option<Kind>,
    /// Strength of the line that showed the hypervisor ([`evidence::Proof`]).
    hypervisor_strength: u8,
    bare_hardware: bool,
    /// Rank of the source of `watchdog` (W4/W6 best).
    watchdog_rank: u8,
    /// The reasons already listed (linear de-duplication).
    reasons_seen: HashSet<String>,
    condemned_seen: HashSet<String>,
    /// The last line, when it was no message alone: a mail client may have
    /// wrapped it, and the next line may complete it.
    unrecognised: Option<paste::LogLine>,
}

impl Builder {
    /// Adds one parsed line. A line with no time or level of its own that is
    /// no message alone, after a line that was no message alone either, is
    /// taken as the wrapped rest of that line when the two joined are a
    /// message (the joined event cites both lines).
    pub fn add(&mut self, line: paste::LogLine) {
        self.s.lines += 1;
        if self.s.lines == 1 {
            self.s.first_sequence = line.sequence;
            self.s.boot_first_line = line.line;
        }
        // What the line proves about where the kernel runs (any line, known message or not).
        if let Some(p) = evidence::proof_in(&line.message) {
            self.proof(p.hypervisor, p.strength, &line);
        }
        let mut line = line;
        let mut recognised = recognise(&line.message);
        if recognised.as_ref().is_none_or(|r| r.role == Role::NotEvent) && line.time.is_empty() && line.level.is_none()
        {
            if let Some(prev) = self.unrecognised.take() {
                let joined = format!("{} {}", prev.message.trim_end(), line.message.trim_start());
                if let Some(r) = recognise(&joined).filter(|r| r.role != Role::NotEvent) {
                    line = paste::LogLine {
                        message: paste::cut(&joined),
                        raw: paste::cut(&format!("{}\n{}", prev.raw, line.raw)),
                        ..prev
                    };
                    recognised = Some(r);
                }
            }
        }
        let Some(r) = recognised else {
            // A wrapped rest of a detail line (indented, no time of its own)
            // leaves the event open for the next detail line.
            let wrapped = line.time.is_empty() && line.level.is_none() && line.raw.starts_with([' ', '\t']);
            if !wrapped {
                self.open = None;
            }
            self.unrecognised = Some(line);
            return;
        };
        self.unrecognised = None;
        self.absorb(r.kind, r.role, &r.facts, &line);
        match r.role {
            Role::Detail if self.open == Some(r.kind) => {
                if let Some(e) = self.s.events.last_mut() {
                    e.detail.push(line.message.trim().to_string());
                    merge(&mut e.facts, &r.facts);
                }
                return;
            }
            Role::NotEvent => {
                self.open = None;
                return;
            }
            // A detail line whose header a grep dropped: facts kept above.
            Role::Detail if r.kind == Kind::WatchdogMarkedUnstable => return,
            _ => {}
        }
        if self.s.events.len() >= super::MAX_EVENTS {
            self.s.events_not_listed += 1;
            self.open = None;
            return;
        }
        self.open = matches!(r.role, Role::Opens).then_some(r.kind);
        self.s.events.push(Event {
            time: line.time,
            kind: r.kind,
            message: line.message.trim().to_string(),
            line: line.line,
            detail: Vec::new(),
            level: line.level,
            facts: r.facts,
            meaning: String::new(),
        });
    }

    /// Keeps a proof of where the kernel runs: the most direct one, the first of equals.
    fn proof(&mut self, hypervisor: Option<String>, strength: u8, line: &paste::LogLine) {
        match hypervisor {
            None => self.bare_hardware = true,
            Some(h) if strength > self.hypervisor_strength => {
                self.hypervisor_strength = strength;
                self.s.hypervisor = Some(h);
                self.s.cited.hypervisor = Some(cite(line));
            }
            Some(_) => {}
        }
    }

    /// Folds one line's facts into the summary.
    fn absorb(&mut self, kind: Kind, role: Role, f: &Facts, line: &paste::LogLine) {
        use Kind as K;
        for cs in [&f.clocksource, &f.watchdog].into_iter().flatten() {
            if let Some(h) = clocksource_hypervisor(cs) {
                self.proof(Some(h.to_string()), 1, line);
            }
        }
        let unstable_before = self.s.tsc_marked_unstable;
        let s = &mut self.s;
        match kind {
            K::TscDetectedProcessor => s.detected_processor_khz = f.khz.or(s.detected_processor_khz),
            K::TscDetectedTsc => s.detected_tsc_khz = f.khz.or(s.detected_tsc_khz),
            K::TscRefined => s.refined_khz = f.khz.or(s.refined_khz),
            K::HypervisorTscFrequency => s.hypervisor_tsc_khz = f.khz.or(s.hypervisor_tsc_khz),
            K::TscMarkedUnstable => {
                s.tsc_marked_unstable = true;
                if let Some(r) = &f.reason {
                    add_unique(&mut s.unstable_reasons, &mut self.reasons_seen, r);
                }
            }
            // tsc_sync.c prints the `TSC synchronization [CPU#a -> CPU#b]:`
            // header only when the check failed, right before marking the TSC
            // unstable: the header alone (a paste cut after it) says so too.
            K::TscSyncWarp if role == Role::Opens || f.warp_cycles.is_some() => {
                s.tsc_marked_unstable = true;
                add_unique(
                    &mut s.unstable_reasons,
                    &mut self.reasons_seen,
                    "check_tsc_sync_source failed",
                );
                if let Some(c) = f.warp_cycles {
                    s.warp_cycles.push(c);
                }
            }
            _ => {}
        }
        self.clocksources(kind, role, f, line);
        self.watchdog(kind, f, line);
        if !unstable_before && self.s.tsc_marked_unstable {
            self.s.cited.tsc_marked_unstable = Some(cite(line));
        }
    }

    /// Switches, and the verdicts of the watchdog (its header lines W1-W3, W14).
    fn clocksources(&mut self, kind: Kind, role: Role, f: &Facts, line: &paste::LogLine) {
        use Kind as K;
        let s = &mut self.s;
        let Some(cs) = &f.clocksource else { return };
        let on_tsc = cs == "tsc" || cs == "tsc-early";
        let header = matches!(role, Role::Event | Role::Opens);
        match kind {
            K::ClocksourceSwitched => {
                s.final_clocksource = Some(cs.clone());
                s.clocksource_switches.push(cs.clone());
                s.cited.final_clocksource = Some(cite(line));
            }
            K::WatchdogMarkedUnstable | K::WatchdogReadbackUnstable if header => {
                add_unique(&mut s.clocksources_marked_unstable, &mut self.condemned_seen, cs);
                if on_tsc {
                    s.tsc_marked_unstable = true;
                    add_unique(&mut s.unstable_reasons, &mut self.reasons_seen, "clocksource watchdog");
                }
            }
            _ => {}
        }
    }

    fn watchdog(&mut self, kind: Kind, f: &Facts, line: &paste::LogLine) {
        let Some(w) = &f.watchdog else { return };
        let rank = match kind {
            Kind::WatchdogMarkedUnstable if f.wd_nsec.is_some() || f.skew_ns.is_none() => 3,
            Kind::WatchdogRetried | Kind::WatchdogReadbackUnstable | Kind::WatchdogSkewTestSkipped => 2,
            _ => 1,
        };
        if rank >= self.watchdog_rank {
            if self.s.watchdog.as_ref() != Some(w) || self.s.cited.watchdog.is_none() {
                self.s.cited.watchdog = Some(cite(line));
            }
            self.watchdog_rank = rank;
            self.s.watchdog = Some(w.clone());
        }
    }

    /// The summary, with meanings for `machine` (or the log's own).
    pub fn finish(mut self, machine: Option<Machine>) -> Summary {
        let s = &mut self.s;
        s.machine = machine.unwrap_or(if s.hypervisor.is_some() {
            Machine::Guest
        } else if self.bare_hardware {
            Machine::BareMetal
        } else {
            Machine::Unknown
        });
        for e in &mut s.events {
            e.meaning = meaning::event_meaning(e.kind, &e.message, &e.facts, s.machine);
        }
        let cs = s.final_clocksource.as_deref();
        s.postgres = advice::postgres_meaning(cs, s.tsc_marked_unstable);
        s.advice = advice::advice(cs, s.tsc_marked_unstable, s.machine, s.hypervisor.as_deref());
        (s.act, s.verdict) = advice::verdict(cs, s.tsc_marked_unstable);
        s.next_command = advice::next_command(s.act, !s.warp_cycles.is_empty());
        if s.boots == 0 && s.lines > 0 {
            s.boots = 1;
        }
        self.s
    }

    /// Kernel lines added so far.
    pub fn lines(&self) -> u64 {
        self.s.lines
    }

    /// The hypervisor shown so far and the line that shows it.
    pub(crate) fn hypervisor_shown(&self) -> Option<(String, Option<Citation>, u8)> {
        self.s
            .hypervisor
            .clone()
            .map(|h| (h, self.s.cited.hypervisor.clone(), self.hypervisor_strength))
    }

    /// Takes a hypervisor an earlier boot of the same log showed, when this
    /// boot shows none.
    pub(crate) fn inherit_hypervisor(&mut self, h: String, cited: Option<Citation>, strength: u8) {
        if self.s.hypervisor.is_none() && !self.bare_hardware {
            self.s.hypervisor = Some(h);
            self.s.cited.hypervisor = cited;
            self.hypervisor_strength = strength;
        }
    }
}

/// The citation of `line`.
fn cite(line: &paste::LogLine) -> Citation {
    Citation {
        line: line.line,
        text: line.raw.clone(),
        message: line.message.trim().to_string(),
    }
}

/// Adds `item` once: `seen` makes the test constant-time, so a log of
/// millions of distinct reasons stays linear.
fn add_unique(list: &mut Vec<String>, seen: &mut HashSet<String>, item: &str) {
    if seen.len() < super::MAX_EVENTS && !seen.contains(item) {
        seen.insert(item.to_string());
        list.push(item.to_string());
    }
}

/// Fills the unset fields of `into` from `from`.
fn merge(into: &mut Facts, from: &Facts) {
    macro_rules! fill {
        ($($f:ident),*) => { $( if into.$f.is_none() { into.$f = from.$f.clone(); } )* };
    }
    fill!(
        clocksource,
        watchdog,
        reason,
        khz,
        cpu,
        from_cpu,
        to_cpu,
        cpus,
        warp_cycles,
        delay_ns
    );
    fill!(
        skew_ns,
        interval_ns,
        wd_nsec,
        cs_nsec,
        attempts,
        tsc_adjust,
        tsc_adjust_new,
        hypervisor
    );
}

//! A kernel log's TSC and clocksource events, in order, and what they add up
//! to: whether and why the TSC was marked unstable, by which watchdog, the
//! frequencies the kernel detected, the clocksource it ends on, the
//! hypervisor it shows. Multi-line events are one event: the watchdog's
//! verdict with its detail lines, a failed sync check with its warp, the
//! wd-wd read-back pair.

use serde::Serialize;

use super::formats::{recognise, Facts, Kind, Role};
use super::meaning::{self, Machine};
use super::paste::{self, LogTime};

/// One event of the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    /// When its first line was printed, as far as the paste shows.
    pub time: LogTime,
    /// What it says.
    pub kind: Kind,
    /// The first line's message, verbatim (untrusted: escape when shown).
    pub message: String,
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

/// What a kernel log says about the TSC and clocksources.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Kernel lines read (after the paste prefixes; other programs' lines not counted).
    pub lines: u64,
    /// The sequence number of the first `/dev/kmsg` record, when records were read.
    pub first_sequence: Option<u64>,
    /// The kernel marked the TSC unstable (a reason, a watchdog verdict on
    /// `tsc`/`tsc-early`, or a sync warp).
    pub tsc_marked_unstable: bool,
    /// Why, in the kernel's own words, in order of first appearance.
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
}

/// The lower-case hypervisor name of an H1/H2 name; `None` for bare hardware.
pub fn hypervisor_name(printed: &str) -> Option<String> {
    let p = printed.trim().to_ascii_lowercase();
    Some(if p == "bare hardware" || p.is_empty() {
        return None;
    } else if p.starts_with("xen") {
        "xen".to_string()
    } else if p.contains("hyperv") || p.contains("hyper-v") {
        "hyper-v".to_string()
    } else if p.starts_with("vmware") {
        "vmware".to_string()
    } else if p.starts_with("kvm") {
        "kvm".to_string()
    } else {
        p
    })
}

/// Interprets a whole log (any paste style). `machine` overrides what the log
/// shows (this machine's cpuinfo); `None` lets the log decide.
pub fn summarise(text: &str, machine: Option<Machine>) -> Summary {
    let mut b = Builder::default();
    for line in paste::lines(text) {
        b.add(line);
    }
    b.finish(machine)
}

/// Incremental construction, line by line.
#[derive(Default)]
pub struct Builder {
    s: Summary,
    /// The kind of the event still open for detail lines, if any.
    open: Option<Kind>,
    hypervisor_from_h1: bool,
    bare_hardware: bool,
    /// Rank of the source of `watchdog` (W4/W6 best).
    watchdog_rank: u8,
}

impl Builder {
    /// Adds one parsed line.
    pub fn add(&mut self, line: paste::LogLine) {
        self.s.lines += 1;
        if self.s.lines == 1 {
            self.s.first_sequence = line.sequence;
        }
        let Some(r) = recognise(&line.message) else {
            self.open = None;
            return;
        };
        self.absorb(r.kind, r.role, &r.facts);
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
            Role::Detail if r.kind == Kind::WatchdogMarkedUnstable => {
                // A detail line whose header a grep dropped: facts kept above.
                return;
            }
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
            detail: Vec::new(),
            level: line.level,
            facts: r.facts,
            meaning: String::new(),
        });
    }

    /// Folds one line's facts into the summary.
    fn absorb(&mut self, kind: Kind, role: Role, f: &Facts) {
        use Kind as K;
        let s = &mut self.s;
        match kind {
            K::TscDetectedProcessor => s.detected_processor_khz = f.khz.or(s.detected_processor_khz),
            K::TscDetectedTsc => s.detected_tsc_khz = f.khz.or(s.detected_tsc_khz),
            K::TscRefined => s.refined_khz = f.khz.or(s.refined_khz),
            K::HypervisorTscFrequency => s.hypervisor_tsc_khz = f.khz.or(s.hypervisor_tsc_khz),
            K::TscMarkedUnstable => {
                s.tsc_marked_unstable = true;
                if let Some(r) = &f.reason {
                    add_unique(&mut s.unstable_reasons, r);
                }
            }
            K::TscSyncWarp => {
                if let Some(c) = f.warp_cycles {
                    s.tsc_marked_unstable = true;
                    s.warp_cycles.push(c);
                    add_unique(&mut s.unstable_reasons, "check_tsc_sync_source failed");
                }
            }
            K::HypervisorDetected | K::ParavirtKernel => self.hypervisor(kind, f),
            _ => {}
        }
        self.clocksources(kind, role, f);
        self.watchdog(kind, f);
    }

    /// Switches, and the verdicts of the watchdog (its header lines W1-W3, W14).
    fn clocksources(&mut self, kind: Kind, role: Role, f: &Facts) {
        use Kind as K;
        let s = &mut self.s;
        let Some(cs) = &f.clocksource else { return };
        let on_tsc = cs == "tsc" || cs == "tsc-early";
        let header = matches!(role, Role::Event | Role::Opens);
        match kind {
            K::ClocksourceSwitched => {
                s.final_clocksource = Some(cs.clone());
                s.clocksource_switches.push(cs.clone());
            }
            K::WatchdogMarkedUnstable | K::WatchdogReadbackUnstable if header => {
                add_unique(&mut s.clocksources_marked_unstable, cs);
                if on_tsc {
                    s.tsc_marked_unstable = true;
                    add_unique(&mut s.unstable_reasons, "clocksource watchdog");
                }
            }
            _ => {}
        }
    }

    fn watchdog(&mut self, kind: Kind, f: &Facts) {
        let Some(w) = &f.watchdog else { return };
        let rank = match kind {
            Kind::WatchdogMarkedUnstable if f.wd_nsec.is_some() || f.skew_ns.is_none() => 3,
            Kind::WatchdogRetried | Kind::WatchdogReadbackUnstable | Kind::WatchdogSkewTestSkipped => 2,
            _ => 1,
        };
        if rank >= self.watchdog_rank {
            self.watchdog_rank = rank;
            self.s.watchdog = Some(w.clone());
        }
    }

    fn hypervisor(&mut self, kind: Kind, f: &Facts) {
        let Some(printed) = &f.hypervisor else { return };
        match hypervisor_name(printed) {
            Some(h) if kind == Kind::HypervisorDetected => {
                self.s.hypervisor = Some(h);
                self.hypervisor_from_h1 = true;
            }
            Some(h) if !self.hypervisor_from_h1 => self.s.hypervisor = Some(h),
            Some(_) => {}
            None => self.bare_hardware = true,
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
        s.postgres = meaning::postgres_meaning(cs, s.tsc_marked_unstable);
        s.advice = meaning::advice(cs, s.tsc_marked_unstable, s.machine);
        self.s
    }
}

fn add_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|x| x == item) {
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

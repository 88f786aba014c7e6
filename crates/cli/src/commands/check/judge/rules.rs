//! `check`'s rules, one function per rule: PostgreSQL's and clockscope's
//! read-cost rules, backward steps, the syscall fallback, interference, and
//! the status they give together.

use super::{
    MODERN_AVG_LOOP_NS, MODERN_P99_NS, PG_RULE_AVG_LOOP_NS, PG_RULE_UNDER_1US_PCT, SYSCALL_AVG_LOOP_NS,
    SYSCALL_CLOCKSOURCES,
};
use crate::commands::check::model::stats::ClockStats;
use crate::commands::check::model::verdict::{RuleResult, Status};
use crate::i18n::num;
use crate::{t, tn};

/// PostgreSQL's pg_test_timing rule, on the average loop (interference included).
pub(super) fn pg_rule(c: &ClockStats) -> RuleResult {
    let passed = c.under_1us_pct > PG_RULE_UNDER_1US_PCT && c.avg_loop_ns < PG_RULE_AVG_LOOP_NS;
    RuleResult {
        passed,
        clock: c.display_name.clone(),
        detail: t!(
            "{pct}% of reads under 1 us (needs > {min_pct}%), average loop {avg} ns (needs < {max_avg} ns)",
            pct = num(c.under_1us_pct, 4),
            min_pct = crate::i18n::localize_number(PG_RULE_UNDER_1US_PCT.to_string()),
            avg = num(c.avg_loop_ns, 2),
            max_avg = PG_RULE_AVG_LOOP_NS
        ),
    }
}

/// PostgreSQL's rule on the differences outside the interference gaps: the
/// read cost instead of the average loop, "under 1 us" among the rest.
pub(super) fn pg_rule_without_interference(c: &ClockStats) -> bool {
    c.under_1us_pct_without_gaps() > PG_RULE_UNDER_1US_PCT && c.read_cost_ns < PG_RULE_AVG_LOOP_NS
}

/// PostgreSQL's rule (`rule`, of clock `c`) failed, but passes with the
/// interference gaps taken out.
pub(super) fn fails_only_from_interference(rule: &RuleResult, c: &ClockStats) -> bool {
    !rule.passed && pg_rule_without_interference(c)
}

/// Why PostgreSQL's rule fails only because of interference, with the numbers.
pub(super) fn interference_note(s: &ClockStats) -> String {
    tn!(
        "PostgreSQL's rule fails only because of interference: the average loop ({avg} ns) includes {lost}% of \
         the run lost in {gaps} gaps; without them a read costs {cost} ns and {pct}% of reads are under 1 us",
        "PostgreSQL's rule fails only because of interference: the average loop ({avg} ns) includes {lost}% of \
         the run lost in {gaps} gaps; without them a read costs {cost} ns and {pct}% of reads are under 1 us",
        s.interference.gaps,
        avg = num(s.avg_loop_ns, 2),
        lost = num(s.interference.lost_fraction * 100.0, 1),
        gaps = s.interference.gaps,
        cost = num(s.read_cost_ns, 2),
        pct = num(s.under_1us_pct_without_gaps(), 4)
    )
}

/// clockscope's rule, on the read cost without interference gaps.
pub(super) fn modern_rule(c: &ClockStats) -> RuleResult {
    let passed = c.read_cost_ns <= MODERN_AVG_LOOP_NS && c.percentiles_ns.p99 <= MODERN_P99_NS && c.backward_steps == 0;
    RuleResult {
        passed,
        clock: c.display_name.clone(),
        detail: tn!(
            "read cost {cost} ns (needs <= {max_cost} ns), p99 {p99} ns (needs <= {max_p99} ns), {steps} backward steps (needs 0)",
            "read cost {cost} ns (needs <= {max_cost} ns), p99 {p99} ns (needs <= {max_p99} ns), {steps} backward steps (needs 0)",
            c.backward_steps,
            cost = num(c.read_cost_ns, 2),
            max_cost = MODERN_AVG_LOOP_NS,
            p99 = c.percentiles_ns.p99,
            max_p99 = MODERN_P99_NS,
            steps = c.backward_steps
        ),
    }
}

/// One problem per clock that went backwards (a wall clock's said not to
/// be a fault by itself).
pub(super) fn backward_steps(clocks: &[ClockStats]) -> Vec<String> {
    clocks
        .iter()
        .filter(|c| c.backward_steps > 0)
        .map(|c| {
            let msg = tn!(
                "{clock} went backwards {n} times (largest step {largest} ns); its elapsed time ({elapsed} s) and loop \
                 cost are the sum of its forward steps, as its end reading minus its start says {span} s",
                "{clock} went backwards {n} times (largest step {largest} ns); its elapsed time ({elapsed} s) and loop \
                 cost are the sum of its forward steps, as its end reading minus its start says {span} s",
                c.backward_steps,
                clock = c.display_name,
                n = c.backward_steps,
                largest = c.largest_backward_ns,
                elapsed = num(c.elapsed_ns as f64 / 1e9, 6),
                span = num(c.end_minus_start_ns as f64 / 1e9, 6)
            );
            if c.must_be_monotonic() {
                msg
            } else {
                t!(
                    "{problem}; a wall clock may be stepped by NTP, so this is not a clock fault by itself",
                    problem = msg
                )
            }
        })
        .collect()
}

/// Whether a monotonic clock went backwards: timings cannot be trusted.
pub(super) fn broken(clocks: &[ClockStats]) -> bool {
    clocks.iter().any(|c| c.backward_steps > 0 && c.must_be_monotonic())
}

/// Why the system clock `s` costs a syscall per read, if it does: by its
/// kernel clocksource's name (`clocksource`), by its read cost, or both.
pub(super) fn syscall_fallback(s: &ClockStats, clocksource: Option<&str>) -> Option<String> {
    let by_name = clocksource.filter(|cs| SYSCALL_CLOCKSOURCES.contains(cs)).map(|cs| {
        t!(
            "the kernel clocksource '{clocksource}' has no vDSO read: every clock_gettime is a syscall",
            clocksource = cs
        )
    });
    let by_cost = (s.read_cost_ns > SYSCALL_AVG_LOOP_NS).then(|| {
        t!(
            "clock_gettime costs {cost} ns per read (> {limit} ns): it behaves like a syscall, not a vDSO call",
            cost = num(s.read_cost_ns, 2),
            limit = SYSCALL_AVG_LOOP_NS
        )
    });
    match (by_name, by_cost) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}

/// The kernel's maximum error at its cap (16 s, `NTP_PHASE_LIMIT`): no bound at all.
const NTP_NO_BOUND_US: i64 = 16_000_000;

/// A problem when NTP is not synchronised: the kernel does not correct its
/// clock, so wall-clock time (log lines, `now()`) drifts and nothing checks
/// the clocksource's rate; with the error adjtimex gives.
pub(super) fn ntp_unsynchronised(n: &clockscope_system::linux::ntp::NtpState) -> Option<String> {
    if n.synchronised {
        return None;
    }
    let bound = if n.maximum_error_us >= NTP_NO_BOUND_US {
        t!("no error bound: the kernel's maximum error is at its 16 s cap").to_string()
    } else {
        t!(
            "the kernel's maximum error is {seconds} s",
            seconds = num(n.maximum_error_us as f64 / 1e6, 3)
        )
    };
    let estimated = if n.estimated_error_us > 0 && n.estimated_error_us < NTP_NO_BOUND_US {
        t!(", estimated error {us} µs", us = n.estimated_error_us)
    } else {
        String::new()
    };
    Some(t!(
        "NTP is not synchronised ({bound}{estimated}): the wall clock drifts uncorrected; start chronyd or \
         systemd-timesyncd (`timedatectl status` says which)",
        bound = bound,
        estimated = estimated
    ))
}

/// What the status is decided from.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct StatusFacts {
    /// A monotonic clock went backwards ([`broken`]).
    pub(super) broken: bool,
    /// The system clock was measured.
    pub(super) system_measured: bool,
    /// Something between clockscope and the kernel changes time.
    pub(super) time_interposed: bool,
    /// Whether the system clock passed PostgreSQL's rule and clockscope's.
    pub(super) postgresql_rule_passed: Option<bool>,
    pub(super) modern_rule_passed: Option<bool>,
    /// PostgreSQL's rule failed only because of interference.
    pub(super) fails_only_from_interference: bool,
    /// The system clock costs a syscall per read.
    pub(super) syscall_fallback: bool,
}

/// The status: BROKEN when time went backwards, NO VERDICT without the
/// system clock, BAD when time is interposed or PostgreSQL's rule fails
/// (not from interference alone: noise alone never gives BAD), FAIR when
/// clockscope's rule fails or reads are syscalls, else GOOD.
pub(super) fn status(f: StatusFacts) -> Status {
    if f.broken {
        Status::Broken
    } else if !f.system_measured {
        Status::NoVerdict
    } else if f.time_interposed {
        // What was measured is not the kernel's clock: never GOOD (exit 1).
        Status::Bad
    } else {
        match (f.postgresql_rule_passed, f.modern_rule_passed) {
            (Some(false), _) if !f.fails_only_from_interference => Status::Bad,
            (Some(_), Some(false)) => Status::Fair,
            _ if f.syscall_fallback => Status::Fair,
            _ => Status::Good,
        }
    }
}

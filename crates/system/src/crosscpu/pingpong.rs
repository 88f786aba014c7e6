//! The ping-pong offset estimate: bounds on how far one CPU's clock is ahead
//! of another's, from message round trips between two pinned threads.
//!
//! ```text
//! CPU a                                   CPU b
//! t0 = read(); slot_t0 = t0; request = n  ──►  sees request == n
//!                                              tb = read(); slot_tb = tb; reply = n
//! sees reply == n  ◄──
//! t1 = read()
//! ```
//!
//! CPU b's reading was taken after `t0` and before `t1` in real time, so at
//! that instant CPU a's clock read between `t0` and `t1`, and the offset
//! `clock_b - clock_a` lies in `[tb - t1, tb - t0]`. Every round gives such
//! an interval; the offset (if constant) lies in all of them, so the tightest
//! bounds are the largest lower bound and the smallest upper bound. Bounds
//! that exclude 0 prove the clocks disagree; bounds that cross (lower >
//! upper) prove the offset was not constant during the run.
//!
//! Ordering: the request and reply flags are written with Release and read
//! with Acquire. Each reading is published through a slot *before* the flag
//! (`slot_t0`, `slot_tb`), so the flag store depends on the value read and
//! cannot become visible before the clock was read, even on CPUs where a
//! counter read is not ordered with stores (AArch64). The reading after an
//! Acquire load is ordered behind it by the clock itself (RDTSCP waits for
//! earlier loads; ISB;CNTVCT and clock_gettime's vDSO read are ordered). Every
//! wait is bounded by the test's deadline.

use super::spin::{run_pinned_pair, spin_until};
use super::{CpuClock, CrossCpuError, RunOptions};
use crate::forward::ForwardDeadline;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Rounds between two looks at the deadline and the stop request.
const CHECK_EVERY_ROUNDS: u64 = 16;

/// The outcome of the ping-pong estimate on one CPU pair and one clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffsetResult {
    /// Completed round trips.
    pub rounds: u64,
    /// The largest lower bound on `clock_b - clock_a`, in ticks (`max(tb - t1)`).
    pub lower_ticks: Option<i64>,
    /// The smallest upper bound on `clock_b - clock_a`, in ticks (`min(tb - t0)`).
    pub upper_ticks: Option<i64>,
    /// The shortest round trip `t1 - t0` on CPU a, in ticks.
    pub min_round_trip_ticks: Option<u64>,
    /// How long the estimate ran.
    pub elapsed_ns: u64,
    /// Whether the caller's stop request ended it early.
    pub stopped: bool,
}

/// Where the offset `clock_b - clock_a` lies, from [`OffsetResult`]'s bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffsetFinding {
    /// No completed round.
    Unmeasured,
    /// The bounds contain 0: no offset can be shown.
    InSync,
    /// Both bounds are above 0: CPU b's clock is ahead of CPU a's.
    BAhead,
    /// Both bounds are below 0: CPU a's clock is ahead of CPU b's.
    AAhead,
    /// The lower bound exceeds the upper bound: the offset changed during the run.
    Crossed,
}

impl OffsetResult {
    /// What the bounds show.
    pub fn finding(&self) -> OffsetFinding {
        match (self.lower_ticks, self.upper_ticks) {
            (Some(lo), Some(hi)) if lo > hi => OffsetFinding::Crossed,
            (Some(lo), Some(_)) if lo > 0 => OffsetFinding::BAhead,
            (Some(_), Some(hi)) if hi < 0 => OffsetFinding::AAhead,
            (Some(_), Some(_)) => OffsetFinding::InSync,
            _ => OffsetFinding::Unmeasured,
        }
    }
}

#[derive(Default)]
struct Shared {
    request: AtomicU64,
    slot_t0: AtomicU64,
    reply: AtomicU64,
    slot_tb: AtomicU64,
    done: AtomicBool,
}

/// Runs the ping-pong estimate between `cpu_a` (which sends and keeps the
/// bounds) and `cpu_b` for `opts.duration_ns`.
pub fn ping_pong<C: CpuClock + ?Sized>(
    clock: &C,
    cpu_a: usize,
    cpu_b: usize,
    opts: &RunOptions<'_>,
) -> Result<OffsetResult, CrossCpuError> {
    let s = Shared::default();
    let start = Instant::now();
    let soft = start + Duration::from_nanos(opts.duration_ns);
    let hard = soft + Duration::from_nanos(opts.grace_ns);
    let (mut result, ()) = run_pinned_pair(
        (cpu_a, cpu_b),
        opts.pinner,
        &s.done,
        || sender(clock, cpu_a, &s, opts, soft, hard),
        || replier(clock, cpu_b, &s, hard),
    )?;
    result.elapsed_ns = start.elapsed().as_nanos().min(u64::MAX as u128) as u64;
    Ok(result)
}

fn sender<C: CpuClock + ?Sized>(
    clock: &C,
    cpu: usize,
    s: &Shared,
    opts: &RunOptions<'_>,
    soft: Instant,
    hard: Instant,
) -> OffsetResult {
    // This thread's own deadlines in forward time: a clock moved back cannot stretch them.
    let (mut soft, mut hard) = (ForwardDeadline::at(soft), ForwardDeadline::at(hard));
    let mut r = OffsetResult::default();
    let mut round: u64 = 0;
    loop {
        if round.is_multiple_of(CHECK_EVERY_ROUNDS) {
            if (opts.stop)() {
                r.stopped = true;
                break;
            }
            // The grace period only serves a first round that is late.
            if hard.passed() || (soft.passed() && r.rounds > 0) || s.done.load(Ordering::Relaxed) {
                break;
            }
        }
        round += 1;
        let t0 = clock.read(cpu);
        s.slot_t0.store(t0, Ordering::Relaxed);
        s.request.store(round, Ordering::Release);
        if !spin_until(|| s.reply.load(Ordering::Acquire) == round, &mut hard, &s.done) {
            break;
        }
        let t1 = clock.read(cpu);
        let tb = s.slot_tb.load(Ordering::Relaxed);
        let lower = tb.wrapping_sub(t1) as i64;
        let upper = tb.wrapping_sub(t0) as i64;
        r.lower_ticks = Some(r.lower_ticks.map_or(lower, |l| l.max(lower)));
        r.upper_ticks = Some(r.upper_ticks.map_or(upper, |u| u.min(upper)));
        let rtt = t1.wrapping_sub(t0) as i64;
        if rtt >= 0 {
            let rtt = rtt as u64;
            r.min_round_trip_ticks = Some(r.min_round_trip_ticks.map_or(rtt, |m| m.min(rtt)));
        }
        r.rounds += 1;
    }
    s.done.store(true, Ordering::Relaxed);
    r
}

fn replier<C: CpuClock + ?Sized>(clock: &C, cpu: usize, s: &Shared, hard: Instant) {
    let mut hard = ForwardDeadline::at(hard);
    let mut expected: u64 = 1;
    while spin_until(|| s.request.load(Ordering::Acquire) == expected, &mut hard, &s.done) {
        let tb = clock.read(cpu);
        s.slot_tb.store(tb, Ordering::Relaxed);
        s.reply.store(expected, Ordering::Release);
        expected += 1;
    }
}

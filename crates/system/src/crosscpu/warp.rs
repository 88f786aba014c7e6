//! The warp test: the kernel's `check_tsc_warp` (arch/x86/kernel/tsc_sync.c)
//! in user space, for any clock and one pair of CPUs.
//!
//! ```text
//! each of two threads, pinned to CPU a and CPU b, loops:
//!     take the lock
//!     prev = last; now = read(clock)        # an ordered read (RDTSCP, ISB;CNTVCT, clock_gettime)
//!     last = now
//!     release the lock
//!     if prev > now: warps++, max_warp = max(max_warp, prev - now)
//! ```
//!
//! The lock is a fair ticket lock, like the kernel's queued spinlock, so
//! while both threads run they alternate. Because every reading is taken and
//! published under one lock, the readings
//! form one sequence in real time: any reading smaller than the one before
//! it is time going backwards, whichever CPUs took the two readings. As in
//! the kernel, the test keeps going after a warp. Unlike the kernel, it also
//! counts *handovers* (a reading taken right after one from the other CPU):
//! only those compare the two CPUs, so a run whose threads never met proves
//! nothing, and the test runs past its duration (up to a grace period) until
//! it has seen enough of them in each direction.

use super::spin::{run_pinned_pair, TicketLock};
use super::{CpuClock, CrossCpuError, RunOptions};
use crate::forward::ForwardDeadline;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// Loop iterations between two looks at the deadline and the stop request.
const CHECK_EVERY_ITERATIONS: u64 = 64;

/// The outcome of the warp test on one CPU pair and one clock. Its JSON
/// (inside a [`ClockPairReport`](super::ClockPairReport)) is the counts: the
/// report writes the duration as `warp_test_ns` beside the largest warp in
/// ns, and a stop as the report's `interrupted`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct WarpResult {
    /// Readings taken, on both CPUs.
    pub iterations: u64,
    /// Readings on CPU b taken right after one on CPU a.
    pub handovers_a_to_b: u64,
    /// Readings on CPU a taken right after one on CPU b.
    pub handovers_b_to_a: u64,
    /// Readings smaller than the one before them (all kinds).
    pub warps: u64,
    /// Warps where CPU b read less than CPU a just had: b behind a.
    pub warps_b_behind_a: u64,
    /// Warps where CPU a read less than CPU b just had: a behind b.
    pub warps_a_behind_b: u64,
    /// The largest backward step, in the clock's ticks.
    pub max_warp_ticks: u64,
    /// How long the test ran.
    #[serde(skip)]
    pub elapsed_ns: u64,
    /// Whether the caller's stop request ended it early.
    #[serde(skip)]
    pub stopped: bool,
}

impl WarpResult {
    /// Whether both directions were compared at least `min` times.
    pub fn has_handovers(&self, min: u64) -> bool {
        self.handovers_a_to_b >= min && self.handovers_b_to_a >= min
    }
}

const NOBODY: u8 = 0;
const SIDE_A: u8 = 1;
const SIDE_B: u8 = 2;

/// The state both threads share; `last` and `last_side` only change under
/// `lock`. All zero at the start: `last_side` is [`NOBODY`].
#[derive(Default)]
struct Shared {
    lock: TicketLock,
    last: AtomicU64,
    last_side: AtomicU8,
    /// Handovers *to* side a (index 0) and side b (index 1).
    handovers: [AtomicU64; 2],
    done: AtomicBool,
}

#[derive(Default)]
struct SideStats {
    iterations: u64,
    warps: u64,
    warps_after_other: u64,
    max_warp_ticks: u64,
    stopped: bool,
}

/// Runs the warp test on `cpu_a` and `cpu_b` with `clock` for
/// `opts.duration_ns` (longer, up to `opts.grace_ns` more, until both
/// directions saw `opts.min_handovers` handovers).
pub fn warp_test<C: CpuClock + ?Sized>(
    clock: &C,
    cpu_a: usize,
    cpu_b: usize,
    opts: &RunOptions<'_>,
) -> Result<WarpResult, CrossCpuError> {
    let shared = Shared::default();
    let start = Instant::now();
    let soft = start + Duration::from_nanos(opts.duration_ns);
    let hard = soft + Duration::from_nanos(opts.grace_ns);
    let side = |cpu, me| run_side(clock, cpu, me, &shared, opts, soft, hard);
    let (a, b) = run_pinned_pair(
        (cpu_a, cpu_b),
        opts.pinner,
        &shared.done,
        || side(cpu_a, SIDE_A),
        || side(cpu_b, SIDE_B),
    )?;
    Ok(WarpResult {
        iterations: a.iterations + b.iterations,
        handovers_a_to_b: shared.handovers[1].load(Ordering::Relaxed),
        handovers_b_to_a: shared.handovers[0].load(Ordering::Relaxed),
        warps: a.warps + b.warps,
        warps_b_behind_a: b.warps_after_other,
        warps_a_behind_b: a.warps_after_other,
        max_warp_ticks: a.max_warp_ticks.max(b.max_warp_ticks),
        elapsed_ns: start.elapsed().as_nanos().min(u64::MAX as u128) as u64,
        stopped: a.stopped || b.stopped,
    })
}

fn run_side<C: CpuClock + ?Sized>(
    clock: &C,
    cpu: usize,
    me: u8,
    s: &Shared,
    opts: &RunOptions<'_>,
    soft: Instant,
    hard: Instant,
) -> SideStats {
    // This thread's own deadlines in forward time: a clock moved back cannot stretch them.
    let (mut soft, mut hard) = (ForwardDeadline::at(soft), ForwardDeadline::at(hard));
    let other = if me == SIDE_A { SIDE_B } else { SIDE_A };
    let my_handovers = &s.handovers[usize::from(me - 1)];
    let mut st = SideStats::default();
    loop {
        if st.iterations % CHECK_EVERY_ITERATIONS == 0 {
            if s.done.load(Ordering::Relaxed) {
                break;
            }
            if (opts.stop)() {
                st.stopped = true;
                s.done.store(true, Ordering::Relaxed);
                break;
            }
            let enough = s
                .handovers
                .iter()
                .all(|h| h.load(Ordering::Relaxed) >= opts.min_handovers);
            if hard.passed() || (soft.passed() && enough) {
                s.done.store(true, Ordering::Relaxed);
                break;
            }
        }
        if !s.lock.lock(&mut hard, &s.done) {
            s.done.store(true, Ordering::Relaxed);
            break;
        }
        let prev = s.last.load(Ordering::Relaxed);
        let prev_side = s.last_side.load(Ordering::Relaxed);
        let now = clock.read(cpu);
        s.last.store(now, Ordering::Relaxed);
        s.last_side.store(me, Ordering::Relaxed);
        if prev_side == other {
            // Only this side writes its counter, and only under the lock.
            my_handovers.store(my_handovers.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
        s.lock.unlock();
        st.iterations += 1;
        if prev_side != NOBODY && prev > now {
            st.warps += 1;
            st.warps_after_other += u64::from(prev_side == other);
            st.max_warp_ticks = st.max_warp_ticks.max(prev - now);
        }
    }
    st
}

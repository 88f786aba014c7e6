//! Bounded spinning for the two-thread tests: a spin-wait that gives up at a
//! deadline or when told to stop, a start gate, and running one closure per
//! CPU of a pair on pinned threads.
//!
//! Every wait here is bounded: a thread that is descheduled, fails to pin or
//! panics cannot hang the tool. Waits check the clock only every
//! [`CHECK_EVERY_SPINS`] spins and yield the CPU every [`YIELD_EVERY_SPINS`],
//! so two threads that share one CPU (tests without pinning, an
//! oversubscribed machine) still make progress.

use super::{CrossCpuError, Pinner};
use crate::forward::ForwardDeadline;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Spins between two looks at the deadline and the abort flag.
pub const CHECK_EVERY_SPINS: u32 = 256;
/// Spins between two `sched_yield`s: some microseconds of spinning, short
/// against a scheduler time slice, long against a cache-line transfer.
pub const YIELD_EVERY_SPINS: u32 = 1 << 12;
/// How long a thread waits for its partner to be pinned and ready.
pub const START_TIMEOUT: Duration = Duration::from_secs(5);

/// Spins until `ready()` is true. Returns false, without `ready()` having
/// been seen true, when `abort` is set or `hard_deadline` passes.
#[inline]
pub(crate) fn spin_until(
    mut ready: impl FnMut() -> bool,
    hard_deadline: &mut ForwardDeadline,
    abort: &AtomicBool,
) -> bool {
    let mut spins: u32 = 0;
    loop {
        if ready() {
            return true;
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(CHECK_EVERY_SPINS) {
            if abort.load(Ordering::Relaxed) || hard_deadline.passed() {
                return false;
            }
            if spins.is_multiple_of(YIELD_EVERY_SPINS) {
                std::thread::yield_now();
            }
        } else {
            std::hint::spin_loop();
        }
    }
}

/// A ticket spinlock: waiters are served in arrival order, so two threads
/// that both want the lock strictly alternate. The kernel's warp test uses
/// its queued spinlock, which is fair in the same way; an unfair
/// test-and-set lock lets the thread that just released it take it again,
/// and two CPUs may then go thousands of readings without being compared.
#[derive(Debug, Default)]
pub(crate) struct TicketLock {
    next: AtomicU64,
    serving: AtomicU64,
}

impl TicketLock {
    /// Takes the lock; false (without it) when `abort` is set or
    /// `hard_deadline` passes. After a false the lock is unusable: the
    /// caller must set `abort` so that the other waiters stop too.
    #[inline]
    pub fn lock(&self, hard_deadline: &mut ForwardDeadline, abort: &AtomicBool) -> bool {
        let ticket = self.next.fetch_add(1, Ordering::Relaxed);
        spin_until(|| self.serving.load(Ordering::Acquire) == ticket, hard_deadline, abort)
    }

    /// Releases the lock; only the holder may call it.
    #[inline]
    pub fn unlock(&self) {
        let serving = self.serving.load(Ordering::Relaxed);
        self.serving.store(serving + 1, Ordering::Release);
    }
}

/// Runs `side_a` on a thread pinned to `cpu_a` and `side_b` on one pinned to
/// `cpu_b`, both starting once both are pinned. A failure to pin (or a
/// partner that never arrives within [`START_TIMEOUT`]) sets `abort` so the
/// other side stops, and is returned as the error.
pub(crate) fn run_pinned_pair<A: Send, B: Send>(
    (cpu_a, cpu_b): (usize, usize),
    pinner: &dyn Pinner,
    abort: &AtomicBool,
    side_a: impl FnOnce() -> A + Send,
    side_b: impl FnOnce() -> B + Send,
) -> Result<(A, B), CrossCpuError> {
    let arrived = AtomicUsize::new(0);
    let start_deadline = Instant::now() + START_TIMEOUT;
    let start = |cpu: usize| -> Result<(), CrossCpuError> {
        if let Err(e) = pinner.pin(cpu) {
            abort.store(true, Ordering::Relaxed);
            return Err(e);
        }
        arrived.fetch_add(1, Ordering::AcqRel);
        let mut deadline = ForwardDeadline::at(start_deadline);
        if spin_until(|| arrived.load(Ordering::Acquire) == 2, &mut deadline, abort) {
            Ok(())
        } else if abort.load(Ordering::Relaxed) {
            Err(CrossCpuError::PartnerFailed { cpu })
        } else {
            abort.store(true, Ordering::Relaxed);
            Err(CrossCpuError::StartTimeout { cpu_a, cpu_b })
        }
    };
    let (ra, rb) = std::thread::scope(|scope| {
        let ha = scope.spawn(|| start(cpu_a).map(|()| side_a()));
        let hb = scope.spawn(|| start(cpu_b).map(|()| side_b()));
        let ra = ha.join();
        let rb = hb.join();
        (ra, rb)
    });
    let ra = ra.map_err(|_| CrossCpuError::ThreadPanicked { cpu: cpu_a })?;
    let rb = rb.map_err(|_| CrossCpuError::ThreadPanicked { cpu: cpu_b })?;
    // Prefer the root cause over "the partner failed".
    match (ra, rb) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (Err(e @ CrossCpuError::PartnerFailed { .. }), Err(other)) => Err(match other {
            CrossCpuError::PartnerFailed { .. } => e,
            root => root,
        }),
        (Err(e), _) | (_, Err(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crosscpu::affinity::AffinityError;
    use crate::crosscpu::NoPinning;

    #[test]
    fn spin_until_gives_up_at_the_deadline_and_on_abort() {
        let abort = AtomicBool::new(false);
        let t = Instant::now();
        assert!(!spin_until(
            || false,
            &mut ForwardDeadline::after(Duration::from_millis(5)),
            &abort
        ));
        assert!(t.elapsed() >= Duration::from_millis(5));
        abort.store(true, Ordering::Relaxed);
        assert!(!spin_until(
            || false,
            &mut ForwardDeadline::after(Duration::from_secs(3600)),
            &abort
        ));
        assert!(spin_until(|| true, &mut ForwardDeadline::at(t), &abort));
    }

    #[test]
    fn ticket_lock_serves_in_order_and_gives_up() {
        let l = TicketLock::default();
        let abort = AtomicBool::new(false);
        let mut far = ForwardDeadline::after(Duration::from_secs(3600));
        assert!(l.lock(&mut far, &abort));
        // Held: a second taker waits until the deadline.
        assert!(!l.lock(&mut ForwardDeadline::after(Duration::from_millis(2)), &abort));
        l.unlock();
        // The abandoned ticket is now being served; the next one waits behind it.
        assert!(!l.lock(&mut ForwardDeadline::after(Duration::from_millis(2)), &abort));
    }

    struct FailOn(usize);
    impl Pinner for FailOn {
        fn pin(&self, cpu: usize) -> Result<(), CrossCpuError> {
            if cpu == self.0 {
                Err(CrossCpuError::Affinity(AffinityError::Unsupported("a test")))
            } else {
                Ok(())
            }
        }
    }

    #[test]
    fn a_failed_pin_stops_the_partner() {
        let abort = AtomicBool::new(false);
        let t = Instant::now();
        let r = run_pinned_pair((0, 1), &FailOn(1), &abort, || 1, || 2);
        assert!(matches!(r, Err(CrossCpuError::Affinity(_))), "{r:?}");
        assert!(t.elapsed() < START_TIMEOUT);
        let abort = AtomicBool::new(false);
        assert_eq!(run_pinned_pair((0, 1), &NoPinning, &abort, || 1, || 2).unwrap(), (1, 2));
    }
}

//! `clockscope::instant` across threads on this machine, with the clock it
//! chooses here (the TSC when trusted): a reading taken after receiving
//! another thread's reading is never earlier than it by more than the
//! cross-CPU bound.
//!
//! The bound comes from `clockscope_system::crosscpu::ping_pong` run on this
//! module's own precise read, on the first two CPUs this process may use:
//! the offset `clock_b - clock_a` lies in `[lower, upper]`, so a reading on
//! b after a's can be at most `max(0, -lower)` ticks below it and one on a
//! after b's at most `max(0, upper)`; the tolerance is the larger. The bound
//! includes one message's latency (the ping-pong's round trip), which also
//! covers a fast read (RDTSC, not ordered) executing up to one cache-line
//! transfer early. With one CPU the tolerance is 0. Nothing checks how long
//! anything took.

use crate::common;
use clockscope::Instant;
use clockscope_system::crosscpu::{affinity, ping_pong, OsPinner, RunOptions};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

/// Handovers per test (each a reading sent and a reading taken after it).
const ROUNDS: u64 = 20_000;
/// Every wait gives up after this (a stuck partner, a starved VM), times
/// `CLOCKSCOPE_TEST_TIME_FACTOR` (common/time_limit.rs).
fn deadline() -> Duration {
    common::time_limit::limit(Duration::from_secs(10))
}

/// The first two CPUs this process may use, when there are two.
fn two_cpus() -> Option<(usize, usize)> {
    let cpus = affinity::allowed_cpus().ok()?;
    match cpus.as_slice() {
        [a, b, ..] => Some((*a, *b)),
        _ => None,
    }
}

/// The largest backward step, in ticks, a cross-CPU offset can explain;
/// measured once per process (the tests run in parallel).
fn tolerance_ticks() -> u64 {
    static TOLERANCE: OnceLock<u64> = OnceLock::new();
    *TOLERANCE.get_or_init(measure_tolerance_ticks)
}

fn measure_tolerance_ticks() -> u64 {
    let Some((a, b)) = two_cpus() else {
        return 0;
    };
    let stop = || false;
    let clock = |_cpu: usize| Instant::now_precise().ticks().raw();
    // On a busy 2-core VM the two spinning threads may not run at the same
    // time for a while: give the ping-pong more time until it completes
    // rounds (20 ms, then 80, 320, 1280 ms) rather than fail on noise.
    let mut budget_ns = 20_000_000;
    let r = loop {
        let opts = RunOptions::new(budget_ns, &OsPinner, &stop);
        let r = ping_pong(&clock, a, b, &opts).expect("ping-pong between the first two CPUs");
        if (r.lower_ticks.is_some() && r.upper_ticks.is_some()) || budget_ns >= 1_280_000_000 {
            break r;
        }
        budget_ns *= 4;
    };
    let (Some(lower), Some(upper)) = (r.lower_ticks, r.upper_ticks) else {
        panic!("the ping-pong completed no round in {budget_ns} ns: {r:?}");
    };
    let tol = lower.saturating_neg().max(upper).max(0) as u64;
    eprintln!(
        "cross-CPU bound on CPUs {a},{b} ({}): offset in [{lower}, {upper}] ticks over {} rounds; tolerance {tol} ticks = {} ns",
        Instant::init().clock_name,
        r.rounds,
        Instant::scale().ticks_to_ns(tol)
    );
    tol
}

/// Worst backward step seen, as (ticks, count of steps beyond `tol`).
#[derive(Default)]
struct Steps {
    worst_ticks: u64,
    beyond_tolerance: u64,
    compared: u64,
}

impl Steps {
    fn check(&mut self, sent: u64, after: u64, tol: u64) {
        self.compared += 1;
        if after < sent {
            let back = sent - after;
            self.worst_ticks = self.worst_ticks.max(back);
            if back > tol {
                self.beyond_tolerance += 1;
            }
        }
    }
}

/// Two threads pass precise readings back and forth through one atomic;
/// each takes its reading after seeing the other's.
#[test]
fn precise_readings_exchanged_through_an_atomic_do_not_go_backward() {
    let tol = tolerance_ticks();
    let slot = AtomicU64::new(0);
    // Odd rounds are written by thread a, even by b: (value, round) packed
    // as two slots would need ordering between them, so a round counter
    // goes in its own atomic and the reading is published before it.
    let round = AtomicU64::new(0);
    let abort = AtomicBool::new(false);
    let run = |me: u64, pin: Option<usize>| {
        if let Some(cpu) = pin {
            let _ = affinity::pin_current_thread(cpu);
        }
        let mut steps = Steps::default();
        let deadline = std::time::Instant::now() + deadline();
        let mut r = me;
        while r <= 2 * ROUNDS {
            // Wait for round r - 1 (the partner's), then read and publish.
            let mut spins = 0u32;
            while round.load(Ordering::Acquire) != r - 1 {
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(1024) {
                    if abort.load(Ordering::Relaxed) || std::time::Instant::now() > deadline {
                        abort.store(true, Ordering::Relaxed);
                        return steps;
                    }
                    std::thread::yield_now();
                }
                std::hint::spin_loop();
            }
            let theirs = slot.load(Ordering::Relaxed);
            let mine = Instant::now_precise().ticks().raw();
            if r > 1 {
                steps.check(theirs, mine, tol);
            }
            slot.store(mine, Ordering::Relaxed);
            round.store(r, Ordering::Release);
            r += 2;
        }
        steps
    };
    let pins = two_cpus();
    let (a, b) = std::thread::scope(|s| {
        let ha = s.spawn(|| run(1, pins.map(|p| p.0)));
        let hb = s.spawn(|| run(2, pins.map(|p| p.1)));
        (ha.join().unwrap(), hb.join().unwrap())
    });
    assert!(
        !abort.load(Ordering::Relaxed),
        "a thread gave up waiting for its partner"
    );
    assert_eq!(a.compared + b.compared, 2 * ROUNDS - 1);
    eprintln!(
        "atomic exchange: worst backward step {} ticks (tolerance {tol})",
        a.worst_ticks.max(b.worst_ticks)
    );
    assert_eq!(
        a.beyond_tolerance + b.beyond_tolerance,
        0,
        "readings went backward beyond the cross-CPU bound of {tol} ticks (worst {} ticks)",
        a.worst_ticks.max(b.worst_ticks)
    );
}

/// Two threads pass fast readings (`Instant::now()`) through channels.
#[test]
fn fast_readings_exchanged_through_channels_do_not_go_backward() {
    let tol = tolerance_ticks();
    let (to_b, from_a) = mpsc::channel::<Instant>();
    let (to_a, from_b) = mpsc::channel::<Instant>();
    let pins = two_cpus();
    let echo = move |rx: mpsc::Receiver<Instant>, tx: mpsc::Sender<Instant>, pin: Option<usize>, first: bool| {
        if let Some(cpu) = pin {
            let _ = affinity::pin_current_thread(cpu);
        }
        let mut steps = Steps::default();
        if first {
            tx.send(Instant::now()).expect("partner alive");
        }
        for i in 0..ROUNDS {
            let Ok(theirs) = rx.recv_timeout(deadline()) else {
                panic!("no reading from the partner within {:?}", deadline());
            };
            let mine = Instant::now();
            steps.check(theirs.ticks().raw(), mine.ticks().raw(), tol);
            // The duration API agrees with the raw comparison.
            assert_eq!(mine.checked_duration_since(theirs).is_none(), mine < theirs);
            if !(first && i + 1 == ROUNDS) {
                // Ignore a send error at the very end: the partner is done.
                let _ = tx.send(Instant::now());
            }
        }
        steps
    };
    let (a, b) = std::thread::scope(|s| {
        let ha = s.spawn(move || echo(from_b, to_b, pins.map(|p| p.0), true));
        let hb = s.spawn(move || echo(from_a, to_a, pins.map(|p| p.1), false));
        (ha.join().unwrap(), hb.join().unwrap())
    });
    assert_eq!(a.compared + b.compared, 2 * ROUNDS);
    eprintln!(
        "channel exchange: worst backward step {} ticks (tolerance {tol})",
        a.worst_ticks.max(b.worst_ticks)
    );
    assert_eq!(
        a.beyond_tolerance + b.beyond_tolerance,
        0,
        "readings went backward beyond the cross-CPU bound of {tol} ticks (worst {} ticks)",
        a.worst_ticks.max(b.worst_ticks)
    );
}

/// Each thread's own readings never go backward (same CPU or migrated).
#[test]
fn every_threads_own_readings_are_ordered() {
    let tol = tolerance_ticks();
    let results: Vec<Steps> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(move || {
                    let mut steps = Steps::default();
                    let mut prev = Instant::now_precise().ticks().raw();
                    for _ in 0..200_000 {
                        let next = Instant::now_precise().ticks().raw();
                        steps.check(prev, next, tol);
                        prev = next;
                    }
                    steps
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let beyond: u64 = results.iter().map(|s| s.beyond_tolerance).sum();
    let worst = results.iter().map(|s| s.worst_ticks).max().unwrap_or(0);
    assert_eq!(
        beyond, 0,
        "a thread's readings went backward by up to {worst} ticks (tolerance {tol})"
    );
}

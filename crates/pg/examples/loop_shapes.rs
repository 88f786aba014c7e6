//! What a pg_test_timing-style loop costs on top of its clock read: the
//! same fast counter (RDTSC on x86-64, CNTVCT_EL0 on aarch64) read in loops
//! with more and more of the measuring loop's work, and
//! `clockscope::measure` itself. Explains the gap between pg_test_timing's
//! loop time and a bare read (`bench/README.md`).
//!
//! ```text
//! cargo run --release -p clockscope-pg --example loop_shapes [ITERATIONS] [RUNS]
//! ```
//!
//! Each shape runs `ITERATIONS` (default 50,000,000) times per run, timed
//! with CLOCK_MONOTONIC, and `clockscope::measure` runs 1 s per run (its
//! own average loop time); the median of `RUNS` (default 5) is printed in
//! ns per iteration. The counter's frequency is the one `clockscope::instant`
//! chose (its shapes need the counter, so they are skipped when it chose the
//! system clock).

use clockscope::ClockSource;
use clockscope::{measure, Control, Scale};
use std::hint::black_box;

#[macro_use]
#[path = "common/mod.rs"]
mod common;

use common::{median_ns_per_iteration, parse_arg};

/// Exact counts kept for differences below this many ticks (about 10 µs at 2.6 GHz).
const EXACT_TICKS: usize = 26_000;

fn shapes<C: ClockSource>(c: &C, scale: Scale, iterations: u64, runs: usize) {
    let mut buckets = [0u64; 65];
    let mut exact = vec![0u64; EXACT_TICKS];
    let read = || c.now().raw();
    let bucket = |d: u64| (64 - d.leading_zeros()) as usize;
    let mut rows: Vec<(&str, f64)> = Vec::new();

    rows.push((
        "read only",
        median_ns_per_iteration(iterations, runs, |n| {
            for _ in 0..n {
                black_box(read());
            }
        }),
    ));
    rows.push((
        "read + difference",
        median_ns_per_iteration(iterations, runs, |n| {
            let (mut prev, mut acc) = (read(), 0u64);
            for _ in 0..n {
                let cur = read();
                acc = acc.wrapping_add(cur.wrapping_sub(prev));
                prev = cur;
            }
            black_box(acc);
        }),
    ));
    rows.push((
        "+ log2 histogram of ticks (one increment)",
        median_ns_per_iteration(iterations, runs, |n| {
            let mut prev = read();
            for _ in 0..n {
                let cur = read();
                buckets[bucket(cur.wrapping_sub(prev))] += 1;
                prev = cur;
            }
        }),
    ));
    rows.push((
        "+ exact tick counts (two increments)",
        median_ns_per_iteration(iterations, runs, |n| {
            let mut prev = read();
            for _ in 0..n {
                let cur = read();
                let d = cur.wrapping_sub(prev);
                buckets[bucket(d)] += 1;
                if (d as usize) < EXACT_TICKS {
                    exact[d as usize] += 1;
                }
                prev = cur;
            }
        }),
    ));
    rows.push((
        "+ ticks->ns per iteration (PostgreSQL's shape; measure's before it counted ticks)",
        median_ns_per_iteration(iterations, runs, |n| {
            let mut prev = read();
            for _ in 0..n {
                let cur = read();
                let d = scale.ticks_to_ns(cur.wrapping_sub(prev));
                buckets[bucket(d)] += 1;
                if (d as usize) < EXACT_TICKS {
                    exact[d as usize] += 1;
                }
                prev = cur;
            }
        }),
    ));
    rows.push((
        "run-length exact tick counts, no per-iteration store",
        median_ns_per_iteration(iterations, runs, |n| {
            let (mut prev, mut last, mut run) = (read(), u64::MAX, 0u64);
            for _ in 0..n {
                let cur = read();
                let d = cur.wrapping_sub(prev);
                prev = cur;
                if d == last {
                    run += 1;
                } else {
                    if (last as usize) < EXACT_TICKS {
                        exact[last as usize] += run;
                    }
                    last = d;
                    run = 1;
                }
            }
            if (last as usize) < EXACT_TICKS {
                exact[last as usize] += run;
            }
        }),
    ));
    black_box((&buckets, &exact));
    let mut loop_ns: Vec<f64> = (0..runs)
        .filter_map(|_| measure(c, 1_000_000_000, |_| Control::Continue).avg_loop_ns())
        .collect();
    loop_ns.sort_by(f64::total_cmp);
    if let Some(&m) = loop_ns.get(loop_ns.len() / 2) {
        rows.push(("clockscope::measure (pg_test_timing's loop), avg loop", m));
    }
    for (name, ns) in rows {
        out!("  {name:<56} {ns:6.2} ns");
    }
}

fn main() {
    let iterations = parse_arg("loop_shapes", 1, 50_000_000, "ITERATIONS");
    let runs = parse_arg("loop_shapes", 2, 5, "RUNS") as usize;
    let info = clockscope::Instant::init();
    if !info.use_counter {
        out!("clockscope::instant chose {}: no counter to measure", info.clock_name);
        return;
    }
    let scale = info.scale;
    out!(
        "{} at {} kHz ({}); {iterations} iterations per run, median of {runs} runs, ns per iteration:",
        info.clock_name,
        info.scale.khz(),
        info.frequency_source
    );
    #[cfg(target_arch = "x86_64")]
    if let Some(c) = clockscope::Rdtsc::new(scale) {
        shapes(&c, scale, iterations, runs);
    }
    #[cfg(target_arch = "aarch64")]
    shapes(&clockscope::Cntvct::new(scale), scale, iterations, runs);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = (scale, iterations, runs, shapes::<PosixClock>);
}

//! `clockscope::instant` against the other ways a Rust program reads the
//! time: `std::time::Instant`, `quanta::Instant` (0.12), `minstant::Instant`
//! and a bare RDTSC, in one run so the ratios compare like with like.
//!
//! Group `clocks` (one criterion group, one run):
//! - `now_<clock>`: one reading;
//! - `elapsed_ns_<clock>`: one reading turned into nanoseconds since a start
//!   reading (`elapsed().as_nanos()`, or ticks through the clock's scale);
//! - `now_design_oncelock_rdtsc`: RDTSC behind a `OnceLock::get()` (the
//!   Acquire-load pattern `clockscope::instant` avoids), for comparison.
//!
//! Group `contention`: `threads_<n>_<clock>`, `n` threads each calling
//! `now()`; the time is per call per thread (the slowest thread's).
//!
//! Settings: 0.5 s warm-up, 1.5 s measurement, 30 samples, no plots; the
//! whole suite takes about a minute (`bench/clocks.sh` prints the table).

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant as StdInstant};

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn bare_rdtsc() -> u64 {
    // SAFETY: RDTSC exists on every x86-64 CPU; it only reads the TSC.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(30)
        .without_plots()
}

fn clocks(c: &mut Criterion) {
    // Initialise every library outside the measured loops.
    let info = clockscope::Instant::init();
    eprintln!(
        "clockscope::Instant: {} / {} at {} kHz ({}), init {:.3} ms",
        info.clock_name,
        info.precise_clock_name,
        info.scale.khz(),
        info.frequency_source,
        info.elapsed_ns as f64 / 1e6
    );
    let _ = quanta::Instant::now();
    let _ = minstant::Instant::now();

    let mut g = c.benchmark_group("clocks");
    g.bench_function("now_clockscope", |b| b.iter(clockscope::Instant::now));
    g.bench_function("now_clockscope_precise", |b| b.iter(clockscope::Instant::now_precise));
    g.bench_function("now_std", |b| b.iter(StdInstant::now));
    g.bench_function("now_quanta", |b| b.iter(quanta::Instant::now));
    g.bench_function("now_minstant", |b| b.iter(minstant::Instant::now));
    #[cfg(target_arch = "x86_64")]
    {
        g.bench_function("now_bare_rdtsc", |b| b.iter(bare_rdtsc));
        static DESIGN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        DESIGN.get_or_init(|| true);
        g.bench_function("now_design_oncelock_rdtsc", |b| {
            b.iter(|| match DESIGN.get() {
                Some(true) => bare_rdtsc(),
                _ => 0,
            })
        });
    }

    let ours = clockscope::Instant::now();
    g.bench_function("elapsed_ns_clockscope", |b| b.iter(|| black_box(ours).elapsed_nanos()));
    let ours_ticks = ours.ticks();
    let ours_scale = clockscope::Instant::scale();
    g.bench_function("elapsed_ns_clockscope_raw_ticks", |b| {
        b.iter(|| {
            ours_scale.ticks_to_ns(
                clockscope::Instant::now()
                    .ticks()
                    .raw()
                    .wrapping_sub(black_box(ours_ticks).raw()),
            )
        })
    });
    let std_start = StdInstant::now();
    g.bench_function("elapsed_ns_std", |b| {
        b.iter(|| black_box(std_start).elapsed().as_nanos() as u64)
    });
    let quanta_start = quanta::Instant::now();
    g.bench_function("elapsed_ns_quanta", |b| {
        b.iter(|| black_box(quanta_start).elapsed().as_nanos() as u64)
    });
    let minstant_start = minstant::Instant::now();
    g.bench_function("elapsed_ns_minstant", |b| {
        b.iter(|| black_box(minstant_start).elapsed().as_nanos() as u64)
    });
    #[cfg(target_arch = "x86_64")]
    {
        let scale = clockscope::Instant::scale();
        let t0 = bare_rdtsc();
        g.bench_function("elapsed_ns_bare_rdtsc", |b| {
            b.iter(|| black_box(scale).ticks_to_ns(bare_rdtsc().wrapping_sub(black_box(t0))))
        });
    }
    g.finish();
}

/// `threads` threads each call `read` `iters` times after a common start;
/// the slowest thread's time is returned, so criterion's per-iteration time
/// is per call per thread.
fn run_threads<T>(threads: usize, iters: u64, read: fn() -> T) -> Duration {
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let t0 = StdInstant::now();
                    for _ in 0..iters {
                        black_box(read());
                    }
                    t0.elapsed()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a benchmark thread panicked"))
            .max()
            .unwrap_or_default()
    })
}

fn contention(c: &mut Criterion) {
    clockscope::Instant::init();
    let mut g = c.benchmark_group("contention");
    for threads in [1usize, 2] {
        g.bench_function(format!("threads_{threads}_clockscope"), |b| {
            b.iter_custom(|iters| run_threads(threads, iters, clockscope::Instant::now))
        });
        g.bench_function(format!("threads_{threads}_quanta"), |b| {
            b.iter_custom(|iters| run_threads(threads, iters, quanta::Instant::now))
        });
        g.bench_function(format!("threads_{threads}_minstant"), |b| {
            b.iter_custom(|iters| run_threads(threads, iters, minstant::Instant::now))
        });
        g.bench_function(format!("threads_{threads}_std"), |b| {
            b.iter_custom(|iters| run_threads(threads, iters, StdInstant::now))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = clocks, contention
}
criterion_main!(benches);

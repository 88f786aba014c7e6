//! Times bare clock reads in a tight loop and prints nanoseconds per read:
//! the floor pg_test_timing's loop time is compared with
//! (`bench/pg_test_timing_vs_postgres.sh`), plus `clockscope::instant`'s reads
//! and its initialisation time.
//!
//! ```text
//! cargo run --release -p clockscope-pg --example bare_reads [READS_PER_RUN] [RUNS]
//! ```
//!
//! Each clock is read `READS_PER_RUN` times (default 20,000,000) per run, each
//! reading passed through `black_box`, between two CLOCK_MONOTONIC reads; the
//! median of `RUNS` runs (default 5) is printed as `bare <name>: <ns> ns per read`.

use clockscope::ClockSource;
use clockscope::Instant;
use std::hint::black_box;

#[macro_use]
#[path = "common/mod.rs"]
mod common;

use common::{median_ns_per_iteration, monotonic_ns, parse_arg};

/// Median ns per read of `runs` runs of `reads` calls to `read`.
fn time_reads(reads: u64, runs: usize, mut read: impl FnMut() -> u64) -> f64 {
    median_ns_per_iteration(reads, runs, |n| {
        for _ in 0..n {
            black_box(read());
        }
    })
}

fn main() {
    let reads = parse_arg("bare_reads", 1, 20_000_000, "READS_PER_RUN");
    let runs = parse_arg("bare_reads", 2, 5, "RUNS") as usize;

    let info = clockscope::Instant::init();
    out!(
        "clockscope::Instant: {} / {} at {} kHz ({}); init {:.3} ms (calibration budget {} ms)",
        info.clock_name,
        info.precise_clock_name,
        info.scale.khz(),
        info.frequency_source,
        info.elapsed_ns as f64 / 1e6,
        clockscope::Trust::CALIBRATION_BUDGET_NS / 1_000_000
    );
    for reason in &info.reasons {
        out!("  {reason}");
    }
    out!("reads per run: {reads}, runs: {runs} (median shown)");

    let mut rows: Vec<(&str, f64)> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        use clockscope::{Rdtsc, Rdtscp};
        // Built only when CPUID reports the TSC and RDTSCP.
        if let Some(c) = Rdtsc::new(clockscope::Scale::NANOSECONDS) {
            rows.push(("RDTSC", time_reads(reads, runs, || c.now().raw())));
        }
        if let Some(c) = Rdtscp::new(clockscope::Scale::NANOSECONDS) {
            rows.push(("RDTSCP", time_reads(reads, runs, || c.now().raw())));
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        use clockscope::{Cntvct, IsbCntvct};
        let fast = Cntvct::new(clockscope::Scale::NANOSECONDS);
        let ordered = IsbCntvct::new(clockscope::Scale::NANOSECONDS);
        rows.push(("CNTVCT_EL0", time_reads(reads, runs, || fast.now().raw())));
        rows.push(("ISB;CNTVCT_EL0", time_reads(reads, runs, || ordered.now().raw())));
    }
    rows.push(("clock_gettime (CLOCK_MONOTONIC)", time_reads(reads, runs, monotonic_ns)));
    rows.push((
        "clockscope::Instant::now",
        time_reads(reads, runs, || Instant::now().ticks().raw()),
    ));
    rows.push((
        "clockscope::Instant::now_precise",
        time_reads(reads, runs, || Instant::now_precise().ticks().raw()),
    ));
    for (name, ns) in rows {
        out!("bare {name}: {ns:.2} ns per read");
    }
}

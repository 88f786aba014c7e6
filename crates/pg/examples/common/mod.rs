//! Helpers shared by the timing examples (`bare_reads`, `loop_shapes`):
//! quiet output on a closed pipe, positive-integer arguments, and the median
//! time per iteration against CLOCK_MONOTONIC.

use clockscope::ClockSource;
use clockscope::PosixClock;

/// Prints a line; a closed stdout (`| head`) ends the program quietly.
macro_rules! out {
    ($($arg:tt)*) => {
        if std::io::Write::write_fmt(&mut std::io::stdout().lock(), format_args!("{}\n", format_args!($($arg)*))).is_err() {
            std::process::exit(0);
        }
    };
}

/// CLOCK_MONOTONIC in ns.
pub fn monotonic_ns() -> u64 {
    PosixClock::monotonic().now().raw()
}

/// Median over `runs` runs of the ns per iteration of `run(iterations)`.
pub fn median_ns_per_iteration(iterations: u64, runs: usize, mut run: impl FnMut(u64)) -> f64 {
    let mut per_iteration: Vec<f64> = (0..runs)
        .map(|_| {
            let t0 = monotonic_ns();
            run(iterations);
            monotonic_ns().saturating_sub(t0) as f64 / iterations as f64
        })
        .collect();
    per_iteration.sort_by(f64::total_cmp);
    per_iteration[per_iteration.len() / 2]
}

/// Positional argument `i` as a positive integer, `default` when absent;
/// exits 2 with a one-line error naming `program` and `name` otherwise.
pub fn parse_arg(program: &str, i: usize, default: u64, name: &str) -> u64 {
    match std::env::args().nth(i) {
        None => default,
        Some(a) => match a.parse::<u64>() {
            Ok(v) if v > 0 => v,
            _ => {
                eprintln!("{program}: invalid {name} {a:?}: expected a positive integer");
                std::process::exit(2);
            }
        },
    }
}

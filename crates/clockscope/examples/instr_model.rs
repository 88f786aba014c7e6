//! Runs the EXPLAIN ANALYZE instrumentation model
//! ([`clockscope::predict::executor_loop`]) on this machine's clocks and
//! prints what TIMING ON added per row, for each PostgreSQL shape: the
//! numbers `clockscope check` and `clockscope explain` predict from, without
//! the rest of those commands (for bench/explain_vs_server.sh and for
//! working on the model).
//!
//! ```text
//! cargo run --release -p clockscope --example instr_model -- [STEPS] [BUDGET_MS] [RUNS] [TUPLES]
//! ```
//! STEPS: expression steps per row (default the model's, 6); BUDGET_MS: per
//! measurement (default 300); RUNS: repetitions (default 1); TUPLES: table
//! size (default the model's).

/// Prints a line; a closed stdout (`| head`) ends the program quietly.
macro_rules! out {
    ($($arg:tt)*) => {
        if std::io::Write::write_fmt(&mut std::io::stdout().lock(), format_args!("{}\n", format_args!($($arg)*))).is_err() {
            std::process::exit(0);
        }
    };
}

use clockscope::predict::executor_loop::{self, ModelConfig, PgInstrumentation, Table};
use clockscope::Scale;

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

fn main() {
    let steps: u32 = arg(1, executor_loop::DEFAULT_WORK_STEPS);
    let budget_ms: u64 = arg(2, 300);
    let runs: u32 = arg(3, 1);
    let tuples: usize = arg(4, executor_loop::TABLE_TUPLES);
    let table = Table::with_tuples(tuples);
    // The model's rounds are timed by CLOCK_MONOTONIC: the TSC's scale only
    // names it here.
    let scale = Scale::from_khz(1_000_000).expect("a valid scale");
    let tsc = clockscope::clock::arch::Rdtsc::new(scale);
    let shapes = [
        PgInstrumentation::Pg19 { tsc: false },
        PgInstrumentation::Pg19 { tsc: true },
        PgInstrumentation::Pg15OrOlder,
    ];
    out!("{steps} steps per row, budget {budget_ms} ms, table {tuples} tuples");
    for run in 1..=runs {
        for shape in shapes {
            let config = ModelConfig {
                work_steps: steps,
                ..ModelConfig::new(shape, budget_ms * 1_000_000)
            };
            let cost = match (shape, tsc.as_ref()) {
                (PgInstrumentation::Pg19 { tsc: true }, None) => None,
                _ => executor_loop::measure_on_this_machine(tsc.as_ref(), &table, config, &mut || true),
            };
            match cost {
                Some(c) => {
                    out!(
                    "run {run} {:<34} {:<13} median {:>6.2} ns/row  {}  off {:.1} ns/row, {} steps, {} pairs x {} rows",
                    c.clock,
                    match shape {
                        PgInstrumentation::Pg15OrOlder => "PG15",
                        PgInstrumentation::Pg16To18 => "PG16-18",
                        PgInstrumentation::Pg19 { .. } => "PG19",
                    },
                    c.median_ns_per_row,
                    if c.resolved { c.interval_text.clone() } else { c.status.clone() },
                    c.work_ns_per_row,
                    c.work_steps,
                    c.pairs,
                    c.rows_per_round
                )
                }
                None => out!("run {run} {shape:?}: not measured (no TSC)"),
            }
        }
    }
}

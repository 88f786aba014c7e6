//! Runs the EXPLAIN ANALYZE instrumentation model
//! ([`clockscope_pg::predict::executor_loop`]) on this machine's clocks and
//! prints what TIMING ON added per row, for each PostgreSQL shape: the
//! numbers `clockscope check` and `clockscope explain` predict from, without
//! the rest of those commands (for bench/explain_vs_server.sh and for
//! working on the model).
//!
//! ```text
//! cargo run --release -p clockscope-pg --example instr_model -- [STEPS] [BUDGET_MS] [RUNS] [TUPLES]
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

use clockscope::Scale;
use clockscope_pg::predict::executor_loop::{self, ModelConfig, PgInstrumentation, Table};

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

/// One model run with `tsc` as PostgreSQL 19's fast counter read (None
/// where there is none).
fn run_shape<T: clockscope::ClockSource>(
    shape: PgInstrumentation,
    tsc: Option<&T>,
    table: &Table,
    steps: u32,
    budget_ms: u64,
) -> Option<executor_loop::ExecutorLoopCost> {
    let config = ModelConfig {
        work_steps: steps,
        ..ModelConfig::new(shape, budget_ms * 1_000_000)
    };
    executor_loop::measure_on_this_machine(tsc, table, config, &mut || true)
}

/// Runs every shape with the counter's fast read (from the counter layer).
struct Shapes {
    steps: u32,
    budget_ms: u64,
    runs: u32,
    tuples: usize,
}

impl clockscope_system::counter::CounterPairVisitor for Shapes {
    type Output = ();
    fn visit<P: clockscope::ClockSource, F: clockscope::ClockSource>(self, _precise: P, fast: F) {
        report(&self, Some(&fast));
    }
}

fn report<T: clockscope::ClockSource>(a: &Shapes, tsc: Option<&T>) {
    let table = Table::with_tuples(a.tuples);
    let shapes = [
        PgInstrumentation::Pg19 { tsc: false },
        PgInstrumentation::Pg19 { tsc: true },
        PgInstrumentation::Pg15OrOlder,
    ];
    out!(
        "{} steps per row, budget {} ms, table {} tuples",
        a.steps,
        a.budget_ms,
        a.tuples
    );
    for run in 1..=a.runs {
        for shape in shapes {
            match run_shape(shape, tsc, &table, a.steps, a.budget_ms) {
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
                None => out!("run {run} {shape:?}: not measured (no counter read)"),
            }
        }
    }
}

fn main() {
    let shapes = Shapes {
        steps: arg(1, executor_loop::DEFAULT_WORK_STEPS),
        budget_ms: arg(2, 300),
        runs: arg(3, 1),
        tuples: arg(4, executor_loop::TABLE_TUPLES),
    };
    // The model's rounds are timed by CLOCK_MONOTONIC: the counter's scale
    // only names it here.
    let scale = Scale::from_khz(1_000_000).expect("a valid scale");
    if let Err(why) = clockscope::visit_pair(scale, shapes) {
        eprintln!("instr_model: no counter read ({why}); the system clock only");
        let shapes = Shapes {
            steps: arg(1, executor_loop::DEFAULT_WORK_STEPS),
            budget_ms: arg(2, 300),
            runs: arg(3, 1),
            tuples: arg(4, executor_loop::TABLE_TUPLES),
        };
        report::<clockscope::PosixClock>(&shapes, None);
    }
}

//! What EXPLAIN ANALYZE's TIMING ON adds per row per plan node, measured
//! on this machine with a model of PostgreSQL's own per-row instrumentation.
//!
//! # What PostgreSQL does per row
//!
//! Under EXPLAIN ANALYZE every plan node's `ExecProcNode` is
//! `ExecProcNodeInstr`, with TIMING ON and with TIMING OFF: it calls
//! `InstrStartNode`, the node's real `ExecProcNode` through a function
//! pointer, then `InstrStopNode`, which counts the row. TIMING ON sets
//! `need_timer`, and then, per row per node (`src/backend/executor/instrument.c`
//! and `src/include/portability/instr_time.h` of PostgreSQL 19):
//!
//! ```text
//! InstrStart:  if need_timer: if starttime != 0 -> error, else starttime = read()
//! InstrStop:   tuplecount += 1
//!              if need_timer: if starttime == 0 -> error
//!                             end = read(); counter += end - starttime; starttime = 0
//!              first-tuple bookkeeping (running, firsttuple)
//! read():      PostgreSQL 19, pg_get_ticks_fast: if timing_tsc_enabled (a global,
//!              reloaded) RDTSC, else clock_gettime(CLOCK_MONOTONIC) as sec * 1e9 + nsec
//!              PostgreSQL 16-18: clock_gettime as int64 ns
//!              PostgreSQL <= 15: clock_gettime into a struct timespec (two-field zero
//!              checks, accumulate with normalisation loops)
//! ```
//!
//! PostgreSQL 19 inlines InstrStartNode / InstrStopNode into
//! `ExecProcNodeInstr`; before 19 they are calls.
//!
//! # The model
//!
//! The same structure in Rust ([`PgInstrumentation`] picks the version's
//! shape and [`PgRead`] the read): an aggregate calls the node's
//! `exec_proc_node` through a function pointer once per row (the
//! instrumented wrapper), which calls the scan through a second pointer. The
//! scan walks 32-byte heap-like tuples in order (line after line, page after
//! page), checks their hint bits, stores the tuple in a slot and runs a few
//! expression-like steps through a table of function pointers; the aggregate
//! calls its transition function through a pointer and runs as many steps.
//! TIMING ON and OFF are one function with `need_timer` read from memory, as
//! in PostgreSQL, so the difference is exactly what the timer adds: the
//! reads, the branches, the store and reload of `starttime`, the accumulate
//! and the reset, and whatever the reads cost the work around them (a read
//! that out-of-order execution overlaps with the scan costs less than one in
//! a tight loop; an ordered read, such as the vDSO's, waits for it).
//!
//! # Measurement
//!
//! ```text
//! round   = rows_per_round rows (about ROUND_NS of work), timed by the timer's ordered reads
//! pair    = one TIMING ON round and one TIMING OFF round, back to back, order alternating
//! pairs   run until the budget (calibration included) would be passed, Ctrl-C, or MAX_PAIRS
//! d_i     = (ON_i - OFF_i) / rows_per_round                    ns per row, per pair
//! median  = median of d_i; interval = its 95% order-statistics interval (clockscope::stats)
//! resolved  = at least 6 pairs and the interval's low end > 0
//! added_ns_per_row = median when resolved, else none: "not resolved" (the ON-OFF
//!             difference is inside the noise, or too few pairs to tell)
//! ```
//!
//! One method: no fallback to another number when this one cannot resolve.
//! The median of paired differences means a preempted round decides nothing
//! unless half the rounds were.
//!
//! # Work per row
//!
//! A fixed, small amount: [`DEFAULT_WORK_STEPS`] expression steps per row
//! (half in the scan, half in the aggregate), not calibrated to the query's
//! own time per row. PostgreSQL's TIMING ON cost per row does not shrink
//! when a row does more work (three queries of 38 to 217 ns per row added
//! the same per row: bench/README.md, "The model"), while the model's reads
//! hide behind its own work the more of it there is. So the model keeps the little work the
//! executor does around the instrumented call itself.
//!
//! # Limits
//!
//! - It resembles the executor; it is not the executor: how much of a read
//!   the work hides depends on the work. Measured against real servers on an
//!   AMD EPYC guest (bench/README.md, "EXPLAIN against real servers").
//! - It measures this machine; a remote server's CPU may differ.
//! - It times one node per row; more timed nodes per row add proportionally.
//!
//! # Files
//!
//! `instr.rs`: PostgreSQL's instrumentation shapes and reads (`instr_time`,
//! [`PgRead`], [`PgInstrumentation`]); `executor.rs`: the table and the
//! scan, aggregate and instrumented node the rows run through;
//! `measuring.rs`: rounds, pairs and slices ([`run_pairs`], [`Slices`]);
//! `placement.rs`: slices pinned to CPUs in turn, and the cost of the CPU
//! that ran the plain work fastest ([`measure_across_cpus`]);
//! `cost.rs`: the pairs and the cost from them, and its text
//! ([`RoundPair`], [`ExecutorLoopCost`]).

mod cost;
mod executor;
mod instr;
mod measuring;
mod placement;

pub use cost::{interval_text, CpuRun, ExecutorLoopCost, RoundPair, StopReason};
pub use executor::Table;
pub use instr::{
    FastRead, InstrTime, PgInstrumentation, PgRead, SystemRead, TicksTime, TimespecClock, TimespecRead, TimespecTime,
};
pub use measuring::{
    measure_model, measure_on_this_machine, pairs_on_this_machine, pairs_on_this_machine_of, run_pairs, ModelConfig,
    PairsRun, Slices,
};
pub use placement::{measure_across_cpus, measure_across_cpus_of, run_across_cpus, spread_cpus, MAX_MODEL_CPUS};

/// Bytes of one tuple: a heap tuple of one int column (23-byte header padded
/// to 24, 4-byte datum), MAXALIGNed to 8 -> 32.
pub const TUPLE_BYTES: usize = 32;
/// Tuples in the default table: 65,536 x 32 bytes = 2 MiB, walked in order
/// and wrapped.
pub const TABLE_TUPLES: usize = 65_536;
/// Tuples per page: an 8 kB heap page of one-int4 rows holds 226.
pub const TUPLES_PER_PAGE: u32 = 226;
/// Work per round, ns: short enough that a preemption or a timer interrupt
/// spoils few rounds, long enough that the round's two timer reads vanish.
pub const ROUND_NS: f64 = 250_000.0;
/// The most rows per round.
pub const MAX_ROWS_PER_ROUND: u64 = 100_000;
/// The fewest rows per round.
pub const MIN_ROWS_PER_ROUND: u64 = 64;
/// The most pairs kept (memory bound; far beyond what a budget allows).
pub const MAX_PAIRS: u32 = 4_000;
/// Expression steps per row (see "Work per row" in the module docs): chosen
/// on the AMD EPYC guest so the model's TIMING ON cost matched PostgreSQL 19's
/// and 15's there (bench/README.md, "EXPLAIN against real servers").
pub const DEFAULT_WORK_STEPS: u32 = 6;
/// The most expression steps a row can run.
pub const MAX_WORK_STEPS: u32 = 512;
/// Rows of the round that sizes the rounds.
const SIZING_ROWS: u64 = 2_000;

#[cfg(test)]
mod tests;

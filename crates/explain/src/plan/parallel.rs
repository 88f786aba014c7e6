//! Parallel plans: which process made which clock reads, and the reads on
//! the critical path.
//!
//! Under a `Gather` or `Gather Merge`, a node runs in the leader and in each
//! launched worker; EXPLAIN prints its rows and loops summed over the
//! processes (`Actual Rows` per loop, `Actual Loops` = loops of all of
//! them), and with VERBOSE one entry per worker under `"Workers"`
//! (`"Worker Number"`, its own `"Actual Rows"` per loop and
//! `"Actual Loops"`). The leader's share is the total less the workers'.
//! Each process times its own node calls (two reads per call, as in
//! [`super`]), at the same time as the others, so the wall time node timing
//! adds is not the plan's reads times a read's cost but
//!
//! ```text
//! critical-path reads = reads of the nodes above every Gather (the leader's, serial)
//!                     + Σ over Gathers of the busiest process's reads below it
//! ```
//!
//! Without VERBOSE's per-worker lines, the reads below a Gather are taken as
//! shared evenly by its `Workers Launched` + 1 processes (the leader takes
//! part by default, `parallel_leader_participation`).
//!
//! The model assumes each process has a CPU of its own: on a server with
//! fewer free CPUs than processes they take turns, and the added wall time
//! approaches the reads below the Gather shared by the CPUs instead.
//!
//! The workers' CPU time, which the machine's busy time counts and the
//! statement's `Execution Time` does not ([`crate::contention`]): each
//! worker's `Actual Total Time` x loops on the node just below its Gather
//! (with TIMING ON), each bounded by the statement's execution time; with
//! TIMING OFF (no times), `Workers Launched` x the execution time, the most
//! they can have run.

use serde_json::Value;

/// One worker's counts on one node.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerCounts {
    /// `"Worker Number"`.
    pub worker: u64,
    /// Rows over its loops (`Actual Rows * Actual Loops`, rounded).
    pub rows_total: u64,
    pub loops: u64,
    /// `Actual Total Time * Actual Loops`, ms, with TIMING ON.
    pub total_ms: Option<f64>,
}

impl WorkerCounts {
    /// Its node calls: a row per call plus the final NULL per loop.
    pub fn calls(&self) -> u64 {
        self.rows_total + self.loops
    }
}

/// A Gather or Gather Merge: its workers and the nodes below it.
#[derive(Clone, Debug, PartialEq)]
pub struct GatherCounts {
    /// `"Workers Launched"` (0 when the server had none free).
    pub workers_launched: u64,
    /// The index in [`super::PlanSummary::nodes`] of the Gather itself.
    pub node: usize,
    /// The indexes of the nodes below it.
    pub below: Vec<usize>,
}

/// The per-worker entries of `node` (VERBOSE), in order; empty without them.
pub(super) fn worker_counts(node: &Value) -> Vec<WorkerCounts> {
    let Some(Value::Array(workers)) = node.get("Workers") else {
        return Vec::new();
    };
    workers
        .iter()
        .filter_map(|w| {
            let num = |k: &str| w.get(k).and_then(Value::as_f64).filter(|v| v.is_finite() && *v >= 0.0);
            let worker = num("Worker Number")?;
            // A worker entry without rows (e.g. only sort or JIT details) is
            // not counted.
            let rows = num("Actual Rows")?;
            let loops = num("Actual Loops")?;
            Some(WorkerCounts {
                worker: worker as u64,
                rows_total: (rows * loops).round() as u64,
                loops: loops.round() as u64,
                total_ms: num("Actual Total Time").map(|t| t * loops),
            })
        })
        .collect()
}

/// Whether `node_type` gathers the rows of parallel workers.
pub(super) fn is_gather(node_type: &str) -> bool {
    matches!(node_type, "Gather" | "Gather Merge")
}

/// Workers launched by a Gather node (0 when absent).
pub(super) fn workers_launched(node: &Value) -> u64 {
    node.get("Workers Launched").and_then(Value::as_u64).unwrap_or(0)
}

/// The busiest process's calls below `g`: per process (the leader, key
/// `None`, and each worker number) the sum of its calls over the nodes
/// below. With VERBOSE, a node below without per-worker lines ran in the
/// leader alone (e.g. the inner side of a non-parallel hash: `Actual Loops`
/// 1); without VERBOSE, each node's calls are shared evenly.
pub(super) fn busiest_calls(g: &GatherCounts, nodes: &[super::NodeCounts]) -> u64 {
    use std::collections::BTreeMap;
    let processes = g.workers_launched + 1;
    let verbose = g.below.iter().any(|&i| !nodes[i].workers.is_empty());
    let mut per: BTreeMap<Option<u64>, u64> = BTreeMap::new();
    let mut even = 0u64;
    for &i in &g.below {
        let n = &nodes[i];
        if n.workers.is_empty() {
            if verbose {
                *per.entry(None).or_default() += n.calls();
            } else {
                even += n.calls().div_ceil(processes);
            }
            continue;
        }
        let mut workers_calls = 0;
        for w in &n.workers {
            *per.entry(Some(w.worker)).or_default() += w.calls();
            workers_calls += w.calls();
        }
        *per.entry(None).or_default() += n.calls().saturating_sub(workers_calls);
    }
    per.values().copied().max().unwrap_or(0) + even
}

/// The workers' CPU time under `g`, ms (see the module docs).
pub(super) fn workers_busy_ms(g: &GatherCounts, nodes: &[super::NodeCounts], execution_ms: f64) -> f64 {
    let exec = execution_ms.max(0.0);
    let first_below = g.below.first().map(|&i| &nodes[i]);
    let timed: Vec<f64> = first_below
        .map(|n| n.workers.iter().filter_map(|w| w.total_ms).collect())
        .unwrap_or_default();
    if timed.is_empty() {
        g.workers_launched as f64 * exec
    } else {
        timed.iter().map(|t| t.min(exec)).sum()
    }
}

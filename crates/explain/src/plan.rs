//! Reading `EXPLAIN (ANALYZE, FORMAT JSON)` output: the execution time and
//! how many clock reads node timing made.
//!
//! # Clock reads per plan (from PostgreSQL's executor)
//!
//! With ANALYZE, every call of a plan node goes through `ExecProcNodeInstr`
//! (execProcnode.c): `InstrStartNode`, the node, then `InstrStopNode`
//! (instrument.c). With TIMING ON, `InstrStartNode` reads the clock once
//! (`INSTR_TIME_SET_CURRENT_LAZY` on the zeroed start time) and
//! `InstrStopNode` reads it once more; with TIMING OFF both still run (they
//! count rows) but read no clock. `InstrEndLoop`, run once per loop, reads
//! none. So node timing costs **two reads per node call**.
//!
//! A node run to completion is called once per row it returns plus once more
//! to return the end-of-data NULL, in every loop: `rows_total + loops` calls,
//! where EXPLAIN prints `Actual Rows` per loop (`rows_total = Actual Rows *
//! Actual Loops`; PostgreSQL 18 prints it with two decimals, earlier
//! versions round it to a whole number, so `rows_total` is approximate for
//! nodes with several loops before 18). Hence
//!
//! ```text
//! clock reads = 2 * Σ over plan nodes (Actual Rows * Actual Loops + Actual Loops)
//! ```
//!
//! Exact for `SELECT count(*)` (Aggregate: 1 row + 1; Seq Scan: N rows + 1,
//! so 2N + 6 reads). A node stopped early by its parent (under a Limit, the
//! inner side of a semi-join) is not asked for the NULL, so the formula is
//! an upper bound by one call per loop there. The two reads around the whole
//! statement for "Execution Time" happen with TIMING OFF too and cancel out.
//!
//! A parallel plan's processes read the clock at the same time: the reads
//! that add wall time are those on its critical path ([`parallel`],
//! [`PlanSummary::critical_path_reads`]).

pub mod parallel;

use crate::error::Error;
pub use parallel::{GatherCounts, WorkerCounts};
use serde_json::Value;

/// One plan node's counts.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeCounts {
    /// "Node Type", e.g. "Seq Scan".
    pub node_type: String,
    /// Rows returned over all loops (`Actual Rows * Actual Loops`, rounded).
    pub rows_total: u64,
    /// "Actual Loops".
    pub loops: u64,
    /// Each parallel worker's share (EXPLAIN VERBOSE's "Workers"); empty
    /// for a node no worker ran, or without VERBOSE.
    pub workers: Vec<WorkerCounts>,
}

impl NodeCounts {
    /// Calls of this node's ExecProcNode: a row per call plus the final NULL per loop.
    pub fn calls(&self) -> u64 {
        self.rows_total + self.loops
    }
}

/// What one EXPLAIN ANALYZE run tells us.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanSummary {
    /// "Execution Time" in ms.
    pub execution_time_ms: f64,
    /// "Planning Time" in ms, when printed.
    pub planning_time_ms: Option<f64>,
    /// Whether the plan carries per-node times (TIMING ON).
    pub has_node_timing: bool,
    /// Every node, depth first from the top.
    pub nodes: Vec<NodeCounts>,
    /// The Gather and Gather Merge nodes and what runs below them.
    pub gathers: Vec<GatherCounts>,
}

/// Clock reads per node call with TIMING ON (InstrStartNode + InstrStopNode),
/// as a count: [`clockscope_pg::predict::settings::READS_PER_ROW_PER_NODE`].
pub(crate) const READS_PER_NODE_CALL: u64 = clockscope_pg::predict::settings::READS_PER_ROW_PER_NODE as u64;

impl PlanSummary {
    /// Node calls over the whole plan.
    pub fn node_calls(&self) -> u64 {
        self.nodes.iter().map(NodeCounts::calls).sum()
    }

    /// Clock reads node timing makes for this plan (see the module docs).
    pub fn clock_reads(&self) -> u64 {
        READS_PER_NODE_CALL * self.node_calls()
    }

    /// The most rows any node returned (the scanned table's, for count(*)).
    pub fn max_node_rows(&self) -> u64 {
        self.nodes.iter().map(|n| n.rows_total).max().unwrap_or(0)
    }

    /// Whether any Gather launched a worker.
    pub fn is_parallel(&self) -> bool {
        self.gathers.iter().any(|g| g.workers_launched > 0)
    }

    /// The clock reads that add wall time ([`parallel`]): the serial nodes'
    /// (above every Gather) plus, per Gather, the busiest process's below
    /// it; [`Self::clock_reads`] for a plan without a Gather.
    pub fn critical_path_reads(&self) -> u64 {
        if self.gathers.is_empty() {
            return self.clock_reads();
        }
        let below: std::collections::BTreeSet<usize> =
            self.gathers.iter().flat_map(|g| g.below.iter().copied()).collect();
        let serial: u64 = (0..self.nodes.len())
            .filter(|i| !below.contains(i))
            .map(|i| self.nodes[i].calls())
            .sum();
        let parallel: u64 = self
            .gathers
            .iter()
            .map(|g| parallel::busiest_calls(g, &self.nodes))
            .sum();
        READS_PER_NODE_CALL * (serial + parallel)
    }

    /// The statement's CPU time on the server, ms: the leader's "Execution
    /// Time" plus its parallel workers' ([`parallel`]), so a busy-machine
    /// check does not count the query's own workers as other work.
    pub fn server_busy_ms(&self) -> f64 {
        self.execution_time_ms
            + self
                .gathers
                .iter()
                .map(|g| parallel::workers_busy_ms(g, &self.nodes, self.execution_time_ms))
                .sum::<f64>()
    }
}

/// Largest EXPLAIN JSON text parsed: 64 MiB. A plan of 10,000 nested nodes
/// is about 3 MB (about 300 bytes a node); the text is already in memory
/// (the server sent it), this bounds what parsing it builds.
pub(crate) const MAX_PLAN_JSON_BYTES: usize = 64 << 20;

/// A parsed JSON value of any nesting depth. Dropping a deeply nested
/// `serde_json::Value` recurses once per level (and overflows the stack at
/// some depth); this one takes its containers apart in a loop.
pub(crate) struct DeepValue(Option<Value>);

impl std::ops::Deref for DeepValue {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.0.as_ref().unwrap_or(&Value::Null)
    }
}

impl Drop for DeepValue {
    fn drop(&mut self) {
        let mut stack: Vec<Value> = self.0.take().into_iter().collect();
        while let Some(value) = stack.pop() {
            match value {
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
                _ => {}
            }
        }
    }
}

/// Parses JSON `text` of any nesting depth (EXPLAIN JSON nests two levels
/// per plan node: serde_json's default limit of 128 stops at 64 nodes).
/// serde_json's recursion limit is lifted and serde_stacker grows the stack
/// as the parser descends, so depth costs heap, not a stack overflow; the
/// text is at most [`MAX_PLAN_JSON_BYTES`].
pub(crate) fn parse_json(text: &str) -> Result<DeepValue, Error> {
    use serde::Deserialize;
    if text.len() > MAX_PLAN_JSON_BYTES {
        return Err(Error::Plan(format!(
            "EXPLAIN's JSON is {} bytes, above the {MAX_PLAN_JSON_BYTES}-byte limit",
            text.len()
        )));
    }
    // From a reader, not from_str: a reader keeps the line and column as it
    // goes, while a str is searched from its start for them at each error,
    // and an error deep in a document is re-reported once per level it
    // unwinds through (serde_json's end_seq/end_map): quadratic from a str,
    // 27 s for a 10,000-level document cut in half (debug build), linear here.
    let mut de = serde_json::Deserializer::from_reader(text.as_bytes());
    de.disable_recursion_limit();
    let value = Value::deserialize(serde_stacker::Deserializer::new(&mut de))
        .map_err(|e| Error::Plan(format!("not JSON: {e}")))?;
    let value = DeepValue(Some(value));
    de.end().map_err(|e| Error::Plan(format!("not JSON: {e}")))?;
    Ok(value)
}

/// Parses the single JSON value EXPLAIN (FORMAT JSON) returns.
pub fn parse_explain_json(text: &str) -> Result<PlanSummary, Error> {
    let value = parse_json(text)?;
    let top = match &*value {
        Value::Array(items) if items.len() == 1 => &items[0],
        Value::Array(items) => return Err(Error::Plan(format!("expected one plan, got {}", items.len()))),
        _ => return Err(Error::Plan("expected a JSON array of plans".into())),
    };
    let execution_time_ms = top
        .get("Execution Time")
        .and_then(Value::as_f64)
        .ok_or_else(|| Error::Plan("no \"Execution Time\" (was ANALYZE given?)".into()))?;
    if !(execution_time_ms.is_finite() && execution_time_ms >= 0.0) {
        return Err(Error::Plan(format!("\"Execution Time\" is {execution_time_ms}")));
    }
    let planning_time_ms = top.get("Planning Time").and_then(Value::as_f64);
    let plan = top.get("Plan").ok_or_else(|| Error::Plan("no \"Plan\"".into()))?;
    let mut nodes = Vec::new();
    let mut gathers: Vec<GatherCounts> = Vec::new();
    // The Gather being walked (its index in `gathers`) and its depth: the
    // nodes deeper than it, until the walk comes back up, run below it.
    let mut open: Option<(usize, usize)> = None;
    let mut has_node_timing = false;
    for (node, depth) in PlanNodes::new(plan) {
        let node = node?;
        let i = nodes.len();
        match open {
            Some((g, d)) if depth > d => gathers[g].below.push(i),
            _ => open = None,
        }
        let counts = node_counts(node, &mut has_node_timing)?;
        if open.is_none() && parallel::is_gather(&counts.node_type) {
            gathers.push(GatherCounts {
                workers_launched: parallel::workers_launched(node),
                node: i,
                below: Vec::new(),
            });
            open = Some((gathers.len() - 1, depth));
        }
        nodes.push(counts);
    }
    Ok(PlanSummary {
        execution_time_ms,
        planning_time_ms,
        has_node_timing,
        nodes,
        gathers,
    })
}

/// The nodes of a plan tree, depth first from the top (each before its
/// children, children in order), with their depth (0 at the top): a loop
/// over an explicit stack, so a plan of any depth is walked without
/// recursion. A node whose "Plans" is not a list yields an error.
pub(crate) struct PlanNodes<'a> {
    stack: Vec<(&'a Value, usize)>,
}

impl<'a> PlanNodes<'a> {
    /// Walks from `top` (the value of "Plan").
    pub fn new(top: &'a Value) -> PlanNodes<'a> {
        PlanNodes { stack: vec![(top, 0)] }
    }
}

impl<'a> Iterator for PlanNodes<'a> {
    type Item = (Result<&'a Value, Error>, usize);

    fn next(&mut self) -> Option<Self::Item> {
        let (node, depth) = self.stack.pop()?;
        match node.get("Plans") {
            None => {}
            Some(Value::Array(children)) => self.stack.extend(children.iter().rev().map(|c| (c, depth + 1))),
            Some(_) => {
                self.stack.clear();
                let name = node.get("Node Type").and_then(Value::as_str).unwrap_or("?");
                return Some((
                    Err(Error::Plan(format!("node \"{name}\" has \"Plans\" that is not a list"))),
                    depth,
                ));
            }
        }
        Some((Ok(node), depth))
    }
}

fn node_counts(node: &Value, has_timing: &mut bool) -> Result<NodeCounts, Error> {
    let node_type = node
        .get("Node Type")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::Plan("a plan node without \"Node Type\"".into()))?
        .to_string();
    let number = |key: &str| -> Result<f64, Error> {
        let v = node
            .get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| Error::Plan(format!("node \"{node_type}\" has no \"{key}\" (was ANALYZE given?)")))?;
        let fits = v.is_finite() && v >= 0.0;
        fits.then_some(v)
            .ok_or_else(|| Error::Plan(format!("node \"{node_type}\" has \"{key}\" = {v}")))
    };
    let rows_per_loop = number("Actual Rows")?;
    let loops = number("Actual Loops")?;
    *has_timing |= node.get("Actual Total Time").is_some();
    Ok(NodeCounts {
        node_type,
        rows_total: (rows_per_loop * loops).round() as u64,
        loops: loops.round() as u64,
        workers: parallel::worker_counts(node),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const PLAN: &str = r#"[{"Plan": {"Node Type": "Aggregate", "Actual Rows": 1, "Actual Loops": 1,
        "Plans": [{"Node Type": "Seq Scan", "Actual Rows": 1000, "Actual Loops": 1}]},
        "Planning Time": 0.05, "Triggers": [], "Execution Time": 1.5}]"#;

    #[test]
    fn counts_two_reads_per_call_and_a_null_call_per_loop() {
        let p = parse_explain_json(PLAN).unwrap();
        assert_eq!(p.execution_time_ms, 1.5);
        assert_eq!(p.planning_time_ms, Some(0.05));
        assert!(!p.has_node_timing);
        assert_eq!(p.node_calls(), (1 + 1) + (1000 + 1));
        assert_eq!(p.clock_reads(), 2 * 1000 + 6);
        assert_eq!(p.max_node_rows(), 1000);
    }

    #[test]
    fn per_loop_rows_are_multiplied_by_loops() {
        let text = r#"[{"Plan": {"Node Type": "Nested Loop", "Actual Rows": 10, "Actual Loops": 1, "Plans": [
            {"Node Type": "Seq Scan", "Actual Rows": 10, "Actual Loops": 1},
            {"Node Type": "Index Scan", "Actual Rows": 0.50, "Actual Loops": 10},
            {"Node Type": "Seq Scan", "Actual Rows": 0, "Actual Loops": 0}]}, "Execution Time": 0.1}]"#;
        let p = parse_explain_json(text).unwrap();
        let calls: Vec<u64> = p.nodes.iter().map(NodeCounts::calls).collect();
        assert_eq!(calls, vec![11, 11, 15, 0]);
        assert_eq!(p.clock_reads(), 2 * 37);
    }

    /// A plan of `depth` nodes, each the only child of the one above.
    pub(crate) fn deep_plan(depth: usize) -> String {
        let node = r#"{"Node Type": "Subquery Scan", "Actual Rows": 1, "Actual Loops": 1, "Actual Total Time": 0.5"#;
        let mut text = String::from("[{\"Plan\": ");
        for _ in 1..depth {
            text.push_str(node);
            text.push_str(", \"Plans\": [");
        }
        text.push_str(r#"{"Node Type": "Result", "Actual Rows": 1, "Actual Loops": 1, "Actual Total Time": 0.5}"#);
        for _ in 1..depth {
            text.push_str("]}");
        }
        text.push_str(", \"Execution Time\": 1.0}]");
        text
    }

    #[test]
    fn plans_of_any_depth_parse_without_recursion() {
        // 70 nodes pass serde_json's default limit of 128 nested values;
        // 10,000 would overflow a recursive parser, walker or drop (this
        // test thread has 2 MB of stack).
        let mut full = std::time::Duration::ZERO;
        for depth in [1, 70, 140, 10_000] {
            let start = std::time::Instant::now();
            let p = parse_explain_json(&deep_plan(depth)).unwrap_or_else(|e| panic!("{depth}: {e}"));
            full = start.elapsed();
            assert_eq!(p.nodes.len(), depth);
            assert_eq!(p.nodes.last().unwrap().node_type, "Result");
            assert_eq!(p.node_calls(), 2 * depth as u64);
            assert!(p.has_node_timing);
        }
        // A deep prefix then the end is an error, not a crash, and costs
        // about what parsing did (from a str it was quadratic: 180x the
        // whole document's parse in a debug build).
        let mut broken = deep_plan(10_000);
        broken.truncate(broken.len() / 2);
        let start = std::time::Instant::now();
        let e = parse_explain_json(&broken).unwrap_err().to_string();
        let took = start.elapsed();
        assert!(e.contains("not JSON: EOF while parsing"), "{e}");
        assert!(took < full * 20, "{took:?} for the error, {full:?} for the whole plan");
    }

    #[test]
    fn the_walk_is_depth_first_with_depths() {
        let text = r#"{"Node Type": "A", "Plans": [{"Node Type": "B", "Plans": [{"Node Type": "C"}]},
            {"Node Type": "D"}]}"#;
        let v = parse_json(text).unwrap();
        let order: Vec<(String, usize)> = PlanNodes::new(&v)
            .map(|(n, d)| (n.unwrap()["Node Type"].as_str().unwrap().to_string(), d))
            .collect();
        let want = [("A", 0), ("B", 1), ("C", 2), ("D", 1)];
        assert_eq!(order, want.map(|(n, d)| (n.to_string(), d)));
        let bad = parse_json(r#"{"Node Type": "A", "Plans": 3}"#).unwrap();
        assert!(PlanNodes::new(&bad).any(|(n, _)| n.is_err()));
    }

    #[test]
    fn rejects_plans_without_analyze_or_in_the_wrong_shape() {
        let cases = [
            ("{}", "expected a JSON array of plans"),
            ("[]", "expected one plan, got 0"),
            ("not json", "not JSON"),
            (r#"[{"Plan": {"Node Type": "Result"}}]"#, "no \"Execution Time\""),
            (r#"[{"Execution Time": 1.0}]"#, "no \"Plan\""),
            (
                r#"[{"Plan": {"Node Type": "Result", "Actual Loops": 1}, "Execution Time": 1.0}]"#,
                "has no \"Actual Rows\"",
            ),
            (
                r#"[{"Plan": {"Actual Rows": 1}, "Execution Time": 1.0}]"#,
                "without \"Node Type\"",
            ),
            (
                r#"[{"Plan": {"Node Type": "Result", "Actual Rows": -1, "Actual Loops": 1}, "Execution Time": 1.0}]"#,
                "= -1",
            ),
        ];
        for (text, want) in cases {
            let got = parse_explain_json(text).unwrap_err().to_string();
            assert!(got.contains(want), "{text}: {got}");
        }
    }
}

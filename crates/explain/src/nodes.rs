//! `--query`'s per-node breakdown: which plan nodes pay for node timing.
//!
//! From a TIMING ON plan (EXPLAIN JSON), each node's clock reads are
//! `2 x (rows x loops + loops)` ([`crate::plan`]), and the measured added
//! time (median TIMING ON - median TIMING OFF) is shared out in proportion
//! to them: every read costs about the same, so a node's share of the reads
//! is its share of the added time. Next to it, the node's own time as
//! TIMING ON reports it (its `Actual Total Time x Actual Loops` less its
//! children's; a parallel node's time is per process, so this is
//! approximate under Gather) and how much of that own time is the clock.

use crate::error::Error;
use crate::plan::{parse_json, PlanNodes, READS_PER_NODE_CALL};
use serde::Serialize;
use serde_json::Value;

/// One plan node's share of node timing's cost.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct NodeCost {
    /// "Node Type", with the relation or index when the plan names one.
    pub node: String,
    /// Depth in the plan, 0 at the top.
    pub depth: usize,
    /// Rows over all loops (`Actual Rows x Actual Loops`).
    pub rows_total: u64,
    /// Actual Loops.
    pub loops: u64,
    /// `2 x (rows_total + loops)`: the clock reads node timing made here.
    pub clock_reads: u64,
    /// This node's share of the measured added time, ms (by clock reads).
    pub added_ms: f64,
    /// The node's own time under TIMING ON, ms (its total less its children's).
    pub own_time_on_ms: Option<f64>,
    /// `added_ms / own_time_on_ms`: how much of the time TIMING ON shows for
    /// this node is the clock.
    pub added_fraction_of_own: Option<f64>,
}

struct Raw {
    node: String,
    depth: usize,
    rows_total: u64,
    loops: u64,
    total_ms: Option<f64>,
    children_ms: f64,
    /// The index of the parent node in plan order.
    parent: Option<usize>,
}

fn raw_node(v: &Value, depth: usize, parent: Option<usize>) -> Result<Raw, Error> {
    let node_type = v
        .get("Node Type")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::Plan("a plan node without \"Node Type\"".into()))?;
    let mut node = node_type.to_string();
    for key in ["Relation Name", "Index Name", "Function Name", "CTE Name"] {
        if let Some(name) = v.get(key).and_then(Value::as_str) {
            node.push_str(&format!(" on {name}"));
            break;
        }
    }
    let num = |k: &str| v.get(k).and_then(Value::as_f64).filter(|x| x.is_finite() && *x >= 0.0);
    let rows = num("Actual Rows").unwrap_or(0.0);
    let loops = num("Actual Loops").unwrap_or(0.0);
    Ok(Raw {
        node: clockscope_system::escape::escape_untrusted(&node).into_owned(),
        depth,
        rows_total: (rows * loops).round() as u64,
        loops: loops.round() as u64,
        total_ms: num("Actual Total Time").map(|t| t * loops),
        children_ms: 0.0,
        parent,
    })
}

/// The plan's nodes in plan order ([`PlanNodes`]: no recursion, any depth),
/// each with the summed total time of its children.
fn walk(plan: &Value) -> Result<Vec<Raw>, Error> {
    let mut out: Vec<Raw> = Vec::new();
    // The latest node seen at each depth: a node's parent is the latest one
    // a level up (depth-first order).
    let mut latest_at: Vec<usize> = Vec::new();
    for (node, depth) in PlanNodes::new(plan) {
        let parent = depth.checked_sub(1).and_then(|d| latest_at.get(d).copied());
        latest_at.truncate(depth);
        latest_at.push(out.len());
        out.push(raw_node(node?, depth, parent)?);
    }
    // Children come after their parent: summing from the end adds each
    // node's time to its parent's children once.
    for i in (0..out.len()).rev() {
        if let (Some(p), Some(t)) = (out[i].parent, out[i].total_ms) {
            out[p].children_ms += t;
        }
    }
    Ok(out)
}

/// The per-node breakdown of `timing_on_plan` (EXPLAIN JSON text) for
/// `added_ms` of measured overhead, the nodes in plan order.
pub(crate) fn breakdown(timing_on_plan: &str, added_ms: f64) -> Result<Vec<NodeCost>, Error> {
    let v = parse_json(timing_on_plan)?;
    let plan = v
        .get(0)
        .and_then(|p| p.get("Plan"))
        .ok_or_else(|| Error::Plan("no \"Plan\"".into()))?;
    let raw = walk(plan)?;
    let reads = |r: &Raw| READS_PER_NODE_CALL * (r.rows_total + r.loops);
    let all_reads: u64 = raw.iter().map(reads).sum();
    Ok(raw
        .iter()
        .map(|r| {
            let clock_reads = reads(r);
            let added = if all_reads == 0 {
                0.0
            } else {
                added_ms * clock_reads as f64 / all_reads as f64
            };
            let own = r.total_ms.map(|t| (t - r.children_ms).max(0.0));
            NodeCost {
                node: r.node.clone(),
                depth: r.depth,
                rows_total: r.rows_total,
                loops: r.loops,
                clock_reads,
                added_ms: added,
                own_time_on_ms: own,
                added_fraction_of_own: own.filter(|o| *o > 0.0).map(|o| added / o),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_time_follows_the_clock_reads() {
        let plan = r#"[{"Plan": {"Node Type": "Aggregate", "Actual Rows": 1, "Actual Loops": 1,
            "Actual Total Time": 30.0, "Plans": [{"Node Type": "Seq Scan", "Relation Name": "t",
            "Actual Rows": 998, "Actual Loops": 1, "Actual Total Time": 20.0}]}, "Execution Time": 30.5}]"#;
        let nodes = breakdown(plan, 10.0).unwrap();
        assert_eq!(nodes.len(), 2);
        // 2 x (1 + 1) = 4 and 2 x (998 + 1) = 1998 reads: 2002 in all.
        assert_eq!(nodes[0].clock_reads, 4);
        assert_eq!(nodes[1].clock_reads, 1998);
        assert_eq!(nodes[1].node, "Seq Scan on t");
        assert!((nodes[1].added_ms - 10.0 * 1998.0 / 2002.0).abs() < 1e-12);
        assert_eq!(nodes[0].own_time_on_ms, Some(10.0));
        assert_eq!(nodes[1].own_time_on_ms, Some(20.0));
        assert!((nodes[1].added_fraction_of_own.unwrap() - nodes[1].added_ms / 20.0).abs() < 1e-12);
        assert!(breakdown("[]", 1.0).is_err());
    }

    #[test]
    fn a_deep_plan_breaks_down_without_recursion() {
        let plan = crate::plan::tests::deep_plan(10_000);
        let nodes = breakdown(&plan, 1.0).unwrap();
        assert_eq!(nodes.len(), 10_000);
        assert_eq!(nodes[9_999].depth, 9_999);
        // Each node's own time is its total less its one child's: 0.
        assert_eq!(nodes[0].own_time_on_ms, Some(0.0));
        assert_eq!(nodes[9_999].own_time_on_ms, Some(0.5));
    }

    #[test]
    fn own_time_subtracts_only_direct_children() {
        let plan = r#"[{"Plan": {"Node Type": "Hash Join", "Actual Rows": 1, "Actual Loops": 1,
            "Actual Total Time": 10.0, "Plans": [
              {"Node Type": "Seq Scan", "Actual Rows": 1, "Actual Loops": 1, "Actual Total Time": 3.0},
              {"Node Type": "Hash", "Actual Rows": 1, "Actual Loops": 1, "Actual Total Time": 4.0, "Plans": [
                {"Node Type": "Seq Scan", "Actual Rows": 1, "Actual Loops": 2, "Actual Total Time": 1.5}]}]},
            "Execution Time": 10.5}]"#;
        let own: Vec<Option<f64>> = breakdown(plan, 1.0).unwrap().iter().map(|n| n.own_time_on_ms).collect();
        assert_eq!(own, vec![Some(3.0), Some(3.0), Some(1.0), Some(3.0)]);
    }
}

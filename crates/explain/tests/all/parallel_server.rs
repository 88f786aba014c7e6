//! A parallel plan on a real PostgreSQL (a server of its own with
//! `max_parallel_workers_per_gather = 2` and parallel plans made cheap):
//! EXPLAIN VERBOSE's per-worker rows add up with the leader's to the
//! node's total, the reads on the critical path are fewer than the plan's,
//! the workers' time counts as the server's, and `--query` measures with
//! the critical path's reads. Times are only checked for sanity.

use clockscope::Control;
use clockscope_explain::plan::parse_explain_json;
use clockscope_explain::testing::{TestServer, SUPERUSER};
use clockscope_explain::Options;

const PARALLEL_CONF: &str = "max_parallel_workers_per_gather = 2\nparallel_setup_cost = 0\n\
     parallel_tuple_cost = 0\nmin_parallel_table_scan_size = 0\n";

const ROWS: u64 = 300_000;

#[test]
fn a_parallel_plan_is_counted_per_process() {
    let server = TestServer::start_configured(PARALLEL_CONF).unwrap();
    server
        .sql(&format!(
            "CREATE TABLE t AS SELECT g AS id, g % 1000 AS k FROM generate_series(1, {ROWS}) g; ANALYZE t"
        ))
        .unwrap();
    let mut c = server.handle().superuser_client().unwrap();
    let explain = |c: &mut postgres::Client, timing: &str| -> String {
        let sql = format!("EXPLAIN (ANALYZE, VERBOSE, TIMING {timing}, FORMAT JSON) SELECT count(*) FROM t");
        // The simple protocol returns the json as text.
        c.simple_query(&sql)
            .unwrap()
            .into_iter()
            .find_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
                _ => None,
            })
            .unwrap()
    };
    let on = parse_explain_json(&explain(&mut c, "ON")).unwrap();
    assert!(on.is_parallel(), "{on:?}");
    let scan = on.nodes.iter().find(|n| n.node_type == "Seq Scan").unwrap();
    assert!(!scan.workers.is_empty(), "{scan:?}");
    let workers: u64 = scan.workers.iter().map(|w| w.rows_total).sum();
    // PostgreSQL 15 rounds the per-loop rows: the total within the loops.
    assert!(scan.rows_total.abs_diff(ROWS) <= scan.loops, "{scan:?}");
    assert!(workers <= scan.rows_total, "{scan:?}");
    let total = on.clock_reads();
    let critical = on.critical_path_reads();
    assert!(critical < total, "{critical} of {total}");
    // The busiest process made at least its share of the scan's reads.
    assert!(
        critical >= 2 * ROWS / on.nodes.iter().map(|n| n.loops).max().unwrap(),
        "{critical}"
    );
    assert!(on.server_busy_ms() > on.execution_time_ms);
    let off = parse_explain_json(&explain(&mut c, "OFF")).unwrap();
    assert!(off.server_busy_ms() > off.execution_time_ms);

    // clockscope explain --query on it: the critical path's reads.
    let opts = Options {
        query: Some("SELECT count(*) FROM t".into()),
        runs: 2,
        clock_measure_ns: 20_000_000,
        max_time: std::time::Duration::from_secs(20),
        ..Options::new(Some(server.handle().socket_dsn(SUPERUSER, "postgres")))
    };
    let r = clockscope_explain::run(&opts, &mut |_| Control::Continue).unwrap();
    let s = &r.clock_sources[0];
    assert!(s.clock_reads_per_run < 2 * ROWS, "{}", s.clock_reads_per_run);
    assert!(s.clock_reads_per_run >= 2 * ROWS / 3, "{}", s.clock_reads_per_run);
    assert!(s.timing_off_ms > 0.0 && s.timing_on_ms > 0.0);
}

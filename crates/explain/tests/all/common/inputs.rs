//! The report inputs the report tests share (the explain library's tests and
//! the CLI's crates/cli/tests/all/explain_text.rs, which includes this file by
//! path: not the whole of common/, whose `skip!` the CLI's tests define too).

use clockscope_explain::clockcost::MachineClocks;
use clockscope_explain::connect::Locality;
use clockscope_explain::measure::SourceRuns;
use clockscope_explain::report::Inputs;

/// The report's inputs for `sources` measured on a local PostgreSQL 15.18
/// (unix socket, the TEMP-table count(*) of 1M rows, 3 pairs at least) with
/// this machine's `machine`: what the tests do not vary, set once; a test
/// states what it studies with struct update syntax.
#[allow(dead_code)] // Not every test binary that shares this module builds reports.
pub fn report_inputs<'a>(sources: &'a [SourceRuns], machine: &'a MachineClocks) -> Inputs<'a> {
    Inputs {
        server_version: "15.18",
        server_version_num: 150018,
        server_version_full: "PostgreSQL 15.18 on x86_64-pc-linux-gnu",
        server: "host=/tmp port=5432",
        locality: Locality::UnixSocket,
        settings: &[],
        timing_settings: &[],
        page_read: None,
        query: "SELECT count(*) FROM t",
        rows: 1_000_000,
        runs: 3,
        warmup_runs: 1,
        temp_table_estimated_bytes: 36_249_600,
        workload: clockscope_explain::options::Workload::Table,
        workload_reason: None,
        sources,
        skipped: &[],
        machine,
        clock_measure_ns: 1,
        interrupted: false,
        max_time: std::time::Duration::from_secs(60),
        cpu_contention: None,
    }
}

//! Helpers shared by the CLI's integration tests: running the `clockscope`
//! binary, the CPUs a cross-CPU run may use, and the libpq environment that
//! tests clear so a developer's settings cannot reach the test server, and
//! `skip!` (common/skip.rs of the library's tests, included by path).
//! Each test binary uses only some of them.
#![allow(dead_code)]

#[macro_use]
#[path = "../../../../system/tests/all/common/skip.rs"]
pub mod skip;
/// libfaketime: whether it works here, a clock stepped back mid-run.
/// A fake clocksource sysfs for the sweep tests.
pub mod fake_clocksource;
pub mod faketime;
/// The opt-in PostgreSQL 19 install (`CLOCKSCOPE_PG19`).
pub mod pg19;
/// Snapshots and the one-screen line count (issue 24).
pub mod snapshot;
#[path = "../../../../system/tests/all/common/time_limit.rs"]
pub mod time_limit;

use std::process::{Command, Output, Stdio};

/// The `clockscope` binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_clockscope");

/// Runs `clockscope` with `args` (stdin closed) and returns what it did.
pub fn clockscope(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run clockscope")
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    clockscope_system::crosscpu::affinity::allowed_cpus().unwrap()
}

/// Whether util-linux's `taskset` is installed (to narrow the affinity mask).
pub fn has_taskset() -> bool {
    Command::new("taskset")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// libpq's environment variables (connection, TLS files, service and
/// password files, options), removed from the child's environment.
pub const PG_VARS: [&str; 18] = [
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGUSER",
    "PGDATABASE",
    "PGPASSWORD",
    "PGSSLMODE",
    "PGCONNECT_TIMEOUT",
    "PGSERVICE",
    "PGSERVICEFILE",
    "PGSYSCONFDIR",
    "PGPASSFILE",
    "PGSSLROOTCERT",
    "PGSSLCERT",
    "PGSSLKEY",
    "PGSSLCRL",
    "PGOPTIONS",
    "PGAPPNAME",
];

/// The stamp snapshot tests put on a report: a fixed host and time
/// (2026-11-23T19:19:07Z), so the text and JSON do not change between runs.
pub fn test_stamp() -> clockscope_cli::report::stamp::ReportStamp {
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_461_547);
    clockscope_cli::report::stamp::ReportStamp::at("db1.example", when, 1)
}

#[allow(unused_imports)]
pub use snapshot::{one_screen_and_verbose, snapshot_eq, ONE_SCREEN_LINES};

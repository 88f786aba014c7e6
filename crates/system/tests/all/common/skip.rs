//! The one way an integration test skips: `skip!` writes `skipped: ...` to
//! the process's real standard error (libtest captures `eprintln!` of a
//! passing test, not writes through `std::io::stderr()`, which go to fd 2
//! itself), and
//! under `CLOCKSCOPE_REQUIRE_DEPS=1` (set by `.ci/run`, where
//! scripts/test.sh installs PostgreSQL 15, promtool, node_exporter, faketime
//! and qemu) a missing dependency fails the test instead.
//!
//! `skip!("...")` is for a dependency CI installs; `skip!(optional: "...")`
//! is for what CI cannot promise (a second CPU, root for mknod or mount, a
//! kernel that publishes the TSC frequency, the opt-in PostgreSQL 19 tests)
//! and never fails. Both expand to `()`: write `return skip!(...)`.
//! The crates' `tests/all/common/mod.rs` include this file by path, so there is
//! one copy.
#![allow(dead_code)]

use std::io::Write;

/// The variable that turns a skip for a missing dependency into a failure.
pub const REQUIRE_DEPS: &str = "CLOCKSCOPE_REQUIRE_DEPS";

/// Skips the calling test; `required`: the dependency is one CI installs, so
/// under `CLOCKSCOPE_REQUIRE_DEPS=1` this panics instead.
pub fn report(required: bool, why: std::fmt::Arguments<'_>) {
    if required && std::env::var_os(REQUIRE_DEPS).is_some_and(|v| v == "1") {
        panic!("required dependency missing ({REQUIRE_DEPS}=1): {why}");
    }
    let line = format!("skipped: {}: {why}\n", std::thread::current().name().unwrap_or("?"));
    // Written to fd 2 itself, past libtest's capture (which takes only the
    // print macros). Not by opening /proc/self/fd/2: that makes a second open
    // file at offset 0, so with stderr redirected to a file
    // (`./scripts/test.sh >log 2>&1`) the line overwrote the log's start.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Skips the calling test with a formatted reason (see the module doc).
#[macro_export]
macro_rules! skip {
    (optional: $($why:tt)+) => {
        $crate::common::skip::report(false, format_args!($($why)+))
    };
    ($($why:tt)+) => {
        $crate::common::skip::report(true, format_args!($($why)+))
    };
}

//! Helpers shared by the integration tests: the recorded EXPLAIN plans in
//! tests/data, the report inputs the report tests share, and `skip!`.

#[macro_use]
#[path = "../../../../system/tests/all/common/skip.rs"]
pub mod skip;
#[path = "../../../../system/tests/all/common/time_limit.rs"]
pub mod time_limit;

/// The recorded file `tests/data/<name>`; panics naming the path when it
/// cannot be read.
#[allow(dead_code)] // Not every test binary that shares this module reads recorded plans.
pub fn data(name: &str) -> String {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

mod inputs;
pub use inputs::report_inputs;

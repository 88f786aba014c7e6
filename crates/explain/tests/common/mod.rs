//! Helpers shared by the integration tests: the recorded EXPLAIN plans in
//! tests/data.

/// The recorded file `tests/data/<name>`; panics naming the path when it
/// cannot be read.
pub fn data(name: &str) -> String {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

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

/// Held by every test that adds relations to the shared server
/// (`clockscope_explain::testing::shared`) or runs explain there (its TEMP
/// table, named `clockscope_explain_<pid>` in every session of this process),
/// and for the whole of a test that counts relations there: so no count sees
/// another test's objects come or go.
#[allow(dead_code)] // Not every test binary that shares this module uses the shared server.
pub fn shared_server_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

mod inputs;
pub use inputs::report_inputs;

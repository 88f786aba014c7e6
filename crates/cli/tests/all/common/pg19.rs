//! The opt-in switch of the tests that need a real PostgreSQL 19:
//! `CLOCKSCOPE_PG19=/path/to/install` (a prefix with `bin/postgres`, e.g.
//! from `scripts/pg19-server.sh build`). CI cannot fetch PostgreSQL 19's
//! source, so without the variable these tests print a visible skip line and
//! pass; with it set to something that is not an install they fail.
#![allow(dead_code)]

use std::path::PathBuf;

/// The variable naming the install.
pub const VAR: &str = "CLOCKSCOPE_PG19";

/// The PostgreSQL 19 install to test against, or `None` after printing
/// an optional `skip!` (common/skip.rs).
pub fn install(test: &str) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os(VAR) else {
        // Opt-in: never a failure, not even under CLOCKSCOPE_REQUIRE_DEPS.
        crate::skip!(
            optional: "{test}: needs a PostgreSQL 19 install; set {VAR}=/path/to/install \
             (scripts/pg19-server.sh build SRC_DIR PREFIX) to run it"
        );
        return None;
    };
    let dir = PathBuf::from(dir);
    for bin in ["postgres", "pg_test_timing", "pg_ctl", "psql"] {
        assert!(
            dir.join("bin").join(bin).is_file(),
            "{VAR}={}: no bin/{bin} there (not a PostgreSQL 19 install)",
            dir.display()
        );
    }
    Some(dir)
}

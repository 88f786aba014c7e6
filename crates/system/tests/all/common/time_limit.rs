//! The one place a test's wall-clock upper bound is scaled:
//! `CLOCKSCOPE_TEST_TIME_FACTOR` (a positive number, default 1) multiplies
//! every limit passed through [`limit`], so a slow or crowded CI machine can
//! allow more time (e.g. `CLOCKSCOPE_TEST_TIME_FACTOR=3`) without any test
//! losing its bound. The crates' `tests/all/common/mod.rs` include this file by
//! path, so there is one copy.
#![allow(dead_code)]

use std::time::Duration;

/// The variable holding the factor.
pub const TIME_FACTOR: &str = "CLOCKSCOPE_TEST_TIME_FACTOR";

/// The factor from the environment: 1 when unset; panics naming the
/// variable when it is not a positive finite number.
pub fn factor() -> f64 {
    match std::env::var(TIME_FACTOR) {
        Err(_) => 1.0,
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(f) if f.is_finite() && f > 0.0 => f,
            _ => panic!("{TIME_FACTOR}={v:?}: not a positive number"),
        },
    }
}

/// `base` times the factor: the upper bound a test asserts.
pub fn limit(base: Duration) -> Duration {
    base.mul_f64(factor())
}

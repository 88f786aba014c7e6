//! The TSC: CPUID evidence, its frequency from every source, calibration, and
//! the decision whether to use it (PostgreSQL 19's `auto` and ours).

pub mod calibrate;

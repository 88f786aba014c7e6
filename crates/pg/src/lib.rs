//! clockscope-pg: PostgreSQL's timing work, modelled and measured on this
//! machine. Unpublished: its API is the tools' own.
//!
//! - [`pg_loop`]: PostgreSQL 19's `pg_test_timing` loop, upstream's work and
//!   arithmetic per iteration (the drop-in's), with [`system_clock`], its
//!   system clock read;
//! - [`predict`]: EXPLAIN ANALYZE's timing overhead: PostgreSQL's per-row
//!   instrumentation modelled and measured here, the read cost with an
//!   interval, and the price of each timing setting.
#![deny(missing_docs)]

pub mod pg_loop;
pub mod predict;
pub mod system_clock;

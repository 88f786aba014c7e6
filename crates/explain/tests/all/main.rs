//! The integration tests of clockscope-explain, one test binary:
//! `cargo test -p clockscope-explain --test all`, one file's tests with
//! `--test all plans::`.

// First: `skip!` (common/skip.rs) is used by the modules below.
#[macro_use]
mod common;

mod backend_process;
mod clock_sources;
mod intervals;
mod noise_control;
mod parallel_server;
mod pgfiles;
mod plans;
mod read_only;
mod real_server;
mod side_effect_routes;
mod tls;

//! The integration tests of clockscope-system, one test binary:
//! `cargo test -p clockscope-system --test all`, one file's tests with
//! `--test all tsc_policy::`.

// First: `skip!` (common/skip.rs) is used by the modules below.
#[macro_use]
mod common;

mod arm_counter;
mod arm_decisions;
mod arm_frequency;
mod calibrate_live;
mod calibrate_scripted;
mod counter_discovery;
mod crosscpu_cpus;
mod crosscpu_scripted;
mod crosscpu_topology;
mod drift_ntp;
mod instant_threads;
mod kernel_log_bounds;
mod kernel_log_fixtures;
mod kernel_log_real_pastes;
mod linux_evidence;
mod linux_kmsg;
mod linux_live;
mod linux_perf;
mod parsers_fuzz;
mod skip_output;
mod time_interposition;
mod tsc_dumps;
mod tsc_evidence;
mod tsc_policy;

//! The CLI's integration tests, one test binary (linking tokio and rustls
//! once instead of once per file): `cargo test -p clockscope-cli --test all`,
//! one file's tests with `--test all check_cli::`. The `explain` tests need
//! the default `explain` feature.

// First: `skip!` (common/skip.rs) is used by the modules below.
#[macro_use]
mod common;

mod check_cli;
mod check_interference;
mod check_report;
mod clocks_text;
mod cross_cpu_cli;
mod dmesg_cli;
mod docs_facts;
#[cfg(feature = "explain")]
mod explain_cli;
#[cfg(feature = "explain")]
mod explain_pg19;
#[cfg(feature = "explain")]
mod explain_promises;
#[cfg(feature = "explain")]
mod explain_text;
#[cfg(feature = "explain")]
mod explain_timing_settings;
mod faketime_cli;
mod faults_cli;
mod i18n_catalog;
mod i18n_library;
mod inputs_as_outputs_cli;
mod json_schemas;
mod layers;
mod options_cli;
mod output_files_cli;
mod pg19_pg_test_timing;
mod pg19_server_script;
mod pg_test_timing_cli;
mod pg_test_timing_report;
mod prometheus_metrics;
mod report_width;
mod root_identity_cli;
mod shipping;
mod sweep_cli;
mod sweep_deaths;
#[cfg(feature = "explain")]
mod sweep_dsn;
mod sweep_report;
mod sweep_server_pass;
mod tsc_cli;

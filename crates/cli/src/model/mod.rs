//! What a command measured, as plain serialisable values apart from the code
//! that gathers them ([`crate::commands`]) and the code that prints them
//! ([`crate::export`]).
//!
//! - [`check`]: the `check` report, its per-clock statistics and its verdict.
//! - [`clocks`]: every clock source and its resolution.
//! - [`dmesg`]: a kernel log's TSC and clocksource events and their summary.
//! - [`cross_cpu`]: the CPUs, plan, calibration and cross-CPU report.
//! - [`sweep`]: the system clock under each kernel clocksource.
//! - [`tsc`]: the TSC's or generic timer's report with NTP and `--drift` beside it.
//! - [`stamp`]: the host, time, tool and schema version every report carries.

pub mod check;
pub mod clocks;
pub mod cross_cpu;
pub mod dmesg;
pub mod stamp;
pub mod sweep;
pub mod tsc;

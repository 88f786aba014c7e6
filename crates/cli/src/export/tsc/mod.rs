//! The text formats of `clockscope tsc` (its JSON goes through
//! [`crate::export::json`]).
//!
//! - [`text`]: the x86 TSC report.
//! - [`evidence`]: kernel messages, NTP and drift (also in `check`).
//! - [`generic_timer`]: the ARM generic timer report, printed in its place on aarch64.

pub mod evidence;
pub mod generic_timer;
pub mod text;

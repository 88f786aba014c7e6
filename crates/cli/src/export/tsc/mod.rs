//! The text formats of `clockscope tsc` (its JSON goes through
//! [`crate::export::json`]).
//!
//! - [`text`]: the x86 TSC report.
//! - [`generic_timer`]: the ARM generic timer report, printed in its place on aarch64.

pub mod generic_timer;
pub mod text;

//! The evidence the counter's judges share, below both the judges ([`crate::tsc`],
//! [`crate::arm`]) and the layer that gathers it ([`crate::counter`]): a
//! calibration's result, one line of a trust decision, and the signs of
//! something changing time between clockscope and the kernel.
//!
//! - [`calibration`]: [`Calibration`], what a calibration found (the runs are
//!   [`crate::counter::calibrate`]'s).
//! - [`check`]: [`Check`], one line of a trust decision.
//! - [`interposition`]: a calibration grossly off the frequency in use, what
//!   that means, and this process's hints of a time library.

pub mod calibration;
pub mod check;
pub mod interposition;

pub use calibration::Calibration;
pub use check::Check;

//! The CPU's counter instructions, the lowest layer: RDTSC, RDTSCP,
//! LFENCE;RDTSC and CPUID on x86-64; CNTVCT_EL0, ISB;CNTVCT_EL0 and
//! CNTFRQ_EL0 on aarch64; nothing elsewhere. It imports nothing from the
//! crate; [`crate::clock`] (clock sources) and [`crate::counter`] (the
//! counter layer, which builds on those clock sources) both call it, so
//! neither has to import the other's platform file.

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "x86_64")]
mod x86_64;
#[cfg(target_arch = "aarch64")]
pub use aarch64::*;
#[cfg(target_arch = "x86_64")]
pub use x86_64::*;

//! The CPU counter (the x86-64 TSC, the ARM generic timer) as this build has
//! it: which kind, its fast and ordered reads, and visitors that receive them
//! as concrete, monomorphised [`ClockSource`]s. The reads are `arch/`'s.

use crate::arch;
use crate::clock::{ClockId, ClockSource};
use crate::convert::Scale;

/// Which CPU counter a machine has.
///
/// ```
/// use clockscope::CounterKind;
/// match CounterKind::native() {
///     Some(kind) => assert!(kind.fast_read().is_counter()),
///     None => println!("no CPU counter on this architecture"),
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CounterKind {
    /// The x86-64 time-stamp counter.
    Tsc,
    /// The ARM generic timer (CNTVCT_EL0).
    GenericTimer,
}

impl CounterKind {
    /// This build's counter, or `None` on an architecture without one.
    pub const fn native() -> Option<CounterKind> {
        arch::KIND
    }

    /// The fast, unordered read: RDTSC or CNTVCT_EL0.
    pub fn fast_read(self) -> ClockId {
        match self {
            CounterKind::Tsc => ClockId::Rdtsc,
            CounterKind::GenericTimer => ClockId::Cntvct,
        }
    }

    /// The read that waits for earlier instructions: RDTSCP or ISB;CNTVCT_EL0.
    pub fn ordered_read(self) -> ClockId {
        match self {
            CounterKind::Tsc => ClockId::Rdtscp,
            CounterKind::GenericTimer => ClockId::IsbCntvct,
        }
    }

    /// Why this CPU's counter cannot be read in order (no TSC, no RDTSCP,
    /// another architecture), or `None` when it can. Checked with CPUID
    /// before anything executes RDTSCP.
    pub fn missing_ordered_read() -> Option<String> {
        arch::missing_ordered_read()
    }

    /// The counter's frequency register: CNTFRQ_EL0 on aarch64; `None` for
    /// the TSC, which has none.
    pub fn frequency_register_hz() -> Option<u64> {
        arch::frequency_register_hz()
    }
}

/// Receives the counter's ordered read as a concrete, copyable
/// [`ClockSource`] (from [`visit_ordered`]).
pub trait CounterVisitor {
    /// What [`CounterVisitor::visit`] returns.
    type Output;
    /// Called once with the counter's ordered read.
    fn visit<C: ClockSource + Copy + Send + Sync + 'static>(self, counter: C) -> Self::Output;
}

/// Receives a counter's precise and fast reads (from [`visit_pair`]).
pub trait CounterPairVisitor {
    /// What [`CounterPairVisitor::visit`] returns.
    type Output;
    /// Called once with the precise and the fast read.
    fn visit<P: ClockSource, F: ClockSource>(self, precise: P, fast: F) -> Self::Output;
}

/// Hands the counter's ordered read to `visitor`: RDTSCP (LFENCE;RDTSC where
/// RDTSCP is hidden) or ISB;CNTVCT_EL0; `Err` without a counter. Its ticks
/// are converted with `scale`.
///
/// ```
/// use clockscope::{visit_ordered, ClockSource, CounterVisitor, Scale};
/// struct Name;
/// impl CounterVisitor for Name {
///     type Output = &'static str;
///     fn visit<C: ClockSource + Copy + Send + Sync + 'static>(self, c: C) -> &'static str {
///         c.name()
///     }
/// }
/// if let Ok(name) = visit_ordered(Scale::NANOSECONDS, Name) {
///     println!("ordered counter read: {name}");
/// }
/// ```
pub fn visit_ordered<V: CounterVisitor>(scale: Scale, visitor: V) -> Result<V::Output, &'static str> {
    arch::visit_ordered(scale, visitor)
}

/// Hands PostgreSQL 19's precise and fast counter reads (RDTSCP and RDTSC;
/// ISB;CNTVCT_EL0 and CNTVCT_EL0) to `visitor`; `Err` where they are missing.
///
/// ```
/// use clockscope::{visit_pair, ClockSource, CounterPairVisitor, Scale};
/// struct Names;
/// impl CounterPairVisitor for Names {
///     type Output = (&'static str, &'static str);
///     fn visit<P: ClockSource, F: ClockSource>(self, p: P, f: F) -> Self::Output {
///         (p.name(), f.name())
///     }
/// }
/// if let Ok((precise, fast)) = visit_pair(Scale::NANOSECONDS, Names) {
///     println!("{precise} / {fast}");
/// }
/// ```
pub fn visit_pair<V: CounterPairVisitor>(scale: Scale, visitor: V) -> Result<V::Output, &'static str> {
    arch::visit_pair(scale, visitor)
}

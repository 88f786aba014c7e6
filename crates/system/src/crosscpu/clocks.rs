//! The real clocks the cross-CPU tests read: the CPU counter with an ordered
//! read (RDTSCP on x86-64, LFENCE;RDTSC where RDTSCP is hidden,
//! ISB;CNTVCT_EL0 on AArch64) and
//! clock_gettime(CLOCK_MONOTONIC), PostgreSQL's system clock.

use super::{ClockUnderTest, CpuClock};
use crate::counter::CounterVisitor;
use clockscope::PosixClock;
use clockscope::Scale;
use clockscope::{ClockId, ClockSource};

/// Any [`ClockSource`] as a [`CpuClock`]: every read is the source's ordered
/// read (`now_ordered`), whichever CPU the thread is on.
#[derive(Clone, Copy, Debug)]
pub struct SourceClock<S>(pub S);

impl<S: ClockSource + Sync> CpuClock for SourceClock<S> {
    #[inline(always)]
    fn read(&self, _cpu: usize) -> u64 {
        self.0.now_ordered().raw()
    }
}

/// clock_gettime(CLOCK_MONOTONIC); its ticks are nanoseconds.
pub fn monotonic() -> ClockUnderTest {
    ClockUnderTest {
        id: ClockId::Monotonic,
        scale: Some(Scale::NANOSECONDS),
        scale_source: Some("clock_gettime counts nanoseconds".to_string()),
        clock: Box::new(SourceClock(PosixClock::monotonic())),
    }
}

/// The CPU counter read in order (RDTSCP, LFENCE;RDTSC or ISB;CNTVCT_EL0), or `None` where
/// this CPU or architecture has none. `scale` converts its ticks to ns
/// (`None`: ticks only), `scale_source` says where that frequency came from.
pub fn counter(scale: Option<Scale>, scale_source: Option<String>) -> Option<ClockUnderTest> {
    let (id, clock) = arch_counter(scale)?;
    Some(ClockUnderTest {
        id,
        scale,
        scale_source: scale.and(scale_source),
        clock,
    })
}

/// The counter first (when there is one), then CLOCK_MONOTONIC.
pub fn default_clocks(counter_scale: Option<Scale>, scale_source: Option<String>) -> Vec<ClockUnderTest> {
    counter(counter_scale, scale_source)
        .into_iter()
        .chain([monotonic()])
        .collect()
}

/// The ordered counter read, boxed as a [`CpuClock`]. The source's own
/// scale is never used here (reads are raw ticks), so any scale will do
/// when the frequency is unknown.
fn arch_counter(scale: Option<Scale>) -> Option<(ClockId, Box<dyn CpuClock>)> {
    struct Boxed;
    impl CounterVisitor for Boxed {
        type Output = (ClockId, Box<dyn CpuClock>);
        fn visit<C: ClockSource + Copy + Send + Sync + 'static>(self, c: C) -> Self::Output {
            let id = ClockId::parse(c.name()).expect("every counter read is a ClockId");
            (id, Box::new(SourceClock(c)))
        }
    }
    clockscope::visit_ordered(scale.unwrap_or(Scale::NANOSECONDS), Boxed).ok()
}

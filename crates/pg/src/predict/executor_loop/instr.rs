//! PostgreSQL's per-row instrumentation shapes and clock reads: how each
//! version stores an `instr_time` ([`InstrTime`]), its reads ([`PgRead`]:
//! [`FastRead`], [`SystemRead`], [`TimespecRead`]), and which shape a server
//! version uses ([`PgInstrumentation`]).

use clockscope::ClockSource;
use clockscope::PosixClock;
#[cfg(any(test, feature = "testing"))]
use clockscope::ScriptedClock;
use std::sync::atomic::{AtomicBool, Ordering};

/// How a PostgreSQL version stores an `instr_time`.
pub trait InstrTime: Copy + std::fmt::Debug {
    /// `INSTR_TIME_SET_ZERO`.
    const ZERO: Self;
    /// `INSTR_TIME_IS_ZERO`.
    fn is_zero(&self) -> bool;
    /// `INSTR_TIME_ACCUM_DIFF(self, end, start)`.
    fn accum_diff(&mut self, end: Self, start: Self);
    /// A value folded into the checksum, so no accumulation is optimised away.
    fn fold(&self) -> u64;
}

/// PostgreSQL 16 and later: one int64 (ticks, or ns for the system clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct TicksTime(pub i64);

impl InstrTime for TicksTime {
    const ZERO: Self = TicksTime(0);
    #[inline(always)]
    fn is_zero(&self) -> bool {
        self.0 == 0
    }
    #[inline(always)]
    fn accum_diff(&mut self, end: Self, start: Self) {
        self.0 = self.0.wrapping_add(end.0.wrapping_sub(start.0));
    }
    fn fold(&self) -> u64 {
        self.0 as u64
    }
}

/// PostgreSQL 15 and older: a `struct timespec`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct TimespecTime {
    /// `tv_sec`.
    pub sec: i64,
    /// `tv_nsec`.
    pub nsec: i64,
}

impl InstrTime for TimespecTime {
    const ZERO: Self = TimespecTime { sec: 0, nsec: 0 };
    #[inline(always)]
    fn is_zero(&self) -> bool {
        self.nsec == 0 && self.sec == 0
    }
    #[inline(always)]
    fn accum_diff(&mut self, end: Self, start: Self) {
        const NS_PER_S: i64 = 1_000_000_000;
        self.sec = self.sec.wrapping_add(end.sec.wrapping_sub(start.sec));
        self.nsec = self.nsec.wrapping_add(end.nsec.wrapping_sub(start.nsec));
        // Normalised after each add, as PostgreSQL 15's macro does.
        while self.nsec < 0 {
            self.nsec += NS_PER_S;
            self.sec -= 1;
        }
        while self.nsec >= NS_PER_S {
            self.nsec -= NS_PER_S;
            self.sec += 1;
        }
    }
    fn fold(&self) -> u64 {
        (self.sec as u64).wrapping_mul(1_000_000_007) ^ self.nsec as u64
    }
}

/// One of PostgreSQL's clock reads, returning its `instr_time`.
pub trait PgRead {
    /// The version's `instr_time`.
    type Time: InstrTime;
    /// One read.
    fn read(&self) -> Self::Time;
    /// The clock it reads, as pg_test_timing names it.
    fn name(&self) -> &'static str;
}

/// A clock that can be read as a `struct timespec` (PostgreSQL 15's read).
pub trait TimespecClock: ClockSource {
    /// One reading as (`tv_sec`, `tv_nsec`).
    fn now_timespec(&self) -> (i64, i64);
}

impl TimespecClock for PosixClock {
    #[inline(always)]
    fn now_timespec(&self) -> (i64, i64) {
        PosixClock::now_timespec(self)
    }
}

#[cfg(any(test, feature = "testing"))]
impl TimespecClock for ScriptedClock {
    fn now_timespec(&self) -> (i64, i64) {
        let ns = self.now().raw();
        ((ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64)
    }
}

impl<C: TimespecClock + ?Sized> TimespecClock for &C {
    #[inline(always)]
    fn now_timespec(&self) -> (i64, i64) {
        (**self).now_timespec()
    }
}

/// PostgreSQL 19's `pg_get_ticks_fast` (EXPLAIN's read): the counter's fast
/// read when `timing_tsc_enabled`, else the system clock, the flag loaded
/// from memory at every read as PostgreSQL's global is.
pub struct FastRead<T, S> {
    tsc_enabled: AtomicBool,
    tsc: T,
    system: S,
}

impl<T: ClockSource, S: ClockSource> FastRead<T, S> {
    /// `tsc_enabled` is `timing_tsc_enabled`: true for `timing_clock_source = tsc`.
    pub fn new(tsc: T, system: S, tsc_enabled: bool) -> Self {
        FastRead {
            tsc_enabled: AtomicBool::new(tsc_enabled),
            tsc,
            system,
        }
    }
}

impl<T: ClockSource, S: ClockSource> PgRead for FastRead<T, S> {
    type Time = TicksTime;
    #[inline(always)]
    fn read(&self) -> TicksTime {
        if self.tsc_enabled.load(Ordering::Relaxed) {
            TicksTime(self.tsc.now().raw() as i64)
        } else {
            TicksTime(self.system.now().raw() as i64)
        }
    }
    fn name(&self) -> &'static str {
        if self.tsc_enabled.load(Ordering::Relaxed) {
            self.tsc.name()
        } else {
            self.system.name()
        }
    }
}

/// PostgreSQL 16-18's read: the system clock as int64 ns.
pub struct SystemRead<S>(pub S);

impl<S: ClockSource> PgRead for SystemRead<S> {
    type Time = TicksTime;
    #[inline(always)]
    fn read(&self) -> TicksTime {
        TicksTime(self.0.now().raw() as i64)
    }
    fn name(&self) -> &'static str {
        self.0.name()
    }
}

/// PostgreSQL 15's read: the system clock into a `struct timespec`.
pub struct TimespecRead<S>(pub S);

impl<S: TimespecClock> PgRead for TimespecRead<S> {
    type Time = TimespecTime;
    #[inline(always)]
    fn read(&self) -> TimespecTime {
        let (sec, nsec) = self.0.now_timespec();
        TimespecTime { sec, nsec }
    }
    fn name(&self) -> &'static str {
        self.0.name()
    }
}

/// The instrumentation's shape per PostgreSQL version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PgInstrumentation {
    /// PostgreSQL 19: int64 ticks, the fast read (`tsc`: RDTSC, else the
    /// system clock behind the `timing_tsc_enabled` branch), start and stop
    /// inlined into `ExecProcNodeInstr`.
    Pg19 {
        /// Whether `timing_tsc_enabled` (RDTSC) or the system clock.
        tsc: bool,
    },
    /// PostgreSQL 16-18: int64 ns from clock_gettime, start and stop called.
    Pg16To18,
    /// PostgreSQL 15 and older: a `struct timespec`, start and stop called.
    Pg15OrOlder,
}

impl PgInstrumentation {
    /// The shape of a server with `server_version_num`, reading the TSC or not.
    pub fn for_server(server_version_num: u32, tsc: bool) -> PgInstrumentation {
        match server_version_num {
            n if n >= 190_000 => PgInstrumentation::Pg19 { tsc },
            n if n >= 160_000 => PgInstrumentation::Pg16To18,
            _ => PgInstrumentation::Pg15OrOlder,
        }
    }

    /// For the report: what is modelled.
    pub fn describe(self) -> &'static str {
        match self {
            PgInstrumentation::Pg19 { tsc: true } => {
                "PostgreSQL 19: InstrStartNode/InstrStopNode inlined, int64 ticks, RDTSC behind the timing_tsc_enabled branch"
            }
            PgInstrumentation::Pg19 { tsc: false } => {
                "PostgreSQL 19: InstrStartNode/InstrStopNode inlined, int64 ticks, clock_gettime behind the \
                 timing_tsc_enabled branch"
            }
            PgInstrumentation::Pg16To18 => {
                "PostgreSQL 16-18: InstrStartNode/InstrStopNode called, int64 ns from clock_gettime"
            }
            PgInstrumentation::Pg15OrOlder => {
                "PostgreSQL 15 and older: InstrStartNode/InstrStopNode called, struct timespec from clock_gettime"
            }
        }
    }

    pub(super) fn inline(self) -> bool {
        matches!(self, PgInstrumentation::Pg19 { .. })
    }
}

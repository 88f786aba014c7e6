//! What EXPLAIN ANALYZE's TIMING ON adds per row per plan node, measured
//! on this machine with a model of PostgreSQL's own per-row instrumentation.
//!
//! # What PostgreSQL does per row
//!
//! Under EXPLAIN ANALYZE every plan node's `ExecProcNode` is
//! `ExecProcNodeInstr`, with TIMING ON and with TIMING OFF: it calls
//! `InstrStartNode`, the node's real `ExecProcNode` through a function
//! pointer, then `InstrStopNode`, which counts the row. TIMING ON sets
//! `need_timer`, and then, per row per node (`src/backend/executor/instrument.c`
//! and `src/include/portability/instr_time.h` of PostgreSQL 19):
//!
//! ```text
//! InstrStart:  if need_timer: if starttime != 0 -> error, else starttime = read()
//! InstrStop:   tuplecount += 1
//!              if need_timer: if starttime == 0 -> error
//!                             end = read(); counter += end - starttime; starttime = 0
//!              first-tuple bookkeeping (running, firsttuple)
//! read():      PostgreSQL 19, pg_get_ticks_fast: if timing_tsc_enabled (a global,
//!              reloaded) RDTSC, else clock_gettime(CLOCK_MONOTONIC) as sec * 1e9 + nsec
//!              PostgreSQL 16-18: clock_gettime as int64 ns
//!              PostgreSQL <= 15: clock_gettime into a struct timespec (two-field zero
//!              checks, accumulate with normalisation loops)
//! ```
//!
//! PostgreSQL 19 inlines InstrStartNode / InstrStopNode into
//! `ExecProcNodeInstr`; before 19 they are calls.
//!
//! # The model
//!
//! The same structure in Rust ([`PgInstrumentation`] picks the version's
//! shape and [`PgRead`] the read): an aggregate calls the node's
//! `exec_proc_node` through a function pointer once per row (the
//! instrumented wrapper), which calls the scan through a second pointer. The
//! scan walks 32-byte heap-like tuples in order (line after line, page after
//! page), checks their hint bits, stores the tuple in a slot and runs a few
//! expression-like steps through a table of function pointers; the aggregate
//! calls its transition function through a pointer and runs as many steps.
//! TIMING ON and OFF are one function with `need_timer` read from memory, as
//! in PostgreSQL, so the difference is exactly what the timer adds: the
//! reads, the branches, the store and reload of `starttime`, the accumulate
//! and the reset, and whatever the reads cost the work around them (a read
//! that out-of-order execution overlaps with the scan costs less than one in
//! a tight loop; an ordered read, such as the vDSO's, waits for it).
//!
//! # Measurement
//!
//! ```text
//! round   = rows_per_round rows (about ROUND_NS of work), timed by the timer's ordered reads
//! pair    = one TIMING ON round and one TIMING OFF round, back to back, order alternating
//! pairs   run until the budget (calibration included) would be passed, Ctrl-C, or MAX_PAIRS
//! d_i     = (ON_i - OFF_i) / rows_per_round                    ns per row, per pair
//! median  = median of d_i; interval = its 95% order-statistics interval (clockscope::stats)
//! resolved  = at least 6 pairs and the interval's low end > 0
//! added_ns_per_row = median when resolved, else none: "not resolved" (the ON-OFF
//!             difference is inside the noise, or too few pairs to tell)
//! ```
//!
//! One method: no fallback to another number when this one cannot resolve.
//! The median of paired differences means a preempted round decides nothing
//! unless half the rounds were.
//!
//! # Work per row
//!
//! A fixed, small amount: [`DEFAULT_WORK_STEPS`] expression steps per row
//! (half in the scan, half in the aggregate), not calibrated to the query's
//! own time per row. PostgreSQL's TIMING ON cost per row does not shrink
//! when a row does more work (PostgreSQL 19 on the AMD EPYC guest: count(*)
//! at 38 ns per row, sum() of an expression at 77 ns, a filtered count at
//! 130-217 ns: +8.6 to +11.2 ns with the TSC, +43.5 to +47.7 ns with the
//! system clock; bench/README.md), while the model's reads hide behind its
//! own work the more of it there is. So the model keeps the little work the
//! executor does around the instrumented call itself.
//!
//! # Limits
//!
//! - It resembles the executor; it is not the executor: how much of a read
//!   the work hides depends on the work. Measured against real servers on an
//!   AMD EPYC guest (bench/README.md, "EXPLAIN against real servers").
//! - It measures this machine; a remote server's CPU may differ.
//! - It times one node per row; more timed nodes per row add proportionally.

use crate::clock::posix::PosixClock;
use crate::clock::scripted::ScriptedClock;
use crate::clock::ClockSource;
use crate::stats::{self, Interval};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes of one tuple: a heap tuple of one int column (23-byte header padded
/// to 24, 4-byte datum), MAXALIGNed to 8 -> 32.
pub const TUPLE_BYTES: usize = 32;
/// Tuples in the default table: 65,536 x 32 bytes = 2 MiB, walked in order
/// and wrapped.
pub const TABLE_TUPLES: usize = 65_536;
/// Tuples per page: an 8 kB heap page of one-int4 rows holds 226.
pub const TUPLES_PER_PAGE: u32 = 226;
/// Work per round, ns: short enough that a preemption or a timer interrupt
/// spoils few rounds, long enough that the round's two timer reads vanish.
pub const ROUND_NS: f64 = 250_000.0;
/// The most rows per round.
pub const MAX_ROWS_PER_ROUND: u64 = 100_000;
/// The fewest rows per round.
pub const MIN_ROWS_PER_ROUND: u64 = 64;
/// The most pairs kept (memory bound; far beyond what a budget allows).
pub const MAX_PAIRS: u32 = 4_000;
/// Expression steps per row (see "Work per row" in the module docs): chosen
/// on the AMD EPYC guest so the model's TIMING ON cost matched PostgreSQL 19's
/// and 15's there (bench/README.md, "EXPLAIN against real servers").
pub const DEFAULT_WORK_STEPS: u32 = 6;
/// The most expression steps a row can run.
pub const MAX_WORK_STEPS: u32 = 512;
/// Rows of the round that sizes the rounds.
const SIZING_ROWS: u64 = 2_000;
/// Clock reads per row per timed node (InstrStartNode + InstrStopNode).
pub const READS_PER_ROW: f64 = 2.0;

// ---------------------------------------------------------------------------
// instr_time and the reads

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
    pub sec: i64,
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
    type Time: InstrTime;
    /// One read.
    fn read(&self) -> Self::Time;
    /// The clock it reads, as pg_test_timing names it.
    fn name(&self) -> &'static str;
}

/// A clock that can be read as a `struct timespec` (PostgreSQL 15's read).
pub trait TimespecClock: ClockSource {
    fn now_timespec(&self) -> (i64, i64);
}

impl TimespecClock for PosixClock {
    #[inline(always)]
    fn now_timespec(&self) -> (i64, i64) {
        PosixClock::now_timespec(self)
    }
}

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
    Pg19 { tsc: bool },
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

    fn inline(self) -> bool {
        matches!(self, PgInstrumentation::Pg19 { .. })
    }
}

// ---------------------------------------------------------------------------
// The executor-like structures

/// Infomask bit: the inserting transaction is known committed (a hint bit).
const XMIN_COMMITTED: u16 = 0x0100;
/// Infomask bit: the deleting transaction is invalid (the row is live).
const XMAX_INVALID: u16 = 0x0800;

/// One heap-like tuple: header fields and one datum.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
struct HeapTuple {
    xmin: u32,
    xmax: u32,
    cid: u32,
    ctid: [u16; 3],
    infomask2: u16,
    infomask: u16,
    hoff: u8,
    _pad: u8,
    datum: i32,
}

const _: () = assert!(std::mem::size_of::<HeapTuple>() == TUPLE_BYTES);

/// The tuples the scan walks, filled once with pseudo-random data (fixed seed).
pub struct Table {
    tuples: Vec<HeapTuple>,
}

impl Table {
    /// A table of [`TABLE_TUPLES`] tuples.
    pub fn new() -> Table {
        Table::with_tuples(TABLE_TUPLES)
    }

    /// A table of `n` tuples (at least 1).
    pub fn with_tuples(n: usize) -> Table {
        // xorshift64: a fixed, cheap pseudo-random fill (no crate needed for
        // filler data).
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let tuples = (0..n.max(1))
            .map(|i| {
                let r = next();
                HeapTuple {
                    xmin: 1000 + (r & 0xFF) as u32,
                    xmax: 0,
                    cid: 0,
                    ctid: [(i >> 16) as u16, i as u16, 1],
                    infomask2: 1,
                    // Every row committed and live, as after the first scan
                    // set the hint bits (explain warms up once).
                    infomask: XMIN_COMMITTED | XMAX_INVALID | ((r >> 32) as u16 & 0x0003),
                    hoff: 24,
                    _pad: 0,
                    datum: (r >> 8) as i32,
                }
            })
            .collect();
        Table { tuples }
    }
}

impl Default for Table {
    fn default() -> Self {
        Table::new()
    }
}

/// A tuple table slot: the stored tuple and its deformed values.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct Slot {
    flags: u32,
    nvalid: u32,
    tuple: usize,
    values: [i64; 4],
    isnull: [bool; 4],
}

/// An expression's scratch state (ExprState's resvalue/resnull and a few
/// registers).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct ExprState {
    resvalue: i64,
    resnull: bool,
    regs: [i64; 4],
}

/// One expression step, called through a pointer (the interpreter's
/// dispatch).
type StepFn = fn(&mut ExprState, &Slot);

#[inline(never)]
fn step_fetch(e: &mut ExprState, s: &Slot) {
    e.regs[0] = s.values[0];
    e.resnull = s.isnull[0];
}

#[inline(never)]
fn step_null_check(e: &mut ExprState, s: &Slot) {
    if e.resnull || s.flags == 0 {
        e.regs[1] = 0;
    } else {
        e.regs[1] = e.regs[0].wrapping_add(1);
    }
}

#[inline(never)]
fn step_compare(e: &mut ExprState, _s: &Slot) {
    e.regs[2] = (e.regs[1] > e.regs[3]) as i64;
    e.regs[3] = e.regs[3].wrapping_add(e.regs[2]);
}

#[inline(never)]
fn step_assign(e: &mut ExprState, s: &Slot) {
    e.resvalue = e.resvalue.wrapping_add(e.regs[1] ^ s.nvalid as i64);
}

/// The steps in their fixed order (a compiled expression runs the same
/// steps every row: its dispatch is predictable).
const PROGRAM: [StepFn; 4] = [step_fetch, step_null_check, step_compare, step_assign];

/// A plan node's instrumentation (NodeInstrumentation's fields the per-row
/// path touches).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct NodeInstr<T> {
    need_timer: bool,
    need_bufusage: bool,
    need_walusage: bool,
    running: bool,
    async_mode: bool,
    starttime: T,
    counter: T,
    firsttuple: T,
    tuplecount: f64,
    /// The `elog(ERROR, ...)` branches taken (never, unless the model is wrong).
    errors: u32,
}

impl<T: InstrTime> NodeInstr<T> {
    fn new() -> Self {
        NodeInstr {
            need_timer: false,
            need_bufusage: false,
            need_walusage: false,
            running: false,
            async_mode: false,
            starttime: T::ZERO,
            counter: T::ZERO,
            firsttuple: T::ZERO,
            tuplecount: 0.0,
            errors: 0,
        }
    }
}

/// The `elog(ERROR, ...)` of a start twice in a row or a stop without start.
#[cold]
#[inline(never)]
fn instr_error<T>(instr: &mut NodeInstr<T>) {
    instr.errors += 1;
}

/// InstrStartNode with the timer's branch.
#[inline(always)]
fn instr_start<R: PgRead>(instr: &mut NodeInstr<R::Time>, read: &R) {
    if instr.need_timer {
        if !instr.starttime.is_zero() {
            instr_error(instr);
        } else {
            instr.starttime = read.read();
        }
    }
    if instr.need_bufusage || instr.need_walusage {
        instr_error(instr);
    }
}

/// InstrStopNode: count the row, the timer's branch, the first-tuple
/// bookkeeping.
#[inline(always)]
fn instr_stop<R: PgRead>(instr: &mut NodeInstr<R::Time>, read: &R, ntuples: f64) {
    let save_tuplecount = instr.tuplecount;
    instr.tuplecount += ntuples;
    if instr.need_timer {
        if instr.starttime.is_zero() {
            instr_error(instr);
        }
        let end = read.read();
        let start = instr.starttime;
        instr.counter.accum_diff(end, start);
        instr.starttime = R::Time::ZERO;
    }
    if instr.need_bufusage || instr.need_walusage {
        instr_error(instr);
    }
    if !instr.running {
        instr.running = true;
        instr.firsttuple = instr.counter;
    } else if instr.async_mode && save_tuplecount < 1.0 {
        instr.firsttuple = instr.counter;
    }
}

/// InstrStartNode as a call (PostgreSQL before 19).
#[inline(never)]
fn instr_start_call<R: PgRead>(instr: &mut NodeInstr<R::Time>, read: &R) {
    instr_start(instr, read)
}

/// InstrStopNode as a call (PostgreSQL before 19).
#[inline(never)]
fn instr_stop_call<R: PgRead>(instr: &mut NodeInstr<R::Time>, read: &R, ntuples: f64) {
    instr_stop(instr, read, ntuples)
}

/// A plan node's `ExecProcNode`.
type ExecFn<'t, R> = for<'n> fn(&'n mut ScanNode<'t, R>) -> Option<&'n Slot>;

/// The sequential scan node.
#[repr(C)]
struct ScanNode<'t, R: PgRead> {
    /// What the parent calls: the instrumented wrapper.
    exec_proc_node: ExecFn<'t, R>,
    /// The node's own function.
    exec_proc_node_real: ExecFn<'t, R>,
    instr: NodeInstr<R::Time>,
    read: &'t R,
    tuples: &'t [HeapTuple],
    /// Next tuple, and tuples left on the current page.
    pos: usize,
    page_left: u32,
    pages: u64,
    snapshot_xmax: u32,
    invisible: u64,
    program: &'t [StepFn],
    steps: usize,
    expr: ExprState,
    slot: Slot,
}

/// The scan: next tuple (page by page), visibility from its hint bits, into
/// the slot, then its share of the expression steps.
#[inline(never)]
fn seq_next<'n, R: PgRead>(node: &'n mut ScanNode<'_, R>) -> Option<&'n Slot> {
    if node.page_left == 0 {
        // The next page: a new buffer, its line pointers.
        node.page_left = TUPLES_PER_PAGE;
        node.pages += 1;
    }
    node.page_left -= 1;
    let pos = node.pos;
    let t = &node.tuples[pos];
    node.pos = if pos + 1 == node.tuples.len() { 0 } else { pos + 1 };
    let visible = t.infomask & XMIN_COMMITTED != 0 && t.infomask & XMAX_INVALID != 0 && t.xmin < node.snapshot_xmax;
    if !visible {
        node.invisible += 1;
    }
    node.slot.tuple = pos;
    node.slot.nvalid = u32::from(t.hoff != 0);
    node.slot.flags = u32::from(visible);
    node.slot.values[0] = i64::from(t.datum);
    node.slot.isnull[0] = t.infomask & 0x0001 != 0 && t.infomask2 == 0;
    let program = node.program;
    for step in &program[..node.steps] {
        step(&mut node.expr, &node.slot);
    }
    Some(&node.slot)
}

/// ExecProcNodeInstr: start, the real node through its pointer, stop.
#[inline(never)]
fn exec_instr<'n, R: PgRead, const INLINE: bool>(node: &'n mut ScanNode<'_, R>) -> Option<&'n Slot> {
    if INLINE {
        instr_start(&mut node.instr, node.read);
    } else {
        instr_start_call(&mut node.instr, node.read);
    }
    let real = node.exec_proc_node_real;
    let got = real(node).is_some();
    let ntuples = if got { 1.0 } else { 0.0 };
    if INLINE {
        instr_stop(&mut node.instr, node.read, ntuples);
    } else {
        instr_stop_call(&mut node.instr, node.read, ntuples);
    }
    if got {
        Some(&node.slot)
    } else {
        None
    }
}

/// The aggregate's state and its transition function (count(*)'s int8inc).
#[repr(C)]
struct AggState<'t> {
    trans: fn(&mut AggState<'t>, &Slot),
    count: i64,
    program: &'t [StepFn],
    steps: usize,
    expr: ExprState,
}

#[inline(never)]
fn count_trans(agg: &mut AggState<'_>, slot: &Slot) {
    if slot.flags != 0 {
        agg.count = agg.count.wrapping_add(1);
    }
    let program = agg.program;
    for step in &program[..agg.steps] {
        step(&mut agg.expr, slot);
    }
}

/// `rows` rows: the parent asks the node for a row through its pointer and
/// advances the aggregate.
#[inline(never)]
fn agg_rows<R: PgRead>(node: &mut ScanNode<'_, R>, agg: &mut AggState<'_>, rows: u64) {
    for _ in 0..rows {
        let exec = node.exec_proc_node;
        let Some(slot) = exec(node) else { break };
        (agg.trans)(agg, slot);
    }
}

/// One node and one aggregate, ready to run rounds. Page-aligned and on the
/// heap (as PostgreSQL's palloc'd plan state is), so its layout within a page
/// is the same in every process, whatever the stack's randomisation.
#[repr(C, align(4096))]
struct Executor<'t, R: PgRead> {
    node: ScanNode<'t, R>,
    agg: AggState<'t>,
}

impl<'t, R: PgRead> Executor<'t, R> {
    fn new(read: &'t R, table: &'t Table, inline: bool) -> Self {
        let exec: ExecFn<'t, R> = if inline {
            exec_instr::<R, true>
        } else {
            exec_instr::<R, false>
        };
        Executor {
            node: ScanNode {
                exec_proc_node: exec,
                exec_proc_node_real: seq_next::<R>,
                instr: NodeInstr::new(),
                read,
                tuples: &table.tuples,
                pos: 0,
                page_left: 0,
                pages: 0,
                snapshot_xmax: u32::MAX,
                invisible: 0,
                program: &PROGRAM_STEPS,
                steps: 0,
                expr: ExprState::default(),
                slot: Slot::default(),
            },
            agg: AggState {
                trans: count_trans,
                count: 0,
                program: &PROGRAM_STEPS,
                steps: 0,
                expr: ExprState::default(),
            },
        }
    }

    /// `steps` expression steps per row: half in the scan (timed), half in
    /// the aggregate (between the node's stop and its next start).
    fn set_steps(&mut self, steps: u32) {
        let steps = steps.min(MAX_WORK_STEPS) as usize;
        self.node.steps = steps.div_ceil(2);
        self.agg.steps = steps / 2;
    }

    /// One round of `rows` rows, TIMING ON or OFF; ns from start to end.
    fn round<C: ClockSource>(&mut self, timer: &C, rows: u64, timing: bool) -> f64 {
        self.node.instr.need_timer = black_box(timing);
        self.node.instr.starttime = R::Time::ZERO;
        let t0 = timer.now_ordered();
        agg_rows(&mut self.node, &mut self.agg, rows);
        let t1 = timer.now_ordered();
        black_box((self.agg.count, self.node.instr.counter.fold(), self.agg.expr.resvalue));
        let d = t1.delta_since(t0);
        let ns = timer.scale().ticks_to_ns(d.unsigned_abs()) as f64;
        if d < 0 {
            -ns
        } else {
            ns
        }
    }
}

/// The expression steps available to a row: [`MAX_WORK_STEPS`] of the
/// fixed program, repeated.
static PROGRAM_STEPS: [StepFn; MAX_WORK_STEPS as usize] = {
    let mut p: [StepFn; MAX_WORK_STEPS as usize] = [step_fetch as StepFn; MAX_WORK_STEPS as usize];
    let mut i = 0;
    while i < p.len() {
        p[i] = PROGRAM[i % PROGRAM.len()];
        i += 1;
    }
    p
};

// ---------------------------------------------------------------------------
// Measuring

/// One pair of rounds, ns from start to end of each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoundPair {
    pub timing_on_ns: f64,
    pub timing_off_ns: f64,
}

/// What ended the pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Another pair would have passed the time budget.
    Budget,
    /// [`MAX_PAIRS`] pairs ran.
    MaxPairs,
    /// `keep_going` said stop (Ctrl-C).
    Interrupted,
}

/// The model's shape for one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelConfig {
    pub instrumentation: PgInstrumentation,
    /// Expression steps per row ([`DEFAULT_WORK_STEPS`]).
    pub work_steps: u32,
    /// The most time the whole measurement may take, ns.
    pub budget_ns: u64,
    /// Rows per round; `None`: [`ROUND_NS`] of work, sized by a first round.
    pub rows_per_round: Option<u64>,
}

impl ModelConfig {
    /// A config for `instrumentation` with the default work and a budget of
    /// `budget_ns`.
    pub fn new(instrumentation: PgInstrumentation, budget_ns: u64) -> Self {
        ModelConfig {
            instrumentation,
            work_steps: DEFAULT_WORK_STEPS,
            budget_ns,
            rows_per_round: None,
        }
    }
}

/// Rows per round for `ns_per_row` of TIMING OFF work: [`ROUND_NS`] of
/// work, within the MIN/MAX constants ([`MAX_ROWS_PER_ROUND`] when the
/// time per row is not a positive number).
pub fn rows_for_round(ns_per_row: f64) -> u64 {
    if !(ns_per_row.is_finite() && ns_per_row > 0.0) {
        return MAX_ROWS_PER_ROUND;
    }
    ((ROUND_NS / ns_per_row) as u64).clamp(MIN_ROWS_PER_ROUND, MAX_ROWS_PER_ROUND)
}

/// What TIMING ON added per row in the model.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ExecutorLoopCost {
    /// The clock read, as pg_test_timing names it.
    pub clock: String,
    /// The instrumentation modelled ([`PgInstrumentation::describe`]).
    pub instrumentation: String,
    /// The headline, ns per row per timed node: the median paired
    /// difference when resolved, else null ("not resolved").
    pub added_ns_per_row: Option<f64>,
    /// `added_ns_per_row / 2`.
    pub added_ns_per_read: Option<f64>,
    /// The median paired difference per row, ns, resolved or not.
    pub median_ns_per_row: f64,
    /// Its 95% interval, ns per row; null when not available (fewer than 6
    /// pairs, or every pair equal).
    pub interval: Option<Interval>,
    /// The interval in words: "95% interval 5.1 to 6.3 ns (+-11%)" or
    /// "interval not available (n=5)".
    pub interval_text: String,
    /// Whether the difference is resolved above the noise.
    pub resolved: bool,
    /// "resolved", or why not.
    pub status: String,
    /// Smallest and largest paired difference per row, ns.
    pub added_ns_per_row_min: f64,
    pub added_ns_per_row_max: f64,
    /// Median TIMING OFF round per row: the model's work, ns.
    pub work_ns_per_row: f64,
    /// Expression steps per row ([`DEFAULT_WORK_STEPS`]).
    pub work_steps: u32,
    pub rows_per_round: u64,
    /// Pairs measured.
    pub pairs: u32,
    pub stopped_by: StopReason,
    /// The time budget and the time taken (calibration included), ns.
    pub budget_ns: u64,
    pub elapsed_ns: u64,
    /// How the pairs were taken: "one run of 150 ms", or "12 slices (...),
    /// one before each of the server's TIMING OFF/ON pairs, ...".
    pub sampling: String,
}

impl ExecutorLoopCost {
    /// A resolved result of the shape the model reports, for tests and
    /// examples that need one without measuring: `added_ns_per_row` with an
    /// interval of +-10% over 40 pairs of 12,500 rows of 20 ns of work.
    pub fn recorded(clock: &str, added_ns_per_row: f64) -> ExecutorLoopCost {
        let d = added_ns_per_row.abs() * 0.1;
        let interval = Interval {
            low: added_ns_per_row - d,
            high: added_ns_per_row + d,
            coverage: 0.96,
        };
        ExecutorLoopCost {
            clock: clock.into(),
            instrumentation: PgInstrumentation::Pg19 { tsc: clock == "RDTSC" }.describe().into(),
            added_ns_per_row: Some(added_ns_per_row),
            added_ns_per_read: Some(added_ns_per_row / READS_PER_ROW),
            median_ns_per_row: added_ns_per_row,
            interval: Some(interval),
            interval_text: interval_text(added_ns_per_row, Some(interval), 40),
            resolved: true,
            status: "resolved".into(),
            added_ns_per_row_min: added_ns_per_row - 2.0 * d,
            added_ns_per_row_max: added_ns_per_row + 2.0 * d,
            work_ns_per_row: 20.0,
            work_steps: DEFAULT_WORK_STEPS,
            rows_per_round: 12_500,
            pairs: 40,
            stopped_by: StopReason::Budget,
            budget_ns: 150_000_000,
            elapsed_ns: 149_000_000,
            sampling: sampling_text(1, 149_000_000),
        }
    }

    /// The headline in words: "+6.1 ns" or "not resolved".
    pub fn headline(&self) -> String {
        match self.added_ns_per_row {
            Some(v) => format!("{v:+.1} ns"),
            None => "not resolved".into(),
        }
    }
}

/// "95% interval 5.1 to 6.3 ns (+-11%)", or "interval not available (n=..)"
/// when there is none or it has no width.
pub fn interval_text(median: f64, interval: Option<Interval>, n: usize) -> String {
    match interval {
        Some(i) if !i.is_degenerate() => {
            let rel = if median != 0.0 {
                format!(", +-{:.1}%", i.half_width(median) * 100.0)
            } else {
                String::new()
            };
            format!("95% interval {:.1} to {:.1} ns{rel}", i.low, i.high)
        }
        Some(_) => format!("interval not available (n={n}, every pair equal)"),
        None => format!("interval not available (n={n})"),
    }
}

/// The cost from measured pairs (see the module docs); `None` without pairs
/// or rows.
pub fn cost_from_pairs(
    clock: &str,
    pairs: &[RoundPair],
    rows_per_round: u64,
    instrumentation: PgInstrumentation,
) -> Option<ExecutorLoopCost> {
    if pairs.is_empty() || rows_per_round == 0 {
        return None;
    }
    let rows = rows_per_round as f64;
    let mut diffs: Vec<f64> = pairs
        .iter()
        .map(|p| (p.timing_on_ns - p.timing_off_ns) / rows)
        .collect();
    diffs.sort_by(f64::total_cmp);
    let work: Vec<f64> = pairs.iter().map(|p| p.timing_off_ns / rows).collect();
    let median = stats::median(&diffs)?;
    let raw_interval = stats::median_interval(&diffs, stats::CONFIDENCE);
    let n = diffs.len();
    let (resolved, status) = match raw_interval {
        None => (
            false,
            format!(
                "not resolved: interval not available (n={n}; an interval needs {} pairs)",
                stats::MIN_SAMPLES_FOR_INTERVAL
            ),
        ),
        Some(i) if i.low <= 0.0 => (
            false,
            format!(
                "not resolved: the 95% interval of the difference, {:.1} to {:.1} ns per row, includes 0: \
                 TIMING ON's cost is inside the noise",
                i.low, i.high
            ),
        ),
        Some(_) => (true, "resolved".to_string()),
    };
    let interval = raw_interval.filter(|i| !i.is_degenerate());
    Some(ExecutorLoopCost {
        clock: clock.to_string(),
        instrumentation: instrumentation.describe().to_string(),
        added_ns_per_row: resolved.then_some(median),
        added_ns_per_read: resolved.then_some(median / READS_PER_ROW),
        median_ns_per_row: median,
        interval,
        interval_text: interval_text(median, raw_interval, n),
        resolved,
        status,
        added_ns_per_row_min: diffs[0],
        added_ns_per_row_max: diffs[n - 1],
        work_ns_per_row: stats::median(&work).unwrap_or(f64::NAN),
        work_steps: 0,
        rows_per_round,
        pairs: n as u32,
        stopped_by: StopReason::Budget,
        budget_ns: 0,
        elapsed_ns: 0,
        sampling: String::new(),
    })
}

/// The pairs of one model run, before they become a cost.
#[derive(Clone, Debug, PartialEq)]
pub struct PairsRun {
    /// The clock read, as pg_test_timing names it.
    pub clock: &'static str,
    pub pairs: Vec<RoundPair>,
    pub rows_per_round: u64,
    pub stopped_by: StopReason,
    /// Time taken, calibration included, ns.
    pub elapsed_ns: u64,
}

/// Runs the model's pairs with `read` and `timer` (see [`measure_model`]);
/// `None` when stopped before the first round.
pub fn run_pairs<R: PgRead, C: ClockSource>(
    read: &R,
    timer: &C,
    table: &Table,
    config: ModelConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<PairsRun> {
    let start = timer.now_ordered();
    let elapsed_ns = || {
        let d = timer.now_ordered().delta_since(start).max(0) as u64;
        timer.scale().ticks_to_ns(d)
    };
    let mut exec = Box::new(Executor::new(read, table, config.instrumentation.inline()));
    exec.set_steps(config.work_steps.min(MAX_WORK_STEPS));
    // A first round warms up and, unless given, sizes the rounds.
    let sizing = exec.round(timer, SIZING_ROWS, false) / SIZING_ROWS as f64;
    let rows = config.rows_per_round.unwrap_or_else(|| rows_for_round(sizing)).max(1);
    let mut pairs = Vec::new();
    let mut stopped_by = StopReason::MaxPairs;
    let mut last_pair_ns = 0u64;
    for i in 0..MAX_PAIRS {
        let before = elapsed_ns();
        if before.saturating_add(last_pair_ns) > config.budget_ns {
            stopped_by = StopReason::Budget;
            break;
        }
        if !keep_going() {
            stopped_by = StopReason::Interrupted;
            break;
        }
        let (timing_on_ns, timing_off_ns) = if i % 2 == 0 {
            let on = exec.round(timer, rows, true);
            (on, exec.round(timer, rows, false))
        } else {
            let off = exec.round(timer, rows, false);
            (exec.round(timer, rows, true), off)
        };
        pairs.push(RoundPair {
            timing_on_ns,
            timing_off_ns,
        });
        last_pair_ns = elapsed_ns().saturating_sub(before);
    }
    debug_assert_eq!(
        exec.node.instr.errors, 0,
        "the model's instrumentation took an error branch"
    );
    Some(PairsRun {
        clock: read.name(),
        pairs,
        rows_per_round: rows,
        stopped_by,
        elapsed_ns: elapsed_ns(),
    })
}

/// Runs the model with `read` (whose time representation and clock are the
/// version's) and `timer` for the rounds, within `config.budget_ns`, asking
/// `keep_going` before each pair. `None` when stopped before a pair.
pub fn measure_model<R: PgRead, C: ClockSource>(
    read: &R,
    timer: &C,
    table: &Table,
    config: ModelConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<ExecutorLoopCost> {
    let run = run_pairs(read, timer, table, config, keep_going)?;
    let mut cost = cost_from_pairs(run.clock, &run.pairs, run.rows_per_round, config.instrumentation)?;
    cost.work_steps = config.work_steps.min(MAX_WORK_STEPS);
    cost.stopped_by = run.stopped_by;
    cost.budget_ns = config.budget_ns;
    cost.elapsed_ns = run.elapsed_ns;
    cost.sampling = sampling_text(1, run.elapsed_ns);
    Some(cost)
}

/// [`ExecutorLoopCost::sampling`] for `slices` runs taking `elapsed_ns`.
pub fn sampling_text(slices: u32, elapsed_ns: u64) -> String {
    let ms = elapsed_ns as f64 / 1e6;
    if slices <= 1 {
        format!("one run of {ms:.0} ms")
    } else {
        format!(
            "{slices} slices ({ms:.0} ms in all), one before each of the server's TIMING OFF/ON pairs, so the model \
             and the server sample the same time"
        )
    }
}

/// The model for `instrumentation` on this machine's clocks: the system clock
/// (`clock_gettime(CLOCK_MONOTONIC)`) and, for PostgreSQL 19 with the TSC,
/// `tsc` (the counter's fast read), rounds timed by the system clock.
/// `None` when stopped before a pair, or when the TSC is asked for and
/// `tsc` is `None`.
pub fn measure_on_this_machine<T: ClockSource>(
    tsc: Option<&T>,
    table: &Table,
    config: ModelConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<ExecutorLoopCost> {
    let run = pairs_on_this_machine(tsc, table, config, keep_going)?;
    let mut cost = cost_from_pairs(run.clock, &run.pairs, run.rows_per_round, config.instrumentation)?;
    cost.work_steps = config.work_steps.min(MAX_WORK_STEPS);
    cost.stopped_by = run.stopped_by;
    cost.budget_ns = config.budget_ns;
    cost.elapsed_ns = run.elapsed_ns;
    cost.sampling = sampling_text(1, run.elapsed_ns);
    Some(cost)
}

/// [`run_pairs`] on this machine's clocks (as [`measure_on_this_machine`]).
pub fn pairs_on_this_machine<T: ClockSource>(
    tsc: Option<&T>,
    table: &Table,
    config: ModelConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<PairsRun> {
    let system = PosixClock::monotonic();
    let timer = PosixClock::monotonic();
    match config.instrumentation {
        PgInstrumentation::Pg19 { tsc: true } => {
            let read = FastRead::new(tsc?, system, true);
            run_pairs(&read, &timer, table, config, keep_going)
        }
        PgInstrumentation::Pg19 { tsc: false } => {
            let read = FastRead::new(system, system, false);
            run_pairs(&read, &timer, table, config, keep_going)
        }
        PgInstrumentation::Pg16To18 => run_pairs(&SystemRead(system), &timer, table, config, keep_going),
        PgInstrumentation::Pg15OrOlder => run_pairs(&TimespecRead(system), &timer, table, config, keep_going),
    }
}

/// The model sampled in slices, each a short run between other work (the
/// server's EXPLAIN pairs), all with the first slice's rows per round so
/// their pairs pool into one median. On a machine whose speed changes over
/// seconds (bench/README.md: the AMD EPYC guest's two speeds), slices spread
/// over the server's runs see the speeds the server's runs saw, where one
/// run of a few hundred ms sees only the speed of its moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Slices {
    pub config: ModelConfig,
    pub clock: Option<&'static str>,
    pub pairs: Vec<RoundPair>,
    /// Fixed by the first slice.
    pub rows_per_round: Option<u64>,
    pub slices: u32,
    pub elapsed_ns: u64,
    pub stopped_by: StopReason,
}

impl Slices {
    /// No slices yet; each slice runs with `config` (its budget is the
    /// slice's).
    pub fn new(config: ModelConfig) -> Slices {
        Slices {
            config,
            clock: None,
            pairs: Vec::new(),
            rows_per_round: None,
            slices: 0,
            elapsed_ns: 0,
            stopped_by: StopReason::Budget,
        }
    }

    /// Whether another slice may run ([`MAX_PAIRS`] in all).
    pub fn wants_more(&self) -> bool {
        self.pairs.len() < MAX_PAIRS as usize
    }

    /// Adds one slice's run.
    pub fn add(&mut self, run: PairsRun) {
        if self.rows_per_round.is_some_and(|r| r != run.rows_per_round) {
            // Not commensurable (cannot happen through config_for_next).
            return;
        }
        self.rows_per_round = Some(run.rows_per_round);
        self.clock = Some(run.clock);
        let room = (MAX_PAIRS as usize).saturating_sub(self.pairs.len());
        self.pairs.extend(run.pairs.into_iter().take(room));
        self.slices += 1;
        self.elapsed_ns = self.elapsed_ns.saturating_add(run.elapsed_ns);
        if run.stopped_by == StopReason::Interrupted {
            self.stopped_by = StopReason::Interrupted;
        }
    }

    /// The config of the next slice: the first slice's rows per round.
    pub fn config_for_next(&self) -> ModelConfig {
        ModelConfig {
            rows_per_round: self.rows_per_round.or(self.config.rows_per_round),
            ..self.config
        }
    }

    /// The pooled cost; `None` without pairs.
    pub fn cost(&self) -> Option<ExecutorLoopCost> {
        let mut cost = cost_from_pairs(
            self.clock?,
            &self.pairs,
            self.rows_per_round?,
            self.config.instrumentation,
        )?;
        cost.work_steps = self.config.work_steps.min(MAX_WORK_STEPS);
        cost.stopped_by = if self.pairs.len() >= MAX_PAIRS as usize {
            StopReason::MaxPairs
        } else {
            self.stopped_by
        };
        cost.budget_ns = self.config.budget_ns.saturating_mul(u64::from(self.slices));
        cost.elapsed_ns = self.elapsed_ns;
        cost.sampling = sampling_text(self.slices, self.elapsed_ns);
        Some(cost)
    }
}

#[cfg(test)]
mod tests;

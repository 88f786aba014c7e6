//! The work the rows run through: a heap-like table walked page by page by
//! a sequential scan node, its instrumented `ExecProcNode` wrapper
//! (InstrStartNode / InstrStopNode), and an aggregate above it, with
//! expression steps called through pointers ([`Executor::round`]).

use super::instr::{InstrTime, PgRead};
use super::{MAX_WORK_STEPS, TABLE_TUPLES, TUPLES_PER_PAGE, TUPLE_BYTES};
use clockscope::ClockSource;
use std::hint::black_box;

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
pub(super) struct ExprState {
    pub(super) resvalue: i64,
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
pub(super) struct NodeInstr<T> {
    need_timer: bool,
    need_bufusage: bool,
    need_walusage: bool,
    running: bool,
    async_mode: bool,
    pub(super) starttime: T,
    pub(super) counter: T,
    firsttuple: T,
    pub(super) tuplecount: f64,
    /// The `elog(ERROR, ...)` branches taken (never, unless the model is wrong).
    pub(super) errors: u32,
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
pub(super) struct ScanNode<'t, R: PgRead> {
    /// What the parent calls: the instrumented wrapper.
    exec_proc_node: ExecFn<'t, R>,
    /// The node's own function.
    exec_proc_node_real: ExecFn<'t, R>,
    pub(super) instr: NodeInstr<R::Time>,
    read: &'t R,
    tuples: &'t [HeapTuple],
    /// Next tuple, and tuples left on the current page.
    pos: usize,
    page_left: u32,
    pub(super) pages: u64,
    snapshot_xmax: u32,
    pub(super) invisible: u64,
    program: &'t [StepFn],
    steps: usize,
    pub(super) expr: ExprState,
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
pub(super) struct AggState<'t> {
    trans: fn(&mut AggState<'t>, &Slot),
    pub(super) count: i64,
    program: &'t [StepFn],
    steps: usize,
    pub(super) expr: ExprState,
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
pub(super) struct Executor<'t, R: PgRead> {
    pub(super) node: ScanNode<'t, R>,
    pub(super) agg: AggState<'t>,
}

impl<'t, R: PgRead> Executor<'t, R> {
    pub(super) fn new(read: &'t R, table: &'t Table, inline: bool) -> Self {
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
    pub(super) fn set_steps(&mut self, steps: u32) {
        let steps = steps.min(MAX_WORK_STEPS) as usize;
        self.node.steps = steps.div_ceil(2);
        self.agg.steps = steps / 2;
    }

    /// One round of `rows` rows, TIMING ON or OFF; ns from start to end.
    pub(super) fn round<C: ClockSource>(&mut self, timer: &C, rows: u64, timing: bool) -> f64 {
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

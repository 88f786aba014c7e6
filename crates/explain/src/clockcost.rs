//! What PostgreSQL's clock reads cost on this machine, the way PostgreSQL
//! makes them.
//!
//! - EXPLAIN's per-row reads (the prediction): the library's model of
//!   PostgreSQL's per-row instrumentation
//!   ([`clockscope_pg::predict::executor_loop`]), TIMING ON against TIMING OFF
//!   with the server version's shape (PostgreSQL 19: inlined, int64 ticks,
//!   the fast read behind `timing_tsc_enabled`; 16-18: int64 ns; 15 and
//!   older: `struct timespec`). Run on the system clock
//!   (`clock_gettime(CLOCK_MONOTONIC)`) and, on x86-64, on RDTSC
//!   (PostgreSQL 19's fast TSC read for EXPLAIN), at the frequency
//!   PostgreSQL 19 would use here ([`postgres_tsc`]).
//! - The I/O timing settings' reads (`INSTR_TIME_SET_CURRENT` around each
//!   I/O): the back-to-back read cost of the system clock and of RDTSCP
//!   (PostgreSQL 19's precise TSC read), pg_test_timing's loop in chunks
//!   ([`clockscope_pg::predict::read_cost`]), with an interval.
//! - pg_test_timing's "Average loop time including overhead" of the system
//!   clock and RDTSC, kept for comparison.

use clockscope::ClockId;
use clockscope_pg::predict::executor_loop::{self, ExecutorLoopCost, ModelConfig, PgInstrumentation, Table};
use clockscope_pg::predict::read_cost::{self, ReadCost};
use clockscope_system::counter::discover::full_budget;
use clockscope_system::counter::{self, CounterKind, Discovery};
use clockscope_system::crosscpu::affinity;
use clockscope_system::escape::escape_untrusted;
use clockscope_system::linux::process::{read_process_place, ProcessPlace};
use clockscope_system::linux::Evidence;
use clockscope_system::stats::Interval;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One clock's measured costs.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ClockCost {
    /// The clock's display name, as pg_test_timing prints it.
    pub clock: String,
    /// pg_test_timing's average loop time (one read plus ~1-2 ns of
    /// bookkeeping, interference included), ns: for comparison.
    pub per_read_ns: f64,
    /// The back-to-back read cost without interference gaps (median over
    /// chunks), ns.
    pub read_cost_ns: f64,
    /// Its 95% interval over the chunks; null when not available.
    pub read_cost_interval: Option<Interval>,
    /// Loop iterations measured.
    pub loops: u64,
    /// How the numbers were obtained.
    pub method: String,
    /// The counter frequency used to convert ticks to ns (TSC only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_khz: Option<u64>,
    /// Where that frequency came from, as pg_test_timing prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_source: Option<String>,
    /// What TIMING ON added per row in the instrumentation model with this
    /// clock as the read (the prediction); null for a clock EXPLAIN does not
    /// read (RDTSCP) or when the model did not run.
    pub executor_loop: Option<ExecutorLoopCost>,
}

impl ClockCost {
    /// ns one read adds per row: the model's `added_ns_per_read` when it
    /// resolved the cost.
    pub(crate) fn added_per_read_ns(&self) -> Option<f64> {
        self.executor_loop.as_ref().and_then(|e| e.added_ns_per_read)
    }

    /// Why there is no `added_per_read_ns`.
    pub fn prediction_status(&self) -> String {
        self.executor_loop.as_ref().map_or_else(
            || {
                "not measured: no slice of the instrumentation model ran for this clock (a slice runs before each \
                 of the server's pairs on the clock source it reads; none completed, or that source was not measured)"
                    .to_string()
            },
            |e| e.status.clone(),
        )
    }

    fn from_read_cost(r: ReadCost, method: &str) -> ClockCost {
        ClockCost {
            per_read_ns: r.avg_loop_ns,
            read_cost_ns: r.read_cost_ns,
            read_cost_interval: r.interval,
            loops: r.loops,
            ..ClockCost::unmeasured(&r.clock, method)
        }
    }

    /// A cost that could not be measured (stopped before the first chunk).
    fn unmeasured(clock: &str, method: &str) -> ClockCost {
        ClockCost {
            clock: clock.to_string(),
            per_read_ns: f64::NAN,
            read_cost_ns: f64::NAN,
            read_cost_interval: None,
            loops: 0,
            method: method.to_string(),
            frequency_khz: None,
            frequency_source: None,
            executor_loop: None,
        }
    }
}

/// The model's slice budget: the model's time per clock spread over the
/// server's pairs, within these bounds, ns.
pub(crate) const MODEL_SLICE_MIN_NS: u64 = 10_000_000;
pub(crate) const MODEL_SLICE_MAX_NS: u64 = 30_000_000;

/// The model's budget per slice for `clock_measure_ns` per clock over at
/// least `runs` pairs of the server's runs.
pub(crate) fn model_slice_ns(clock_measure_ns: u64, runs: u32) -> u64 {
    (clock_measure_ns / u64::from(runs.max(1))).clamp(MODEL_SLICE_MIN_NS, MODEL_SLICE_MAX_NS)
}

/// The instrumentation model for each of the server's clock sources, in
/// slices taken between the server's EXPLAIN pairs
/// ([`executor_loop::Slices`]): `system` with the server version's shape,
/// `tsc` with PostgreSQL 19's.
pub(crate) struct ModelSlices {
    table: Table,
    pub system: executor_loop::Slices,
    pub tsc: executor_loop::Slices,
    /// The server's backend on this machine, whose CPU each slice is pinned
    /// to ([`ModelSlices::follow_backend`]).
    backend: Option<Backend>,
    /// Why a slice was not pinned to the backend's CPU (the first reason).
    pub pin_note: Option<String>,
    /// Slices that could not be pinned while the backend was followed.
    pub unpinned_slices: u32,
}

/// A local server's backend process: its pid and the root its
/// `proc/<pid>/stat` is read under (`/`; a fake tree in tests).
struct Backend {
    pid: u32,
    root: PathBuf,
}

/// What the slices are pinned to, for the sampling text.
const BACKEND_CPU: &str = "the CPU the server's backend last ran on";

impl ModelSlices {
    pub fn new(server_version_num: u32, slice_ns: u64) -> ModelSlices {
        let shape = PgInstrumentation::for_server(server_version_num, false);
        ModelSlices {
            table: Table::new(),
            system: executor_loop::Slices::new(ModelConfig::new(shape, slice_ns)),
            tsc: executor_loop::Slices::new(ModelConfig::new(PgInstrumentation::Pg19 { tsc: true }, slice_ns)),
            backend: None,
            pin_note: None,
            unpinned_slices: 0,
        }
    }

    /// Pins every later slice to the CPU the backend `pid` (of a server on
    /// this machine) last ran on, read from `<root>/proc/<pid>/stat`: one vCPU
    /// of a shared machine can run everything slower for seconds while
    /// another does not (bench/README.md), and the model must run at the
    /// speed the server's statements ran at.
    pub fn follow_backend(&mut self, pid: u32, root: &Path) {
        self.backend = Some(Backend {
            pid,
            root: root.to_path_buf(),
        });
        self.system.pinned_to = Some(BACKEND_CPU);
        self.tsc.pinned_to = Some(BACKEND_CPU);
    }

    /// Pins this thread to the backend's last CPU until the guard drops:
    /// (the guard, the CPU), or nothing (and [`ModelSlices::pin_note`] says
    /// why) when the backend's CPU cannot be read or pinned to.
    fn pin_to_backend(&mut self) -> (Option<affinity::PinnedForNow>, Option<usize>) {
        let Some(backend) = &self.backend else {
            return (None, None);
        };
        let pid = backend.pid;
        // A backend here is forked by the postmaster, whose name is postgres
        // too: the name alone could be another cluster's process.
        let parent_is_postgres = |place: &ProcessPlace| {
            read_process_place(&backend.root, place.ppid)
                .found()
                .is_some_and(|p| p.comm == "postgres")
        };
        let why = match read_process_place(&backend.root, pid) {
            Evidence::Found(place) if place.comm == "postgres" && parent_is_postgres(&place) => {
                match affinity::pin_current_thread_for_now(place.cpu) {
                    Ok(guard) => return (Some(guard), Some(place.cpu)),
                    Err(e) => {
                        self.unpinned_slices += 1;
                        e.to_string()
                    }
                }
            }
            Evidence::Found(place) => {
                // Not the server's backend: a server in a container has its
                // own process ids. Stop following it.
                self.backend = None;
                format!(
                    "process {pid} here is {:?} with parent {}, not a PostgreSQL backend forked by its postmaster (a \
                     server in a container has process ids of its own)",
                    escape_untrusted(&place.comm),
                    place.ppid
                )
            }
            Evidence::Missing(r) | Evidence::Unreadable(r) => {
                self.backend = None;
                format!("the backend's process {pid} was not read: {r}")
            }
        };
        self.pin_note.get_or_insert(why);
        (None, None)
    }

    /// One slice of the model for the server's `clock_source` ("system" or
    /// "tsc"; anything else, or the TSC where PostgreSQL 19 cannot read it
    /// here, runs nothing).
    pub fn slice(&mut self, clock_source: &str, keep_going: &mut dyn FnMut() -> bool) {
        let fast_counter = match clock_source {
            "system" if self.system.wants_more() => None,
            "tsc" if self.tsc.wants_more() && counter::native_kind() == Some(CounterKind::Tsc) => {
                // The model's rounds are timed by CLOCK_MONOTONIC; the
                // counter's scale only names the read.
                let Some(scale) = clockscope::Scale::from_khz(1_000_000) else {
                    return;
                };
                Some(scale)
            }
            _ => return,
        };
        let (pinned, cpu) = self.pin_to_backend();
        let slices = if fast_counter.is_some() {
            &mut self.tsc
        } else {
            &mut self.system
        };
        let config = slices.config_for_next();
        if let Ok(Some(run)) = executor_loop::pairs_on_this_machine_of(fast_counter, &self.table, config, keep_going) {
            slices.add_on(run, cpu);
        }
        drop(pinned);
    }

    /// Puts the pooled costs into `machine` (RDTSC's only where it was
    /// measured).
    pub fn fill(&self, machine: &mut MachineClocks) {
        machine.system.executor_loop = self.system.cost();
        if let Some(r) = machine.rdtsc.as_mut() {
            r.executor_loop = self.tsc.cost();
        }
    }
}

/// This machine's read costs for the prediction and the settings.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MachineClocks {
    /// `clock_gettime(CLOCK_MONOTONIC)`.
    pub system: ClockCost,
    /// RDTSC, on x86-64 CPUs with RDTSCP (as PostgreSQL 19 requires).
    pub rdtsc: Option<ClockCost>,
    /// RDTSCP: PostgreSQL 19's `INSTR_TIME_SET_CURRENT` under the TSC.
    pub rdtscp: Option<ClockCost>,
    /// Why there is no RDTSC / RDTSCP cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rdtsc_unavailable: Option<String>,
    /// Whether PostgreSQL 19's `timing_clock_source = auto` would pick the
    /// TSC here (its policy, [`clockscope_system::tsc::PostgresTsc::use_by_default`]).
    pub tsc_auto: bool,
}

const LOOP_METHOD: &str = "pg_test_timing's loop in 9 chunks: average loop time including overhead, and the median \
                           chunk's read cost without interference gaps";

/// What to measure: the time per clock and the model's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MachineRequest {
    /// How long to run pg_test_timing's loop on each clock, and the model's
    /// budget per clock, ns.
    pub duration_ns: u64,
    /// The server's `server_version_num`: the instrumentation's shape.
    pub server_version_num: u32,
}

/// Measures the system clock and (where there is one) RDTSC and RDTSCP for
/// `duration_ns` each; `keep_going` is asked between 10 ms chunks. The
/// instrumentation model is not run here: it runs in slices between the
/// server's runs ([`ModelSlices`]).
pub(crate) fn measure_machine(req: MachineRequest, keep_going: &mut dyn FnMut() -> bool) -> MachineClocks {
    let system = measure_system(req.duration_ns, keep_going);
    let tsc = postgres_tsc();
    let (rdtsc, rdtscp, rdtsc_unavailable) = match measure_tsc(&tsc, req, keep_going) {
        Ok((fast, precise)) => (Some(fast), Some(precise), None),
        Err(why) => (None, None, Some(why)),
    };
    MachineClocks {
        system,
        rdtsc,
        rdtscp,
        rdtsc_unavailable,
        tsc_auto: tsc.use_by_default,
    }
}

/// pg_test_timing's loop on `clock_gettime(CLOCK_MONOTONIC)`, in chunks.
pub(crate) fn measure_system(duration_ns: u64, keep_going: &mut dyn FnMut() -> bool) -> ClockCost {
    let id = ClockId::Monotonic;
    read_cost::measure_read_cost_of(id, None, duration_ns, keep_going)
        .ok()
        .flatten()
        .map_or_else(
            || ClockCost::unmeasured(id.display_name(), LOOP_METHOD),
            |r| ClockCost::from_read_cost(r, LOOP_METHOD),
        )
}

/// What PostgreSQL 19 concludes about this machine's TSC, from the counter
/// layer ([`clockscope_system::counter::Mode::Postgresql`]): no TSC off x86-64.
pub fn postgres_tsc() -> clockscope_system::tsc::PostgresTsc {
    let discovery = Discovery::postgresql(clockscope_system::tsc::POSTGRES_CALIBRATION_BUDGET_NS);
    let report = counter::discover_with(std::path::Path::new("/"), None, &discovery, &full_budget);
    report.postgres.tsc.unwrap_or(clockscope_system::tsc::PostgresTsc {
        frequency_khz: None,
        frequency_source: None,
        calibrated_khz: None,
        use_by_default: false,
    })
}

/// PostgreSQL 19's TSC on this machine: [`postgres_tsc`] decides its
/// frequency (CPUID by PostgreSQL's rules, else calibration); then RDTSC and
/// RDTSCP in pg_test_timing's loop at that frequency, and the model with
/// RDTSC as PostgreSQL 19's fast read. `Err` when PostgreSQL 19 could not
/// use the TSC here.
pub(crate) fn measure_tsc(
    tsc: &clockscope_system::tsc::PostgresTsc,
    req: MachineRequest,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<(ClockCost, ClockCost), String> {
    let (Some(khz), Some(source)) = (tsc.frequency_khz, tsc.frequency_source.as_deref()) else {
        return Err("PostgreSQL 19 could not use the TSC here (no RDTSCP or invariant TSC, or no frequency)".into());
    };
    let (mut fast, mut precise) = tsc_loops(khz, req, keep_going)?;
    for c in [&mut fast, &mut precise] {
        c.frequency_khz = Some(khz);
        c.frequency_source = Some(source.to_string());
    }
    Ok((fast, precise))
}

/// The loops on PostgreSQL 19's TSC reads at `khz`; `Err` off
/// x86-64 or without RDTSCP.
fn tsc_loops(
    khz: u64,
    req: MachineRequest,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<(ClockCost, ClockCost), String> {
    if counter::native_kind() != Some(CounterKind::Tsc) {
        return Err("PostgreSQL 19's TSC clock source exists on x86-64 only".into());
    }
    let scale = clockscope::Scale::from_khz(khz).ok_or_else(|| format!("TSC frequency {khz} kHz is out of range"))?;
    let d = req.duration_ns;
    let mut measured = |id: ClockId| {
        read_cost::measure_read_cost_of(id, Some(scale), d, keep_going)
            .map_err(|e| e.to_string())?
            .map(|r| ClockCost::from_read_cost(r, LOOP_METHOD))
            .ok_or(format!("the {} loop did not run", id.display_name()))
    };
    Ok((measured(ClockId::Rdtsc)?, measured(ClockId::Rdtscp)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(duration_ns: u64) -> MachineRequest {
        MachineRequest {
            duration_ns,
            server_version_num: 190_000,
        }
    }

    #[test]
    fn system_clock_cost_is_positive_and_finite() {
        let c = measure_system(9_000_000, &mut || true);
        assert!(c.loops > 0);
        assert!(c.per_read_ns.is_finite() && c.per_read_ns > 0.0, "{c:?}");
        assert!(c.read_cost_ns.is_finite() && c.read_cost_ns > 0.0, "{c:?}");
    }

    #[test]
    fn no_tsc_frequency_means_no_rdtsc_cost() {
        let tsc = clockscope_system::tsc::PostgresTsc {
            frequency_khz: None,
            frequency_source: None,
            calibrated_khz: None,
            use_by_default: false,
        };
        let why = measure_tsc(&tsc, req(1_000_000), &mut || true).unwrap_err();
        assert!(why.contains("could not use the TSC"), "{why}");
    }

    #[test]
    fn stopped_at_once_gives_no_model_and_an_unmeasured_system_clock() {
        let m = measure_machine(req(10_000_000_000), &mut || false);
        assert!(m.system.executor_loop.is_none());
        assert!(m.system.prediction_status().starts_with("not measured"));
        assert_eq!(m.system.added_per_read_ns(), None);
    }

    #[test]
    fn tsc_costs_are_measured_exactly_when_postgresql_19_would_use_the_tsc() {
        let tsc = postgres_tsc();
        match measure_tsc(&tsc, req(9_000_000), &mut || true) {
            Ok((fast, precise)) => {
                assert!(fast.read_cost_ns.is_finite() && fast.read_cost_ns > 0.0, "{fast:?}");
                assert_eq!((fast.clock.as_str(), precise.clock.as_str()), ("RDTSC", "RDTSCP"));
                assert_eq!(fast.frequency_khz, tsc.frequency_khz);
                assert_eq!(precise.frequency_source, tsc.frequency_source);
                // The model runs in slices between the server's pairs.
                assert!(fast.executor_loop.is_none());
                assert!(precise.executor_loop.is_none());
            }
            Err(why) => assert!(
                tsc.frequency_khz.is_none() || counter::native_kind() != Some(CounterKind::Tsc),
                "{why}"
            ),
        }
    }

    #[test]
    fn model_slices_fill_the_clock_they_were_taken_for() {
        let mut slices = ModelSlices::new(150_000, MODEL_SLICE_MIN_NS);
        slices.slice("system", &mut || true);
        slices.slice("system", &mut || true);
        slices.slice("jiffies", &mut || true);
        assert_eq!(slices.system.slices, 2);
        assert_eq!(slices.tsc.slices, 0);
        let mut m = measure_machine(req(10_000_000), &mut || true);
        slices.fill(&mut m);
        let e = m.system.executor_loop.as_ref().unwrap();
        assert!(e.sampling.starts_with("2 slices"), "{}", e.sampling);
        assert_eq!(e.instrumentation, PgInstrumentation::Pg15OrOlder.describe());
        if let Some(r) = &m.rdtsc {
            // No tsc slice: no model for RDTSC, not another number.
            assert!(r.executor_loop.is_none());
        }
        // Stopped: no slice.
        let mut stopped = ModelSlices::new(190_000, MODEL_SLICE_MIN_NS);
        stopped.slice("tsc", &mut || false);
        assert_eq!(stopped.tsc.cost(), None);
        assert_eq!(model_slice_ns(500_000_000, 5), MODEL_SLICE_MAX_NS);
        assert_eq!(model_slice_ns(10_000_000, 5), MODEL_SLICE_MIN_NS);
        assert_eq!(model_slice_ns(100_000_000, 5), 20_000_000);
    }

    /// A `proc/<pid>/stat` of `comm` that last ran on `cpu`.
    fn backend_stat(comm: &str, cpu: usize) -> String {
        format!("4242 ({comm}) S 4200 4242 4242 0 -1 4194624 301 0 0 0 3 1 0 0 20 0 1 0 4410 226000896 2049 1 1 1 0 0 0 0 4194304 19935232 84487 0 0 0 17 {cpu} 0 0 0 0 0\n")
    }

    /// `proc/4242/stat` with `text`, and its parent 4200, the postmaster.
    fn write_stat(root: &Path, text: &str) {
        for (pid, stat) in [(4242, text.to_string()), (4200, backend_stat("postgres", 0))] {
            std::fs::create_dir_all(root.join(format!("proc/{pid}"))).unwrap();
            std::fs::write(root.join(format!("proc/{pid}/stat")), stat).unwrap();
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn slices_follow_the_backend_to_its_cpu_and_leave_the_thread_as_it_was() {
        std::thread::spawn(|| {
            let before = affinity::allowed_cpus().unwrap();
            let cpu = *before.last().unwrap();
            let root = tempfile::tempdir().unwrap();
            write_stat(root.path(), &backend_stat("postgres", cpu));
            let mut slices = ModelSlices::new(150_000, MODEL_SLICE_MIN_NS);
            slices.follow_backend(4242, root.path());
            slices.slice("system", &mut || true);
            assert_eq!(affinity::allowed_cpus().unwrap(), before, "the mask came back");
            assert_eq!(slices.pin_note, None);
            let cost = slices.system.cost().unwrap();
            assert_eq!(cost.cpus.len(), 1);
            assert_eq!(cost.cpus[0].cpu, cpu);
            assert!(
                cost.sampling.ends_with(&format!(
                    "each slice pinned to the CPU the server's backend last ran on (CPU {cpu}: {} pairs)",
                    cost.pairs
                )),
                "{}",
                cost.sampling
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_process_that_is_not_a_backend_is_not_followed() {
        let root = tempfile::tempdir().unwrap();
        write_stat(root.path(), &backend_stat("nginx\u{1b}[2J", 0));
        let mut slices = ModelSlices::new(150_000, MODEL_SLICE_MIN_NS);
        slices.follow_backend(4242, root.path());
        slices.slice("system", &mut || true);
        let note = slices.pin_note.clone().unwrap();
        assert!(note.starts_with("process 4242 here is \"nginx"), "{note}");
        // A postgres whose parent is not one (another program's child): not
        // followed either.
        let other = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(other.path().join("proc/4242")).unwrap();
        std::fs::write(other.path().join("proc/4242/stat"), backend_stat("postgres", 0)).unwrap();
        let mut orphan = ModelSlices::new(150_000, MODEL_SLICE_MIN_NS);
        orphan.follow_backend(4242, other.path());
        orphan.slice("system", &mut || true);
        assert!(orphan
            .pin_note
            .unwrap()
            .contains("with parent 4200, not a PostgreSQL backend"));
        assert!(!note.contains('\u{1b}'), "escaped: {note}");
        assert!(slices.system.cost().unwrap().cpus.is_empty());
        // A pid that is gone: said once, the slices still run.
        let mut gone = ModelSlices::new(150_000, MODEL_SLICE_MIN_NS);
        gone.follow_backend(4243, root.path());
        gone.slice("system", &mut || true);
        gone.slice("system", &mut || true);
        assert!(gone
            .pin_note
            .unwrap()
            .starts_with("the backend's process 4243 was not read"));
        assert_eq!(gone.system.slices, 2);
    }
}

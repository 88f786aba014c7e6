//! The counter layer's one frequency discovery, driven by injected evidence:
//! a recorded CPUID dump (the KVM guest this was developed on, whose CPUID
//! gives no TSC frequency), kernel evidence with and without the kernel
//! log's "tsc: Detected" frequency, a fake sysfs tree for the generic timer,
//! and scripted calibrations that record the budgets they were given.

use clockscope_system::counter::calibrate::{Calibration, METHOD_BRACKETED, METHOD_POSTGRESQL};
use clockscope_system::counter::discover::{discover_generic_timer, discover_tsc, full_budget};
use clockscope_system::counter::{Calibrator, Discovery, Mode, TscEvidence};
use clockscope_system::linux::testing::FakeRoot;
use clockscope_system::linux::{Evidence, KernelCmdline};
use clockscope_system::tsc::policy::{KernelEvidence, KernelLogTsc};

use crate::common;

/// Calibrations that converge at a scripted rate and record every budget.
struct Scripted {
    hz: u64,
    budgets: Vec<u64>,
    postgresql_runs: u32,
    /// What PostgreSQL's algorithm converges to (`None`: not run).
    postgresql_khz: Option<u64>,
}

impl Scripted {
    fn new(hz: u64) -> Scripted {
        Scripted {
            hz,
            budgets: Vec::new(),
            postgresql_runs: 0,
            postgresql_khz: None,
        }
    }
}

impl Calibrator for Scripted {
    fn counter(&mut self, budget_ns: u64) -> Calibration {
        self.budgets.push(budget_ns);
        let mut c = Calibration::unavailable("converged: scripted", METHOD_BRACKETED);
        c.hz = Some(self.hz);
        c.khz = Some(self.hz / 1000);
        c.uncertainty_ppm = Some(1.0);
        c.counter = "RDTSCP";
        c.reference = "clock_gettime (CLOCK_MONOTONIC_RAW)";
        c
    }
    fn postgresql(&mut self) -> Calibration {
        self.postgresql_runs += 1;
        let mut c = Calibration::unavailable("scripted: not run", METHOD_POSTGRESQL);
        c.khz = self.postgresql_khz;
        c
    }
}

/// A kernel timing with the TSC; `log_khz` is the kernel log's "tsc: Detected" frequency.
fn kernel(log_khz: Option<u64>) -> KernelEvidence {
    KernelEvidence {
        kernel_release: Evidence::Found("6.18.0".to_string()),
        current_clocksource: Evidence::Found("tsc".to_string()),
        available_clocksources: Evidence::Found(vec!["tsc".to_string(), "kvm-clock".to_string()]),
        tsc_flags: Evidence::Found(common::kvm_guest_tsc_flags()),
        cpu_model_name: Some("AMD EPYC".to_string()),
        cmdline: Evidence::Found(KernelCmdline::parse("BOOT_IMAGE=/vmlinuz ro quiet")),
        kernel_log: Evidence::Found(KernelLogTsc {
            records: 400,
            tsc_khz: log_khz,
            tsc_khz_message: log_khz.map(|_| "kernel log, \"tsc: Detected ... MHz processor\""),
            marked_unstable: false,
            unstable_evidence: vec![],
            messages: vec![],
        }),
    }
}

fn evidence(log_khz: Option<u64>) -> TscEvidence {
    TscEvidence {
        root: "/injected".to_string(),
        cpuid: Some(common::kvm_cpuid()),
        kernel: kernel(log_khz),
        perf_page_khz: Err("injected: none".to_string()),
        time_libraries: Vec::new(),
    }
}

const CROSS_CHECK_NS: u64 = 5_000_000;
const CALIBRATION_NS: u64 = 50_000_000;

fn full_without_postgresql() -> Discovery {
    Discovery {
        mode: Mode::Full,
        cross_check_ns: CROSS_CHECK_NS,
        calibration_ns: CALIBRATION_NS,
        postgresql_calibration: false,
    }
}

#[test]
fn quick_uses_the_kernel_frequency_without_calibrating() {
    let mut cal = Scripted::new(2_445_402_000);
    let r = discover_tsc(
        evidence(Some(2_445_402)),
        &Discovery::quick(CALIBRATION_NS),
        &full_budget,
        &mut cal,
    );
    assert!(cal.budgets.is_empty(), "an authoritative source needs no calibration");
    assert_eq!(r.frequency.khz, Some(2_445_402));
    assert_eq!(r.frequency.hz, Some(2_445_402_000));
    assert!(
        r.frequency.source.as_deref().unwrap().contains("kernel log"),
        "{:?}",
        r.frequency
    );
    assert_eq!((r.decision.is_none(), r.calibration_budget_ns), (true, 0));
    assert!(r.postgres.reads_counter, "RDTSCP and invariant TSC");
    assert!(r.tsc().is_some());
}

#[test]
fn quick_calibrates_with_its_budget_when_nothing_authoritative_exists() {
    let mut cal = Scripted::new(2_445_401_000);
    let r = discover_tsc(
        evidence(None),
        &Discovery::quick(CALIBRATION_NS),
        &full_budget,
        &mut cal,
    );
    assert_eq!(cal.budgets, vec![CALIBRATION_NS]);
    assert_eq!(cal.postgresql_runs, 0);
    assert_eq!(r.frequency.khz, Some(2_445_401));
    assert_eq!(
        r.frequency.source.as_deref(),
        Some("calibration against CLOCK_MONOTONIC_RAW (converged: scripted)")
    );
    assert_eq!(r.calibration_budget_ns, CALIBRATION_NS);
}

#[test]
fn full_cross_checks_an_authoritative_frequency_and_decides() {
    let mut cal = Scripted::new(2_445_402_000);
    let r = discover_tsc(
        evidence(Some(2_445_402)),
        &full_without_postgresql(),
        &full_budget,
        &mut cal,
    );
    assert_eq!(
        cal.budgets,
        vec![CROSS_CHECK_NS],
        "the cross-check budget, not the calibration's"
    );
    assert_eq!(cal.postgresql_runs, 0);
    let d = r.decision.as_ref().expect("full mode decides");
    assert!(d.trusted, "{:?}", d.checks);
    assert_eq!(r.trusted(), Some(true));
    assert_eq!(r.reason().as_deref(), Some("every check passed"));
    assert_eq!(r.frequency.khz, Some(2_445_402));
    // PostgreSQL's frequency here would come from its own calibration, not
    // asked for: without a frequency its `auto` does not pick the TSC.
    assert_eq!(r.postgres.auto_uses_counter, Some(false));
    assert!(d.checks[0].to_string().starts_with("ok RDTSCP: "));
    assert_eq!(r.calibration_budget_ns, CROSS_CHECK_NS);
}

#[test]
fn full_without_an_authoritative_source_spends_the_calibration_budget() {
    let mut cal = Scripted::new(2_445_401_000);
    let r = discover_tsc(evidence(None), &Discovery::full(200_000_000), &full_budget, &mut cal);
    assert_eq!(cal.budgets, vec![200_000_000]);
    assert_eq!(
        cal.postgresql_runs, 1,
        "Discovery::full runs PostgreSQL's algorithm beside it"
    );
    assert_eq!(r.frequency.khz, Some(2_445_401), "the calibration is the frequency");
    assert!(r.frequency.source.as_deref().unwrap().contains("calibration"));
}

#[test]
fn a_refused_budget_skips_the_calibration_and_the_decision_says_so() {
    let mut cal = Scripted::new(2_445_401_000);
    let refuse = |_: u64| Err("skipped: no time left".to_string());
    let r = discover_tsc(evidence(None), &full_without_postgresql(), &refuse, &mut cal);
    assert!(cal.budgets.is_empty());
    assert_eq!(r.calibration_budget_ns, 0);
    assert_eq!(r.trusted(), Some(false), "no frequency, no trust");
    assert_eq!(r.frequency.khz, None);
    let reason = r.reason().unwrap();
    assert!(reason.starts_with("frequency known and sources agree"), "{reason}");

    // A cut budget is what the calibration gets.
    let cut = |wanted: u64| Ok(wanted.min(3_000_000));
    discover_tsc(evidence(None), &full_without_postgresql(), &cut, &mut cal);
    assert_eq!(cal.budgets, vec![3_000_000]);
}

#[test]
fn postgresql_view_calibrates_only_without_its_cpuid_frequency() {
    let mut cal = Scripted::new(2_445_401_000);
    cal.postgresql_khz = Some(2_445_123);
    let r = discover_tsc(
        evidence(Some(2_445_402)),
        &Discovery::postgresql(CALIBRATION_NS),
        &full_budget,
        &mut cal,
    );
    // KVM without the timing leaf: PostgreSQL's CPUID rules give nothing, so
    // it runs its own calibration (the kernel log is not one of its sources,
    // nor is clockscope's calibration), once, and uses that.
    assert!(cal.budgets.is_empty(), "clockscope's calibration is not PostgreSQL's");
    assert_eq!(cal.postgresql_runs, 1);
    let pg = r.postgres.tsc.as_ref().expect("x86 TSC with RDTSCP and invariant TSC");
    assert_eq!(pg.frequency_khz, Some(2_445_123));
    assert_eq!(pg.calibrated_khz, Some(2_445_123), "cached: the same number");
    assert_eq!(pg.frequency_source.as_deref(), Some("x86, hypervisor, calibration"));
    assert!(pg.use_by_default, "TSC_ADJUST or clocksource tsc");
    assert_eq!(r.frequency.khz, Some(2_445_123));
    assert_eq!(r.postgres.auto_uses_counter, Some(true));
    assert_eq!(r.calibration_budget_ns, CALIBRATION_NS);
}

#[test]
fn generic_timer_quick_never_calibrates_and_full_cross_checks() {
    let root = FakeRoot::new();
    for cpu in 0..2 {
        root.write(
            &format!("sys/devices/system/cpu/cpu{cpu}/regs/identification/midr_el1"),
            "0x00000000413fd0c1\n",
        );
    }
    let mut cal = Scripted::new(25_000_000);
    let quick = discover_generic_timer(
        root.path(),
        25_000_000,
        &Discovery::quick(CALIBRATION_NS),
        &full_budget,
        &mut cal,
    );
    assert!(cal.budgets.is_empty(), "CNTFRQ_EL0 is authoritative");
    assert_eq!(
        (quick.frequency.khz, quick.frequency.hz),
        (Some(25_000), Some(25_000_000))
    );
    assert_eq!(quick.frequency.source.as_deref(), Some("arm64, CNTFRQ_EL0"));
    assert!(quick.decision.is_none() && quick.postgres.auto_uses_counter.is_none());

    let full = discover_generic_timer(
        root.path(),
        25_000_000,
        &full_without_postgresql(),
        &full_budget,
        &mut cal,
    );
    assert_eq!(cal.budgets, vec![CROSS_CHECK_NS]);
    let t = full.generic_timer().unwrap();
    assert_eq!(t.calibrated_hz, Some(25_000_000.0));
    assert_eq!(full.trusted(), Some(t.trusted));
    assert_eq!(
        full.postgres.auto_uses_counter,
        Some(false),
        "PostgreSQL 19 has no ARM counter"
    );
    assert!(!full.postgres.reads_counter);

    // CNTFRQ_EL0 reading 0: no frequency, and the reason says so.
    let zero = discover_generic_timer(root.path(), 0, &full_without_postgresql(), &full_budget, &mut cal);
    assert_eq!(zero.frequency.unknown.as_deref(), Some("CNTFRQ_EL0 reads 0"));
    assert_eq!(zero.scale(), None);
    assert_eq!(zero.trusted(), Some(false));
    assert!(zero.reason().unwrap().starts_with("CNTFRQ_EL0 reads 0"));
}

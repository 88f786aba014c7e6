//! This machine's full TSC report for `clockscope tsc`: native CPUID, the
//! kernel's evidence, the perf page and both calibrations run here (the
//! judging is [`TscReport::build`]'s, below this layer).

use super::calibrate;
use crate::evidence::interposition::time_library_hints;
use crate::tsc::cpuid::CpuidFacts;
use crate::tsc::policy::KernelEvidence;
use crate::tsc::report::{perf_page_khz, LiveEvidence, TscReport};
use std::path::Path;

/// Gathers this machine's TSC evidence under `root` (`/` in production):
/// native CPUID, the kernel's files and log, the perf mmap page, our
/// calibration (at most `calibration_budget_ns`) and PostgreSQL's (at most
/// its own 50 ms), and builds the report. Without CPUID (not x86-64) nothing
/// is calibrated: the TSC is x86's.
pub fn detect_tsc(root: &Path, calibration_budget_ns: u64) -> TscReport {
    let cpuid = CpuidFacts::native();
    let kernel = KernelEvidence::read(root);
    let no_tsc = || "no TSC: not an x86-64 CPU".to_string();
    let (perf_page_khz, calibration, postgresql_calibration) = match &cpuid {
        None => (Err(no_tsc()), Err(no_tsc()), Err(no_tsc())),
        Some(f) if f.tsc => {
            let ours = Ok(calibrate::calibrate_counter(calibration_budget_ns));
            let postgresql = Ok(calibrate::calibrate_postgresql_native());
            (perf_page_khz(), ours, postgresql)
        }
        Some(_) => {
            let e = || "the CPU reports no TSC (CPUID 1 EDX bit 4)".to_string();
            (Err(e()), Err(e()), Err(e()))
        }
    };
    let live = LiveEvidence {
        root: root.display().to_string(),
        kernel,
        perf_page_khz,
        calibration,
        postgresql_calibration,
        time_libraries: time_library_hints(),
    };
    TscReport::build(cpuid, Some(live), None)
}

//! What `clockscope cross-cpu` measured: the CPUs and their topology, the
//! plan, the counter calibration and the library's report.

use crate::exit;
use clockscope_system::counter::calibrate::Calibration;
use clockscope_system::crosscpu::{CpuContext, CrossCpuReport, Plan};

/// Version of `cross-cpu`'s JSON layout (`schema_version`, docs/schema/cross-cpu.schema.json).
pub const SCHEMA_VERSION: u32 = 1;
/// Version of the `--plan` JSON layout (docs/schema/cross-cpu-plan.schema.json).
pub const PLAN_SCHEMA_VERSION: u32 = 1;

/// What `--plan` prints: the plan, the CPUs it was made from, and where
/// they came from (in words).
pub struct PlanView<'a> {
    pub plan: &'a Plan,
    pub context: &'a CpuContext,
    pub cpus_from: String,
}

/// Everything the command reports.
pub struct Outcome {
    pub context: CpuContext,
    /// The pairs and time planned (`None` with fewer than two CPUs).
    pub plan: Option<Plan>,
    pub calibration: Option<Calibration>,
    pub report: CrossCpuReport,
    /// Why nothing was measured (fewer than two CPUs).
    pub note: Option<String>,
}

impl Outcome {
    /// The exit status: 130 interrupted, 1 a problem, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.report.interrupted {
            exit::INTERRUPTED
        } else if self.report.has_problem() {
            exit::PROBLEM
        } else {
            exit::OK
        }
    }
}

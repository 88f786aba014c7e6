//! `clockscope clocks`: every clock source clockscope knows, whether it works
//! here and its resolution (clock_getres, the counter period, and the smallest
//! step seen in a short run).

use crate::args::ReportFormat;
use crate::commands::clocks::model::{ClockEntry, ClocksReport, PROBE_NS, SCHEMA_VERSION};
use crate::commands::environment;
use crate::report::stamp::{ReportStamp, Stamped};
use crate::report::Renderer;
use clap::Args;
use clockscope::Control;
use clockscope::{self, ClockId};
use clockscope_system::engine;
use clockscope_system::interference::Interference;
use clockscope_system::linux::LinuxEvidence;
use std::io::Write;
use std::path::Path;

#[derive(Args, Debug, Clone)]
pub struct ClocksArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,

    #[command(flatten)]
    pub output: crate::args::OutputArg,
}

/// What one probe run found: the observed step, the average loop, the read
/// cost without interference gaps and the interference.
type ProbeResult = (Option<u64>, Option<f64>, Option<f64>, Interference);

/// One clock probed by the read-cost engine. The engine's first run is half
/// its budget: a clean probe is one PROBE_NS run, a noisy one is repeated
/// inside 2 x PROBE_NS.
fn probe(
    id: ClockId,
    counter_scale: Option<clockscope::Scale>,
    cpus: Option<&[usize]>,
) -> Result<ProbeResult, clockscope::ClockError> {
    let clean = engine::measure_clock(id, counter_scale, 2 * PROBE_NS, cpus, &mut |_, _, _| Control::Continue)?;
    let m = &clean.measurement;
    Ok((
        clean.observed_step_ns,
        m.avg_loop_ns(),
        engine::read_cost_ns(m),
        clean.interference,
    ))
}

/// Probes every clock.
pub fn gather(counter: &environment::CounterSetup) -> ClocksReport {
    let cpus = clockscope_system::crosscpu::affinity::allowed_cpus().ok();
    let clocks = ClockId::ALL
        .into_iter()
        .map(|id| {
            let tick_ns = (id.is_counter() && id.is_supported().is_ok())
                .then(|| counter.scale.map(|s| 1e9 / s.hz() as f64))
                .flatten();
            let (works, reason, res, avg, cost, interference) = match probe(id, counter.scale, cpus.as_deref()) {
                Ok((res, avg, cost, i)) => (true, None, res, avg, cost, Some(i)),
                Err(e) => {
                    let reason = counter.skip_reason(&e);
                    (false, Some(reason), None, None, None, None)
                }
            };
            ClockEntry {
                name: id.cli_name().into(),
                display_name: id.display_name().into(),
                works,
                reason,
                clock_getres_ns: id.reported_resolution_ns(),
                tick_ns,
                observed_resolution_ns: res,
                avg_loop_ns: avg,
                read_cost_ns: cost,
                interference,
            }
        })
        .collect();
    ClocksReport {
        counter_frequency_khz: counter.frequency_khz,
        counter_frequency_source: counter.frequency_source.clone(),
        clocks,
    }
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &ClocksArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let root = Path::new("/");
    let linux = LinuxEvidence::read(root);
    let counter = environment::quick_counter(root, &linux);
    let report = gather(&counter);
    let stamp = ReportStamp::now(SCHEMA_VERSION);
    renderer(args.format)(out, &stamp.on(&report))?;
    Ok(crate::exit::OK)
}

/// The renderer of `format`.
pub fn renderer<'a>(format: ReportFormat) -> Renderer<Stamped<'a, ClocksReport>> {
    match format {
        ReportFormat::Text => crate::commands::clocks::write_text,
        ReportFormat::Json => crate::report::json::write,
    }
}

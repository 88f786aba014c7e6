//! `clockscope clocks`: every clock source clockscope knows, whether it works
//! here and its resolution (clock_getres, the counter period, and the smallest
//! step seen in a short run).

use crate::args::ReportFormat;
use crate::commands::environment;
use crate::export;
use clap::Args;
use clockscope::clock::{self, ClockId, ClockSource, ClockVisitor};
use clockscope::linux::LinuxEvidence;
use clockscope::measure::{measure, observed_step_ns, Control};
use serde::Serialize;
use std::io::Write;
use std::path::Path;

#[derive(Args, Debug, Clone)]
pub struct ClocksArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
}

/// How long each working clock is read to find its observed resolution (20 ms).
pub const PROBE_NS: u64 = 20_000_000;

/// One clock's line.
#[derive(Clone, Debug, Serialize)]
pub struct ClockEntry {
    /// Name for `--clock`.
    pub name: String,
    pub display_name: String,
    /// Whether it can be read here.
    pub works: bool,
    /// Why not, when it cannot.
    pub reason: Option<String>,
    /// clock_getres(2), ns (POSIX clocks).
    pub clock_getres_ns: Option<u64>,
    /// One counter tick, ns (counters: 1e9 / frequency).
    pub tick_ns: Option<f64>,
    /// Smallest non-zero step seen in a 20 ms run, ns.
    pub observed_resolution_ns: Option<u64>,
    /// Average loop time in that run, ns.
    pub avg_loop_ns: Option<f64>,
}

/// The list.
#[derive(Clone, Debug, Serialize)]
pub struct ClocksReport {
    pub counter_frequency_khz: Option<u64>,
    pub counter_frequency_source: Option<String>,
    pub clocks: Vec<ClockEntry>,
}

struct Probe;
impl ClockVisitor for Probe {
    type Output = (Option<u64>, Option<f64>);
    fn visit<C: ClockSource>(self, clock: &C) -> Self::Output {
        let m = measure(clock, PROBE_NS, |_| Control::Continue);
        (observed_step_ns(clock, &m), m.avg_loop_ns())
    }
}

/// Probes every clock.
pub fn gather(counter: &environment::CounterSetup) -> ClocksReport {
    let clocks = ClockId::ALL
        .into_iter()
        .map(|id| {
            let tick_ns = (id.is_counter() && id.is_supported().is_ok())
                .then(|| counter.scale.map(|s| 1e9 / s.hz() as f64))
                .flatten();
            let (works, reason, res, avg) = match clock::visit(id, counter.scale, Probe) {
                Ok((res, avg)) => (true, None, res, avg),
                Err(e) => {
                    let reason = counter.skip_reason(&e);
                    (false, Some(reason), None, None)
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
            }
        })
        .collect();
    ClocksReport {
        counter_frequency_khz: counter.frequency_khz,
        counter_frequency_source: counter.frequency_source.clone(),
        clocks,
    }
}

/// Writes the text table.
pub fn write_text(out: &mut dyn Write, r: &ClocksReport) -> std::io::Result<()> {
    let w = r.clocks.iter().map(|c| c.display_name.len()).max().unwrap_or(10);
    writeln_escaped!(
        out,
        "{:<16} {:<w$} {:>5} {:>10} {:>9} {:>9} {:>9}",
        "name",
        "clock",
        "works",
        "getres ns",
        "tick ns",
        "step ns",
        "avg ns"
    )?;
    for c in &r.clocks {
        let opt_u = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        if c.works {
            writeln_escaped!(
                out,
                "{:<16} {:<w$} {:>5} {:>10} {:>9} {:>9} {:>9}",
                c.name,
                c.display_name,
                "yes",
                opt_u(c.clock_getres_ns),
                c.tick_ns.map_or("-".to_string(), |t| format!("{t:.3}")),
                opt_u(c.observed_resolution_ns),
                c.avg_loop_ns.map_or("-".to_string(), |a| format!("{a:.2}")),
            )?;
        } else {
            writeln_escaped!(
                out,
                "{:<16} {:<w$} {:>5}  {}",
                c.name,
                c.display_name,
                "no",
                c.reason.as_deref().unwrap_or("")
            )?;
        }
    }
    if let Some(k) = r.counter_frequency_khz {
        writeln_escaped!(
            out,
            "counter frequency: {k} kHz ({})",
            r.counter_frequency_source.as_deref().unwrap_or("unknown source")
        )?;
    }
    writeln_escaped!(
        out,
        "step = smallest non-zero difference seen in a {} ms run; tick = one counter period.",
        PROBE_NS / 1_000_000
    )
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &ClocksArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let root = Path::new("/");
    let linux = LinuxEvidence::read(root);
    let counter = environment::quick_counter(root, &linux);
    let report = gather(&counter);
    match args.format {
        ReportFormat::Text => write_text(out, &report)?,
        ReportFormat::Json => export::json::write(out, &report)?,
    }
    Ok(crate::exit::OK)
}

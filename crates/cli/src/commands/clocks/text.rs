//! The text table of `clockscope clocks` (its JSON goes through
//! [`crate::report::json`]).

use crate::commands::clocks::model::{ClocksReport, PROBE_NS};
use crate::report::stamp::Stamped;
use std::io::Write;

/// Writes the header line and the text table.
pub fn write_text(out: &mut dyn Write, m: &Stamped<'_, ClocksReport>) -> std::io::Result<()> {
    // Every line fitted to 100 columns (crate::report::text).
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    crate::report::text::write_header(out, m.stamp)?;
    let r = m.report;
    let w = r.clocks.iter().map(|c| c.display_name.len()).max().unwrap_or(10);
    writeln_escaped!(
        out,
        "{:<16} {:<w$} {:>5} {:>8} {:>6} {:>8} {:>7}",
        "name",
        "clock",
        "works",
        "getres",
        "tick",
        "step",
        "avg"
    )?;
    for c in &r.clocks {
        let opt_u = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        if c.works {
            writeln_escaped!(
                out,
                "{:<16} {:<w$} {:>5} {:>8} {:>6} {:>8} {:>7}",
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
        "ns; step = smallest non-zero difference seen in a {} ms run; tick = one counter period.",
        PROBE_NS / 1_000_000
    )
}

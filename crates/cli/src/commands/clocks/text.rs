//! The text table of `clockscope clocks` (its JSON goes through
//! [`crate::report::json`]).

use crate::commands::clocks::model::{ClocksReport, PROBE_NS};
use crate::i18n::{num, pad_left, pad_right};
use crate::report::stamp::Stamped;
use crate::report::text::{or_dash, write_line};
use crate::t;
use std::io::Write;

/// Writes the header line and the text table.
pub fn write_text(out: &mut dyn Write, m: &Stamped<'_, ClocksReport>) -> std::io::Result<()> {
    // Every line fitted to 100 columns (crate::report::text).
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    crate::report::text::write_header(out, m.stamp)?;
    let r = m.report;
    // Each column as wide as in English, or wider for a longer translated
    // heading; padded by display columns (Cyrillic is one column a letter).
    let dw = textwrap::core::display_width;
    let heads = [
        t!("name"),
        t!("clock"),
        t!("works"),
        "getres",
        t!("tick"),
        t!("step"),
        t!("avg"),
    ];
    let (yes, no) = (t!("yes"), t!("no"));
    let names = r.clocks.iter().map(|c| c.display_name.len()).max().unwrap_or(10);
    let mut cols = [16, names, 5, 8, 6, 8, 7];
    if !crate::i18n::current().is_english() {
        for (c, h) in cols.iter_mut().zip(heads) {
            *c = (*c).max(dw(h));
        }
        cols[2] = cols[2].max(dw(yes)).max(dw(no));
    }
    let row = |cells: &[&str]| {
        let mut line = String::new();
        for (i, (v, w)) in cells.iter().zip(cols).enumerate() {
            if i > 0 {
                line.push(' ');
            }
            line.push_str(&if i < 2 { pad_right(v, w) } else { pad_left(v, w) });
        }
        line
    };
    writeln_escaped!(out, "{}", row(&heads))?;
    for c in &r.clocks {
        if c.works {
            let cells = [
                c.name.clone(),
                c.display_name.clone(),
                yes.to_string(),
                or_dash(c.clock_getres_ns),
                c.tick_ns.map_or("-".to_string(), |t| num(t, 3)),
                or_dash(c.observed_resolution_ns),
                c.avg_loop_ns.map_or("-".to_string(), |a| num(a, 2)),
            ];
            let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
            writeln_escaped!(out, "{}", row(&cells))?;
        } else {
            writeln_escaped!(
                out,
                "{}  {}",
                row(&[&c.name, &c.display_name, no]),
                crate::i18n::library::reason(c.reason.as_deref().unwrap_or(""))
            )?;
        }
    }
    if let Some(k) = r.counter_frequency_khz {
        write_line(
            out,
            &t!(
                "counter frequency: {khz} kHz ({source})",
                khz = k,
                source = r
                    .counter_frequency_source
                    .as_deref()
                    .map_or_else(|| t!("unknown source").to_string(), crate::i18n::library::reason)
            ),
        )?;
    }
    write_line(
        out,
        &t!(
            "ns; step = smallest non-zero difference seen in a {ms} ms run; tick = one counter period.",
            ms = PROBE_NS / 1_000_000
        ),
    )
}

//! The server's timing settings at both levels: the full report prices and
//! judges each (with the read PostgreSQL makes for it); both levels then say
//! which to change, as exact `ALTER SYSTEM` lines, or that none is.

use super::Detail;
use crate::i18n::num;
use crate::report::text::write_line;
use crate::t;
use clockscope_explain::timing_settings::TimingSettings;
use clockscope_explain::Report;
use std::io::{self, Write};

/// Writes the timing settings at `detail`, after a blank line (the full
/// report says nothing without them).
pub(super) fn write(out: &mut dyn Write, r: &Report, detail: Detail) -> io::Result<()> {
    let t = &r.timing_settings;
    if detail == Detail::Full {
        if t.settings.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        write_judged(out, t)?;
    } else {
        writeln!(out)?;
    }
    write_recommended(out, t, detail)
}

/// Each setting priced and judged (the full report).
fn write_judged(out: &mut dyn Write, t: &TimingSettings) -> io::Result<()> {
    write_line(
        out,
        t!("The server's timing settings (pg_settings), each priced with the read PostgreSQL makes for it:"),
    )?;
    let io = match &t.io_read {
        Some(p) => t!(
            "  I/O timing: {price} per read; {source}",
            price = p.text(),
            source = p.source
        ),
        None => t!("  I/O timing: not priced: {status}", status = t.io_read_status),
    };
    writeln!(out, "{io}")?;
    let explain = match &t.explain_read {
        Some(p) => t!(
            "  EXPLAIN timing: {price} per read; {source}",
            price = p.text(),
            source = p.source
        ),
        None => t!("  EXPLAIN timing: {status}", status = t.explain_read_status),
    };
    writeln!(out, "{explain}")?;
    if let Some(p) = &t.page_read {
        let interval = match (p.low_ns, p.high_ns) {
            (Some(lo), Some(hi)) => t!(
                " (95% interval {low} to {high} us)",
                low = num(lo / 1000.0, 2),
                high = num(hi / 1000.0, 2)
            ),
            _ => String::new(),
        };
        let line = t!(
            "  reference: {us} us{interval}, {source}",
            us = num(p.ns / 1000.0, 2),
            interval = interval,
            source = p.source
        );
        writeln!(out, "{line}")?;
    }
    for s in &t.settings {
        let line = t!(
            "{judgement} (source: {source}, context: {context})",
            judgement = s.judgement,
            source = s.source,
            context = s.context
        );
        writeln!(out, "  {:<30} {line}", s.name)?;
    }
    Ok(())
}

/// The settings to change, as exact `ALTER SYSTEM` lines, the reload and the
/// restart they need (the one screen says a restart is needed; the full
/// report names the settings), or that none is.
fn write_recommended(out: &mut dyn Write, t: &TimingSettings, detail: Detail) -> io::Result<()> {
    let recs: Vec<_> = t.settings.iter().filter_map(|s| s.recommendation.as_ref()).collect();
    let screen = detail == Detail::Screen;
    if recs.is_empty() {
        let none = if screen {
            t!("Recommendation: no change to the server's timing settings.")
        } else {
            t!("No change recommended.")
        };
        return writeln!(out, "{none}");
    }
    let head = if screen {
        t!("Recommendation (clockscope changed nothing; run as a superuser):")
    } else {
        t!("Recommended (clockscope changed nothing; run these as a superuser):")
    };
    writeln!(out, "{head}")?;
    for r in &recs {
        writeln!(out, "  {}  -- {}", r.alter_system, r.reason)?;
    }
    if recs.iter().any(|r| r.then.is_some()) {
        let reload = if screen {
            "  SELECT pg_reload_conf();"
        } else {
            t!("  SELECT pg_reload_conf();  -- applies those that need no restart")
        };
        writeln!(out, "{reload}")?;
    }
    let restart: Vec<&str> = recs
        .iter()
        .filter(|r| r.needs_restart)
        .map(|r| r.alter_system.as_str())
        .collect();
    if !restart.is_empty() {
        let line = if screen {
            t!("  then restart the server for those that need it (--verbose names them)").to_string()
        } else {
            t!("  restart the server for: {settings}", settings = restart.join(" "))
        };
        writeln!(out, "{line}")?;
    }
    Ok(())
}

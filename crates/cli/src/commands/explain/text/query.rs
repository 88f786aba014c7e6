//! The server and the query at both levels: the one screen names the server
//! and the query; the full report adds how the server is reached, its
//! version, the settings changed for the session, the workload, how the runs
//! are made and how many clock reads each makes.

use super::{thousands, Detail};
use crate::i18n::num;
use crate::{t, tn};
use clockscope_explain::connect::Locality;
use clockscope_explain::Report;
use std::io::{self, Write};

/// Writes the title, the server and the query at `detail`.
pub(super) fn write(out: &mut dyn Write, r: &Report, detail: Detail) -> io::Result<()> {
    writeln!(out, "{}", t!("EXPLAIN ANALYZE timing overhead"))?;
    let server = match detail {
        Detail::Screen => t!(
            "Server:   PostgreSQL {version} at {server}",
            version = r.server_version,
            server = r.server
        ),
        Detail::Full => t!(
            "Server:   PostgreSQL {version} at {server} ({locality})",
            version = r.server_version,
            server = r.server,
            locality = locality_text(&r.server_locality)
        ),
    };
    writeln!(out, "{server}")?;
    if detail == Detail::Screen {
        let query = t!(
            "Query:    {query} ({rows} rows)",
            query = clockscope_system::escape::escape_untrusted(&clockscope_explain::error::one_line(&r.query)),
            rows = thousands(r.rows)
        );
        writeln!(out, "{query}")?;
        return writeln!(out);
    }
    writeln!(out, "{}", t!("Version:  {version}", version = r.server_version_full))?;
    write_settings(out, r)?;
    write_workload(out, r)?;
    write_runs(out, r)
}

fn locality_text(l: &Locality) -> &'static str {
    match l {
        Locality::UnixSocket => t!("unix socket, this machine"),
        Locality::Loopback => t!("loopback, this machine"),
        Locality::Remote => t!("NOT this machine"),
    }
}

/// The server's settings, with those changed for this session and why.
fn write_settings(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    writeln!(out, "{}", t!("Settings:"))?;
    for s in &r.settings {
        match &s.session_value {
            Some(v) => {
                let line = t!(
                    "{server} -> {session} for this session: {why}",
                    server = s.server_value,
                    session = v,
                    why = s.why.as_deref().unwrap_or("")
                );
                writeln!(out, "  {:<32} {line}", s.name)?;
            }
            None => writeln!(out, "  {:<32} {}", s.name, s.server_value)?,
        }
    }
    Ok(())
}

/// The query and what it runs over: `--query`'s own, a series or a TEMP table.
fn write_workload(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let query = if r.workload == clockscope_explain::options::Workload::Query {
        t!(
            "Query:    {query} (--query; each run in BEGIN READ ONLY ... ROLLBACK)",
            query = clockscope_system::escape::escape_untrusted(&clockscope_explain::error::one_line(&r.query))
        )
    } else if r.workload == clockscope_explain::options::Workload::Series {
        t!(
            "Query:    {query} ({rows} rows from generate_series, no table{why})",
            query = r.query,
            rows = thousands(r.rows),
            why = r
                .workload_reason
                .as_deref()
                .map(|w| format!("; {w}"))
                .unwrap_or_default()
        )
    } else {
        t!(
            "Query:    {query} over {rows} rows (a TEMP table from generate_series, about {size} estimated)",
            query = r.query,
            rows = thousands(r.rows),
            size = clockscope_explain::options::size_text(r.temp_table_estimated_bytes)
        )
    };
    writeln!(out, "{query}")
}

/// How the runs are made and how many clock reads each makes.
fn write_runs(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let runs = tn!(
        "Runs:     pairs of TIMING OFF and ON after {n} warm-up pair; times are EXPLAIN's \"Execution Time\"",
        "Runs:     pairs of TIMING OFF and ON after {n} warm-up pair; times are EXPLAIN's \"Execution Time\"",
        r.warmup_runs,
        n = r.warmup_runs
    );
    writeln!(out, "{runs}")?;
    let order = t!(
        "Order:    {order}",
        order = crate::commands::explain::words::order(&r.order)
    );
    writeln!(out, "{order}")?;
    let line = t!(
        "          at least {runs} pairs (--runs), then until the median block slowdown's 95% interval is",
        runs = r.runs
    );
    writeln!(out, "{line}")?;
    let line = t!(
        "          within +-5% of it (order statistics of the blocks' ON/OFF ratios) and the A/A control has 6 \
         blocks, or --max-time {seconds} s",
        seconds = r.max_time_s
    );
    writeln!(out, "{line}")?;
    if let Some(first) = r.clock_sources.first() {
        let line = t!(
            "Reads:    {reads} clock reads per TIMING ON run ({per_row} per row) = {formula}",
            reads = thousands(first.clock_reads_per_run),
            per_row = num(first.clock_reads_per_row, 3),
            formula = r.clock_reads_formula
        );
        writeln!(out, "{line}")?;
    }
    Ok(())
}

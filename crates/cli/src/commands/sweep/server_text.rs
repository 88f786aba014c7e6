//! `sweep --dsn`'s part of the text report: the documentation's table for
//! the server (each clocksource, its read cost, EXPLAIN ANALYZE's measured
//! overhead per row and slowdown with their 95% intervals), the TSC
//! reference on PostgreSQL 19, which server clock was measured and why, and
//! `explain`'s warnings.

use crate::commands::sweep::model::{ServerExplain, SweepReport, SweepServer};
use crate::i18n::{num, pad_left, pad_right};
use crate::report::text::{head_widths, table_row, write_line};
use crate::t;
use std::io::{self, Write};

/// Without `--apply`: the server the sweep would measure.
pub fn write_plan(out: &mut dyn Write, server: &SweepServer) -> io::Result<()> {
    write_line(
        out,
        &t!(
            "With --apply it would also run EXPLAIN ANALYZE on {server} ({locality}) under each clocksource, \
             within --max-time {secs} s in all.",
            server = server.server,
            locality = locality_text(&server.locality),
            secs = crate::i18n::localize_number(server.max_time_s.to_string())
        ),
    )
}

fn locality_text(locality: &str) -> &'static str {
    match locality {
        "unix_socket" => t!("unix socket, this machine"),
        _ => t!("loopback, this machine"),
    }
}

fn interval(low: Option<f64>, high: Option<f64>, digits: usize) -> String {
    match low.zip(high) {
        Some((l, h)) => t!("({low} to {high})", low = num(l, digits), high = num(h, digits)),
        None => t!("(no interval)").to_string(),
    }
}

fn overhead(e: &ServerExplain) -> String {
    t!(
        "{value} ns {interval}",
        value = num(e.overhead_per_row_ns, 1),
        interval = interval(e.overhead_per_row_low_ns, e.overhead_per_row_high_ns, 1)
    )
}

fn slowdown(e: &ServerExplain) -> String {
    format!(
        "{}x {}",
        num(e.slowdown, 2),
        interval(e.slowdown_low, e.slowdown_high, 2)
    )
}

/// The server's table and its notes, after the read-cost table.
pub fn write(out: &mut dyn Write, r: &SweepReport, verbose: bool) -> io::Result<()> {
    let Some(server) = &r.server else {
        return Ok(());
    };
    writeln!(out)?;
    write_line(
        out,
        &t!(
            "EXPLAIN ANALYZE on the server: PostgreSQL {version}, {server} ({locality}); {workload}.",
            version = server.server_version.as_deref().unwrap_or(t!("(not reached)")),
            server = server.server,
            locality = locality_text(&server.locality),
            workload = what_ran(server)
        ),
    )?;
    // Each column as wide as in English, or wider for a longer translated
    // heading; padded by display columns.
    let heads = [
        t!("clocksource"),
        t!("read cost"),
        t!("EXPLAIN overhead/row (95% interval)"),
        t!("slowdown (95% interval)"),
        t!("pairs"),
    ];
    let cols = head_widths(&heads, &[name_width(r), 10, 36, 24, 6]);
    writeln!(out, "{}", table_row(heads[0], &heads[1..], &cols))?;
    for x in r.results.iter() {
        let name = pad_right(&x.clocksource, cols[0]);
        let cost = pad_left(&t!("{value} ns", value = num(x.read_cost.median_ns, 1)), cols[1]);
        match &x.server_explain {
            Some(e) => writeln_escaped!(
                out,
                "{name} {cost} {} {} {}",
                pad_left(&overhead(e), cols[2]),
                pad_left(&slowdown(e), cols[3]),
                pad_left(&e.pairs.to_string(), cols[4])
            )?,
            None => writeln_escaped!(out, "{name} {cost}  {}", t!("not measured on the server"))?,
        }
    }
    write_notes(out, r, server, verbose)
}

/// The first column's width in both tables: the longest clocksource name,
/// at least the header's `clocksource`.
pub fn name_width(r: &SweepReport) -> usize {
    r.results
        .iter()
        .map(|x| x.clocksource.len())
        .max()
        .unwrap_or(0)
        .max("clocksource".len())
}

/// What EXPLAIN ran on, in words.
fn what_ran(server: &SweepServer) -> String {
    match server.workload.as_str() {
        "query" => format!("--query {}", server.query),
        "series" => crate::tn!(
            "count(*) over generate_series of {rows} rows",
            "count(*) over generate_series of {rows} rows",
            server.rows,
            rows = server.rows
        ),
        _ => crate::tn!(
            "count(*) over a TEMP table of {rows} rows",
            "count(*) over a TEMP table of {rows} rows",
            server.rows,
            rows = server.rows
        ),
    }
}

/// Under the server's table: the reference, which clock, unresolved rows, warnings.
fn write_notes(out: &mut dyn Write, r: &SweepReport, server: &SweepServer, verbose: bool) -> io::Result<()> {
    if let Some(t) = &server.tsc_reference {
        writeln_escaped!(
            out,
            "{}",
            crate::tn!(
                "Reference, timing_clock_source = tsc (measured once; no kernel clocksource changes it): \
                 {overhead} per row, slowdown {slowdown}, {pairs} pairs.",
                "Reference, timing_clock_source = tsc (measured once; no kernel clocksource changes it): \
                 {overhead} per row, slowdown {slowdown}, {pairs} pairs.",
                t.pairs,
                overhead = overhead(t),
                slowdown = slowdown(t),
                pairs = t.pairs
            )
        )?;
    }
    if let Some(a) = &server.original_again {
        write_line(
            out,
            &t!(
                "Control, {original} again at the end (drift between runs): {overhead} per row, {slowdown}.",
                original = r.original,
                overhead = overhead(a),
                slowdown = slowdown(a)
            ),
        )?;
    }
    // Before PostgreSQL 19 the system clock is the server's only one: said
    // in full only with --verbose; on 19, or when the role could not SET
    // it, the one screen says which clock was measured.
    let only_clock = server.server_version_num.is_some_and(|v| v < 190_000)
        && r.results
            .iter()
            .filter_map(|x| x.server_explain.as_ref())
            .all(|e| e.follows_kernel_clocksource);
    if !server.clock_source_note.is_empty() && (verbose || !only_clock) {
        write_line(out, &t!("Server clock: {note}.", note = server.clock_source_note))?;
    }
    for x in &r.results {
        if let Some(e) = x.server_explain.as_ref().filter(|e| e.result != "resolved") {
            writeln_escaped!(out, "{}: {}", x.clocksource, e.result_reason)?;
        }
    }
    if verbose {
        let legend = t!(
            "EXPLAIN overhead/row: (slowdown - 1) x TIMING OFF time / rows, from `clockscope explain`'s pairs of \
             TIMING OFF and ON runs (alternating, with an A/A control); each clocksource had its share of \
             --max-time {secs} s.",
            secs = crate::i18n::localize_number(server.max_time_s.to_string())
        );
        writeln!(out, "{legend}")?;
    }
    // The one-screen report gives each kind of warning once (the same
    // warning under each clocksource differs only in its numbers).
    let mut kinds: Vec<String> = Vec::new();
    let mut left_out = 0;
    for w in &server.warnings {
        let kind = kind_of(w);
        if !verbose && kinds.contains(&kind) {
            left_out += 1;
            continue;
        }
        kinds.push(kind);
        write_line(out, &t!("Server warning, {warning}", warning = w))?;
    }
    if left_out > 0 {
        writeln!(
            out,
            "{}",
            t!(
                "({n} more server warning(s) of the same kinds under other clocksources: --verbose shows them.)",
                n = left_out
            )
        )?;
    }
    Ok(())
}

/// A warning's kind: its words before the first digit, without the
/// clocksource it came under.
fn kind_of(warning: &str) -> String {
    let text = warning.split_once(": ").map_or(warning, |(_, t)| t);
    text.split(|c: char| c.is_ascii_digit())
        .next()
        .unwrap_or(text)
        .to_string()
}

//! `clockscope explain`'s text form, for people (its default output): the
//! runs, the overhead per row and per clock read, the prediction, this
//! machine's clocks and the server's timing settings, from a finished
//! [`Report`] of the `clockscope_explain` library.

use crate::i18n::{num, pad_left, pad_right};
use crate::{t, tn};
use clockscope_explain::connect::Locality;
use clockscope_explain::report::{QueryBreakdown, Report};
use clockscope_explain::timing_settings::TimingSettings;
use std::io::{self, Write};

/// `1234567` -> `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    // `100,000` in English; where the comma is the decimal separator, a
    // no-break space (`100 000`), never a comma read as a fraction.
    let sep = if crate::i18n::localize_number(".".into()) == "." {
        ','
    } else {
        '\u{a0}'
    };
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(c);
    }
    out
}

/// `v` with `decimals` digits and `unit`, or `n/a`.
fn opt(v: Option<f64>, decimals: usize, unit: &str) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{}{unit}", num(v, decimals)),
        _ => t!("n/a").into(),
    }
}

/// ` ns` in the report's language (a unit after a number).
fn ns_unit() -> String {
    format!(" {}", t!("ns"))
}

/// `  2.993 ms`: a number right-aligned in `w` columns, then its unit.
fn value(v: f64, decimals: usize, w: usize, unit: &str) -> String {
    format!("{} {unit}", pad_left(&num(v, decimals), w))
}

/// `4.80x`, right-aligned in `w` columns.
fn times(v: f64, w: usize) -> String {
    pad_left(&format!("{}x", num(v, 2)), w)
}

fn locality_text(l: &Locality) -> &'static str {
    match l {
        Locality::UnixSocket => t!("unix socket, this machine"),
        Locality::Loopback => t!("loopback, this machine"),
        Locality::Remote => t!("NOT this machine"),
    }
}

/// Writes the report as text.
pub fn write(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    // Every line fitted to 100 columns, as every clockscope text report.
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    write_setup(out, r)?;
    for s in &r.clock_sources {
        write_source(out, s)?;
    }
    if let Some(q) = &r.query_breakdown {
        write_query_breakdown(out, q)?;
    }
    for k in &r.skipped_clock_sources {
        writeln!(out)?;
        let line = t!(
            "Clock source: {clock} not measured: {reason}",
            clock = k.clock_source,
            reason = k.reason
        );
        writeln!(out, "{line}")?;
    }
    write_tsc_prediction(out, r)?;
    write_machine(out, r)?;
    write_timing_settings(out, &r.timing_settings)?;
    for w in &r.warnings {
        let w = super::summary::warning_text(r, w);
        writeln!(out, "{}", t!("warning: {warning}", warning = w))?;
    }
    Ok(())
}

/// The server, its settings, the query and how the runs are made.
fn write_setup(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    writeln!(out, "{}", t!("EXPLAIN ANALYZE timing overhead"))?;
    let server = t!(
        "Server:   PostgreSQL {version} at {server} ({locality})",
        version = r.server_version,
        server = r.server,
        locality = locality_text(&r.server_locality)
    );
    writeln!(out, "{server}")?;
    writeln!(out, "{}", t!("Version:  {version}", version = r.server_version_full))?;
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
    writeln!(out, "{query}")?;
    write_runs(out, r)
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
    let order = t!("Order:    {order}", order = super::words::order(&r.order));
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

/// The labels of a clock source's block, one column (28 in English).
fn source_labels() -> [&'static str; 15] {
    [
        "TIMING OFF",
        "TIMING ON",
        t!("block slowdown"),
        t!("95% interval of the median"),
        t!("A/A control"),
        t!("result"),
        t!("overhead per row"),
        t!("overhead per clock read"),
        t!("predicted per clock read"),
        t!("predicted overhead per row"),
        t!("predicted TIMING ON"),
        t!("predicted slowdown"),
        t!("observed / predicted"),
        t!("paired in time"),
        t!("observed / back-to-back"),
    ]
}

/// `  label  rest`: a row of a clock source's block.
fn row(out: &mut dyn Write, label: &str, rest: &str) -> io::Result<()> {
    let w = source_labels()
        .iter()
        .map(|l| textwrap::core::display_width(l) + 2)
        .max()
        .unwrap_or(0)
        .max(28);
    writeln!(out, "  {} {rest}", pad_right(label, w))
}

/// One clock source's runs, overheads and prediction.
fn write_source(out: &mut dyn Write, s: &clockscope_explain::report::SourceResult) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        t!("Clock source: {clock} ({how})", clock = s.clock_source, how = s.how)
    )?;
    let head = [t!("median"), t!("min"), t!("max")].map(|h| pad_left(h, 12)).join(" ");
    row(out, "", &head)?;
    let ms = t!("ms");
    let three = |a: f64, b: f64, c: f64| [a, b, c].map(|v| value(v, 3, 9, ms)).join(" ");
    row(
        out,
        "TIMING OFF",
        &three(s.timing_off_ms, s.timing_off_ms_min, s.timing_off_ms_max),
    )?;
    row(
        out,
        "TIMING ON",
        &three(s.timing_on_ms, s.timing_on_ms_min, s.timing_on_ms_max),
    )?;
    let n = &s.noise;
    let blocks = tn!(
        "ON/OFF of each block of two pairs, {blocks} blocks of {pairs} pairs",
        "ON/OFF of each block of two pairs, {blocks} blocks of {pairs} pairs",
        n.blocks,
        blocks = n.blocks,
        pairs = n.pairs
    );
    let slowdowns = [n.slowdown_median, n.slowdown_min, n.slowdown_max].map(|v| times(v, 12));
    row(
        out,
        t!("block slowdown"),
        &format!("{}   {blocks}", slowdowns.join(" ")),
    )?;
    let interval = match (n.slowdown_ci_low, n.slowdown_ci_high, n.slowdown_ci_half_width) {
        (Some(lo), Some(hi), Some(h)) => t!(
            "{low}x to {high}x (+-{pct}%)",
            low = num(lo, 2),
            high = num(hi, 2),
            pct = num(h * 100.0, 1)
        ),
        _ => t!("none (fewer than 6 blocks)").into(),
    };
    let stopped = match n.stopped_by {
        clockscope_explain::measure::StopReason::Precision => t!("target +-5% reached"),
        clockscope_explain::measure::StopReason::MaxTime => t!("target +-5% missed: --max-time"),
        clockscope_explain::measure::StopReason::MaxRuns => t!("target +-5% missed in 1000 pairs"),
        clockscope_explain::measure::StopReason::Interrupted => t!("interrupted"),
    };
    row(out, t!("95% interval of the median"), &format!("{interval}; {stopped}"))?;
    write_control(out, &s.control)?;
    row(out, t!("result"), &super::words::result_reason(s))?;
    let ns = t!("ns");
    let per_row = t!(
        "(slowdown - 1) x TIMING OFF / rows{interval}",
        interval = interval_text(s.overhead_per_row_low_ns, s.overhead_per_row_high_ns, &ns_unit())
    );
    row(
        out,
        t!("overhead per row"),
        &format!("{}   {per_row}", value(s.overhead_per_row_ns, 2, 9, ns)),
    )?;
    let per_read = t!(
        "(slowdown - 1) x TIMING OFF / clock reads{interval}",
        interval = interval_text(s.overhead_per_read_low_ns, s.overhead_per_read_high_ns, &ns_unit())
    );
    row(
        out,
        t!("overhead per clock read"),
        &format!("{}   {per_read}", value(s.overhead_per_read_ns, 2, 9, ns)),
    )?;
    write_prediction(out, s)
}

/// One clock source's prediction, observed / predicted and the old model.
fn write_prediction(out: &mut dyn Write, s: &clockscope_explain::report::SourceResult) -> io::Result<()> {
    let clock = s.predicted_clock.as_deref().unwrap_or(t!("none"));
    let label = t!("predicted per clock read");
    match s.predicted_per_read_ns {
        Some(p) => {
            let what = t!("this machine's {clock} in the instrumentation model", clock = clock);
            row(out, label, &format!("{}   {what}", value(p, 2, 9, t!("ns"))))?;
        }
        None => row(
            out,
            label,
            &format!("{}   {}", pad_left(t!("none"), 12), s.prediction_status),
        )?,
    }
    let interval = interval_text(
        s.predicted_overhead_per_row_low_ns,
        s.predicted_overhead_per_row_high_ns,
        &ns_unit(),
    );
    let what = t!(
        "{reads} reads per row x predicted per read{interval}",
        reads = num(s.clock_reads_per_row, 3),
        interval = interval
    );
    let cell = pad_left(&opt(s.predicted_overhead_per_row_ns, 2, &ns_unit()), 12);
    row(out, t!("predicted overhead per row"), &format!("{cell}   {what}"))?;
    let cell = pad_left(&opt(s.predicted_timing_on_ms, 3, &format!(" {}", t!("ms"))), 12);
    let what = t!("OFF + predicted overhead");
    row(out, t!("predicted TIMING ON"), &format!("{cell}   {what}"))?;
    row(
        out,
        t!("predicted slowdown"),
        &pad_left(&opt(s.predicted_slowdown, 2, "x"), 12),
    )?;
    let what = t!(
        "overhead per clock read / predicted per read{interval}",
        interval = interval_text(s.observed_over_predicted_low, s.observed_over_predicted_high, "")
    );
    let cell = pad_left(&opt(s.observed_over_predicted, 2, ""), 12);
    row(out, t!("observed / predicted"), &format!("{cell}   {what}"))?;
    if let Some(p) = &s.paired_in_time {
        write_paired_in_time(out, p)?;
    }
    let what = t!(
        "old model, for comparison: loop time {ns} per read",
        ns = opt(s.back_to_back_per_read_ns, 2, &ns_unit())
    );
    let cell = pad_left(&opt(s.back_to_back_observed_over_predicted, 2, ""), 12);
    row(out, t!("observed / back-to-back"), &format!("{cell}   {what}"))
}

/// " (95% interval 1.00 to 2.00 ns)", or nothing without one.
fn interval_text(low: Option<f64>, high: Option<f64>, unit: &str) -> String {
    match (low, high) {
        (Some(lo), Some(hi)) => t!(
            " (95% interval {low} to {high}{unit})",
            low = num(lo, 2),
            high = num(hi, 2),
            unit = unit
        ),
        _ => String::new(),
    }
}

/// The A/A control: TIMING OFF against TIMING OFF in the same schedule.
fn write_control(out: &mut dyn Write, c: &clockscope_explain::report::AaControl) -> io::Result<()> {
    let extent = match (c.median, c.low, c.high) {
        (Some(m), Some(lo), Some(hi)) if c.extent == "range" => t!(
            "{median}x, range {low}x to {high}x (fewer than 6 blocks: no interval)",
            median = num(m, 2),
            low = num(lo, 2),
            high = num(hi, 2)
        ),
        (Some(m), Some(lo), Some(hi)) => t!(
            "{median}x, 95% interval {low}x to {high}x",
            median = num(m, 2),
            low = num(lo, 2),
            high = num(hi, 2)
        ),
        _ => t!("none completed").to_string(),
    };
    let line = tn!(
        "{extent}; TIMING OFF against TIMING OFF, {blocks} blocks of {pairs} pairs",
        "{extent}; TIMING OFF against TIMING OFF, {blocks} blocks of {pairs} pairs",
        c.blocks,
        extent = extent,
        blocks = c.blocks,
        pairs = c.pairs
    );
    row(out, t!("A/A control"), &line)
}

/// observed / predicted pair by pair, with its interval when there is one.
fn write_paired_in_time(out: &mut dyn Write, p: &clockscope_explain::report::PairedInTime) -> io::Result<()> {
    let interval = match (p.low, p.high) {
        (Some(low), Some(high)) => t!("95% interval {low}-{high}, ", low = num(low, 2), high = num(high, 2)),
        _ => String::new(),
    };
    let what = tn!(
        "each block against the model slices just before its pairs ({interval}{n} blocks)",
        "each block against the model slices just before its pairs ({interval}{n} blocks)",
        p.pairs,
        interval = interval,
        n = p.pairs
    );
    let cell = pad_left(&num(p.observed_over_predicted, 2), 12);
    row(out, &format!("  {}", t!("paired in time")), &format!("{cell}   {what}"))
}

/// What the TSC would cost on this machine, when predicted.
fn write_tsc_prediction(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    if let Some(t) = &r.tsc_prediction {
        writeln!(out)?;
        let lead = if r.server_version_num < clockscope_explain::measure::PG19_VERSION_NUM {
            t!("With PostgreSQL 19 on this machine (timing_clock_source = tsc)")
        } else {
            t!("With timing_clock_source = tsc on this machine")
        };
        let line = t!(
            "{lead}: about {x}x predicted ({row} ns per row at RDTSC's {read} ns per read in the model);",
            lead = lead,
            x = num(t.predicted_slowdown, 2),
            row = num(t.predicted_overhead_per_row_ns, 2),
            read = num(t.rdtsc_per_read_ns, 2)
        );
        writeln!(out, "{line}")?;
        let scaled = match (t.scaled_slowdown, t.scaled_overhead_per_row_ns) {
            (Some(x), Some(ns)) => t!(
                "  {x}x ({ns} ns per row) scaled by the {clock} source's observed / predicted",
                x = num(x, 2),
                ns = num(ns, 2),
                clock = t.from_clock_source
            ),
            _ => t!(
                "  not scaled: the {clock} source's observed / predicted is not resolved",
                clock = t.from_clock_source
            ),
        };
        writeln!(out, "{scaled}")?;
        writeln!(out, "  {}", super::words::used_by(t, r.server_version_num))?;
    }
    Ok(())
}

/// "21.40 ns (95% interval 21.1 to 21.9 ns)" or "21.40 ns (interval not available)".
fn read_cost_text(c: &clockscope_explain::clockcost::ClockCost) -> String {
    match c.read_cost_interval {
        Some(i) => t!(
            "{cost} ns (95% interval {low} to {high})",
            cost = num(c.read_cost_ns, 2),
            low = num(i.low, 2),
            high = num(i.high, 2)
        ),
        None => t!("{cost} ns (interval not available)", cost = num(c.read_cost_ns, 2)),
    }
}

/// This machine's clocks: the loops' read costs and the model's results.
fn write_machine(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    writeln!(out)?;
    let m = &r.this_machine;
    let head = t!(
        "This machine's clocks (pg_test_timing's loop, {seconds} s each: average loop, and the read cost without \
         interference over 9 chunks):",
        seconds = num(r.clock_measure_ns as f64 / 1e9, 1)
    );
    writeln!(out, "{head}")?;
    for c in std::iter::once(&m.system).chain(&m.rdtsc).chain(&m.rdtscp) {
        let freq = match (c.frequency_khz, c.frequency_source.as_deref()) {
            (Some(khz), Some(src)) => t!(", at {khz} kHz ({source})", khz = khz, source = src),
            _ => String::new(),
        };
        let rest = t!(
            "ns per loop, read cost {cost}{freq}",
            cost = read_cost_text(c),
            freq = freq
        );
        writeln!(out, "  {:<34} {} {rest}", c.clock, pad_left(&num(c.per_read_ns, 2), 8))?;
    }
    match (&m.rdtsc, &m.rdtsc_unavailable) {
        (Some(_), _) if m.tsc_auto => writeln!(out, "{}", t!("  PostgreSQL 19's auto picks the TSC here"))?,
        (Some(_), _) => writeln!(out, "{}", t!("  PostgreSQL 19's auto does not pick the TSC here"))?,
        (None, Some(why)) => {
            let why = t!("not measured: {reason}", reason = why);
            writeln!(out, "  {:<34} {why}", "RDTSC")?;
        }
        (None, None) => {}
    }
    // What TIMING ON adds per row in the model of the server's
    // instrumentation (the prediction's per-read cost).
    for c in std::iter::once(&m.system).chain(m.rdtsc.as_ref()) {
        if let Some(e) = &c.executor_loop {
            let line = t!(
                "{headline} per row per node with TIMING ON, {interval}; {instrumentation}",
                headline = crate::i18n::library::reason(&e.headline()),
                interval = crate::i18n::library::reason(&e.interval_text),
                instrumentation = crate::i18n::library::reason(&e.instrumentation)
            );
            writeln!(out, "  {:<34} {line}", c.clock)?;
            let status = if e.resolved {
                String::new()
            } else {
                format!("; {}", crate::i18n::library::reason(&e.status))
            };
            let line = t!(
                "model: median {median} ns, {pairs} pairs of {rows} rows, work {work} ns/row ({steps} steps), \
                 {sampling}{status}",
                median = num(e.median_ns_per_row, 2),
                pairs = e.pairs,
                rows = e.rows_per_round,
                work = num(e.work_ns_per_row, 1),
                steps = e.work_steps,
                sampling = crate::i18n::library::reason(&e.sampling),
                status = status
            );
            writeln!(out, "  {:<34} {line}", "")?;
        }
    }
    Ok(())
}

/// The server's timing settings, judged, and the ALTER SYSTEM lines.
fn write_timing_settings(out: &mut dyn Write, t: &TimingSettings) -> io::Result<()> {
    if t.settings.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        t!("The server's timing settings (pg_settings), each priced with the read PostgreSQL makes for it:")
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
    write_recommended(out, t)
}

/// The ALTER SYSTEM lines, the reload and the restart they need.
fn write_recommended(out: &mut dyn Write, t: &TimingSettings) -> io::Result<()> {
    let recs: Vec<_> = t.settings.iter().filter_map(|s| s.recommendation.as_ref()).collect();
    if recs.is_empty() {
        return writeln!(out, "{}", t!("No change recommended."));
    }
    writeln!(
        out,
        "{}",
        t!("Recommended (clockscope changed nothing; run these as a superuser):")
    )?;
    for r in &recs {
        writeln!(out, "  {}  -- {}", r.alter_system, r.reason)?;
    }
    if recs.iter().any(|r| r.then.is_some()) {
        writeln!(
            out,
            "{}",
            t!("  SELECT pg_reload_conf();  -- applies those that need no restart")
        )?;
    }
    let restart: Vec<&str> = recs
        .iter()
        .filter(|r| r.needs_restart)
        .map(|r| r.alter_system.as_str())
        .collect();
    if !restart.is_empty() {
        let line = t!("  restart the server for: {settings}", settings = restart.join(" "));
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// Nodes shown in the text (all are in the JSON).
const SHOWN_NODES: usize = 5;

/// `--query`: the nodes that pay most, and what auto_explain.log_timing costs.
fn write_query_breakdown(out: &mut dyn Write, q: &QueryBreakdown) -> io::Result<()> {
    writeln!(out)?;
    let head = t!(
        "Where the {ms} ms go ({clock}; shared by clock reads = 2 x (rows x loops + loops)):",
        ms = num(q.added_ms, 3),
        clock = q.clock_source
    );
    writeln!(out, "{head}")?;
    let name_w = 36.max(textwrap::core::display_width(t!("node")));
    writeln!(
        out,
        "  {} {} {} {}",
        pad_right(t!("node"), name_w),
        pad_left(t!("clock reads"), 13),
        pad_left(t!("added"), 10),
        pad_left(t!("of own time"), 13)
    )?;
    let mut by_cost: Vec<&clockscope_explain::nodes::NodeCost> = q.nodes.iter().collect();
    by_cost.sort_by_key(|n| std::cmp::Reverse(n.clock_reads));
    for n in by_cost.iter().take(SHOWN_NODES) {
        let name: String = n.node.chars().take(36).collect();
        writeln!(
            out,
            "  {} {:>13} {} {:>13}",
            pad_right(&name, name_w),
            thousands(n.clock_reads),
            value(n.added_ms, 3, 7, t!("ms")),
            opt(n.added_fraction_of_own.map(|f| f * 100.0), 0, "%")
        )?;
    }
    if q.nodes.len() > SHOWN_NODES {
        let more = q.nodes.len() - SHOWN_NODES;
        let line = tn!(
            "  ... {n} more nodes in --format json",
            "  ... {n} more nodes in --format json",
            more,
            n = more
        );
        writeln!(out, "{line}")?;
    }
    let line = t!(
        "auto_explain.log_timing = on (with log_analyze = on) adds the same {ms} ms ({x}x) to each run",
        ms = num(q.auto_explain_log_timing_added_ms, 3),
        x = num(q.auto_explain_log_timing_slowdown, 2)
    );
    writeln!(out, "{line}")?;
    writeln!(
        out,
        "{}",
        t!("  of this query it samples, logged or not; log_timing = off keeps the row counts without it.")
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(2_000_006), "2,000,006");
    }
}

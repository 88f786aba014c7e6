//! The SVG plot of `check --plot`: each measured clock's distribution of
//! successive-read differences over log2 buckets, drawn with plotters, made
//! to stand alone when pasted into a ticket.
//!
//! - A title with the host, the time of the run (UTC), the kernel, the
//!   clocksource, the CPU and the time measured per clock.
//! - Two kinds ([`PlotKind`]): `cdf` (the default), the share of reads
//!   shorter than each bucket's upper edge 2^k ns (each bucket's reads
//!   counted at its upper edge, so the curve never shows more reads below a
//!   time than were measured there), on a linear 0-100% axis with the 90%
//!   line; `histogram`, the share of reads per bucket on a log axis. Both are
//!   steps across the buckets (a bucket holds 2^(k-1) .. 2^k - 1 ns), never
//!   lines through bucket middles. Zero differences (coarse clocks) have no
//!   place on a log axis: the CDF starts at their share, the histogram
//!   leaves them out, and the legend gives it.
//! - The 1 µs line labelled with PostgreSQL's rule (pg_test_timing's
//!   documentation: good when more than 90% of reads take under 1 µs).
//! - Each clock's read cost marked: a thin vertical line in its colour with
//!   its marker at the top (see `read_cost_ns`).
//! - The legend beside the chart, never over the data; clocks told apart by
//!   colour (Okabe-Ito, safe with colour blindness) and by line style and
//!   marker together (solid + circle, dashed + triangle, dotted + square):
//!   colour i mod 8 with style i mod 3 repeats no pair before 24 clocks.
//!
//! The files: `curve` turns buckets into steps, `chart` draws the axes
//! and curves, `legend` the legend, `labels` the words, `style` the
//! colours and line styles; this file lays out the page.

mod chart;
mod curve;
mod labels;
mod legend;
mod style;

pub use labels::utc_minutes;

use crate::args::PlotKind;
use crate::commands::check::model::CheckReport;
use curve::bucket_edges_ns;
use labels::title_lines;
use plotters::coord::Shift;
use plotters::prelude::*;

/// PostgreSQL's rule, as the 1 µs line's label.
pub const POSTGRESQL_RULE: &str = "1 µs: PostgreSQL's rule, good when > 90% of reads are under 1 µs";

/// The host and time in the title: the report's own stamp, so the plot
/// and the report it comes with name the same host and minute.
#[derive(Clone, Debug)]
pub struct PlotHeader {
    /// The host name (untrusted text, escaped when drawn).
    pub host: String,
    /// When the report was made, UTC, e.g. "2026-11-23 19:40 UTC".
    pub time_utc: String,
}

impl PlotHeader {
    /// The host and time of `stamp` (its RFC 3339 time shown to the minute).
    pub fn from_stamp(stamp: &crate::report::stamp::ReportStamp) -> PlotHeader {
        let t = &stamp.timestamp;
        let time_utc = time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
            .map(|d| utc_minutes(d.into()))
            .unwrap_or_else(|_| t.clone());
        PlotHeader {
            host: stamp.host.clone(),
            time_utc,
        }
    }
}

fn anyhow_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// What `--plot` draws: the report, the chart's kind, and the title's host
/// and time.
pub struct Plot<'a> {
    /// The measured report the chart draws.
    pub report: &'a CheckReport,
    /// Histogram or CDF.
    pub kind: PlotKind,
    /// The title's host and time.
    pub header: PlotHeader,
}

/// Writes the chart as an SVG document (an error of the drawing library
/// comes back as [`std::io::ErrorKind::Other`]).
pub fn write(out: &mut dyn std::io::Write, p: &Plot<'_>) -> std::io::Result<()> {
    let mut svg = String::new();
    draw(&mut svg, p.report, p.kind, &p.header).map_err(|e| std::io::Error::other(format!("{e:#}")))?;
    out.write_all(svg.as_bytes())
}

/// Pixels of the legend per clock and of the chart's title band.
const LEGEND_ROW: i32 = 40;
const TITLE_BAND: u32 = 86;
const LEGEND_WIDTH: u32 = 450;
/// The SVG's width, pixels.
const WIDTH: u32 = 1320;

/// Lays out the page: the title band on top, the chart and the legend
/// beside it below.
fn draw(svg: &mut String, r: &CheckReport, kind: PlotKind, header: &PlotHeader) -> anyhow::Result<()> {
    let n = r.clocks.len() as u32;
    let height = (TITLE_BAND + 150 + n * LEGEND_ROW as u32).max(620);
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(anyhow_err)?;
    let (top, rest) = root.split_vertically(TITLE_BAND);
    draw_title(&top, title_lines(r, kind, header))?;
    let (chart_area, legend_area) = rest.split_horizontally(WIDTH - LEGEND_WIDTH);
    let max_edge = max_edge_ns(r);
    match kind {
        PlotKind::Cdf => chart::draw_cdf(&chart_area, r, max_edge)?,
        PlotKind::Histogram => chart::draw_histogram(&chart_area, r, max_edge)?,
    }
    legend::draw_legend(&legend_area, r, kind)?;
    root.present().map_err(anyhow_err)
}

/// The title's three lines in the band on top.
fn draw_title(top: &DrawingArea<SVGBackend, Shift>, [t1, t2, t3]: [String; 3]) -> anyhow::Result<()> {
    top.draw(&Text::new(
        t1,
        (16, 10),
        ("sans-serif", 22).into_font().style(FontStyle::Bold),
    ))
    .map_err(anyhow_err)?;
    top.draw(&Text::new(t2, (16, 40), ("sans-serif", 15)))
        .map_err(anyhow_err)?;
    top.draw(&Text::new(
        t3,
        (16, 62),
        ("sans-serif", 14).into_font().color(&RGBColor(80, 80, 80)),
    ))
    .map_err(anyhow_err)
}

/// The x axis reaches past the longest difference and always shows 1 µs:
/// the highest non-empty bucket's upper edge, at least 2048 ns.
fn max_edge_ns(r: &CheckReport) -> f64 {
    r.clocks
        .iter()
        .flat_map(|c| {
            c.histogram
                .iter()
                .enumerate()
                .filter(|(_, b)| b.count > 0)
                .map(|(i, _)| i)
        })
        .filter_map(bucket_edges_ns)
        .map(|(_, hi)| hi)
        .fold(2048.0f64, f64::max)
}

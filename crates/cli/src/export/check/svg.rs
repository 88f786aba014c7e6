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
//!   its marker at the top (see [`read_cost_ns`]).
//! - The legend beside the chart, never over the data; clocks told apart by
//!   colour (Okabe-Ito, safe with colour blindness) and by line style and
//!   marker together (solid + circle, dashed + triangle, dotted + square):
//!   colour i mod 8 with style i mod 3 repeats no pair before 24 clocks.

use crate::args::PlotKind;
use crate::model::check::stats::ClockStats;
use crate::model::check::CheckReport;
use clockscope::escape::escape_untrusted;
use plotters::coord::ranged1d::Ranged;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::time::SystemTime;

/// Smallest share drawn on the histogram's log axis, percent.
const MIN_SHARE_PCT: f64 = 1e-6;

/// Top of the histogram's log axis, percent (labels stop at 100%).
const HISTOGRAM_TOP_PCT: f64 = 250.0;

/// The CDF's markers stop once this share of reads is below the bucket's
/// upper edge: the flat tail near 100% would be a row of markers.
const CDF_MARKERS_UP_TO_PCT: f64 = 99.9;

/// PostgreSQL's rule, as the 1 µs line's label.
pub const POSTGRESQL_RULE: &str = "1 µs: PostgreSQL's rule, good when > 90% of reads are under 1 µs";

/// Okabe & Ito's colour-blind-safe palette (black last).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(230, 159, 0),   // orange
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(160, 140, 0),   // yellow, darkened to read on white
    RGBColor(0, 0, 0),       // black
];

/// Line styles, each with its marker; cycled independently of the colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineStyle {
    /// Solid line, circles.
    Solid,
    /// Dashed line, triangles.
    Dashed,
    /// Dotted line, squares.
    Dotted,
}

const STYLES: [LineStyle; 3] = [LineStyle::Solid, LineStyle::Dashed, LineStyle::Dotted];

/// Clock `i`'s colour and line style: no pair repeats before 24 clocks
/// (8 colours and 3 styles are coprime cycles), and neighbours differ in both.
fn look(i: usize) -> (RGBColor, LineStyle) {
    (PALETTE[i % PALETTE.len()], STYLES[i % STYLES.len()])
}

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
    pub fn from_stamp(stamp: &crate::model::stamp::ReportStamp) -> PlotHeader {
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

/// "2026-11-23 19:40 UTC".
pub fn utc_minutes(t: SystemTime) -> String {
    let d = time::OffsetDateTime::from(t);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        d.year(),
        u8::from(d.month()),
        d.day(),
        d.hour(),
        d.minute()
    )
}

/// The read cost marked for each clock, and its label:
/// `ClockStats::read_cost_ns`, the mean cost with the interference gaps taken
/// out (pg_test_timing's average loop includes them). This is the one place
/// the plot reads a clock's cost.
fn read_cost_ns(c: &ClockStats) -> (f64, &'static str) {
    (c.read_cost_ns, "interference gaps out")
}

fn anyhow_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// What `--plot` draws: the report, the chart's kind, and the title's host
/// and time.
pub struct Plot<'a> {
    pub report: &'a CheckReport,
    pub kind: PlotKind,
    pub header: PlotHeader,
}

/// Writes the chart as an SVG document (an error of the drawing library
/// comes back as [`std::io::ErrorKind::Other`]).
pub fn write(out: &mut dyn std::io::Write, p: &Plot<'_>) -> std::io::Result<()> {
    let svg = render(p.report, p.kind, &p.header).map_err(|e| std::io::Error::other(format!("{e:#}")))?;
    out.write_all(svg.as_bytes())
}

/// Draws the chart of `kind` as an SVG document titled with `header`.
fn render(r: &CheckReport, kind: PlotKind, header: &PlotHeader) -> anyhow::Result<String> {
    let mut svg = String::new();
    draw(&mut svg, r, kind, header)?;
    Ok(svg)
}

/// Bucket `b`'s lower and upper edges in ns: [2^(b-1), 2^b); bucket 0
/// (zero differences) has none.
fn bucket_edges_ns(b: usize) -> Option<(f64, f64)> {
    (b >= 1).then(|| ((b as f64 - 1.0).exp2(), (b as f64).exp2()))
}

/// One clock's curve: polylines (a gap in the data ends one) and the points
/// where its markers go.
#[derive(Debug, Default, PartialEq)]
struct Curve {
    lines: Vec<Vec<(f64, f64)>>,
    markers: Vec<(f64, f64)>,
}

/// Histogram steps: each non-empty bucket a flat step at its share across
/// its edges, joined to a non-empty neighbour by a vertical; a marker at
/// each step's geometric middle.
fn histogram_steps(c: &ClockStats) -> Curve {
    let total: u64 = c.histogram.iter().map(|b| b.count).sum();
    let mut curve = Curve::default();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for (b, bucket) in c.histogram.iter().enumerate() {
        match bucket_edges_ns(b) {
            Some((lo, hi)) if bucket.count > 0 && total > 0 => {
                let share = (bucket.count as f64 * 100.0 / total as f64).max(MIN_SHARE_PCT);
                current.push((lo, share));
                current.push((hi, share));
                curve.markers.push(((lo * hi).sqrt(), share));
            }
            _ => {
                if !current.is_empty() {
                    curve.lines.push(std::mem::take(&mut current));
                }
            }
        }
    }
    if !current.is_empty() {
        curve.lines.push(current);
    }
    curve
}

/// CDF steps: from the first non-empty bucket's lower edge at the share of
/// zero differences, flat across each bucket and up at its upper edge by
/// its share, to 100% at the last one's upper edge; a marker at each
/// non-empty bucket's upper corner (the exact share of reads shorter than
/// 2^k ns) until the share reaches [`CDF_MARKERS_UP_TO_PCT`].
fn cdf_steps(c: &ClockStats) -> Curve {
    let total: u64 = c.histogram.iter().map(|b| b.count).sum();
    let mut curve = Curve::default();
    if total == 0 {
        return curve;
    }
    let share = |n: u64| n as f64 * 100.0 / total as f64;
    let mut below = c.histogram.first().map_or(0, |b| b.count);
    let mut line: Vec<(f64, f64)> = Vec::new();
    for (b, bucket) in c.histogram.iter().enumerate() {
        let Some((lo, hi)) = bucket_edges_ns(b) else { continue };
        if line.is_empty() {
            if bucket.count == 0 {
                continue;
            }
            line.push((lo, share(below)));
        }
        if bucket.count > 0 {
            line.push((hi, share(below)));
            if share(below) < CDF_MARKERS_UP_TO_PCT {
                curve.markers.push((hi, share(below + bucket.count)));
            }
            below += bucket.count;
            line.push((hi, share(below)));
        }
        if below == total {
            break;
        }
    }
    if !line.is_empty() {
        curve.lines.push(line);
    }
    curve
}

/// "17 ns", "2 µs", "4 ms", "1 s" for the x axis.
fn ns_label(ns: &f64) -> String {
    let (v, unit) = match *ns {
        n if n >= 1e9 => (n / 1e9, "s"),
        n if n >= 1e6 => (n / 1e6, "ms"),
        n if n >= 1e3 => (n / 1e3, "µs"),
        n => (n, "ns"),
    };
    format!("{} {unit}", (v * 100.0).round() / 100.0)
}

fn pct_label(p: &f64) -> String {
    if *p >= 1.0 {
        format!("{p:.0}%")
    } else {
        format!("{p}%")
    }
}

/// The title's three lines.
fn title_lines(r: &CheckReport, kind: PlotKind, header: &PlotHeader) -> [String; 3] {
    let env = &r.environment;
    let unknown = |v: &Option<String>| {
        v.as_deref()
            .map_or("unknown".to_string(), |s| escape_untrusted(s).into_owned())
    };
    let cpus = env
        .cpus
        .map_or(String::new(), |n| format!(", {n} CPU{}", if n == 1 { "" } else { "s" }));
    let guest = env
        .hypervisor
        .as_deref()
        .map_or(String::new(), |h| format!(" ({} guest)", escape_untrusted(h)));
    let measured_s = r
        .clocks
        .iter()
        .map(|c| c.elapsed_ns as f64 / 1e9)
        .fold(0.0f64, f64::max);
    let per_clock = if r.clocks.is_empty() {
        format!("{} s per clock", r.duration_per_clock_s)
    } else {
        format!("{measured_s:.2} s per clock, {} clocks", r.clocks.len())
    };
    let what = match kind {
        PlotKind::Cdf => {
            "Share of reads shorter than each time (cumulative; each log2 bucket's reads counted at its upper edge 2^k ns)"
        }
        PlotKind::Histogram => "Share of reads per log2 bucket of the time between successive reads (2^(k-1) .. 2^k ns)",
    };
    [
        format!(
            "Clock read times on {}, {}",
            escape_untrusted(&header.host),
            escape_untrusted(&header.time_utc)
        ),
        format!(
            "kernel {}, clocksource {}, {}{cpus}{guest}; {per_clock} ({})",
            unknown(&env.kernel_release),
            unknown(&env.current_clocksource),
            unknown(&env.cpu_model),
            escape_untrusted(&r.stamp.tool)
        ),
        what.to_string(),
    ]
}

/// The legend's second line for clock `c`.
fn legend_detail(c: &ClockStats) -> String {
    let (cost, how) = read_cost_ns(c);
    let zero = if c.zero_steps_pct > 0.0 {
        format!(", {:.1}% zero steps", c.zero_steps_pct)
    } else {
        String::new()
    };
    format!(
        "read cost {cost:.1} ns ({how}), p50 {} ns, {:.2}% < 1 µs{zero}",
        c.percentiles_ns.p50, c.under_1us_pct
    )
}

/// Pixels of the legend per clock and of the chart's title band.
const LEGEND_ROW: i32 = 40;
const TITLE_BAND: u32 = 86;
const LEGEND_WIDTH: u32 = 450;
/// The SVG's width, pixels.
const WIDTH: u32 = 1320;

fn draw(svg: &mut String, r: &CheckReport, kind: PlotKind, header: &PlotHeader) -> anyhow::Result<()> {
    let n = r.clocks.len() as u32;
    let height = (TITLE_BAND + 150 + n * LEGEND_ROW as u32).max(620);
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(anyhow_err)?;
    let (top, rest) = root.split_vertically(TITLE_BAND);
    let [t1, t2, t3] = title_lines(r, kind, header);
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
    .map_err(anyhow_err)?;
    let (chart_area, legend_area) = rest.split_horizontally(WIDTH - LEGEND_WIDTH);

    // The x axis reaches past the longest difference and always shows 1 µs.
    let max_edge = r
        .clocks
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
        .fold(2048.0f64, f64::max);
    let x_range = (1f64..max_edge * 2.0).log_scale();
    match kind {
        PlotKind::Cdf => {
            let mut chart = chart_builder(&chart_area)
                .build_cartesian_2d(x_range, 0f64..100f64)
                .map_err(anyhow_err)?;
            chart
                .configure_mesh()
                .x_desc("time between successive reads")
                .y_desc("% of reads shorter")
                .x_label_formatter(&ns_label)
                .y_label_formatter(&|p| format!("{p:.0}%"))
                .draw()
                .map_err(anyhow_err)?;
            let grey = RGBColor(110, 110, 110);
            chart
                .draw_series(std::iter::once(DashedPathElement::new(
                    vec![(1.0, 90.0), (max_edge * 2.0, 90.0)],
                    6,
                    4,
                    grey.stroke_width(1),
                )))
                .map_err(anyhow_err)?;
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((1.0, 90.0))
                        + Text::new("90%", (4, -16), ("sans-serif", 12).into_font().color(&grey)),
                ))
                .map_err(anyhow_err)?;
            draw_common(&mut chart, r, kind, 0.0, 100.0)?;
        }
        PlotKind::Histogram => {
            let mut chart = chart_builder(&chart_area)
                // Headroom above 100% so a full bucket's step and markers show.
                .build_cartesian_2d(x_range, (MIN_SHARE_PCT..HISTOGRAM_TOP_PCT).log_scale())
                .map_err(anyhow_err)?;
            chart
                .configure_mesh()
                .x_desc("time between successive reads (log2 buckets)")
                .y_desc("% of reads in the bucket")
                .x_label_formatter(&ns_label)
                .y_label_formatter(&|p| if *p > 100.0 { String::new() } else { pct_label(p) })
                .draw()
                .map_err(anyhow_err)?;
            draw_common(&mut chart, r, kind, MIN_SHARE_PCT, HISTOGRAM_TOP_PCT)?;
        }
    }
    draw_legend(&legend_area, r, kind)?;
    root.present().map_err(anyhow_err)?;
    Ok(())
}

fn chart_builder<'a, 'b>(area: &'a DrawingArea<SVGBackend<'b>, Shift>) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(area);
    b.margin(14).margin_top(26).x_label_area_size(48).y_label_area_size(72);
    b
}

type Chart<'a, 'b, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogCoord<f64>, Y>>;

/// The 1 µs line, the clocks' curves and their read-cost marks, on either axis.
fn draw_common<Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, '_, Y>,
    r: &CheckReport,
    kind: PlotKind,
    y_lo: f64,
    y_hi: f64,
) -> anyhow::Result<()> {
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(1000.0, y_lo), (1000.0, y_hi)],
            BLACK.stroke_width(2),
        )))
        .map_err(anyhow_err)?;
    chart
        .draw_series(std::iter::once(
            EmptyElement::at((1000.0, y_hi)) + Text::new(POSTGRESQL_RULE, (6, -20), ("sans-serif", 13)),
        ))
        .map_err(anyhow_err)?;
    for (i, c) in r.clocks.iter().enumerate() {
        let (color, style) = look(i);
        let curve = match kind {
            PlotKind::Cdf => cdf_steps(c),
            PlotKind::Histogram => histogram_steps(c),
        };
        let stroke = color.stroke_width(2);
        for line in curve.lines {
            match style {
                LineStyle::Solid => chart.draw_series(std::iter::once(PathElement::new(line, stroke))),
                LineStyle::Dashed => chart.draw_series(std::iter::once(DashedPathElement::new(line, 9, 5, stroke))),
                LineStyle::Dotted => chart.draw_series(std::iter::once(DashedPathElement::new(line, 2, 4, stroke))),
            }
            .map_err(anyhow_err)?;
        }
        draw_markers(chart, curve.markers, (0, 0), color, style)?;
        // The read cost: a thin line across the chart, the clock's marker
        // just below the top.
        let (cost, _) = read_cost_ns(c);
        if cost >= 1.0 {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(cost, y_lo), (cost, y_hi)],
                    color.mix(0.6).stroke_width(1),
                )))
                .map_err(anyhow_err)?;
            draw_markers(chart, vec![(cost, y_hi)], (0, 7), color, style)?;
        }
    }
    Ok(())
}

/// Draws the markers of `style` at `points`, shifted by `offset` pixels.
fn draw_markers<Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, '_, Y>,
    points: Vec<(f64, f64)>,
    (dx, dy): (i32, i32),
    color: RGBColor,
    style: LineStyle,
) -> anyhow::Result<()> {
    let fill = color.filled();
    let points = points.into_iter();
    match style {
        LineStyle::Solid => chart
            .draw_series(points.map(|p| EmptyElement::at(p) + Circle::new((dx, dy), 4, fill)))
            .map(|_| ()),
        LineStyle::Dashed => chart
            .draw_series(points.map(|p| EmptyElement::at(p) + TriangleMarker::new((dx, dy), 6, fill)))
            .map(|_| ()),
        LineStyle::Dotted => chart
            .draw_series(
                points.map(|p| EmptyElement::at(p) + Rectangle::new([(dx - 4, dy - 4), (dx + 4, dy + 4)], fill)),
            )
            .map(|_| ()),
    }
    .map_err(anyhow_err)
}

/// The legend, beside the chart: per clock its line and marker, name, and
/// read cost, median and share under 1 µs; then what the marks mean.
fn draw_legend(area: &DrawingArea<SVGBackend, Shift>, r: &CheckReport, kind: PlotKind) -> anyhow::Result<()> {
    let name_font = ("sans-serif", 14).into_font();
    let detail_font = ("sans-serif", 12).into_font().color(&RGBColor(60, 60, 60));
    let mut y = 30;
    for (i, c) in r.clocks.iter().enumerate() {
        let (color, style) = look(i);
        let line = vec![(4, y + 8), (48, y + 8)];
        let stroke = color.stroke_width(2);
        match style {
            LineStyle::Solid => area.draw(&PathElement::new(line, stroke)),
            LineStyle::Dashed => area.draw(&DashedPathElement::new(line, 9, 5, stroke)),
            LineStyle::Dotted => area.draw(&DashedPathElement::new(line, 2, 4, stroke)),
        }
        .map_err(anyhow_err)?;
        let (at, fill) = ((26, y + 8), color.filled());
        match style {
            LineStyle::Solid => area.draw(&Circle::new(at, 4, fill)),
            LineStyle::Dashed => area.draw(&TriangleMarker::new(at, 6, fill)),
            LineStyle::Dotted => area.draw(&Rectangle::new([(at.0 - 4, at.1 - 4), (at.0 + 4, at.1 + 4)], fill)),
        }
        .map_err(anyhow_err)?;
        // plotters escapes XML's `<`, `&` and quotes in text; control
        // characters are ours to escape.
        area.draw(&Text::new(
            escape_untrusted(&c.display_name),
            (56, y),
            name_font.clone(),
        ))
        .map_err(anyhow_err)?;
        area.draw(&Text::new(legend_detail(c), (56, y + 17), detail_font.clone()))
            .map_err(anyhow_err)?;
        y += LEGEND_ROW;
    }
    let notes = [
        "Thin vertical line and marker at the top: the clock's read cost.".to_string(),
        match kind {
            PlotKind::Cdf => "Markers: share of reads shorter than 2^k ns (exact).".to_string(),
            PlotKind::Histogram => "Zero differences (coarse clocks) are not drawn.".to_string(),
        },
    ];
    for note in notes {
        y += 4;
        area.draw(&Text::new(note, (4, y), detail_font.clone()))
            .map_err(anyhow_err)?;
        y += 16;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::check::stats::{Bucket, Percentiles};

    fn stats(counts: &[u64]) -> ClockStats {
        ClockStats {
            name: "x".into(),
            display_name: "X".into(),
            avg_loop_ns: 20.0,
            read_cost_ns: 20.0,
            interference: Default::default(),
            loops: counts.iter().sum(),
            elapsed_ns: 1,
            elapsed_source: Default::default(),
            end_minus_start_ns: 1,
            percentiles_ns: Percentiles {
                p50: 0,
                p90: 0,
                p99: 0,
                p99_9: 0,
                p99_99: 0,
                max: 0,
            },
            resolution_ns: None,
            clock_getres_ns: None,
            zero_steps_pct: 0.0,
            under_1us_pct: 0.0,
            backward_steps: 0,
            largest_backward_ns: 0,
            histogram: counts
                .iter()
                .enumerate()
                .map(|(b, &count)| Bucket {
                    le_ns: (1u64 << b) - 1,
                    count,
                })
                .collect(),
            frequency_khz: None,
            interrupted: false,
        }
    }

    #[test]
    fn edges_and_labels() {
        assert_eq!(bucket_edges_ns(0), None);
        assert_eq!(bucket_edges_ns(1), Some((1.0, 2.0)));
        assert_eq!(bucket_edges_ns(5), Some((16.0, 32.0)));
        assert_eq!(ns_label(&20.0), "20 ns");
        assert_eq!(ns_label(&4_000_000.0), "4 ms");
        assert_eq!(ns_label(&1500.0), "1.5 µs");
        assert_eq!(pct_label(&10.0), "10%");
        assert_eq!(pct_label(&0.001), "0.001%");
        assert_eq!(
            utc_minutes(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_795_980_000)),
            "2026-11-29 19:20 UTC"
        );
    }

    #[test]
    fn histogram_is_steps_with_gaps_kept() {
        // Buckets 5 (16-31 ns): 3, 6: 1, none in 7, 8: 4 (and 2 zeros, not drawn).
        let c = stats(&[2, 0, 0, 0, 0, 3, 1, 0, 4]);
        let h = histogram_steps(&c);
        let pct = |n: f64| n * 100.0 / 10.0;
        assert_eq!(
            h.lines,
            vec![
                vec![(16.0, pct(3.0)), (32.0, pct(3.0)), (32.0, pct(1.0)), (64.0, pct(1.0))],
                vec![(128.0, pct(4.0)), (256.0, pct(4.0))],
            ]
        );
        assert_eq!(h.markers.len(), 3);
        assert!((h.markers[0].0 - (16.0f64 * 32.0).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn cdf_starts_at_the_zero_share_and_steps_up_at_upper_edges() {
        let c = stats(&[2, 0, 0, 0, 0, 3, 1, 0, 4]);
        let cdf = cdf_steps(&c);
        assert_eq!(
            cdf.lines,
            vec![vec![
                (16.0, 20.0),
                (32.0, 20.0),
                (32.0, 50.0),
                (64.0, 50.0),
                (64.0, 60.0),
                (256.0, 60.0),
                (256.0, 100.0),
            ]]
        );
        assert_eq!(cdf.markers, vec![(32.0, 50.0), (64.0, 60.0), (256.0, 100.0)]);
        assert_eq!(cdf_steps(&stats(&[])), Curve::default());
    }

    #[test]
    fn twelve_clocks_never_share_a_colour_and_style() {
        let looks: Vec<_> = (0..24).map(look).map(|(c, s)| (c.0, c.1, c.2, s)).collect();
        for (i, a) in looks.iter().enumerate() {
            assert!(!looks[i + 1..].contains(a), "clock {i} repeats");
        }
        // Neighbours differ in colour and in style.
        for w in looks.windows(2) {
            assert!((w[0].0, w[0].1, w[0].2) != (w[1].0, w[1].1, w[1].2) && w[0].3 != w[1].3);
        }
    }
}

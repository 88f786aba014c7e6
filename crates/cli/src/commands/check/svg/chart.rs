//! The plot's chart: the axes of either kind (CDF on a linear 0-100% axis
//! with its 90% line, histogram on a log axis), the 1 µs line, each clock's
//! curve and markers, and its read-cost mark.

use super::curve::{cdf_steps, histogram_steps, MIN_SHARE_PCT};
use super::labels::{ns_label, pct_label};
use super::style::{look, LineStyle};
use super::{anyhow_err, POSTGRESQL_RULE};
use crate::args::PlotKind;
use crate::commands::check::model::CheckReport;
use plotters::coord::ranged1d::Ranged;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// Top of the histogram's log axis, percent (labels stop at 100%).
const HISTOGRAM_TOP_PCT: f64 = 250.0;

/// The CDF chart on `area`: a linear 0-100% axis with the 90% line, its x
/// axis from 1 ns to twice `max_edge` (ns).
pub(super) fn draw_cdf(area: &DrawingArea<SVGBackend, Shift>, r: &CheckReport, max_edge: f64) -> anyhow::Result<()> {
    let x_range = (1f64..max_edge * 2.0).log_scale();
    let mut chart = chart_builder(area)
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
            EmptyElement::at((1.0, 90.0)) + Text::new("90%", (4, -16), ("sans-serif", 12).into_font().color(&grey)),
        ))
        .map_err(anyhow_err)?;
    draw_common(&mut chart, r, PlotKind::Cdf, 0.0, 100.0)
}

/// The histogram chart on `area`: a log axis of shares per bucket, its x
/// axis from 1 ns to twice `max_edge` (ns).
pub(super) fn draw_histogram(
    area: &DrawingArea<SVGBackend, Shift>,
    r: &CheckReport,
    max_edge: f64,
) -> anyhow::Result<()> {
    let x_range = (1f64..max_edge * 2.0).log_scale();
    let mut chart = chart_builder(area)
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
    draw_common(&mut chart, r, PlotKind::Histogram, MIN_SHARE_PCT, HISTOGRAM_TOP_PCT)
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
        let cost = c.read_cost_ns;
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

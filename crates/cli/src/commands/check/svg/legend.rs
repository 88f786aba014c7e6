//! The plot's legend, beside the chart (never over the data): each clock's
//! line and marker, its name and numbers, then what the marks mean.

use super::labels::legend_detail;
use super::style::{look, LineStyle};
use super::{anyhow_err, LEGEND_ROW};
use crate::args::PlotKind;
use crate::commands::check::model::CheckReport;
use clockscope_system::escape::escape_untrusted;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// The legend, beside the chart: per clock its line and marker, name, and
/// read cost, median and share under 1 µs; then what the marks mean.
pub(super) fn draw_legend(
    area: &DrawingArea<SVGBackend, Shift>,
    r: &CheckReport,
    kind: PlotKind,
) -> anyhow::Result<()> {
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

//! The SVG plot: each measured clock's distribution of successive-read
//! differences (share of reads per log2 bucket) on one log-log chart, drawn
//! with plotters.

use crate::commands::check::report::CheckReport;
use plotters::prelude::*;

/// Smallest share drawn (log axis floor), percent.
const MIN_SHARE_PCT: f64 = 1e-6;

/// Draws the chart as an SVG document.
pub fn render(r: &CheckReport) -> anyhow::Result<String> {
    let mut svg = String::new();
    draw(&mut svg, r)?;
    Ok(svg)
}

fn draw(svg: &mut String, r: &CheckReport) -> anyhow::Result<()> {
    let max_ns = r
        .clocks
        .iter()
        .flat_map(|c| c.histogram.iter().map(|b| b.le_ns))
        .max()
        .unwrap_or(1)
        .max(2) as f64;
    let root = SVGBackend::with_string(svg, (960, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("clockscope: time between successive clock reads", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d((1f64..max_ns * 2.0).log_scale(), (MIN_SHARE_PCT..100f64).log_scale())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("difference between successive reads, ns (log2 bucket upper edge)")
        .y_desc("% of reads")
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for (i, c) in r.clocks.iter().enumerate() {
        let total: u64 = c.histogram.iter().map(|b| b.count).sum();
        if total == 0 {
            continue;
        }
        let color = Palette99::pick(i).to_rgba();
        let points: Vec<(f64, f64)> = c
            .histogram
            .iter()
            .filter(|b| b.count > 0)
            .map(|b| {
                (
                    (b.le_ns.max(1)) as f64,
                    (b.count as f64 * 100.0 / total as f64).max(MIN_SHARE_PCT),
                )
            })
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .label(format!("{} (avg {:.1} ns)", c.display_name, c.avg_loop_ns))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart
            .draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

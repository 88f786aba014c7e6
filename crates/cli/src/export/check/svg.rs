//! The SVG plot: each measured clock's distribution of successive-read
//! differences on one log-log chart, drawn with plotters.
//!
//! One point per non-empty log2 bucket, at the bucket's geometric middle
//! (2^(b-1) .. 2^b - 1 ns), its height the share of reads in it. Lines join
//! only neighbouring non-empty buckets, so a gap in the data stays a gap.
//! Zero differences (coarse clocks) have no place on a log axis: their share
//! is in the legend. Colours are the Okabe-Ito palette (told apart with colour
//! blindness), with a marker shape per group of eight clocks.

use crate::model::check::stats::ClockStats;
use crate::model::check::CheckReport;
use clockscope::escape::escape_untrusted;
use plotters::prelude::*;

/// Smallest share drawn (log axis floor), percent.
const MIN_SHARE_PCT: f64 = 1e-6;

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

fn anyhow_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// Draws the chart as an SVG document.
pub fn render(r: &CheckReport) -> anyhow::Result<String> {
    let mut svg = String::new();
    draw(&mut svg, r)?;
    Ok(svg)
}

/// The bucket's geometric middle in ns (bucket 0, zero differences, has none).
fn bucket_middle_ns(b: usize) -> Option<f64> {
    (b >= 1).then(|| {
        let lo = (1u128 << (b - 1)) as f64;
        let hi = ((1u128 << b) - 1) as f64;
        (lo * hi).sqrt()
    })
}

/// Runs of neighbouring non-empty buckets as (ns, % of reads) points.
fn runs(c: &ClockStats) -> Vec<Vec<(f64, f64)>> {
    let total: u64 = c.histogram.iter().map(|b| b.count).sum();
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current = Vec::new();
    for (b, bucket) in c.histogram.iter().enumerate() {
        match bucket_middle_ns(b) {
            Some(x) if bucket.count > 0 && total > 0 => {
                current.push((x, (bucket.count as f64 * 100.0 / total as f64).max(MIN_SHARE_PCT)));
            }
            _ => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// "17 ns", "2 us", "4 ms", "1 s" for the x axis.
fn ns_label(ns: &f64) -> String {
    let (v, unit) = match *ns {
        n if n >= 1e9 => (n / 1e9, "s"),
        n if n >= 1e6 => (n / 1e6, "ms"),
        n if n >= 1e3 => (n / 1e3, "us"),
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

fn draw(svg: &mut String, r: &CheckReport) -> anyhow::Result<()> {
    let max_ns = r
        .clocks
        .iter()
        .flat_map(|c| {
            c.histogram
                .iter()
                .enumerate()
                .filter(|(_, b)| b.count > 0)
                .map(|(i, _)| i)
        })
        .filter_map(bucket_middle_ns)
        .fold(10.0f64, f64::max);
    let root = SVGBackend::with_string(svg, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(anyhow_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Time between successive clock reads (share of reads per log2 bucket)",
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d((1f64..max_ns * 4.0).log_scale(), (MIN_SHARE_PCT..100f64).log_scale())
        .map_err(anyhow_err)?;
    chart
        .configure_mesh()
        .x_desc("difference between successive reads (bucket middle)")
        .y_desc("% of reads")
        .x_label_formatter(&ns_label)
        .y_label_formatter(&pct_label)
        .draw()
        .map_err(anyhow_err)?;
    for (i, c) in r.clocks.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let shape = i / PALETTE.len();
        let zero = if c.zero_steps_pct > 0.0 {
            format!(", {:.2}% zero steps not drawn", c.zero_steps_pct)
        } else {
            String::new()
        };
        // plotters escapes XML's `<`, `&` and quotes in text; control
        // characters are ours to escape (no name today comes from outside).
        let label = format!(
            "{} (avg {:.1} ns, p50 {} ns{zero})",
            escape_untrusted(&c.display_name),
            c.avg_loop_ns,
            c.percentiles_ns.p50
        );
        let runs = runs(c);
        for run in &runs {
            chart
                .draw_series(LineSeries::new(run.iter().copied(), color.stroke_width(2)))
                .map_err(anyhow_err)?;
        }
        let points: Vec<(f64, f64)> = runs.into_iter().flatten().collect();
        let style = color.filled();
        let series = match shape {
            0 => chart.draw_series(points.into_iter().map(|p| Circle::new(p, 4, style))),
            1 => chart.draw_series(points.into_iter().map(|p| TriangleMarker::new(p, 5, style))),
            _ => chart.draw_series(points.into_iter().map(|p| Cross::new(p, 4, color.stroke_width(2)))),
        }
        .map_err(anyhow_err)?;
        // The legend shows the colour; clocks past the eighth repeat a colour
        // with another marker (triangle, cross) in the chart.
        let marker = ["", " [triangles]", " [crosses]"][shape.min(2)];
        series
            .label(format!("{label}{marker}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(anyhow_err)?;
    root.present().map_err(anyhow_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_middles_and_labels() {
        assert_eq!(bucket_middle_ns(0), None);
        assert_eq!(bucket_middle_ns(1), Some(1.0));
        assert!((bucket_middle_ns(5).unwrap() - (16.0f64 * 31.0).sqrt()).abs() < 1e-9);
        assert_eq!(ns_label(&20.0), "20 ns");
        assert_eq!(ns_label(&4_000_000.0), "4 ms");
        assert_eq!(ns_label(&1500.0), "1.5 us");
        assert_eq!(pct_label(&10.0), "10%");
        assert_eq!(pct_label(&0.001), "0.001%");
    }
}

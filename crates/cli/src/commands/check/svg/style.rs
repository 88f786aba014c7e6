//! The plot's look: Okabe & Ito's colour-blind-safe palette and the line
//! styles (each with its marker) that tell the clocks apart.

use plotters::style::RGBColor;

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
pub(super) enum LineStyle {
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
pub(super) fn look(i: usize) -> (RGBColor, LineStyle) {
    (PALETTE[i % PALETTE.len()], STYLES[i % STYLES.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

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

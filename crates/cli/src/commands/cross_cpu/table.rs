//! The cross-cpu report's tables: columns sized to their contents, split
//! into several tables one under the other when wider than a report's 100
//! columns. Widths are display columns (a Cyrillic heading is as wide as it
//! looks).

use crate::i18n::{pad_left, pad_right};
use crate::report::text::column_width;
use std::io::Write;

/// A table: left-aligned first column, right-aligned numbers, left-aligned
/// last column. When it is wider than a report's 100 columns, it is printed
/// as several tables one under the other, each starting with the first
/// `keys` columns (which say what a row is).
pub(super) fn table(out: &mut dyn Write, keys: usize, header: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    let n = header.len();
    let widths = widths(header, rows);
    let key_width: usize = widths[..keys].iter().map(|w| w + 2).sum();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut used = 2 + key_width;
    for (i, w) in widths.iter().enumerate().skip(keys) {
        let w = w + 2;
        match groups.last_mut() {
            Some(g) if used + w <= crate::report::text::REPORT_COLUMNS => g.push(i),
            _ => {
                groups.push((0..keys).chain([i]).collect());
                used = 2 + key_width;
            }
        }
        used += w;
    }
    if groups.len() <= 1 {
        return table_part(out, header, rows, true);
    }
    for g in groups {
        let h: Vec<&str> = g.iter().map(|&i| header[i]).collect();
        let r: Vec<Vec<String>> = rows.iter().map(|r| g.iter().map(|&i| r[i].clone()).collect()).collect();
        table_part(out, &h, &r, g.last() == Some(&(n - 1)))?;
    }
    Ok(())
}

/// Each column's width: its widest cell or its heading.
fn widths(header: &[&str], rows: &[Vec<String>]) -> Vec<usize> {
    (0..header.len())
        .map(|i| column_width(rows.iter().map(|r| r[i].as_str()).chain([header[i]]), 0, 0))
        .collect()
}

/// One table that fits as it is; its last column left-aligned when `text_last`.
fn table_part(out: &mut dyn Write, header: &[&str], rows: &[Vec<String>], text_last: bool) -> std::io::Result<()> {
    let n = header.len();
    let widths = widths(header, rows);
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i == 0 || (i == n - 1 && text_last) {
                s.push_str(&pad_right(cell, widths[i]));
            } else {
                s.push_str(&pad_left(cell, widths[i]));
            }
        }
        s.trim_end().to_string()
    };
    writeln_escaped!(out, "  {}", line(header.to_vec()))?;
    for r in rows {
        writeln_escaped!(out, "  {}", line(r.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}

//! What every Prometheus exposition clockscope writes shares (`check`,
//! `cross-cpu`, `sweep`): metric families of gauges prefixed `clockscope_`,
//! label escaping, base-unit conversions. Each command's metric set lives
//! with its other formats (`crate::commands::check::prometheus`, ...) and is listed in
//! `docs/metrics.md`.

use clockscope_system::escape::escape_untrusted;
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// A label value: untrusted text (a kernel's clocksource name, a hypervisor
/// signature) has its control characters written as `\xHH` first, then the
/// exposition format's escapes apply (backslash, double quote, newline), so
/// the scraped value reads exactly as the text report shows it.
pub(crate) fn label(v: &str) -> String {
    escape_untrusted(v)
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes metric families: each `head` (HELP and TYPE) once, then its samples
/// (names without the `clockscope_` prefix).
pub(crate) struct Families {
    pub(crate) out: String,
}

impl Families {
    pub(crate) fn new() -> Families {
        Families { out: String::new() }
    }
    pub(crate) fn head(&mut self, name: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP clockscope_{name} {help}");
        let _ = writeln!(self.out, "# TYPE clockscope_{name} gauge");
    }
    pub(crate) fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", label(v))).collect();
        let lbl = if l.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", l.join(","))
        };
        let _ = writeln!(self.out, "clockscope_{name}{lbl} {}", fmt_value(value));
    }
    /// A family with one unlabelled sample.
    pub(crate) fn single(&mut self, name: &str, help: &str, value: f64) {
        self.head(name, help);
        self.sample(name, &[], value);
    }
}

fn fmt_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

pub(crate) fn flag(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// Nanoseconds to seconds (a division: `20.0 / 1e9` prints as 0.00000002, `20.0 * 1e-9` does not).
pub(crate) fn secs(ns: f64) -> f64 {
    ns / 1e9
}

/// `t` in seconds since the Unix epoch, to the millisecond.
pub(crate) fn unix_seconds(t: SystemTime) -> f64 {
    let s = t.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    (s * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped_for_the_terminal_and_the_format() {
        assert_eq!(label("tsc"), "tsc");
        assert_eq!(label("a\"b\\c"), "a\\\"b\\\\c");
        // Control characters become `\xHH` text, whose backslash the format escapes.
        assert_eq!(label("kvm\x1b]0;x\x07\n"), "kvm\\\\x1b]0;x\\\\x07\\\\x0a");
    }

    #[test]
    fn values_are_written_as_the_format_spells_them() {
        assert_eq!(fmt_value(f64::NAN), "NaN");
        assert_eq!(fmt_value(f64::INFINITY), "+Inf");
        assert_eq!(fmt_value(2.5e-8), "0.000000025");
        assert_eq!(fmt_value(3.0), "3");
    }
}

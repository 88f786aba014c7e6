//! Prometheus text exposition format (version 0.0.4), ready for
//! node_exporter's textfile collector: gauges prefixed `clockscope_`,
//! labelled by clock.

use crate::commands::check::report::CheckReport;
use crate::commands::check::verdict::Status;
use clockscope::escape::escape_untrusted;
use std::fmt::Write as _;
use std::io::{self, Write};

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

struct Family<'a> {
    out: &'a mut String,
}

impl Family<'_> {
    fn head(&mut self, name: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP clockscope_{name} {help}");
        let _ = writeln!(self.out, "# TYPE clockscope_{name} gauge");
    }
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", label(v))).collect();
        let lbl = if l.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", l.join(","))
        };
        let _ = writeln!(self.out, "clockscope_{name}{lbl} {}", fmt_value(value));
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

/// Renders the report as Prometheus text.
pub fn render(r: &CheckReport) -> String {
    let mut s = String::new();
    let mut f = Family { out: &mut s };
    type Getter = fn(&crate::commands::check::stats::ClockStats) -> Option<f64>;
    let per_clock: [(&str, &str, Getter); 8] = [
        (
            "avg_loop_ns",
            "Average time of one clock read plus loop bookkeeping, nanoseconds.",
            |c| Some(c.avg_loop_ns),
        ),
        (
            "loops",
            "Clock reads with a forward difference during the measurement.",
            |c| Some(c.loops as f64),
        ),
        (
            "resolution_ns",
            "Smallest non-zero difference between successive reads, nanoseconds.",
            |c| c.resolution_ns.map(|v| v as f64),
        ),
        ("getres_ns", "clock_getres(2) of the clock, nanoseconds.", |c| {
            c.clock_getres_ns.map(|v| v as f64)
        }),
        (
            "zero_steps_ratio",
            "Fraction of successive reads that returned the same time.",
            |c| Some(c.zero_steps_pct / 100.0),
        ),
        (
            "under_1us_ratio",
            "Fraction of successive-read differences under 1 microsecond.",
            |c| Some(c.under_1us_pct / 100.0),
        ),
        ("backward_steps", "Successive reads that went backwards in time.", |c| {
            Some(c.backward_steps as f64)
        }),
        (
            "largest_backward_ns",
            "Largest backward step between successive reads, nanoseconds.",
            |c| Some(c.largest_backward_ns as f64),
        ),
    ];
    for (name, help, get) in per_clock {
        f.head(name, help);
        for c in &r.clocks {
            if let Some(v) = get(c) {
                f.sample(name, &[("clock", &c.name)], v);
            }
        }
    }
    f.head(
        "duration_ns",
        "Percentiles of the difference between successive reads, nanoseconds.",
    );
    for c in &r.clocks {
        let p = &c.percentiles_ns;
        for (q, v) in [
            ("0.5", p.p50),
            ("0.9", p.p90),
            ("0.99", p.p99),
            ("0.999", p.p99_9),
            ("0.9999", p.p99_99),
            ("1", p.max),
        ] {
            f.sample("duration_ns", &[("clock", &c.name), ("quantile", q)], v as f64);
        }
    }
    f.head(
        "interrupted",
        "1 when Ctrl-C or SIGTERM stopped the run early: the numbers cover only what was measured.",
    );
    f.sample("interrupted", &[], if r.interrupted { 1.0 } else { 0.0 });
    let v = &r.verdict;
    f.head(
        "verdict_ok",
        "1 when the verdict is good, fair or no verdict; 0 when bad or time went backwards.",
    );
    f.sample("verdict_ok", &[], if v.exit_code() == 0 { 1.0 } else { 0.0 });
    f.head(
        "verdict_info",
        "The verdict's status as a label; the value is always 1.",
    );
    f.sample("verdict_info", &[("status", status_name(v.status))], 1.0);
    if let Some(t) = r.environment.counter_trusted {
        f.head(
            "counter_trusted",
            "1 when clockscope trusts the CPU counter (TSC / generic timer) by all evidence.",
        );
        f.sample("counter_trusted", &[], if t { 1.0 } else { 0.0 });
    }
    if let Some(k) = r.environment.counter_frequency_khz {
        f.head("counter_frequency_khz", "CPU counter frequency in use, kHz.");
        let src = r.environment.counter_frequency_source.clone().unwrap_or_default();
        f.sample("counter_frequency_khz", &[("source", &src)], k as f64);
    }
    f.head(
        "explain_predicted_slowdown",
        "Predicted EXPLAIN ANALYZE slowdown of a 1M-row count(*), ratio.",
    );
    for p in [&v.explain_system, &v.explain_tsc].into_iter().flatten() {
        // The same short clock label as every other metric.
        let name = r
            .clocks
            .iter()
            .find(|c| c.display_name == p.clock)
            .map_or(p.clock.as_str(), |c| c.name.as_str());
        f.sample("explain_predicted_slowdown", &[("clock", name)], p.slowdown);
    }
    f.head("info", "Environment labels; the value is always 1.");
    let e = &r.environment;
    f.sample(
        "info",
        &[
            ("version", r.tool.trim_start_matches("clockscope ")),
            ("kernel", e.kernel_release.as_deref().unwrap_or("")),
            ("clocksource", e.current_clocksource.as_deref().unwrap_or("")),
            ("hypervisor", e.hypervisor.as_deref().unwrap_or("")),
            ("arch", &e.arch),
        ],
        1.0,
    );
    s
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Broken => "broken",
        Status::Bad => "bad",
        Status::Fair => "fair",
        Status::Good => "good",
        Status::NoVerdict => "no_verdict",
    }
}

/// Writes the Prometheus text.
pub fn write(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    out.write_all(render(r).as_bytes())
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
}

//! The plot's words: the title's three lines, each clock's legend detail,
//! and the axes' labels ("17 ns", "10%", "2026-11-23 19:40 UTC").

use super::PlotHeader;
use crate::args::PlotKind;
use crate::commands::check::model::stats::ClockStats;
use crate::commands::check::model::CheckReport;
use clockscope_system::escape::escape_untrusted;
use std::time::SystemTime;

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

/// "17 ns", "2 µs", "4 ms", "1 s" for the x axis.
pub(super) fn ns_label(ns: &f64) -> String {
    let (v, unit) = match *ns {
        n if n >= 1e9 => (n / 1e9, "s"),
        n if n >= 1e6 => (n / 1e6, "ms"),
        n if n >= 1e3 => (n / 1e3, "µs"),
        n => (n, "ns"),
    };
    format!("{} {unit}", (v * 100.0).round() / 100.0)
}

pub(super) fn pct_label(p: &f64) -> String {
    if *p >= 1.0 {
        format!("{p:.0}%")
    } else {
        format!("{p}%")
    }
}

/// The title's three lines.
pub(super) fn title_lines(r: &CheckReport, kind: PlotKind, header: &PlotHeader) -> [String; 3] {
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

/// The legend's second line for clock `c`: its read cost is
/// `ClockStats::read_cost_ns`, the mean cost with the interference gaps
/// taken out (pg_test_timing's average loop includes them), as the chart marks it.
pub(super) fn legend_detail(c: &ClockStats) -> String {
    let zero = if c.zero_steps_pct > 0.0 {
        format!(", {:.1}% zero steps", c.zero_steps_pct)
    } else {
        String::new()
    };
    format!(
        "read cost {:.1} ns (interference gaps out), p50 {} ns, {:.2}% < 1 µs{zero}",
        c.read_cost_ns, c.percentiles_ns.p50, c.under_1us_pct
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_and_time() {
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
}

//! `clockscope cross-cpu --format prometheus`: the warp test and offset
//! bounds of every CPU pair as gauges for node_exporter's textfile collector,
//! by the same conventions as `check`'s (base units, a state set for each
//! pair's verdict). Listed in `docs/metrics.md`. One series per CPU pair and
//! clock: on a large machine, `--pairs first` keeps that to N-1 pairs.

use crate::commands::cross_cpu::model::Outcome;
use crate::report::prometheus::{flag, secs, unix_seconds, Families};
use crate::report::stamp::Stamped;
use clockscope_system::crosscpu::{ClockPairReport, Verdict};
use std::io::{self, Write};
use std::time::SystemTime;

/// Every pair verdict, in the order the state set lists them, with its label value.
pub const VERDICTS: [(Verdict, &str); 5] = [
    (Verdict::InSync, "in_sync"),
    (Verdict::Warp, "warp"),
    (Verdict::Offset, "offset"),
    (Verdict::Inconsistent, "inconsistent"),
    (Verdict::Inconclusive, "inconclusive"),
];

type Getter = fn(&ClockPairReport) -> Option<f64>;

/// Renders the outcome; `finished` is the run's end.
fn render_at(o: &Outcome, finished: SystemTime) -> String {
    let mut f = Families::new();
    let r = &o.report;
    let per_pair: [(&str, &str, Getter); 6] = [
        (
            "cross_cpu_warps",
            "Warp test: reads on one CPU earlier than a read already seen on the other.",
            |c| Some(c.warp.warps as f64),
        ),
        (
            "cross_cpu_max_warp_seconds",
            "Largest warp seen (0 when none); absent when the clock's frequency is unknown.",
            |c| c.max_warp_ns.map(|v| secs(v as f64)),
        ),
        (
            "cross_cpu_handovers",
            "Times the shared value passed between the two CPUs in the warp test.",
            |c| Some((c.warp.handovers_a_to_b + c.warp.handovers_b_to_a) as f64),
        ),
        (
            "cross_cpu_offset_lower_seconds",
            "Lower bound of cpu_b's clock minus cpu_a's, from ping-pong round trips.",
            |c| c.offset_lower_ns.map(|v| secs(v as f64)),
        ),
        (
            "cross_cpu_offset_upper_seconds",
            "Upper bound of cpu_b's clock minus cpu_a's, from ping-pong round trips.",
            |c| c.offset_upper_ns.map(|v| secs(v as f64)),
        ),
        (
            "cross_cpu_round_trip_seconds",
            "Shortest ping-pong round trip between the two CPUs (the offset bounds' width).",
            |c| c.min_round_trip_ns.map(|v| secs(v as f64)),
        ),
    ];
    for (name, help, get) in per_pair {
        let samples: Vec<_> = r
            .results()
            .filter_map(|(p, c)| get(c).map(|v| (p.pair.cpu_a.to_string(), p.pair.cpu_b.to_string(), c.clock, v)))
            .collect();
        if samples.is_empty() {
            continue;
        }
        f.head(name, help);
        for (a, b, clock, v) in samples {
            f.sample(name, &[("clock", clock), ("cpu_a", &a), ("cpu_b", &b)], v);
        }
    }
    if r.results().next().is_some() {
        f.head(
            "cross_cpu_verdict",
            "Each CPU pair's verdict per clock as a state set: 1 for its status, 0 for the others.",
        );
        for (p, c) in r.results() {
            let (a, b) = (p.pair.cpu_a.to_string(), p.pair.cpu_b.to_string());
            for (v, name) in VERDICTS {
                f.sample(
                    "cross_cpu_verdict",
                    &[("clock", c.clock), ("cpu_a", &a), ("cpu_b", &b), ("status", name)],
                    flag(c.verdict == v),
                );
            }
        }
    }
    f.single(
        "cross_cpu_pairs",
        "CPU pairs tested (fewer than planned when interrupted; 0 with one usable CPU).",
        r.pairs.len() as f64,
    );
    f.single(
        "cross_cpu_problem",
        "1 when a pair showed a warp, a proven offset or crossed offset bounds.",
        flag(r.has_problem()),
    );
    f.single(
        "cross_cpu_interrupted",
        "1 when Ctrl-C or SIGTERM stopped the run early.",
        flag(r.interrupted),
    );
    f.single(
        "cross_cpu_last_run_timestamp_seconds",
        "When this report was written, seconds since the Unix epoch.",
        unix_seconds(finished),
    );
    f.out
}

/// Writes the Prometheus text, stamped with the current time (the report's
/// stamp is not part of the exposition).
pub fn write(out: &mut dyn Write, m: &Stamped<'_, Outcome>) -> io::Result<()> {
    write_at(out, m.report, SystemTime::now())
}

/// Writes the Prometheus text; `finished` is the run's end (tests: a fixed time).
pub fn write_at(out: &mut dyn Write, o: &Outcome, finished: SystemTime) -> io::Result<()> {
    out.write_all(render_at(o, finished).as_bytes())
}

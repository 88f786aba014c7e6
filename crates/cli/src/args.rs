//! Argument helpers shared by the subcommands: output formats, durations in
//! seconds, clock names. Parsers return a one-line message naming the bad value
//! (clap prefixes the option).

use clap::ValueEnum;

/// Output format of `check`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CheckFormat {
    #[default]
    Text,
    Json,
    Prometheus,
}

/// What `check --plot` draws.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PlotKind {
    /// Share of reads at or below each time, cumulative: the default, because it answers PostgreSQL's question
    /// (are > 90% of reads under 1 µs?) where the curve crosses the 1 µs line, and shows each clock's median and
    /// tail as the places where it crosses 50% and nears 100%.
    #[default]
    Cdf,
    /// Share of reads per log2 bucket, on a log scale: the shape of the distribution and its rare long reads.
    Histogram,
}

/// Output format of the other reports.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReportFormat {
    #[default]
    Text,
    Json,
}

/// `-v/--verbose`: the full text report after the one-screen summary's
/// layout (every check, rule and explanation). Flattened into a command's
/// Args (`#[command(flatten)] pub verbose: VerboseArg`) so that every
/// command spells and documents it alike.
#[derive(clap::Args, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerboseArg {
    /// Print the full text report: every check, rule and explanation (the default text fits one screen;
    /// JSON and Prometheus always carry everything).
    #[arg(short, long)]
    pub verbose: bool,
}

/// Shortest measurement accepted: 1 ms (a tenth of one measuring chunk; below
/// it a run may not complete a single loop iteration on a slow clock).
pub const MIN_SECONDS: f64 = 0.001;
/// Longest: a day.
pub const MAX_SECONDS: f64 = 86_400.0;

/// Parses a number of seconds from 0.001 to 86400 (fractions allowed).
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if v.is_nan() || v <= 0.0 {
        return Err(format!("'{s}' must be a positive number of seconds"));
    }
    if !v.is_finite() || v > MAX_SECONDS {
        return Err(format!("'{s}' is more than a day ({MAX_SECONDS} seconds)"));
    }
    if v < MIN_SECONDS {
        return Err(format!("'{s}' is less than {MIN_SECONDS} seconds"));
    }
    Ok(v)
}

/// Parses a clock name; the error lists the valid names.
pub fn parse_clock(s: &str) -> Result<clockscope::ClockId, String> {
    clockscope::ClockId::parse(s).ok_or_else(|| {
        let names: Vec<&str> = clockscope::ClockId::ALL.iter().map(|c| c.cli_name()).collect();
        format!("unknown clock '{s}' (valid: {})", names.join(", "))
    })
}

/// `--clock NAME`: [`parse_clock`] (its one-line error), with the clock names
/// as possible values so that shell completions offer them, not file names.
#[derive(Clone, Debug)]
pub struct ClockParser;

impl clap::builder::TypedValueParser for ClockParser {
    type Value = clockscope::ClockId;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<clockscope::ClockId, clap::Error> {
        // The same path, and so the same message, as `value_parser = parse_clock`.
        let parse: fn(&str) -> Result<clockscope::ClockId, String> = parse_clock;
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            clockscope::ClockId::ALL
                .iter()
                .map(|c| clap::builder::PossibleValue::new(c.cli_name())),
        ))
    }
}

/// Seconds to whole nanoseconds.
pub fn seconds_to_ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

/// Plausible ns per row of a count(*) with TIMING OFF: 0.1 ns (faster than any
/// executor) to 1 ms (a row per millisecond is no longer a scan).
pub const MIN_BASELINE_ROW_NS: f64 = 0.1;
pub const MAX_BASELINE_ROW_NS: f64 = 1_000_000.0;

/// Parses `--baseline-row-ns`: a number of ns in the plausible range.
pub fn parse_baseline_row_ns(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of nanoseconds"))?;
    if !(MIN_BASELINE_ROW_NS..=MAX_BASELINE_ROW_NS).contains(&v) {
        return Err(format!(
            "'{s}' must be between {MIN_BASELINE_ROW_NS} and {MAX_BASELINE_ROW_NS} ns per row"
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("abc").is_err());
        assert!(parse_seconds("NaN").is_err());
        assert!(parse_seconds("inf").unwrap_err().contains("more than a day"));
        assert!(parse_seconds("1e400").unwrap_err().contains("more than a day"));
        assert!(parse_seconds("1e-12").unwrap_err().contains("less than 0.001"));
        assert_eq!(parse_seconds("0.001"), Ok(0.001));
    }

    #[test]
    fn clock_names() {
        assert_eq!(parse_clock("rdtscp"), Ok(clockscope::ClockId::Rdtscp));
        let e = parse_clock("sundial").unwrap_err();
        assert!(
            e.contains("unknown clock 'sundial'") && e.contains("monotonic_raw"),
            "{e}"
        );
    }
}

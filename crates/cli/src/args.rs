//! Argument helpers shared by the subcommands: output formats, `-o/--output`,
//! durations with units, clock names. Parsers return a one-line message naming the bad value
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

/// `-o/--output FILE`, the same on every command that writes a report.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct OutputArg {
    /// Write the report to FILE instead of stdout (`-` is stdout), replacing it atomically after the run; a
    /// missing or unwritable directory fails before measuring, and an error leaves an existing file as it was.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

impl OutputArg {
    /// The file the report goes to; `None` for stdout (no `-o`, or `-o -`).
    pub fn report_file(&self) -> Option<&std::path::Path> {
        self.output.as_deref().filter(|p| p.as_os_str() != "-")
    }
}

/// `-v/--verbose`, shared by the reports that print one screen by default.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct VerboseArg {
    /// Full detail: every check, source and rule (the default is one screen).
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

/// Shortest measurement accepted: 1 ms (a tenth of one measuring chunk; below
/// it a run may not complete a single loop iteration on a slow clock).
pub const MIN_SECONDS: f64 = 0.001;
/// Longest: a day.
pub const MAX_SECONDS: f64 = 86_400.0;

/// The units a duration may carry, with their length in seconds. Hand-written
/// rather than `humantime`, which takes no fractions (`1.5s`) and has no
/// notion of a plain number's unit.
const DURATION_UNITS: [(&str, f64); 7] = [
    ("ns", 1e-9),
    ("us", 1e-6),
    ("ms", 1e-3),
    ("s", 1.0),
    ("min", 60.0),
    ("m", 60.0),
    ("h", 3600.0),
];

/// Parses a duration into seconds: a number with a unit (`500ms`, `2s`,
/// `1.5m`, `1h`; also ns, us, min) or a plain number in `plain_unit_s`
/// seconds (1 for seconds, 0.001 for milliseconds), between `min_s` and
/// `max_s`. The error is one line naming the value.
pub fn parse_duration_in(s: &str, plain_unit_s: f64, min_s: f64, max_s: f64) -> Result<f64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let not_a_duration = || format!("'{s}' is not a duration (e.g. 2, 500ms, 1.5s, 1m)");
    if number.trim().is_empty() || number.trim().starts_with('+') {
        return Err(not_a_duration());
    }
    let v: f64 = number
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| !v.is_nan())
        .ok_or_else(not_a_duration)?;
    let scale = if unit.is_empty() {
        plain_unit_s
    } else {
        DURATION_UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, scale)| *scale)
            .ok_or_else(|| format!("'{s}' has an unknown unit '{unit}' (use ns, us, ms, s, m, h)"))?
    };
    if v <= 0.0 {
        return Err(format!("'{s}' must be a positive duration"));
    }
    let secs = v * scale;
    if !secs.is_finite() || secs > max_s {
        return Err(format!("'{s}' is more than {}", show_seconds(max_s)));
    }
    if secs < min_s * (1.0 - 1e-12) {
        return Err(format!("'{s}' is less than {}", show_seconds(min_s)));
    }
    Ok(secs)
}

/// `86400 s (a day)`, `0.001 s`: a limit as the errors show it.
fn show_seconds(s: f64) -> String {
    if s == MAX_SECONDS {
        format!("a day ({MAX_SECONDS} seconds)")
    } else {
        format!("{s} s")
    }
}

/// Parses a duration of 1 ms to a day; a plain number is seconds (fractions
/// allowed), or give a unit: `500ms`, `2s`, `1.5m`.
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    parse_duration_in(s, 1.0, MIN_SECONDS, MAX_SECONDS)
}

/// Parses a duration of 1 s to a day in whole seconds (`tsc --drift`); a
/// plain number is seconds, or give a unit (`90s`, `2m`).
pub fn parse_whole_seconds(s: &str) -> Result<u64, String> {
    let v = parse_duration_in(s, 1.0, 1.0, MAX_SECONDS)?;
    if v.fract() != 0.0 {
        return Err(format!("'{s}' is not a whole number of seconds"));
    }
    Ok(v as u64)
}

/// Parses `tsc --calibration-ms`: 1 ms to 10 s in whole milliseconds; a plain
/// number is milliseconds (as before units were taken), or give a unit (`50ms`, `2s`).
pub fn parse_calibration_ms(s: &str) -> Result<u64, String> {
    let v = parse_duration_in(s, 1e-3, 1e-3, 10.0)?;
    let ms = v * 1e3;
    if (ms - ms.round()).abs() > 1e-6 {
        return Err(format!("'{s}' is not a whole number of milliseconds"));
    }
    Ok(ms.round() as u64)
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
        assert!(parse_seconds("abc").unwrap_err().contains("is not a duration"));
        assert!(parse_seconds("NaN").is_err());
        assert!(parse_seconds("1e400").unwrap_err().contains("more than a day"));
        assert!(parse_seconds("1e-12").unwrap_err().contains("less than 0.001"));
        assert_eq!(parse_seconds("0.001"), Ok(0.001));
    }

    #[test]
    fn durations_with_units() {
        assert_eq!(parse_seconds("500ms"), Ok(0.5));
        assert_eq!(parse_seconds("2s"), Ok(2.0));
        assert_eq!(parse_seconds("1.5s"), Ok(1.5));
        assert_eq!(parse_seconds("1m"), Ok(60.0));
        assert_eq!(parse_seconds("2min"), Ok(120.0));
        assert_eq!(parse_seconds("1h"), Ok(3600.0));
        assert_eq!(parse_seconds("1e3ms"), Ok(1.0));
        assert_eq!(parse_seconds(" 2 s "), Ok(2.0));
        assert_eq!(parse_seconds("1ms"), Ok(0.001));
        let e = parse_seconds("5x").unwrap_err();
        assert!(e.contains("unknown unit 'x'"), "{e}");
        assert!(parse_seconds("5sec").unwrap_err().contains("unknown unit 'sec'"));
        assert!(parse_seconds("-2s")
            .unwrap_err()
            .contains("must be a positive duration"));
        assert!(parse_seconds("0ms")
            .unwrap_err()
            .contains("must be a positive duration"));
        assert!(parse_seconds("NaNs").unwrap_err().contains("is not a duration"));
        assert!(parse_seconds("nan").unwrap_err().contains("is not a duration"));
        assert!(parse_seconds("inf").unwrap_err().contains("is not a duration"));
        assert!(parse_seconds("ms").unwrap_err().contains("is not a duration"));
        assert!(parse_seconds("+2s").is_err());
        assert!(parse_seconds("25h").unwrap_err().contains("more than a day"));
        assert!(parse_seconds("1e308h").unwrap_err().contains("more than a day"));
        assert!(parse_seconds("999us").unwrap_err().contains("less than 0.001"));
        for bad in ["5x", "-1", "1e400", "NaN"] {
            assert!(!parse_seconds(bad).unwrap_err().contains('\n'));
        }
    }

    #[test]
    fn calibration_and_drift() {
        assert_eq!(parse_calibration_ms("50"), Ok(50));
        assert_eq!(parse_calibration_ms("50ms"), Ok(50));
        assert_eq!(parse_calibration_ms("2s"), Ok(2000));
        assert!(parse_calibration_ms("0").is_err());
        assert!(parse_calibration_ms("11s").unwrap_err().contains("more than 10 s"));
        assert!(parse_calibration_ms("1.5")
            .unwrap_err()
            .contains("whole number of milliseconds"));
        assert_eq!(parse_whole_seconds("90"), Ok(90));
        assert_eq!(parse_whole_seconds("2m"), Ok(120));
        assert!(parse_whole_seconds("500ms").unwrap_err().contains("less than 1 s"));
        assert!(parse_whole_seconds("1.5s")
            .unwrap_err()
            .contains("whole number of seconds"));
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

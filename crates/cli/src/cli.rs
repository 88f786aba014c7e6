//! The command line of `clockscope`, defined once with clap; shell completions
//! and the man page are generated from this definition.

use crate::commands;
use clap::{Parser, Subcommand, ValueEnum};

/// Measures what it costs to read the time on this machine, whether the clock
/// can be trusted, and what that means for PostgreSQL's EXPLAIN ANALYZE.
///
/// With no subcommand, runs `check`.
#[derive(Parser, Debug)]
#[command(
    name = "clockscope",
    version,
    args_conflicts_with_subcommands = true,
    after_help = "Exit status: 0 fine, 1 a problem was found (time went backwards, bad verdict, warp), \
                  2 usage or runtime error, 130 interrupted."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub check: commands::check::CheckArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure the clocks that matter here and give a verdict (the default).
    Check(commands::check::CheckArgs),
    /// List every clock source, whether it works here and its resolution.
    Clocks(commands::clocks::ClocksArgs),
    /// The TSC (or ARM generic timer): CPUID and kernel evidence, its frequency from every source, trust.
    Tsc(commands::tsc::TscArgs),
    /// Whether the clocks agree across CPUs: warp test and offset per CPU pair.
    CrossCpu(commands::cross_cpu::CrossCpuArgs),
    /// Measure EXPLAIN ANALYZE's timing overhead on a real PostgreSQL server.
    #[cfg(feature = "explain")]
    Explain(commands::explain::ExplainArgs),
    /// Measure the system clock under every kernel clocksource in turn (`--apply`, root), then restore the original.
    Sweep(commands::sweep::SweepArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `clockscope.1`, or a subcommand's (`clockscope man tsc`).
    Man {
        /// The subcommand whose page to print (check, clocks, tsc, cross-cpu, explain, sweep).
        subcommand: Option<String>,
    },
}

/// The man page of `clockscope`, or of one of its subcommands (named
/// `clockscope-<sub>`, as man pages of subcommands are).
pub fn man_page(subcommand: Option<&str>) -> Result<Vec<u8>, String> {
    use clap::CommandFactory;
    let top = Cli::command();
    let cmd = match subcommand {
        None => top,
        Some(name) => {
            let names: Vec<String> = top.get_subcommands().map(|c| c.get_name().to_string()).collect();
            let sub = top
                .find_subcommand(name)
                .cloned()
                .ok_or_else(|| format!("man: unknown subcommand '{name}' (valid: {})", names.join(", ")))?;
            let synopsis = format!("clockscope {}", sub.get_name());
            sub.clone()
                .name(format!("clockscope-{}", sub.get_name()))
                .bin_name(synopsis)
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// Output format of `check`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CheckFormat {
    #[default]
    Text,
    Json,
    Prometheus,
}

/// Output format of the other reports.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReportFormat {
    #[default]
    Text,
    Json,
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

/// Seconds to whole nanoseconds.
pub fn seconds_to_ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    #[cfg_attr(not(feature = "explain"), ignore = "built without the explain feature")]
    fn man_pages_for_every_subcommand() {
        let top = String::from_utf8(man_page(None).unwrap()).unwrap();
        assert!(top.contains(".TH clockscope"), "{}", &top[..200.min(top.len())]);
        for sub in ["check", "clocks", "tsc", "cross-cpu", "explain", "sweep"] {
            let page = String::from_utf8(man_page(Some(sub)).unwrap()).unwrap();
            assert!(
                page.contains(&format!(".TH clockscope\\-{sub}")) || page.contains(&format!(".TH clockscope-{sub}")),
                "{sub}"
            );
        }
        assert!(man_page(Some("nope"))
            .unwrap_err()
            .contains("unknown subcommand 'nope'"));
        let tsc = String::from_utf8(man_page(Some("tsc")).unwrap()).unwrap();
        assert!(tsc.contains("cpuid\\-dump") || tsc.contains("cpuid-dump"));
    }

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

//! The command line of `clockscope`, defined once with clap; shell completions
//! and the man page are generated from this definition.

use crate::commands;
use clap::{Parser, Subcommand};

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

impl Cli {
    /// Whether the run prints its report on stdout: every command but a
    /// `check` whose report goes to a file (`-o FILE`; `-o -` is stdout).
    pub fn prints_to_stdout(&self) -> bool {
        match &self.command {
            None => self.check.report_file().is_none(),
            Some(Command::Check(a)) => a.report_file().is_none(),
            Some(_) => true,
        }
    }
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
}

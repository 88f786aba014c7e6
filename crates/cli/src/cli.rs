//! The command line of `clockscope`, defined once with clap; shell completions
//! and the man page are generated from this definition.

use crate::commands;
use crate::output_file::{Destination, Input};
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

    /// Language of the text reports: auto (from LANGUAGE, LC_ALL, LC_MESSAGES, LANG, as gettext chooses),
    /// en, or ru. JSON and Prometheus output are the same in every language.
    #[arg(long, global = true, value_name = "LANG", default_value = "auto", value_parser = parse_lang)]
    pub lang: String,
}

/// `--lang`: `auto`, `en`, or a language with a catalog.
fn parse_lang(v: &str) -> Result<String, String> {
    if v.eq_ignore_ascii_case("auto") || crate::i18n::Lang::from_code(v).is_some() {
        return Ok(v.to_ascii_lowercase());
    }
    let codes: Vec<&str> = crate::i18n::LANGUAGES.iter().map(|l| l.code).collect();
    Err(format!("no catalog for '{v}' (auto, en, {})", codes.join(", ")))
}

impl Cli {
    /// The language of the text reports (`--lang`, else the environment).
    pub fn language(&self) -> crate::i18n::Lang {
        crate::i18n::select::from_option(&self.lang, crate::i18n::select::from_env).unwrap_or_default()
    }

    /// Whether the run prints its report on stdout: every command but one
    /// whose report goes to a file (`-o FILE`; `-o -` is stdout).
    pub fn prints_to_stdout(&self) -> bool {
        self.report_file().is_none()
    }

    /// What the run reads from files: each with how the user named it.
    pub fn inputs(&self) -> Vec<(&'static str, Input<'_>)> {
        let mut inputs = Vec::new();
        match &self.command {
            Some(Command::Tsc(a)) => {
                inputs.extend(a.cpuid_dump.as_deref().map(|p| ("--cpuid-dump", Input::File(p))));
                inputs.extend(a.root.as_deref().map(|p| ("--root", Input::Tree(p))));
            }
            Some(Command::Dmesg(a)) => {
                inputs.extend(a.file.as_deref().map(|p| {
                    if p.as_os_str() == "-" {
                        ("the log", Input::Stdin)
                    } else {
                        ("the log", Input::File(p))
                    }
                }));
                inputs.extend(a.root.as_deref().map(|p| ("--root", Input::Tree(p))));
            }
            Some(Command::CrossCpu(a)) => inputs.extend(a.root.as_deref().map(|p| ("--root", Input::Tree(p)))),
            Some(Command::Sweep(a)) => inputs.extend(a.root.as_deref().map(|p| ("--root", Input::Tree(p)))),
            _ => {}
        }
        inputs
    }

    /// Where the run writes: the report (a file, or stdout) and `check --plot`.
    pub fn outputs(&self) -> Vec<(&'static str, Destination<'_>)> {
        let mut outputs = vec![match self.report_file() {
            Some(file) => ("--output", Destination::File(file)),
            None => ("the report", Destination::Stdout),
        }];
        let check = match &self.command {
            None => Some(&self.check),
            Some(Command::Check(a)) => Some(a),
            _ => None,
        };
        outputs.extend(
            check
                .and_then(|c| c.plot.as_deref())
                .map(|p| ("--plot", Destination::File(p))),
        );
        outputs
    }

    /// Refuses, in one line, a run whose report or plot would replace one of its inputs.
    pub fn refuse_input_as_output(&self) -> anyhow::Result<()> {
        crate::output_file::refuse_input_as_output(&self.inputs(), &self.outputs())
    }

    /// The file the report goes to (`-o FILE`), for every command that writes one.
    pub fn report_file(&self) -> Option<&std::path::Path> {
        match &self.command {
            None => self.check.report_file(),
            Some(Command::Check(a)) => a.report_file(),
            Some(Command::Clocks(a)) => a.output.report_file(),
            Some(Command::Tsc(a)) => a.output.report_file(),
            Some(Command::CrossCpu(a)) => a.output.report_file(),
            #[cfg(feature = "explain")]
            Some(Command::Explain(a)) => a.output.report_file(),
            Some(Command::Sweep(a)) => a.output.report_file(),
            Some(Command::Dmesg(a)) => a.output.report_file(),
            Some(Command::Completions { .. } | Command::Man { .. }) => None,
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
    /// Explain a kernel log (this machine's, a saved file or `-` for stdin): TSC and clocksource events.
    Dmesg(commands::dmesg::DmesgArgs),
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
        /// The subcommand whose page to print (check, clocks, tsc, cross-cpu, dmesg, explain, sweep).
        #[arg(value_parser = ManTopicParser, hide_possible_values = true)]
        subcommand: Option<String>,
    },
}

/// The value of `clockscope man [TOPIC]`: any text (`man` itself names the
/// valid ones when it is not a page), with the subcommands as its possible
/// values so that shell completions offer them.
#[derive(Clone, Debug)]
pub struct ManTopicParser;

impl clap::builder::TypedValueParser for ManTopicParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let subcommands = Command::augment_subcommands(clap::Command::new("clockscope"));
        let names: Vec<clap::builder::PossibleValue> = subcommands
            .get_subcommands()
            .map(|c| clap::builder::PossibleValue::new(c.get_name().to_string()))
            .collect();
        Some(Box::new(names.into_iter()))
    }
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
    fn man_topics_are_the_subcommands() {
        use clap::builder::TypedValueParser;
        let topics: Vec<String> = ManTopicParser
            .possible_values()
            .unwrap()
            .map(|v| v.get_name().to_string())
            .collect();
        let subs: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        assert_eq!(topics, subs);
        assert!(topics.iter().any(|t| t == "sweep"), "{topics:?}");
    }
}

//! `clockscope`: parse arguments, run one command, print its report.

#![forbid(unsafe_code)]

use clap::{CommandFactory, Parser};
use clockscope_cli::cli::{Cli, Command};
use clockscope_cli::stdout::ReportWriter;
use clockscope_cli::{commands, exit};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    clockscope_cli::startup::mark();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                // Help and version: our own text; a closed pipe or a full disk is not worth a message.
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
            let _ = writeln!(std::io::stderr(), "{}", exit::usage_error_line("clockscope", &e, &args));
            return ExitCode::from(exit::ERROR);
        }
    };
    clockscope_cli::i18n::set_language(cli.language());
    // Only a run whose report goes to stdout needs it (`-o FILE` does not).
    // A closed stdout (`clockscope >&-`) refuses the run (exit 2) rather than
    // report a success nobody can read; `/dev/null`, opened any way, is a
    // usable stdout. Recorded before Rust's runtime replaces a closed stdout
    // with `/dev/null`.
    if cli.prints_to_stdout() && clockscope_cli::fd_at_start::stdout_was_closed() {
        return exit::report_error(
            "clockscope",
            &anyhow::anyhow!("stdout is closed: nowhere to write the report"),
        );
    }
    let stdout = std::io::stdout();
    let mut out = match &cli.command {
        // Generated from our own definition: written as is.
        Some(Command::Completions { .. } | Command::Man { .. }) => ReportWriter::plain(stdout.lock()),
        _ => ReportWriter::terminal_safe(stdout.lock()),
    };
    let result = run(&cli, &mut out).and_then(|code| out.flush().map(|_| code).map_err(Into::into));
    // A closed pipe was swallowed by `out`: the code is the one the run earned.
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => exit::report_error("clockscope", &e),
    }
}

fn run(cli: &Cli, out: &mut dyn Write) -> anyhow::Result<u8> {
    // Before anything runs: no input replaced by its own report.
    cli.refuse_input_as_output()?;
    match &cli.command {
        None => commands::check::run(&cli.check, out),
        Some(Command::Check(a)) => commands::check::run(a, out),
        Some(Command::Clocks(a)) => commands::report_to(cli.report_file(), out, |w| commands::clocks::run(a, w)),
        Some(Command::Tsc(a)) => commands::report_to(cli.report_file(), out, |w| commands::tsc::run(a, w)),
        Some(Command::CrossCpu(a)) => commands::report_to(cli.report_file(), out, |w| commands::cross_cpu::run(a, w)),
        Some(Command::Dmesg(a)) => commands::report_to(cli.report_file(), out, |w| commands::dmesg::run(a, w)),
        #[cfg(feature = "explain")]
        Some(Command::Explain(a)) => commands::report_to(cli.report_file(), out, |w| commands::explain::run(a, w)),
        Some(Command::Sweep(a)) => commands::report_to(cli.report_file(), out, |w| commands::sweep::run(a, w)),
        Some(Command::Completions { shell }) => {
            // clap_complete panics when its writer fails: generate in memory, write here.
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut Cli::command(), "clockscope", &mut script);
            out.write_all(&script)?;
            Ok(exit::OK)
        }
        Some(Command::Man { subcommand }) => {
            let page = clockscope_cli::manpage::man_page(subcommand.as_deref()).map_err(anyhow::Error::msg)?;
            out.write_all(&page)?;
            Ok(exit::OK)
        }
    }
}

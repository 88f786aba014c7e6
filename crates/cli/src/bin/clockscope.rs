//! `clockscope`: parse arguments, run one command, print its report.

#![forbid(unsafe_code)]

use clap::{CommandFactory, Parser};
use clockscope_cli::cli::{Cli, Command};
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
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            // One line: clap's first line, plus its list of valid values when it has one.
            let text = e.render().to_string();
            let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
            let first = lines.next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            let extra: Vec<&str> = lines.filter(|l| l.starts_with("[possible values")).collect();
            let line = if extra.is_empty() {
                first.to_string()
            } else {
                format!("{first} {}", extra.join(" "))
            };
            let _ = writeln!(std::io::stderr(), "clockscope: error: {line}");
            return ExitCode::from(exit::ERROR);
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = match &cli.command {
        None => commands::check::run(&cli.check, &mut out),
        Some(Command::Check(a)) => commands::check::run(a, &mut out),
        Some(Command::Clocks(a)) => commands::clocks::run(a, &mut out),
        Some(Command::Tsc(a)) => commands::tsc::run(a, &mut out),
        Some(Command::CrossCpu(a)) => commands::cross_cpu::run(a, &mut out),
        #[cfg(feature = "explain")]
        Some(Command::Explain(a)) => commands::explain::run(a, &mut out),
        Some(Command::Completions { shell }) => {
            clap_complete::generate(*shell, &mut Cli::command(), "clockscope", &mut out);
            Ok(exit::OK)
        }
        Some(Command::Man { subcommand }) => clockscope_cli::cli::man_page(subcommand.as_deref())
            .map_err(anyhow::Error::msg)
            .and_then(|page| out.write_all(&page).map(|_| exit::OK).map_err(Into::into)),
    };
    let result = result.and_then(|code| out.flush().map(|_| code).map_err(Into::into));
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) if exit::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => exit::report_error("clockscope", &e),
    }
}

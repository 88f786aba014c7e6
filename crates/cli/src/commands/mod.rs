//! One folder per `clockscope` subcommand. Each has an `Args` struct (clap)
//! and a `run` that gathers: it measures into its `model`, judges it where it
//! has a `judge`, then renders it with its text formats or the shared
//! [`crate::report`] (JSON, Prometheus). What several commands gather alike
//! lives in [`environment`]; the JSON Schemas of every model in [`schema`].

pub mod check;
pub mod clocks;
pub mod cross_cpu;
pub mod dmesg;
pub mod environment;
pub mod explain;
pub mod schema;
pub mod sweep;
pub mod tsc;

use crate::output_file::OutputFile;
use std::io::Write;
use std::path::Path;

/// Runs a command whose report goes to `out`, or with `-o FILE` to that file:
/// prepared before `run` starts (a bad path fails before measuring), then
/// replaced atomically with the whole report once `run` succeeds; an error
/// leaves an existing file as it was and no temporary file. `check` does the
/// same itself, because its `--plot` must be kept apart from the report.
pub fn report_to(
    file: Option<&Path>,
    out: &mut dyn Write,
    run: impl FnOnce(&mut dyn Write) -> anyhow::Result<u8>,
) -> anyhow::Result<u8> {
    match file {
        None => run(out),
        Some(path) => {
            let file = OutputFile::prepare("--output", path)?;
            let mut bytes = Vec::new();
            let code = run(&mut bytes)?;
            file.commit(&bytes)?;
            Ok(code)
        }
    }
}

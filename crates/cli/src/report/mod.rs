//! What every command's output shares, apart from measuring: the renderer
//! shape, the header, the one JSON writer, Prometheus text, fitting text to
//! 100 columns. Each command's own formats are in its folder under
//! [`crate::commands`]; nothing here names a command
//! (crates/cli/tests/all/layers.rs checks it).
//!
//! # The renderer contract
//!
//! Every renderer of every command and format has one shape, [`Renderer`]:
//!
//! ```text
//! fn write…(out: &mut dyn io::Write, model: &Model) -> io::Result<()>
//! ```
//!
//! - The writer first, the model second; nothing else. What a report prints
//!   is in its model: the stamp (the model carries one, as `check`'s and
//!   `sweep`'s do, or is given as [`Stamped`](crate::report::stamp::Stamped)),
//!   and the inputs it names (the `--cpuid-dump` file, where the CPUs came
//!   from, the plot's kind).
//! - A command chooses one renderer for its `--format` (a `renderer(format)`
//!   function in the command) and calls it once; every format of one command
//!   takes the same model.
//! - Named `write` in a file of one format (`commands::check::text::write`), else
//!   `write_<format>` (`commands::clocks::write_text`, `commands::cross_cpu::write_plan_json`).
//! - A text renderer writes its header line ([`text::write_header`]) and
//!   every line through [`text::fitted`] (100 columns); JSON is
//!   [`json::write`] for every command (the only JSON writer: its escaping of
//!   C1 and bidirectional controls); a Prometheus renderer reads the clock for
//!   its timestamp and also has a `write_at(out, model, finished)` for tests.
//! - Each model's `SCHEMA_VERSION` (one per schema in `docs/schema/`) is
//!   beside the model, never here.
//!
//! # Files
//!
//! - [`json`]: pretty JSON, shared by every command (schemas in `docs/schema/`).
//! - [`text`]: what every text report shares: the header line, fitting to 100
//!   columns, the check styles.
//! - [`fit`]: fitting text to 100 columns (wrapping with a hanging indent).
//! - [`prometheus`]: what every Prometheus exposition shares: families, labels, units.
//! - [`stamp`]: the host, time, tool and schema version every report carries.

use std::io;

/// The one shape of every renderer: writer first, model second (see the
/// module documentation).
pub type Renderer<M> = fn(&mut dyn io::Write, &M) -> io::Result<()>;

pub mod fit;
pub mod json;
pub mod prometheus;
pub mod stamp;
pub mod text;

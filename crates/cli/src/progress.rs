//! A progress bar on stderr, shown only when stderr is a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A bar of `total_ns` labelled `label`, hidden unless stderr is a terminal.
pub fn bar(label: &str, total_ns: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::with_draw_target(Some(total_ns), ProgressDrawTarget::hidden());
    }
    let pb = ProgressBar::with_draw_target(Some(total_ns), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{prefix:>32} [{bar:30}] {percent:>3}%")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_prefix(label.to_string());
    pb
}

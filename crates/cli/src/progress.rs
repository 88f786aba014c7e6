//! A progress bar on stderr, shown only when stderr is a terminal that
//! understands escape codes: not with `TERM=dumb` (or no TERM), nor with
//! `NO_COLOR` set (<https://no-color.org>), whose users ask for plain output.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// Whether a terminal described by `term` and `no_color` may be sent escape codes.
pub fn escape_codes_allowed(term: Option<&str>, no_color: Option<&str>) -> bool {
    let term_ok = matches!(term, Some(t) if !t.is_empty() && t != "dumb");
    // NO_COLOR counts when set to anything but the empty string.
    let no_color = no_color.is_some_and(|v| !v.is_empty());
    term_ok && !no_color
}

fn bar_allowed() -> bool {
    let term = std::env::var("TERM").ok();
    let no_color = std::env::var("NO_COLOR").ok();
    std::io::stderr().is_terminal() && escape_codes_allowed(term.as_deref(), no_color.as_deref())
}

/// A bar of `total_ns` labelled `label`, hidden unless stderr is a terminal
/// that may be sent escape codes.
pub fn bar(label: &str, total_ns: u64) -> ProgressBar {
    if !bar_allowed() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumb_terminals_and_no_color_get_no_escape_codes() {
        assert!(escape_codes_allowed(Some("xterm-256color"), None));
        assert!(escape_codes_allowed(Some("xterm"), Some("")));
        assert!(!escape_codes_allowed(Some("dumb"), None));
        assert!(!escape_codes_allowed(None, None));
        assert!(!escape_codes_allowed(Some(""), None));
        assert!(!escape_codes_allowed(Some("xterm"), Some("1")));
    }
}

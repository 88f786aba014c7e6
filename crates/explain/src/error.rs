//! The errors of `clockscope explain`: each one line, naming the option or
//! the step that failed and, for a server error, its message and SQLSTATE.
//!
//! PostgreSQL's own error display spans lines (DETAIL, HINT); the messages
//! here are built from its fields instead so a failure prints as one line.

use clockscope_system::escape::escape_untrusted;
use std::fmt::Write as _;

/// What can go wrong measuring EXPLAIN's overhead.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `--rows` is not a whole number in range.
    #[error("--rows: {0}")]
    Rows(String),
    /// `--runs` is out of range.
    #[error("--runs: {0}")]
    Runs(String),
    /// `--query` was refused: empty, several statements, a write, a
    /// utility statement, or the server's error running it.
    #[error("--query: {0}")]
    Query(String),
    /// `--max-time` is out of range, or a single run could not end within it.
    #[error("--max-time: {0}")]
    MaxTime(String),
    /// `--max-table-size` is not a size, or the TEMP table would be larger
    /// than it allows (the message names the option either way).
    #[error("{0}")]
    TableSize(String),
    /// The connection settings (DSN or PG* variables) cannot be used.
    #[error("{0}")]
    Settings(String),
    /// The server could not be reached or refused the login.
    #[error("cannot connect to PostgreSQL at {target}: {message}{}", sqlstate_suffix(.sqlstate))]
    Connect {
        target: String,
        message: String,
        sqlstate: Option<String>,
    },
    /// A statement failed, or the connection broke, during `step`.
    #[error("{step}: {message}{}", sqlstate_suffix(.sqlstate))]
    Server {
        step: String,
        message: String,
        sqlstate: Option<String>,
    },
    /// EXPLAIN's JSON did not have the expected shape.
    #[error("unexpected EXPLAIN output: {0}")]
    Plan(String),
    /// Stopped (Ctrl-C, SIGTERM) before one pair of runs completed: while
    /// connecting, filling the TEMP table or in the first runs.
    #[error("interrupted before a pair of EXPLAIN runs completed")]
    Interrupted,
}

impl Error {
    /// A failure during `step`, described on one line.
    pub fn server(step: impl Into<String>, err: &tokio_postgres::Error) -> Error {
        let (message, sqlstate) = describe(err);
        Error::Server {
            step: step.into(),
            message,
            sqlstate,
        }
    }

    /// A failure to connect to `target`, described on one line.
    pub fn connect(target: impl Into<String>, err: &tokio_postgres::Error) -> Error {
        let (message, sqlstate) = describe(err);
        Error::Connect {
            target: target.into(),
            message,
            sqlstate,
        }
    }

    /// The SQLSTATE the server sent with this error, if any.
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            Error::Server { sqlstate, .. } | Error::Connect { sqlstate, .. } => sqlstate.as_deref(),
            _ => None,
        }
    }
}

pub(crate) fn sqlstate_suffix(sqlstate: &Option<String>) -> String {
    sqlstate
        .as_ref()
        .map(|s| format!(" (SQLSTATE {s})"))
        .unwrap_or_default()
}

/// One line for a client error and its SQLSTATE: the server's message (and
/// DETAIL) when the server sent one, else the client's description with its
/// causes. The server's text is escaped ([`escape_untrusted`]).
///
/// A connection that ended, however the client noticed (end of file, a
/// reset, a broken pipe: which one depends on timing), is always "the server
/// closed the connection", with the cause in parentheses when there is one.
pub fn describe(err: &tokio_postgres::Error) -> (String, Option<String>) {
    if let Some(db) = err.as_db_error() {
        let mut s = db.message().to_string();
        if let Some(detail) = db.detail() {
            let _ = write!(s, "; {detail}");
        }
        return (one_line(&escape_untrusted(&s)), Some(db.code().code().to_string()));
    }
    let io_kind = std::error::Error::source(err)
        .and_then(|c| c.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    let lost = matches!(
        io_kind,
        Some(std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::UnexpectedEof)
    );
    let mut text = if err.is_closed() || lost {
        "the server closed the connection".to_string()
    } else {
        err.to_string()
    };
    if !err.is_closed() {
        let mut source = std::error::Error::source(err);
        while let Some(cause) = source {
            let c = cause.to_string();
            if !text.contains(&c) {
                if lost {
                    let _ = write!(text, " ({c})");
                } else {
                    let _ = write!(text, ": {c}");
                }
            }
            source = cause.source();
        }
    }
    (one_line(&escape_untrusted(&text)), None)
}

/// Folds whitespace runs (newlines included) into single spaces.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_folds_newlines() {
        assert_eq!(one_line("a\n  DETAIL: b\n"), "a DETAIL: b");
    }

    #[test]
    fn server_errors_print_message_and_sqlstate() {
        let e = Error::Server {
            step: "creating the TEMP table".into(),
            message: "permission denied to create temporary tables in database \"x\"".into(),
            sqlstate: Some("42501".into()),
        };
        assert_eq!(e.sqlstate(), Some("42501"));
        assert_eq!(Error::Rows("x".into()).sqlstate(), None);
        assert_eq!(
            e.to_string(),
            "creating the TEMP table: permission denied to create temporary tables in database \"x\" (SQLSTATE 42501)"
        );
    }
}

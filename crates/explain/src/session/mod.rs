//! The PostgreSQL session: connect, read the version and the settings that
//! matter, set up the session (no parallel query, no JIT, room for the TEMP
//! table in local buffers, a statement_timeout), create and drop the TEMP
//! table, run EXPLAIN.
//!
//! Nothing but the TEMP table is created, and it is dropped at the end (the
//! server would drop it at disconnect anyway). No SQL is built from user
//! text: the row count is a `$1` bind parameter; the table name is ours,
//! quoted; setting values are integers we computed.
//!
//! This file holds the session itself and its connection; its parts:
//! `statement.rs` (one statement run to its end, its deadline or a stop;
//! cleanup statements), `settings.rs` (the version, the settings read and
//! the session's set-up), `workload.rs` (the TEMP table, generate_series or
//! `--query`, and EXPLAIN), `wait.rs` (the deadlines, the bounded wait, the
//! cancel request), `sizing.rs` (the TEMP table's size and local buffers),
//! `sql.rs` (a statement's first keyword, `--query`'s errors in one line)
//! and `tls_hint.rs` (a certificate failure in libpq's terms); their items
//! are re-exported here.
//!
//! # Every wait is bounded, and a stop cancels the server's work
//! The session runs tokio-postgres on a current-thread runtime of its own
//! rather than the blocking `postgres` client: the blocking client's
//! `connect_timeout` bounds only the socket connect (a server that accepts
//! and never answers hangs its startup for ever), and a blocked call cannot
//! watch for Ctrl-C. Here every wait is a future polled next to a deadline
//! and the caller's stop check (every `STOP_POLL`):
//! - connecting: the target's `connect_timeout` per host covers socket
//!   connect, startup and authentication together;
//! - each statement: a client-side deadline, `client_deadline_for` the
//!   rows, behind the server-side `statement_timeout` set at session start
//!   ([`statement_timeout_for`]), so the server's own error comes first and
//!   the client's catches a server or network that stopped answering;
//! - a stop (Ctrl-C) or a missed deadline mid-statement sends the server a
//!   cancel request, waits briefly for the statement to end, and the TEMP
//!   table is then dropped on the same session; all of it within
//!   `CLEANUP_BUDGET`, after which the connection is given up (the server
//!   drops the table when the backend ends). [`CancelRequest`] lets the
//!   caller send the cancel from another thread when it must exit at once.
//! - PostgreSQL 14+ also gets `client_connection_check_interval`, so a
//!   statement whose client vanished (killed) stops within a second.
//! - `--max-time` ([`crate::budget`]) is one more deadline over all of it,
//!   connecting included: a statement running at the deadline gets the
//!   cancel request and [`DEADLINE_GRACE`] to end (the server's answer and
//!   the teardown included); then the connection is closed, and the message
//!   says what is known: the server confirmed the cancel, or the cancel was
//!   sent and no answer came (a backend that is stopped, or a network that
//!   dropped), never "cancelled" on the client's word alone.

mod settings;
pub mod sizing;
mod sql;
mod statement;
mod tls_hint;
mod wait;
mod workload;

pub(crate) use sizing::{estimated_table_bytes, temp_buffers_blocks_for};
pub(crate) use sql::{query_error, READ_ONLY_TRANSACTION};
use tls_hint::tls_hint;
pub(crate) use wait::{
    client_deadline_for, wait, within, Waited, CANCEL_TIMEOUT, CLEANUP_BUDGET, CLIENT_DEADLINE_GRACE,
    STATEMENT_TIMEOUT_BASE, STATEMENT_TIMEOUT_PER_ROW,
};
pub use wait::{statement_timeout_for, CancelRequest, StopCheck, DEADLINE_GRACE};

use crate::connect::Target;
use crate::error::Error;
use clockscope_system::escape::escape_untrusted;
use serde::Serialize;
use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;
use tokio_postgres::{AsyncMessage, CancelToken, Client, Connection, Socket};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The connection's stream: plain or TLS (rustls), as the target's sslmode says.
type Stream = <MakeRustlsConnect as tokio_postgres::tls::MakeTlsConnect<Socket>>::Stream;

/// SQLSTATE insufficient_privilege: no TEMP privilege.
pub(crate) const INSUFFICIENT_PRIVILEGE: &str = "42501";
/// `client_connection_check_interval` for PostgreSQL 14+, ms.
pub(crate) const CONNECTION_CHECK_INTERVAL_MS: u64 = 1000;

/// Settings printed with the report, in this order.
pub(crate) const SHOWN_SETTINGS: [&str; 9] = [
    "track_io_timing",
    "max_parallel_workers_per_gather",
    "jit",
    "timing_clock_source",
    "shared_buffers",
    "work_mem",
    "temp_buffers",
    "statement_timeout",
    "client_connection_check_interval",
];

/// One server setting and what this session changed it to.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Setting {
    /// The setting's name.
    pub name: String,
    /// `current_setting(name)` when we connected.
    pub server_value: String,
    /// The value for our session after we set it, if we did.
    pub session_value: Option<String>,
    /// Why we set it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// What the server says about itself.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerInfo {
    /// `server_version`, e.g. "15.18 (Debian 15.18-0+deb12u1)".
    pub version: String,
    /// `server_version_num`, e.g. 150018.
    pub version_num: u32,
    /// `SELECT version()`: the build, compiler and platform, e.g.
    /// "PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, ...".
    pub version_full: String,
    /// `block_size` in bytes.
    pub block_size: u64,
    /// The shown settings the server has, in `SHOWN_SETTINGS` order.
    pub settings: Vec<Setting>,
}

impl ServerInfo {
    /// The setting named `name`, if the server has it.
    pub fn setting(&self, name: &str) -> Option<&Setting> {
        self.settings.iter().find(|s| s.name == name)
    }
}

/// A duration in seconds for messages: "3 s", "1.5 s".
pub fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// Quotes an SQL identifier (doubling embedded quotes).
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The last "terminating connection" notice (SQLSTATE class 57) or
/// connection error, shared with the task that drives the connection.
type LastWord = Arc<Mutex<Option<String>>>;

/// A connected session holding (once created) the TEMP table.
pub struct PgSession {
    rt: Runtime,
    client: Client,
    cancel: CancelToken,
    tls: MakeRustlsConnect,
    stop: StopCheck,
    /// The client-side deadline per statement.
    deadline: Duration,
    /// Set at the first stop: cleanup (cancel, DROP) must end by then.
    cleanup_by: Cell<Option<Instant>>,
    /// A statement was abandoned mid-flight: the connection's state is unknown.
    broken: Cell<bool>,
    last_word: LastWord,
    /// `pg_temp."clockscope_explain_<pid>"`.
    table: String,
    created: bool,
    /// Set by [`PgSession::use_series`]: EXPLAIN runs on generate_series.
    series_rows: Option<i32>,
    /// Set by [`PgSession::use_query`]: EXPLAIN runs the user's statement,
    /// each run in `BEGIN READ ONLY ... ROLLBACK`, within `--max-time`.
    user_query: Option<(String, Duration)>,
    /// The time `--max-time` leaves the next EXPLAIN ([`crate::measure::ExplainServer::limit_next`]).
    time_left: Option<Duration>,
    /// `--max-time`'s deadline for the whole run, if any.
    budget: Option<crate::budget::Budget>,
    /// What happened at that deadline, once it passed during a statement.
    deadline_note: RefCell<Option<String>>,
    /// The task that drives the connection: aborted (the socket closed)
    /// when a statement is given up.
    driver: tokio::task::JoinHandle<()>,
}

impl PgSession {
    /// Connects to `target` within its connect_timeout (per host: socket
    /// connect, startup, authentication); `stop` is polled meanwhile and
    /// during every later statement.
    pub fn connect(target: &Target, stop: StopCheck) -> Result<PgSession, Error> {
        PgSession::connect_within(target, stop, None)
    }

    /// [`PgSession::connect`] under `--max-time`'s `budget`: connecting ends
    /// by its deadline too, and so does every later statement.
    pub(crate) fn connect_within(
        target: &Target,
        stop: StopCheck,
        budget: Option<crate::budget::Budget>,
    ) -> Result<PgSession, Error> {
        let connect_error = |message: String| Error::Connect {
            target: target.description.clone(),
            message,
            sqlstate: None,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| connect_error(format!("cannot start the client's I/O runtime: {e}")))?;
        if stop() {
            return Err(Error::Interrupted);
        }
        let setup = target.setup_timeout();
        let setup_deadline = setup.map(|t| clockscope_system::forward::now() + t);
        let run_deadline = budget.map(|b| b.deadline());
        // The run's deadline binds when it comes first.
        let run_binds = run_deadline.is_some_and(|r| setup_deadline.is_none_or(|s| r < s));
        let deadline = if run_binds { run_deadline } else { setup_deadline };
        // sslmode=allow: without TLS first, then with it if the server
        // refused the login (as libpq; the same deadline covers both).
        let attempt = async {
            match target.config.connect(target.tls.connector()).await {
                Err(e) if target.tls.mode == crate::tls::SslMode::Allow && e.as_db_error().is_some() => {
                    let mut with_tls = target.config.clone();
                    with_tls.ssl_mode(tokio_postgres::config::SslMode::Require);
                    with_tls.connect(target.tls.connector()).await
                }
                other => other,
            }
        };
        let (client, connection) = match rt.block_on(wait(attempt, deadline, &*stop)) {
            Waited::Done(Ok(pair)) => pair,
            Waited::Done(Err(e)) => return Err(tls_hint(Error::connect(&target.description, &e), target)),
            Waited::Stopped => return Err(Error::Interrupted),
            Waited::TimedOut if run_binds => {
                return Err(Error::MaxTime(format!(
                    "no session with {} within the {} deadline (socket connect, startup and authentication)",
                    target.description,
                    seconds(budget.map(|b| b.max_time()).unwrap_or_default())
                )))
            }
            Waited::TimedOut => {
                return Err(connect_error(format!(
                    "no session within {} s (connect_timeout: socket connect, startup and authentication{})",
                    setup.unwrap_or_default().as_secs(),
                    if setup == target.connect_timeout {
                        ""
                    } else {
                        ", per host"
                    }
                )))
            }
        };
        let last_word: LastWord = Arc::new(Mutex::new(None));
        let driver = rt.spawn(drive(connection, Arc::clone(&last_word)));
        let table = format!(
            "pg_temp.{}",
            quote_ident(&format!("clockscope_explain_{}", std::process::id()))
        );
        Ok(PgSession {
            rt,
            cancel: client.cancel_token(),
            tls: target.tls.connector(),
            client,
            stop,
            deadline: client_deadline_for(0),
            cleanup_by: Cell::new(None),
            broken: Cell::new(false),
            last_word,
            table,
            created: false,
            series_rows: None,
            user_query: None,
            time_left: None,
            budget,
            deadline_note: RefCell::new(None),
            driver,
        })
    }

    /// Whether `--max-time`'s deadline has passed.
    pub(crate) fn past_deadline(&self) -> bool {
        self.budget
            .is_some_and(|b| clockscope_system::forward::now() >= b.deadline())
    }

    /// What happened at `--max-time`'s deadline, when it passed during a
    /// statement: which one, and what the server said (or that it said
    /// nothing).
    pub(crate) fn deadline_note(&self) -> Option<String> {
        self.deadline_note.borrow().clone()
    }

    /// What cancels this session's running statement from another thread.
    pub fn cancel_request(&self) -> CancelRequest {
        CancelRequest {
            token: self.cancel.clone(),
            tls: self.tls.clone(),
        }
    }

    /// The TEMP table's qualified, quoted name.
    pub fn table(&self) -> &str {
        &self.table
    }
}

/// Drives the connection (the client's requests go through it) and keeps the
/// last thing the server said before it went away.
async fn drive(mut connection: Connection<Socket, Stream>, last_word: LastWord) {
    let keep = |said: &str| {
        *last_word.lock().unwrap_or_else(|p| p.into_inner()) = Some(escape_untrusted(said).into_owned());
    };
    loop {
        match poll_fn(|cx| connection.poll_message(cx)).await {
            Some(Ok(AsyncMessage::Notice(n))) if n.code().code().starts_with("57") => keep(n.message()),
            Some(Ok(_)) => {}
            // The connection is over after an error (polling again would
            // return it again, for ever).
            Some(Err(e)) => return keep(&crate::error::describe(&e).0),
            None => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote_ident("t"), "\"t\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}

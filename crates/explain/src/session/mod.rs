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
//! Its parts: `wait.rs` (the deadlines, the bounded wait, the cancel
//! request), `sizing.rs` (the TEMP table's size and local buffers), `sql.rs`
//! (a statement's first keyword, `--query`'s errors in one line) and
//! `tls_hint.rs` (a certificate failure in libpq's terms); their items are
//! re-exported here.
//!
//! # Every wait is bounded, and a stop cancels the server's work
//! The session runs tokio-postgres on a current-thread runtime of its own
//! rather than the blocking `postgres` client: the blocking client's
//! `connect_timeout` bounds only the socket connect (a server that accepts
//! and never answers hangs its startup for ever), and a blocked call cannot
//! watch for Ctrl-C. Here every wait is a future polled next to a deadline
//! and the caller's stop check (every [`STOP_POLL`]):
//! - connecting: the target's `connect_timeout` per host covers socket
//!   connect, startup and authentication together;
//! - each statement: a client-side deadline, [`client_deadline_for`] the
//!   rows, behind the server-side `statement_timeout` set at session start
//!   ([`statement_timeout_for`]), so the server's own error comes first and
//!   the client's catches a server or network that stopped answering;
//! - a stop (Ctrl-C) or a missed deadline mid-statement sends the server a
//!   cancel request, waits briefly for the statement to end, and the TEMP
//!   table is then dropped on the same session; all of it within
//!   [`CLEANUP_BUDGET`], after which the connection is given up (the server
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

pub mod sizing;
mod sql;
mod tls_hint;
mod wait;

pub use sizing::{
    estimated_table_bytes, rows_per_page, temp_buffers_blocks_for, HEAP_BYTES_PER_INT4_ROW, HEAP_PAGE_HEADER_BYTES,
    MAX_TEMP_BUFFERS_BYTES,
};
pub use sql::{first_keyword, query_error, READ_ONLY_TRANSACTION};
use tls_hint::tls_hint;
pub use wait::{
    client_deadline_for, statement_timeout_for, wait, CancelRequest, StopCheck, Waited, CANCEL_TIMEOUT, CLEANUP_BUDGET,
    CLIENT_DEADLINE_GRACE, DEADLINE_GRACE, STATEMENT_TIMEOUT_BASE, STATEMENT_TIMEOUT_PER_ROW, STOP_POLL,
};

use crate::connect::Target;
use crate::error::Error;
use crate::measure::ExplainServer;
use clockscope::escape::escape_untrusted;
use serde::Serialize;
use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;
use tokio_postgres::error::SqlState;
use tokio_postgres::{AsyncMessage, CancelToken, Client, Connection, SimpleQueryMessage, Socket};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The connection's stream: plain or TLS (rustls), as the target's sslmode says.
type Stream = <MakeRustlsConnect as tokio_postgres::tls::MakeTlsConnect<Socket>>::Stream;

/// SQLSTATE insufficient_privilege: no TEMP privilege.
pub const INSUFFICIENT_PRIVILEGE: &str = "42501";
/// `client_connection_check_interval` for PostgreSQL 14+, ms.
pub const CONNECTION_CHECK_INTERVAL_MS: u64 = 1000;

/// Settings printed with the report, in this order.
pub const SHOWN_SETTINGS: [&str; 9] = [
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
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Setting {
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
    /// The shown settings the server has, in [`SHOWN_SETTINGS`] order.
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
pub fn quote_ident(name: &str) -> String {
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
    /// The time `--max-time` leaves the next EXPLAIN ([`ExplainServer::limit_next`]).
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
    pub fn connect_within(
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
        let setup_deadline = setup.map(|t| Instant::now() + t);
        let run_deadline = budget.map(|b| b.deadline());
        // The run's deadline binds when it comes first.
        let run_binds = match (setup_deadline, run_deadline) {
            (Some(s), Some(r)) => r < s,
            (None, r) => r.is_some(),
            (Some(_), None) => false,
        };
        let deadline = if run_binds { run_deadline } else { setup_deadline };
        // sslmode=allow: without TLS first, then with it if the server
        // refused the login (as libpq; the same deadline covers both).
        let attempt = async {
            let first = target.config.connect(target.tls.connector()).await;
            match first {
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
    pub fn past_deadline(&self) -> bool {
        self.budget.is_some_and(|b| Instant::now() >= b.deadline())
    }

    /// What happened at `--max-time`'s deadline, when it passed during a
    /// statement: which one, and what the server said (or that it said
    /// nothing).
    pub fn deadline_note(&self) -> Option<String> {
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

    /// The query EXPLAIN runs.
    pub fn query(&self) -> String {
        if let Some((sql, _)) = &self.user_query {
            return sql.clone();
        }
        match self.series_rows {
            Some(rows) => format!("SELECT count(*) FROM pg_catalog.generate_series(1, {rows})"),
            None => format!("SELECT count(*) FROM {}", self.table),
        }
    }

    /// Runs EXPLAIN on `generate_series(1, rows)` instead of a TEMP table.
    pub fn use_series(&mut self, rows: u64) -> Result<(), Error> {
        let rows =
            i32::try_from(rows).map_err(|_| Error::Rows(format!("{rows} does not fit generate_series' int4")))?;
        self.series_rows = Some(rows);
        Ok(())
    }

    /// Runs EXPLAIN on the user's statement `sql` (`--query`): each run in
    /// `BEGIN READ ONLY` with `SET LOCAL statement_timeout` at the time
    /// `--max-time` leaves, then `ROLLBACK`; statements bounded by
    /// `max_time` (call before [`PgSession::prepare`]).
    pub fn use_query(&mut self, sql: &str, max_time: Duration) {
        self.user_query = Some((sql.to_string(), max_time));
    }

    /// Why this session cannot create a TEMP table, if it cannot: a hot
    /// standby, a read-only transaction (default_transaction_read_only), or
    /// no TEMP privilege on the database. Reads only.
    pub fn temp_table_blocker(&mut self) -> Result<Option<String>, Error> {
        let row = self.statement(
            "checking whether a TEMP table can be created",
            self.client.query_one(
                "SELECT pg_catalog.pg_is_in_recovery(), pg_catalog.current_setting('transaction_read_only') = 'on', \
                 pg_catalog.has_database_privilege(pg_catalog.current_database(), 'TEMP')",
                &[],
            ),
        )?;
        let (standby, read_only, temp): (bool, bool, bool) = (row.get(0), row.get(1), row.get(2));
        Ok(if standby {
            Some("the server is a hot standby (pg_is_in_recovery)".into())
        } else if read_only {
            Some("the session is read-only (transaction_read_only = on, e.g. default_transaction_read_only)".into())
        } else if !temp {
            Some("the role has no TEMP privilege on this database".into())
        } else {
            None
        })
    }

    /// The time by which cleanup must end, fixed at the first stop.
    fn begin_cleanup(&self) -> Instant {
        let by = self.cleanup_by.get().unwrap_or_else(|| Instant::now() + CLEANUP_BUDGET);
        self.cleanup_by.set(Some(by));
        by
    }

    fn server_error(&self, step: &str, err: &tokio_postgres::Error) -> Error {
        let mut e = Error::server(step, err);
        if err.is_closed() {
            let said = self.last_word.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let (Error::Server { message, .. }, Some(said)) = (&mut e, said) {
                message.push_str(&format!(" ({said})"));
            }
        }
        e
    }

    fn unusable(step: &str) -> Error {
        Error::Server {
            step: step.to_string(),
            message: "the connection was given up after a statement did not end".into(),
            sqlstate: None,
        }
    }

    /// Runs one statement's future to its end, its deadline or a stop. On a
    /// stop or a missed deadline the server gets a cancel request and the
    /// statement a moment to end; if it does not, the connection is given up.
    fn statement<T>(
        &self,
        step: &str,
        fut: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, Error> {
        if self.broken.get() {
            return Err(Self::unusable(step));
        }
        if (self.stop)() {
            self.begin_cleanup();
            return Err(Error::Interrupted);
        }
        let run_deadline = self.budget.map(|b| b.deadline());
        if run_deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Error::MaxTime(format!(
                "the {} deadline passed before {step}",
                seconds(self.max_time())
            )));
        }
        let own = Instant::now() + self.deadline;
        let (deadline, run_binds) = match run_deadline {
            Some(d) if d <= own => (d, true),
            _ => (own, false),
        };
        self.rt.block_on(async {
            let mut fut = pin!(fut);
            match wait(fut.as_mut(), Some(deadline), &*self.stop).await {
                Waited::Done(r) => r.map_err(|e| self.server_error(step, &e)),
                Waited::Stopped => {
                    let by = self.begin_cleanup();
                    self.cancel_and_settle(fut, by).await;
                    Err(Error::Interrupted)
                }
                Waited::TimedOut if run_binds => {
                    let outcome = self.cancel_and_settle(fut, deadline + DEADLINE_GRACE).await;
                    let note = format!(
                        "the {} deadline passed during {step}: {outcome}",
                        seconds(self.max_time())
                    );
                    *self.deadline_note.borrow_mut() = Some(note.clone());
                    Err(Error::MaxTime(note))
                }
                Waited::TimedOut => {
                    let outcome = self.cancel_and_settle(fut, Instant::now() + CLEANUP_BUDGET).await;
                    Err(Error::Server {
                        step: step.to_string(),
                        message: format!(
                            "no answer within {} s (the client's deadline, {} s after statement_timeout); {outcome}",
                            self.deadline.as_secs(),
                            CLIENT_DEADLINE_GRACE.as_secs()
                        ),
                        sqlstate: None,
                    })
                }
            }
        })
    }

    fn max_time(&self) -> Duration {
        self.budget.map(|b| b.max_time()).unwrap_or_default()
    }

    /// Sends the cancel request for the statement `fut` and waits for it to
    /// end until `by`; says what is known: the server confirmed the cancel
    /// (SQLSTATE 57014), the statement ended anyway, or no answer came (the
    /// connection is then closed).
    async fn cancel_and_settle<T, F>(&self, fut: Pin<&mut F>, by: Instant) -> String
    where
        F: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let asked = Instant::now();
        let cancel_by = by.min(asked + CANCEL_TIMEOUT);
        let sent = match tokio::time::timeout_at(cancel_by.into(), self.cancel.cancel_query(self.tls.clone())).await {
            Ok(Ok(())) => "cancel sent".to_string(),
            Ok(Err(e)) => format!("the cancel request failed ({})", crate::error::describe(&e).0),
            Err(_) => format!(
                "the cancel request was not taken within {:.1} s",
                cancel_by.saturating_duration_since(asked).as_secs_f64()
            ),
        };
        // A cancelled statement ends at once with SQLSTATE 57014 and leaves
        // the connection usable.
        match tokio::time::timeout_at(by.into(), fut).await {
            Ok(Err(e)) if e.code() == Some(&SqlState::QUERY_CANCELED) => {
                format!("{sent}; the server confirmed it: the statement was cancelled (SQLSTATE 57014)")
            }
            Ok(Err(e)) => format!(
                "{sent}; the statement ended with another error: {}",
                crate::error::describe(&e).0
            ),
            Ok(Ok(_)) => format!("{sent}; the statement ended before the cancel reached it"),
            Err(_) => {
                self.give_up();
                format!(
                    "{sent}, no answer from the server within {:.1} s; the connection was closed",
                    by.saturating_duration_since(asked).as_secs_f64()
                )
            }
        }
    }

    /// Abandons the connection: no statement is sent on it again and its
    /// socket is closed (the server ends the session, and drops the TEMP
    /// table, when its backend next runs).
    fn give_up(&self) {
        self.broken.set(true);
        self.driver.abort();
    }

    /// A cleanup statement: runs after a stop too, but only until the
    /// cleanup budget (or the usual deadline when there was no stop).
    fn cleanup_statement(
        &self,
        step: &str,
        fut: impl Future<Output = Result<(), tokio_postgres::Error>>,
    ) -> Result<(), Error> {
        if self.broken.get() {
            return Err(Self::unusable(step));
        }
        let own_by = self.cleanup_by.get().unwrap_or_else(|| Instant::now() + self.deadline);
        let run_by = self.budget.map(|b| b.deadline() + DEADLINE_GRACE);
        let by = run_by.map_or(own_by, |r| r.min(own_by));
        let sent = Instant::now();
        match self
            .rt
            .block_on(async { tokio::time::timeout_at(by.into(), fut).await })
        {
            Ok(r) => r.map_err(|e| self.server_error(step, &e)),
            // --max-time's grace ended it: no cancel for a cleanup statement.
            Err(_) if run_by == Some(by) => {
                self.give_up();
                let note = format!(
                    "the {} deadline passed during {step}: no answer from the server within {:.1} s; the \
                     connection was closed",
                    seconds(self.max_time()),
                    by.saturating_duration_since(sent).as_secs_f64()
                );
                *self.deadline_note.borrow_mut() = Some(note.clone());
                Err(Error::MaxTime(note))
            }
            Err(_) => {
                self.give_up();
                Err(Error::Server {
                    step: step.to_string(),
                    message: "no answer in time; the server drops the table when the session ends".into(),
                    sqlstate: None,
                })
            }
        }
    }

    /// Reads the version and the shown settings.
    pub fn server_info(&mut self) -> Result<ServerInfo, Error> {
        let row = self.statement(
            "reading the server version",
            self.client.query_one(
                "SELECT current_setting('server_version'), current_setting('server_version_num'), \
                 current_setting('block_size'), pg_catalog.version()",
                &[],
            ),
        )?;
        let version = escape_untrusted(row.get::<_, &str>(0)).into_owned();
        let num_text = escape_untrusted(row.get::<_, &str>(1)).into_owned();
        let block_text = escape_untrusted(row.get::<_, &str>(2)).into_owned();
        let version_full = escape_untrusted(row.get::<_, &str>(3)).into_owned();
        let version_num = num_text
            .trim()
            .parse()
            .map_err(|_| Error::Plan(format!("server_version_num is '{num_text}'")))?;
        let block_size = block_text
            .trim()
            .parse()
            .map_err(|_| Error::Plan(format!("block_size is '{block_text}'")))?;
        let names: Vec<&str> = SHOWN_SETTINGS.to_vec();
        let rows = self.statement(
            "reading the server settings",
            self.client.query(
                "SELECT name, current_setting(name) FROM pg_catalog.pg_settings WHERE name = ANY($1)",
                &[&names],
            ),
        )?;
        let mut settings = Vec::new();
        for name in SHOWN_SETTINGS {
            if let Some(r) = rows.iter().find(|r| r.get::<_, &str>(0) == name) {
                settings.push(Setting {
                    name: name.to_string(),
                    server_value: escape_untrusted(r.get::<_, &str>(1)).into_owned(),
                    session_value: None,
                    why: None,
                });
            }
        }
        Ok(ServerInfo {
            version,
            version_num,
            version_full,
            block_size,
            settings,
        })
    }

    /// The server's timing settings ([`crate::timing_settings::model::TIMING_SETTINGS`])
    /// from `pg_settings`, as the server has them: one read, nothing set.
    /// auto_explain's rows exist only where the module is loaded.
    pub fn timing_settings(&mut self) -> Result<Vec<crate::timing_settings::model::ServerSetting>, Error> {
        let names: Vec<&str> = crate::timing_settings::model::TIMING_SETTINGS.to_vec();
        let rows = self.statement(
            "reading the server's timing settings",
            self.client.query(
                "SELECT name, setting, pg_catalog.current_setting(name), vartype, source, context \
                 FROM pg_catalog.pg_settings WHERE name = ANY($1)",
                &[&names],
            ),
        )?;
        let text = |r: &tokio_postgres::Row, i: usize| {
            escape_untrusted(r.get::<_, Option<&str>>(i).unwrap_or("")).into_owned()
        };
        Ok(crate::timing_settings::model::TIMING_SETTINGS
            .iter()
            .filter_map(|name| rows.iter().find(|r| r.get::<_, &str>(0) == *name))
            .map(|r| crate::timing_settings::model::ServerSetting {
                name: text(r, 0),
                setting: text(r, 1),
                shown: text(r, 2),
                vartype: text(r, 3),
                source: text(r, 4),
                context: text(r, 5),
            })
            .collect())
    }

    /// The role this session logged in as (`session_user`).
    pub fn session_user(&mut self) -> Result<String, Error> {
        let row = self.statement(
            "reading the session's user",
            self.client.query_one("SELECT session_user::text", &[]),
        )?;
        Ok(escape_untrusted(row.get::<_, &str>(0)).into_owned())
    }

    /// The TLS protocol of this session as the server sees it
    /// (`pg_stat_ssl.version`, e.g. `TLSv1.3`), `None` when unencrypted.
    pub fn tls_version(&mut self) -> Result<Option<String>, Error> {
        let rows = self.statement(
            "reading the session's TLS state",
            self.client.query(
                "SELECT version FROM pg_catalog.pg_stat_ssl WHERE pid = pg_catalog.pg_backend_pid() AND ssl",
                &[],
            ),
        )?;
        Ok(rows
            .first()
            .and_then(|r| r.get::<_, Option<&str>>(0))
            .map(|v| escape_untrusted(v).into_owned()))
    }

    /// `pg_settings.setting` of `name` for this session (in the setting's
    /// base unit: ms for statement_timeout).
    pub fn raw_setting(&mut self, name: &str) -> Result<String, Error> {
        let row = self.statement(
            "reading a setting",
            self.client
                .query_one("SELECT setting FROM pg_catalog.pg_settings WHERE name = $1", &[&name]),
        )?;
        Ok(escape_untrusted(row.get::<_, &str>(0)).into_owned())
    }

    /// Sets up the session for `rows`: parallel query and JIT off,
    /// temp_buffers large enough for the table (before any TEMP table is
    /// touched, as PostgreSQL requires), `statement_timeout` (and the client's
    /// deadline) for that many rows, and the client connection check.
    /// Records the changes in `info`.
    pub fn prepare(&mut self, info: &mut ServerInfo, rows: u64) -> Result<(), Error> {
        self.deadline = client_deadline_for(rows);
        let mut timeout = statement_timeout_for(rows);
        let mut timeout_why = format!(
            "a server-side bound on each statement, {} s + {} us per row (the client gives up {} s later)",
            STATEMENT_TIMEOUT_BASE.as_secs(),
            STATEMENT_TIMEOUT_PER_ROW.as_micros(),
            CLIENT_DEADLINE_GRACE.as_secs()
        );
        let query_mode = self.user_query.is_some();
        if let Some((_, max_time)) = &self.user_query {
            // Whole milliseconds, at least 1 (0 would turn the timeout off).
            timeout = Duration::from_millis((max_time.as_millis() as u64).max(1));
            self.deadline = timeout + CLIENT_DEADLINE_GRACE;
            timeout_why = format!(
                "--max-time; each run of --query also gets SET LOCAL statement_timeout at the time left \
                 (the client gives up {} s later)",
                CLIENT_DEADLINE_GRACE.as_secs()
            );
        }
        // (name, value, why, optional: a refusal is not an error)
        let mut changes: Vec<(&str, String, String, bool)> =
            vec![("statement_timeout", timeout.as_millis().to_string(), timeout_why, false)];
        if info.setting("client_connection_check_interval").is_some() {
            changes.push((
                "client_connection_check_interval",
                CONNECTION_CHECK_INTERVAL_MS.to_string(),
                "a statement stops within a second if clockscope is killed".into(),
                // Platforms without the check refuse any value but 0.
                true,
            ));
        }
        // Both exist since PostgreSQL 9.6 and 11; older servers have neither to turn off.
        // --query runs the user's statement as the server would (parallel, JIT).
        if !query_mode && info.setting("max_parallel_workers_per_gather").is_some() {
            changes.push((
                "max_parallel_workers_per_gather",
                "0".into(),
                "one backend does the whole scan, so the per-row cost is one process's".into(),
                false,
            ));
        }
        if !query_mode && info.setting("jit").is_some() {
            changes.push((
                "jit",
                "off".into(),
                "JIT compilation time distorts small runs".into(),
                false,
            ));
        }
        let want_blocks = temp_buffers_blocks_for(rows, info.block_size);
        let current_blocks: i64 = self
            .statement(
                "reading temp_buffers",
                self.client.query_one(
                    "SELECT setting::bigint FROM pg_catalog.pg_settings WHERE name = 'temp_buffers'",
                    &[],
                ),
            )?
            .get(0);
        if !query_mode && want_blocks as i64 > current_blocks {
            changes.push((
                "temp_buffers",
                want_blocks.to_string(),
                "the TEMP table stays in local buffers instead of being re-read through the kernel each run".into(),
                false,
            ));
        }
        for (name, value, why, optional) in changes {
            // `name` is one of our constants; `value` is a number or "off" we chose.
            let step = format!("SET {name}");
            match self.statement(&step, self.client.batch_execute(&format!("SET {name} = {value}"))) {
                Ok(()) => {}
                Err(e) if optional && e.sqlstate().is_some() => continue,
                Err(e) => return Err(e),
            }
            let now: String = self
                .statement(
                    &format!("reading {name}"),
                    self.client.query_one("SELECT current_setting($1)", &[&name]),
                )?
                .get(0);
            if let Some(s) = info.settings.iter_mut().find(|s| s.name == name) {
                s.session_value = Some(escape_untrusted(&now).into_owned());
                s.why = Some(why);
            }
        }
        Ok(())
    }

    /// Turns auto_explain off for this session only (`SET
    /// auto_explain.log_min_duration = -1`): where it is on, it would
    /// instrument (and log) the measured statements too, timing the TIMING
    /// OFF runs as well when log_analyze and log_timing are on. Superuser
    /// only: Ok(false) when the server refuses, nothing changed. Records
    /// the change in `info`.
    pub fn turn_off_auto_explain(&mut self, info: &mut ServerInfo, server_value: &str) -> Result<bool, Error> {
        const NAME: &str = "auto_explain.log_min_duration";
        match self.statement(
            "SET auto_explain.log_min_duration",
            self.client.batch_execute("SET auto_explain.log_min_duration = -1"),
        ) {
            Ok(()) => {}
            Err(e) if e.sqlstate().is_some() => return Ok(false),
            Err(e) => return Err(e),
        }
        let now: String = self
            .statement(
                "reading auto_explain.log_min_duration",
                self.client.query_one("SELECT current_setting($1)", &[&NAME]),
            )?
            .get(0);
        info.settings.push(Setting {
            name: NAME.to_string(),
            server_value: server_value.to_string(),
            session_value: Some(escape_untrusted(&now).into_owned()),
            why: Some(
                "auto_explain would instrument and log the measured statements too (with log_analyze and \
                 log_timing, the TIMING OFF runs would be timed as well)"
                    .into(),
            ),
        });
        Ok(true)
    }

    /// Creates the TEMP table with `rows` rows from generate_series.
    pub fn create_table(&mut self, rows: u64) -> Result<(), Error> {
        let rows = i32::try_from(rows).map_err(|_| Error::Rows(format!("{rows} does not fit the int4 column")))?;
        let create = format!("CREATE TEMP TABLE {} (n int4)", self.table);
        // Marked before it is sent: a stop during the CREATE still drops it.
        self.created = true;
        if let Err(e) = self.statement("creating the TEMP table", self.client.batch_execute(&create)) {
            // Refused outright (read-only, no privilege): nothing to drop.
            if matches!(e.sqlstate(), Some(READ_ONLY_TRANSACTION | INSUFFICIENT_PRIVILEGE)) {
                self.created = false;
            }
            return Err(e);
        }
        let fill = format!("INSERT INTO {} SELECT generate_series(1, $1::int4)", self.table);
        self.statement("filling the TEMP table", self.client.execute(&fill, &[&rows]))?;
        Ok(())
    }

    /// Drops the TEMP table if we created it: after a stop too, within the
    /// cleanup budget.
    pub fn drop_table(&mut self) -> Result<(), Error> {
        if self.created {
            let sql = format!("DROP TABLE IF EXISTS {}", self.table);
            self.cleanup_statement("dropping the TEMP table", self.client.batch_execute(&sql))?;
            self.created = false;
        }
        Ok(())
    }

    fn simple_text(&mut self, sql: &str, step: &str) -> Result<String, Error> {
        let messages = self.statement(step, self.client.simple_query(sql))?;
        messages
            .iter()
            .find_map(|m| match m {
                SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            })
            .ok_or_else(|| Error::Plan(format!("{step}: no result row")))
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

/// EXPLAIN's JSON column as text: `json` (text on the wire, binary format
/// too), `jsonb` (a version byte, then text) or `text`. tokio-postgres reads
/// `json` only through its serde feature; this keeps the text as the server
/// sent it, for [`crate::plan::parse_explain_json`].
struct JsonText(String);

impl<'a> tokio_postgres::types::FromSql<'a> for JsonText {
    fn from_sql(
        ty: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let raw = if *ty == tokio_postgres::types::Type::JSONB {
            raw.strip_prefix(&[1]).ok_or("jsonb: unknown format version")?
        } else {
            raw
        };
        Ok(JsonText(std::str::from_utf8(raw)?.to_string()))
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        use tokio_postgres::types::Type;
        matches!(*ty, Type::JSON | Type::JSONB | Type::TEXT)
    }
}

impl PgSession {
    /// One EXPLAIN of the user's statement in `BEGIN READ ONLY` (with
    /// `SET LOCAL statement_timeout` at the time left), then `ROLLBACK`,
    /// whatever happened (within the cleanup budget after a stop).
    fn explain_user_query(&mut self, sql: &str, timing: bool) -> Result<String, Error> {
        let explain = format!(
            "EXPLAIN (ANALYZE, TIMING {}, FORMAT JSON) {sql}",
            if timing { "ON" } else { "OFF" }
        );
        self.read_only_explain(sql, &explain, "EXPLAIN ANALYZE of --query", true)
    }

    /// `EXPLAIN (VERBOSE, FORMAT JSON)` of `--query` `sql`, without ANALYZE
    /// (planned, not run), in `BEGIN READ ONLY ... ROLLBACK`: every
    /// expression the executor would evaluate, views expanded and SQL
    /// functions inlined ([`crate::side_effects::escapes_in_plan`]).
    pub fn verbose_plan(&mut self, sql: &str) -> Result<String, Error> {
        let explain = format!("EXPLAIN (VERBOSE, FORMAT JSON) {sql}");
        self.read_only_explain(sql, &explain, "EXPLAIN (VERBOSE) of --query", false)
    }

    /// `explain` (an EXPLAIN of `sql`) in `BEGIN READ ONLY`, then
    /// `ROLLBACK`; with `check_writes`, a run that took a transaction id is
    /// refused as a write.
    fn read_only_explain(&mut self, sql: &str, explain: &str, step: &str, check_writes: bool) -> Result<String, Error> {
        let mut begin = "BEGIN READ ONLY".to_string();
        if let Some(left) = self.time_left {
            begin.push_str(&format!(
                "; SET LOCAL statement_timeout = {}",
                (left.as_millis() as u64).max(1)
            ));
        }
        self.statement("BEGIN READ ONLY", self.client.batch_execute(&begin))?;
        // The extended protocol: the server parses `explain` as one
        // statement and refuses several ("cannot insert multiple commands").
        let result = self
            .statement(step, self.client.query_one(explain, &[]))
            .and_then(|row| {
                row.try_get::<_, JsonText>(0)
                    .map(|j| j.0)
                    .map_err(|e| Error::Plan(format!("EXPLAIN's result: {}", crate::error::describe(&e).0)))
            })
            .and_then(|plan| {
                if !check_writes {
                    return Ok(plan);
                }
                // READ ONLY does not stop everything under EXPLAIN ANALYZE
                // (CREATE TABLE AS and SELECT INTO create their table on
                // PostgreSQL 15): any write takes a transaction id, so one
                // assigned means the query wrote. ROLLBACK undoes it below.
                let wrote: bool = self
                    .statement(
                        "checking that --query wrote nothing",
                        self.client
                            .query_one("SELECT pg_catalog.txid_current_if_assigned() IS NOT NULL", &[]),
                    )?
                    .get(0);
                if wrote {
                    return Err(Error::Query(
                        "the query writes (it took a transaction id, e.g. CREATE TABLE AS or SELECT INTO, which \
                         READ ONLY does not stop under EXPLAIN); rolled back, nothing changed"
                            .into(),
                    ));
                }
                Ok(plan)
            });
        let rolled_back = self.cleanup_statement("ROLLBACK", self.client.batch_execute("ROLLBACK"));
        let plan = result.map_err(|e| query_error(e, sql))?;
        rolled_back?;
        Ok(plan)
    }
}

impl ExplainServer for PgSession {
    fn limit_next(&mut self, left: Duration) {
        self.time_left = Some(left);
    }

    fn explain(&mut self, timing: bool) -> Result<String, Error> {
        if let Some((sql, _)) = self.user_query.clone() {
            return self.explain_user_query(&sql, timing);
        }
        let sql = format!(
            "EXPLAIN (ANALYZE, TIMING {}, FORMAT JSON) {}",
            if timing { "ON" } else { "OFF" },
            self.query()
        );
        let step = if timing {
            "EXPLAIN ANALYZE with TIMING ON"
        } else {
            "EXPLAIN ANALYZE with TIMING OFF"
        };
        self.simple_text(&sql, step)
    }

    fn set_clock_source(&mut self, value: &str) -> Result<(), Error> {
        let value = match value {
            "system" => "system",
            "tsc" => "tsc",
            other => {
                return Err(Error::Settings(format!(
                    "timing_clock_source: '{other}' is not system or tsc"
                )))
            }
        };
        let step = format!("SET timing_clock_source = '{value}'");
        self.statement(&step, self.client.batch_execute(&step))
    }

    fn show_clock_source(&mut self) -> Result<String, Error> {
        let shown = self.simple_text("SHOW timing_clock_source", "SHOW timing_clock_source")?;
        Ok(escape_untrusted(&shown).into_owned())
    }

    fn reset_clock_source(&mut self) -> Result<(), Error> {
        // Past --max-time the session is about to end, and its SET with it.
        if self.past_deadline() {
            return Ok(());
        }
        self.statement(
            "RESET timing_clock_source",
            self.client.batch_execute("RESET timing_clock_source"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_buffers_cover_the_table() {
        // 8 kB pages hold 226 int4 rows.
        assert_eq!(temp_buffers_blocks_for(226, 8192), 1 + 64);
        assert_eq!(temp_buffers_blocks_for(1_000_000, 8192), 4425 + 64);
        assert_eq!(temp_buffers_blocks_for(1_000_000_000, 8192), (1 << 30) / 8192);
    }

    #[test]
    fn table_size_is_whole_pages() {
        assert_eq!(rows_per_page(8192), 226);
        assert_eq!(estimated_table_bytes(1, 8192), 8192);
        assert_eq!(estimated_table_bytes(226, 8192), 8192);
        assert_eq!(estimated_table_bytes(227, 8192), 2 * 8192);
        assert_eq!(estimated_table_bytes(1_000_000_000, 8192), 4_424_779 * 8192);
    }

    #[test]
    fn timeouts_grow_with_rows() {
        assert_eq!(statement_timeout_for(0), Duration::from_secs(30));
        assert_eq!(statement_timeout_for(1_000_000), Duration::from_secs(50));
        assert_eq!(statement_timeout_for(20_000_000), Duration::from_secs(430));
        assert_eq!(client_deadline_for(1_000_000), Duration::from_secs(60));
        assert_eq!(statement_timeout_for(1_000_000_000), Duration::from_secs(20_030));
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_wait_ends_at_its_deadline_or_a_stop() {
        let soon = Some(Instant::now() + Duration::from_millis(30));
        assert_eq!(
            block_on(wait(std::future::pending::<()>(), soon, &|| false)),
            Waited::TimedOut
        );
        assert_eq!(
            block_on(wait(std::future::pending::<()>(), None, &|| true)),
            Waited::Stopped
        );
        // A stop that comes later is seen by the periodic check.
        let start = Instant::now();
        let later = move || start.elapsed() > Duration::from_millis(50);
        assert_eq!(
            block_on(wait(std::future::pending::<()>(), None, &later)),
            Waited::Stopped
        );
        assert_eq!(block_on(wait(std::future::ready(7), None, &|| true)), Waited::Done(7));
    }

    #[test]
    fn first_keywords_skip_comments_and_parentheses() {
        assert_eq!(first_keyword("  select 1"), "SELECT");
        assert_eq!(first_keyword("-- note\n/* c */ (SELECT 1)"), "SELECT");
        assert_eq!(first_keyword("create table t (a int)"), "CREATE");
        assert_eq!(first_keyword("; x"), "");
        assert_eq!(first_keyword("-- only a comment"), "");
    }

    fn server_error(message: &str, state: &str) -> Error {
        Error::Server {
            step: "EXPLAIN ANALYZE of --query".into(),
            message: message.into(),
            sqlstate: Some(state.into()),
        }
    }

    #[test]
    fn query_errors_name_the_option_and_the_cause() {
        let write = query_error(
            server_error("cannot execute INSERT in a read-only transaction", "25006"),
            "INSERT INTO t VALUES (1)",
        );
        assert!(write.to_string().starts_with("--query: the query writes"), "{write}");
        let two = query_error(
            server_error("cannot insert multiple commands into a prepared statement", "42601"),
            "SELECT 1; SELECT 2",
        );
        assert!(two.to_string().starts_with("--query: several statements"), "{two}");
        let ddl = query_error(
            server_error("syntax error at or near \"TABLE\"", "42601"),
            "CREATE TABLE t (a int)",
        );
        assert!(
            ddl.to_string()
                .starts_with("--query: EXPLAIN cannot run a CREATE statement"),
            "{ddl}"
        );
        // A typo in the first word is a syntax error, not a utility statement.
        let typo = query_error(server_error("syntax error at or near \"SELEC\"", "42601"), "SELEC 1");
        assert!(
            typo.to_string()
                .starts_with("--query: the server refused it: syntax error at or near"),
            "{typo}"
        );
        let syntax = query_error(
            server_error("syntax error at or near \"FRM\"", "42601"),
            "SELECT 1 FRM t",
        );
        assert!(
            syntax
                .to_string()
                .starts_with("--query: the server refused it: syntax error"),
            "{syntax}"
        );
        let timeout = query_error(
            server_error("canceling statement due to statement timeout", "57014"),
            "SELECT pg_sleep(9)",
        );
        assert!(timeout.to_string().starts_with("--max-time: "), "{timeout}");
        assert!(matches!(
            query_error(Error::Interrupted, "SELECT 1"),
            Error::Interrupted
        ));
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote_ident("t"), "\"t\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}

//! The server's settings: the version and the shown settings, the timing
//! settings, the session's user and TLS state, and the session's set-up
//! (parallel query and JIT off, temp_buffers, statement_timeout, the
//! connection check, auto_explain off).

use super::{
    client_deadline_for, statement_timeout_for, temp_buffers_blocks_for, PgSession, ServerInfo, Setting,
    CLIENT_DEADLINE_GRACE, CONNECTION_CHECK_INTERVAL_MS, SHOWN_SETTINGS, STATEMENT_TIMEOUT_BASE,
    STATEMENT_TIMEOUT_PER_ROW,
};
use crate::error::Error;
use crate::timing_settings::model::{ServerSetting, TIMING_SETTINGS};
use clockscope_system::escape::escape_untrusted;
use std::time::Duration;

impl PgSession {
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

    /// The server's timing settings (`TIMING_SETTINGS`)
    /// from `pg_settings`, as the server has them: one read, nothing set.
    /// auto_explain's rows exist only where the module is loaded.
    pub fn timing_settings(&mut self) -> Result<Vec<ServerSetting>, Error> {
        let names: Vec<&str> = TIMING_SETTINGS.to_vec();
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
        Ok(TIMING_SETTINGS
            .iter()
            .filter_map(|name| rows.iter().find(|r| r.get::<_, &str>(0) == *name))
            .map(|r| ServerSetting {
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
        self.text_of("reading the session's user", "SELECT session_user::text", &[])
    }

    /// The first column of the one row `sql` returns, as text (escaped).
    fn text_of(
        &self,
        step: &str,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<String, Error> {
        let row = self.statement(step, self.client.query_one(sql, params))?;
        Ok(escape_untrusted(row.get::<_, &str>(0)).into_owned())
    }

    /// The process id of this session's backend on the server's machine
    /// (`pg_backend_pid()`).
    pub fn backend_pid(&mut self) -> Result<u32, Error> {
        let row = self.statement(
            "reading the backend's process id",
            self.client.query_one("SELECT pg_catalog.pg_backend_pid()", &[]),
        )?;
        Ok(u32::try_from(row.get::<_, i32>(0)).unwrap_or(0))
    }

    /// What the server says of this session's backend, to know it here
    /// beyond its pid ([`crate::backend_process`]): its age by the server's
    /// clock and the data directory (when this role may read it).
    pub fn backend_view(&mut self) -> Result<crate::backend_process::ServerView, Error> {
        let row = self.statement(
            "reading the backend's start",
            self.client.query_one(
                "SELECT EXTRACT(epoch FROM pg_catalog.clock_timestamp() - backend_start)::float8,                  (SELECT setting FROM pg_catalog.pg_settings WHERE name = 'data_directory')                  FROM pg_catalog.pg_stat_activity WHERE pid = pg_catalog.pg_backend_pid()",
                &[],
            ),
        )?;
        let age: Option<f64> = row.get(0);
        Ok(crate::backend_process::ServerView {
            age: std::time::Duration::try_from_secs_f64(age.unwrap_or(-1.0)).unwrap_or(Duration::MAX),
            data_directory: row.get(1),
        })
    }

    /// The rows of a catalog query (`crate::side_effects`'s routes), with
    /// the session's deadlines.
    pub(crate) fn catalog_query(
        &mut self,
        step: &str,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, Error> {
        self.statement(step, self.client.query(sql, params))
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
        let sql = "SELECT setting FROM pg_catalog.pg_settings WHERE name = $1";
        self.text_of("reading a setting", sql, &[&name])
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
                Err(e) if optional && e.sqlstate().is_some() => continue,
                done => done?,
            }
            let now = self.text_of(&format!("reading {name}"), "SELECT current_setting($1)", &[&name])?;
            if let Some(s) = info.settings.iter_mut().find(|s| s.name == name) {
                s.session_value = Some(now);
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
    pub(crate) fn turn_off_auto_explain(&mut self, info: &mut ServerInfo, server_value: &str) -> Result<bool, Error> {
        const NAME: &str = "auto_explain.log_min_duration";
        match self.statement(
            "SET auto_explain.log_min_duration",
            self.client.batch_execute("SET auto_explain.log_min_duration = -1"),
        ) {
            Err(e) if e.sqlstate().is_some() => return Ok(false),
            done => done?,
        }
        let now = self.text_of(
            "reading auto_explain.log_min_duration",
            "SELECT current_setting($1)",
            &[&NAME],
        )?;
        info.settings.push(Setting {
            name: NAME.to_string(),
            server_value: server_value.to_string(),
            session_value: Some(now),
            why: Some(
                "auto_explain would instrument and log the measured statements too (with log_analyze and \
                 log_timing, the TIMING OFF runs would be timed as well)"
                    .into(),
            ),
        });
        Ok(true)
    }
}

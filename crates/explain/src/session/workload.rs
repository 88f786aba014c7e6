//! What EXPLAIN runs: the TEMP table (whether it can be made, its creation
//! and drop), generate_series, or the user's `--query` in `BEGIN READ ONLY
//! ... ROLLBACK`; and the session as the runs' [`ExplainServer`].

use super::{query_error, PgSession, INSUFFICIENT_PRIVILEGE, READ_ONLY_TRANSACTION};
use crate::error::Error;
use crate::measure::ExplainServer;
use clockscope_system::escape::escape_untrusted;
use std::time::Duration;
use tokio_postgres::SimpleQueryMessage;

impl PgSession {
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
    pub(crate) fn use_series(&mut self, rows: u64) -> Result<(), Error> {
        let rows =
            i32::try_from(rows).map_err(|_| Error::Rows(format!("{rows} does not fit generate_series' int4")))?;
        self.series_rows = Some(rows);
        Ok(())
    }

    /// Runs EXPLAIN on the user's statement `sql` (`--query`): each run in
    /// `BEGIN READ ONLY` with `SET LOCAL statement_timeout` at the time
    /// `--max-time` leaves, then `ROLLBACK`; statements bounded by
    /// `max_time` (call before [`PgSession::prepare`]).
    pub(crate) fn use_query(&mut self, sql: &str, max_time: Duration) {
        self.user_query = Some((sql.to_string(), max_time));
    }

    /// Why this session cannot create a TEMP table, if it cannot: a hot
    /// standby, a read-only transaction (default_transaction_read_only), or
    /// no TEMP privilege on the database. Reads only.
    pub(crate) fn temp_table_blocker(&mut self) -> Result<Option<String>, Error> {
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
    fn explain_user_query(&mut self, sql: &str, on_off: &str) -> Result<String, Error> {
        // VERBOSE: each parallel worker's rows per node (plan::parallel).
        let explain = format!("EXPLAIN (ANALYZE, VERBOSE, TIMING {on_off}, FORMAT JSON) {sql}");
        self.read_only_explain(sql, &explain, "EXPLAIN ANALYZE of --query", true)
    }

    /// `EXPLAIN (VERBOSE, FORMAT JSON)` of `--query` `sql`, without ANALYZE
    /// (planned, not run), in `BEGIN READ ONLY ... ROLLBACK`: every
    /// expression the executor would evaluate, views expanded and SQL
    /// functions inlined ([`crate::side_effects::escapes_in_plan`]).
    pub(crate) fn verbose_plan(&mut self, sql: &str) -> Result<String, Error> {
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
        let on_off = if timing { "ON" } else { "OFF" };
        if let Some((sql, _)) = self.user_query.clone() {
            return self.explain_user_query(&sql, on_off);
        }
        let sql = format!("EXPLAIN (ANALYZE, TIMING {on_off}, FORMAT JSON) {}", self.query());
        self.simple_text(&sql, &format!("EXPLAIN ANALYZE with TIMING {on_off}"))
    }

    fn set_clock_source(&mut self, value: &str) -> Result<(), Error> {
        if !matches!(value, "system" | "tsc") {
            return Err(Error::Settings(format!(
                "timing_clock_source: '{value}' is not system or tsc"
            )));
        }
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

//! The PostgreSQL session: connect, read the version and the settings that
//! matter, set up the session (no parallel query, no JIT, room for the TEMP
//! table in local buffers), create and drop the TEMP table, run EXPLAIN.
//!
//! Nothing but the TEMP table is created, and it is dropped at the end (the
//! server would drop it at disconnect anyway). No SQL is built from user
//! text: the row count is a `$1` bind parameter; the table name is ours,
//! quoted; setting values are integers we computed.

use crate::connect::Target;
use crate::error::Error;
use crate::measure::ExplainServer;
use postgres::{Client, NoTls, SimpleQueryMessage};
use serde::Serialize;

/// Settings printed with the report, in this order.
pub const SHOWN_SETTINGS: [&str; 7] = [
    "track_io_timing",
    "max_parallel_workers_per_gather",
    "jit",
    "timing_clock_source",
    "shared_buffers",
    "work_mem",
    "temp_buffers",
];

/// Bytes one int4 row takes in a heap page: 24-byte tuple header, the
/// 4-byte value padded to 8 (MAXALIGN), a 4-byte line pointer.
pub const HEAP_BYTES_PER_INT4_ROW: u64 = 24 + 8 + 4;
/// Page header bytes per heap page.
pub const HEAP_PAGE_HEADER_BYTES: u64 = 24;
/// Most local buffers we ask for (temp_buffers), so a 1e9-row table does not
/// reserve 36 GB of backend memory: 1 GiB.
pub const MAX_TEMP_BUFFERS_BYTES: u64 = 1 << 30;

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

/// The local buffers (in blocks of `block_size`) that hold a table of `rows`
/// int4 rows, with 64 blocks of slack, capped at [`MAX_TEMP_BUFFERS_BYTES`].
pub fn temp_buffers_blocks_for(rows: u64, block_size: u64) -> u64 {
    let rows_per_page = ((block_size.saturating_sub(HEAP_PAGE_HEADER_BYTES)) / HEAP_BYTES_PER_INT4_ROW).max(1);
    let pages = rows.div_ceil(rows_per_page) + 64;
    pages.min(MAX_TEMP_BUFFERS_BYTES / block_size.max(1))
}

/// Quotes an SQL identifier (doubling embedded quotes).
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A connected session holding (once created) the TEMP table.
pub struct PgSession {
    client: Client,
    /// `pg_temp."clockscope_explain_<pid>"`.
    table: String,
    created: bool,
}

impl PgSession {
    /// Connects to `target`.
    pub fn connect(target: &Target) -> Result<PgSession, Error> {
        let client = target
            .config
            .connect(NoTls)
            .map_err(|e| Error::connect(&target.description, &e))?;
        let table = format!(
            "pg_temp.{}",
            quote_ident(&format!("clockscope_explain_{}", std::process::id()))
        );
        Ok(PgSession {
            client,
            table,
            created: false,
        })
    }

    /// The TEMP table's qualified, quoted name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The query EXPLAIN runs.
    pub fn query(&self) -> String {
        format!("SELECT count(*) FROM {}", self.table)
    }

    /// Reads the version and the shown settings.
    pub fn server_info(&mut self) -> Result<ServerInfo, Error> {
        let step = "reading the server version";
        let row = self
            .client
            .query_one(
                "SELECT current_setting('server_version'), current_setting('server_version_num'), \
                 current_setting('block_size')",
                &[],
            )
            .map_err(|e| Error::server(step, &e))?;
        let version: String = row.get(0);
        let num_text: String = row.get(1);
        let block_text: String = row.get(2);
        let version_num = num_text
            .trim()
            .parse()
            .map_err(|_| Error::Plan(format!("server_version_num is '{num_text}'")))?;
        let block_size = block_text
            .trim()
            .parse()
            .map_err(|_| Error::Plan(format!("block_size is '{block_text}'")))?;
        let names: Vec<&str> = SHOWN_SETTINGS.to_vec();
        let rows = self
            .client
            .query(
                "SELECT name, current_setting(name) FROM pg_catalog.pg_settings WHERE name = ANY($1)",
                &[&names],
            )
            .map_err(|e| Error::server("reading the server settings", &e))?;
        let mut settings = Vec::new();
        for name in SHOWN_SETTINGS {
            if let Some(r) = rows.iter().find(|r| r.get::<_, &str>(0) == name) {
                settings.push(Setting {
                    name: name.to_string(),
                    server_value: r.get(1),
                    session_value: None,
                    why: None,
                });
            }
        }
        Ok(ServerInfo {
            version,
            version_num,
            block_size,
            settings,
        })
    }

    /// Sets up the session for `rows`: parallel query and JIT off, and
    /// temp_buffers large enough for the table (before any TEMP table is
    /// touched, as PostgreSQL requires). Records the changes in `info`.
    pub fn prepare(&mut self, info: &mut ServerInfo, rows: u64) -> Result<(), Error> {
        let mut changes: Vec<(&str, String, &str)> = Vec::new();
        // Both exist since PostgreSQL 9.6 and 11; older servers have neither to turn off.
        if info.setting("max_parallel_workers_per_gather").is_some() {
            changes.push((
                "max_parallel_workers_per_gather",
                "0".into(),
                "one backend does the whole scan, so the per-row cost is one process's",
            ));
        }
        if info.setting("jit").is_some() {
            changes.push(("jit", "off".into(), "JIT compilation time distorts small runs"));
        }
        let want_blocks = temp_buffers_blocks_for(rows, info.block_size);
        let current_blocks: i64 = self
            .client
            .query_one(
                "SELECT setting::bigint FROM pg_catalog.pg_settings WHERE name = 'temp_buffers'",
                &[],
            )
            .map_err(|e| Error::server("reading temp_buffers", &e))?
            .get(0);
        if want_blocks as i64 > current_blocks {
            changes.push((
                "temp_buffers",
                want_blocks.to_string(),
                "the TEMP table stays in local buffers instead of being re-read through the kernel each run",
            ));
        }
        for (name, value, why) in changes {
            // `name` is one of our constants; `value` is a number or "off" we chose.
            self.client
                .batch_execute(&format!("SET {name} = {value}"))
                .map_err(|e| Error::server(format!("SET {name}"), &e))?;
            let now: String = self
                .client
                .query_one("SELECT current_setting($1)", &[&name])
                .map_err(|e| Error::server(format!("reading {name}"), &e))?
                .get(0);
            if let Some(s) = info.settings.iter_mut().find(|s| s.name == name) {
                s.session_value = Some(now);
                s.why = Some(why.to_string());
            }
        }
        Ok(())
    }

    /// Creates the TEMP table with `rows` rows from generate_series.
    pub fn create_table(&mut self, rows: u64) -> Result<(), Error> {
        let step = "creating the TEMP table";
        let rows = i32::try_from(rows).map_err(|_| Error::Rows(format!("{rows} does not fit the int4 column")))?;
        self.client
            .batch_execute(&format!("CREATE TEMP TABLE {} (n int4)", self.table))
            .map_err(|e| Error::server(step, &e))?;
        self.created = true;
        self.client
            .execute(
                &format!("INSERT INTO {} SELECT generate_series(1, $1::int4)", self.table),
                &[&rows],
            )
            .map_err(|e| Error::server("filling the TEMP table", &e))?;
        Ok(())
    }

    /// Drops the TEMP table if we created it.
    pub fn drop_table(&mut self) -> Result<(), Error> {
        if self.created {
            self.client
                .batch_execute(&format!("DROP TABLE IF EXISTS {}", self.table))
                .map_err(|e| Error::server("dropping the TEMP table", &e))?;
            self.created = false;
        }
        Ok(())
    }

    fn simple_text(&mut self, sql: &str, step: &str) -> Result<String, Error> {
        let messages = self.client.simple_query(sql).map_err(|e| Error::server(step, &e))?;
        messages
            .iter()
            .find_map(|m| match m {
                SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            })
            .ok_or_else(|| Error::Plan(format!("{step}: no result row")))
    }
}

impl ExplainServer for PgSession {
    fn explain(&mut self, timing: bool) -> Result<String, Error> {
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
        self.client
            .batch_execute(&format!("SET timing_clock_source = '{value}'"))
            .map_err(|e| Error::server(format!("SET timing_clock_source = '{value}'"), &e))
    }

    fn show_clock_source(&mut self) -> Result<String, Error> {
        self.simple_text("SHOW timing_clock_source", "SHOW timing_clock_source")
    }

    fn reset_clock_source(&mut self) -> Result<(), Error> {
        self.client
            .batch_execute("RESET timing_clock_source")
            .map_err(|e| Error::server("RESET timing_clock_source", &e))
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
    fn identifiers_are_quoted() {
        assert_eq!(quote_ident("t"), "\"t\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}

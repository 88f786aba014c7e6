//! What to measure: the table size, the number of runs, and their limits,
//! validated before anything connects to a server.

use crate::error::Error;
use crate::session::sizing::{estimated_table_bytes, HEAP_BYTES_PER_INT4_ROW};
use clockscope_system::escape::escape_untrusted;
use std::time::Duration;

/// Default table size: large enough that the per-row cost dominates the
/// fixed per-query cost (planning, executor start-up) by ~1000x.
pub(crate) const DEFAULT_ROWS: u64 = 1_000_000;
/// Largest table: 1e9 rows of int4 is ~36 GB of TEMP table.
pub(crate) const MAX_ROWS: u64 = 1_000_000_000;
/// Default EXPLAIN runs per timing mode: the fewest pairs before the noise
/// control may stop (it needs 6 for its 95% interval, so it goes on to at
/// least 6 unless `--max-time` ends the runs first).
pub(crate) const DEFAULT_RUNS: u32 = 5;
/// Most runs per timing mode, and the most pairs the noise control runs.
pub const MAX_RUNS: u32 = 1000;
/// Default `--max-time`: the deadline of the whole run.
pub(crate) const DEFAULT_MAX_TIME: Duration = Duration::from_secs(60);
/// Largest `--max-time`: a day.
pub(crate) const MAX_MAX_TIME: Duration = Duration::from_secs(86_400);
/// Longest `--query` accepted, bytes.
pub(crate) const MAX_QUERY_BYTES: usize = 1 << 20;
/// Untimed EXPLAIN runs per mode before the measured ones: the first scan sets
/// hint bits and fills the local buffers.
pub const WARMUP_RUNS: u32 = 1;
/// Largest TEMP table (estimated) made without `--max-table-size`: 2 GB
/// (1024-based, as PostgreSQL counts), about 59 million rows.
pub(crate) const DEFAULT_MAX_TABLE_BYTES: u64 = 2 << 30;
/// The page size the estimate assumes before the server says its
/// `block_size` (PostgreSQL's default; the estimate is re-checked with the
/// server's own before the table is created).
pub(crate) const DEFAULT_BLOCK_SIZE: u64 = 8192;
/// How long to run pg_test_timing's loop on each of this machine's clocks for
/// the prediction (the loop's average settles to ~0.1 ns within this).
pub(crate) const CLOCK_MEASURE_NS: u64 = 500_000_000;

/// What EXPLAIN ANALYZE runs on (`--workload`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// A TEMP table when the server allows one, else generate_series.
    #[default]
    Auto,
    /// `SELECT count(*)` over a TEMP table of `rows` rows.
    Table,
    /// `SELECT count(*) FROM generate_series(1, rows)`: no table, so it runs on
    /// hot standbys, read-only sessions and roles without TEMP. The same two
    /// plan nodes read the clock the same number of times per row; the
    /// function's rows are materialised first (in work_mem, spilling to a
    /// temp file beyond it), so its TIMING OFF time per row differs from the
    /// table's while the clock reads per row, and so the overhead per read,
    /// stay comparable.
    Series,
    /// The user's own statement (`--query`), each run inside
    /// `BEGIN READ ONLY ... ROLLBACK`.
    Query,
}

/// A validated request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// libpq conninfo string or URI; `None` = PG* environment variables.
    pub dsn: Option<String>,
    /// Rows in the TEMP table, `1..=MAX_ROWS`.
    pub rows: u64,
    /// Measured runs per timing mode, `1..=MAX_RUNS`.
    pub runs: u32,
    /// How long to measure each of this machine's clocks, in ns.
    pub clock_measure_ns: u64,
    /// `--max-table-size`: the largest estimated TEMP table allowed;
    /// `None` = `DEFAULT_MAX_TABLE_BYTES`, which the error then names.
    pub max_table_bytes: Option<u64>,
    /// `--workload`.
    pub workload: Workload,
    /// `--query`: the user's statement instead of the count(*) workload.
    pub query: Option<String>,
    /// `--max-time`: a client-side deadline for the whole run, from before
    /// connecting to the end of the report ([`crate::budget`]).
    pub max_time: Duration,
    /// `--allow-side-effects`: run a `--query` that calls a function whose
    /// effect ROLLBACK cannot undo (`crate::side_effects`).
    pub allow_side_effects: bool,
    /// On PostgreSQL 19, the `timing_clock_source` values SET and measured
    /// in turn (`crate::measure`); older servers have the system clock only.
    pub timing_clock_sources: TimingClockSources,
}

/// Which of PostgreSQL 19's `timing_clock_source` values a run measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimingClockSources {
    /// `system`, then `tsc` (`explain`).
    #[default]
    SystemAndTsc,
    /// `system` only: the one a kernel clocksource changes (`sweep --dsn`
    /// measures `tsc` once, not under every clocksource).
    SystemOnly,
}

impl TimingClockSources {
    /// The values SET in turn, in order.
    pub fn values(self) -> &'static [&'static str] {
        match self {
            TimingClockSources::SystemAndTsc => &["system", "tsc"],
            TimingClockSources::SystemOnly => &["system"],
        }
    }
}

impl Options {
    /// Options with the defaults for everything but the connection.
    pub fn new(dsn: Option<String>) -> Options {
        Options {
            dsn,
            rows: DEFAULT_ROWS,
            runs: DEFAULT_RUNS,
            clock_measure_ns: CLOCK_MEASURE_NS,
            max_table_bytes: None,
            workload: Workload::Auto,
            query: None,
            max_time: DEFAULT_MAX_TIME,
            allow_side_effects: false,
            timing_clock_sources: TimingClockSources::SystemAndTsc,
        }
    }

    /// Checks the ranges (for options built without the parsers).
    pub fn validate(&self) -> Result<(), Error> {
        check_rows(self.rows)?;
        if !(1..=MAX_RUNS).contains(&self.runs) {
            return Err(Error::Runs(format!("must be in 1..={MAX_RUNS}, got {}", self.runs)));
        }
        if self.max_time.is_zero() || self.max_time > MAX_MAX_TIME {
            return Err(Error::MaxTime(format!(
                "must be above 0 and at most {} s, got {} s",
                MAX_MAX_TIME.as_secs(),
                self.max_time.as_secs_f64()
            )));
        }
        if let Some(q) = &self.query {
            check_query(q)?;
            if !self.allow_side_effects {
                refuse_side_effects(&crate::side_effects::escapes_in_sql(q), "calls")?;
            }
            return Ok(());
        }
        if self.workload == Workload::Series {
            return Ok(());
        }
        self.check_table_size(DEFAULT_BLOCK_SIZE)
    }

    /// Refuses a TEMP table whose estimated size ([`estimated_table_bytes`]
    /// for pages of `block_size`) is above `--max-table-size`, or above
    /// 2 GB when that was not given.
    pub(crate) fn check_table_size(&self, block_size: u64) -> Result<(), Error> {
        let bytes = estimated_table_bytes(self.rows, block_size);
        let how = format!(
            "--rows {}: the TEMP table would take about {} ({} rows x {HEAP_BYTES_PER_INT4_ROW} bytes \
             plus page headers, {} kB pages)",
            self.rows,
            size_text(bytes),
            self.rows,
            block_size / 1024
        );
        match self.max_table_bytes {
            Some(max) if bytes > max => Err(Error::TableSize(format!(
                "{how}, above --max-table-size {}",
                size_text(max)
            ))),
            None if bytes > DEFAULT_MAX_TABLE_BYTES => Err(Error::TableSize(format!(
                "{how}; above {} needs --max-table-size (e.g. --max-table-size {}GB)",
                size_text(DEFAULT_MAX_TABLE_BYTES),
                bytes.div_ceil(1 << 30)
            ))),
            _ => Ok(()),
        }
    }
}

/// Checks `--query` before connecting: not empty, no NUL byte (the protocol
/// cannot carry one), at most [`MAX_QUERY_BYTES`]. One statement only and
/// no writes are the server's to enforce (see `session`).
pub(crate) fn check_query(query: &str) -> Result<(), Error> {
    if query.trim().trim_matches(';').trim().is_empty() {
        return Err(Error::Query(
            "is empty; give one SELECT (or VALUES, TABLE, WITH ...) statement".into(),
        ));
    }
    if query.contains('\0') {
        return Err(Error::Query("contains a NUL byte, which PostgreSQL cannot take".into()));
    }
    if query.len() > MAX_QUERY_BYTES {
        return Err(Error::Query(format!(
            "is {} bytes, above the {MAX_QUERY_BYTES}-byte limit",
            query.len()
        )));
    }
    Ok(())
}

/// Refuses a `--query` that calls `found` (found as `how`: "calls", "its
/// plan calls"), naming each function and why ROLLBACK cannot undo it.
pub(crate) fn refuse_side_effects(found: &[crate::side_effects::Found], how: &str) -> Result<(), Error> {
    if found.is_empty() {
        return Ok(());
    }
    Err(Error::Query(format!(
        "{how} {}, which ROLLBACK cannot undo; pass --allow-side-effects to run it anyway",
        crate::side_effects::describe(found)
    )))
}

fn check_rows(rows: u64) -> Result<u64, Error> {
    if rows == 0 {
        return Err(Error::Rows("must be at least 1, got 0".into()));
    }
    if rows > MAX_ROWS {
        return Err(Error::Rows(format!("must be at most {MAX_ROWS} (1e9), got {rows}")));
    }
    Ok(rows)
}

/// The forms `--rows` and `--max-table-size` take, for error messages.
const ROWS_FORMS: &str =
    "write digits (1000000), digits grouped by single underscores (1_000_000) or a power of ten (1e6, 2.5e5)";

/// Parses `--rows`. Accepted, and nothing else: digits (`1000000`), digits
/// grouped by single underscores as in Rust (`1_000_000`; not `__1`, `1_`,
/// `1__0`), or a whole power-of-ten form `M e E` with M digits with an
/// optional fraction and E digits (`1e6`, `2.5e5`; not `1e+6`, `.5e1`). No
/// sign (`+1`), no spaces (` 1`). A negative number in these forms gets
/// "must be at least 1". The value must be in `1..=1e9`.
pub fn parse_rows(text: &str) -> Result<u64, Error> {
    let shown = escape_untrusted(text);
    let not_whole = || Error::Rows(format!("'{shown}' is not a whole number of rows; {ROWS_FORMS}"));
    let (negative, body) = text.strip_prefix('-').map_or((false, text), |rest| (true, rest));
    let value = match parse_whole(body) {
        Some(Whole::Exact(v)) => v,
        Some(Whole::TooLarge) if !negative => {
            return Err(Error::Rows(format!("must be at most {MAX_ROWS} (1e9), got {shown}")))
        }
        Some(Whole::TooLarge) => u128::MAX,
        Some(Whole::Fraction) | None => return Err(not_whole()),
    };
    if negative && value != 0 {
        return Err(Error::Rows(format!("must be at least 1, got {shown}")));
    }
    match u64::try_from(value) {
        Ok(v) if v <= MAX_ROWS => check_rows(v),
        _ => Err(Error::Rows(format!("must be at most {MAX_ROWS} (1e9), got {shown}"))),
    }
}

/// What a `--rows` body is worth.
enum Whole {
    Exact(u128),
    /// Above any row count (more than 30 digits).
    TooLarge,
    /// A power-of-ten form that is not whole (`1.5e0`).
    Fraction,
}

/// `digits(_digits)*` or `digits[.digits]e digits`, exactly; `None` for
/// any other text.
fn parse_whole(body: &str) -> Option<Whole> {
    let is_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // 30 digits are far above MAX_ROWS and well inside u128.
    let exact = |digits: &str, zeros: u32| -> Whole {
        let digits = digits.trim_start_matches('0');
        if digits.len() + zeros as usize > 30 {
            return Whole::TooLarge;
        }
        // At most 30 digits always fit a u128: only "" (all zeros) fails to parse.
        Whole::Exact(digits.parse::<u128>().unwrap_or(0) * 10u128.pow(zeros))
    };
    if let Some((mantissa, exponent)) = body.split_once(['e', 'E']) {
        if !is_digits(exponent) {
            return None;
        }
        let (int_part, frac_part) = match mantissa.split_once('.') {
            Some((i, f)) if is_digits(i) && is_digits(f) => (i, f),
            None if is_digits(mantissa) => (mantissa, ""),
            _ => return None,
        };
        // M e E = (int_part frac_part as one integer) x 10^(E - frac digits).
        let frac = frac_part.trim_end_matches('0');
        let digits = format!("{int_part}{frac}");
        let exp: u64 = exponent.parse().unwrap_or(u64::MAX);
        if digits.trim_start_matches('0').is_empty() {
            return Some(Whole::Exact(0));
        }
        if exp < frac.len() as u64 {
            return Some(Whole::Fraction);
        }
        let zeros = exp - frac.len() as u64;
        if zeros > 30 {
            return Some(Whole::TooLarge);
        }
        return Some(exact(&digits, zeros as u32));
    }
    if body.split('_').all(is_digits) {
        let digits: String = body.chars().filter(|&c| c != '_').collect();
        return Some(exact(&digits, 0));
    }
    None
}

/// Parses `--max-table-size`: a number (digits with an optional fraction)
/// and a unit, `B`, `kB`, `MB`, `GB` or `TB` (case-insensitive, `K`/`M`/`G`/`T`
/// and `KiB`.. also accepted), counted in powers of 1024 as PostgreSQL's
/// settings and `pg_size_pretty` do; a bare number is bytes.
pub fn parse_size(text: &str) -> Result<u64, Error> {
    let shown = escape_untrusted(text);
    let bad = || {
        Error::TableSize(format!(
            "--max-table-size: '{shown}' is not a size; write a number and a unit, e.g. 4GB, 500MB (B, kB, MB, GB, TB; 1 kB = 1024 B)"
        ))
    };
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let valid_number = match number.split_once('.') {
        Some((i, f)) => !i.is_empty() && !f.is_empty() && (i.bytes().chain(f.bytes())).all(|b| b.is_ascii_digit()),
        None => !number.is_empty(),
    };
    if !valid_number {
        return Err(bad());
    }
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    let bytes = value * (1u64 << shift) as f64;
    if !(bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(Error::TableSize(format!(
            "--max-table-size: '{shown}' must be at least 1 byte and below 16 EB"
        )));
    }
    Ok(bytes.round() as u64)
}

/// `bytes` in PostgreSQL's 1024-based units with one decimal: `3.4 GB`.
pub fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(text: &str) -> String {
        parse_rows(text).unwrap_err().to_string()
    }

    fn not_whole(text: &str) -> String {
        format!("--rows: '{text}' is not a whole number of rows; {ROWS_FORMS}")
    }

    #[test]
    fn accepts_whole_numbers_in_range() {
        assert_eq!(parse_rows("1").unwrap(), 1);
        assert_eq!(parse_rows("1000000").unwrap(), 1_000_000);
        assert_eq!(parse_rows("1_000_000").unwrap(), 1_000_000);
        assert_eq!(parse_rows("1_0").unwrap(), 10);
        assert_eq!(parse_rows("1e6").unwrap(), 1_000_000);
        assert_eq!(parse_rows("1E6").unwrap(), 1_000_000);
        assert_eq!(parse_rows("2.5e5").unwrap(), 250_000);
        assert_eq!(parse_rows("1.50e1").unwrap(), 15);
        assert_eq!(parse_rows("1e9").unwrap(), MAX_ROWS);
        assert_eq!(parse_rows("0001").unwrap(), 1);
    }

    #[test]
    fn odd_forms_are_rejected_with_one_message() {
        for text in [
            "__1",
            "_1",
            "1_",
            "1__000",
            "+1",
            " 1",
            "1 ",
            " 42 ",
            "1e+6",
            "1e-6",
            ".5e1",
            "5.e1",
            "1.5",
            "abc",
            "",
            "1e",
            "e6",
            "0x10",
            "1,000",
            "inf",
            "NaN",
            "1_e6",
            "--1",
            "1\u{1b}[2J",
        ] {
            assert_eq!(msg(text), not_whole(&escape_untrusted(text)), "{text:?}");
        }
        // A control character is shown escaped.
        assert!(msg("1\u{1b}").contains("'1\\x1b'"), "{}", msg("1\u{1b}"));
    }

    #[test]
    fn rejects_out_of_range_naming_the_option() {
        assert_eq!(msg("0"), "--rows: must be at least 1, got 0");
        assert_eq!(msg("0e5"), "--rows: must be at least 1, got 0");
        assert_eq!(msg("0_000"), "--rows: must be at least 1, got 0");
        assert_eq!(msg("-5"), "--rows: must be at least 1, got -5");
        assert_eq!(msg("-1_000"), "--rows: must be at least 1, got -1_000");
        assert_eq!(msg("-1e99"), "--rows: must be at least 1, got -1e99");
        assert_eq!(msg("2e9"), "--rows: must be at most 1000000000 (1e9), got 2e9");
        assert_eq!(msg("1e400"), "--rows: must be at most 1000000000 (1e9), got 1e400");
        assert_eq!(
            msg("1000000001"),
            "--rows: must be at most 1000000000 (1e9), got 1000000001"
        );
        assert_eq!(
            msg("99999999999999999999999999999999999999999"),
            "--rows: must be at most 1000000000 (1e9), got 99999999999999999999999999999999999999999"
        );
        assert_eq!(msg("1.5e0"), not_whole("1.5e0"));
    }

    #[test]
    fn validate_checks_runs() {
        let mut o = Options::new(None);
        assert!(o.validate().is_ok());
        o.runs = 0;
        assert_eq!(
            o.validate().unwrap_err().to_string(),
            "--runs: must be in 1..=1000, got 0"
        );
    }

    #[test]
    fn query_is_checked() {
        for bad in ["", "  ", ";", "SELECT 1\0"] {
            let e = check_query(bad).unwrap_err().to_string();
            assert!(e.starts_with("--query: "), "{bad:?}: {e}");
        }
        let mut o = Options::new(None);
        o.query = Some("SELECT 1".into());
        o.rows = 1_000_000_000; // no table, so no size check
        assert!(o.validate().is_ok());
    }

    #[test]
    fn sizes_parse_in_1024_based_units() {
        assert_eq!(parse_size("4GB").unwrap(), 4 << 30);
        assert_eq!(parse_size("4g").unwrap(), 4 << 30);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("500MB").unwrap(), 500 << 20);
        assert_eq!(parse_size("64kB").unwrap(), 64 << 10);
        assert_eq!(parse_size("1TB").unwrap(), 1 << 40);
        assert_eq!(parse_size("123").unwrap(), 123);
        for bad in ["", "GB", "4 GB", "-1GB", "4XB", "1.GB", ".5GB", "4GB ", "0"] {
            let e = parse_size(bad).unwrap_err().to_string();
            assert!(e.starts_with("--max-table-size: "), "{bad:?}: {e}");
        }
        assert_eq!(size_text(2 << 30), "2.0 GB");
        assert_eq!(size_text(1000), "1000 bytes");
    }

    #[test]
    fn tables_above_2_gb_need_max_table_size() {
        // 8 kB pages hold 226 rows; 2 GB is 262,144 such pages.
        let mut o = Options::new(None);
        o.rows = 262_144 * 226;
        assert!(o.validate().is_ok());
        o.rows += 1;
        assert!(o.validate().is_err());
        o.rows = 60_000_000;
        let e = o.validate().unwrap_err().to_string();
        assert_eq!(
            e,
            "--rows 60000000: the TEMP table would take about 2.0 GB (60000000 rows x 36 bytes plus page \
             headers, 8 kB pages); above 2.0 GB needs --max-table-size (e.g. --max-table-size 3GB)"
        );
        o.max_table_bytes = Some(3 << 30);
        assert!(o.validate().is_ok());
        o.rows = 1_000_000;
        o.max_table_bytes = Some(1 << 20);
        let e = o.validate().unwrap_err().to_string();
        assert!(e.ends_with("above --max-table-size 1.0 MB"), "{e}");
        assert!(
            e.starts_with("--rows 1000000: the TEMP table would take about 34.6 MB"),
            "{e}"
        );
    }
}

//! What to measure: the table size, the number of runs, and their limits,
//! validated before anything connects to a server.

use crate::error::Error;

/// Default table size: large enough that the per-row cost dominates the
/// fixed per-query cost (planning, executor start-up) by ~1000x.
pub const DEFAULT_ROWS: u64 = 1_000_000;
/// Largest table: 1e9 rows of int4 is ~36 GB of TEMP table.
pub const MAX_ROWS: u64 = 1_000_000_000;
/// Default EXPLAIN runs per timing mode.
pub const DEFAULT_RUNS: u32 = 5;
/// Most runs per timing mode.
pub const MAX_RUNS: u32 = 1000;
/// Untimed EXPLAIN runs per mode before the measured ones: the first scan sets
/// hint bits and fills the local buffers.
pub const WARMUP_RUNS: u32 = 1;
/// How long to run pg_test_timing's loop on each of this machine's clocks for
/// the prediction (the loop's average settles to ~0.1 ns within this).
pub const CLOCK_MEASURE_NS: u64 = 500_000_000;

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
}

impl Options {
    /// Options with the defaults for everything but the connection.
    pub fn new(dsn: Option<String>) -> Options {
        Options {
            dsn,
            rows: DEFAULT_ROWS,
            runs: DEFAULT_RUNS,
            clock_measure_ns: CLOCK_MEASURE_NS,
        }
    }

    /// Checks the ranges (for options built without the parsers).
    pub fn validate(&self) -> Result<(), Error> {
        check_rows(self.rows)?;
        if !(1..=MAX_RUNS).contains(&self.runs) {
            return Err(Error::Runs(format!("must be in 1..={MAX_RUNS}, got {}", self.runs)));
        }
        Ok(())
    }
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

/// Parses `--rows`: a whole number (`1000000`, `1_000_000`) or a power-of-ten
/// form that is whole (`1e6`, `2.5e5`), in `1..=1e9`.
pub fn parse_rows(text: &str) -> Result<u64, Error> {
    let t = text.trim();
    let not_whole = || Error::Rows(format!("'{text}' is not a whole number of rows"));
    if let Some(rest) = t.strip_prefix('-') {
        if !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit() || "._eE+".contains(c)) {
            return Err(Error::Rows(format!("must be at least 1, got {t}")));
        }
        return Err(not_whole());
    }
    let plain: String = t.chars().filter(|&c| c != '_').collect();
    if !plain.is_empty() && plain.chars().all(|c| c.is_ascii_digit()) {
        // Longer than u64: certainly above the limit.
        return match plain.parse::<u64>() {
            Ok(v) => check_rows(v),
            Err(_) => Err(Error::Rows(format!("must be at most {MAX_ROWS} (1e9), got {t}"))),
        };
    }
    if plain.contains(['e', 'E']) && plain.chars().all(|c| c.is_ascii_digit() || ".eE+".contains(c)) {
        let v: f64 = plain.parse().map_err(|_| not_whole())?;
        if !v.is_finite() || v.fract() != 0.0 {
            return Err(not_whole());
        }
        if v > MAX_ROWS as f64 {
            return Err(Error::Rows(format!("must be at most {MAX_ROWS} (1e9), got {t}")));
        }
        return check_rows(v as u64);
    }
    Err(not_whole())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(text: &str) -> String {
        parse_rows(text).unwrap_err().to_string()
    }

    #[test]
    fn accepts_whole_numbers_in_range() {
        assert_eq!(parse_rows("1").unwrap(), 1);
        assert_eq!(parse_rows("1000000").unwrap(), 1_000_000);
        assert_eq!(parse_rows("1_000_000").unwrap(), 1_000_000);
        assert_eq!(parse_rows("1e6").unwrap(), 1_000_000);
        assert_eq!(parse_rows("2.5e5").unwrap(), 250_000);
        assert_eq!(parse_rows("1e9").unwrap(), MAX_ROWS);
        assert_eq!(parse_rows(" 42 ").unwrap(), 42);
    }

    #[test]
    fn rejects_out_of_range_and_junk_naming_the_option() {
        assert_eq!(msg("0"), "--rows: must be at least 1, got 0");
        assert_eq!(msg("-5"), "--rows: must be at least 1, got -5");
        assert_eq!(msg("2e9"), "--rows: must be at most 1000000000 (1e9), got 2e9");
        assert_eq!(
            msg("1000000001"),
            "--rows: must be at most 1000000000 (1e9), got 1000000001"
        );
        assert_eq!(
            msg("99999999999999999999999"),
            "--rows: must be at most 1000000000 (1e9), got 99999999999999999999999"
        );
        assert_eq!(msg("abc"), "--rows: 'abc' is not a whole number of rows");
        assert_eq!(msg("1.5"), "--rows: '1.5' is not a whole number of rows");
        assert_eq!(msg("1.5e0"), "--rows: '1.5e0' is not a whole number of rows");
        assert_eq!(msg(""), "--rows: '' is not a whole number of rows");
        assert_eq!(msg("1e400"), "--rows: '1e400' is not a whole number of rows");
        assert_eq!(msg("0e5"), "--rows: must be at least 1, got 0");
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
}

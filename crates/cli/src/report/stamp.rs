//! Who made a report, on which host and when: the four fields every
//! command's JSON starts with (`host`, `timestamp`, `tool`,
//! `schema_version`) and the first line of every text report.
//!
//! Commands stamp a report with [`ReportStamp::now`]; tests build one with
//! [`ReportStamp::at`] (a fixed host and time) so snapshots do not change.
//! A report that carries no stamp itself is rendered as [`Stamped`].

use serde::Serialize;
use std::time::SystemTime;

/// See the module documentation.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ReportStamp {
    /// This machine's host name (gethostname(2)), as the kernel gives it:
    /// untrusted text, escaped where it is printed.
    pub host: String,
    /// When the report was made, RFC 3339 in UTC, whole seconds
    /// (`2026-11-23T19:19:07Z`).
    #[schemars(regex(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"))]
    pub timestamp: String,
    /// `clockscope <version>`.
    #[schemars(regex(pattern = r"^clockscope "))]
    pub tool: String,
    /// Version of the command's JSON layout; bumped on incompatible changes.
    pub schema_version: u32,
}

/// A report with its stamp beside it: the model every renderer of `clocks`,
/// `tsc`, `cross-cpu` and `explain` takes. Its JSON is the stamp's four
/// fields, then the report's own.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Stamped<'a, T> {
    #[serde(flatten)]
    pub stamp: &'a ReportStamp,
    #[serde(flatten)]
    pub report: &'a T,
}

impl ReportStamp {
    /// This host, now.
    pub fn now(schema_version: u32) -> Self {
        Self::at(&hostname(), SystemTime::now(), schema_version)
    }

    /// A stamp for `host` at `when` (tests: a fixed time).
    pub fn at(host: &str, when: SystemTime, schema_version: u32) -> Self {
        ReportStamp {
            host: host.to_string(),
            timestamp: rfc3339_utc(when),
            tool: format!("clockscope {}", env!("CARGO_PKG_VERSION")),
            schema_version,
        }
    }

    /// `report` with this stamp beside it.
    pub fn on<'a, T>(&'a self, report: &'a T) -> Stamped<'a, T> {
        Stamped { stamp: self, report }
    }
}

/// The host name (gethostname(2)); `unknown` when it cannot be read.
/// Not UTF-8 bytes are replaced (U+FFFD): the name is for reading.
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".to_string())
}

/// `when` in RFC 3339, UTC, whole seconds: `2026-11-23T19:19:07Z`.
pub fn rfc3339_utc(when: SystemTime) -> String {
    let t = time::OffsetDateTime::from(when);
    let t = t.replace_nanosecond(0).unwrap_or(t);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "unknown".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn timestamps_are_rfc3339_utc_in_whole_seconds() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_461_547_999);
        assert_eq!(rfc3339_utc(t), "2026-11-23T19:19:07Z");
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let s = ReportStamp::at("db1", t, 3);
        assert_eq!(s.tool, format!("clockscope {}", env!("CARGO_PKG_VERSION")));
        assert_eq!((s.host.as_str(), s.schema_version), ("db1", 3));
    }

    #[test]
    fn the_host_name_is_the_kernels() {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(hostname(), kernel.trim_end_matches('\n'));
    }
}

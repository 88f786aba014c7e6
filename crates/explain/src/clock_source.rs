//! The server's clock source by name: what a `SHOW timing_clock_source`
//! value means, shared by the measurement loop, the report and the settings
//! advice (it imports nothing of this crate).

/// Whether `SHOW timing_clock_source` (`tsc`, `auto (tsc)`, ...) means `want`.
pub(crate) fn current_is(current: &str, want: &str) -> bool {
    current == want || current.contains(&format!("({want})"))
}

//! What several commands gather alike, below [`crate::commands`] and above
//! [`crate::model`].
//!
//! - [`environment`]: the CPU counter's setup (frequency, trust, PostgreSQL 19's
//!   auto choice), check's environment block and the NTP state, from the
//!   library's evidence readers.

pub mod environment;

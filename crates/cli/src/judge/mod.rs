//! Judging: what the measurements mean, as pure functions of a model and the
//! environment's facts (tested with scripted inputs), above [`crate::model`]
//! and below [`crate::commands`].
//!
//! - [`check`]: `check`'s rules, the EXPLAIN ANALYZE prediction and the advice
//!   (also `sweep`'s per-clocksource verdicts).
//! - [`sweep`]: `sweep`'s rounds combined, their intervals, and the recommendation.

pub mod check;
pub mod sweep;

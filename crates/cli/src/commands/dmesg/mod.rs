//! `clockscope dmesg`: `run.rs` reads the log, [`model`] holds the result; its formats: [`text`] (the timeline, the summary, what it
//! means for PostgreSQL and what to do); its JSON is [`crate::report::json`]
//! of the stamped [`crate::commands::dmesg::model::DmesgReport`].

pub mod model;
mod run;
pub mod text;
mod words;

pub use run::*;

//! `clockscope explain`: EXPLAIN ANALYZE's timing overhead measured on a real server (the
//! `clockscope_explain` library keeps the model and its arithmetic); `run.rs` runs it, [`text`] prints it
//! (the one screen and `-v`: one writer, two levels of detail). JSON goes through [`crate::report::json`].

#![cfg(feature = "explain")]

mod run;
pub mod text;
mod words;

pub use run::*;

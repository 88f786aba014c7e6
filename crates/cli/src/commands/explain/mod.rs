//! `clockscope explain`: EXPLAIN ANALYZE's timing overhead measured on a real server (the
//! `clockscope_explain` library keeps the model and its arithmetic); `run.rs` runs it, [`summary`] (the default)
//! and [`text`] (`-v`) print it; `render.rs` joins them to the report header.

#![cfg(feature = "explain")]

mod render;
mod run;
pub mod summary;
pub mod text;
mod words;

pub use render::*;
pub use run::*;

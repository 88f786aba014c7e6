//! clockscope-benches: a crate of benchmarks only, kept apart from the
//! `clockscope` library so its dev-dependencies (criterion, quanta,
//! minstant) are built only for `cargo bench`.
//!
//! `benches/clocks.rs` compares `clockscope::instant` with
//! `std::time::Instant`, `quanta::Instant`, `minstant::Instant` and a bare
//! counter read; `bench/clocks.sh` runs it and prints the table
//! (`bench/README.md`). This library target is empty.

#![forbid(unsafe_code)]

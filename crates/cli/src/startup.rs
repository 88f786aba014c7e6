//! Startup latency: how long after `main` the first measurement begins.
//! With `CLOCKSCOPE_TRACE_STARTUP=1` in the environment, `clockscope` prints
//! it on stderr, so the "first measurement within 50 ms" goal can be checked
//! on any machine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

static START: OnceLock<Instant> = OnceLock::new();
static REPORTED: AtomicBool = AtomicBool::new(false);

/// Records the start of `main`.
pub fn mark() {
    START.get_or_init(Instant::now);
}

/// Called just before a measuring loop starts: prints the latency once, when asked to.
pub fn first_measurement(clock: &str) {
    if REPORTED.swap(true, Ordering::Relaxed) || std::env::var_os("CLOCKSCOPE_TRACE_STARTUP").is_none() {
        return;
    }
    if let Some(start) = START.get() {
        eprintln!(
            "clockscope: first measurement ({clock}) started {:.3} ms after main",
            start.elapsed().as_secs_f64() * 1e3
        );
    }
}

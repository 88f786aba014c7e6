//! Whether stdout was closed when the process started, recorded before Rust's
//! runtime hides it.
//!
//! Before `main`, Rust's runtime opens `/dev/null` read-write on a closed
//! descriptor 0, 1 or 2 (so that a file opened later never becomes one of
//! them). After that, a closed stdout (`clockscope >&-`) cannot be told from
//! `/dev/null` opened read-write, which is what Python's `subprocess.DEVNULL`
//! and many supervisors give, and which is a perfectly usable stdout. So a
//! function placed in the ELF `.init_array` (run by the C library before the
//! program's `main`, and so before Rust's runtime setup) looks at descriptor
//! 1 and records what it saw.
//!
//! Hand-written rather than with the `ctor` crate: it is one function and one
//! static, and `ctor`'s generated code needs the same `unsafe` allowance; on
//! targets other than Linux nothing is recorded and stdout counts as open.

use std::sync::atomic::{AtomicU8, Ordering};

/// Nothing recorded (not Linux, or the constructor did not run).
const UNKNOWN: u8 = 0;
/// Descriptor 1 was closed (`>&-`).
const CLOSED: u8 = 2;

static STDOUT_AT_START: AtomicU8 = AtomicU8::new(UNKNOWN);

/// The constructor, in the array the C library (glibc, musl) runs before `main`.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[used]
#[link_section = ".init_array"]
static RECORD_STDOUT: extern "C" fn() = record_stdout;

#[cfg(any(target_os = "linux", target_os = "android"))]
extern "C" fn record_stdout() {
    // SAFETY: F_GETFD only reads the descriptor's flags; no memory is passed,
    // and an invalid descriptor is an EBADF result, not undefined behaviour.
    let flags = unsafe { libc::fcntl(1, libc::F_GETFD) };
    const OPEN: u8 = 1;
    let seen = if flags == -1 { CLOSED } else { OPEN };
    STDOUT_AT_START.store(seen, Ordering::Relaxed);
}

/// Whether descriptor 1 was closed when the process started (`>&-`). False
/// when open (to anything, `/dev/null` included) or when not known.
pub fn stdout_was_closed() -> bool {
    STDOUT_AT_START.load(Ordering::Relaxed) == CLOSED
}

/// Whether the check ran (Linux: the constructor was linked in and ran).
pub fn recorded() -> bool {
    STDOUT_AT_START.load(Ordering::Relaxed) != UNKNOWN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn the_constructor_ran_before_the_tests() {
        assert!(recorded(), "the .init_array constructor did not run");
        // The test harness runs with stdout open (a pipe or a terminal).
        assert!(!stdout_was_closed());
    }
}

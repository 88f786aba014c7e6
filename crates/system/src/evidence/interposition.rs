//! Something between clockscope and the kernel that changes time: an
//! LD_PRELOAD time library (libfaketime, datefudge) or a broken vDSO.
//!
//! The sign is a gross disagreement between the counter's calibrated rate
//! and the frequency the kernel (or CPUID) gives it: more than
//! [`GROSS_DISAGREEMENT_PPM`]. When the kernel's clocksource is the counter
//! itself (`tsc`, `arch_sys_counter`), CLOCK_MONOTONIC_RAW is that counter
//! scaled by the kernel, so the calibration checks the kernel's arithmetic
//! and cannot honestly be off by more than its own uncertainty: a gross
//! disagreement then means the clock_gettime clockscope called did not
//! return the kernel's time. Under `faketime -f '+0 x10'` the calibration is
//! -900000 ppm (the library runs every clock 10 times fast). Where the
//! clocksource is another clock the comparison is independent evidence, and
//! a gross disagreement means either the frequency source is wrong or time
//! is changed on its way to clockscope.
//!
//! `time_library_hints` adds supporting evidence when it is cheap to find:
//! `LD_PRELOAD` in the environment and time libraries mapped into this
//! process (`/proc/self/maps`, read through [`crate::input`]). Their
//! presence alone decides nothing (libfaketime at `+0` changes no rate).

use crate::escape::escape_untrusted;
use std::path::Path;

/// A calibration this far from the frequency in use is not a measuring
/// error: 1000 ppm, twice the 500 ppm the kernel's timekeeping corrects at
/// most (`MAXFREQ`) and the largest uncertainty a converged calibration
/// may have ([`clockscope::Calibration::MAX_UNCERTAINTY_PPM`]).
pub const GROSS_DISAGREEMENT_PPM: f64 = 1000.0;

/// Library file names that change the time a process reads, matched as
/// substrings of a mapped shared object's name (`*.so*`; libfaketime's
/// `/dev/shm/faketime_shm_*` segments are not libraries).
pub(crate) const TIME_LIBRARIES: [&str; 2] = ["faketime", "datefudge"];

/// The words every interposition explanation carries (reports are searched for them).
pub const CHANGES_TIME: &str = "something between clockscope and the kernel changes time";

/// What a gross disagreement means, as one clause. `kernel_clock_is_counter`:
/// the kernel's clocksource is the counter itself, so the calibration is not
/// independent evidence and only interposition explains it.
pub(crate) fn explanation(kernel_clock_is_counter: bool) -> String {
    let what = "(an LD_PRELOAD time library such as libfaketime, a broken vDSO): the counter is not trusted";
    if kernel_clock_is_counter {
        format!("the kernel's clock is this counter scaled, so {CHANGES_TIME} {what}")
    } else {
        format!("either that frequency is wrong or {CHANGES_TIME} {what}")
    }
}

/// `; supporting evidence: LD_PRELOAD=...; mapped: .../libfaketime.so.1`,
/// or `""` without hints.
pub(crate) fn hints_text(hints: &[String]) -> String {
    if hints.is_empty() {
        String::new()
    } else {
        format!("; supporting evidence: {}", hints.join("; "))
    }
}

/// This process's hints of a time library: `LD_PRELOAD=<value>` when set,
/// and `mapped: <path>` for each mapped file whose name contains one of
/// [`TIME_LIBRARIES`] (from `/proc/self/maps`; none where it cannot be read).
/// Escaped: both are text from outside.
pub(crate) fn time_library_hints() -> Vec<String> {
    let preload = std::env::var_os("LD_PRELOAD").map(|v| v.to_string_lossy().into_owned());
    let maps = crate::input::read_text(Path::new("/proc/self/maps"), &crate::input::PROC_MAPS).ok();
    hints_from(preload.as_deref(), maps.as_deref())
}

/// [`time_library_hints`] from the given `LD_PRELOAD` value and maps text.
pub(crate) fn hints_from(preload: Option<&str>, maps: Option<&str>) -> Vec<String> {
    let mut hints = Vec::new();
    if let Some(p) = preload.map(str::trim).filter(|p| !p.is_empty()) {
        hints.push(format!("LD_PRELOAD={}", escape_untrusted(p)));
    }
    let mut mapped: Vec<&str> = maps
        .unwrap_or("")
        .lines()
        // address perms offset dev inode pathname: the path is the sixth field.
        .filter_map(|line| line.split_whitespace().nth(5))
        .filter(|path| {
            let name = path.rsplit('/').next().unwrap_or(path);
            name.contains(".so") && TIME_LIBRARIES.iter().any(|lib| name.contains(lib))
        })
        .collect();
    mapped.sort_unstable();
    mapped.dedup();
    hints.extend(mapped.into_iter().map(|p| format!("mapped: {}", escape_untrusted(p))));
    hints
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_the_preload_and_the_mapped_time_libraries() {
        let maps = "\
55d0c0a00000-55d0c0a40000 r--p 00000000 fe:01 1234 /usr/bin/clockscope
7f0000000000-7f0000004000 r--p 00000000 fe:01 99 /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
7f0000004000-7f0000009000 r-xp 00004000 fe:01 99 /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
7f000000a000-7f000000b000 rw-s 00000000 00:19 7 /dev/shm/faketime_shm_18865
7f0000010000-7f0000011000 rw-p 00000000 00:00 0
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]
";
        assert_eq!(
            hints_from(Some("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"), Some(maps)),
            [
                "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                "mapped: /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
            ]
        );
        // A faketime directory alone is not a library's name; a hostile value is escaped.
        let maps = "7f00-7f01 r--p 0 fe:01 9 /opt/faketime/libc.so.6\n";
        assert_eq!(hints_from(Some(" \x1b[31m "), Some(maps)), ["LD_PRELOAD=\\x1b[31m"]);
        assert!(hints_from(None, None).is_empty());
        assert_eq!(hints_text(&[]), "");
        assert_eq!(
            hints_text(&["LD_PRELOAD=x".to_string()]),
            "; supporting evidence: LD_PRELOAD=x"
        );
    }

    #[test]
    fn this_test_process_reads_its_own_maps() {
        // The real reader runs and finds no time library in a plain test run
        // (under faketime it would find one, which is the point).
        let hints = time_library_hints();
        if std::env::var_os("LD_PRELOAD").is_none() {
            assert!(hints.iter().all(|h| h.starts_with("mapped: ")), "{hints:?}");
        }
    }
}

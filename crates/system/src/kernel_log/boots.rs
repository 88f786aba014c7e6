//! A log of several boots (a `kern.log`, `journalctl -k` without `-b`, pastes
//! of two `dmesg`s): each boot starts at a `Linux version` line, at the
//! journal's `-- Boot ID --` / `-- Reboot --` separator, or where the
//! monotonic time starts again near 0. The summary judges the last boot (the
//! machine as it runs now) and says what each earlier one showed. A boot
//! that shows no hypervisor line takes the one an earlier boot of the same
//! log showed (cited with that boot's line).

use super::meaning::Machine;
use super::paste::{self, LogLine};
use super::summary::{Builder, EarlierBoot, Summary, MAX_EARLIER_BOOTS};

/// Reasons listed per earlier boot.
const REASONS_PER_BOOT: usize = 3;

/// Interprets a whole log (any paste style). `machine` overrides what the log
/// shows (this machine's cpuinfo); `None` lets the log decide. Several boots
/// are told apart: the summary is the last boot's.
pub fn summarise(text: &str, machine: Option<Machine>) -> Summary {
    summarise_boots(paste::lines(text), machine)
}

/// Whether `line` looks like kernel output: a kernel prefix (a time, a
/// level, a kmsg record), or mostly printable text (under a quarter of
/// control characters and bytes that were not UTF-8) with a word in it.
/// Random bytes and binary files have none.
fn looks_like_kernel(line: &LogLine) -> bool {
    if !line.time.is_empty() || line.level.is_some() || line.kmsg_record {
        return true;
    }
    let m = &line.message;
    let bad = m
        .chars()
        .filter(|&c| c == char::REPLACEMENT_CHARACTER || (c.is_control() && c != '\t'))
        .count();
    bad * 4 < m.chars().count() && m.split(|c: char| !c.is_ascii_alphabetic()).any(|w| w.len() >= 3)
}

/// Whether `line` starts a new boot, after `last_us` (the monotonic time of
/// the last line with one in the current boot).
fn starts_boot(line: &LogLine, last_us: Option<u64>, version_seen: bool) -> bool {
    let msg = line.message.trim_start();
    if msg.starts_with("-- Boot ") || msg.starts_with("-- Reboot --") {
        return true;
    }
    if msg.starts_with("Linux version ") {
        // Not a boot of its own when it follows this boot's first lines at
        // time 0 (a grep that put it second).
        return version_seen || last_us.is_none_or(|t| t > 0);
    }
    match (last_us, line.time.monotonic_us) {
        (Some(prev), Some(t)) => t <= 1_000_000 && t.saturating_add(1_000_000) <= prev,
        _ => false,
    }
}

impl EarlierBoot {
    fn of(s: &Summary, kernel: Option<String>) -> EarlierBoot {
        EarlierBoot {
            first_line: s.boot_first_line,
            lines: s.lines,
            kernel,
            tsc_marked_unstable: s.tsc_marked_unstable,
            unstable_reasons: s.unstable_reasons.iter().take(REASONS_PER_BOOT).cloned().collect(),
            final_clocksource: s.final_clocksource.clone(),
            watchdog: s.watchdog.clone(),
            act: s.act,
        }
    }
}

/// Summarises `lines` boot by boot: the last boot's summary, with the
/// earlier boots and the log's total of kernel lines.
pub(crate) fn summarise_boots(lines: impl Iterator<Item = LogLine>, machine: Option<Machine>) -> Summary {
    let mut b = Builder::default();
    let mut earlier = Vec::new();
    let (mut boots, mut total, mut kernel_like) = (0u64, 0u64, 0u64);
    let mut last_us: Option<u64> = None;
    let mut kernel: Option<String> = None;
    let mut hypervisor = None;
    for line in lines {
        if b.lines() > 0 && starts_boot(&line, last_us, kernel.is_some()) {
            let done = std::mem::take(&mut b);
            hypervisor = done.hypervisor_shown().or(hypervisor);
            let s = done.finish(machine);
            boots += 1;
            if earlier.len() < MAX_EARLIER_BOOTS {
                earlier.push(EarlierBoot::of(&s, kernel.take()));
            }
            kernel = None;
            last_us = None;
        }
        let msg = line.message.trim_start();
        if let Some(v) = msg.strip_prefix("Linux version ") {
            kernel = Some(v.to_string());
        }
        last_us = line.time.monotonic_us.or(last_us);
        total += 1;
        kernel_like += u64::from(looks_like_kernel(&line));
        b.add(line);
    }
    if let Some((h, cited, strength)) = hypervisor {
        b.inherit_hypervisor(h, cited, strength);
    }
    let mut s = b.finish(machine);
    s.boots = if total == 0 { 0 } else { boots + 1 };
    s.lines = total;
    s.kernel_like_lines = kernel_like;
    s.earlier_boots = earlier;
    s
}

#[cfg(test)]
mod tests {
    use super::summarise;

    #[test]
    fn the_last_boot_is_judged_and_the_earlier_ones_reported() {
        let log = "\
[    0.000000] Linux version 5.15.0-1 (gcc) #1 SMP
[    0.000000] Hypervisor detected: KVM
[    1.000000] clocksource: Switched to clocksource tsc
[ 9000.000000] clocksource: timekeeping watchdog on CPU1: Marking clocksource 'tsc' as unstable because the skew is too large:
[ 9000.000100] tsc: Marking TSC unstable due to clocksource watchdog
[ 9000.000200] clocksource: Switched to clocksource hpet
[    0.000000] Linux version 5.15.0-2 (gcc) #1 SMP
[    1.000000] clocksource: Switched to clocksource tsc
";
        let s = summarise(log, None);
        assert_eq!((s.boots, s.lines, s.boot_first_line), (2, 8, 7));
        assert!(!s.tsc_marked_unstable && !s.act, "{s:?}");
        assert_eq!(s.final_clocksource.as_deref(), Some("tsc"));
        assert_eq!(s.earlier_boots.len(), 1);
        let e = &s.earlier_boots[0];
        assert!(e.tsc_marked_unstable && e.act);
        assert_eq!(e.final_clocksource.as_deref(), Some("hpet"));
        assert_eq!(e.kernel.as_deref(), Some("5.15.0-1 (gcc) #1 SMP"));
        // The hypervisor line of the first boot, cited.
        assert_eq!(s.hypervisor.as_deref(), Some("kvm"));
        assert_eq!(s.cited.hypervisor.as_ref().map(|c| c.line), Some(2));
    }

    #[test]
    fn monotonic_time_starting_again_is_a_new_boot_without_a_version_line() {
        let log = "\
[ 5000.000000] clocksource: Switched to clocksource hpet
[    0.000000] tsc: Detected 2400.000 MHz processor
[    2.000000] clocksource: Switched to clocksource tsc
";
        let s = summarise(log, None);
        assert_eq!(s.boots, 2);
        assert_eq!(s.final_clocksource.as_deref(), Some("tsc"));
        // Lines a few microseconds out of order are one boot.
        let s = summarise(
            "[    2.000010] clocksource: Switched to clocksource tsc\n[    2.000001] tsc: Refined TSC clocksource calibration: 2400.000 MHz\n",
            None,
        );
        assert_eq!(s.boots, 1);
    }

    #[test]
    fn the_journals_boot_separator_starts_a_boot() {
        let log = "\
-- Boot 1a2b3c --
Nov 24 20:00:01 db1 kernel: clocksource: Switched to clocksource hpet
-- Boot 4d5e6f --
Nov 25 08:00:01 db1 kernel: clocksource: Switched to clocksource tsc
";
        let s = summarise(log, None);
        assert_eq!((s.boots, s.boot_first_line), (2, 3));
        assert_eq!(s.final_clocksource.as_deref(), Some("tsc"));
        assert_eq!(s.earlier_boots[0].final_clocksource.as_deref(), Some("hpet"));
    }
}

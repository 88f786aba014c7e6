//! The kernel-log parser on real-looking lines in every form the log reaches
//! us: kmsg records, dmesg text (with and without caller ids), syslog
//! priorities and journal lines.

use clockscope_system::linux::kmsg::parse_mhz_as_khz;
use clockscope_system::linux::{KernelKhzSource, KernelLog};

#[test]
fn detected_and_refined_frequencies_in_every_line_form() {
    for line in [
        "6,16,58,-;tsc: Detected 2599.998 MHz processor",
        "6,16,58,-,caller=T0;tsc: Detected 2599.998 MHz processor",
        "[    0.000058] tsc: Detected 2599.998 MHz processor",
        "[    0.000058][    T0] tsc: Detected 2599.998 MHz processor",
        "<6>[    0.000058] tsc: Detected 2599.998 MHz processor",
        "Jan 16 17:13:19 db1 kernel: tsc: Detected 2599.998 MHz processor",
        "tsc: Detected 2599.998 MHz processor",
    ] {
        let log = KernelLog::parse(line);
        assert_eq!(log.detected_processor_khz, Some(2_599_998), "{line}");
        assert_eq!(log.records, 1);
        assert_eq!(log.lines, ["tsc: Detected 2599.998 MHz processor"], "{line}");
    }
    let log = KernelLog::parse(
        "[    0.000000] tsc: Detected 2600.000 MHz processor\n\
         [    0.000000] tsc: Detected 2599.996 MHz TSC\n\
         [    1.912000] tsc: Refined TSC clocksource calibration: 2599.991 MHz\n",
    );
    assert_eq!(log.detected_processor_khz, Some(2_600_000));
    assert_eq!(log.detected_tsc_khz, Some(2_599_996));
    assert_eq!(log.refined_khz, Some(2_599_991));
    assert_eq!(log.kernel_tsc_khz(), Some((2_599_991, KernelKhzSource::Refined)));
    assert!(KernelKhzSource::Refined
        .label()
        .contains("Refined TSC clocksource calibration"));
}

#[test]
fn malformed_frequencies_are_not_taken() {
    let log = KernelLog::parse(
        "tsc: Detected 2599.9981 MHz processor\n\
         tsc: Detected MHz processor\n\
         tsc: Detected 2,599.998 MHz processor\n\
         tsc: Refined TSC clocksource calibration: fast MHz\n",
    );
    assert_eq!(log.kernel_tsc_khz(), None);
    assert_eq!(log.records, 4);
    // They are still TSC lines a report may show.
    assert_eq!(log.lines.len(), 4);
}

#[test]
fn instability_and_warp() {
    let log = KernelLog::parse(
        "4,900,5000000,-;TSC synchronization [CPU#0 -> CPU#3]:\n\
         4,901,5000001,-;Measured 1290 cycles TSC warp between CPUs, turning off TSC clock.\n\
         6,902,5000002,-;tsc: Marking TSC unstable due to check_tsc_sync_source failed\n\
         4,903,5000100,-;clocksource: timekeeping watchdog on CPU1: Marking clocksource 'tsc-early' as unstable because the skew is too large:\n\
         6,904,5000200,-;clocksource: Switched to clocksource hpet\n",
    );
    assert_eq!(log.first_sequence, Some(900), "early records were overwritten");
    assert_eq!(log.tsc_warp_cycles, [1290]);
    assert_eq!(log.tsc_unstable_reasons, ["check_tsc_sync_source failed"]);
    assert_eq!(log.clocksources_marked_unstable, ["tsc-early"]);
    assert_eq!(log.clocksource_switches, ["hpet"]);
    assert!(log.tsc_marked_unstable());
    assert_eq!(log.kernel_tsc_khz(), None);

    let stable = KernelLog::parse("6,1,2,-;clocksource: Marking clocksource 'hpet' as unstable\n");
    assert!(!stable.tsc_marked_unstable());
}

#[test]
fn unrelated_lines_are_counted_not_kept() {
    let log = KernelLog::parse(
        "6,0,0,-;Linux version 6.8.0\n\
         6,1,1,-;Command line: BOOT_IMAGE=/vmlinuz\n\
         \n\
         6,2,2,-;x86/fpu: Supporting XSAVE feature 0x001: 'x87 floating point registers'\n",
    );
    assert_eq!(log.records, 3);
    assert!(log.lines.is_empty());
    assert_eq!(
        log,
        KernelLog {
            records: 3,
            first_sequence: Some(0),
            ..KernelLog::default()
        }
    );
}

#[test]
fn mhz_edge_cases() {
    assert_eq!(parse_mhz_as_khz(" 3600.000 "), Some(3_600_000));
    assert_eq!(parse_mhz_as_khz("18446744073709551.615"), Some(u64::MAX));
    assert_eq!(parse_mhz_as_khz("18446744073709552.000"), None, "overflow is rejected");
}

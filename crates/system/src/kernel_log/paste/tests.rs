//! Every paste style of FORMATS.md part B: the message, time and level.

use super::*;

fn p(line: &str) -> LogLine {
    parse_line(line).unwrap_or_else(|| panic!("no kernel line: {line:?}"))
}

const MSG: &str = "tsc: Detected 2445.404 MHz processor";

#[test]
fn dmesg_styles() {
    let l = p("[    0.000008] tsc: Detected 2445.404 MHz processor");
    assert_eq!((l.message.as_str(), l.time.monotonic_us), (MSG, Some(8)));
    let l = p("[14669.048261][    T0] tsc: Detected 2445.404 MHz processor");
    assert_eq!((l.message.as_str(), l.time.monotonic_us), (MSG, Some(14_669_048_261)));
    assert_eq!(
        p("[    0.000008] [    T0] tsc: Detected 2445.404 MHz processor").message,
        MSG
    );
    assert_eq!(p(MSG).time, LogTime::default());
    let t = p("[Tue Nov 24 20:00:01 2026] tsc: Detected 2445.404 MHz processor");
    assert_eq!(
        (t.message.as_str(), t.time.wall.as_deref()),
        (MSG, Some("Tue Nov 24 20:00:01 2026"))
    );
    let iso = p("2026-11-24T20:00:01,000008+00:00 tsc: Detected 2445.404 MHz processor");
    assert_eq!(
        (iso.message.as_str(), iso.time.wall.as_deref()),
        (MSG, Some("2026-11-24T20:00:01,000008+00:00"))
    );
    let x = p("kern  :warn  : [    0.000008] tsc: Detected 2445.404 MHz processor");
    assert_eq!(
        (x.message.as_str(), x.level, x.time.monotonic_us),
        (MSG, Some(4), Some(8))
    );
    let r = p("<6>[    0.000008] tsc: Detected 2445.404 MHz processor");
    assert_eq!((r.message.as_str(), r.level), (MSG, Some(6)));
    let d = p("[    0.000008 <    0.000002>] tsc: Detected 2445.404 MHz processor");
    assert_eq!((d.message.as_str(), d.time.monotonic_us), (MSG, Some(8)));
    // A message's own brackets stay.
    assert_eq!(
        p("[    0.0] [Firmware Bug]: TSC ADJUST: CPU0: 5 force to 0").message,
        "[Firmware Bug]: TSC ADJUST: CPU0: 5 force to 0"
    );
    assert_eq!(
        p("[Tue Nov 24 20:00:01 2026] Hypervisor detected: KVM").message,
        "Hypervisor detected: KVM"
    );
}

#[test]
fn kmsg_records_escapes_and_dictionary() {
    let k = p("4,1234,8,-,caller=T0;tsc: Detected 2445.404 MHz processor");
    assert_eq!(
        (k.message.as_str(), k.level, k.sequence, k.time.monotonic_us),
        (MSG, Some(4), Some(1234), Some(8))
    );
    assert!(k.kmsg_record);
    let r = p("12,345,678,c;msg");
    assert_eq!((r.sequence, r.message.as_str()), (Some(345), "msg"));
    // Not a kmsg prefix: letters in the numeric fields.
    let r = p("a,1,2,-;msg");
    assert_eq!((r.sequence, r.message.as_str()), (None, "a,1,2,-;msg"));
    assert_eq!(p("6,1,2,-;a\\x1b[2Jb").message, "a\u{1b}[2Jb");
    assert_eq!(p("6,1,2,-;bad \\xZZ and \\x").message, "bad \\xZZ and \\x");
    let text = "6,0,0,-;tsc: Fast TSC calibration using PIT\n SUBSYSTEM=cpu\n DEVICE=+cpu:cpu0\n    tsc: x\n";
    let all: Vec<String> = lines(text).map(|l| l.message).collect();
    assert_eq!(all, ["tsc: Fast TSC calibration using PIT", "tsc: x"]);
    // Not after a record: an indented KEY=value line is a message.
    assert_eq!(lines("[ 1.0] a\n SUBSYSTEM=cpu\n").count(), 2);
}

#[test]
fn journal_and_syslog_styles() {
    let j = p("Nov 24 20:00:01 db1 kernel: tsc: Detected 2445.404 MHz processor");
    assert_eq!(
        (j.message.as_str(), j.time.wall.as_deref()),
        (MSG, Some("Nov 24 20:00:01"))
    );
    let s = p("Nov  4 20:00:01 db1 kernel: [    0.000008] tsc: Detected 2445.404 MHz processor");
    assert_eq!(
        (s.message.as_str(), s.time.monotonic_us, s.time.wall.as_deref()),
        (MSG, Some(8), Some("Nov  4 20:00:01"))
    );
    assert_eq!(
        p("Nov 24 20:00:01.000008 db1 kernel: tsc: Detected 2445.404 MHz processor").message,
        MSG
    );
    assert_eq!(
        p("2026-11-24T20:00:01+00:00 db1 kernel: tsc: Detected 2445.404 MHz processor").message,
        MSG
    );
    assert_eq!(
        p("2026-11-24T20:00:01.000008+0000 db1 kernel: tsc: Detected 2445.404 MHz processor").message,
        MSG
    );
    assert_eq!(
        p("[    0.000008] db1 kernel: tsc: Detected 2445.404 MHz processor").message,
        MSG
    );
    let o = p("Tue Nov 24 20:00:01 2026 kern.warn kernel: [    0.000008] tsc: Detected 2445.404 MHz processor");
    assert_eq!((o.message.as_str(), o.level), (MSG, Some(4)));
    assert_eq!(p("kern.info kernel: tsc: Detected 2445.404 MHz processor").message, MSG);
    assert_eq!(
        p("2021-03-16 11:26:49.126 kernel: tsc: Detected 2445.404 MHz processor").message,
        MSG
    );
    let rfc = p("<4>1 2026-11-24T20:00:01.000008Z db1 kernel - - - tsc: Detected 2445.404 MHz processor");
    assert_eq!((rfc.message.as_str(), rfc.level), (MSG, Some(4)));
    // Other programs' lines are not kernel lines.
    assert_eq!(
        parse_line("Nov 24 20:00:01 db1 systemd[1]: Switched to clocksource hpet"),
        None
    );
    assert_eq!(
        parse_line("Nov 24 20:00:01 db1 chronyd[812]: Selected source 10.0.0.1"),
        None
    );
    assert_eq!(
        parse_line("<6>1 2026-11-24T20:00:01Z db1 systemd 1 - - Switched to clocksource hpet"),
        None
    );
}

#[test]
fn pasted_lines_indented_quoted_crlf_blank() {
    assert_eq!(
        p("    [    0.000008] tsc: Detected 2445.404 MHz processor\r\n").message,
        MSG
    );
    assert_eq!(
        p("> > [    0.000008] tsc: Detected 2445.404 MHz processor").message,
        MSG
    );
    assert_eq!(
        p(">>>>    Nov 24 20:00:01 db1 kernel: tsc: Detected 2445.404 MHz processor").message,
        MSG
    );
    assert_eq!(
        p("\tclocksource:   'hpet' wd_nsec: 1 wd_now: 2").message,
        "clocksource:   'hpet' wd_nsec: 1 wd_now: 2"
    );
    assert_eq!(parse_line("   \r"), None);
    assert_eq!(parse_line(">"), None);
}

//! Text for the independent frequency evidence and the interpreted kernel
//! log, shared by `clockscope tsc` and `clockscope check`: the kernel's TSC
//! and clocksource messages with what each means here, the NTP state from
//! adjtimex, and the `--drift` result. Every line fits [`WIDTH`] columns;
//! kernel text is untrusted and escaped.

use crate::i18n::{library::reason, num, pad_right, signed};
use crate::{t, tn};
use clockscope_system::counter::drift::{DriftReport, RateEstimate};
use clockscope_system::escape::escape_untrusted;
use clockscope_system::linux::ntp::NtpState;
use clockscope_system::linux::tsc_messages::{KernelMessage, Machine, Severity};
use std::io::{self, Write};

/// Widest line these sections print.
pub const WIDTH: usize = 100;

/// Writes `text` escaped, wrapped to [`WIDTH`], every line after `indent`.
pub fn write_wrapped(out: &mut dyn Write, indent: &str, text: &str) -> io::Result<()> {
    for line in crate::report::fit::wrap(&escape_untrusted(text), indent, WIDTH) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// How reports name the machine a log is read for, in the report's language
/// ([`Machine::label`] is the English).
pub fn machine_label(m: Machine) -> &'static str {
    match m {
        Machine::BareMetal => t!("bare metal"),
        Machine::Guest => t!("guest"),
        Machine::Unknown => t!("bare metal or guest (unknown)"),
    }
}

/// The kernel log's TSC and clocksource messages, each with its meaning.
/// `!` marks a message to act on.
pub fn write_kernel_messages(
    out: &mut dyn Write,
    indent: &str,
    messages: &[KernelMessage],
    machine: Option<Machine>,
) -> io::Result<()> {
    let on = machine.map_or(String::new(), |m| {
        t!(" (read for {machine})", machine = machine_label(m))
    });
    if messages.is_empty() {
        let none = t!("no TSC or clocksource message recognised{on}", on = on);
        return writeln!(out, "{indent}{none}");
    }
    writeln!(out, "{indent}{}", t!("! = worth checking{on}", on = on))?;
    let inner = format!("{indent}    ");
    for m in messages {
        let mark = if m.severity == Severity::Warning { "!" } else { " " };
        let times = if m.count > 1 {
            tn!(" ({n} lines)", " ({n} lines)", m.count, n = m.count)
        } else {
            String::new()
        };
        write_wrapped(out, &format!("{indent}{mark} "), &format!("\"{}\"{times}", m.message))?;
        if let Some(last) = &m.last_message {
            write_wrapped(out, &inner, &t!("last: \"{message}\"", message = last))?;
        }
        write_wrapped(out, &inner, &reason(&m.meaning))?;
    }
    Ok(())
}

/// The NTP state, or why it was not read.
pub fn write_ntp(out: &mut dyn Write, indent: &str, ntp: Result<&NtpState, &str>) -> io::Result<()> {
    match ntp {
        Err(why) => write_wrapped(out, indent, &reason(why)),
        Ok(n) => {
            let state = t!(
                "{synchronised}, state {state}, frequency correction {ppm} ppm, estimated error {estimated} µs, \
                 maximum error {maximum} µs",
                synchronised = if n.synchronised {
                    t!("synchronised")
                } else {
                    t!("NOT synchronised")
                },
                state = n.time_state,
                ppm = signed(n.frequency_ppm, 3),
                estimated = n.estimated_error_us,
                maximum = n.maximum_error_us
            );
            write_wrapped(out, indent, &state)?;
            write_wrapped(out, indent, &reason(&n.meaning))
        }
    }
}

fn rate_line(r: Option<&RateEstimate>) -> String {
    match r {
        None => t!("no rate").to_string(),
        Some(r) => {
            let se = r
                .regression_se_ppm
                .map_or(String::new(), |se| t!(", regression SE {se}", se = num(se, 3)));
            t!(
                "{ppm} ppm ±{uncertainty} ppm ({hz} Hz; brackets {brackets}{se})",
                ppm = signed(r.ppm, 3),
                uncertainty = num(r.uncertainty_ppm, 3),
                hz = num(r.hz, 0),
                brackets = num(r.bracket_ppm, 3),
                se = se
            )
        }
    }
}

/// The `--drift` result.
pub fn write_drift(out: &mut dyn Write, d: &DriftReport) -> io::Result<()> {
    let head = tn!(
        "Drift of the counter over {seconds} s ({n} samples){partial}, ppm of {hz} Hz",
        "Drift of the counter over {seconds} s ({n} samples){partial}, ppm of {hz} Hz",
        d.samples,
        seconds = num(d.measured_s, 1),
        n = d.samples,
        partial = if d.complete { "" } else { t!(", PARTIAL") },
        hz = num(d.nominal_hz, 0)
    );
    writeln!(out, "{head}")?;
    let labels = [t!("vs CLOCK_REALTIME"), t!("vs CLOCK_MONOTONIC_RAW")];
    let w = crate::report::text::column_width(labels, 2, 24);
    for (label, rate) in labels.iter().zip([d.vs_realtime.as_ref(), d.vs_monotonic_raw.as_ref()]) {
        write_wrapped(out, "  ", &format!("{}{}", pad_right(label, w), rate_line(rate)))?;
    }
    for s in &d.realtime_steps {
        let line = t!(
            "  ! CLOCK_REALTIME stepped {ms} ms at {seconds} s",
            ms = signed(s.step_ns / 1e6, 3),
            seconds = num(s.at_s, 1)
        );
        writeln!(out, "{line}")?;
    }
    for n in &d.notes {
        write_wrapped(out, "  ", &reason(n))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clockscope_system::linux::ntp::{RawTimex, STA_UNSYNC, TIME_ERROR};
    use clockscope_system::linux::tsc_messages::interpret;

    fn text(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> String {
        let mut v = Vec::new();
        f(&mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn kernel_messages_fit_100_columns_and_are_escaped() {
        let log = [
            "[Firmware Bug]: TSC doesn't count with P0 frequency!\u{1b}[2J",
            "clocksource: timekeeping watchdog on CPU3: Marking clocksource 'tsc' as unstable because the skew \
             is too large:",
            "clocksource: Switched to clocksource kvm-clock",
            "clocksource: Switched to clocksource tsc",
        ];
        for machine in [Machine::Guest, Machine::BareMetal, Machine::Unknown] {
            let msgs = interpret(&log, machine);
            let t = text(|o| write_kernel_messages(o, "  ", &msgs, Some(machine)));
            assert!(t.lines().all(|l| l.chars().count() <= WIDTH), "{t}");
            assert!(!t.contains('\u{1b}') && t.contains("\\x1b[2J"), "{t}");
            assert!(t.contains("last: \"clocksource: Switched to clocksource tsc\""), "{t}");
        }
        let guest = text(|o| write_kernel_messages(o, "  ", &interpret(&log, Machine::Guest), None));
        // The P0 line is benign in a guest (no mark); the watchdog line is marked.
        assert!(guest.contains("    \"[Firmware Bug]"), "{guest}");
        assert!(guest.contains("! \"clocksource: timekeeping watchdog"), "{guest}");
    }

    #[test]
    fn ntp_unsynchronised_says_so() {
        let n = NtpState::from_raw(&RawTimex {
            state: TIME_ERROR,
            status: STA_UNSYNC,
            freq: 65536 * 3 / 2,
            maxerror: 16_000_000,
            esterror: 16_000_000,
            offset: 0,
        });
        let t = text(|o| write_ntp(o, "  ", Ok(&n)));
        assert!(
            t.starts_with("  NOT synchronised, state error, frequency correction +1.500 ppm"),
            "{t}"
        );
        assert!(t.lines().all(|l| l.chars().count() <= WIDTH), "{t}");
        let t = text(|o| write_ntp(o, "  ", Err("adjtimex: EPERM")));
        assert_eq!(t, "  adjtimex: EPERM\n");
    }
}

//! The text form of the ARM generic timer report, which `clockscope tsc`
//! prints on aarch64 in place of the TSC report (compiled everywhere so it is
//! tested everywhere).

use crate::commands::tsc::model::GenericTimerOutput;
use crate::i18n::{library::reason, num, pad_right, signed};
use crate::report::stamp::Stamped;
use crate::report::text::write_line;
use crate::t;
use clockscope_system::arm::{cpu_list, GenericTimerReport};
use std::io::{self, Write};

/// The header line, the generic timer's report and the `--drift` result when
/// measured (the text on aarch64, one level).
pub fn write_output(out: &mut dyn Write, m: &Stamped<'_, GenericTimerOutput<'_>>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    write(out, m.report.report)?;
    if let Some(d) = m.report.drift {
        writeln!(out)?;
        super::evidence::write_drift(out, d)?;
    }
    Ok(())
}

/// Writes the generic timer's frequency, cores, errata, cross-checks and decision.
pub fn write(out: &mut dyn Write, r: &GenericTimerReport) -> io::Result<()> {
    // Every line fitted to 100 columns (crate::report::text).
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    write_line(out, t!("ARM generic timer (CNTVCT_EL0)"))?;
    writeln!(out)?;
    write_frequency(out, r)?;
    writeln!(out)?;
    write_cores(out, r)?;
    writeln!(out)?;
    write_errata(out, r)?;
    writeln!(out)?;
    write_decision(out, r)
}

/// The frequency block's labels, one column (16 in English).
fn labels() -> [&'static str; 6] {
    [
        t!("in use"),
        t!("resolution"),
        t!("device tree"),
        "BogoMIPS",
        t!("calibration"),
        t!("warning"),
    ]
}

/// `  label   value` in the frequency block.
fn line(out: &mut dyn Write, label: &str, value: &str) -> io::Result<()> {
    let w = crate::report::text::column_width(labels(), 2, 16);
    writeln_escaped!(out, "  {}{value}", pad_right(label, w))
}

/// The frequency in use, its resolution, and every cross-check of it.
fn write_frequency(out: &mut dyn Write, r: &GenericTimerReport) -> io::Result<()> {
    writeln_escaped!(out, "{}", super::text::heading(t!("Frequency")))?;
    let in_use = t!(
        "{khz} kHz ({source})",
        khz = r.frequency_khz_text(),
        source = r.frequency_source
    );
    line(out, t!("in use"), &in_use)?;
    let resolution = match r.resolution_ns {
        Some(res) => t!("{ns} ns (one tick)", ns = num(res, 3)),
        None => t!("- (CNTFRQ_EL0 reads 0)").to_string(),
    };
    line(out, t!("resolution"), &resolution)?;
    if let Some(dt) = r.dt_clock_frequency_hz {
        let dt = t!("{hz} Hz (clock-frequency of the timer node)", hz = dt);
        line(out, t!("device tree"), &dt)?;
    }
    if let (Some(b), Some(hz)) = (&r.bogomips, r.bogomips_hz) {
        line(
            out,
            "BogoMIPS",
            &t!("{bogomips} (implies {hz} Hz)", bogomips = b, hz = hz),
        )?;
    }
    let calibration = match (r.calibrated_hz, &r.calibration_failed) {
        (Some(hz), _) => t!(
            "{hz} Hz against {reference} ({ppm} ppm, ±{uncertainty} ppm)",
            hz = num(hz, 0),
            reference = r.calibration_reference.as_deref().unwrap_or(t!("a reference clock")),
            ppm = signed(r.disagreement_ppm.unwrap_or(0.0), 1),
            uncertainty = num(r.calibration_uncertainty_ppm.unwrap_or(0.0), 1)
        ),
        (None, Some(why)) => t!("did not converge: {why}", why = reason(why)),
        (None, None) => t!("not run").to_string(),
    };
    line(out, t!("calibration"), &calibration)?;
    if let Some(w) = &r.coarse_warning {
        line(out, t!("warning"), &reason(w))?;
    }
    Ok(())
}

/// The core types and their CPUs.
fn write_cores(out: &mut dyn Write, r: &GenericTimerReport) -> io::Result<()> {
    let cores = if r.homogeneous {
        t!("Cores (homogeneous)")
    } else {
        t!("Cores (NOT homogeneous)")
    };
    writeln_escaped!(out, "{cores}")?;
    if r.core_types.is_empty() {
        write_line(
            out,
            t!("  no CPU identification found (no midr_el1 in sysfs, no CPU part lines in /proc/cpuinfo)"),
        )?;
    }
    for c in &r.core_types {
        let ids = t!(
            "implementer {implementer} part {part}  CPUs {cpus}",
            implementer = format!("0x{:02x}", c.implementer),
            part = format!("0x{:03x}", c.part),
            cpus = cpu_list(&c.cpus)
        );
        writeln_escaped!(out, "  {} {ids}", pad_right(&c.name, 28))?;
    }
    Ok(())
}

/// The counter errata known for these cores and firmware.
fn write_errata(out: &mut dyn Write, r: &GenericTimerReport) -> io::Result<()> {
    write_line(out, t!("Counter errata"))?;
    if r.errata.is_empty() {
        write_line(out, t!("  none known for these cores and firmware"))?;
    }
    for e in &r.errata {
        let scope = if e.affects_aarch64 {
            t!("affects 64-bit reads")
        } else {
            t!("AArch32 only")
        };
        let cpus = if e.cpus.is_empty() {
            t!("the whole SoC").to_string()
        } else {
            t!("CPUs {cpus}", cpus = cpu_list(&e.cpus))
        };
        let line = t!(
            "{scope}; {cpus}; detected by {detected}",
            scope = scope,
            cpus = cpus,
            detected = &e.detected_by
        );
        writeln_escaped!(out, "  {}: {} ({line})", e.id, reason(e.problem))?;
    }
    Ok(())
}

/// clockscope's decision with its reasons and notes, and PostgreSQL 19's.
fn write_decision(out: &mut dyn Write, r: &GenericTimerReport) -> io::Result<()> {
    let trusted = if r.trusted {
        t!("trusted (every check passed)")
    } else {
        t!("NOT trusted")
    };
    write_line(
        out,
        &t!("clockscope: the generic timer is {trusted}", trusted = trusted),
    )?;
    let mark_w = crate::report::text::column_width([t!("ok"), t!("NOT OK")], 0, 6);
    for reason in &r.reasons {
        let reason = crate::i18n::library::reason(reason);
        writeln_escaped!(out, "  {}  {reason}", pad_right(t!("NOT OK"), mark_w))?;
    }
    let note = t!("note");
    let note_w = textwrap::core::display_width(note).max(4) + 4;
    for n in &r.notes {
        let n = reason(n);
        writeln_escaped!(out, "  {}{n}", pad_right(note, note_w))?;
    }
    write_line(
        out,
        t!("PostgreSQL 19 has no ARM counter support: timing_clock_source=auto uses the system clock on ARM."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clockscope_system::linux::testing::FakeRoot;

    #[test]
    fn neoverse_n1_server_report() {
        let root = FakeRoot::new();
        for cpu in 0..4 {
            root.write(
                &format!("sys/devices/system/cpu/cpu{cpu}/regs/identification/midr_el1"),
                "0x00000000413fd0c1\n",
            );
        }
        let r = clockscope_system::arm::gather(root.path(), 25_000_000, None);
        let mut out = Vec::new();
        write(&mut out, &r).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("in use          25000 kHz (arm64, CNTFRQ_EL0)"), "{text}");
        assert!(text.contains("resolution      40.000 ns (one tick)"), "{text}");
        assert!(text.contains("Cores (homogeneous)"), "{text}");
        assert!(text.contains("CPUs 0-3"), "{text}");
        assert!(text.contains("calibration     not run"), "{text}");
        // In Russian: the labels through the catalog, their values in one
        // display column, the resolution with a decimal comma.
        let ru = crate::i18n::Lang::from_code("ru").unwrap();
        let mut out = Vec::new();
        crate::i18n::with_language(ru, || write(&mut out, &r)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("Частота") && text.contains("40,000 нс (один такт)"),
            "{text}"
        );
        let value_col = |label: &str| {
            let l = text.lines().find(|l| l.starts_with(&format!("  {label} "))).unwrap();
            textwrap::core::display_width(&l[..l.len() - l[2 + label.len()..].trim_start().len()])
        };
        assert_eq!(value_col("используется"), value_col("калибровка"), "{text}");
    }
    #[test]
    fn an_erratum_core_and_a_coarse_counter_in_russian() {
        // Cortex-A73 r0p2 (ARM erratum 858921 affects 64-bit reads), a 1 MHz
        // counter (coarse) and neither a device tree nor ACPI tables: the
        // reasons, the erratum, Linux's workaround and the unchecked firmware
        // all come from clockscope_system::arm in English.
        let root = FakeRoot::new();
        for cpu in 0..2 {
            root.write(
                &format!("sys/devices/system/cpu/cpu{cpu}/regs/identification/midr_el1"),
                "0x00000000410fd092\n",
            );
        }
        let r = clockscope_system::arm::gather(root.path(), 1_000_000, None);
        let ru = crate::i18n::Lang::from_code("ru").unwrap();
        let mut out = Vec::new();
        crate::i18n::with_language(ru, || write(&mut out, &r)).unwrap();
        let text = String::from_utf8(out).unwrap();
        for said in [
            "грубый: отдельные чтения бесполезны для EXPLAIN",
            "Cortex-A73 (все",
            "858921, процессоры 0-1",
            "Linux заменяет свои чтения счётчика",
            "не найдены ни дерево устройств, ни таблицы ACPI",
        ] {
            assert!(text.contains(said), "{said}:\n{text}");
        }
        for english in [
            "not checked",
            "Linux replaces",
            "all revisions",
            "single reads useless",
            "CPUs 0-1",
        ] {
            assert!(!text.contains(english), "{english}:\n{text}");
        }
    }
}

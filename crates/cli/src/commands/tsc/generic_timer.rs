//! The text form of the ARM generic timer report, which `clockscope tsc`
//! prints on aarch64 in place of the TSC report (compiled everywhere so it is
//! tested everywhere).

use crate::report::text::{check_line, CheckStyle};
use clockscope_system::arm::{cpu_list, GenericTimerReport};
use clockscope_system::counter::Check;
use std::io::{self, Write};

/// Writes the generic timer's frequency, cores, errata, cross-checks and decision.
pub fn write(out: &mut dyn Write, r: &GenericTimerReport) -> io::Result<()> {
    // Every line fitted to 100 columns (crate::report::text).
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    writeln_escaped!(out, "ARM generic timer (CNTVCT_EL0)")?;
    writeln!(out)?;
    write_frequency(out, r)?;
    writeln!(out)?;
    write_cores(out, r)?;
    writeln!(out)?;
    write_errata(out, r)?;
    writeln!(out)?;
    write_decision(out, r)
}

/// The frequency in use, its resolution, and every cross-check of it.
fn write_frequency(out: &mut dyn Write, r: &GenericTimerReport) -> io::Result<()> {
    writeln_escaped!(out, "Frequency")?;
    writeln_escaped!(
        out,
        "  in use          {} kHz ({})",
        r.frequency_khz_text(),
        r.frequency_source
    )?;
    match r.resolution_ns {
        Some(res) => writeln_escaped!(out, "  resolution      {res:.3} ns (one tick)")?,
        None => writeln_escaped!(out, "  resolution      - (CNTFRQ_EL0 reads 0)")?,
    }
    if let Some(dt) = r.dt_clock_frequency_hz {
        writeln_escaped!(out, "  device tree     {dt} Hz (clock-frequency of the timer node)")?;
    }
    if let (Some(b), Some(hz)) = (&r.bogomips, r.bogomips_hz) {
        writeln_escaped!(out, "  BogoMIPS        {b} (implies {hz} Hz)")?;
    }
    match (r.calibrated_hz, &r.calibration_failed) {
        (Some(hz), _) => writeln_escaped!(
            out,
            "  calibration     {:.0} Hz against {} ({:+.1} ppm, ±{:.1} ppm)",
            hz,
            r.calibration_reference.as_deref().unwrap_or("a reference clock"),
            r.disagreement_ppm.unwrap_or(0.0),
            r.calibration_uncertainty_ppm.unwrap_or(0.0)
        )?,
        (None, Some(why)) => writeln_escaped!(out, "  calibration     did not converge: {why}")?,
        (None, None) => writeln_escaped!(out, "  calibration     not run")?,
    }
    if let Some(w) = &r.coarse_warning {
        writeln_escaped!(out, "  warning         {w}")?;
    }
    Ok(())
}

/// The core types and their CPUs.
fn write_cores(out: &mut dyn Write, r: &GenericTimerReport) -> io::Result<()> {
    writeln_escaped!(
        out,
        "Cores ({})",
        if r.homogeneous {
            "homogeneous"
        } else {
            "NOT homogeneous"
        }
    )?;
    if r.core_types.is_empty() {
        writeln_escaped!(
            out,
            "  no CPU identification found (no midr_el1 in sysfs, no CPU part lines in /proc/cpuinfo)"
        )?;
    }
    for t in &r.core_types {
        writeln_escaped!(
            out,
            "  {:<28} implementer 0x{:02x} part 0x{:03x}  CPUs {}",
            t.name,
            t.implementer,
            t.part,
            cpu_list(&t.cpus)
        )?;
    }
    Ok(())
}

/// The counter errata known for these cores and firmware.
fn write_errata(out: &mut dyn Write, r: &GenericTimerReport) -> io::Result<()> {
    writeln_escaped!(out, "Counter errata")?;
    if r.errata.is_empty() {
        writeln_escaped!(out, "  none known for these cores and firmware")?;
    }
    for e in &r.errata {
        let scope = if e.affects_aarch64 {
            "affects 64-bit reads"
        } else {
            "AArch32 only"
        };
        let cpus = if e.cpus.is_empty() {
            "the whole SoC".to_string()
        } else {
            format!("CPUs {}", cpu_list(&e.cpus))
        };
        writeln_escaped!(
            out,
            "  {}: {} ({scope}; {cpus}; detected by {})",
            e.id,
            e.problem,
            e.detected_by
        )?;
    }
    Ok(())
}

/// clockscope's decision with its reasons and notes, and PostgreSQL 19's.
fn write_decision(out: &mut dyn Write, r: &GenericTimerReport) -> io::Result<()> {
    writeln_escaped!(
        out,
        "clockscope: the generic timer is {}",
        if r.trusted {
            "trusted (every check passed)"
        } else {
            "NOT trusted"
        }
    )?;
    for reason in &r.reasons {
        writeln_escaped!(
            out,
            "  {}",
            check_line(&Check::new(false, "", reason.clone()), CheckStyle::Table { width: 0 })
        )?;
    }
    for note in &r.notes {
        writeln_escaped!(out, "  note    {note}")?;
    }
    writeln_escaped!(
        out,
        "PostgreSQL 19 has no ARM counter support: timing_clock_source=auto uses the system clock on ARM."
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
    }
}

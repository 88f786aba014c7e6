//! What PostgreSQL 19 will do with the TSC here ([`Pg19View`]), in the
//! `tsc` report and in `check -v`: the `TSC frequency source` and `in use`
//! lines its pg_test_timing prints, its own calibration with its spread and
//! its distance to clockscope's frequency, its 10% cross-check, `auto`.

use clockscope_system::tsc::pg19::Pg19View;
use std::io::{self, Write};

/// The lines, each after `indent`.
pub fn lines(v: &Pg19View) -> Vec<String> {
    let mut out = vec![format!(
        "TSC frequency source: {}",
        clockscope_system::escape::escape_untrusted(&v.frequency_source)
    )];
    let in_use = if v.calibration_not_run {
        "its own calibration, not run here (a CPUID dump): unknown".to_string()
    } else if v.frequency_khz == 0 {
        "0 kHz: PostgreSQL 19 cannot read the TSC here (timing_clock_source = tsc fails)".to_string()
    } else if v.from_calibration {
        format!(
            "{} kHz, its own calibration (a new value in every process, not CPUID's)",
            v.frequency_khz
        )
    } else {
        format!("{} kHz, from CPUID", v.frequency_khz)
    };
    out.push(format!("TSC frequency in use: {in_use}"));
    if !v.calibration_runs_khz.is_empty() {
        let runs: Vec<String> = v
            .calibration_runs_khz
            .iter()
            .map(|&k| {
                if k == 0 {
                    "did not converge".to_string()
                } else {
                    k.to_string()
                }
            })
            .collect();
        let spread = v
            .calibration_spread_ppm
            .map(|s| format!("; spread {s:.0} ppm"))
            .unwrap_or_default();
        out.push(format!(
            "its calibration, {} run(s) here: {} kHz{spread}",
            runs.len(),
            runs.join(", ")
        ));
    }
    if let Some(ppm) = v.ppm_vs_clockscope {
        out.push(format!("in use vs clockscope's frequency: {ppm:+.0} ppm"));
    }
    out.push(match (v.cross_check_diff_pct, v.cross_check_fails) {
        (Some(p), true) => {
            format!("10% cross-check FAILS ({p:.1}%): pg_test_timing prints WARNING and HINT and exits 1")
        }
        (Some(p), false) => format!("10% cross-check passes ({p:.1}% apart)"),
        (None, _) if v.frequency_khz > 0 && v.calibration_runs_khz.is_empty() => {
            "10% cross-check not made: its calibration was not run (a CPUID dump)".to_string()
        }
        (None, _) => "10% cross-check not made (its calibration did not converge or the TSC is unusable)".to_string(),
    });
    out.push(format!(
        "timing_clock_source = auto picks {}",
        if v.auto_uses_tsc { "tsc" } else { "system" }
    ));
    out
}

/// Writes [`lines`] under a heading.
pub fn write(out: &mut dyn Write, indent: &str, v: &Pg19View) -> io::Result<()> {
    for l in lines(v) {
        writeln!(out, "{indent}{l}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvm_guest_calibrating() {
        let v = Pg19View {
            frequency_source: "x86, hypervisor, calibration".into(),
            frequency_khz: 2_595_786,
            from_calibration: true,
            calibration_runs_khz: vec![2_595_786, 0, 2_596_000],
            calibration_spread_ppm: Some(82.4),
            cross_check_diff_pct: Some(0.0),
            cross_check_fails: false,
            auto_uses_tsc: true,
            ppm_vs_clockscope: Some(-139.4),
            calibration_not_run: false,
        };
        assert_eq!(
            lines(&v),
            [
                "TSC frequency source: x86, hypervisor, calibration",
                "TSC frequency in use: 2595786 kHz, its own calibration (a new value in every process, not CPUID's)",
                "its calibration, 3 run(s) here: 2595786, did not converge, 2596000 kHz; spread 82 ppm",
                "in use vs clockscope's frequency: -139 ppm",
                "10% cross-check passes (0.0% apart)",
                "timing_clock_source = auto picks tsc",
            ]
        );
        let failing = Pg19View {
            cross_check_diff_pct: Some(15.04),
            cross_check_fails: true,
            ..v
        };
        assert!(lines(&failing)[4].starts_with("10% cross-check FAILS (15.0%)"));
    }
}

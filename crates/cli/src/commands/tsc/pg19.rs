//! What PostgreSQL 19 will do with the TSC here ([`Pg19View`]), in the
//! `tsc` report and in `check -v`: the `TSC frequency source` and `in use`
//! lines its pg_test_timing prints, its own calibration with its spread and
//! its distance to clockscope's frequency, its 10% cross-check, `auto`.

use crate::i18n::{num, signed};
use crate::{t, tn};
use clockscope_system::tsc::pg19::Pg19View;
use std::io::{self, Write};

/// The lines, each after `indent`.
pub fn lines(v: &Pg19View) -> Vec<String> {
    let mut out = vec![t!(
        "TSC frequency source: {source}",
        source = clockscope_system::escape::escape_untrusted(&v.frequency_source)
    )];
    let in_use = if v.calibration_not_run {
        t!("its own calibration, not run here (a CPUID dump): unknown").to_string()
    } else if v.frequency_khz == 0 {
        t!("0 kHz: PostgreSQL 19 cannot read the TSC here (timing_clock_source = tsc fails)").to_string()
    } else if v.from_calibration {
        t!(
            "{khz} kHz, its own calibration (a new value in every process, not CPUID's)",
            khz = v.frequency_khz
        )
    } else {
        t!("{khz} kHz, from CPUID", khz = v.frequency_khz)
    };
    out.push(t!("TSC frequency in use: {in_use}", in_use = in_use));
    if !v.calibration_runs_khz.is_empty() {
        let runs: Vec<String> = v
            .calibration_runs_khz
            .iter()
            .map(|&k| {
                if k == 0 {
                    t!("did not converge").to_string()
                } else {
                    k.to_string()
                }
            })
            .collect();
        let spread = v
            .calibration_spread_ppm
            .map(|s| t!("; spread {ppm} ppm", ppm = num(s, 0)))
            .unwrap_or_default();
        out.push(tn!(
            "its calibration, {n} run(s) here: {runs} kHz{spread}",
            "its calibration, {n} run(s) here: {runs} kHz{spread}",
            runs.len(),
            n = runs.len(),
            runs = runs.join(", "),
            spread = spread
        ));
    }
    if let Some(ppm) = v.ppm_vs_clockscope {
        out.push(t!("in use vs clockscope's frequency: {ppm} ppm", ppm = signed(ppm, 0)));
    }
    out.push(match (v.cross_check_diff_pct, v.cross_check_fails) {
        (Some(p), true) => t!(
            "10% cross-check FAILS ({pct}%): pg_test_timing prints WARNING and HINT and exits 1",
            pct = num(p, 1)
        ),
        (Some(p), false) => t!("10% cross-check passes ({pct}% apart)", pct = num(p, 1)),
        (None, _) if v.frequency_khz > 0 && v.calibration_runs_khz.is_empty() => {
            t!("10% cross-check not made: its calibration was not run (a CPUID dump)").to_string()
        }
        (None, _) => {
            t!("10% cross-check not made (its calibration did not converge or the TSC is unusable)").to_string()
        }
    });
    out.push(t!(
        "timing_clock_source = auto picks {value}",
        value = if v.auto_uses_tsc { "tsc" } else { "system" }
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

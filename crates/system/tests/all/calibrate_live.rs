//! This machine's counter calibration against the frequency the kernel
//! publishes for it.
//!
//! - `calibration_agrees_with_the_kernel`: clockscope's calibration must
//!   land within the decision's agreement limit (500 ppm) of the kernel's TSC
//!   kHz (the perf page, else the kernel log's "tsc: Detected/Refined");
//!   where the kernel publishes none (no TSC, an unprivileged run without
//!   the perf page or the log), it prints why it is skipped.
//! - `compare_calibrations_with_the_kernel` (`#[ignore]`: a measurement, not
//!   a test; numbers depend on the host) prints both calibrations' errors.
//!   Run: `cargo test --release -p clockscope-system --test all
//!   calibrate_live:: -- --ignored --nocapture`.

use clockscope_system::counter::calibrate::{calibrate_counter, calibrate_postgresql_native, Calibration};
use clockscope_system::linux::LinuxEvidence;
use clockscope_system::tsc::frequency::DISAGREEMENT_LIMIT_PPM;
use std::path::Path;

const RUNS: usize = 8;

/// The kernel's own TSC kHz, with where it came from: the perf page (the
/// kernel's exact conversion), else the kernel log; `Err` with why neither.
fn kernel_tsc_khz() -> Result<(u64, String), String> {
    if clockscope_system::counter::native_kind() != Some(clockscope_system::counter::CounterKind::Tsc) {
        return Err(format!("no TSC on {}", std::env::consts::ARCH));
    }
    let perf = match clockscope_system::tsc::report::perf_page_khz() {
        Ok((khz, how)) => return Ok((khz, format!("perf page, {how}"))),
        Err(why) => why,
    };
    match LinuxEvidence::read(Path::new("/")).kernel_tsc_khz() {
        Some((khz, msg)) => Ok((khz, msg.label().to_string())),
        None => Err(format!(
            "no perf page ({perf}) and no \"tsc: Detected/Refined\" in a readable kernel log"
        )),
    }
}

#[test]
fn calibration_agrees_with_the_kernel() {
    let (kernel_khz, source) = match kernel_tsc_khz() {
        Ok(k) => k,
        Err(why) => {
            return skip!(optional: "the kernel publishes no TSC frequency here: {why}");
        }
    };
    // 20 ms bounds the error to a few ppm on an idle machine; a preempted
    // run only widens the bound, which is checked too.
    let c = calibrate_counter(20_000_000);
    let err = c
        .error_ppm_vs_khz(kernel_khz)
        .unwrap_or_else(|| panic!("the calibration did not converge: {}", c.note));
    println!(
        "calibrated {:?} Hz, kernel {kernel_khz} kHz ({source}): {err:+.3} ppm, bound {:?} ppm",
        c.hz, c.uncertainty_ppm
    );
    assert!(
        err.abs() <= DISAGREEMENT_LIMIT_PPM,
        "calibrated {:?} Hz is {err:+.1} ppm from the kernel's {kernel_khz} kHz ({source}); limit {DISAGREEMENT_LIMIT_PPM} ppm",
        c.hz
    );
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn summarise(name: &str, runs: &[Calibration], kernel_khz: Option<u64>) {
    println!("\n{name} ({} runs)", runs.len());
    for c in runs {
        let err = kernel_khz.and_then(|k| c.error_ppm_vs_khz(k));
        println!(
            "  khz={:?} hz={:?} err_ppm={} bound_ppm={} elapsed_us={:.1} samples={} | {}",
            c.khz,
            c.hz,
            err.map_or("-".into(), |e| format!("{e:+.3}")),
            c.uncertainty_ppm.map_or("-".into(), |u| format!("{u:.3}")),
            c.elapsed_ns as f64 / 1e3,
            c.samples,
            c.note
        );
    }
    if let Some(k) = kernel_khz {
        let mut errs: Vec<f64> = runs.iter().filter_map(|c| c.error_ppm_vs_khz(k)).collect();
        let mut elapsed: Vec<f64> = runs.iter().map(|c| c.elapsed_ns as f64 / 1e3).collect();
        if !errs.is_empty() {
            let (lo, hi) = (
                errs.iter().copied().fold(f64::INFINITY, f64::min),
                errs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            );
            println!(
                "  vs kernel {k} kHz: median error {:+.3} ppm, spread {:.3} ppm ({lo:+.3} .. {hi:+.3}), median elapsed {:.1} us, converged {}/{}",
                median(&mut errs),
                hi - lo,
                median(&mut elapsed),
                errs.len(),
                runs.len()
            );
        }
    }
}

#[test]
#[ignore = "measures this machine's TSC; prints numbers"]
fn compare_calibrations_with_the_kernel() {
    let ev = LinuxEvidence::read(Path::new("/"));
    let kernel = ev.kernel_tsc_khz();
    println!("kernel: {:?}", kernel.map(|(k, s)| (k, s.label())));
    let kernel_khz = kernel.map(|(k, _)| k);
    let mut ours = Vec::new();
    let mut pg = Vec::new();
    // Alternate so both see the same machine conditions.
    for _ in 0..RUNS {
        ours.push(calibrate_counter(Calibration::DEFAULT_BUDGET_NS));
        pg.push(calibrate_postgresql_native());
    }
    summarise(
        "clockscope calibrate_counter (RDTSCP vs CLOCK_MONOTONIC_RAW, 50 ms budget)",
        &ours,
        kernel_khz,
    );
    summarise("PostgreSQL 19 algorithm (RDTSCP vs CLOCK_MONOTONIC)", &pg, kernel_khz);
    for c in ours.iter().chain(&pg) {
        if let Some(k) = c.khz {
            assert!(k > 0);
        }
    }
}

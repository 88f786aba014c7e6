//! PostgreSQL 19.0's TSC state, replayed step for step from
//! `src/common/instr_time.c` and `src/port/pg_cpu_x86.c` (the REL_19_STABLE
//! branch point, 9cfd19bc10ac): `tsc_detect_frequency`, its
//! `frequency_source` string, the calibration it runs once per process and
//! caches, `pg_timing_tsc_clock_source_info` and `tsc_use_by_default`.
//!
//! `frequency_source` is built by appending, as PostgreSQL's `strlcat`s do:
//! `x86`; then `, no rdtscp` or `, not invariant` (and stop); under a
//! hypervisor (CPUID 1 ECX bit 31) `, hypervisor`, then `, cpuid 0x40000010`
//! when that leaf gave a non-zero kHz (its `uint32`, before the `int32`
//! test); otherwise `, cpuid 0x15` (appended before the 32-bit division, so
//! also when it gives 0) or `, cpuid 0x16`; and `, calibration` when the
//! frequency in use came from PostgreSQL's calibration.
//!
//! The calibration is PostgreSQL's own algorithm
//! ([`crate::counter::calibrate::calibrate_postgresql`]), injected as a
//! closure returning its `uint32` kHz (0: did not converge), so tests script
//! it. It runs at most once: during detection when CPUID gives no frequency,
//! else on the first [`PgTscInfo::complete`] (the `TSC frequency from
//! calibration` line), and its result is cached, so when the frequency in use
//! came from it the two lines print the same number.

use super::cpuid::CpuidFacts;
use serde::Serialize;

/// PostgreSQL's `TscClockSourceInfo` plus the `auto` policy's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct PgTscInfo {
    /// `frequency_source`: how the frequency was determined (never empty
    /// once detection ran on x86-64).
    pub frequency_source: String,
    /// `frequency_khz` (`timing_tsc_frequency_khz`): 0 when the TSC is not
    /// usable.
    pub frequency_khz: i32,
    /// `calibrated_frequency_khz`: -1 while PostgreSQL's calibration has not
    /// run, 0 when it did not converge.
    pub calibrated_frequency_khz: i32,
    /// `tsc_use_by_default()`: TSC_ADJUST, or the kernel's current
    /// clocksource reads exactly `tsc\n`. `auto` picks the TSC when this is
    /// true and the frequency is > 0 ([`PgTscInfo::auto_uses_tsc`]).
    pub use_by_default_evidence: bool,
}

/// The cross-check limit of `test_tsc_timing`: more than 10.0% between the
/// calibrated frequency and the one in use prints a WARNING and exits 1.
pub const PG_CALIBRATION_WARNING_PCT: f64 = 10.0;

/// `x86_hypervisor_tsc_frequency_khz`: leaf 0x40000010 EAX when leaf
/// 0x40000000 reports at least that leaf and the signature is VMware's or
/// KVM's; else 0.
fn hypervisor_khz(f: &CpuidFacts) -> u32 {
    match &f.hypervisor {
        Some(h) if h.is_vmware_or_kvm() => h.timing_leaf_tsc_khz.unwrap_or(0),
        _ => 0,
    }
}

/// `x86_tsc_frequency_khz(source, ...)`: the CPUID kHz (`uint32`, 0 for
/// none) and what it appends to `source`.
fn x86_tsc_frequency_khz(f: &CpuidFacts, source: &mut String) -> u32 {
    if f.hypervisor_bit {
        let freq = hypervisor_khz(f);
        source.push_str(", hypervisor");
        if freq > 0 {
            source.push_str(", cpuid 0x40000010");
        }
        return freq;
    }
    // `pg_cpuid` (GCC's `__get_cpuid`) leaves zeros above the highest leaf.
    if let Some(l) = f.leaf_15.filter(|l| l.ecx_crystal_hz > 0) {
        if l.eax_denominator == 0 || l.ebx_numerator == 0 {
            return 0;
        }
        source.push_str(", cpuid 0x15");
        return (l.ecx_crystal_hz / 1000).wrapping_mul(l.ebx_numerator) / l.eax_denominator;
    }
    if let Some(l) = f.leaf_16.filter(|l| l.base_mhz > 0) {
        source.push_str(", cpuid 0x16");
        return l.base_mhz.wrapping_mul(1000);
    }
    0
}

/// `(uint32) freq_khz` stored in an `int32`, as PostgreSQL stores both the
/// CPUID and the calibrated kHz.
fn as_int32(khz: u32) -> i32 {
    khz as i32
}

impl PgTscInfo {
    /// `tsc_detect_frequency` over `facts`; `calibrate` (PostgreSQL's
    /// algorithm, its `uint32` result) runs only when PostgreSQL's would:
    /// RDTSCP and an invariant TSC present, and CPUID giving no kHz > 0.
    /// `current_clocksource` is the whole content of
    /// `/sys/devices/system/clocksource/clocksource0/current_clocksource`
    /// as PostgreSQL's `fgets` reads it (`None`: not readable).
    pub fn detect(f: &CpuidFacts, current_clocksource: Option<&[u8]>, calibrate: impl FnOnce() -> u32) -> PgTscInfo {
        let mut info = PgTscInfo {
            frequency_source: "x86".to_string(),
            frequency_khz: 0,
            calibrated_frequency_khz: -1,
            use_by_default_evidence: f.tsc_adjust || current_clocksource.is_some_and(is_exactly_tsc_line),
        };
        if !f.rdtscp {
            info.frequency_source.push_str(", no rdtscp");
            return info;
        }
        if !f.invariant_tsc {
            info.frequency_source.push_str(", not invariant");
            return info;
        }
        let cpuid = as_int32(x86_tsc_frequency_khz(f, &mut info.frequency_source));
        if cpuid > 0 {
            info.frequency_khz = cpuid;
            return info;
        }
        info.calibrated_frequency_khz = as_int32(calibrate());
        if info.calibrated_frequency_khz > 0 {
            info.frequency_source.push_str(", calibration");
            info.frequency_khz = info.calibrated_frequency_khz;
        }
        info
    }

    /// `pg_timing_tsc_clock_source_info`: runs the calibration for the
    /// comparison line when the frequency in use is known and PostgreSQL's
    /// calibration has not run yet; otherwise keeps the cached result.
    pub fn complete(&mut self, calibrate: impl FnOnce() -> u32) {
        if self.frequency_khz > 0 && self.calibrated_frequency_khz < 0 {
            self.calibrated_frequency_khz = as_int32(calibrate());
        }
    }

    /// `timing_tsc_frequency_khz > 0`: PostgreSQL can read the TSC.
    pub fn usable(&self) -> bool {
        self.frequency_khz > 0
    }

    /// `timing_clock_source = auto` picks the TSC.
    pub fn auto_uses_tsc(&self) -> bool {
        self.usable() && self.use_by_default_evidence
    }

    /// The frequency in use came from PostgreSQL's calibration.
    pub fn from_calibration(&self) -> bool {
        self.usable() && self.frequency_source.ends_with(", calibration")
    }

    /// `diff_pct` of `test_tsc_timing` when the calibration converged:
    /// `fabs(calibrated - in_use) / in_use * 100` (infinite when nothing is
    /// in use, as PostgreSQL's double division gives).
    pub fn calibration_diff_pct(&self) -> Option<f64> {
        (self.calibrated_frequency_khz > 0).then(|| {
            (self.calibrated_frequency_khz as f64 - self.frequency_khz as f64).abs() / self.frequency_khz as f64 * 100.0
        })
    }

    /// PostgreSQL's 10% cross-check fails: pg_test_timing prints its
    /// WARNING and HINT and exits 1.
    pub fn cross_check_fails(&self) -> bool {
        self.calibration_diff_pct()
            .is_some_and(|p| p > PG_CALIBRATION_WARNING_PCT)
    }
}

/// PostgreSQL's test: `fgets(buf, 128, fp)` then `strcmp(buf, "tsc\n") == 0`.
fn is_exactly_tsc_line(content: &[u8]) -> bool {
    // fgets stops after the first newline or 127 bytes.
    let first_line = match content.iter().position(|&b| b == b'\n') {
        Some(i) => &content[..=i],
        None => content,
    };
    let read = &first_line[..first_line.len().min(127)];
    // strcmp stops at a NUL.
    let read = read.split(|&b| b == 0).next().unwrap_or_default();
    read == b"tsc\n"
}

/// PostgreSQL's clocksource file, read as it reads it (at most 127 bytes).
pub const PG_CURRENT_CLOCKSOURCE: &str = "sys/devices/system/clocksource/clocksource0/current_clocksource";

/// Reads [`PG_CURRENT_CLOCKSOURCE`] under `root`, bounded to 128 bytes.
pub fn read_current_clocksource(root: &std::path::Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(128);
    std::fs::File::open(root.join(PG_CURRENT_CLOCKSOURCE))
        .ok()?
        .take(128)
        .read_to_end(&mut buf)
        .ok()?;
    Some(buf)
}

/// What PostgreSQL 19 will do with the TSC here, for `clockscope tsc` and
/// `check -v`: pg_test_timing's lines, its 10% cross-check, `auto`'s
/// choice, the spread of its calibration over several runs and how far
/// its frequency is from clockscope's.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Pg19View {
    /// `TSC frequency source: ...` as pg_test_timing prints it.
    pub frequency_source: String,
    /// `TSC frequency in use`, kHz (0: PostgreSQL cannot read the TSC).
    pub frequency_khz: i64,
    /// The frequency in use is PostgreSQL's own calibration (different in
    /// every process), not a CPUID value.
    pub from_calibration: bool,
    /// PostgreSQL's calibration, run in this process, kHz each (0: did not
    /// converge). The first is the one pg_test_timing would print (and use,
    /// when `from_calibration`); the others show its spread.
    pub calibration_runs_khz: Vec<u64>,
    /// `(max - min) / median` of the converged runs, ppm (two runs or more).
    pub calibration_spread_ppm: Option<f64>,
    /// `TSC frequency from calibration` vs in use, percent (`None`: the
    /// calibration did not converge or the TSC is not usable).
    pub cross_check_diff_pct: Option<f64>,
    /// pg_test_timing would print its WARNING and HINT and exit 1 (more
    /// than 10.0% apart).
    pub cross_check_fails: bool,
    /// `timing_clock_source = auto` picks the TSC.
    pub auto_uses_tsc: bool,
    /// The frequency in use against clockscope's, ppm (`None` when either
    /// is unknown).
    pub ppm_vs_clockscope: Option<f64>,
    /// PostgreSQL would calibrate here but its calibration was not run (a
    /// CPUID dump, a report without calibration): the frequency it would
    /// use is unknown, not 0.
    pub calibration_not_run: bool,
}

impl Pg19View {
    /// PostgreSQL's decision over `facts` with its calibration's runs
    /// (`runs[0]` is the one it would use), against clockscope's `clockscope_khz`.
    pub fn new(
        f: &CpuidFacts,
        current_clocksource: Option<&[u8]>,
        runs: &[u64],
        clockscope_khz: Option<u64>,
    ) -> Pg19View {
        let first = runs.first().map_or(0, |&k| k.min(u64::from(u32::MAX)) as u32);
        let needed = std::cell::Cell::new(false);
        let mut info = PgTscInfo::detect(f, current_clocksource, || {
            needed.set(true);
            first
        });
        info.complete(|| first);
        let mut view = Pg19View {
            frequency_source: info.frequency_source.clone(),
            frequency_khz: i64::from(info.frequency_khz.max(0)),
            from_calibration: info.from_calibration(),
            calibration_runs_khz: Vec::new(),
            calibration_spread_ppm: None,
            cross_check_diff_pct: info.calibration_diff_pct().filter(|p| p.is_finite()),
            cross_check_fails: info.cross_check_fails(),
            auto_uses_tsc: info.auto_uses_tsc(),
            ppm_vs_clockscope: clockscope_khz
                .filter(|&k| k > 0 && info.usable())
                .map(|k| (info.frequency_khz as f64 - k as f64) / k as f64 * 1e6),
            calibration_not_run: needed.get() && runs.is_empty(),
        };
        // PostgreSQL calibrates only with RDTSCP and an invariant TSC.
        if f.rdtscp && f.invariant_tsc {
            view.add_calibration_runs(runs);
        }
        view
    }

    /// Adds further runs of PostgreSQL's calibration (kHz, 0: did not
    /// converge) and recomputes the spread.
    pub fn add_calibration_runs(&mut self, runs: &[u64]) {
        self.calibration_runs_khz.extend_from_slice(runs);
        let mut ok: Vec<u64> = self.calibration_runs_khz.iter().copied().filter(|&k| k > 0).collect();
        ok.sort_unstable();
        self.calibration_spread_ppm = (ok.len() >= 2).then(|| {
            let median = ok[ok.len() / 2] as f64;
            (ok[ok.len() - 1] - ok[0]) as f64 / median * 1e6
        });
    }
}

#[cfg(test)]
#[path = "pg19_tests.rs"]
mod tests;

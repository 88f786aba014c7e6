//! The TSC: CPUID evidence, its frequency from every source, and the decision
//! whether to use it (PostgreSQL 19's `auto` and ours). Reads, calibration
//! and the discovery that uses all this are [`crate::counter`]'s.
//!
//! - [`cpuid`]: CPUID through a reader trait (this CPU, recorded dumps).
//! - [`source`]: the names of the frequency sources ([`source::SourceId`]),
//!   below both the rules and the frequency table.
//! - [`rules`]: PostgreSQL's and Linux's CPUID rules and the plausibility
//!   ranges, pure functions of CPUID registers.
//! - [`frequency`]: every frequency source in one table, and which frequency
//!   is in use.
//! - [`policy`]: PostgreSQL 19's `auto` policy and clockscope's trust decision.
//! - [`report`]: [`TscReport`], everything above in one serialisable value
//!   ([`crate::counter::detect_tsc`] builds it for this machine).
//! - `postgres_tsc_from`: what PostgreSQL 19's `pg_initialize_timing`
//!   concludes from the evidence, for `pg_test_timing` (run on this machine
//!   by [`crate::counter::discover()`] in its PostgreSQL mode).

pub mod cpuid;
pub mod frequency;
pub mod policy;
pub mod report;
pub mod rules;
pub mod source;

pub use policy::{PostgresAuto, Reason, TscDecision};
pub use report::TscReport;

/// What PostgreSQL 19's `pg_initialize_timing` concludes on this machine
/// (x86-64 only; elsewhere PostgreSQL has no TSC support).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresTsc {
    /// `TSC frequency in use`, kHz: from CPUID, else from calibration;
    /// `None` when the TSC is not usable (no RDTSCP or invariant TSC, no
    /// frequency, or not x86-64).
    pub frequency_khz: Option<u64>,
    /// `TSC frequency source` (`x86, cpuid 0x15`, `x86, cpuid 0x16`,
    /// `x86, hypervisor, cpuid 0x40000010`, `x86, calibration`).
    pub frequency_source: Option<String>,
    /// clockscope's calibration ([`crate::counter::calibrate::calibrate_counter`]),
    /// kHz; `None` when it did not converge or the TSC is not usable.
    /// (pg_test_timing's `TSC frequency from calibration` line is PostgreSQL's
    /// algorithm, run afresh: [`crate::counter::calibrate::calibrate_postgresql_native`].)
    pub calibrated_khz: Option<u64>,
    /// PostgreSQL's `auto` policy: frequency known and (TSC_ADJUST or the
    /// kernel's current clocksource is exactly `tsc`).
    pub use_by_default: bool,
}

/// Budget of the calibration PostgreSQL's view runs: PostgreSQL's own limit.
pub const POSTGRES_CALIBRATION_BUDGET_NS: u64 = crate::evidence::calibration::PG_MAX_NS;

/// What PostgreSQL 19's `pg_initialize_timing` does, over injected evidence:
/// CPUID frequency by PostgreSQL's rules ([`frequency::postgres_cpuid_khz`]),
/// calibration (`calibrate`, run only when the TSC is usable) when CPUID
/// gives nothing, and the `auto` policy with the current clocksource.
///
/// The calibration is **clockscope's** (against CLOCK_MONOTONIC_RAW, bounded
/// at PostgreSQL's 50 ms), not PostgreSQL's own algorithm, which stops after
/// a short window, has a bias of hundreds of ppm on KVM guests (measured:
/// `bench/README.md`) and no error bound. It is used both for
/// `calibrated_khz` and, when CPUID gives nothing, for `frequency_khz`
/// (source `x86, calibration`). `None` when PostgreSQL would not use the TSC
/// at all.
pub(crate) fn postgres_tsc_from(
    facts: &cpuid::CpuidFacts,
    current_clocksource: Option<&str>,
    calibrate: impl FnOnce() -> Option<u64>,
) -> Option<PostgresTsc> {
    let pg = frequency::postgres_cpuid_khz(facts);
    if !pg.tsc_usable {
        return None;
    }
    let calibrated_khz = calibrate().filter(|&k| k > 0);
    let (frequency_khz, frequency_source) = match (pg.khz.filter(|&k| k > 0), calibrated_khz) {
        (Some(k), _) => (Some(k), pg.source),
        (None, Some(c)) => (Some(c), Some(frequency::PG_SOURCE_CALIBRATION)),
        (None, None) => (None, None),
    };
    let use_by_default = frequency_khz.is_some() && (facts.tsc_adjust || current_clocksource == Some("tsc"));
    Some(PostgresTsc {
        frequency_khz,
        frequency_source: frequency_source.map(str::to_string),
        calibrated_khz,
        use_by_default,
    })
}

#[cfg(test)]
mod tests {
    use super::cpuid::{CpuidFacts, RecordedCpuid, SIGNATURE_KVM};
    use super::*;

    /// An Intel CPU with RDTSCP and invariant TSC; `hv` sets the hypervisor
    /// bit with KVM's signature and highest leaf `hv`.
    fn intel(leaf15: [u32; 4], tsc_adjust: bool, hv: Option<u32>) -> CpuidFacts {
        let mut rec = RecordedCpuid::new()
            .with(0, 0, [0x16, 0x756e_6547, 0x6c65_746e, 0x4965_6e69])
            .with(1, 0, [0x0005_0654, 0, if hv.is_some() { 1 << 31 } else { 0 }, 1 << 4])
            .with(7, 0, [0, if tsc_adjust { 2 } else { 0 }, 0, 0])
            .with(0x15, 0, leaf15)
            .with(0x8000_0000, 0, [0x8000_0008, 0, 0, 0])
            .with(0x8000_0001, 0, [0, 0, 0, 1 << 27])
            .with(0x8000_0007, 0, [0, 0, 0, 1 << 8]);
        if let Some(max) = hv {
            rec.insert(
                0x4000_0000,
                0,
                [max, SIGNATURE_KVM[0], SIGNATURE_KVM[1], SIGNATURE_KVM[2]],
            );
        }
        CpuidFacts::from_recorded(&rec)
    }

    #[test]
    fn cpuid_frequency_wins_and_calibration_is_still_reported() {
        // 0x15: 25 MHz crystal * 84 / 1 = 2 100 000 kHz.
        let f = intel([1, 84, 25_000_000, 0], true, None);
        let pg = postgres_tsc_from(&f, Some("hpet"), || Some(2_100_123)).unwrap();
        assert_eq!(pg.frequency_khz, Some(2_100_000));
        assert_eq!(pg.frequency_source.as_deref(), Some("x86, cpuid 0x15"));
        assert_eq!(pg.calibrated_khz, Some(2_100_123));
        assert!(pg.use_by_default, "TSC_ADJUST is enough");
    }

    #[test]
    fn kvm_without_timing_leaf_calibrates() {
        // This machine's case: KVM, highest hypervisor leaf 0x40000001.
        let f = intel([0; 4], true, Some(0x4000_0001));
        let pg = postgres_tsc_from(&f, Some("tsc"), || Some(2_599_990)).unwrap();
        assert_eq!(pg.frequency_khz, Some(2_599_990));
        assert_eq!(pg.frequency_source.as_deref(), Some("x86, calibration"));
        assert!(pg.use_by_default);
    }

    #[test]
    fn no_frequency_means_not_by_default() {
        let f = intel([0; 4], false, Some(0x4000_0001));
        let pg = postgres_tsc_from(&f, Some("tsc"), || None).unwrap();
        assert_eq!(
            (pg.frequency_khz, pg.frequency_source, pg.calibrated_khz),
            (None, None, None)
        );
        assert!(!pg.use_by_default);
        // Frequency known but neither TSC_ADJUST nor clocksource tsc.
        let pg = postgres_tsc_from(&f, Some("kvm-clock"), || Some(2_599_990)).unwrap();
        assert!(!pg.use_by_default);
    }

    #[test]
    fn without_invariant_tsc_there_is_no_tsc_and_no_calibration() {
        let mut f = intel([1, 84, 25_000_000, 0], true, None);
        f.invariant_tsc = false;
        assert!(postgres_tsc_from(&f, Some("tsc"), || panic!("must not calibrate")).is_none());
    }
}

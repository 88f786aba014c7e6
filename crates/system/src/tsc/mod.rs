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
pub mod pg19;
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
    /// `TSC frequency in use`, kHz: from CPUID, else from PostgreSQL's own
    /// calibration; `None` when the TSC is not usable (no RDTSCP or
    /// invariant TSC, no frequency).
    pub frequency_khz: Option<u64>,
    /// `TSC frequency source`, PostgreSQL's whole string ([`pg19`]): e.g.
    /// `x86, cpuid 0x15`, `x86, hypervisor, cpuid 0x40000010`,
    /// `x86, hypervisor, calibration`, `x86, no rdtscp`.
    pub frequency_source: Option<String>,
    /// PostgreSQL's calibration ([`crate::counter::calibrate::calibrate_postgresql`]),
    /// kHz, when it ran and converged: it runs when CPUID gives no frequency
    /// (and is then the frequency in use, the same number).
    pub calibrated_khz: Option<u64>,
    /// PostgreSQL's `auto` policy: frequency known and (TSC_ADJUST or the
    /// kernel's current clocksource is exactly `tsc`).
    pub use_by_default: bool,
}

impl From<&pg19::PgTscInfo> for PostgresTsc {
    fn from(i: &pg19::PgTscInfo) -> Self {
        PostgresTsc {
            frequency_khz: i.usable().then_some(i.frequency_khz as u64),
            frequency_source: Some(i.frequency_source.clone()).filter(|s| !s.is_empty()),
            calibrated_khz: (i.calibrated_frequency_khz > 0).then_some(i.calibrated_frequency_khz as u64),
            use_by_default: i.auto_uses_tsc(),
        }
    }
}

/// Budget of the calibration PostgreSQL's view runs: PostgreSQL's own limit.
pub const POSTGRES_CALIBRATION_BUDGET_NS: u64 = crate::evidence::calibration::PG_MAX_NS;

/// What PostgreSQL 19's `pg_initialize_timing` does, over injected evidence
/// ([`pg19::PgTscInfo::detect`]): the CPUID frequency by PostgreSQL's rules,
/// else `calibrate` (PostgreSQL's own algorithm and its `uint32` kHz, 0 when
/// it did not converge; run only when PostgreSQL would run it), and the
/// `auto` policy with the current clocksource file's content.
pub(crate) fn postgres_tsc_from(
    facts: &cpuid::CpuidFacts,
    current_clocksource: Option<&[u8]>,
    calibrate: impl FnOnce() -> u32,
) -> Option<PostgresTsc> {
    Some(PostgresTsc::from(&pg19::PgTscInfo::detect(
        facts,
        current_clocksource,
        calibrate,
    )))
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
    fn cpuid_frequency_wins_and_nothing_is_calibrated_yet() {
        // 0x15: 25 MHz crystal * 84 / 1 = 2 100 000 kHz.
        let f = intel([1, 84, 25_000_000, 0], true, None);
        let pg = postgres_tsc_from(&f, Some(b"hpet\n"), || panic!("CPUID gave the frequency")).unwrap();
        assert_eq!(pg.frequency_khz, Some(2_100_000));
        assert_eq!(pg.frequency_source.as_deref(), Some("x86, cpuid 0x15"));
        assert_eq!(pg.calibrated_khz, None);
        assert!(pg.use_by_default, "TSC_ADJUST is enough");
    }

    #[test]
    fn kvm_without_timing_leaf_calibrates() {
        // This machine's case: KVM, highest hypervisor leaf 0x40000001.
        let f = intel([0; 4], true, Some(0x4000_0001));
        let pg = postgres_tsc_from(&f, Some(b"tsc\n"), || 2_599_990).unwrap();
        assert_eq!(pg.frequency_khz, Some(2_599_990));
        assert_eq!(pg.calibrated_khz, Some(2_599_990));
        assert_eq!(pg.frequency_source.as_deref(), Some("x86, hypervisor, calibration"));
        assert!(pg.use_by_default);
    }

    #[test]
    fn no_frequency_means_not_by_default() {
        let f = intel([0; 4], false, Some(0x4000_0001));
        let pg = postgres_tsc_from(&f, Some(b"tsc\n"), || 0).unwrap();
        assert_eq!(
            (pg.frequency_khz, pg.frequency_source.as_deref(), pg.calibrated_khz),
            (None, Some("x86, hypervisor"), None)
        );
        assert!(!pg.use_by_default);
        // Frequency known but neither TSC_ADJUST nor clocksource tsc.
        let pg = postgres_tsc_from(&f, Some(b"kvm-clock\n"), || 2_599_990).unwrap();
        assert!(!pg.use_by_default);
    }

    #[test]
    fn without_invariant_tsc_there_is_no_tsc_and_no_calibration() {
        let mut f = intel([1, 84, 25_000_000, 0], true, None);
        f.invariant_tsc = false;
        let pg = postgres_tsc_from(&f, Some(b"tsc\n"), || panic!("must not calibrate")).unwrap();
        assert_eq!(pg.frequency_source.as_deref(), Some("x86, not invariant"));
        assert_eq!(pg.frequency_khz, None);
    }
}

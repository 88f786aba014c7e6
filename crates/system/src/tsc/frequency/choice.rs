//! The two choices of the frequency in use: PostgreSQL 19's (its CPUID
//! rules, else its calibration) and clockscope's (the first authoritative
//! source with a value, else a converged calibration).

use super::{
    implausible_text, ClockscopeChoice, FrequencyInputs, FrequencySource, PostgresChoice, PostgresCpuid, SourceId,
    PG_SOURCE_CALIBRATION,
};

/// PostgreSQL 19's choice: its CPUID rules, else its calibration.
pub(super) fn postgresql_choice(pg_cpuid: Option<&PostgresCpuid>, sources: &[FrequencySource]) -> PostgresChoice {
    match pg_cpuid {
        None => PostgresChoice {
            tsc_usable: false,
            khz: None,
            source: None,
            why: "PostgreSQL 19 has TSC support on x86-64 only".to_string(),
            implausible: false,
        },
        Some(p) if !p.tsc_usable => PostgresChoice {
            tsc_usable: false,
            khz: None,
            source: None,
            why: p.why.clone(),
            implausible: false,
        },
        Some(p) if p.khz.is_some() => PostgresChoice {
            tsc_usable: true,
            khz: p.khz,
            source: p.source,
            why: p.why.clone(),
            implausible: p.implausible,
        },
        Some(p) => {
            let cal = sources
                .iter()
                .find(|s| s.id == SourceId::CalibrationPostgres)
                .expect("listed");
            PostgresChoice {
                tsc_usable: true,
                khz: cal.khz,
                source: cal.khz.map(|_| PG_SOURCE_CALIBRATION),
                why: match cal.khz {
                    Some(k) => format!("{}; its calibration gives {k} kHz", p.why),
                    None => format!("{}; its calibration: {}", p.why, cal.note),
                },
                implausible: false,
            }
        }
    }
}

/// clockscope's choice: the first authoritative source with a value (the
/// hypervisor leaf first under a hypervisor), else a converged calibration.
pub(super) fn clockscope_choice(
    inputs: &FrequencyInputs,
    linux_id: Option<SourceId>,
    sources: &[FrequencySource],
) -> ClockscopeChoice {
    let hypervisor = inputs.cpuid.is_some_and(|f| f.hypervisor_bit);
    let mut order: Vec<SourceId> = Vec::new();
    if hypervisor {
        order.push(SourceId::Hypervisor40000010);
    }
    // Leaf 0x16 is a nominal MHz figure the kernel itself refines: not authoritative.
    if let Some(id) = linux_id.filter(|&id| id != SourceId::Cpuid16 && id != SourceId::Hypervisor40000010) {
        order.push(id);
    }
    if !hypervisor {
        order.push(SourceId::Hypervisor40000010);
    }
    order.extend([SourceId::KernelPerfPage, SourceId::KernelLog]);
    let khz_of = |id: SourceId| sources.iter().find(|s| s.id == id).and_then(|s| s.khz);
    let authoritative = order.iter().copied().find(|&id| khz_of(id).is_some());
    match authoritative {
        _ if inputs.cpuid.is_none() => ClockscopeChoice {
            khz: None,
            source: None,
            source_label: None,
            why: "no CPUID on this architecture: the TSC is x86's".to_string(),
        },
        Some(id) => ClockscopeChoice {
            khz: khz_of(id),
            source: Some(id),
            source_label: Some(id.label()),
            why: format!(
                "first authoritative source with a value, in the order {}",
                order.iter().map(|i| i.label()).collect::<Vec<_>>().join(" > ")
            ),
        },
        None => {
            let cal = sources
                .iter()
                .find(|s| s.id == SourceId::CalibrationClockscope)
                .expect("listed");
            match cal.khz {
                Some(k) => ClockscopeChoice {
                    khz: Some(k),
                    source: Some(SourceId::CalibrationClockscope),
                    source_label: Some(SourceId::CalibrationClockscope.label()),
                    why: "no authoritative source (CPUID, hypervisor leaf, kernel); calibration converged, used as the last resort".to_string(),
                },
                None => ClockscopeChoice {
                    khz: None,
                    source: None,
                    source_label: None,
                    why: format!(
                        "no authoritative source (CPUID, hypervisor leaf, kernel){} and no converged calibration ({})",
                        implausible_text(sources).map_or(String::new(), |t| format!("; implausible: {t}")),
                        cal.note
                    ),
                },
            }
        }
    }
}

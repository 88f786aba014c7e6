//! [`RecordedCpuid`]: CPUID leaves recorded as `(leaf, subleaf) -> [eax,
//! ebx, ecx, edx]` (from a dump file or built in a test), read through the
//! same [`CpuIdReader`] trait as this CPU; absent leaves read as zeros.

use super::{
    CpuIdReader, CpuIdResult, LEAF_EXTENDED_FEATURES, LEAF_EXTENDED_MAX, LEAF_FEATURES, LEAF_FREQUENCY,
    LEAF_HYPERVISOR, LEAF_HYPERVISOR_TIMING, LEAF_POWER_MANAGEMENT, LEAF_TSC_CRYSTAL, LEAF_VENDOR,
};
use std::collections::BTreeMap;
use std::fmt;

/// Recorded CPUID leaves: `(leaf, subleaf) -> [eax, ebx, ecx, edx]`. Absent
/// leaves read as zeros (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordedCpuid {
    leaves: BTreeMap<(u32, u32), [u32; 4]>,
}

impl RecordedCpuid {
    /// An empty recording (every leaf reads as zeros).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets one leaf.
    pub fn insert(&mut self, leaf: u32, subleaf: u32, regs: [u32; 4]) {
        self.leaves.insert((leaf, subleaf), regs);
    }

    /// Builder form of [`insert`](Self::insert).
    pub fn with(mut self, leaf: u32, subleaf: u32, regs: [u32; 4]) -> Self {
        self.insert(leaf, subleaf, regs);
        self
    }

    /// The recorded registers of a leaf, `None` when absent.
    pub fn get(&self, leaf: u32, subleaf: u32) -> Option<[u32; 4]> {
        self.leaves.get(&(leaf, subleaf)).copied()
    }

    /// What a CPUID of this leaf returns: the recorded registers or zeros.
    pub fn read(&self, leaf: u32, subleaf: u32) -> [u32; 4] {
        self.get(leaf, subleaf).unwrap_or([0; 4])
    }

    /// Number of recorded (leaf, subleaf) pairs.
    pub fn len(&self) -> usize {
        self.leaves.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// Records, from any reader, every leaf [`CpuidFacts::read`](super::CpuidFacts::read) looks at
    /// (leaves the CPU says exist only), so a recording of this machine
    /// decodes exactly like the machine.
    pub fn record<R: CpuIdReader>(reader: &R) -> RecordedCpuid {
        let mut rec = RecordedCpuid::new();
        let mut put = |leaf: u32, sub: u32| {
            let r = reader.cpuid2(leaf, sub);
            rec.insert(leaf, sub, [r.eax, r.ebx, r.ecx, r.edx]);
        };
        let max_basic = reader.cpuid2(LEAF_VENDOR, 0).eax;
        for leaf in [
            LEAF_VENDOR,
            LEAF_FEATURES,
            LEAF_EXTENDED_FEATURES,
            LEAF_TSC_CRYSTAL,
            LEAF_FREQUENCY,
        ] {
            if leaf <= max_basic {
                put(leaf, 0);
            }
        }
        let hypervisor_bit = max_basic >= LEAF_FEATURES && reader.cpuid2(LEAF_FEATURES, 0).ecx & (1 << 31) != 0;
        if hypervisor_bit {
            let max_hv = reader.cpuid2(LEAF_HYPERVISOR, 0).eax;
            // Hypervisor leaves 0x40000000..=max, capped at the timing leaf.
            let last = max_hv.clamp(LEAF_HYPERVISOR, LEAF_HYPERVISOR_TIMING);
            for leaf in LEAF_HYPERVISOR..=last {
                put(leaf, 0);
            }
        }
        let max_ext = reader.cpuid2(LEAF_EXTENDED_MAX, 0).eax;
        if max_ext >= LEAF_EXTENDED_MAX {
            for leaf in LEAF_EXTENDED_MAX..=max_ext.min(LEAF_POWER_MANAGEMENT) {
                put(leaf, 0);
            }
        }
        rec
    }
}

/// Prints the recording in `cpuid -r` format (readable by [`parse_dump`](super::parse_dump)).
impl fmt::Display for RecordedCpuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "CPU 0:")?;
        for (&(leaf, sub), r) in &self.leaves {
            writeln!(
                f,
                "   0x{leaf:08x} 0x{sub:02x}: eax=0x{:08x} ebx=0x{:08x} ecx=0x{:08x} edx=0x{:08x}",
                r[0], r[1], r[2], r[3]
            )?;
        }
        Ok(())
    }
}

impl CpuIdReader for &RecordedCpuid {
    fn cpuid2(&self, eax: u32, ecx: u32) -> CpuIdResult {
        let [a, b, c, d] = self.read(eax, ecx);
        CpuIdResult {
            eax: a,
            ebx: b,
            ecx: c,
            edx: d,
        }
    }
}

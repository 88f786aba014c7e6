//! The kernel's CPU list syntax ("0-3,5,7-8"), used by `cpu/online`,
//! `cpu/possible`, cgroup cpusets, `isolcpus=` and `taskset -c`: numbers or
//! inclusive ranges separated by commas. The kernel's stride form
//! (`0-7:2/4`) is not accepted; [`CpuList::parse`] says so. This is the one
//! parser and printer of the syntax in clockscope.

use crate::escape::escape_cut;
use serde::{Serialize, Serializer};
use std::fmt;
use std::ops::RangeInclusive;
use std::path::Path;

/// The largest CPU number accepted: 2^22 - 1, the highest bit of the widest
/// affinity mask `crosscpu::affinity` tries, and far above the kernel's own
/// limit (CONFIG_NR_CPUS is at most 8192), so a typo like `0-99999999` is an
/// error instead of a 100-million-CPU set.
pub const MAX_CPU: usize = (1 << 22) - 1;

/// The largest CPU number assumed when the kernel does not say
/// (`sys/devices/system/cpu/kernel_max` absent): 8191, what `kernel_max`
/// (NR_CPUS - 1) reads with `CONFIG_NR_CPUS=8192`, the x86-64 maximum
/// (`CONFIG_MAXSMP`, `NR_CPUS_RANGE_END` in arch/x86/Kconfig).
pub const DEFAULT_KERNEL_MAX_CPU: usize = 8191;

/// The largest CPU number this kernel can have and where that came from:
/// `kernel_max` (NR_CPUS - 1) under the root, else [`DEFAULT_KERNEL_MAX_CPU`].
/// A CPU list naming a higher CPU did not come from this kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuLimit {
    /// The largest CPU number.
    pub max_cpu: usize,
    /// Where it came from: the `kernel_max` path, or why the default applies.
    pub source: String,
}

impl CpuLimit {
    /// The limit when the kernel does not say (`why`: what was looked for).
    pub fn default_because(why: impl Into<String>) -> CpuLimit {
        CpuLimit {
            max_cpu: DEFAULT_KERNEL_MAX_CPU,
            source: format!(
                "assumed: NR_CPUS 8192, the x86-64 maximum (CONFIG_MAXSMP); {}",
                why.into()
            ),
        }
    }

    /// `Err` naming `path` when `list` has a CPU above [`Self::max_cpu`].
    /// Costs one comparison: the list is never expanded.
    pub fn check(&self, list: &CpuList, path: &Path) -> Result<(), String> {
        match list.highest() {
            Some(cpu) if cpu > self.max_cpu => Err(format!(
                "{}: CPU {cpu} is above the kernel's largest CPU number {} ({})",
                crate::escape::escape_untrusted(&path.to_string_lossy()),
                self.max_cpu,
                self.source
            )),
            _ => Ok(()),
        }
    }
}

/// Why a CPU list could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    /// An item between commas is empty (`0,,1`, a trailing comma).
    #[error("empty item in CPU list '{}'", escape_cut(.0, 100))]
    EmptyItem(String),
    /// An item is not a CPU number or range.
    #[error("'{}' in CPU list '{}' is not a CPU number or range (like 0-3)", escape_cut(.item, 100), escape_cut(.list, 100))]
    BadItem {
        /// The item as written.
        item: String,
        /// The whole list.
        list: String,
    },
    /// A range runs backwards (`3-1`).
    #[error("range '{}' in CPU list '{}' ends before it starts", escape_cut(.item, 100), escape_cut(.list, 100))]
    ReversedRange {
        /// The range as written.
        item: String,
        /// The whole list.
        list: String,
    },
    /// A CPU number above [`MAX_CPU`] (`usize::MAX` when it does not even fit).
    #[error("CPU {cpu} in CPU list '{}' is above the largest CPU number accepted ({MAX_CPU})", escape_cut(.list, 100))]
    TooLarge {
        /// The CPU number.
        cpu: usize,
        /// The whole list.
        list: String,
    },
}

/// A set of CPU numbers, kept as sorted, merged, inclusive ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuList {
    ranges: Vec<RangeInclusive<usize>>,
}

impl CpuList {
    /// Parses "0-3,5,7-8" (whitespace and a trailing newline allowed; an
    /// empty string is the empty set, as an unset cgroup v2 `cpuset.cpus`).
    /// Items may overlap and come in any order.
    pub fn parse(text: &str) -> Result<CpuList, CpuListError> {
        let list = text.trim();
        let mut ranges = Vec::new();
        if list.is_empty() {
            return Ok(CpuList { ranges });
        }
        for raw in list.split(',') {
            let item = raw.trim();
            if item.is_empty() {
                return Err(CpuListError::EmptyItem(list.to_string()));
            }
            let (a, b) = item.split_once('-').unwrap_or((item, item));
            let (lo, hi) = (parse_cpu(a, item, list)?, parse_cpu(b, item, list)?);
            if lo > hi {
                return Err(CpuListError::ReversedRange {
                    item: item.to_string(),
                    list: list.to_string(),
                });
            }
            ranges.push(lo..=hi);
        }
        Ok(CpuList::from_ranges(ranges))
    }

    fn from_ranges(mut ranges: Vec<RangeInclusive<usize>>) -> CpuList {
        ranges.sort_by_key(|r| *r.start());
        let mut merged: Vec<RangeInclusive<usize>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match merged.last_mut() {
                Some(last) if *r.start() <= last.end().saturating_add(1) => {
                    if r.end() > last.end() {
                        *last = *last.start()..=*r.end();
                    }
                }
                _ => merged.push(r),
            }
        }
        CpuList { ranges: merged }
    }

    /// The set of the given CPU numbers (any order, repeats allowed).
    pub fn from_cpus(cpus: impl IntoIterator<Item = usize>) -> CpuList {
        CpuList::from_ranges(cpus.into_iter().map(|c| c..=c).collect())
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.ranges.iter().map(|r| r.end() - r.start() + 1).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.ranges.iter().any(|r| r.contains(&cpu))
    }

    /// The CPU numbers in increasing order.
    pub fn cpus(&self) -> impl Iterator<Item = usize> + '_ {
        self.ranges.iter().flat_map(|r| r.clone())
    }

    /// The highest CPU number in the set (`None` when empty).
    pub fn highest(&self) -> Option<usize> {
        self.ranges.last().map(|r| *r.end())
    }

    /// The merged ranges in increasing order.
    pub fn ranges(&self) -> &[RangeInclusive<usize>] {
        &self.ranges
    }
}

/// One CPU number of `item` in `list`.
fn parse_cpu(s: &str, item: &str, list: &str) -> Result<usize, CpuListError> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CpuListError::BadItem {
            item: item.to_string(),
            list: list.to_string(),
        });
    }
    // All digits: the only parse failure left is overflow.
    let cpu = s.parse::<usize>().unwrap_or(usize::MAX);
    if cpu > MAX_CPU {
        return Err(CpuListError::TooLarge {
            cpu,
            list: list.to_string(),
        });
    }
    Ok(cpu)
}

/// The canonical kernel form: "0-3,5,7-8" (empty for the empty set).
impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if r.start() == r.end() {
                write!(f, "{}", r.start())?;
            } else {
                write!(f, "{}-{}", r.start(), r.end())?;
            }
        }
        Ok(())
    }
}

/// Serialised as the canonical list string, e.g. `"0-3,5"`.
impl Serialize for CpuList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The schema of what `Serialize` writes: the list string.
#[cfg(feature = "schemars")]
impl schemars::JsonSchema for CpuList {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CpuList".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A CPU list in the kernel's format, ascending ranges (e.g. \"0-3,5\"); empty for no CPU.",
            "type": "string",
            "pattern": "^([0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)?$"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_vec(s: &str) -> Result<Vec<usize>, CpuListError> {
        CpuList::parse(s).map(|l| l.cpus().collect())
    }

    fn format(cpus: &[usize]) -> String {
        CpuList::from_cpus(cpus.iter().copied()).to_string()
    }

    #[test]
    fn parses_and_prints_canonically() {
        let l = CpuList::parse("0-3,5,7-8\n").unwrap();
        assert_eq!(l.len(), 7);
        assert_eq!(l.cpus().collect::<Vec<_>>(), [0, 1, 2, 3, 5, 7, 8]);
        assert_eq!(l.to_string(), "0-3,5,7-8");
        assert!(l.contains(5) && !l.contains(4) && !l.contains(9));
        assert_eq!(l.highest(), Some(8));
        // Overlapping, adjacent and unsorted parts merge.
        assert_eq!(CpuList::parse("7, 4-5,0-2,3,5-6").unwrap().to_string(), "0-7");
        assert_eq!(CpuList::parse("0").unwrap().to_string(), "0");
        assert!(CpuList::parse("").unwrap().is_empty());
        assert!(CpuList::parse(" \n").unwrap().is_empty());
        assert_eq!(CpuList::parse("").unwrap().highest(), None);
        assert_eq!(CpuList::from_cpus([3, 1, 2, 9]).to_string(), "1-3,9");
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "a",
            "1-",
            "-1",
            "3-1",
            "1,,2",
            "0-7:2",
            "1.5",
            "99999999999",
            "0-4194304",
        ] {
            let e = CpuList::parse(bad).unwrap_err().to_string();
            assert!(e.contains("CPU"), "{bad}: {e}");
        }
        assert_eq!(parse_vec("4194303"), Ok(vec![MAX_CPU]));
    }

    #[test]
    fn lists_parse() {
        assert_eq!(parse_vec("0-3,8,10-11\n"), Ok(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_vec(" 5 "), Ok(vec![5]));
        assert_eq!(parse_vec("3,1,1-2"), Ok(vec![1, 2, 3]));
        assert_eq!(parse_vec(""), Ok(vec![]));
        assert!(matches!(parse_vec("0,,1"), Err(CpuListError::EmptyItem(_))));
        assert!(matches!(parse_vec("1,"), Err(CpuListError::EmptyItem(_))));
        assert!(matches!(parse_vec("a"), Err(CpuListError::BadItem { .. })));
        assert!(matches!(parse_vec("-1"), Err(CpuListError::BadItem { .. })));
        assert!(matches!(parse_vec("0-7:2/4"), Err(CpuListError::BadItem { .. })));
        assert!(matches!(parse_vec("3-1"), Err(CpuListError::ReversedRange { .. })));
        assert!(matches!(
            parse_vec("0-99999999"),
            Err(CpuListError::TooLarge { cpu: 99_999_999, .. })
        ));
        assert!(matches!(
            parse_vec("99999999999999999999999"),
            Err(CpuListError::TooLarge { .. })
        ));
    }

    #[test]
    fn lists_format() {
        assert_eq!(format(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format(&[4, 2, 3, 3]), "2-4");
        assert_eq!(format(&[7]), "7");
        assert_eq!(format(&[]), "");
        for s in ["0-3,8,10-11", "1", "0,2,4-5"] {
            assert_eq!(format(&parse_vec(s).unwrap()), s);
        }
    }
}

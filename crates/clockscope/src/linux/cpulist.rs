//! The kernel's CPU list syntax ("0-3,5,7-8"), used by `cpu/online`, cgroup
//! cpusets and `isolcpus=`.

use serde::{Serialize, Serializer};
use std::fmt;
use std::ops::RangeInclusive;

/// Largest CPU number accepted (the kernel's NR_CPUS tops out at 8192; this
/// leaves room without letting a garbage file describe billions of CPUs).
pub const MAX_CPU: u32 = 1 << 16;

/// A set of CPU numbers, kept as sorted, merged, inclusive ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuList {
    ranges: Vec<RangeInclusive<u32>>,
}

impl CpuList {
    /// Parses "0-3,5,7-8" (whitespace and a trailing newline allowed; an
    /// empty string is the empty set, as an unset cgroup v2 `cpuset.cpus`).
    pub fn parse(text: &str) -> Result<CpuList, String> {
        let text = text.trim();
        let mut ranges = Vec::new();
        if text.is_empty() {
            return Ok(CpuList { ranges });
        }
        for part in text.split(',') {
            let part = part.trim();
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (parse_cpu(a, text)?, parse_cpu(b, text)?),
                None => {
                    let c = parse_cpu(part, text)?;
                    (c, c)
                }
            };
            if lo > hi {
                return Err(format!("CPU range {part:?} runs backwards in CPU list {text:?}"));
            }
            ranges.push(lo..=hi);
        }
        Ok(CpuList::from_ranges(ranges))
    }

    fn from_ranges(mut ranges: Vec<RangeInclusive<u32>>) -> CpuList {
        ranges.sort_by_key(|r| *r.start());
        let mut merged: Vec<RangeInclusive<u32>> = Vec::with_capacity(ranges.len());
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

    /// The set of the given CPU numbers.
    pub fn from_cpus(cpus: impl IntoIterator<Item = u32>) -> CpuList {
        CpuList::from_ranges(cpus.into_iter().map(|c| c..=c).collect())
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.ranges.iter().map(|r| (r.end() - r.start()) as usize + 1).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: u32) -> bool {
        self.ranges.iter().any(|r| r.contains(&cpu))
    }

    /// The CPU numbers in increasing order.
    pub fn cpus(&self) -> impl Iterator<Item = u32> + '_ {
        self.ranges.iter().flat_map(|r| r.clone())
    }

    /// The merged ranges in increasing order.
    pub fn ranges(&self) -> &[RangeInclusive<u32>] {
        &self.ranges
    }
}

fn parse_cpu(s: &str, whole: &str) -> Result<u32, String> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("bad CPU number {s:?} in CPU list {whole:?}"));
    }
    match s.parse::<u32>() {
        Ok(c) if c <= MAX_CPU => Ok(c),
        _ => Err(format!("CPU number {s} in CPU list {whole:?} is above {MAX_CPU}")),
    }
}

/// The canonical kernel form: "0-3,5,7-8".
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_canonically() {
        let l = CpuList::parse("0-3,5,7-8\n").unwrap();
        assert_eq!(l.len(), 7);
        assert_eq!(l.cpus().collect::<Vec<_>>(), [0, 1, 2, 3, 5, 7, 8]);
        assert_eq!(l.to_string(), "0-3,5,7-8");
        assert!(l.contains(5) && !l.contains(4) && !l.contains(9));
        // Overlapping, adjacent and unsorted parts merge.
        assert_eq!(CpuList::parse("7, 4-5,0-2,3,5-6").unwrap().to_string(), "0-7");
        assert_eq!(CpuList::parse("0").unwrap().to_string(), "0");
        assert!(CpuList::parse("").unwrap().is_empty());
        assert!(CpuList::parse(" \n").unwrap().is_empty());
        assert_eq!(CpuList::from_cpus([3, 1, 2, 9]).to_string(), "1-3,9");
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["a", "1-", "-1", "3-1", "1,,2", "0-7:2", "1.5", "99999999999", "0-70000"] {
            let e = CpuList::parse(bad).unwrap_err();
            assert!(e.contains("CPU"), "{bad}: {e}");
        }
    }
}

//! CPU lists in the kernel's format (`0-3,8,10-11`), affinity bit masks, and
//! the context around them: which CPUs are online and what the cgroup cpuset
//! allows, read under a root path so tests use a fake tree.
//!
//! The list format is the one `/sys/devices/system/cpu/online`, `cpuset.cpus`
//! and `taskset -c` use: comma-separated CPU numbers or inclusive ranges. The
//! kernel's stride form (`0-7:2/4`) is not accepted; `parse_cpu_list` says so.

use std::fmt;
use std::path::{Path, PathBuf};

/// The largest CPU number accepted in a list: 2^22 - 1, far above the
/// kernel's own limit (CONFIG_NR_CPUS is at most 8192 on x86-64), so a typo
/// like `0-99999999` is an error instead of a 100-million-entry vector.
pub const MAX_CPU: usize = (1 << 22) - 1;

/// Why a CPU list could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    /// An item between commas is empty (`0,,1`, a trailing comma).
    #[error("empty item in CPU list '{0}'")]
    EmptyItem(String),
    /// An item is not a CPU number or range.
    #[error("'{item}' in CPU list '{list}' is not a CPU number or range (like 0-3)")]
    BadItem { item: String, list: String },
    /// A range runs backwards (`3-1`).
    #[error("range '{item}' in CPU list '{list}' ends before it starts")]
    ReversedRange { item: String, list: String },
    /// A CPU number above [`MAX_CPU`].
    #[error("CPU {cpu} in CPU list '{list}' is above the largest CPU number accepted ({MAX_CPU})")]
    TooLarge { cpu: usize, list: String },
}

/// Parses a kernel CPU list (`0-3,8`) into sorted, distinct CPU numbers.
/// Surrounding whitespace and a trailing newline are ignored; an empty list
/// (an empty cpuset file) is `Ok(vec![])`.
pub fn parse_cpu_list(list: &str) -> Result<Vec<usize>, CpuListError> {
    let trimmed = list.trim();
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    let mut cpus = Vec::new();
    for raw in trimmed.split(',') {
        let item = raw.trim();
        if item.is_empty() {
            return Err(CpuListError::EmptyItem(trimmed.to_string()));
        }
        let bad = || CpuListError::BadItem {
            item: item.to_string(),
            list: trimmed.to_string(),
        };
        let number = |s: &str| -> Result<usize, CpuListError> {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            let cpu: usize = s.parse().map_err(|_| CpuListError::TooLarge {
                cpu: usize::MAX,
                list: trimmed.to_string(),
            })?;
            if cpu > MAX_CPU {
                return Err(CpuListError::TooLarge {
                    cpu,
                    list: trimmed.to_string(),
                });
            }
            Ok(cpu)
        };
        match item.split_once('-') {
            None => cpus.push(number(item)?),
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                if hi < lo {
                    return Err(CpuListError::ReversedRange {
                        item: item.to_string(),
                        list: trimmed.to_string(),
                    });
                }
                cpus.extend(lo..=hi);
            }
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPU numbers as a kernel CPU list (`0-3,8`); the input need not be
/// sorted or distinct.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

/// Bits in one word of an affinity mask (the kernel's `unsigned long`).
pub const MASK_WORD_BITS: usize = 8 * std::mem::size_of::<libc::c_ulong>();

/// The CPUs set in an affinity mask of `unsigned long` words, as the kernel
/// lays it out (CPU `n` is bit `n % word_bits` of word `n / word_bits`). Only
/// the words given are read: iteration never runs past the mask.
pub fn mask_to_cpus(words: &[libc::c_ulong]) -> Vec<usize> {
    let mut cpus = Vec::new();
    for (w, &word) in words.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let bit = bits.trailing_zeros() as usize;
            cpus.push(w * MASK_WORD_BITS + bit);
            bits &= bits - 1;
        }
    }
    cpus
}

/// An affinity mask with exactly `cpus` set, at least `min_bits` wide (the
/// kernel rejects a mask narrower than its own CPU count, so callers pass
/// `CPU_SETSIZE` or the width `sched_getaffinity` accepted).
pub fn cpus_to_mask(cpus: &[usize], min_bits: usize) -> Vec<libc::c_ulong> {
    let top = cpus.iter().max().map_or(0, |&c| c + 1);
    let words = top.max(min_bits).div_ceil(MASK_WORD_BITS).max(1);
    let mut mask = vec![0 as libc::c_ulong; words];
    for &cpu in cpus {
        mask[cpu / MASK_WORD_BITS] |= 1 << (cpu % MASK_WORD_BITS);
    }
    mask
}

/// A CPU list read from a file: where, what it said, and what it means.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CpuListFile {
    /// The file read.
    pub file: PathBuf,
    /// Its content, trimmed.
    pub content: String,
    /// The CPUs it lists (`None` when the content is not a CPU list).
    pub cpus: Option<Vec<usize>>,
}

impl CpuListFile {
    fn read(file: PathBuf) -> Option<CpuListFile> {
        let content = std::fs::read_to_string(&file).ok()?.trim().to_string();
        let cpus = parse_cpu_list(&content).ok();
        Some(CpuListFile { file, content, cpus })
    }
}

impl fmt::Display for CpuListFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let content = if self.content.is_empty() {
            "(empty)"
        } else {
            &self.content
        };
        write!(f, "{content} ({})", self.file.display())
    }
}

/// `<root>/sys/devices/system/cpu/online`: the CPUs the kernel has online.
pub fn read_online_cpus(root: &Path) -> Option<CpuListFile> {
    CpuListFile::read(root.join("sys/devices/system/cpu/online"))
}

/// The cgroup cpuset of this process, when readable: from
/// `<root>/proc/self/cgroup`, the v1 `cpuset` hierarchy
/// (`sys/fs/cgroup/cpuset/<path>/cpuset.effective_cpus`, else `cpuset.cpus`)
/// or the v2 unified one (`sys/fs/cgroup/<path>/cpuset.cpus.effective`, else
/// `cpuset.cpus`). The first file that exists wins. This is context only: the
/// affinity mask already reflects the cpuset.
pub fn read_cgroup_cpuset(root: &Path) -> Option<CpuListFile> {
    let cgroups = std::fs::read_to_string(root.join("proc/self/cgroup")).ok()?;
    let mut candidates: Vec<PathBuf> = Vec::new();
    let mut unified: Vec<PathBuf> = Vec::new();
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "cpuset") {
            let dir = root.join("sys/fs/cgroup/cpuset").join(rel);
            candidates.push(dir.join("cpuset.effective_cpus"));
            candidates.push(dir.join("cpuset.cpus"));
        } else if id == "0" && controllers.is_empty() {
            let dir = root.join("sys/fs/cgroup").join(rel);
            unified.push(dir.join("cpuset.cpus.effective"));
            unified.push(dir.join("cpuset.cpus"));
        }
    }
    candidates.extend(unified);
    candidates.into_iter().find_map(CpuListFile::read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), Ok(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpu_list(" 5 "), Ok(vec![5]));
        assert_eq!(parse_cpu_list("3,1,1-2"), Ok(vec![1, 2, 3]));
        assert_eq!(parse_cpu_list(""), Ok(vec![]));
        assert!(matches!(parse_cpu_list("0,,1"), Err(CpuListError::EmptyItem(_))));
        assert!(matches!(parse_cpu_list("1,"), Err(CpuListError::EmptyItem(_))));
        assert!(matches!(parse_cpu_list("a"), Err(CpuListError::BadItem { .. })));
        assert!(matches!(parse_cpu_list("-1"), Err(CpuListError::BadItem { .. })));
        assert!(matches!(parse_cpu_list("0-7:2/4"), Err(CpuListError::BadItem { .. })));
        assert!(matches!(parse_cpu_list("3-1"), Err(CpuListError::ReversedRange { .. })));
        assert!(matches!(
            parse_cpu_list("0-99999999"),
            Err(CpuListError::TooLarge { cpu: 99_999_999, .. })
        ));
        assert!(matches!(
            parse_cpu_list("99999999999999999999999"),
            Err(CpuListError::TooLarge { .. })
        ));
    }

    #[test]
    fn lists_format() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[4, 2, 3, 3]), "2-4");
        assert_eq!(format_cpu_list(&[7]), "7");
        assert_eq!(format_cpu_list(&[]), "");
        for s in ["0-3,8,10-11", "1", "0,2,4-5"] {
            assert_eq!(format_cpu_list(&parse_cpu_list(s).unwrap()), s);
        }
    }

    #[test]
    fn masks_round_trip_across_words() {
        let cpus = vec![0, 1, MASK_WORD_BITS - 1, MASK_WORD_BITS, 3 * MASK_WORD_BITS + 5];
        let mask = cpus_to_mask(&cpus, 0);
        assert_eq!(mask.len(), 4);
        assert_eq!(mask_to_cpus(&mask), cpus);
        assert_eq!(cpus_to_mask(&[2], 1024).len(), 1024 / MASK_WORD_BITS);
        assert_eq!(mask_to_cpus(&[0b101]), vec![0, 2]);
        assert_eq!(mask_to_cpus(&[]), Vec::<usize>::new());
    }
}

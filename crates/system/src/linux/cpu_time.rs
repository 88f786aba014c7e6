//! What took CPU time away from this process: the hypervisor's steal time
//! (`/proc/stat`), the cgroup's CPU throttling (`cpu.stat`, v2 or v1) and
//! the involuntary context switches of the calling thread (`getrusage`).
//! Read before and after a measurement to tell the machine's noise from the
//! clock's cost ([`crate::interference`]).
//!
//! | source | file under root | unit |
//! |---|---|---|
//! | steal time | `proc/stat`, 8th value of the `cpuN` lines (of the CPUs asked for, or all), averaged per CPU | USER_HZ ticks ([`USER_HZ`]) |
//! | cgroup v2 throttling | `sys/fs/cgroup[/unified]/<cgroup>/cpu.stat`: `nr_periods`, `nr_throttled`, `throttled_usec` | us |
//! | cgroup v1 throttling | `sys/fs/cgroup/<cpu controller dir>/<cgroup>/cpu.stat`: `nr_periods`, `nr_throttled`, `throttled_time` | ns |
//!
//! `<cgroup>` comes from `proc/self/cgroup` (the `0::` line for v2, the line
//! whose controllers include `cpu` for v1). Only this process's own cgroup is
//! read: a quota set on an ancestor throttles it without showing here.
//! A v2 `cpu.stat` without `nr_throttled` (the cpu controller is not enabled
//! there, as in a hybrid layout whose cpu controller is on v1) is skipped.

use super::{read_text, Evidence};
use crate::escape::escape_untrusted;
use crate::input;
use serde::Serialize;
use std::path::{Component, Path, PathBuf};

/// Clock ticks per second of `/proc/stat`'s times. The kernel exports them
/// in USER_HZ, which is 100 on every architecture Linux supports but alpha
/// (`sysconf(_SC_CLK_TCK)`; include/asm-generic/param.h).
pub const USER_HZ: u64 = 100;

/// `/proc/stat`, relative to the root.
pub(crate) const PROC_STAT_FILE: &str = "proc/stat";

/// Steal time so far per CPU, ns: the steal column of the `cpuN` lines for
/// `cpus` when given (the CPUs the measuring thread may run on), else of
/// every `cpuN` line, averaged over those CPUs (the measuring thread runs on
/// one CPU at a time). One USER_HZ tick is 10 ms, so a run sees steal in
/// steps of 10 ms divided by the number of CPUs.
pub fn read_steal_ns(root: &Path, cpus: Option<&[usize]>) -> Evidence<u64> {
    let path = root.join(PROC_STAT_FILE);
    read_text(&path, &input::PROC_STAT).and_then(|t| {
        parse_steal_ns(&t, cpus).map_err(|e| format!("{}: {e}", escape_untrusted(&path.to_string_lossy())))
    })
}

/// Parses `/proc/stat` text (see [`read_steal_ns`]).
pub(crate) fn parse_steal_ns(text: &str, cpus: Option<&[usize]>) -> Result<u64, String> {
    let steal_of = |line: &str| -> Result<u64, String> {
        // name user nice system idle iowait irq softirq steal ...
        let v = line
            .split_whitespace()
            .nth(8)
            .ok_or_else(|| "a cpu line has no steal column (kernel < 2.6.11)".to_string())?;
        v.parse::<u64>()
            .map_err(|_| format!("steal value {:?} is not a number", escape_untrusted(v)))
    };
    let is_cpu_line = |name: &str| {
        name.strip_prefix("cpu")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let steals: Vec<u64> = match cpus {
        None => text
            .lines()
            .filter(|l| l.split_whitespace().next().is_some_and(is_cpu_line))
            .map(steal_of)
            .collect::<Result<_, _>>()?,
        Some(cpus) => cpus
            .iter()
            .map(|cpu| {
                let name = format!("cpu{cpu}");
                let line = text
                    .lines()
                    .find(|l| l.split_whitespace().next() == Some(name.as_str()))
                    .ok_or_else(|| format!("no '{name}' line"))?;
                steal_of(line)
            })
            .collect::<Result<_, _>>()?,
    };
    if steals.is_empty() {
        return Err("no 'cpuN' line".into());
    }
    let ticks = steals.iter().fold(0u64, |sum, &s| sum.saturating_add(s));
    Ok(ticks.saturating_mul(1_000_000_000 / USER_HZ) / steals.len() as u64)
}

/// Which cgroup hierarchy a `cpu.stat` belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CgroupVersion {
    /// cgroup v1: `cpu.stat` of the `cpu` controller's hierarchy.
    V1,
    /// cgroup v2: `cpu.stat` of the unified hierarchy.
    V2,
}

/// The CPU bandwidth counters of this process's cgroup, cumulative.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Throttling {
    /// The `cpu.stat` read.
    pub path: String,
    /// Which hierarchy the file belongs to (the field names differ).
    pub version: CgroupVersion,
    /// Enforcement periods that have elapsed (`nr_periods`; 0 without a quota).
    pub periods: u64,
    /// Periods in which the cgroup ran out of quota (`nr_throttled`).
    pub throttled_periods: u64,
    /// Total time its tasks were kept off the CPU, ns.
    pub throttled_ns: u64,
}

/// This process's cgroup CPU throttling counters: v2 first (`cpu.stat`
/// with `nr_throttled`), then v1's cpu controller.
pub(crate) fn read_throttling(root: &Path) -> Evidence<Throttling> {
    let cgroup_file = root.join("proc/self/cgroup");
    let text = match read_text(&cgroup_file, &input::KERNEL_VALUE) {
        Evidence::Found(t) => t,
        Evidence::Missing(r) => return Evidence::Missing(r),
        Evidence::Unreadable(r) => return Evidence::Unreadable(r),
    };
    let mut tried = Vec::new();
    let mut first_problem = None;
    for (rel, version) in cpu_stat_candidates(&text) {
        let path = root.join(&rel);
        match read_text(&path, &input::KERNEL_VALUE) {
            Evidence::Found(t) => match parse_cpu_stat(&t, version) {
                Some((periods, throttled_periods, throttled_ns)) => {
                    return Evidence::Found(Throttling {
                        path: escape_untrusted(&path.to_string_lossy()).into_owned(),
                        version,
                        periods,
                        throttled_periods,
                        throttled_ns,
                    })
                }
                None => tried.push(format!(
                    "{} (no throttling counters)",
                    escape_untrusted(&path.to_string_lossy())
                )),
            },
            Evidence::Unreadable(r) => {
                first_problem.get_or_insert(r);
            }
            Evidence::Missing(_) => tried.push(escape_untrusted(&path.to_string_lossy()).into_owned()),
        }
    }
    match first_problem {
        Some(p) => Evidence::Unreadable(p),
        None => Evidence::Missing(format!(
            "no cgroup cpu.stat with throttling counters (tried: {})",
            if tried.is_empty() {
                "none".to_string()
            } else {
                tried.join(", ")
            }
        )),
    }
}

/// The `cpu.stat` files that may hold this process's throttling counters,
/// relative to the root, from `/proc/self/cgroup` text. Paths with `..` or
/// other unsafe components are refused.
pub(crate) fn cpu_stat_candidates(proc_self_cgroup: &str) -> Vec<(PathBuf, CgroupVersion)> {
    let mut v2 = Vec::new();
    let mut v1 = Vec::new();
    for line in super::cgroup_lines(proc_self_cgroup) {
        let (controllers, rel) = (line.controllers, line.rel);
        if line.is_v2() {
            for base in ["sys/fs/cgroup", "sys/fs/cgroup/unified"] {
                v2.push((Path::new(base).join(rel).join("cpu.stat"), CgroupVersion::V2));
            }
        } else if line.has_controller("cpu") {
            // The v1 mount is named after its controllers ("cpu,cpuacct"),
            // often with "cpu" as a symlink to it.
            let mut dirs = vec![controllers.to_string(), "cpu".to_string(), "cpu,cpuacct".to_string()];
            dirs.dedup();
            for d in dirs {
                if Path::new(&d).components().all(|c| matches!(c, Component::Normal(_))) {
                    v1.push((
                        Path::new("sys/fs/cgroup").join(d).join(rel).join("cpu.stat"),
                        CgroupVersion::V1,
                    ));
                }
            }
        }
    }
    v2.extend(v1);
    let mut seen = std::collections::HashSet::new();
    v2.retain(|c| seen.insert(c.0.clone()));
    v2
}

/// `(nr_periods, nr_throttled, throttled ns)` from a `cpu.stat`, or `None`
/// when it has no throttling counters.
pub(crate) fn parse_cpu_stat(text: &str, version: CgroupVersion) -> Option<(u64, u64, u64)> {
    let value = |key: &str| {
        text.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(key))
                .then(|| w.next().and_then(|v| v.parse::<u64>().ok()))
                .flatten()
        })
    };
    let throttled_ns = match version {
        CgroupVersion::V2 => value("throttled_usec")?.saturating_mul(1000),
        CgroupVersion::V1 => value("throttled_time")?,
    };
    Some((value("nr_periods").unwrap_or(0), value("nr_throttled")?, throttled_ns))
}

/// Involuntary context switches of the calling thread so far
/// (`getrusage(RUSAGE_THREAD).ru_nivcsw`): the times the scheduler took the
/// CPU away from it. `None` where the platform has no per-thread usage.
pub(crate) fn thread_involuntary_switches() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::resource::{getrusage, UsageWho};
        getrusage(UsageWho::RUSAGE_THREAD)
            .ok()
            .and_then(|u| u64::try_from(u.involuntary_context_switches()).ok())
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  969520 919524 297806 116137 20799 0 2222 35323 0 0\n\
                        cpu0 484909 462419 143077 64200 8257 0 191 17550 0 0\n\
                        cpu1 484610 457104 154729 51937 12541 0 2031 17773 0 0\n\
                        intr 1 2 3\n";

    #[test]
    fn steal_from_total_and_per_cpu_lines() {
        // Averaged over the CPUs read (the total line is not double-counted).
        assert_eq!(parse_steal_ns(STAT, None), Ok((17_550 + 17_773) * 10_000_000 / 2));
        assert_eq!(parse_steal_ns(STAT, Some(&[1])), Ok(17_773 * 10_000_000));
        assert_eq!(
            parse_steal_ns(STAT, Some(&[0, 1])),
            Ok((17_550 + 17_773) * 10_000_000 / 2)
        );
        assert!(parse_steal_ns(STAT, Some(&[2])).unwrap_err().contains("cpu2"));
        assert!(parse_steal_ns("cpu0 1 2 3 4\n", None).unwrap_err().contains("steal"));
        assert!(parse_steal_ns("cpu 1 2 3 4 5 6 7 8\n", None)
            .unwrap_err()
            .contains("cpuN"));
    }

    #[test]
    fn cgroup_candidates_v2_then_v1_and_unsafe_paths_refused() {
        let text = "12:cpu,cpuacct:/kubepods/pod1\n3:cpuset:/x\n0::/kubepods/pod1\n";
        let c = cpu_stat_candidates(text);
        let paths: Vec<String> = c.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(
            paths,
            [
                "sys/fs/cgroup/kubepods/pod1/cpu.stat",
                "sys/fs/cgroup/unified/kubepods/pod1/cpu.stat",
                "sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/cpu.stat",
                "sys/fs/cgroup/cpu/kubepods/pod1/cpu.stat",
            ]
        );
        assert_eq!(c[0].1, CgroupVersion::V2);
        assert_eq!(c[2].1, CgroupVersion::V1);
        assert!(cpu_stat_candidates("1:cpu:/../../etc\n0::/a/../b\n").is_empty());
    }

    #[test]
    fn cpu_stat_units_per_version() {
        let v2 = "usage_usec 5\nnr_periods 32\nnr_throttled 31\nthrottled_usec 2300000\n";
        assert_eq!(parse_cpu_stat(v2, CgroupVersion::V2), Some((32, 31, 2_300_000_000)));
        let v1 = "nr_periods 10\nnr_throttled 4\nthrottled_time 123456789\n";
        assert_eq!(parse_cpu_stat(v1, CgroupVersion::V1), Some((10, 4, 123_456_789)));
        // A v2 cpu.stat of a cgroup whose cpu controller is elsewhere.
        assert_eq!(parse_cpu_stat("usage_usec 5\nuser_usec 3\n", CgroupVersion::V2), None);
    }

    #[test]
    fn this_thread_has_a_switch_count_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(thread_involuntary_switches().is_some());
        } else {
            assert_eq!(thread_involuntary_switches(), None);
        }
    }
}

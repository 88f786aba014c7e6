//! What the Linux kernel publishes about its clocks, read under a root path so
//! tests can use a fake tree.
//!
//! Every reader takes `root: &Path` (`/` in production, a temporary directory
//! in tests) and never panics: a file that is absent gives
//! [`Evidence::Missing`], one that cannot be read or parsed gives
//! [`Evidence::Unreadable`], both with the reason as text. Every file is read
//! through [`crate::input`]: a regular file only (a FIFO or device node put
//! in a `--root` tree is refused, not read for ever), at most 64 KiB for a
//! one-value file and 8 MiB for `/proc/cpuinfo` and a kernel log saved as
//! text; the live `/dev/kmsg` is bounded in records, bytes and time.
//!
//! | evidence | file under root |
//! |---|---|
//! | kernel release | `proc/sys/kernel/osrelease` |
//! | clocksource in use / available | `sys/devices/system/clocksource/clocksource0/{current,available}_clocksource` |
//! | CPU model, TSC flags, ARM ids | `proc/cpuinfo` ([`cpuinfo`]) |
//! | `tsc=`, `clocksource=` | `proc/cmdline` ([`cmdline`]) |
//! | kernel log (TSC kHz, instability) | `/dev/kmsg` ([`kmsg`]; a text file `dev/kmsg` under a test root) |
//! | online / possible CPUs | `sys/devices/system/cpu/{online,possible}` ([`cpulist`]) |
//! | the kernel's largest CPU number (NR_CPUS - 1) | `sys/devices/system/cpu/kernel_max`: a CPU list naming a higher CPU is an error ([`read_cpu_limit`]) |
//! | cgroup cpuset | `sys/fs/cgroup/<cgroup>/cpuset.cpus.effective` (v2) or `sys/fs/cgroup/cpuset/<cgroup>/cpuset.effective_cpus`, `cpuset.cpus` (v1), `<cgroup>` from `proc/self/cgroup` |
//! | hypervisor type (Xen) | `sys/hypervisor/type` |
//! | steal time, cgroup CPU throttling | `proc/stat`, `sys/fs/cgroup/.../cpu.stat` ([`cpu_time`]) |
//! | the CPU another process last ran on | `proc/<pid>/stat`, field 39 ([`process`]) |
//! | package, die, core, SMT siblings, NUMA node | `sys/devices/system/cpu/cpu<N>/topology/*`, `cpu<N>/node<M>` ([`topology`]) |
//!
//! [`perf`] reads the TSC-to-ns scale the kernel publishes in a perf_event
//! mmap page; it is a live system call, so it is not part of
//! [`LinuxEvidence::read`].

pub mod clocksource;
pub mod cmdline;
pub mod cpu_time;
pub mod cpuinfo;
pub mod cpulist;
pub mod identity;
pub mod kmsg;
pub mod ntp;
pub mod perf;
pub mod process;
#[cfg(feature = "testing")]
pub mod testing;
pub mod topology;
pub mod tsc_messages;

pub use cmdline::KernelCmdline;
pub use cpuinfo::{ArmCpuId, CpuInfo, TscFlags};
pub use cpulist::{CpuLimit, CpuList, CpuListError, DEFAULT_KERNEL_MAX_CPU};
pub use kmsg::{KernelKhzSource, KernelLog};
pub use topology::{read_topology, CpuPlace, Topology};

use crate::escape::escape_untrusted;
use crate::input::{self, InputLimit};
use serde::Serialize;
use std::path::{Component, Path, PathBuf};

/// One piece of evidence: the value, or why there is none.
///
/// Serialised as `{"found": value}`, `{"missing": "reason"}` or
/// `{"unreadable": "reason"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Evidence<T> {
    /// The kernel published it and it parsed.
    Found(T),
    /// The file does not exist (this kernel or platform does not publish it).
    Missing(String),
    /// The file exists but could not be read or parsed.
    Unreadable(String),
}

impl<T> Evidence<T> {
    /// The value, if found.
    pub fn found(&self) -> Option<&T> {
        let Evidence::Found(v) = self else { return None };
        Some(v)
    }

    /// Consumes into the value, if found.
    pub fn into_found(self) -> Option<T> {
        let Evidence::Found(v) = self else { return None };
        Some(v)
    }

    /// Why there is no value (`None` when found).
    pub fn reason(&self) -> Option<&str> {
        match self {
            Evidence::Found(_) => None,
            Evidence::Missing(r) | Evidence::Unreadable(r) => Some(r),
        }
    }

    /// Whether a value was found.
    pub fn is_found(&self) -> bool {
        matches!(self, Evidence::Found(_))
    }

    /// Maps the found value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Evidence<U> {
        self.and_then(|v| Ok(f(v)))
    }

    /// The value shown by `show`, or "not read (reason)" when there is none.
    pub fn describe(&self, show: impl Fn(&T) -> String) -> String {
        match self {
            Evidence::Found(v) => show(v),
            Evidence::Missing(r) | Evidence::Unreadable(r) => format!("not read ({r})"),
        }
    }

    /// Parses the found value; a parse error becomes `Unreadable`.
    pub fn and_then<U>(self, f: impl FnOnce(T) -> Result<U, String>) -> Evidence<U> {
        match self {
            Evidence::Found(v) => match f(v) {
                Ok(u) => Evidence::Found(u),
                Err(e) => Evidence::Unreadable(e),
            },
            Evidence::Missing(r) => Evidence::Missing(r),
            Evidence::Unreadable(r) => Evidence::Unreadable(r),
        }
    }
}

/// Reads a whole text file of at most `limit` bytes through
/// [`crate::input`] (regular files only), classifying failures: absent is
/// [`Evidence::Missing`], anything else (a FIFO or device, too large, not
/// UTF-8, permissions) [`Evidence::Unreadable`].
pub fn read_text(path: &Path, limit: &InputLimit) -> Evidence<String> {
    classify(path, input::read_text(path, limit))
}

/// [`read_text`] for binary files (ACPI tables, device-tree properties).
pub fn read_bytes(path: &Path, limit: &InputLimit) -> Evidence<Vec<u8>> {
    classify(path, input::read_bytes(path, limit))
}

/// The evidence of a read of `path`: absent is missing, any other error unreadable.
fn classify<T>(path: &Path, read: Result<T, input::InputError>) -> Evidence<T> {
    match read {
        Ok(v) => Evidence::Found(v),
        Err(e) if e.is_not_found() => {
            Evidence::Missing(format!("{}: not present", escape_untrusted(&path.to_string_lossy())))
        }
        Err(e) => Evidence::Unreadable(e.to_string()),
    }
}

/// Reads `rel` under `root` (a one-value file, [`input::KERNEL_VALUE`]) and
/// parses it, naming the file in parse errors.
fn read_parsed<T>(root: &Path, rel: &str, parse: impl FnOnce(&str) -> Result<T, String>) -> Evidence<T> {
    read_parsed_limited(root, rel, &input::KERNEL_VALUE, parse)
}

/// [`read_parsed`] with another size cap.
fn read_parsed_limited<T>(
    root: &Path,
    rel: &str,
    limit: &InputLimit,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Evidence<T> {
    let path = root.join(rel);
    read_text(&path, limit)
        .and_then(|text| parse(&text).map_err(|e| format!("{}: {e}", escape_untrusted(&path.to_string_lossy()))))
}

/// A one-word sysfs/procfs value (trimmed; empty is an error).
fn one_line(text: &str) -> Result<String, String> {
    let t = text.trim();
    if t.is_empty() {
        Err("empty".to_string())
    } else if t.lines().count() > 1 || t.len() > 256 {
        Err(format!("expected one short line, got {} bytes", t.len()))
    } else {
        Ok(t.to_string())
    }
}

/// The kernel release (`uname -r`).
pub(crate) fn read_kernel_release(root: &Path) -> Evidence<String> {
    read_parsed(root, "proc/sys/kernel/osrelease", one_line)
}

const CLOCKSOURCE_DIR: &str = "sys/devices/system/clocksource/clocksource0";

/// The clocksource the kernel's timekeeping uses now (`tsc`, `kvm-clock`, `hpet`, ...).
pub fn read_current_clocksource(root: &Path) -> Evidence<String> {
    read_parsed(root, &format!("{CLOCKSOURCE_DIR}/current_clocksource"), |t| {
        let v = one_line(t)?;
        if v.split_whitespace().count() != 1 {
            return Err(format!("expected one clocksource name, got {v:?}"));
        }
        Ok(v)
    })
}

/// The clocksources the kernel could switch to (a TSC marked unstable is
/// removed from this list): any number (the read is bounded), each once.
pub fn read_available_clocksources(root: &Path) -> Evidence<Vec<String>> {
    read_parsed(root, &format!("{CLOCKSOURCE_DIR}/available_clocksource"), |t| {
        if t.split_whitespace().any(|n| n.len() > 64 || !n.is_ascii()) {
            return Err("not a list of clocksource names".to_string());
        }
        let mut seen = std::collections::HashSet::new();
        Ok(t.split_whitespace()
            .filter(|n| seen.insert(*n))
            .map(str::to_string)
            .collect())
    })
}

/// `/proc/cpuinfo`.
pub(crate) fn read_cpuinfo(root: &Path) -> Evidence<CpuInfo> {
    read_parsed_limited(root, CPUINFO_FILE, &input::CPUINFO, CpuInfo::parse)
}

/// `/proc/cpuinfo` under the root.
pub(crate) const CPUINFO_FILE: &str = "proc/cpuinfo";

/// `/proc/cpuinfo` as text (the ARM readers parse it their own way).
pub(crate) fn read_cpuinfo_text(root: &Path) -> Evidence<String> {
    read_text(&root.join(CPUINFO_FILE), &input::CPUINFO)
}

/// `/proc/cmdline`.
pub(crate) fn read_cmdline(root: &Path) -> Evidence<KernelCmdline> {
    read_parsed(root, "proc/cmdline", |t| Ok(KernelCmdline::parse(t)))
}

/// The online CPUs' file, under the root.
pub(crate) const CPUS_ONLINE_FILE: &str = "sys/devices/system/cpu/online";
/// The possible CPUs' file, under the root: `0-<nr_cpu_ids - 1>`, the CPUs
/// this boot could ever bring online.
pub(crate) const CPUS_POSSIBLE_FILE: &str = "sys/devices/system/cpu/possible";

/// The kernel's largest CPU number (NR_CPUS - 1), under the root.
pub(crate) const KERNEL_MAX_FILE: &str = "sys/devices/system/cpu/kernel_max";

/// The largest CPU number of this kernel: `kernel_max` under `root`, else
/// (absent, unreadable, not a number up to [`cpulist::MAX_CPU`])
/// [`cpulist::DEFAULT_KERNEL_MAX_CPU`], saying why.
pub fn read_cpu_limit(root: &Path) -> CpuLimit {
    let path = root.join(KERNEL_MAX_FILE);
    let shown = escape_untrusted(&path.to_string_lossy()).into_owned();
    let parsed = read_parsed(root, KERNEL_MAX_FILE, |t| {
        t.trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| n <= cpulist::MAX_CPU)
            .ok_or_else(|| format!("not a CPU number up to {}", cpulist::MAX_CPU))
    });
    match parsed {
        Evidence::Found(max_cpu) => CpuLimit { max_cpu, source: shown },
        Evidence::Missing(_) => CpuLimit::default_because(format!("{shown} is absent")),
        Evidence::Unreadable(why) => CpuLimit::default_because(format!("not read: {why}")),
    }
}

/// Reads and parses a CPU list file `rel` under `root`; the result names the
/// file. A CPU above the kernel's largest ([`read_cpu_limit`]) is an error.
fn read_cpu_list_file(root: &Path, rel: &str, limit: &CpuLimit) -> Evidence<CpuSet> {
    let path = root.join(rel);
    read_parsed(root, rel, |t| CpuList::parse(t).map_err(|e| e.to_string()))
        .and_then(|cpus| limit.check(&cpus, &path).map(|()| cpus))
        .map(|cpus| CpuSet {
            path: path.display().to_string(),
            cpus,
        })
}

/// The online CPUs (`sys/devices/system/cpu/online`).
pub(crate) fn read_cpus_online(root: &Path) -> Evidence<CpuList> {
    read_cpus_online_file(root).map(|set| set.cpus)
}

/// The online CPUs and the file read (`<root>/sys/devices/system/cpu/online`).
pub fn read_cpus_online_file(root: &Path) -> Evidence<CpuSet> {
    read_cpu_list_file(root, CPUS_ONLINE_FILE, &read_cpu_limit(root))
}

/// The possible CPUs (`sys/devices/system/cpu/possible`); its highest CPU
/// plus one is the kernel's `nr_cpu_ids`, the width of its CPU masks.
pub fn read_cpus_possible(root: &Path) -> Evidence<CpuList> {
    read_cpu_list_file(root, CPUS_POSSIBLE_FILE, &read_cpu_limit(root)).map(|set| set.cpus)
}

/// The hypervisor type the kernel found (`xen`; absent elsewhere).
pub(crate) fn read_hypervisor_type(root: &Path) -> Evidence<String> {
    read_parsed(root, "sys/hypervisor/type", one_line)
}

pub use kmsg::{read_kernel_log, read_kernel_log_text, KernelLogText};

/// A set of CPUs and the CPU list file that said so: the cgroup cpuset this
/// process may run on ([`read_cpuset`]) or the online CPUs
/// ([`read_cpus_online_file`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CpuSet {
    /// The file read (under the root).
    pub path: String,
    /// The CPUs.
    pub cpus: CpuList,
}

/// `0-3 (/sys/devices/system/cpu/online)`; `(empty) (path)` for no CPUs.
impl std::fmt::Display for CpuSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.cpus.is_empty() {
            write!(f, "(empty) ({})", self.path)
        } else {
            write!(f, "{} ({})", self.cpus, self.path)
        }
    }
}

/// The cgroup cpuset: cgroup v2 `cpuset.cpus.effective`, else v1
/// `cpuset.effective_cpus` / `cpuset.cpus`, first in this process's own cgroup
/// (from `proc/self/cgroup`), then at the hierarchy's root. An empty list
/// counts as absent (an unset v2 `cpuset.cpus`).
pub fn read_cpuset(root: &Path) -> Evidence<CpuSet> {
    let (v2_path, v1_path) = match read_text(&root.join("proc/self/cgroup"), &input::KERNEL_VALUE) {
        Evidence::Found(t) => own_cgroups(&t),
        _ => (None, None),
    };
    let mut candidates: Vec<PathBuf> = Vec::new();
    let base_v2 = Path::new("sys/fs/cgroup");
    let base_v1 = Path::new("sys/fs/cgroup/cpuset");
    if let Some(p) = &v2_path {
        candidates.push(base_v2.join(p).join("cpuset.cpus.effective"));
    }
    candidates.push(base_v2.join("cpuset.cpus.effective"));
    for file in ["cpuset.effective_cpus", "cpuset.cpus"] {
        if let Some(p) = &v1_path {
            candidates.push(base_v1.join(p).join(file));
        }
        candidates.push(base_v1.join(file));
    }
    candidates.dedup();
    let limit = read_cpu_limit(root);
    let mut first_problem: Option<String> = None;
    for rel in &candidates {
        match read_cpu_list_file(root, &rel.to_string_lossy(), &limit) {
            Evidence::Found(set) if !set.cpus.is_empty() => return Evidence::Found(set),
            Evidence::Unreadable(r) => {
                first_problem.get_or_insert(r);
            }
            _ => {}
        }
    }
    match first_problem {
        Some(p) => Evidence::Unreadable(p),
        None => Evidence::Missing(format!(
            "{}: no cgroup cpuset file (cpuset.cpus.effective, cpuset.effective_cpus, cpuset.cpus)",
            escape_untrusted(&root.join("sys/fs/cgroup").to_string_lossy())
        )),
    }
}

/// One line of `/proc/self/cgroup` (`hierarchy-id:controllers:path`), its
/// path relative to the cgroup mount.
pub(crate) struct CgroupLine<'a> {
    pub id: &'a str,
    pub controllers: &'a str,
    pub rel: &'a Path,
}

impl CgroupLine<'_> {
    /// The cgroup v2 (unified) hierarchy's line: `0::/path`.
    pub fn is_v2(&self) -> bool {
        self.id == "0" && self.controllers.is_empty()
    }

    /// Whether this v1 hierarchy carries the controller `name`.
    pub fn has_controller(&self, name: &str) -> bool {
        self.controllers.split(',').any(|c| c == name)
    }
}

/// The lines of `/proc/self/cgroup` text; a line whose path has `..` or
/// other unsafe components is left out (the path is joined under a root).
pub(crate) fn cgroup_lines(text: &str) -> impl Iterator<Item = CgroupLine<'_>> {
    text.lines().filter_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let rel = Path::new(path.trim().trim_start_matches('/'));
        rel.components()
            .all(|c| matches!(c, Component::Normal(_)))
            .then_some(CgroupLine { id, controllers, rel })
    })
}

/// From `/proc/self/cgroup`: this process's v2 cgroup path and v1 cpuset
/// path, relative, with `..` and other unsafe components refused.
fn own_cgroups(text: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let mut v2 = None;
    let mut v1 = None;
    for line in cgroup_lines(text).filter(|l| !l.rel.as_os_str().is_empty()) {
        if line.is_v2() {
            v2 = Some(line.rel.to_path_buf());
        } else if line.has_controller("cpuset") {
            v1 = Some(line.rel.to_path_buf());
        }
    }
    (v2, v1)
}

/// Everything the kernel publishes about its clocks and CPUs.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct LinuxEvidence {
    /// The root the files were read under (`/` in production).
    pub root: String,
    /// `/proc/sys/kernel/osrelease`.
    pub kernel_release: Evidence<String>,
    /// `/sys/devices/system/clocksource/clocksource0/current_clocksource`.
    pub current_clocksource: Evidence<String>,
    /// `/sys/devices/system/clocksource/clocksource0/available_clocksource`, split on spaces.
    pub available_clocksources: Evidence<Vec<String>>,
    /// `/proc/cpuinfo`, the fields that matter here.
    pub cpuinfo: Evidence<CpuInfo>,
    /// `/proc/cmdline`: the boot options about clocks.
    pub cmdline: Evidence<KernelCmdline>,
    /// The kernel log's TSC and clocksource lines (`/dev/kmsg`, or a saved log under the root).
    pub kernel_log: Evidence<KernelLog>,
    /// `/sys/devices/system/cpu/online`.
    pub cpus_online: Evidence<CpuList>,
    /// The cgroup cpuset this process may run on ([`read_cpuset`]).
    pub cpuset: Evidence<CpuSet>,
    /// `/sys/hypervisor/type` (Xen), when present.
    pub hypervisor_type: Evidence<String>,
}

impl LinuxEvidence {
    /// Reads every piece of evidence under `root`.
    pub fn read(root: &Path) -> LinuxEvidence {
        LinuxEvidence {
            root: root.display().to_string(),
            kernel_release: read_kernel_release(root),
            current_clocksource: read_current_clocksource(root),
            available_clocksources: read_available_clocksources(root),
            cpuinfo: read_cpuinfo(root),
            cmdline: read_cmdline(root),
            kernel_log: read_kernel_log(root),
            cpus_online: read_cpus_online(root),
            cpuset: read_cpuset(root),
            hypervisor_type: read_hypervisor_type(root),
        }
    }

    /// Whether `tsc` is among the available clocksources (the kernel removes
    /// it once it has marked the TSC unstable).
    pub fn tsc_available(&self) -> Option<bool> {
        self.available_clocksources
            .found()
            .map(|v| v.iter().any(|c| c == "tsc"))
    }

    /// The TSC frequency the kernel's log reports, and which message said it.
    pub fn kernel_tsc_khz(&self) -> Option<(u64, KernelKhzSource)> {
        self.kernel_log.found().and_then(KernelLog::kernel_tsc_khz)
    }
}

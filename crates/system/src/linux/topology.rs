//! Where each CPU sits: package (socket), die, core, SMT siblings and NUMA
//! node, from `<root>/sys/devices/system/cpu/cpu<N>/topology/` and the
//! `cpu<N>/node<M>` links. `clockscope cross-cpu` uses it to choose which CPU
//! pairs to compare (clocks drift apart across packages and dies, not
//! between the threads of one core).
//!
//! | field | file under `sys/devices/system/cpu/cpu<N>/` | when absent |
//! |---|---|---|
//! | package | `topology/physical_package_id` | the whole topology is not read |
//! | die | `topology/die_id` (Linux 5.5+) | one die per package (die 0) |
//! | core | `topology/core_id` (unique within the package) | the CPU is its own core |
//! | SMT siblings | `topology/core_cpus_list`, else `topology/thread_siblings_list` | the CPU alone |
//! | NUMA node | a `node<M>` entry in `cpu<N>/` | `null` |
//!
//! Every file goes through [`super::read_text`] (regular files only, 64 KiB);
//! directory listings are bounded to [`MAX_DIR_ENTRIES`] entries. A siblings
//! list is checked before it is expanded: a CPU above the kernel's largest
//! ([`super::read_cpu_limit`]) or more than [`MAX_SMT_THREADS`] CPUs is an
//! error naming the file, so a hostile tree (`0-4194303` in every file)
//! costs a comparison, not gigabytes.

use super::{read_cpu_limit, read_text, CpuLimit, CpuList, Evidence};
use crate::escape::escape_untrusted;
use crate::input;
use serde::Serialize;
use std::path::Path;

/// The CPU directories' parent, under the root.
pub const CPU_DIR: &str = "sys/devices/system/cpu";
/// At most this many entries of a `cpu<N>/` directory are looked at for its
/// `node<M>` link (a real one has about 20).
pub const MAX_DIR_ENTRIES: usize = 1024;
/// The most CPUs a siblings list may name: 256, 32 times the most threads
/// per core of any CPU (8: POWER8 and later in SMT8 mode, SPARC M7); a
/// longer list does not describe one core.
pub const MAX_SMT_THREADS: usize = 256;

/// Where one CPU sits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CpuPlace {
    /// The logical CPU number.
    pub cpu: usize,
    /// `physical_package_id` (the socket; -1 on some platforms without one).
    pub package: i32,
    /// `die_id` within the package; 0 when the kernel does not publish it.
    pub die: i32,
    /// `core_id` within the package; `None` when absent (the CPU counts as its own core).
    pub core: Option<i32>,
    /// The CPUs sharing this CPU's core (itself included): `core_cpus_list`
    /// or `thread_siblings_list`.
    pub smt_siblings: Vec<usize>,
    /// The NUMA node (`cpu<N>/node<M>`); `None` when there is no such entry.
    pub numa_node: Option<u32>,
}

/// The places of a set of CPUs, and what was absent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Topology {
    /// One entry per CPU asked for, ascending.
    pub cpus: Vec<CpuPlace>,
    /// Files that were absent and the fallback used (one line each, at most one per kind).
    pub notes: Vec<String>,
}

impl Topology {
    /// The place of `cpu`, if it was read.
    pub fn place(&self, cpu: usize) -> Option<&CpuPlace> {
        self.cpus
            .binary_search_by_key(&cpu, |p| p.cpu)
            .ok()
            .map(|i| &self.cpus[i])
    }

    /// The distinct packages, ascending.
    pub fn packages(&self) -> Vec<i32> {
        let mut p: Vec<i32> = self.cpus.iter().map(|c| c.package).collect();
        p.sort_unstable();
        p.dedup();
        p
    }

    /// The distinct (package, die) pairs, ascending.
    pub fn dies(&self) -> Vec<(i32, i32)> {
        let mut d: Vec<(i32, i32)> = self.cpus.iter().map(|c| (c.package, c.die)).collect();
        d.sort_unstable();
        d.dedup();
        d
    }

    /// Whether `a` and `b` are SMT siblings (two threads of one core).
    pub fn are_smt_siblings(&self, a: usize, b: usize) -> bool {
        a != b && self.place(a).is_some_and(|p| p.smt_siblings.contains(&b))
    }

    /// `2 packages, 4 dies, 96 cores, 192 CPUs` for the CPUs read.
    pub fn describe(&self) -> String {
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let mut cores: Vec<(i32, i32, usize)> = self
            .cpus
            .iter()
            .map(|c| {
                (
                    c.package,
                    c.core.unwrap_or(-1),
                    c.smt_siblings.first().copied().unwrap_or(c.cpu),
                )
            })
            .collect();
        cores.sort_unstable();
        cores.dedup_by(|x, y| x.0 == y.0 && x.1 == y.1 && (x.1 >= 0 || x.2 == y.2));
        format!(
            "{}, {}, {}, {}",
            plural(self.packages().len(), "package"),
            plural(self.dies().len(), "die"),
            plural(cores.len(), "core"),
            plural(self.cpus.len(), "CPU")
        )
    }
}

fn parse_id(text: &str) -> Result<i32, String> {
    let t = text.trim();
    t.parse::<i32>()
        .map_err(|_| format!("not an integer: {:?}", escape_untrusted(t)))
}

/// Reads one id file; `Ok(None)` when it is absent.
fn read_id(root: &Path, rel: &str) -> Result<Option<i32>, String> {
    match super::read_parsed(root, rel, parse_id) {
        Evidence::Found(id) => Ok(Some(id)),
        Evidence::Missing(_) => Ok(None),
        Evidence::Unreadable(r) => Err(r),
    }
}

/// Reads the first present CPU list of `names` under `dir`; `Ok(None)` when
/// none is. Checked against `limit` and [`MAX_SMT_THREADS`] before it is
/// expanded.
fn read_siblings(root: &Path, dir: &str, names: &[&str], limit: &CpuLimit) -> Result<Option<Vec<usize>>, String> {
    for name in names {
        let path = root.join(format!("{dir}/{name}"));
        match read_text(&path, &input::KERNEL_VALUE) {
            Evidence::Found(t) => {
                let shown = || escape_untrusted(&path.to_string_lossy()).into_owned();
                let list = CpuList::parse(&t).map_err(|e| format!("{}: {e}", shown()))?;
                limit.check(&list, &path)?;
                if list.len() > MAX_SMT_THREADS {
                    return Err(format!(
                        "{}: names {} CPUs, more than the {MAX_SMT_THREADS} threads one core may have",
                        shown(),
                        list.len()
                    ));
                }
                return Ok(Some(list.cpus().collect()));
            }
            Evidence::Missing(_) => {}
            Evidence::Unreadable(r) => return Err(r),
        }
    }
    Ok(None)
}

/// The NUMA node from a `node<M>` entry of `cpu<N>/`, looking at no more
/// than [`MAX_DIR_ENTRIES`] entries.
fn read_numa_node(root: &Path, cpu: usize) -> Option<u32> {
    let dir = std::fs::read_dir(root.join(format!("{CPU_DIR}/cpu{cpu}"))).ok()?;
    dir.take(MAX_DIR_ENTRIES).flatten().find_map(|e| {
        let name = e.file_name();
        let digits = name.to_str()?.strip_prefix("node")?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    })
}

/// Reads the topology of `cpus` under `root`. Missing when no CPU publishes a
/// `physical_package_id` (no sysfs, or a kernel without topology);
/// Unreadable when a file exists but does not parse, or some CPUs publish a
/// package and others do not. Absent die, core, siblings or node files fall
/// back as the module documentation says, each noted once.
pub fn read_topology(root: &Path, cpus: &[usize]) -> Evidence<Topology> {
    let mut cpus: Vec<usize> = cpus.to_vec();
    cpus.sort_unstable();
    cpus.dedup();
    let limit = read_cpu_limit(root);
    let mut places = Vec::with_capacity(cpus.len());
    let mut without_package = Vec::new();
    let (mut no_die, mut no_core, mut no_siblings, mut no_node) = (false, false, false, false);
    let mut read_places = || -> Result<(), String> {
        for &cpu in &cpus {
            let dir = format!("{CPU_DIR}/cpu{cpu}/topology");
            let Some(package) = read_id(root, &format!("{dir}/physical_package_id"))? else {
                without_package.push(cpu);
                continue;
            };
            let die = read_id(root, &format!("{dir}/die_id"))?;
            no_die |= die.is_none();
            let core = read_id(root, &format!("{dir}/core_id"))?;
            no_core |= core.is_none();
            let siblings = read_siblings(root, &dir, &["core_cpus_list", "thread_siblings_list"], &limit)?;
            no_siblings |= siblings.is_none();
            let mut smt_siblings = siblings.unwrap_or_default();
            if !smt_siblings.contains(&cpu) {
                smt_siblings.push(cpu);
                smt_siblings.sort_unstable();
            }
            let numa_node = read_numa_node(root, cpu);
            no_node |= numa_node.is_none();
            places.push(CpuPlace {
                cpu,
                package,
                die: die.unwrap_or(0),
                core,
                smt_siblings,
                numa_node,
            });
        }
        Ok(())
    };
    if let Err(e) = read_places() {
        return Evidence::Unreadable(e);
    }
    let cpu_dir = escape_untrusted(&root.join(CPU_DIR).to_string_lossy()).to_string();
    if places.is_empty() {
        return Evidence::Missing(format!("{cpu_dir}: no cpu<N>/topology/physical_package_id"));
    }
    if !without_package.is_empty() {
        return Evidence::Unreadable(format!(
            "{cpu_dir}: CPU {} publish no topology/physical_package_id while others do",
            CpuList::from_cpus(without_package)
        ));
    }
    let mut notes = Vec::new();
    if no_die {
        notes.push("die_id absent (kernel before 5.5 or no dies): one die per package".to_string());
    }
    if no_core {
        notes.push("core_id absent: each CPU counts as its own core".to_string());
    }
    if no_siblings {
        notes.push("core_cpus_list and thread_siblings_list absent: no SMT siblings known".to_string());
    }
    if no_node {
        notes.push("no cpu<N>/node<M> entry for some CPUs: NUMA node unknown".to_string());
    }
    Evidence::Found(Topology { cpus: places, notes })
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use super::*;
    use crate::linux::testing::{FakeHost, FakeRoot};

    #[test]
    fn two_socket_smt_host() {
        let root = FakeRoot::new();
        let host = FakeHost::new(2, 1, 48, 2);
        host.write(&root);
        let cpus: Vec<usize> = (0..192).collect();
        let t = read_topology(root.path(), &cpus).into_found().unwrap();
        assert_eq!(t.cpus.len(), 192);
        assert_eq!(t.packages(), vec![0, 1]);
        assert_eq!(t.describe(), "2 packages, 2 dies, 96 cores, 192 CPUs");
        // Kernel numbering: first threads of socket 0, of socket 1, then the second threads.
        assert_eq!(t.place(50).unwrap().package, 1);
        assert_eq!(t.place(100).unwrap().package, 0);
        assert!(t.are_smt_siblings(3, 99));
        assert!(!t.are_smt_siblings(3, 4));
        assert_eq!(t.place(150).unwrap().numa_node, Some(1));
        assert_eq!(t.notes, Vec::<String>::new());
    }

    #[test]
    fn absent_files_degrade() {
        let root = FakeRoot::new();
        for cpu in 0..4 {
            root.write(&format!("{CPU_DIR}/cpu{cpu}/topology/physical_package_id"), "0\n");
        }
        let t = read_topology(root.path(), &[0, 1, 2, 3]).into_found().unwrap();
        assert_eq!(t.dies(), vec![(0, 0)]);
        assert_eq!(t.place(2).unwrap().smt_siblings, vec![2]);
        assert_eq!(t.place(2).unwrap().core, None);
        assert_eq!(t.notes.len(), 4, "{:?}", t.notes);
        assert_eq!(t.describe(), "1 package, 1 die, 4 cores, 4 CPUs");

        assert!(matches!(read_topology(root.path(), &[7]), Evidence::Missing(_)));
        assert!(matches!(read_topology(root.path(), &[0, 7]), Evidence::Unreadable(_)));
        root.write(&format!("{CPU_DIR}/cpu1/topology/die_id"), "x\n");
        let e = read_topology(root.path(), &[0, 1]);
        assert!(e.reason().unwrap().contains("not an integer"), "{e:?}");
    }
}

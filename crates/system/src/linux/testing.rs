//! A fake root directory for tests: build a sysfs/procfs tree in a temporary
//! directory and pass [`FakeRoot::path`] to the `linux` readers. Enabled by
//! the `testing` cargo feature. [`LoggedClocksource`] is the fake
//! clocksource control beside it.

use super::clocksource::{ClocksourceControl, SwitchError, SysfsClocksource};
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use tempfile::TempDir;

/// A temporary directory standing in for `/`, removed on drop.
pub struct FakeRoot {
    dir: TempDir,
}

impl FakeRoot {
    /// An empty fake root. Panics if no temporary directory can be made
    /// (this is test support).
    pub fn new() -> Self {
        FakeRoot {
            dir: tempfile::Builder::new()
                .prefix("clockscope-fakeroot-")
                .tempdir()
                .expect("create a temporary directory for a fake root"),
        }
    }

    /// Writes `content` to `rel` (e.g. `proc/cpuinfo`), creating parent
    /// directories. Panics on an absolute or `..` path or an I/O error.
    pub fn write(&self, rel: &str, content: &str) -> &Self {
        let rel_path = Path::new(rel);
        assert!(
            rel_path
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_))),
            "FakeRoot::write needs a relative path without '..': {rel}"
        );
        let path = self.dir.path().join(rel_path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create fake root directories");
        }
        std::fs::write(&path, content).expect("write a fake root file");
        self
    }

    /// The root to pass to the readers.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Default for FakeRoot {
    fn default() -> Self {
        FakeRoot::new()
    }
}

/// A simulated host's CPU topology for fake sysfs trees: `packages` x
/// `dies` per package x `cores` per die x `threads` per core, numbered as
/// Linux numbers x86 CPUs: the first thread of every core of package 0, then
/// of package 1, ..., then the second threads in the same order (so SMT
/// siblings are `cores_total` apart). Each package is its own NUMA node.
#[derive(Clone, Copy, Debug)]
pub struct FakeHost {
    /// Sockets (physical packages), each its own NUMA node.
    pub packages: usize,
    /// Dies per package.
    pub dies: usize,
    /// Cores per die.
    pub cores: usize,
    /// Hardware threads per core (2 with SMT).
    pub threads: usize,
}

impl FakeHost {
    /// See the type.
    pub fn new(packages: usize, dies: usize, cores: usize, threads: usize) -> Self {
        FakeHost {
            packages,
            dies,
            cores,
            threads,
        }
    }

    /// How many CPUs.
    pub fn cpu_count(&self) -> usize {
        self.packages * self.dies * self.cores * self.threads
    }

    /// `(package, die, core within the package, thread)` of `cpu`.
    pub fn place(&self, cpu: usize) -> (usize, usize, usize, usize) {
        let cores_total = self.packages * self.dies * self.cores;
        let thread = cpu / cores_total;
        let global_core = cpu % cores_total;
        let per_package = self.dies * self.cores;
        let package = global_core / per_package;
        let core = global_core % per_package;
        (package, core / self.cores, core, thread)
    }

    /// Writes `sys/devices/system/cpu/{online,possible}` and each CPU's
    /// `topology/` files (`physical_package_id`, `die_id`, `core_id`,
    /// `core_cpus_list`, `thread_siblings_list`) and `node<M>` entry.
    pub fn write(&self, root: &FakeRoot) {
        let n = self.cpu_count();
        let all = format!("0-{}\n", n - 1);
        root.write("sys/devices/system/cpu/online", &all);
        root.write("sys/devices/system/cpu/possible", &all);
        let cores_total = self.packages * self.dies * self.cores;
        for cpu in 0..n {
            let (package, die, core, _) = self.place(cpu);
            let siblings: Vec<String> = (0..self.threads)
                .map(|t| (cpu % cores_total + t * cores_total).to_string())
                .collect();
            let siblings = siblings.join(",") + "\n";
            let dir = format!("sys/devices/system/cpu/cpu{cpu}");
            root.write(&format!("{dir}/topology/physical_package_id"), &format!("{package}\n"))
                .write(&format!("{dir}/topology/die_id"), &format!("{die}\n"))
                .write(&format!("{dir}/topology/core_id"), &format!("{core}\n"))
                .write(&format!("{dir}/topology/core_cpus_list"), &siblings)
                .write(&format!("{dir}/topology/thread_siblings_list"), &siblings)
                .write(&format!("{dir}/node{package}"), "");
        }
    }
}

/// The real clocksource files under a fake root ([`SysfsClocksource`]), a
/// log of every write, and a kernel that can be told to ignore writes of one
/// name (as it does for a clocksource it cannot select: the write succeeds,
/// the read-back shows the old name) and to fail writes of another (as a
/// busy or invalid write does). The one fake `ClocksourceControl` of the
/// library's and the CLI's tests.
pub struct LoggedClocksource {
    sysfs: SysfsClocksource,
    ignored: Option<String>,
    failing: Option<(String, String)>,
    writes: Mutex<Vec<String>>,
}

impl LoggedClocksource {
    /// The files under `root`, every write reaching them.
    pub fn new(root: &Path) -> Self {
        LoggedClocksource {
            sysfs: SysfsClocksource::new(root),
            ignored: None,
            failing: None,
            writes: Mutex::new(Vec::new()),
        }
    }

    /// Writes of `name` succeed but change nothing.
    pub fn ignoring(mut self, name: &str) -> Self {
        self.ignored = Some(name.to_string());
        self
    }

    /// Writes of `name` fail with `reason` (an OS error's text).
    pub fn failing(mut self, name: &str, reason: &str) -> Self {
        self.failing = Some((name.to_string(), reason.to_string()));
        self
    }

    /// The real control underneath (its file paths).
    pub fn sysfs(&self) -> &SysfsClocksource {
        &self.sysfs
    }

    /// Every name written so far, in order (ignored and failed ones too).
    pub fn writes(&self) -> Vec<String> {
        self.writes.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl ClocksourceControl for LoggedClocksource {
    fn current(&self) -> Result<String, SwitchError> {
        self.sysfs.current()
    }
    fn available(&self) -> Result<Vec<String>, SwitchError> {
        self.sysfs.available()
    }
    fn write(&self, name: &str) -> Result<(), SwitchError> {
        self.writes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(name.to_string());
        if let Some((_, reason)) = self.failing.as_ref().filter(|(n, _)| n == name) {
            return Err(SwitchError::Write {
                name: name.into(),
                reason: reason.clone(),
            });
        }
        if self.ignored.as_deref() == Some(name) {
            return Ok(());
        }
        self.sysfs.write(name)
    }
    fn manual_command(&self, name: &str) -> String {
        self.sysfs.manual_command(name)
    }
}

//! A fake root directory for tests: build a sysfs/procfs tree in a temporary
//! directory and pass [`FakeRoot::path`] to the `linux` readers. Enabled by
//! the `testing` cargo feature.

use std::path::Path;
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
    pub packages: usize,
    pub dies: usize,
    pub cores: usize,
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

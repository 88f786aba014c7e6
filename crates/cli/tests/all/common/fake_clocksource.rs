//! A fake clocksource sysfs for the sweep's tests: `<temp dir>/sys` with
//! `current_clocksource` and `available_clocksource` as the kernel writes
//! them; `--root <temp dir>` sweeps it, and the sweep's lock goes beside it,
//! inside the temp dir. Each test file adds the commands it runs through a
//! trait of its own.
#![allow(dead_code)]

use std::path::PathBuf;

/// Where the clocksource files are under the fake `sys`.
pub const DIR: &str = "devices/system/clocksource/clocksource0";

/// The fake tree, removed when dropped.
pub struct Sysfs {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
}

impl Sysfs {
    /// `current` in use, `available` offered (written with the kernel's trailing space).
    pub fn new(current: &str, available: &str) -> Sysfs {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("sys");
        std::fs::create_dir_all(root.join(DIR)).unwrap();
        std::fs::write(root.join(DIR).join("current_clocksource"), format!("{current}\n")).unwrap();
        std::fs::write(root.join(DIR).join("available_clocksource"), format!("{available} \n")).unwrap();
        Sysfs { tmp, root }
    }

    /// The `--root` of the sweep: the temp dir holding `sys`.
    pub fn root(&self) -> &str {
        self.tmp.path().to_str().unwrap()
    }

    /// A clocksource file of the fake tree.
    pub fn file(&self, name: &str) -> PathBuf {
        self.root.join(DIR).join(name)
    }

    /// Replaces a file's content as another writer would (a new file, renamed in).
    pub fn set(&self, name: &str, value: &str) {
        let tmp = self.tmp.path().join("new");
        std::fs::write(&tmp, format!("{value}\n")).unwrap();
        std::fs::rename(&tmp, self.file(name)).unwrap();
    }

    /// `current_clocksource` as it reads now.
    pub fn current(&self) -> String {
        std::fs::read_to_string(self.file("current_clocksource")).unwrap()
    }

    /// The sweep's lock file, beside `sys`.
    pub fn lock_file(&self) -> PathBuf {
        self.root.with_file_name(".sys.clockscope-sweep.lock")
    }
}

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

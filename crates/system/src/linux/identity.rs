//! What a path is, not how it is spelled: `--root /proc/self/root`, `/.`,
//! `/sys/..` and a bind mount all name this machine's files under other
//! names, and a second `mount -t sysfs` anywhere holds the kernel's own
//! clocksource files. Comparing spellings (`root == "/sys"`) takes those
//! for a fake tree, says nothing real is touched, and then writes the
//! kernel's files. Here `/` is known by its device and inode, and sysfs by
//! its file system's magic number.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// `SYSFS_MAGIC` (`include/uapi/linux/magic.h`): `f_type` of every sysfs mount.
pub const SYSFS_MAGIC: i64 = 0x6265_6572;

/// Whether `root` is this machine's `/` (the same device and inode, after
/// symbolic links): `/`, `/.`, `/proc/self/root`, `/sys/..`.
pub fn is_this_root(root: &Path) -> bool {
    match (std::fs::metadata(root), std::fs::metadata("/")) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Whether `path` (after symbolic links) lies on a sysfs file system: its
/// files are the running kernel's, whatever the mount point or its name
/// (`/sys`, a second `mount -t sysfs`, a bind mount of a part of it).
#[cfg(target_os = "linux")]
pub fn is_kernel_sysfs(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs reads a NUL-terminated path and fills a zeroed struct
    // we own; on failure (-1) the struct is not read.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: see above.
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return false;
    }
    // f_type is a signed or unsigned word, by libc and architecture.
    #[allow(clippy::unnecessary_cast)]
    let f_type = s.f_type as i64;
    f_type == SYSFS_MAGIC
}

/// No sysfs outside Linux.
#[cfg(not(target_os = "linux"))]
pub fn is_kernel_sysfs(_path: &Path) -> bool {
    false
}

/// Whether the clocksource files under `sysfs_root` are the kernel's: the
/// clocksource directory, or its `current_clocksource` file (which a write
/// reaches through any link), lies on sysfs.
pub fn is_kernel_clocksource_dir(clocksource_dir: &Path) -> bool {
    is_kernel_sysfs(clocksource_dir) || is_kernel_sysfs(&clocksource_dir.join("current_clocksource"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_root_by_what_it_is() {
        assert!(is_this_root(Path::new("/")));
        assert!(is_this_root(Path::new("/.")));
        assert!(is_this_root(Path::new("//")));
        if Path::new("/proc/self/root").exists() {
            assert!(is_this_root(Path::new("/proc/self/root")));
        }
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_this_root(dir.path()));
        assert!(!is_this_root(&dir.path().join("missing")));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn sysfs_by_its_magic() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_kernel_sysfs(dir.path()));
        assert!(!is_kernel_sysfs(&dir.path().join("missing")));
        // Only read: never written.
        let live = Path::new("/sys/devices/system/clocksource/clocksource0");
        if live.is_dir() && is_kernel_sysfs(Path::new("/sys")) {
            assert!(is_kernel_clocksource_dir(live));
            assert!(is_kernel_clocksource_dir(Path::new(
                "/proc/self/root/sys/devices/system/clocksource/clocksource0"
            )));
            assert!(is_kernel_clocksource_dir(Path::new(
                "/sys/../sys/devices/system/clocksource/clocksource0"
            )));
            // A fake tree whose clocksource directory is a link into sysfs is the kernel's.
            let fake = dir.path().join("devices/system/clocksource");
            std::fs::create_dir_all(&fake).unwrap();
            std::os::unix::fs::symlink(live, fake.join("clocksource0")).unwrap();
            assert!(is_kernel_clocksource_dir(&fake.join("clocksource0")));
        }
    }
}

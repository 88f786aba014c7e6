//! A real sysfs, and this machine's `/`, known by what they are rather than
//! by how a path spells them (issue 32): `sweep --root /sys/..` or
//! `--root /proc/self/root` sweeps the kernel's own clocksource files and
//! says so (`live_sysfs: true`), and so does a second `mount -t sysfs` in a
//! private mount namespace; a fake tree bind-mounted elsewhere stays a fake.
//! `dmesg` and `tsc` read this machine's kernel log and NTP state under
//! `--root /proc/self/root` as under no `--root`.
//!
//! The real sysfs is only ever read here: every sweep of it runs without
//! `--apply`. The mount tests need root and `unshare -m`; elsewhere they
//! print a skip.

use crate::common;
use common::BIN;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const DIR: &str = "devices/system/clocksource/clocksource0";

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).stdin(Stdio::null()).output().unwrap()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)))
}

/// Whether this machine has its clocksource files on a sysfs at /sys.
fn live_sysfs_here() -> bool {
    Path::new("/sys").join(DIR).join("current_clocksource").is_file()
        && clockscope_system::linux::identity::is_kernel_sysfs(Path::new("/sys"))
}

#[test]
fn the_kernels_sysfs_under_another_name_is_the_kernels() {
    if !live_sysfs_here() {
        return skip!(optional: "the_kernels_sysfs_under_another_name_is_the_kernels: no sysfs at /sys here");
    }
    for root in ["/sys/..", "/proc/self/root", "/."] {
        // Without --apply: the real files are only read.
        let o = run(&["sweep", "--root", root, "--format", "json"]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{root}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let doc = json(&o);
        assert_eq!(doc["live_sysfs"], true, "{root}: {doc}");
        assert_eq!(doc["applied"], false);
        let o = run(&["sweep", "--root", root]);
        // The text wrapped to 100 columns, read as one line.
        let text = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(!text.contains("changes no kernel clock"), "{root}: {text}");
        if root != "/sys/.." {
            assert!(
                text.contains("is on the kernel's sysfs (under another name): switching there changes the kernel's"),
                "{root}: {text}"
            );
        }
    }
    // The lock such a sweep would take is the machine's own.
    for sysfs in ["/sys/../sys", "/proc/self/root/sys"] {
        assert_eq!(
            clockscope_system::linux::clocksource::SwitchLock::path_for(Path::new(sysfs)).unwrap(),
            Path::new("/run/clockscope-sweep.lock")
        );
    }
}

#[test]
fn this_machines_root_under_another_name_reads_its_kernel() {
    let o = run(&["tsc", "--root", "/proc/self/root", "--format", "json"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc = json(&o);
    assert_ne!(
        doc["ntp_unavailable"], "not read: kernel files under another root",
        "this machine's / is not another root: {doc}"
    );
    if Path::new("/dev/kmsg").exists() && std::fs::File::open("/dev/kmsg").is_ok() {
        let o = run(&["dmesg", "--root", "/proc/self/root", "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(json(&o)["source"], "/dev/kmsg");
    }
}

/// Runs `script` as root in a private mount namespace (`unshare -m`), with
/// `$BIN` the clockscope binary and `$T` a fresh temp dir; `None` when that
/// cannot run here.
fn in_private_mounts(script: &str) -> Option<Output> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let probe = Command::new("unshare").args(["-m", "true"]).status().ok()?;
    if !probe.success() {
        return None;
    }
    let t = tempfile::tempdir().unwrap();
    let o = Command::new("unshare")
        .args(["-m", "sh", "-ec"])
        .arg(format!("mount --make-rprivate / && {script}"))
        .env("BIN", BIN)
        .env("T", t.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Some(o)
}

#[test]
fn a_second_sysfs_mount_is_the_kernels_and_a_bind_mounted_fake_is_not() {
    let test = "a_second_sysfs_mount_is_the_kernels_and_a_bind_mounted_fake_is_not";
    if !live_sysfs_here() {
        return skip!(optional: "{test}: no sysfs at /sys here");
    }
    // A second sysfs, only read (no --apply).
    let Some(o) = in_private_mounts(
        r#"mkdir "$T/sys" && mount -t sysfs sysfs "$T/sys" && "$BIN" sweep --root "$T" --format json"#,
    ) else {
        return skip!(optional: "{test}: needs root and unshare -m (a private mount namespace)");
    };
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json(&o)["live_sysfs"], true, "a second sysfs mount is the kernel's");

    // A fake tree bind-mounted into place: still a fake, and a sweep of it
    // switches and restores the fake files only.
    let script = format!(
        r#"mkdir -p "$T/fake/sys/{DIR}" "$T/r/sys"
printf 'tsc\n' > "$T/fake/sys/{DIR}/current_clocksource"
printf 'tsc hpet\n' > "$T/fake/sys/{DIR}/available_clocksource"
mount --bind "$T/fake/sys" "$T/r/sys"
"$BIN" sweep --apply --root "$T/r" -d 0.02 --only hpet --format json
test "$(cat "$T/fake/sys/{DIR}/current_clocksource")" = tsc"#
    );
    let o = in_private_mounts(&script).unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = json(&o);
    assert_eq!(doc["live_sysfs"], false, "{doc}");
    assert_eq!(doc["restore"], "restored");
    assert_eq!(doc["results"][0]["clocksource"], "hpet");
}

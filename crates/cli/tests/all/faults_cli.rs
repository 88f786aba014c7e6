//! The real `clockscope` binary against faults, each tested the way it once
//! failed: output files (device nodes, an existing file, a full disk, SIGTERM),
//! write errors and closed pipes, hostile text from a CPUID dump, clap's
//! missing-argument message, and the CPU count under taskset.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common;
use common::{clockscope as run, BIN};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A clock that cannot work on this architecture: a usage error.
const FOREIGN_CLOCK: &str = if cfg!(target_arch = "x86_64") {
    "cntvct"
} else {
    "rdtsc"
};

/// Copies of /dev/null (c 1 3) and /dev/full (c 1 7) made with mknod in `dir`.
fn device_copies(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let null = dir.join("null");
    let full = dir.join("full");
    for (path, minor) in [(&null, "3"), (&full, "7")] {
        let ok = Command::new("mknod")
            .args(["-m", "666"])
            .arg(path)
            .args(["c", "1", minor])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return None;
        }
    }
    Some((null, full))
}

fn assert_char_device(path: &Path, minor: u64) {
    let m = std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{} is gone: {e}", path.display()));
    assert!(
        m.file_type().is_char_device(),
        "{} is no longer a character device",
        path.display()
    );
    assert_eq!(
        m.rdev(),
        libc::makedev(1, minor as u32),
        "{} changed device",
        path.display()
    );
}

/// Starts a run (`-d` of 10 s or more, so it prints its ready line) and
/// sends it SIGTERM once that line is on stderr (the handler is installed
/// before it); with `force`, keeps sending one every millisecond until it
/// exits, so that a second signal lands while the first is being handled
/// (the forced exit). The returned stderr is what followed the ready line.
fn interrupted_run(args: &[&str], force: bool) -> Output {
    use std::io::{BufRead, Read};
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut ready = String::new();
    err.read_line(&mut ready).unwrap();
    assert!(ready.starts_with("measuring 1 clock for "), "{args:?}: {ready:?}");
    let pid = child.id() as i32;
    // SAFETY: sending SIGTERM to our own child process by its pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    if force {
        while child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(1));
            // SAFETY: as above; the child is not reaped yet, so the pid is still ours.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
    let mut rest = Vec::new();
    err.read_to_end(&mut rest).unwrap();
    let mut o = child.wait_with_output().unwrap();
    o.stderr = rest;
    o
}

fn dir_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn device_node_copies_survive_every_plot_run() {
    let dir = tempfile::tempdir().unwrap();
    let Some((null, full)) = device_copies(dir.path()) else {
        return skip!(optional: "mknod is not allowed here (needs root)");
    };
    let (n, f) = (null.to_str().unwrap(), full.to_str().unwrap());
    // A usage error, before anything is opened.
    for p in [n, f] {
        let o = run(&["-d", "0.05", "--clock", FOREIGN_CLOCK, "--plot", p]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    }
    // A full device: the write fails (exit 2, one line), the node stays.
    let o = run(&["-d", "0.05", "--clock", "monotonic", "--plot", f]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--plot") && stderr(&o).contains("No space left on device"),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty(), "nothing printed when the plot fails");
    // /dev/null takes the plot: success, written through (no fsync, no rename).
    let o = run(&["-d", "0.05", "--clock", "monotonic", "--plot", n]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    // Interrupted, once and with a forced exit.
    for force in [false, true] {
        for p in [n, f] {
            let o = interrupted_run(&["-d", "10", "--clock", "monotonic", "--plot", p], force);
            assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
        }
    }
    assert_char_device(&null, 3);
    assert_char_device(&full, 7);
    assert_eq!(dir_entries(dir.path()), ["full", "null"], "nothing else created");
}

#[test]
fn an_existing_plot_survives_a_usage_error_and_a_missing_dir_fails_first() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("k.svg");
    std::fs::write(&keep, "keep\n").unwrap();
    let o = run(&["--clock", FOREIGN_CLOCK, "--plot", keep.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!("--clock {FOREIGN_CLOCK}")),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "keep\n");
    assert_eq!(dir_entries(dir.path()), ["k.svg"]);
    let missing = dir.path().join("no/such/dir/p.svg");
    let o = run(&["-d", "20", "--plot", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "fails before measuring 20 s");
    assert_eq!(stderr(&o).lines().count(), 1);
    assert!(stderr(&o).contains("No such file or directory"), "{}", stderr(&o));
}

#[test]
fn an_existing_plot_survives_sigterm_and_a_second_one() {
    let mut forced_exits = 0;
    for force in [false, true, true, true] {
        let dir = tempfile::tempdir().unwrap();
        let keep = dir.path().join("k.svg");
        std::fs::write(&keep, "keep\n").unwrap();
        let o = interrupted_run(
            &["-d", "10", "--clock", "monotonic", "--plot", keep.to_str().unwrap()],
            force,
        );
        assert_eq!(o.status.code(), Some(130), "force {force}: {}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&keep).unwrap(), "keep\n", "force {force}");
        assert_eq!(
            dir_entries(dir.path()),
            ["k.svg"],
            "force {force}: no temporary file left"
        );
        if !force {
            assert!(stderr(&o).contains("interrupted: --plot not written"), "{}", stderr(&o));
        }
        // A forced exit prints nothing (the first signal's run would print its report).
        forced_exits += usize::from(force && o.stdout.is_empty());
    }
    assert!(forced_exits > 0, "a second signal never forced an exit");
}

#[test]
fn a_successful_run_replaces_the_plot_keeping_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("p.svg");
    std::fs::write(&plot, "old\n").unwrap();
    std::fs::set_permissions(&plot, std::fs::Permissions::from_mode(0o640)).unwrap();
    let before = std::fs::metadata(&plot).unwrap().ino();
    let o = run(&["-d", "0.05", "--clock", "monotonic", "--plot", plot.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let text = std::fs::read_to_string(&plot).unwrap();
    assert!(
        text.starts_with("<svg") && text.contains("CLOCK_MONOTONIC"),
        "{}",
        &text[..80.min(text.len())]
    );
    let m = std::fs::metadata(&plot).unwrap();
    assert_ne!(m.ino(), before, "a new file renamed over the old one");
    assert_eq!(m.mode() & 0o777, 0o640);
    assert_eq!(dir_entries(dir.path()), ["p.svg"]);
}

#[test]
fn an_existing_plot_survives_a_full_disk() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    // 12 KiB: room for the old file, not for a ~25 KB plot.
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=12k", "tmpfs"])
        .arg(&mnt)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        return skip!(optional: "cannot mount a small tmpfs here (needs root); the full-disk case is untested");
    }
    let keep = mnt.join("k.svg");
    std::fs::write(&keep, "keep\n").unwrap();
    let o = run(&["-d", "0.05", "--clock", "monotonic", "--plot", keep.to_str().unwrap()]);
    let content = std::fs::read_to_string(&keep);
    let entries = dir_entries(&mnt);
    let _ = Command::new("umount").arg(&mnt).status();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("No space left on device"), "{}", stderr(&o));
    assert_eq!(content.unwrap(), "keep\n");
    assert_eq!(entries, ["k.svg"], "no temporary file left");
}

/// Runs with stdout a pipe whose reading end is already closed.
fn with_closed_pipe(args: &[&str]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    Output {
        status,
        stdout: Vec::new(),
        stderr: err.into_bytes(),
    }
}

fn to_dev_full(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    Command::new(BIN).args(args).stdout(full).output().unwrap()
}

#[test]
fn write_errors_are_exit_2_and_closed_pipes_are_quiet() {
    for args in [
        &["completions", "bash"][..],
        &["man"],
        &["tsc", "--cpuid-dump", &dump("kvm_this_machine.cpuid-r.txt")],
    ] {
        let o = to_dev_full(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("No space left on device"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("panicked"));
    }
    for args in [
        &["completions", "zsh"][..],
        &["man"],
        &["tsc", "--cpuid-dump", &dump("kvm_this_machine.cpuid-r.txt")],
    ] {
        let o = with_closed_pipe(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(o.stderr.is_empty(), "{args:?}: {}", stderr(&o));
    }
    // A real measurement: the status is the run's (0 or 1, never 2), quietly.
    let o = with_closed_pipe(&["-d", "0.05", "--clock", "monotonic"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    // A closed stdout (`>&-`) is an error, not a silent success.
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("'{BIN}' completions bash >&-"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("stdout is closed"), "{}", stderr(&o));
}

#[test]
fn a_missing_argument_is_named() {
    let o = run(&["completions"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "clockscope: error: the following required arguments were not provided: <SHELL>\n"
    );
}

fn dump(name: &str) -> String {
    format!("{}/../system/tests/data/cpuid/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// This machine's recorded dump, with `brand` (up to 48 bytes) in leaves 0x80000002-4.
fn dump_with_brand(brand: &[u8]) -> String {
    let mut bytes = [0u8; 48];
    bytes[..brand.len()].copy_from_slice(brand);
    let reg = |i: usize| u32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap());
    std::fs::read_to_string(dump("kvm_this_machine.cpuid-r.txt"))
        .unwrap()
        .lines()
        .map(|line| {
            for (k, leaf) in ["0x80000002", "0x80000003", "0x80000004"].iter().enumerate() {
                if line.trim_start().starts_with(&format!("{leaf} 0x00:")) {
                    let r = k * 4;
                    return format!(
                        "   {leaf} 0x00: eax={:#010x} ebx={:#010x} ecx={:#010x} edx={:#010x}",
                        reg(r),
                        reg(r + 1),
                        reg(r + 2),
                        reg(r + 3)
                    );
                }
            }
            line.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn has_raw_control(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
}

#[test]
fn escape_sequences_from_a_dump_never_reach_stdout_raw() {
    let dir = tempfile::tempdir().unwrap();
    // The file name is hostile too: it is printed in the report's first line.
    let path = dir.path().join("evil\x1b[2J.txt");
    std::fs::write(&path, dump_with_brand(b"Evil\x1b]0;x\x07CPU\xc2\x9b31m")).unwrap();
    let p = path.to_str().unwrap();
    let o = run(&["tsc", "-v", "--cpuid-dump", p]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!has_raw_control(&o.stdout), "{:?}", String::from_utf8_lossy(&o.stdout));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("brand                   Evil\\x1b]0;x\\x07CPU\\x9b31m"),
        "{text}"
    );
    assert!(text.contains("evil\\x1b[2J.txt"), "{text}");
    let o = run(&["tsc", "--cpuid-dump", p, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!has_raw_control(&o.stdout), "{:?}", String::from_utf8_lossy(&o.stdout));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The library escapes untrusted text once, where the dump is decoded, so
    // every format shows the same escaped brand.
    assert_eq!(
        v["cpuid"]["brand"], "Evil\\x1b]0;x\\x07CPU\\x9b31m",
        "JSON carries the escaped brand"
    );
    // An error quoting the file (and its offending line) is escaped on stderr.
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "CPU 0:\n   0x00000000 0x00: eax=\x1b]0;x\x07\n").unwrap();
    let o = run(&["tsc", "--cpuid-dump", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!has_raw_control(&o.stderr), "{:?}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn taskset_to_one_cpu_gives_one_cpu() {
    let ok = Command::new("taskset")
        .args(["-c", "0", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return skip!("taskset is not available (util-linux)");
    }
    let o = Command::new("taskset")
        .args(["-c", "0", BIN, "-d", "0.02", "--clock", "monotonic", "--format", "json"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["environment"]["cpus"], 1);
    let o = Command::new("taskset")
        .args(["-c", "0", BIN, "-d", "0.02", "--clock", "monotonic"])
        .output()
        .unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains(", 1 CPU usable"), "{text}");
}

//! The real `clockscope sweep` binary against a fake sysfs root (never the
//! real /sys): listing without --apply, one-line errors with nothing
//! switched, refusal for a non-root user, and SIGINT / SIGTERM delivered
//! mid-sweep with the original clocksource back afterwards. The other
//! deaths (SIGQUIT, SIGUSR1, SIGALRM, SIGXCPU, SIGKILL), two sweeps at once
//! and changes made under a sweep are in sweep_deaths.rs.

use crate::common;
use crate::common::fake_clocksource::{Sysfs, DIR};
use common::time_limit::limit;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_clockscope");

/// The commands this file runs on the fake tree.
trait SweepCli {
    fn current_path(&self) -> PathBuf;
    fn run(&self, args: &[&str]) -> Output;
}

impl SweepCli for Sysfs {
    fn current_path(&self) -> PathBuf {
        self.root.join(DIR).join("current_clocksource")
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .arg("sweep")
            .args(["--root", self.root()])
            .args(args)
            .output()
            .unwrap()
    }
}

fn mtime(p: &Path) -> std::time::SystemTime {
    std::fs::metadata(p).unwrap().modified().unwrap()
}

/// Exit 2, one line on stderr containing `needle`, nothing on stdout.
fn assert_one_line_error(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(
        err.starts_with("clockscope: error: ") && err.contains(needle),
        "{err:?} lacks {needle:?}"
    );
    assert!(o.stdout.is_empty(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn without_apply_it_lists_and_changes_nothing() {
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    let before = mtime(&s.current_path());
    let o = s.run(&[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("Clocksource in use: tsc"), "{out}");
    assert!(out.contains("Available:          tsc hpet acpi_pm"), "{out}");
    assert!(out.contains("Would switch to tsc, hpet, acpi_pm in turn"), "{out}");
    assert!(out.contains("Nothing was changed"), "{out}");
    assert_eq!(s.current(), "tsc\n");
    assert_eq!(mtime(&s.current_path()), before, "not even rewritten");
    let o = s.run(&["--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["applied"], false);
    assert_eq!(doc["results"], serde_json::json!([]));
}

#[test]
fn bad_names_and_missing_files_are_one_line_errors_and_nothing_switches() {
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    let before = mtime(&s.current_path());
    let bad = [
        ("hpet;reboot", "'hpet;reboot' is not a clocksource name"),
        ("\x1b[31mhpet", "[31mhpet' is not a clocksource name"),
        (
            "kvm-clock",
            "clocksource 'kvm-clock' is not available here (available: tsc, hpet, acpi_pm)",
        ),
    ];
    for (name, needle) in bad {
        let o = s.run(&["--apply", "-d", "0.01", "--only", "hpet", "--only", name]);
        assert_one_line_error(&o, needle);
    }
    assert_eq!(s.current(), "tsc\n");
    assert_eq!(mtime(&s.current_path()), before);
    assert!(
        !s.root.with_file_name(".sys.clockscope-sweep.lock").exists(),
        "refused before the lock file is made"
    );

    let gone = Sysfs::new("tsc", "tsc hpet");
    std::fs::remove_file(gone.root.join(DIR).join("available_clocksource")).unwrap();
    assert_one_line_error(&gone.run(&["--apply", "-d", "0.01"]), "available_clocksource");
    assert_eq!(gone.current(), "tsc\n");

    let gone = Sysfs::new("tsc", "tsc hpet");
    std::fs::remove_file(gone.current_path()).unwrap();
    assert_one_line_error(&gone.run(&["--apply", "-d", "0.01"]), "current_clocksource");
    assert!(!gone.current_path().exists(), "never created");

    let odd = Sysfs::new("tsc hpet", "tsc hpet");
    assert_one_line_error(&odd.run(&["--apply", "-d", "0.01"]), "expected one clocksource name");
    assert_eq!(odd.current(), "tsc hpet\n");
}

#[test]
fn an_original_that_could_not_be_written_back_is_refused_before_the_first_switch() {
    // The clocksource in use is not offered: a switch away could never be undone.
    let s = Sysfs::new("tsc", "hpet acpi_pm");
    let before = mtime(&s.current_path());
    for only in [&[][..], &["--only", "hpet"][..]] {
        let o = s.run(&[&["--apply", "-d", "0.01"][..], only].concat());
        assert_one_line_error(
            &o,
            "the clocksource in use, 'tsc', is not in available_clocksource (hpet, acpi_pm): once switched away it \
             could not be written back, so nothing is switched",
        );
    }
    assert_eq!(s.current(), "tsc\n");
    assert_eq!(mtime(&s.current_path()), before, "nothing written");
    assert!(
        !s.root.with_file_name(".sys.clockscope-sweep.lock").exists(),
        "refused before the lock file is made"
    );
    // Without --apply, the plan says so instead of promising to put it back.
    let o = s.run(&[]);
    let out = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(o.status.code(), Some(0));
    assert!(
        out.contains("--apply would refuse: the clocksource in use, tsc, is not in available_clocksource"),
        "{out}"
    );
    assert!(!out.contains("Would switch"), "{out}");
}

#[test]
fn the_help_names_the_lock_files_the_sweep_takes() {
    use clockscope_system::linux::clocksource::SwitchLock;
    let o = Command::new(BIN).args(["sweep", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    // The live sysfs's lock, as the sweep computes it.
    let live = SwitchLock::path_for(Path::new("/sys")).unwrap();
    assert!(help.contains(&format!("the lock is {},", live.display())), "{help}");
    // A --root DIR's: DIR/.sys.clockscope-sweep.lock, the file the sweep takes.
    let s = Sysfs::new("tsc", "tsc hpet");
    let fake = SwitchLock::path_for(&s.root).unwrap();
    let dir = Path::new(s.root()).canonicalize().unwrap();
    let shown = fake.to_string_lossy().replace(&*dir.to_string_lossy(), "DIR");
    assert!(
        help.contains(&format!("or {shown} beside DIR/sys with --root DIR")),
        "{shown}: {help}"
    );
    let o = s.run(&["--apply", "-d", "0.01", "--only", "hpet"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(fake.is_file(), "the sweep took {}", fake.display());
}

#[test]
fn apply_needs_root() {
    let s = Sysfs::new("tsc", "tsc hpet");
    // The fake tree must be readable by the unprivileged user.
    let mut p = s.root.clone();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p.parent().unwrap(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    for part in DIR.split('/') {
        p.push(part);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let args = ["sweep", "--root", s.root(), "--apply", "-d", "0.01"];
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let o = if root {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args(args)
            .output()
            .expect("setpriv (util-linux) to run as nobody")
    } else {
        Command::new(BIN).args(args).output().unwrap()
    };
    assert_one_line_error(
        &o,
        "--apply switches the kernel's clocksource and needs root (effective uid ",
    );
    assert_eq!(s.current(), "tsc\n");
    assert!(
        !s.root.with_file_name(".sys.clockscope-sweep.lock").exists(),
        "refused before the lock"
    );
}

#[test]
fn any_number_of_names_is_listed_and_duplicates_once() {
    let names: Vec<String> = (0..70).map(|i| format!("cs{i}")).collect();
    let s = Sysfs::new("cs0", &format!("{} cs0 cs0", names.join(" ")));
    let o = s.run(&["--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["planned"].as_array().unwrap().len(), 70);
    let s = Sysfs::new("tsc", &["tsc"; 64].join(" "));
    let o = s.run(&["--apply", "-d", "0.01", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["results"].as_array().unwrap().len(), 1, "tsc measured once");
    assert_eq!(doc["restore"], "in_place");
}

/// Starts a long sweep, waits until it has switched away from `tsc`, sends
/// `signal`, and checks the original is back and the run reports the interruption.
fn interrupted_mid_sweep(signal: i32) {
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    let child = Command::new(BIN)
        .args(["sweep", "--root", s.root(), "--apply", "-d", "60", "--format", "json"])
        .args(["--only", "hpet", "--only", "acpi_pm"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while s.current() != "hpet\n" {
        assert!(
            start.elapsed() < limit(Duration::from_secs(30)),
            "never switched: {:?}",
            s.current()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: sending a signal to our own child process by its pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert_eq!(s.current(), "tsc\n", "original restored");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["results"].as_array().unwrap().len(), 1, "acpi_pm never switched to");
    assert_eq!(doc["results"][0]["clocksource"], "hpet");
    assert_eq!(doc["results"][0]["interrupted"], true);
}

#[test]
fn sigint_mid_sweep_restores_the_original() {
    interrupted_mid_sweep(libc::SIGINT);
}

#[test]
fn sigterm_mid_sweep_restores_the_original() {
    interrupted_mid_sweep(libc::SIGTERM);
}

#[test]
fn sighup_mid_sweep_restores_the_original() {
    interrupted_mid_sweep(libc::SIGHUP);
}

#[test]
fn a_short_real_sweep_restores_and_reports_each_clocksource() {
    let s = Sysfs::new("kvm-clock", "tsc kvm-clock");
    let o = s.run(&["--apply", "-d", "0.02", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(s.current(), "kvm-clock\n");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["clocksource"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["tsc", "kvm-clock"]);
    assert!(doc["results"][0]["loops"].as_u64().unwrap() > 0);
    assert_eq!(doc["live_sysfs"], false);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/schema/sweep.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn a_second_signal_still_restores_the_original() {
    // Two SIGINTs back to back: either the normal path restores (report on
    // stdout) or the process exits at once (nothing on stdout) and the
    // guardian restores; both must leave the original in place and exit 130.
    // (The kernel may merge the two signals.)
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    let child = Command::new(BIN)
        .args(["sweep", "--root", s.root(), "--apply", "-d", "60", "--format", "json"])
        .args(["--only", "acpi_pm"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while s.current() != "acpi_pm\n" {
        assert!(start.elapsed() < limit(Duration::from_secs(30)), "never switched");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    for _ in 0..2 {
        // SAFETY: sending a signal to our own child process by its pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(s.current(), "tsc\n", "original restored");
}

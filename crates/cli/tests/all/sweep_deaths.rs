//! The real `clockscope sweep --apply` binary against fake sysfs roots
//! (never the real /sys), killed in every way while a clocksource is
//! switched: SIGQUIT, SIGUSR1, SIGALRM, SIGXCPU and the other catchable
//! terminating signals, SIGKILL of the process or of its group: the process
//! dies of the signal and the guardian child restores the original once the
//! process is gone (the test's read of stderr ends when the guardian
//! exits). Also: two sweeps at once (the second refuses and changes
//! nothing), and changes made under a sweep by someone else (a row marked
//! invalid, their choice left alone, a clocksource no longer available
//! never written). Every wait is a handshake on the fake files;
//! deadlines are generous and only there so a broken build fails instead of
//! hanging.

use crate::common;
use crate::common::fake_clocksource::Sysfs;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_clockscope");
/// Far longer than any wait should take, even on a loaded shared VM.
const DEADLINE: Duration = Duration::from_secs(30);

/// The commands this file runs on the fake tree.
trait SweepDeaths {
    fn command(&self, root: &str, args: &[&str]) -> Command;
    fn run(&self, args: &[&str]) -> Output;
    fn start(&self, seconds: &str) -> Child;
    fn wait_for(&self, name: &str);
}

impl SweepDeaths for Sysfs {
    fn command(&self, root: &str, args: &[&str]) -> Command {
        // Every signal's default action, whatever the test runner inherited (a
        // shell's background job ignores INT and QUIT); env execs the sweep in
        // its own process. `--root DIR` sweeps DIR/sys.
        let mut c = Command::new("env");
        c.args(["--default-signal", BIN, "sweep", "--apply", "--root", root])
            .args(args);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(self.tmp.path().to_str().unwrap(), args).output().unwrap()
    }

    fn start(&self, seconds: &str) -> Child {
        self.command(self.tmp.path().to_str().unwrap(), &["-d", seconds, "--format", "json"])
            .args(["--only", "hpet", "--only", "acpi_pm"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn wait_for(&self, name: &str) {
        let start = Instant::now();
        while self.current().trim() != name {
            assert!(
                start.elapsed() < common::time_limit::limit(DEADLINE),
                "never read {name}: {:?}",
                self.current()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn kill(child: &Child, signal: i32) {
    // SAFETY: sending a signal to our own child process by its pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
}

/// No core files from the signals that dump core (SIGQUIT, SIGXCPU...): the
/// limit is inherited by the sweeps this test starts.
/// The limit is the whole test process's (one binary for every CLI test):
/// only lowered, to the same 0 each time, and no other test reads it.
fn no_core_dumps() {
    let zero = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit reads a valid struct; lowering our own limit is always allowed.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_CORE, &zero) }, 0);
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Sends `signal` while hpet is switched in: the original is back when the
/// process has died, and it died of that signal.
fn dies_of(signal: i32) {
    no_core_dumps();
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    let child = s.start("60");
    s.wait_for("hpet");
    kill(&child, signal);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(signal), "{o:?}");
    assert_eq!(s.current(), "tsc\n", "restored once the process died");
    assert!(
        stderr(&o).contains(
            "clockscope: the sweep died (a signal, SIGKILL or a crash) with clocksource hpet in place: its guardian \
             wrote tsc back"
        ),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty(), "no report from a killed sweep");
}

#[test]
fn sigquit_restores_then_dies_of_it() {
    dies_of(libc::SIGQUIT);
}

#[test]
fn sigusr1_restores_then_dies_of_it() {
    dies_of(libc::SIGUSR1);
}

#[test]
fn sigalrm_restores_then_dies_of_it() {
    dies_of(libc::SIGALRM);
}

#[test]
fn sigxcpu_restores_then_dies_of_it() {
    dies_of(libc::SIGXCPU);
}

#[test]
fn every_other_terminating_signal_restores_too() {
    for signal in [
        libc::SIGUSR2,
        libc::SIGXFSZ,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGABRT,
        libc::SIGPWR,
        libc::SIGRTMIN() + 3,
        libc::SIGRTMAX(),
    ] {
        dies_of(signal);
    }
}

#[test]
fn sigkill_is_undone_by_the_guardian() {
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    let child = s.start("60");
    s.wait_for("hpet");
    let killed = Instant::now();
    kill(&child, libc::SIGKILL);
    s.wait_for("tsc");
    let restored_after = killed.elapsed();
    // Within a second on an idle machine; only the generous deadline is asserted.
    eprintln!("SIGKILL: the guardian restored tsc after {restored_after:?}");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(libc::SIGKILL));
    assert!(
        stderr(&o).contains(
            "the sweep died (a signal, SIGKILL or a crash) with clocksource hpet in place: its guardian wrote tsc back"
        ),
        "{}",
        stderr(&o)
    );
    // The guardian exited and released the lock: the next sweep runs.
    let o = s.run(&["-d", "0.01", "--only", "hpet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(s.current(), "tsc\n");
}

/// The sweep started as the leader of a process group of its own, as a
/// shell's job control or a service manager starts it.
fn start_in_own_group(s: &Sysfs) -> Child {
    use std::os::unix::process::CommandExt;
    s.command(s.tmp.path().to_str().unwrap(), &["-d", "60", "--format", "json"])
        .args(["--only", "hpet", "--only", "acpi_pm"])
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// After a death of the whole group: the guardian (in a session of its
/// own) restored exactly once, said so once, exited, and released the lock.
fn restored_once_by_the_guardian(s: &Sysfs, o: &Output) {
    assert_eq!(s.current(), "tsc\n");
    let err = stderr(o);
    assert_eq!(
        err.matches("its guardian wrote tsc back").count(),
        1,
        "restored exactly once: {err}"
    );
    let o = s.run(&["-d", "0.01", "--only", "hpet"]);
    assert_eq!(o.status.code(), Some(0), "the lock was released: {}", stderr(&o));
    assert_eq!(s.current(), "tsc\n");
}

#[test]
fn sigkill_to_the_whole_process_group_is_undone_by_the_guardian() {
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    let child = start_in_own_group(&s);
    s.wait_for("hpet");
    // kill -KILL -PGID: every process of the sweep's group at once.
    // SAFETY: a signal to the process group our own child leads.
    assert_eq!(unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) }, 0);
    s.wait_for("tsc");
    // Output ends when the guardian, which holds stderr, has exited too.
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(libc::SIGKILL));
    restored_once_by_the_guardian(&s, &o);
}

#[test]
fn timeout_s_kill_is_undone_by_the_guardian() {
    // coreutils' timeout runs the command in its own process group and
    // sends the signal to that whole group.
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    let root = s.tmp.path().to_str().unwrap().to_string();
    let child = Command::new("timeout")
        .args(["-s", "KILL", "5", BIN, "sweep", "--apply", "--root", &root, "-d", "60"])
        .args(["--only", "hpet", "--only", "acpi_pm", "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    // The group, timeout itself included, was killed at the time limit.
    assert!(
        o.status.signal() == Some(libc::SIGKILL) || o.status.code() == Some(137),
        "{:?} {}",
        o.status,
        stderr(&o)
    );
    s.wait_for("tsc");
    restored_once_by_the_guardian(&s, &o);
}

#[test]
fn a_sweep_that_ends_normally_leaves_no_guardian_and_no_second_restore() {
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    // output() returns when stderr is closed by every holder, the guardians included.
    let o = s.run(&["-d", "0.05", "--only", "hpet", "--only", "acpi_pm", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("guardian wrote"), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["restore"], "restored");
    assert_eq!(s.current(), "tsc\n");
}

#[test]
fn after_a_change_by_someone_else_neither_signal_nor_guardian_writes() {
    no_core_dumps();
    // Someone else put acpi_pm in place: theirs, left alone by the guardian.
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    let child = s.start("60");
    s.wait_for("hpet");
    s.set("current_clocksource", "acpi_pm");
    kill(&child, libc::SIGKILL);
    // Output ends when the guardian has exited too (it holds stderr).
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(libc::SIGKILL));
    assert_eq!(s.current(), "acpi_pm\n");
    assert!(!stderr(&o).contains("guardian wrote"), "{}", stderr(&o));

    // The original is no longer available: never written, by the signal path either.
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    let child = s.start("60");
    s.wait_for("hpet");
    s.set("available_clocksource", "hpet acpi_pm");
    kill(&child, libc::SIGQUIT);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(libc::SIGQUIT));
    assert_eq!(s.current(), "hpet\n");
    assert!(!stderr(&o).contains("guardian wrote"), "{}", stderr(&o));
}

#[test]
fn two_sweeps_at_once_the_second_refuses_and_the_original_comes_back() {
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    let a = s.start("60");
    s.wait_for("hpet");
    let alias = s.tmp.path().join("alias");
    std::os::unix::fs::symlink(s.tmp.path(), &alias).unwrap();
    for root in [s.tmp.path().to_str().unwrap(), alias.to_str().unwrap()] {
        let b = s.command(root, &["-d", "0.01"]).output().unwrap();
        let err = stderr(&b);
        assert_eq!(b.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!(
                "clockscope: error: another clockscope sweep (pid {}, or its guardian) is switching clocksources \
                 here and holds {}",
                a.id(),
                s.tmp.path().join(".sys.clockscope-sweep.lock").display()
            )),
            "{err}"
        );
        assert!(b.stdout.is_empty());
        assert_eq!(s.current(), "hpet\n", "the second sweep wrote nothing");
    }
    kill(&a, libc::SIGINT);
    let o = a.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert_eq!(s.current(), "tsc\n");
    // A sweep after the first one ended runs.
    let b = s.run(&["-d", "0.01"]);
    assert_eq!(b.status.code(), Some(0), "{}", stderr(&b));
    assert_eq!(s.current(), "tsc\n");
}

#[test]
fn a_change_under_the_sweep_invalidates_the_row_and_is_left_alone() {
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    // Long enough that the change lands inside hpet's measurement.
    let child = s.start("3");
    s.wait_for("hpet");
    // The kernel's watchdog marks hpet unstable: gone from the list, acpi_pm in use.
    s.set("available_clocksource", "tsc acpi_pm");
    s.set("current_clocksource", "acpi_pm");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(s.current(), "acpi_pm\n", "their choice left in place");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "acpi_pm never switched to");
    assert_eq!(rows[0]["clocksource"], "hpet");
    assert_eq!(rows[0]["valid"], false);
    assert_eq!(rows[0]["read_back_after"], "acpi_pm");
    assert_eq!(doc["restore"], "left_alone");
    assert_eq!(doc["final_clocksource"], "acpi_pm");
    assert!(doc["changed_by_others"]
        .as_str()
        .unwrap()
        .contains("from hpet to acpi_pm during the measurement of hpet"));
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/schema/sweep.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    assert!(jsonschema::validator_for(&schema).unwrap().is_valid(&doc));
}

/// Runs `args` as the user `nobody` (setpriv), or `None` when this test
/// process is not root or setpriv is missing.
fn as_nobody(args: &[&str]) -> Option<Command> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--version").output().is_err() {
        return None;
    }
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(args);
    Some(c)
}

#[test]
fn a_lock_another_user_made_is_refused_by_its_owner_and_the_holder_is_the_kernels_word() {
    let test = "a_lock_another_user_made_is_refused_by_its_owner_and_the_holder_is_the_kernels_word";
    use std::io::BufRead;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let s = Sysfs::new("tsc", "tsc hpet");
    // The lock's directory open to every user, sticky, as /run/lock or /tmp.
    std::fs::set_permissions(s.tmp.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let lock = s.tmp.path().join(".sys.clockscope-sweep.lock");
    let lock_s = lock.to_str().unwrap();
    // nobody makes the file first, holds it, and writes pid 1 in it.
    let Some(mut c) = as_nobody(&[
        "flock",
        "-o",
        lock_s,
        "sh",
        "-c",
        &format!("echo 1 > {lock_s}; echo ready; sleep 60"),
    ]) else {
        return skip!(optional: "{test}: needs root and setpriv for a second user");
    };
    let mut holder = c.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(holder.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n");
    assert_eq!(std::fs::metadata(&lock).unwrap().uid(), 65534);
    let o = s.run(&["-d", "0.01"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("it belongs to uid 65534, not to this user (uid 0): another user made it")
            && err.contains(&format!("(pid {} (flock), uid 65534 holds it)", holder.id())),
        "{err}"
    );
    assert!(
        !err.contains("pid 1,") && !err.contains("another clockscope sweep"),
        "faked: {err}"
    );
    assert_eq!(s.current(), "tsc\n", "nothing switched");
    holder.kill().unwrap();
    holder.wait().unwrap();
    // Still theirs: still refused, until it is removed.
    assert_eq!(s.run(&["-d", "0.01"]).status.code(), Some(2));
    std::fs::remove_file(&lock).unwrap();
    let o = s.run(&["-d", "0.01", "--only", "hpet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The sweep's own file: root's, 0600, so no other user can open it to hold it.
    let m = std::fs::metadata(&lock).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o777), (0, 0o600));
    let o = as_nobody(&["flock", "-n", lock_s, "true"]).unwrap().output().unwrap();
    assert!(!o.status.success(), "nobody took root's lock");
    let o = s.run(&["-d", "0.01", "--only", "hpet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

//! The real `clockscope` binary refuses, in one line before anything runs,
//! a report (`-o`, stdout) or plot that would replace one of its own inputs
//! (issue 32): `dmesg log -o log`, `tsc --cpuid-dump d -o d`, and the same
//! file under every other name (`./X`, a symbolic link, a hard link, stdin
//! redirected from it, stdout appending to it), and an existing file inside
//! a `--root` tree. Each case first runs with another output to show the
//! command would otherwise succeed and write.

use std::fs::OpenOptions;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common;
use common::BIN;

const DUMP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../system/tests/data/cpuid/kvm_this_machine.cpuid-r.txt"
);
const LOG: &str = "[    0.000000] Linux version 6.1.0\n[    0.100000] tsc: Detected 2595.124 MHz processor\n";

fn run_in(dir: &Path, args: &[&str], stdin: Stdio, stdout: Stdio) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn run(dir: &Path, args: &[&str]) -> Output {
    run_in(dir, args, Stdio::null(), Stdio::piped())
}

/// Exit 2, one line naming the input, nothing on stdout, `input` unchanged.
fn assert_refused(o: &Output, input: &Path, before: &[u8], case: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{case}: {err}");
    assert_eq!(err.lines().count(), 1, "{case}: {err}");
    assert!(
        err.starts_with("clockscope: error: ") && err.contains("an input of this run: the report would replace"),
        "{case}: {err}"
    );
    assert!(o.stdout.is_empty(), "{case}");
    assert_eq!(
        std::fs::read(input).unwrap(),
        before,
        "{case}: the input was left as it was"
    );
}

/// A file `name` in `dir` with `content`, a symbolic link `name.sym` and a hard link `name.hard` to it.
fn input_with_links(dir: &Path, name: &str, content: &[u8]) {
    std::fs::write(dir.join(name), content).unwrap();
    std::os::unix::fs::symlink(name, dir.join(format!("{name}.sym"))).unwrap();
    std::fs::hard_link(dir.join(name), dir.join(format!("{name}.hard"))).unwrap();
}

/// Every name of `input` as `-o`, and `input` under every name with `-o input`.
fn every_spelling(dir: &Path, name: &str, args: impl Fn(&str, &str) -> Vec<String>) {
    let before = std::fs::read(dir.join(name)).unwrap();
    let names = [
        name.to_string(),
        format!("./{name}"),
        format!("{name}.sym"),
        format!("{name}.hard"),
        dir.join(name).to_string_lossy().into_owned(),
    ];
    for input in &names {
        for output in &names {
            let a = args(input, output);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            assert_refused(&run(dir, &a), &dir.join(name), &before, &a.join(" "));
        }
    }
    // The same run with its own output file succeeds and writes it.
    let a = args(name, "elsewhere");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let o = run(dir, &a);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.join("elsewhere").is_file());
}

#[test]
fn dmesg_never_replaces_its_log() {
    let dir = tempfile::tempdir().unwrap();
    input_with_links(dir.path(), "log", LOG.as_bytes());
    every_spelling(dir.path(), "log", |i, o| {
        ["dmesg", i, "-o", o].map(String::from).to_vec()
    });
    let log = dir.path().join("log");
    let before = std::fs::read(&log).unwrap();
    // stdin redirected from the log, the report to it.
    let o = run_in(
        dir.path(),
        &["dmesg", "-", "-o", "log.hard"],
        Stdio::from(std::fs::File::open(&log).unwrap()),
        Stdio::piped(),
    );
    assert_refused(&o, &log, &before, "dmesg - < log -o log.hard");
    // The report on stdout, appended to the log it reads (`dmesg log >> log`).
    let append = OpenOptions::new().append(true).open(&log).unwrap();
    let o = run_in(dir.path(), &["dmesg", "log.sym"], Stdio::null(), Stdio::from(append));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the report (stdout) is the same file as the log log.sym"),
        "{err}"
    );
    assert_eq!(std::fs::read(&log).unwrap(), before);
}

#[test]
fn tsc_never_replaces_its_cpuid_dump() {
    let dir = tempfile::tempdir().unwrap();
    input_with_links(dir.path(), "d", &std::fs::read(DUMP).unwrap());
    every_spelling(dir.path(), "d", |i, o| {
        ["tsc", "--cpuid-dump", i, "-o", o].map(String::from).to_vec()
    });
}

#[test]
fn no_command_replaces_a_file_of_its_root_tree() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("R");
    let cs = r.join("sys/devices/system/clocksource/clocksource0");
    std::fs::create_dir_all(&cs).unwrap();
    std::fs::create_dir_all(r.join("proc")).unwrap();
    std::fs::write(r.join("proc/cpuinfo"), "processor\t: 0\n").unwrap();
    std::fs::create_dir_all(r.join("dev")).unwrap();
    std::fs::write(
        r.join("dev/kmsg"),
        "6,1,100000,-;tsc: Detected 2595.124 MHz processor\n",
    )
    .unwrap();
    std::fs::write(cs.join("current_clocksource"), "tsc\n").unwrap();
    std::fs::write(cs.join("available_clocksource"), "tsc hpet\n").unwrap();
    std::os::unix::fs::symlink("R/proc/cpuinfo", dir.path().join("cpuinfo.sym")).unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["tsc", "--root", "R"], "R/proc/cpuinfo"),
        (&["tsc", "--root", "./R/"], "cpuinfo.sym"),
        (&["dmesg", "--root", "R"], "R/proc/cpuinfo"),
        (&["dmesg", "--root", "R"], "R/dev/kmsg"),
        (
            &["sweep", "--root", "R"],
            "R/sys/devices/system/clocksource/clocksource0/current_clocksource",
        ),
    ];
    for (args, output) in cases {
        let target = std::fs::canonicalize(dir.path().join(output)).unwrap();
        let before = std::fs::read(&target).unwrap();
        let o = run(dir.path(), &[args, &["-o", output]].concat());
        assert_refused(&o, &target, &before, &format!("{args:?} -o {output}"));
        // A new file beside the tree is fine.
        let o = run(dir.path(), &[args, &["-o", "report"]].concat());
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

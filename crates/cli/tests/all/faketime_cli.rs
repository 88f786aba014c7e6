//! Issue 21, under a real LD_PRELOAD time library (Debian's `faketime`,
//! libfaketime): `faketime -f '+0 x10'` runs every clock_gettime 10 times
//! fast, and a `FAKETIME_TIMESTAMP_FILE` changed mid-run steps
//! CLOCK_MONOTONIC back. Each test prints a skip and returns where
//! libfaketime cannot run here (not installed, not x86-64 for the TSC case).
//! Nothing asserts a duration of this machine: the run's forward time is at
//! least `-d` by the loop's own rule.

use crate::common;
use common::faketime::{faketime_works, step_back_until, timestamp_file_works, LIBFAKETIME};
use common::BIN;
use serde_json::Value;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A skip for a missing or broken libfaketime: a failure under
/// `CLOCKSCOPE_REQUIRE_DEPS=1` (scripts/test.sh installs faketime).
fn skip(test: &str, why: &str) {
    skip!("{test}: {why}");
}

/// A skip for what this machine lacks and CI cannot promise.
fn skip_optional(test: &str, why: &str) {
    skip!(optional: "{test}: {why}");
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {} stderr {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// `faketime -f '+0 x10' clockscope ARGS`.
fn under_x10(args: &[&str]) -> Output {
    Command::new("faketime")
        .args(["-f", "+0 x10", BIN])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run faketime")
}

#[test]
fn a_clock_ten_times_fast_untrusts_the_tsc_and_is_bad() {
    let test = "a_clock_ten_times_fast_untrusts_the_tsc_and_is_bad";
    if clockscope_system::counter::native_kind() != Some(clockscope_system::counter::CounterKind::Tsc) {
        return skip_optional(test, "no TSC on this architecture");
    }
    if let Err(why) = faketime_works() {
        return skip(test, &why);
    }
    let o = under_x10(&["tsc", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    if v["clockscope_frequency"]["source"] == "calibration_clockscope" || v["clockscope_frequency"]["khz"].is_null() {
        // Only the faked clock gives the frequency: there is nothing to compare it with.
        return skip_optional(
            test,
            "no authoritative TSC frequency here (CPUID, hypervisor leaf, perf page, kernel log)",
        );
    }
    assert_eq!(
        v["clockscope_decision"]["trusted"], false,
        "{}",
        v["frequency_agreement"]
    );
    assert_eq!(v["frequency_agreement"]["agree"], false);
    let t = v["frequency_agreement"]["time_interposition"].as_str().expect("set");
    assert!(
        t.contains("something between clockscope and the kernel changes time"),
        "{t}"
    );
    assert!(t.contains("supporting evidence: LD_PRELOAD="), "{t}");
    assert!(t.contains("libfaketime"), "{t}");
    // -900000 ppm, within what a loaded machine's calibration can add.
    let ppm = v["frequency_sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "calibration_clockscope")
        .unwrap()["ppm_vs_in_use"]
        .as_f64()
        .unwrap();
    assert!((ppm + 900_000.0).abs() < 10_000.0, "{ppm}");

    let o = under_x10(&["tsc", "-v"]);
    let text = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(text.contains("clockscope: the TSC is NOT trusted"), "{text}");
    assert!(text.contains("NOT OK frequency known and sources agree"), "{text}");

    let o = under_x10(&["--clock", "monotonic", "-d", "0.05", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["verdict"]["status"], "bad");
    assert_eq!(v["environment"]["counter_trusted"], false);
    let problems: Vec<&str> = v["verdict"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("time is not the kernel's here: ")),
        "{problems:?}"
    );
}

#[test]
fn a_monotonic_clock_stepped_back_still_reports_the_elapsed_time() {
    let test = "a_monotonic_clock_stepped_back_still_reports_the_elapsed_time";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("faketime.rc");
    // Whether the file is read through LD_PRELOAD here (time 100 days back).
    if let Err(why) = timestamp_file_works(&file) {
        return skip(test, &why);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = step_back_until(file.clone(), stop.clone());
    // Every 50 ms the file moves the clocks 100 s further back, and
    // libfaketime reads it again at least every 2 s (FAKETIME_CACHE_DURATION
    // counts whole seconds): every 3 s run of the loop (repeated while noisy)
    // steps back at least once. `-d 8` is the clock's whole budget: its
    // EXPLAIN model takes a quarter and the first run half of the rest, 3 s.
    // Cached, a read costs what libfaketime adds, not a file read.
    let o = Command::new(BIN)
        .args(["--clock", "monotonic", "-d", "8", "--format", "json"])
        .env("LD_PRELOAD", LIBFAKETIME)
        .env("FAKETIME_TIMESTAMP_FILE", &file)
        .env("FAKETIME_CACHE_DURATION", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    let c = &v["clocks"][0];
    assert!(c["backward_steps"].as_u64().unwrap() >= 1, "{c}");
    assert_eq!(c["elapsed_source"], "forward_steps", "{c}");
    // Each run lasts until its forward time reaches its share of the budget
    // (3 s, then 1.5 s and 1.5 s when repeated as noisy), whichever run is
    // kept: never 0, never the stepped-back difference.
    assert!(c["elapsed_ns"].as_u64().unwrap() >= 1_000_000_000, "{c}");
    assert!(c["end_minus_start_ns"].as_i64().unwrap() < 0, "{c}");
    assert!(c["avg_loop_ns"].as_f64().unwrap() > 0.0, "{c}");
    assert_eq!(v["verdict"]["status"], "broken");
    let first = v["verdict"]["problems"][0].as_str().unwrap();
    assert!(first.contains("are the sum of its forward steps"), "{first}");
}

/// `clockscope ARGS` under libfaketime reading `file` afresh at every call
/// (stdin closed, stdout and stderr piped).
fn spawn_faked(args: &[&str], file: &std::path::Path) -> std::process::Child {
    Command::new(BIN)
        .args(args)
        .env("CLOCKSCOPE_TRACE_STARTUP", "1")
        .env("LD_PRELOAD", LIBFAKETIME)
        .env("FAKETIME_TIMESTAMP_FILE", file)
        .env("FAKETIME_NO_CACHE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Reads `child`'s stderr until a line contains `needle` (`what` names it in
/// the failure), then drains the rest in a thread (joined by
/// [`wait_or_kill`]).
fn wait_for_line(child: &mut std::process::Child, needle: &str, what: &str) -> std::thread::JoinHandle<()> {
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains(needle) {
        line.clear();
        assert!(std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0, "{what}");
    }
    std::thread::spawn(move || {
        std::io::Read::read_to_string(&mut err, &mut String::new()).unwrap();
    })
}

/// `child`'s output, or SIGKILL after 60 s: a hang is caught by a generous
/// limit, not timed. `true` when it had to be killed.
fn wait_or_kill(child: std::process::Child, drain: std::thread::JoinHandle<()>) -> (Output, bool) {
    let pid = child.id() as i32;
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            for _ in 0..1200 {
                if done.load(Ordering::SeqCst) {
                    return false;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            // SAFETY: a signal to our own child, still unreaped (done is false).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            true
        })
    };
    let o = child.wait_with_output().unwrap();
    done.store(true, Ordering::SeqCst);
    drain.join().unwrap();
    (o, watchdog.join().unwrap())
}

#[test]
fn tsc_drift_ends_when_every_clock_is_moved_back_a_day() {
    let test = "tsc_drift_ends_when_every_clock_is_moved_back_a_day";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("faketime.rc");
    if let Err(why) = timestamp_file_works(&file) {
        return skip(test, &why);
    }
    let mut child = spawn_faked(&["tsc", "--drift", "3", "--format", "json"], &file);
    // The window starts when this line is printed; 300 ms into it, every
    // faked clock (MONOTONIC, MONOTONIC_RAW, REALTIME) goes a day back.
    let drain = wait_for_line(&mut child, "measuring the counter's drift", "no drift window started");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, "-1d\n").unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    // The window is 3 s of forward time.
    let (o, killed) = wait_or_kill(child, drain);
    assert!(!killed, "tsc --drift 3 still ran after 60 s: killed");
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{:?} {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&o);
    let d = &v["drift"];
    assert_eq!(d["complete"], true, "{d}");
    assert!(d["vs_monotonic_raw"].is_null() && d["vs_realtime"].is_null(), "{d}");
    assert!(
        d["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with("CLOCK_MONOTONIC_RAW went back during the window")),
        "{d}"
    );
}

#[test]
fn cross_cpu_ends_when_every_clock_is_moved_back_a_day() {
    let test = "cross_cpu_ends_when_every_clock_is_moved_back_a_day";
    if common::allowed_cpus().len() < 2 {
        return skip_optional(test, "needs two CPUs");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("faketime.rc");
    if let Err(why) = timestamp_file_works(&file) {
        return skip(test, &why);
    }
    let mut child = spawn_faked(&["cross-cpu", "-d", "3", "--format", "json"], &file);
    // The tests start when the startup trace says so; from then on every
    // faked clock steps 100 s further back every 50 ms. The warp tests and
    // the ping-pong rounds end on their forward time, not never.
    let drain = wait_for_line(&mut child, "first measurement (cross-cpu)", "no test started");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = step_back_until(file.clone(), stop.clone());
    let (o, killed) = wait_or_kill(child, drain);
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    assert!(!killed, "cross-cpu -d 3 still ran after 60 s: killed");
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{:?} {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    json(&o);
}

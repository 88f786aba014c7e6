//! `clockscope tsc` end to end: recorded dumps as text and JSON, a malformed
//! dump (exit 2, one line on stderr), this machine as JSON, and a fake
//! kernel tree through the hidden `--root`.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn clockscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clockscope"))
        .args(args)
        .output()
        .expect("run clockscope")
}

fn dump(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../clockscope/tests/data/cpuid")
        .join(name)
        .display()
        .to_string()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("UTF-8 stdout")
}

fn json(o: &Output) -> Value {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

fn assert_documented_keys(v: &Value) {
    for key in [
        "vendor",
        "family",
        "model",
        "stepping",
        "invariant_tsc",
        "rdtscp",
        "hypervisor",
        "cpuid_tsc_khz",
        "postgresql_tsc_khz",
        "frequency_sources",
        "postgresql_auto",
        "clockscope_decision",
    ] {
        assert!(v.get(key).is_some(), "missing key {key}");
    }
    let sources = v["frequency_sources"].as_array().expect("array");
    assert_eq!(sources.len(), 9);
    for s in sources {
        assert!(s["source"].is_string() && s["note"].is_string(), "{s}");
        assert!(s["khz"].is_u64() || s["khz"].is_null(), "{s}");
    }
    assert!(v["clockscope_decision"]["trusted"].is_boolean());
    assert!(v["postgresql_auto"]["use_by_default"].is_boolean());
    assert!(v["clockscope_decision"]["reasons"].as_array().unwrap().len() == 6);
}

fn source<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["frequency_sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no source {id}"))
}

#[test]
fn skylake_dump_as_text() {
    let o = clockscope(&["tsc", "--cpuid-dump", &dump("skylake_i5_6400t.aida64.txt")]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    assert!(text.contains("InstLatX64/AIDA64 format"), "{text}");
    assert!(
        text.contains("no kernel evidence, no perf page, no calibration"),
        "{text}"
    );
    assert!(text.contains("Intel(R) Core(TM) i5-6400T CPU @ 2.20GHz"));
    assert!(text.contains("0x6/0x5e/3"), "{text}");
    // 24 MHz table: 2208000 kHz, +3638 ppm vs the 0x16-derived 2199996 in use, flagged.
    let implied = text
        .lines()
        .find(|l| l.contains("cpuid 0x15, Linux 4.x implied crystal"))
        .unwrap();
    assert!(implied.trim_start().starts_with('!'), "{implied}");
    assert!(implied.contains("2208000") && implied.contains("+3638.2"), "{implied}");
    assert!(
        text.contains("PostgreSQL 19 would use   2200000 kHz (x86, cpuid 0x16)"),
        "{text}"
    );
    assert!(
        text.contains("clockscope uses           2199996 kHz (cpuid 0x15, crystal from 0x16)"),
        "{text}"
    );
    assert!(text.contains("clockscope: the TSC is NOT trusted"));
    assert!(text.contains("NOT OK  kernel clocksource"), "{text}");
}

#[test]
fn skylake_dump_as_json() {
    let v = json(&clockscope(&[
        "tsc",
        "--cpuid-dump",
        &dump("skylake_i5_6400t.aida64.txt"),
        "--format",
        "json",
    ]));
    assert_documented_keys(&v);
    assert_eq!(v["vendor"], "GenuineIntel");
    assert_eq!(
        (v["family"].as_u64(), v["model"].as_u64(), v["stepping"].as_u64()),
        (Some(6), Some(0x5E), Some(3))
    );
    assert_eq!(v["hypervisor"], Value::Null);
    assert_eq!(v["cpuid_tsc_khz"], 2_199_996);
    assert_eq!(v["postgresql_tsc_khz"], 2_200_000);
    assert_eq!(source(&v, "cpuid15_implied_crystal")["khz"], 2_208_000);
    assert_eq!(source(&v, "cpuid15")["khz"], Value::Null);
    assert_eq!(v["clockscope_decision"]["trusted"], false);
    assert_eq!(v["postgresql_auto"]["use_by_default"], true);
    assert_eq!(v["evidence_source"]["kind"], "cpuid_dump");
}

#[test]
fn vmware_dump_as_json_and_text() {
    let path = dump("vmware_workstation7_core2_t6500.cpuid-r.txt");
    let v = json(&clockscope(&["tsc", "--cpuid-dump", &path, "--format", "json"]));
    assert_documented_keys(&v);
    assert_eq!(v["hypervisor"], "VMwareVMware");
    assert_eq!(v["rdtscp"], false);
    assert_eq!(v["invariant_tsc"], false);
    // 0x40000010 EAX 0x00200B20 = 2 100 000 kHz; PostgreSQL has no TSC without RDTSCP.
    assert_eq!(source(&v, "hypervisor40000010")["khz"], 2_100_000);
    assert_eq!(v["postgresql_tsc_khz"], Value::Null);
    assert_eq!(v["postgresql_frequency"]["tsc_usable"], false);
    assert_eq!(v["clockscope_frequency"]["khz"], 2_100_000);

    let o = clockscope(&["tsc", "--cpuid-dump", &path]);
    let text = stdout(&o);
    assert!(text.contains("cpuid -r format"), "{text}");
    assert!(
        text.contains("\"VMwareVMware\", highest leaf 0x40000010, 0x40000010 EAX 2100000 kHz"),
        "{text}"
    );
    assert!(text.contains("PostgreSQL 19 would use   no TSC"), "{text}");
}

#[test]
fn malformed_dump_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(
        &bad,
        "CPU 0:\n   0x00000000 0x00: eax=0x00000016 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n   0x00000001 0x00: eax=0x000506e3 ebx=zzz\n",
    )
    .unwrap();
    let o = clockscope(&["tsc", "--cpuid-dump", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("clockscope: error: --cpuid-dump "), "{err}");
    assert!(err.contains("line 3:") && err.contains("ebx=zzz"), "{err}");

    // Not a dump at all.
    std::fs::write(&bad, "hello\nworld\n").unwrap();
    let o = clockscope(&["tsc", "--cpuid-dump", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("line 1: not a CPUID dump") && err.contains("'hello'"),
        "{err}"
    );

    // Missing file.
    let o = clockscope(&["tsc", "--cpuid-dump", dir.path().join("nope").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8(o.stderr).unwrap().lines().count(), 1);
}

#[test]
fn this_machine_as_json() {
    let v = json(&clockscope(&["tsc", "--format", "json", "--calibration-ms", "20"]));
    assert_documented_keys(&v);
    assert_eq!(v["evidence_source"]["kind"], "this_machine");
    if cfg!(target_arch = "x86_64") {
        assert!(v["vendor"].is_string());
        assert!(v["cpuid"].is_object());
        // The calibration ran and is sane: positive when it converged.
        let cal = &v["calibration"];
        assert!(cal.is_object(), "{cal}");
        if let Some(k) = cal["khz"].as_u64() {
            assert!(k > 0);
        }
    } else {
        assert_eq!(v["vendor"], Value::Null);
    }
}

#[test]
#[cfg_attr(not(target_arch = "x86_64"), ignore = "reads x86-64 CPUID and TSC evidence")]
fn print_cpuid_round_trips() {
    let o = clockscope(&["tsc", "--print-cpuid"]);
    assert_eq!(o.status.code(), Some(0));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("me.txt");
    std::fs::write(&file, &o.stdout).unwrap();
    let from_dump = json(&clockscope(&[
        "tsc",
        "--cpuid-dump",
        file.to_str().unwrap(),
        "--format",
        "json",
    ]));
    let live = json(&clockscope(&["tsc", "--format", "json", "--calibration-ms", "5"]));
    assert_eq!(from_dump["cpuid"], live["cpuid"]);
}

#[test]
#[cfg_attr(not(target_arch = "x86_64"), ignore = "reads x86-64 CPUID and TSC evidence")]
fn fake_kernel_tree_through_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
        "hpet\n",
    );
    write(
        "sys/devices/system/clocksource/clocksource0/available_clocksource",
        "hpet acpi_pm\n",
    );
    write("proc/cmdline", "BOOT_IMAGE=/vmlinuz ro tsc=unstable\n");
    write(
        "dev/kmsg",
        "6,1,0,-;tsc: Detected 2599.998 MHz processor\n4,2,1000,-;clocksource: Marking clocksource 'tsc' as unstable because the skew is too large:\n",
    );
    let v = json(&clockscope(&[
        "tsc",
        "--root",
        root.to_str().unwrap(),
        "--format",
        "json",
        "--calibration-ms",
        "5",
    ]));
    let reasons = v["clockscope_decision"]["reasons"].as_array().unwrap();
    let by = |check: &str| reasons.iter().find(|r| r["check"] == check).unwrap().clone();
    assert_eq!(v["clockscope_decision"]["trusted"], false);
    assert_eq!(by("kernel clocksource")["ok"], false);
    assert!(by("kernel clocksource")["evidence"].as_str().unwrap().contains("hpet"));
    assert_eq!(by("not marked unstable")["ok"], false);
    assert_eq!(by("no boot option against the TSC")["ok"], false);
    assert!(by("no boot option against the TSC")["evidence"]
        .as_str()
        .unwrap()
        .contains("tsc=unstable"));
    assert_eq!(source(&v, "kernel_log")["khz"], 2_599_998);
    let pg = &v["postgresql_auto"]["reasons"][1]["evidence"];
    assert!(pg.as_str().unwrap().contains("current_clocksource is 'hpet'"), "{pg}");
}

#[test]
fn files_that_are_not_dumps_fail_fast_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("binary.dump");
    std::fs::write(&binary, [0x7f, b'E', b'L', b'F', 0xff, 0xfe, 0, 1]).unwrap();
    for (path, expected) in [
        ("/dev/zero", "larger than 4 MiB: not a CPUID dump"),
        (dir.path().to_str().unwrap(), "is a directory"),
        (binary.to_str().unwrap(), "not a text file"),
        ("/nonexistent/dump.txt", "No such file or directory"),
    ] {
        let o = clockscope(&["tsc", "--cpuid-dump", path]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{path}: {err}");
        assert_eq!(err.lines().count(), 1, "{path}: {err}");
        assert!(
            err.contains(&format!("--cpuid-dump {path}")) && err.contains(expected),
            "{path}: {err}"
        );
        assert!(o.stdout.is_empty());
    }
    let o = clockscope(&["tsc", "--root", "/nonexistent-root"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--root /nonexistent-root: not a directory"));
}

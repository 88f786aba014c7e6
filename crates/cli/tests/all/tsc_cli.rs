//! `clockscope tsc` end to end: recorded dumps as text and JSON, a malformed
//! dump (exit 2, one line on stderr), this machine as JSON, and a fake
//! kernel tree through the hidden `--root`, and inputs that must be refused
//! at once (a FIFO dump, a device node as /proc/cpuinfo, oversized files).

use crate::common;
use common::clockscope;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn dump(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../system/tests/data/cpuid")
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
    let o = clockscope(&["tsc", "-v", "--cpuid-dump", &dump("skylake_i5_6400t.aida64.txt")]);
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

    let o = clockscope(&["tsc", "-v", "--cpuid-dump", &path]);
    // Lines longer than 100 columns wrap: compare the words.
    let text = stdout(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("cpuid -r format"), "{text}");
    assert!(
        text.contains("\"VMwareVMware\", highest leaf 0x40000010, 0x40000010 EAX 2100000 kHz"),
        "{text}"
    );
    assert!(text.contains("PostgreSQL 19 would use no TSC"), "{text}");
}

/// Issue 21: a dump whose highest extended leaf is 0x80000001 but which
/// carries a 0x80000007 line (EDX bit 8 set), and 0x15/0x16 lines above leaf
/// 0's maximum 0xd: "not reported (highest ... leaf is ...)", never "clear".
#[test]
fn leaves_above_the_maxima_are_not_reported_in_text_and_json() {
    let path = dump("truncated_leaves_hostile.cpuid-r.txt");
    let o = clockscope(&["tsc", "-v", "--cpuid-dump", &path]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains(
            "  invariant TSC   (0x80000007 EDX bit 8)   not reported (highest extended leaf is 0x80000001)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  leaf 0x15                                not reported (highest basic leaf is 0xd)\n"),
        "{text}"
    );
    assert!(
        text.contains("  leaf 0x16                                not reported (highest basic leaf is 0xd)\n"),
        "{text}"
    );
    assert!(
        words.contains("invariant TSC CPUID 0x80000007 not reported (highest extended leaf is 0x80000001)"),
        "{text}"
    );
    assert!(!words.contains("EDX bit 8 clear"), "{text}");

    let v = json(&clockscope(&["tsc", "--cpuid-dump", &path, "--format", "json"]));
    assert_documented_keys(&v);
    assert_eq!(v["invariant_tsc"], false);
    let invariant = v["clockscope_decision"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["check"] == "invariant TSC")
        .unwrap();
    assert_eq!(invariant["ok"], false);
    assert!(
        invariant["evidence"]
            .as_str()
            .unwrap()
            .starts_with("CPUID 0x80000007 not reported (highest extended leaf is 0x80000001)"),
        "{invariant}"
    );
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
        ("/dev/zero", "is a character device, not a regular file: refused"),
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

/// Runs clockscope with `args`; fails the test (and kills the child) if it
/// has not exited within `limit` (times `CLOCKSCOPE_TEST_TIME_FACTOR`).
fn clockscope_within(args: &[&str], limit: std::time::Duration) -> Output {
    let limit = common::time_limit::limit(limit);
    let mut child = Command::new(env!("CARGO_BIN_EXE_clockscope"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run clockscope");
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("clockscope {args:?} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn fifo_dump_is_refused_within_one_second() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("dump.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // No writer: opening it for reading would block for ever.
    let o = clockscope_within(
        &["tsc", "--cpuid-dump", fifo.to_str().unwrap()],
        std::time::Duration::from_secs(1),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "--cpuid-dump {}: is a FIFO, not a regular file",
            fifo.display()
        )),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn oversized_dump_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.txt");
    // A regular file one byte over the 4 MiB cap, of valid comment lines.
    let mut text = "# padding\n".repeat((4 << 20) / 10 + 1);
    text.truncate((4 << 20) + 1);
    std::fs::write(&big, &text).unwrap();
    let o = clockscope(&["tsc", "--cpuid-dump", big.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("larger than 4 MiB: not a CPUID dump"), "{err}");
}

/// `--root` whose proc/cpuinfo is a copy of /dev/zero (made with mknod, so
/// the real device is never touched): refused at once, in bounded memory
/// (the run is limited to 1 GiB of address space; reading /dev/zero to the
/// end once took 8.6 GB).
#[test]
fn device_node_as_cpuinfo_under_root_is_refused_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::create_dir_all(root.join("sys/devices/system/clocksource/clocksource0")).unwrap();
    std::fs::write(
        root.join("sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "tsc\n",
    )
    .unwrap();
    let zero = root.join("proc/cpuinfo");
    let made = Command::new("mknod").arg(&zero).args(["c", "1", "5"]).status();
    if !made.is_ok_and(|s| s.success()) {
        return skip!(optional: "mknod is not allowed here (needs root)");
    }
    let fifo = root.join("proc/cmdline");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let script = format!(
        "ulimit -v 1048576 && exec {} tsc --root {} --format json --calibration-ms 5",
        env!("CARGO_BIN_EXE_clockscope"),
        root.display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        let limit = common::time_limit::limit(std::time::Duration::from_secs(20));
        if started.elapsed() > limit {
            child.kill().ok();
            panic!("clockscope tsc --root with a device as /proc/cpuinfo still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let v = json(&child.wait_with_output().unwrap());
    if cfg!(target_arch = "x86_64") {
        let flags = &v["linux"]["tsc_flags"]["unreadable"];
        assert!(
            flags
                .as_str()
                .unwrap()
                .ends_with("proc/cpuinfo: is a character device, not a regular file: refused"),
            "{flags}"
        );
        let cmdline = &v["linux"]["cmdline"]["unreadable"];
        assert!(cmdline.as_str().unwrap().contains("is a FIFO"), "{cmdline}");
        let reasons = v["clockscope_decision"]["reasons"].as_array().unwrap();
        assert!(reasons
            .iter()
            .any(|r| r["check"] == "invariant TSC" && r["ok"] == false));
    }
}

/// A `cpuid -r` dump of a bare-metal Intel CPU with RDTSCP and invariant TSC,
/// leaf 0x15 = `leaf15` (EAX, EBX, ECX) and the brand string `brand`.
fn hand_built_dump(leaf15: [u32; 3], brand: &[u8]) -> String {
    let mut b = [0u8; 48];
    b[..brand.len()].copy_from_slice(brand);
    let word = |i: usize| u32::from_le_bytes(b[i * 4..i * 4 + 4].try_into().unwrap());
    let mut text = String::from("CPU 0:\n");
    let mut leaf = |l: u32, r: [u32; 4]| {
        text.push_str(&format!(
            "   0x{l:08x} 0x00: eax=0x{:08x} ebx=0x{:08x} ecx=0x{:08x} edx=0x{:08x}\n",
            r[0], r[1], r[2], r[3]
        ))
    };
    leaf(0, [0x16, 0x756e_6547, 0x6c65_746e, 0x4965_6e69]);
    leaf(1, [0x0005_0654, 0, 0, 1 << 4]);
    leaf(0x15, [leaf15[0], leaf15[1], leaf15[2], 0]);
    leaf(0x8000_0000, [0x8000_0008, 0, 0, 0]);
    leaf(0x8000_0001, [0, 0, 0, 1 << 27]);
    for (n, l) in (0x8000_0002u32..=0x8000_0004).enumerate() {
        leaf(l, [word(n * 4), word(n * 4 + 1), word(n * 4 + 2), word(n * 4 + 3)]);
    }
    leaf(0x8000_0007, [0, 0, 0, 1 << 8]);
    text
}

/// No control character but newline reaches stdout.
fn assert_no_raw_controls(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let bad: Vec<char> = text.chars().filter(|c| c.is_control() && *c != '\n').collect();
    assert!(bad.is_empty(), "raw control characters {bad:?} in:\n{text}");
}

#[test]
fn absurd_leaves_and_hostile_brand_in_a_dump() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absurd.txt");
    // eax=1, ebx=ecx=0xffffffff; the brand retitles the terminal and rings the bell.
    std::fs::write(
        &path,
        hand_built_dump([1, u32::MAX, u32::MAX], b"Evil\x1b]0;owned\x07 CPU\x1b[2J"),
    )
    .unwrap();
    let p = path.to_str().unwrap();
    let text = clockscope(&["tsc", "-v", "--cpuid-dump", p]);
    assert_eq!(text.status.code(), Some(0), "{}", String::from_utf8_lossy(&text.stderr));
    assert_no_raw_controls(&text.stdout);
    let shown = stdout(&text);
    assert!(shown.contains("Evil\\x1b]0;owned\\x07 CPU\\x1b[2J"), "{shown}");
    assert!(shown.contains("implausible, not used"), "{shown}");
    assert!(!shown.contains("ok      frequency known"), "{shown}");

    let json_out = clockscope(&["tsc", "--cpuid-dump", p, "--format", "json"]);
    assert_no_raw_controls(&json_out.stdout);
    let v = json(&json_out);
    assert_matches_tsc_schema(&v);
    let s = source(&v, "cpuid15");
    assert_eq!(s["khz"], Value::Null);
    assert_eq!(s["implausible_khz"], 18_446_742_798_104_265u64);
    assert_eq!(v["cpuid_tsc_khz"], Value::Null);
    let check = v["clockscope_decision"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["check"] == "frequency known and sources agree")
        .unwrap()
        .clone();
    assert_eq!(check["ok"], false);
    // PostgreSQL's uint32 product wraps to a negative int32: it would calibrate.
    assert_eq!(v["postgresql_tsc_khz"], Value::Null);

    // A 1 Hz crystal: 0 kHz, no longer "ok".
    std::fs::write(&path, hand_built_dump([1, 84, 1], b"CPU")).unwrap();
    let v = json(&clockscope(&["tsc", "--cpuid-dump", p, "--format", "json"]));
    assert_eq!(source(&v, "cpuid15")["implausible_khz"], 0);
    assert_matches_tsc_schema(&v);
    assert_eq!(v["clockscope_decision"]["reasons"][4]["ok"], false);
}

#[test]
fn dump_with_bom_is_read_and_duplicated_leaf_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bom.txt");
    let good = hand_built_dump([2, 200, 24_000_000], b"Intel CPU");
    std::fs::write(&path, format!("\u{feff}{good}")).unwrap();
    let v = json(&clockscope(&[
        "tsc",
        "--cpuid-dump",
        path.to_str().unwrap(),
        "--format",
        "json",
    ]));
    assert_eq!(source(&v, "cpuid15")["khz"], 2_400_000);

    // Leaf 0x15 again with other registers, on line 11 (after "CPU 0:" and ten leaves).
    let twice = format!("{good}   0x00000015 0x00: eax=0x00000001 ebx=0x00000001 ecx=0x00000001 edx=0x00000000\n");
    std::fs::write(&path, twice).unwrap();
    let o = clockscope(&["tsc", "-v", "--cpuid-dump", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("line 11:") && err.contains("on line 4 and line 11"),
        "{err}"
    );
}

/// `v` follows docs/schema/tsc.schema.json (implausible values included).
fn assert_matches_tsc_schema(v: &Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/tsc.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// A fake kernel tree with this AMD KVM guest's recorded kernel log and clocksource tsc.
fn amd_guest_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
        "tsc\n",
    );
    write(
        "proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n\
         flags\t\t: fpu tsc rdtscp constant_tsc nonstop_tsc tsc_known_freq hypervisor\n\n",
    );
    let log = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../system/tests/data/linux/amd-kvm-guest.dmesg"),
    )
    .unwrap();
    // A hostile line too: the kernel's text is untrusted.
    write(
        "dev/kmsg",
        &format!("{log}[    9.0] clocksource: Switched to clocksource tsc\u{1b}]0;owned\u{7}\n"),
    );
    dir
}

#[test]
#[cfg_attr(not(target_arch = "x86_64"), ignore = "reads x86-64 CPUID and TSC evidence")]
fn kernel_messages_ntp_and_independence_in_text_and_json() {
    let dir = amd_guest_root();
    let root = dir.path().to_str().unwrap();
    let args = ["tsc", "-v", "--root", root, "--calibration-ms", "20"];
    let out = clockscope(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_no_raw_controls(&out.stdout);
    let text = stdout(&out);
    assert!(text.contains("Kernel log, TSC and clocksource messages"), "{text}");
    assert!(
        text.contains("\"[Firmware Bug]: TSC doesn't count with P0 frequency!\""),
        "{text}"
    );
    assert!(text.contains("benign in a guest"), "{text}");
    assert!(text.contains("\\x1b]0;owned\\x07"), "{text}");
    assert!(
        text.contains("NTP (adjtimex, read-only)\n  not read: kernel files under another root"),
        "{text}"
    );
    assert!(text.contains("Linux's CPUID rule: "), "{text}");
    // The sections this change adds fit 100 columns.
    let start = text.find("Kernel log, TSC").unwrap();
    let end = text.find("TSC frequency sources").unwrap();
    for line in text[start..end]
        .lines()
        .chain(text[text.find("NTP (").unwrap()..].lines())
    {
        assert!(line.chars().count() <= 100, "{line}");
    }

    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let v = json(&clockscope(&json_args));
    assert_matches_tsc_schema(&v);
    let msgs = v["linux"]["kernel_log"]["found"]["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["kind"], "firmware_bug_p0");
    assert_eq!(msgs[0]["severity"], "info");
    let switched = msgs.iter().find(|m| m["kind"] == "switched_clocksource").unwrap();
    assert_eq!(switched["count"], 3);
    assert_eq!(v["ntp"], Value::Null);
    assert_eq!(v["ntp_unavailable"], "not read: kernel files under another root");
    assert_eq!(v["drift"], Value::Null);
    assert!(v["cpuid_tsc_rule"].is_string());
    // clocksource tsc: a converged calibration is a check of the kernel's arithmetic.
    let cal = source(&v, "calibration_clockscope");
    if !cal["khz"].is_null() {
        assert_eq!(cal["independent"], false, "{cal}");
        assert!(cal["note"]
            .as_str()
            .unwrap()
            .starts_with("check of the kernel's arithmetic"));
        assert!(!v["frequency_agreement"]["evidence"]
            .as_str()
            .unwrap()
            .contains("independent source(s) within"));
    }
}

#[test]
fn bad_drift_values_are_one_line_naming_the_option() {
    for bad in ["0", "-5", "abc", "86401", "1.5", ""] {
        let out = clockscope(&["tsc", "--drift", bad]);
        assert_eq!(out.status.code(), Some(2), "--drift {bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "--drift {bad:?}: {err}");
        assert!(err.contains("--drift"), "--drift {bad:?}: {err}");
        assert!(out.stdout.is_empty(), "--drift {bad:?}: no partial report");
    }
    // A dump has no counter to measure.
    let out = clockscope(&[
        "tsc",
        "--drift",
        "1",
        "--cpuid-dump",
        &dump("skylake_i5_6400t.aida64.txt"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--drift"));
}

#[test]
#[cfg_attr(not(target_arch = "x86_64"), ignore = "measures the TSC")]
fn drift_of_this_machine_as_json() {
    let out = clockscope(&["tsc", "--drift", "1", "--calibration-ms", "20", "--format", "json"]);
    let v = json(&out);
    assert_matches_tsc_schema(&v);
    let d = &v["drift"];
    assert_eq!(d["complete"], true, "{d}");
    assert!(d["samples"].as_u64().unwrap() >= 2, "{d}");
    assert!(d["measured_s"].as_f64().unwrap() >= 1.0, "{d}");
    // Against MONOTONIC_RAW a rate always exists; its uncertainty is stated.
    assert!(d["vs_monotonic_raw"]["uncertainty_ppm"].as_f64().unwrap() >= 0.0, "{d}");
    // This machine's real NTP state is read (adjtimex needs no privilege).
    assert!(v["ntp"].is_object(), "{}", v["ntp_unavailable"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Ctrl-C stops it with a partial result"));
}

#[test]
#[cfg_attr(not(target_arch = "x86_64"), ignore = "measures the TSC")]
fn ctrl_c_during_drift_prints_a_partial_result_and_exits_130() {
    use std::io::BufRead;
    use std::process::Stdio;
    let mut child = Command::new(common::BIN)
        .args(["tsc", "-v", "--drift", "60", "--calibration-ms", "20"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The handler is installed before this line is printed.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("measuring the counter's drift for 60 s"), "{line}");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: sending SIGINT to our own child process by its pid.
    let rc = unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(rc, 0);
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(130), "{out}");
    assert!(out.contains(" samples), PARTIAL, ppm of "), "{out}");
    assert!(out.contains("partial result: interrupted after"), "{out}");
}

/// Issue 24: the default text is one screen, `--verbose` today's full
/// report; both snapshotted from a recorded dump (no machine evidence).
#[test]
fn default_text_is_one_screen_and_verbose_is_the_full_report() {
    // Run beside the dump, so that the text names it the same in every checkout.
    let dir = PathBuf::from(dump("."));
    let run = |extra: &[&str]| {
        let o = Command::new(common::BIN)
            .current_dir(&dir)
            .args(["tsc", "--cpuid-dump", "skylake_i5_6400t.aida64.txt"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        stdout(&o)
    };
    let (short, full) = (run(&[]), run(&["--verbose"]));
    assert!(short.contains("clockscope: the TSC is NOT trusted"), "{short}");
    common::one_screen_and_verbose("tsc_skylake_dump", &short, &full);
}

/// Issue 34: the default text in Russian (`--lang ru`, as `LANG=ru_RU.UTF-8`
/// chooses it) from the same recorded dump, its labels lined up by columns
/// and its ppm with a decimal comma; `--lang en` is the English snapshot.
#[test]
fn default_text_in_russian_snapshot() {
    let dir = PathBuf::from(dump("."));
    let run = |lang: &str| {
        let o = Command::new(common::BIN)
            .current_dir(&dir)
            .args(["tsc", "--lang", lang, "--cpuid-dump", "skylake_i5_6400t.aida64.txt"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        stdout(&o)
    };
    let body = |t: &str| t.split_once('\n').map_or(String::new(), |(_, b)| b.to_string());
    let ru = body(&run("ru"));
    assert!(ru.contains("clockscope: TSC НЕ надёжен"), "{ru}");
    assert!(ru.contains("+3638,2 ppm") && !ru.contains("Recommendation"), "{ru}");
    assert!(ru.lines().all(|l| textwrap::core::display_width(l) <= 100), "{ru}");
    assert!(ru.lines().count() < common::snapshot::ONE_SCREEN_LINES, "{ru}");
    // The labels' values start in one column, counted in display columns.
    let starts: Vec<usize> = ["процессор ", "частота "]
        .iter()
        .map(|label| {
            let line = ru.lines().find(|l| l.starts_with(label)).unwrap();
            let value = line.len() - line[label.len()..].trim_start().len();
            textwrap::core::display_width(&line[..value])
        })
        .collect();
    assert_eq!(starts, [13, 13], "{ru}");
    common::snapshot::snapshot_eq("tsc_skylake_dump.ru.txt", &ru);
    common::snapshot::snapshot_eq("tsc_skylake_dump.txt", &body(&run("en")));
}

/// Issue 34: the `--verbose` text in Russian from the same recorded dump:
/// every label, table head and sentence of clockscope's own through the
/// catalog, the labels' values in one display column, ppm with a decimal comma.
#[test]
fn verbose_text_in_russian_snapshot() {
    let dir = PathBuf::from(dump("."));
    let o = Command::new(common::BIN)
        .current_dir(&dir)
        .args([
            "tsc",
            "--lang",
            "ru",
            "--verbose",
            "--cpuid-dump",
            "skylake_i5_6400t.aida64.txt",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    let ru = text.split_once('\n').map_or(String::new(), |(_, b)| b.to_string());
    assert!(ru.contains("Флаги CPUID") && ru.contains("+3638,2"), "{ru}");
    assert!(ru.lines().all(|l| textwrap::core::display_width(l) <= 100), "{ru}");
    // The CPU block's values start in one column, counted in display columns.
    let starts: Vec<usize> = ["  производитель ", "  название "]
        .iter()
        .map(|label| {
            let line = ru.lines().find(|l| l.starts_with(label)).unwrap();
            let value = line.len() - line[label.len()..].trim_start().len();
            textwrap::core::display_width(&line[..value])
        })
        .collect();
    assert_eq!(starts[0], starts[1], "{ru}");
    common::snapshot::snapshot_eq("tsc_skylake_dump_verbose.ru.txt", &ru);
}

/// Issue 34: `tsc -v` in Russian with the kernel's evidence (the recorded
/// AMD guest's tree): the Linux block's labels in one display column, the
/// kernel messages' heading and marks, NTP's heading, in the catalog's words.
#[test]
#[cfg_attr(not(target_arch = "x86_64"), ignore = "reads x86-64 CPUID and TSC evidence")]
fn kernel_evidence_in_russian() {
    let dir = amd_guest_root();
    let root = dir.path().to_str().unwrap();
    let out = clockscope(&["tsc", "--lang", "ru", "-v", "--root", root, "--calibration-ms", "20"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_no_raw_controls(&out.stdout);
    let text = stdout(&out);
    for words in [
        "Журнал ядра: сообщения о TSC и часовом источнике",
        "! = стоит проверить (прочитано для: ",
        "NTP (adjtimex, только чтение)",
        "  журнал ядра ",
        "  флаги TSC в cpuinfo ",
    ] {
        assert!(text.contains(words), "{words:?} not in:\n{text}");
    }
    assert!(text.lines().all(|l| textwrap::core::display_width(l) <= 100), "{text}");
    let value_col = |label: &str| {
        let line = text.lines().find(|l| l.starts_with(&format!("  {label} "))).unwrap();
        textwrap::core::display_width(&line[..line.len() - line[2 + label.len()..].trim_start().len()])
    };
    assert_eq!(value_col("ядро"), value_col("параметры загрузки"), "{text}");
    assert_eq!(value_col("ядро"), value_col("журнал ядра"), "{text}");
}

//! `clockscope cross-cpu`: the real binary on this machine (sanity checks
//! only: a shared VM's timing is not asserted), its errors and 1-CPU case,
//! Ctrl-C, and the text report of a constructed result, compared exactly.

use crate::common;
use clockscope_cli::commands::cross_cpu as render;
use clockscope_cli::commands::cross_cpu::model::Outcome;
use clockscope_cli::report::stamp::Stamped;
use clockscope_system::crosscpu::{
    ClockPairReport, CpuContext, CrossCpuReport, OffsetResult, PairKind, PairMode, PairReport, PlannedPair, Verdict,
    WarpResult,
};
use clockscope_system::linux::{CpuList, CpuSet, Evidence};
use common::{allowed_cpus, clockscope, has_taskset, test_stamp};
use std::process::{Command, Output, Stdio};

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn real_run_reports_every_pair_as_json() {
    let out = clockscope(&["cross-cpu", "-d", "0.3", "--format", "json"]);
    let code = out.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "{code:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = json(&out);
    let cpus = j["cpus"].as_array().unwrap().len();
    let pairs = j["pairs"].as_array().unwrap();
    if cpus < 2 {
        assert!(pairs.is_empty());
        assert_eq!(code, Some(0));
        return skip!(optional: "the pair checks need 2 allowed CPUs, this process has 1");
    }
    // The default is --pairs topology: O(N) pairs covering every CPU.
    assert_eq!(j["pair_mode"], "topology");
    assert_eq!(pairs.len() as u64, j["pairs_planned"].as_u64().unwrap());
    assert!(pairs.len() <= 2 * cpus, "{}", pairs.len());
    let mut covered: Vec<u64> = pairs
        .iter()
        .flat_map(|p| [p["cpu_a"].as_u64().unwrap(), p["cpu_b"].as_u64().unwrap()])
        .collect();
    covered.sort_unstable();
    covered.dedup();
    if j["topology"].is_string() {
        // Every CPU is covered except SMT siblings alone on a single-core die.
        assert!(covered.len() * 2 >= cpus, "{covered:?}");
    }
    let answers = j["answers"].as_array().unwrap();
    assert_eq!(answers.len(), j["clocks"].as_array().unwrap().len());
    // On one package (this 2-vCPU VM) the answer says there is no package pair.
    if j["topology"].as_str().is_some_and(|t| t.starts_with("1 package,")) {
        for a in answers {
            let text = a["text"].as_str().unwrap();
            assert!(text.starts_with("1 package (package "), "{text}");
            assert!(text.contains("no package pair to compare; its CPUs "), "{text}");
        }
    }
    if cpus == 2 {
        assert_eq!(pairs.len(), 1);
        assert_eq!((&pairs[0]["cpu_a"], &pairs[0]["cpu_b"]), (&j["cpus"][0], &j["cpus"][1]));
    }
    for key in ["online_cpus", "cgroup_cpuset"] {
        let f = &j[key];
        assert!(
            f.is_null() || (f["file"].is_string() && f["content"].is_string() && f["cpus"].is_array()),
            "{key}: {f}"
        );
    }
    assert_eq!(j["exit_code"].as_i64(), code.map(i64::from));
    assert_eq!(j["problem"].as_bool(), Some(code == Some(1)));
    for pair in pairs {
        let clocks = pair["clocks"].as_array().unwrap();
        assert!(clocks.iter().any(|c| c["clock"] == "monotonic"), "{pair}");
        for c in clocks {
            for field in [
                "iterations",
                "warps",
                "max_warp_ticks",
                "offset_rounds",
                "warp_test_ns",
                "offset_test_ns",
            ] {
                assert!(c[field].is_u64(), "{field}: {c}");
            }
            assert!(c["iterations"].as_u64().unwrap() > 0, "{c}");
            assert!(c["warps"].as_u64() <= c["iterations"].as_u64());
            for field in ["offset_lower_ns", "offset_upper_ns", "max_warp_ns"] {
                assert!(c[field].is_i64() || c[field].is_null(), "{field}: {c}");
            }
            assert!(c["verdict_text"].as_str().is_some_and(|t| !t.is_empty()));
            let problem = ["warp", "offset", "inconsistent"].contains(&c["verdict"].as_str().unwrap());
            if problem {
                assert_eq!(code, Some(1), "{c}");
            }
        }
    }
}

#[test]
fn real_run_as_text_ends_with_a_summary() {
    for verbose in [false, true] {
        let args: &[&str] = if verbose {
            &["cross-cpu", "-d", "0.2", "-v"]
        } else {
            &["cross-cpu", "-d", "0.2"]
        };
        real_run_as_text(args, verbose);
    }
}

fn real_run_as_text(args: &[&str], verbose: bool) {
    let out = clockscope(args);
    assert!(matches!(out.status.code(), Some(0 | 1)));
    let text = String::from_utf8(out.stdout).unwrap();
    // The default is one screen; --verbose has every pair's table.
    assert_eq!(text.contains("Columns:"), verbose, "{text}");
    if !verbose {
        assert!(text.lines().count() <= 40, "{text}");
    }
    assert!(text.starts_with("clockscope "), "{text}");
    assert!(text.lines().nth(1).unwrap().starts_with("CPUs tested:"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    // The last line that is not the continuation of a wrapped one.
    let last = text.lines().rfind(|l| !l.starts_with(' ')).unwrap();
    assert!(
        last.starts_with("Summary: ") || last.starts_with("Nothing to measure: "),
        "{text}"
    );
}

#[test]
fn one_allowed_cpu_says_so_and_exits_0() {
    if !has_taskset() {
        return skip!("taskset not found (util-linux)");
    }
    // The child inherits this process's affinity mask.
    let cpu = allowed_cpus()[0].to_string();
    let bin = env!("CARGO_BIN_EXE_clockscope");
    let out = Command::new("taskset")
        .args(["-c", &cpu, bin, "cross-cpu"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Lines longer than 100 columns wrap: compare the words.
    let text = String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains(&format!(
            "Nothing to measure: only CPU {cpu} is available to this process (sched_getaffinity): there is no CPU \
             pair to compare."
        )),
        "{text}"
    );
    let out = Command::new("taskset")
        .args(["-c", &cpu, bin, "cross-cpu", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let j = json(&out);
    assert_eq!(j["pairs"], serde_json::json!([]));
    assert_eq!(j["allowed_cpus"], serde_json::json!([cpu.parse::<u64>().unwrap()]));
}

#[test]
fn bad_values_exit_2_with_one_line() {
    for (args, expected) in [
        (vec!["-d", "0"], "'0' must be a positive duration"),
        (vec!["-d", "-1"], "'-1' must be a positive duration"),
        (vec!["-d", "abc"], "'abc' is not a duration"),
        (vec!["--duration=nan"], "'nan' is not a duration"),
        (
            vec!["--cpus", "3-1"],
            "range '3-1' in CPU list '3-1' ends before it starts",
        ),
        (vec!["--cpus", "x"], "'x' in CPU list 'x' is not a CPU number"),
        (
            vec!["--cpus", "0,4194303"],
            "CPU 4194303 is not among the CPUs this process may run on",
        ),
        (vec!["--cpus", "0"], "'0' names one CPU: a pair needs at least two"),
        (vec!["--cpus", "-1"], "'-1' in CPU list '-1' is not a CPU number"),
        (vec!["--pairs", "some"], "invalid value 'some' for '--pairs"),
    ] {
        let mut all = vec!["cross-cpu"];
        all.extend(&args);
        let out = clockscope(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("clockscope: error: "), "{err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

#[test]
fn ctrl_c_prints_what_was_measured_and_exits_130() {
    if allowed_cpus().len() < 2 {
        return skip!(optional: "needs 2 allowed CPUs, this process has 1");
    }
    use std::io::{BufRead, Read};
    // Two CPUs only, so the run is one pair on any machine; 12 s is above
    // the 10 s from which the run announces its first finished test.
    let cpus = allowed_cpus();
    let two = format!("{},{}", cpus[0], cpus[1]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_clockscope"))
        .args(["cross-cpu", "-d", "12", "--format", "json", "--cpus", &two])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The handshake: the handler is installed before anything is measured,
    // and this line comes after the first test, so what the interrupt keeps
    // has iterations.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut ready = String::new();
    stderr.read_line(&mut ready).unwrap();
    assert!(
        ready.starts_with("cross-cpu: the first test is done, about ")
            && ready.ends_with(" s of tests planned after it (Ctrl-C stops it and prints what was measured)\n"),
        "{ready:?}"
    );
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{rest}");
    let j = json(&out);
    assert_eq!(j["interrupted"], true);
    assert_eq!(j["exit_code"], 130);
    let pairs = j["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{j}");
    assert!(pairs[0]["clocks"][0]["iterations"].as_u64().unwrap() > 0);
}

fn clock_report(
    id: clockscope::ClockId,
    scale: clockscope::Scale,
    warp: WarpResult,
    offset: OffsetResult,
) -> ClockPairReport {
    let c = clockscope_system::crosscpu::ClockUnderTest {
        id,
        scale: Some(scale),
        scale_source: Some("a test".into()),
        clock: Box::new(|_cpu: usize| 0u64),
    };
    ClockPairReport::new(&c, 0, 1, &warp, &offset, 100)
}

/// One pair, two clocks: RDTSCP with 2400 warps (CPU 1 about 1.2 us ahead),
/// MONOTONIC in sync; CPUs 0-1 allowed of 0-3 online, no cgroup cpuset.
fn constructed_outcome() -> Outcome {
    let ghz = clockscope::Scale::from_hz(2_000_000_000).unwrap();
    let warp = WarpResult {
        iterations: 5000,
        handovers_a_to_b: 2400,
        handovers_b_to_a: 2400,
        warps: 2400,
        warps_a_behind_b: 2400,
        max_warp_ticks: 2468,
        elapsed_ns: 250_000_000,
        ..Default::default()
    };
    let offset = OffsetResult {
        rounds: 1000,
        lower_ticks: Some(2468),
        upper_ticks: Some(2600),
        min_round_trip_ticks: Some(400),
        elapsed_ns: 250_000_000,
        stopped: false,
    };
    let clean = WarpResult {
        iterations: 4000,
        handovers_a_to_b: 1999,
        handovers_b_to_a: 1999,
        elapsed_ns: 250_000_000,
        ..Default::default()
    };
    let clean_offset = OffsetResult {
        rounds: 900,
        lower_ticks: Some(-80),
        upper_ticks: Some(90),
        min_round_trip_ticks: Some(210),
        elapsed_ns: 250_000_000,
        stopped: false,
    };
    let report = CrossCpuReport {
        cpus: vec![0, 1],
        pair_mode: PairMode::All,
        topology: None,
        clocks: vec!["rdtscp", "monotonic"],
        pairs_planned: 1,
        budget_ns: 1_000_000_000,
        test_ns: 250_000_000,
        expected_ns: 1_000_000_000,
        extended: None,
        min_handovers: 100,
        pairs: vec![PairReport {
            pair: PlannedPair {
                cpu_a: 0,
                cpu_b: 1,
                kind: PairKind::Unknown,
                package_a: None,
                package_b: None,
                test_ns: 250_000_000,
            },
            clocks: vec![
                clock_report(clockscope::ClockId::Rdtscp, ghz, warp, offset),
                clock_report(
                    clockscope::ClockId::Monotonic,
                    clockscope::Scale::NANOSECONDS,
                    clean,
                    clean_offset,
                ),
            ],
        }],
        interrupted: false,
        elapsed_ns: 1_000_000_000,
    };
    assert_eq!(report.pairs[0].clocks[0].verdict, Verdict::Warp);
    Outcome {
        context: CpuContext {
            allowed: vec![0, 1],
            online: Evidence::Found(CpuSet {
                path: "/sys/devices/system/cpu/online".into(),
                cpus: CpuList::parse("0-3").unwrap(),
            }),
            cgroup_cpuset: Evidence::Missing("no cgroup cpuset file".into()),
        },
        plan: None,
        calibration: None,
        report,
        note: None,
    }
}

#[test]
fn text_report_of_a_constructed_result() {
    let outcome = constructed_outcome();
    assert_eq!(outcome.exit_code(), 1);
    let mut out = Vec::new();
    render::text::write_full(
        &mut out,
        &Stamped {
            stamp: &test_stamp(),
            report: &outcome,
        },
    )
    .unwrap();
    // The report after its header line.
    let out = out.split(|&b| b == b'\n').skip(1).collect::<Vec<_>>().join(&b'\n');
    let expected = "\
CPUs tested:       0-1 (of 0-1 allowed by sched_getaffinity, which reflects cgroup cpusets and
                   taskset)
Online CPUs:       0-3 (/sys/devices/system/cpu/online)
Cgroup cpuset:     not readable
Budget:            1.000 s over 1 pair (all) x 2 clocks (rdtscp, monotonic) x 2 tests (warp,
                   ping-pong) of 250.0 ms each

Columns:
  iterations: readings taken in the warp test (both CPUs, one at a time under a shared lock);
  handovers a>b/b>a: readings that directly followed one taken on the other CPU (the comparisons
                     that matter);
  warps: readings earlier than the reading before them (the kernel's check_tsc_warp), and the
         largest such step;
  rounds: ping-pong exchanges; offset low/high: bounds on CPU b's clock minus CPU a's from the
          tightest round;
  min rtt: the shortest round trip a -> b -> a, which limits how precisely an offset can be bounded.

CPU 0 / CPU 1   (a = CPU 0, b = CPU 1; offsets are CPU 1's clock minus CPU 0's)
  clock      iterations  handovers a>b/b>a  warps  max warp ticks  max warp ns  rounds
  rdtscp           5000          2400/2400   2400            2468         1234    1000
  monotonic        4000          1999/1999      0               0            0     900
  clock      offset low ns  offset high ns  min rtt ns  verdict
  rdtscp             +1234           +1300         200  WARP
  monotonic            -80             +90         210  in sync
  rdtscp:    2400 warps (largest 1234 ns): CPU 0 read behind CPU 1; CPU 1 is 1234 ns ahead of CPU 0
             (at least; at most 1300 ns)
  monotonic: in sync: no warp in 4000 readings; offset of CPU 1 to CPU 0 within [-80 ns, +90 ns]

Answer:            rdtscp:    CPUs disagree (topology unknown): CPU 0 / CPU 1: 2400 warps (largest
                              1234 ns): CPU 0 read behind CPU 1; CPU 1 is 1234 ns ahead of CPU 0 (at
                              least; at most 1300 ns)
                   monotonic: topology unknown: the CPUs tested agree within ±90 ns

Summary: 1 of 1 CPU pair, 2 clock results: 1 with warps
";
    assert_eq!(String::from_utf8(out).unwrap(), expected);
}

#[test]
fn json_of_a_constructed_result_keeps_the_cpu_list_files_keys() {
    // {file, content, cpus}, null when unreadable.
    let outcome = constructed_outcome();
    let mut out = Vec::new();
    render::write_json(
        &mut out,
        &Stamped {
            stamp: &test_stamp(),
            report: &outcome,
        },
    )
    .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        j["online_cpus"],
        serde_json::json!({"file": "/sys/devices/system/cpu/online", "content": "0-3", "cpus": [0, 1, 2, 3]})
    );
    assert_eq!(j["cgroup_cpuset"], serde_json::Value::Null);
    assert_eq!(j["allowed_cpus"], serde_json::json!([0, 1]));
}

/// A fake sysfs tree of a 2-socket, 48-core, 2-thread server (192 CPUs).
fn server_root() -> clockscope_system::linux::testing::FakeRoot {
    let root = clockscope_system::linux::testing::FakeRoot::new();
    clockscope_system::linux::testing::FakeHost::new(2, 1, 48, 2).write(&root);
    root
}

#[test]
fn plan_of_a_192_cpu_server_from_a_fake_root() {
    let root = server_root();
    let r = root.path().to_str().unwrap();
    let out = clockscope(&["cross-cpu", "--plan", "--root", r, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let j = json(&out);
    assert_eq!(j["mode"], "topology");
    assert_eq!(j["topology"], "2 packages, 2 dies, 96 cores, 192 CPUs");
    assert_eq!(j["cpus"].as_array().unwrap().len(), 192);
    assert_eq!(j["covered_cpus"], j["cpus"]);
    let pairs = j["pairs"].as_array().unwrap();
    assert!(pairs.len() <= 2 * 192, "{}", pairs.len());
    let has = |a: u64, b: u64| pairs.iter().any(|p| p["cpu_a"] == a && p["cpu_b"] == b);
    assert!(has(0, 48) && has(48, 0), "both directions between the packages");
    assert!(j["expected_ns"].as_u64().unwrap() <= j["budget_ns"].as_u64().unwrap());
    assert_eq!(j["extended"], serde_json::Value::Null);
    assert_eq!(j["groups"][0]["package_a"], 0);
    assert_eq!(j["groups"][0]["package_b"], 1);

    let out = clockscope(&["cross-cpu", "--plan", "--root", r]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    // After the header line (tool, host, time).
    let head: Vec<&str> = text.lines().skip(1).take(3).collect();
    assert_eq!(
        head[0],
        format!("CPUs planned:      0-191 (the online CPUs under {r} (--root))")
    );
    assert_eq!(
        head[1],
        "Topology:          2 packages, 2 dies, 96 cores, 192 CPUs (sys/devices/system/cpu/cpu*/topology)"
    );
    // Wrapped at 100 columns, under its label column.
    assert_eq!(
        text.lines().skip(3).take(2).collect::<Vec<_>>(),
        [
            "Pairs:             topology: 192 pairs (2 across packages, 190 within a die); SMT siblings not",
            "                   paired (--smt-pairs pairs them)"
        ]
    );
    assert!(
        text.contains("\nRepresentatives:   package 0: CPU 0, package 1: CPU 48\n"),
        "{text}"
    );
    assert!(text.contains("\n  0 / 1         2  40.4 ms\n"), "{text}");
    assert!(text.contains("\n  within 1     95  479.8 ms\n"), "{text}");
    assert!(
        text.contains(
            "\n  CPU 48 / CPU 0       1 / 0     5.1 ms  across packages\n  CPU 0 / CPU 1     within 0     1.3 ms"
        ),
        "{text}"
    );
    assert_eq!(text.lines().filter(|l| l.starts_with("  CPU ")).count(), 192);

    // --smt-pairs does not fit 1 s: the plan says how long it takes.
    let out = clockscope(&["cross-cpu", "--plan", "--root", r, "--smt-pairs"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\nNote:              -d 1.000 s cannot give 286 pairs their minimum"),
        "{text}"
    );
}

#[test]
fn plan_errors_exit_2_with_one_line() {
    let root = server_root();
    let r = root.path().to_str().unwrap();
    for (args, expected) in [
        (
            vec!["--plan", "--root", r, "--pairs", "all"],
            "--max-time: 18336 CPU pairs need at least 183.936 s (1 ms per test and weight), more than the time limit \
             of 60.000 s",
        ),
        (vec!["--root", r], "the following required arguments were not provided"),
        (
            vec!["--plan", "--root", "/nonexistent-clockscope"],
            "--root /nonexistent-clockscope: not a directory",
        ),
        (vec!["--max-time", "0"], "'0' must be a positive duration"),
    ] {
        let mut all = vec!["cross-cpu"];
        all.extend(&args);
        let out = clockscope(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

/// The address space `--plan` runs in on hostile trees: 1 GiB (the debug
/// binary itself maps tens of MB; the hostile trees once took 3.5-7.9 GB).
const PLAN_ADDRESS_SPACE_BYTES: u64 = 1 << 30;

/// `clockscope cross-cpu --plan --root ROOT ARGS` under `prlimit --as`;
/// `None` (with a printed skip) when util-linux's prlimit cannot run.
fn plan_under_address_limit(root: &std::path::Path, args: &[&str]) -> Option<Output> {
    let out = Command::new("prlimit")
        .arg(format!("--as={PLAN_ADDRESS_SPACE_BYTES}"))
        .arg("--")
        .arg(common::BIN)
        .args(["cross-cpu", "--plan", "--root"])
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) => Some(o),
        Err(e) => {
            skip!("hostile plan trees under an address-space limit: prlimit (util-linux): {e}");
            None
        }
    }
}

/// Item 3 of issue 21: `--plan` on a hostile tree answers or refuses in
/// one line naming the file, within 1 GiB of address space: 300 topology
/// files of `0-4194303`, `online` = `0-9999` with `--pairs all`, and the
/// same under a `kernel_max` that allows them.
#[test]
fn hostile_trees_are_planned_or_refused_within_an_address_limit() {
    let root = clockscope_system::linux::testing::FakeRoot::new();
    let cpu_dir = "sys/devices/system/cpu";
    root.write(&format!("{cpu_dir}/online"), "0-299\n");
    for cpu in 0..300 {
        root.write(&format!("{cpu_dir}/cpu{cpu}/topology/physical_package_id"), "0\n");
        root.write(&format!("{cpu_dir}/cpu{cpu}/topology/core_cpus_list"), "0-4194303\n");
    }
    let Some(out) = plan_under_address_limit(root.path(), &["--format", "json"]) else {
        return;
    };
    // Answers: the topology is not used, and the plan says which file and why.
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let j = json(&out);
    let file = root.path().join(format!("{cpu_dir}/cpu0/topology/core_cpus_list"));
    assert!(
        j["topology_notes"][0].as_str().unwrap().starts_with(&format!(
            "topology not read: {}: CPU 4194303 is above the kernel's largest CPU number 8191",
            file.display()
        )),
        "{j}"
    );
    assert_eq!(j["pairs"].as_array().unwrap().len(), 299);
    let text = plan_under_address_limit(root.path(), &[]).unwrap();
    assert_eq!(text.status.code(), Some(0));
    assert!(String::from_utf8(text.stdout)
        .unwrap()
        .contains("\nPairs:             topology: 299 pairs"));

    root.write(&format!("{cpu_dir}/kernel_max"), "4194303\n");
    let out = plan_under_address_limit(root.path(), &["--format", "json"]).unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let j = json(&out);
    assert!(
        j["topology_notes"][0]
            .as_str()
            .unwrap()
            .ends_with("names 4194304 CPUs, more than the 256 threads one core may have"),
        "{j}"
    );

    let refused = |out: &Output, expected: &str| {
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(expected), "{err}");
    };
    let wide = clockscope_system::linux::testing::FakeRoot::new();
    wide.write(&format!("{cpu_dir}/online"), "0-9999\n");
    let online = wide.path().join(format!("{cpu_dir}/online"));
    let out = plan_under_address_limit(wide.path(), &["--pairs", "all"]).unwrap();
    refused(
        &out,
        &format!(
            "{}: CPU 9999 is above the kernel's largest CPU number 8191",
            online.display()
        ),
    );
    // A kernel_max that allows 10,000 CPUs: more than a run takes.
    wide.write(&format!("{cpu_dir}/kernel_max"), "9999\n");
    let out = plan_under_address_limit(wide.path(), &["--pairs", "all"]).unwrap();
    refused(
        &out,
        &format!(
            "{} lists 10000 online CPUs, more than a run takes (8192",
            online.display()
        ),
    );
    // 8192 CPUs with every pair: counted, refused before one pair is made.
    wide.write(&format!("{cpu_dir}/online"), "0-8191\n");
    let out = plan_under_address_limit(wide.path(), &["--pairs", "all", "--max-time", "86400"]).unwrap();
    refused(&out, "--pairs: 33550336 CPU pairs, more than a plan may have (131072)");
    // --cpus is counted before it is expanded.
    let out = clockscope(&["cross-cpu", "--plan", "--cpus", "0-4194303"]);
    refused(&out, "'0-4194303' names 4194304 CPUs, more than a run takes (8192");
}

/// A scripted run on a fake 2-socket tree with package 1's clock 500 ns
/// ahead, planned and measured by the library calls `cross-cpu` makes and
/// rendered by its text report: the answer names package 1.
#[test]
fn text_report_names_the_package_that_is_off() {
    use clockscope_system::crosscpu::{plan, run_plan, ClockUnderTest, NoPinning, Settings};
    use std::sync::atomic::{AtomicU64, Ordering};
    let root = clockscope_system::linux::testing::FakeRoot::new();
    let host = clockscope_system::linux::testing::FakeHost::new(2, 1, 2, 2);
    host.write(&root);
    let cpus: Vec<usize> = (0..8).collect();
    let topology = clockscope_system::linux::read_topology(root.path(), &cpus)
        .into_found()
        .unwrap();
    let counter = AtomicU64::new(1 << 40);
    // 1000 ticks at 2 GHz = 500 ns, on package 1's CPUs.
    let offsets: Vec<u64> = cpus
        .iter()
        .map(|&c| if host.place(c).0 == 1 { 1000 } else { 0 })
        .collect();
    let clock = move |cpu: usize| counter.fetch_add(1, Ordering::SeqCst) + offsets[cpu];
    let clocks = vec![ClockUnderTest {
        id: clockscope::ClockId::Rdtscp,
        scale: Some(clockscope::Scale::from_hz(2_000_000_000).unwrap()),
        scale_source: Some("scripted".into()),
        clock: Box::new(clock),
    }];
    let never = || false;
    let settings = Settings {
        pair_mode: PairMode::Topology,
        topology: Ok(&topology),
        min_handovers: 10,
        min_grace_ns: 5_000_000_000,
        ..Settings::new(40_000_000, &NoPinning, &never)
    };
    let planned = plan(&cpus, settings.topology, &settings.plan_options(clocks.len())).unwrap();
    let report = run_plan(&planned, &clocks, &settings, &mut |_, _| {}).unwrap();
    let outcome = Outcome {
        context: CpuContext {
            allowed: cpus.clone(),
            online: Evidence::Missing("fake".into()),
            cgroup_cpuset: Evidence::Missing("fake".into()),
        },
        plan: Some(planned),
        calibration: None,
        report,
        note: None,
    };
    assert_eq!(outcome.exit_code(), 1);
    let mut out = Vec::new();
    render::text::write_full(
        &mut out,
        &Stamped {
            stamp: &test_stamp(),
            report: &outcome,
        },
    )
    .unwrap();
    // The report after its header line.
    let out = out.split(|&b| b == b'\n').skip(1).collect::<Vec<_>>().join(&b'\n');
    let text = String::from_utf8(out).unwrap();
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains(
            "\nTopology:          2 packages, 2 dies, 4 cores, 8 CPUs (sys/devices/system/cpu/cpu*/topology)\n"
        ),
        "{text}"
    );
    assert!(
        flat.contains("Answer: rdtscp: package 1 is off: its clock is 499 to 500 ns ahead of package 0's (2 of 2 pairs between them disagree; "),
        "{text}"
    );
    // The table is split to fit 100 columns: the row of packages 0 / 1 in
    // each part, the worst pair's verdict in the last.
    let by_package: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("By package"))
        .filter(|l| l.starts_with("  0 / 1"))
        .collect();
    assert!(by_package.len() >= 2, "{text}");
    assert!(by_package.last().unwrap().ends_with("WARP"), "{by_package:?}");
    let mut out = Vec::new();
    render::write_json(
        &mut out,
        &Stamped {
            stamp: &test_stamp(),
            report: &outcome,
        },
    )
    .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(j["package_groups"][0]["agreed_lower_ns"], 499);
    assert_eq!(j["answers"][0]["problem"], true);
}

/// Issue 24: the default text of a constructed result is one screen (the
/// answer, the problem pairs, the summary), `--verbose` every pair's table.
#[test]
fn default_text_is_one_screen_and_verbose_is_the_full_report() {
    let outcome = constructed_outcome();
    let stamp = test_stamp();
    let m = Stamped {
        stamp: &stamp,
        report: &outcome,
    };
    let render = |verbose: bool| {
        let mut out = Vec::new();
        clockscope_cli::commands::cross_cpu::renderer(
            clockscope_cli::commands::cross_cpu::CrossCpuFormat::Text,
            verbose,
        )(&mut out, &m)
        .unwrap();
        String::from_utf8(out).unwrap()
    };
    let (short, full) = (render(false), render(true));
    assert!(short.contains("Problems (1 pair clock result(s))"), "{short}");
    assert!(!short.contains("Columns:") && full.contains("Columns:"), "{short}");
    common::one_screen_and_verbose("cross_cpu_constructed", &short, &full);
}

/// Issue 34: the default text of the same constructed result in Russian:
/// the labels lined up by display columns, the budget with a decimal comma;
/// the English stays its snapshot.
#[test]
fn default_text_in_russian_snapshot() {
    use clockscope_cli::i18n::{in_english, with_language, Lang};
    use textwrap::core::display_width;
    let outcome = constructed_outcome();
    let stamp = test_stamp();
    let m = Stamped {
        stamp: &stamp,
        report: &outcome,
    };
    let render = |lang: Lang| {
        let mut out = Vec::new();
        with_language(lang, || {
            clockscope_cli::commands::cross_cpu::renderer(
                clockscope_cli::commands::cross_cpu::CrossCpuFormat::Text,
                false,
            )(&mut out, &m)
        })
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        text.split_once('\n').map_or(String::new(), |(_, b)| b.to_string())
    };
    let ru = render(Lang::from_code("ru").unwrap());
    assert!(ru.contains("1,000 с") && ru.contains("Итог: "), "{ru}");
    assert!(ru.lines().all(|l| display_width(l) <= 100), "{ru}");
    assert!(ru.lines().count() < common::ONE_SCREEN_LINES, "{ru}");
    // Every label's value starts in column 19, counted in display columns.
    for label in ["Процессоры:", "Замерено:", "Ответ:"] {
        let line = ru.lines().find(|l| l.starts_with(label)).unwrap();
        let value = line.len() - line[label.len()..].trim_start().len();
        assert_eq!(display_width(&line[..value]), 19, "{ru}");
    }
    common::snapshot_eq("cross_cpu_constructed.ru.txt", &ru);
    common::snapshot_eq("cross_cpu_constructed.txt", &in_english(|| render(Lang::ENGLISH)));
}

/// Issue 34: the `--verbose` text of the constructed result in Russian: the
/// labels, the column legend and the pair table's headings through the
/// catalog, the table's columns lined up by display width.
#[test]
fn verbose_text_in_russian_snapshot() {
    use clockscope_cli::i18n::{with_language, Lang};
    use textwrap::core::display_width;
    let outcome = constructed_outcome();
    let stamp = test_stamp();
    let m = Stamped {
        stamp: &stamp,
        report: &outcome,
    };
    let mut out = Vec::new();
    with_language(Lang::from_code("ru").unwrap(), || {
        clockscope_cli::commands::cross_cpu::renderer(clockscope_cli::commands::cross_cpu::CrossCpuFormat::Text, true)(
            &mut out, &m,
        )
    })
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    let ru = text.split_once('\n').map_or(String::new(), |(_, b)| b.to_string());
    assert!(ru.contains("Столбцы:") && ru.contains("250,0 мс"), "{ru}");
    assert!(ru.lines().all(|l| display_width(l) <= 100), "{ru}");
    // The pair table's heading and rows end their right-aligned columns in
    // the same display column.
    let head = ru.lines().find(|l| l.starts_with("  часы ")).unwrap();
    let first = ru.lines().find(|l| l.starts_with("  rdtscp ")).unwrap();
    let end = |l: &str, cell: &str| display_width(&l[..l.find(cell).unwrap() + cell.len()]);
    assert_eq!(end(head, "итерации"), end(first, "5000"), "{ru}");
    common::snapshot_eq("cross_cpu_constructed_verbose.ru.txt", &ru);
}

/// Issue 34: the plan (`--plan`) in Russian, from a fake 2-package server:
/// its labels, sentences and tables through the catalog.
#[test]
fn plan_text_in_russian_snapshot() {
    let root = clockscope_system::linux::testing::FakeRoot::new();
    clockscope_system::linux::testing::FakeHost::new(2, 1, 2, 2).write(&root);
    let r = root.path().to_str().unwrap();
    let out = clockscope(&["cross-cpu", "--lang", "ru", "--plan", "--root", r]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap().replace(r, "ROOT");
    let ru = text.split_once('\n').map_or(String::new(), |(_, b)| b.to_string());
    assert!(
        ru.starts_with("Процессоры плана:  0-7 (онлайн-процессоры в ROOT (--root))"),
        "{ru}"
    );
    assert!(ru.lines().all(|l| textwrap::core::display_width(l) <= 100), "{ru}");
    common::snapshot_eq("cross_cpu_plan.ru.txt", &ru);
}

//! Topology-aware cross-CPU plans on fake sysfs trees (a 2-socket SMT server,
//! an 8-core laptop, a 4-die part), and scripted runs where one package's
//! clock is off, read back by package through the same calls a real run
//! makes: `read_topology` -> `plan` -> `run_plan` -> `answers`.

use clockscope::ClockId;
use clockscope::Scale;
use clockscope_system::crosscpu::{
    plan, run_plan, ClockUnderTest, CpuClock, NoPinning, PairKind, PairMode, Plan, PlanError, PlanOptions, Settings,
    Verdict, DEFAULT_MAX_TIME_NS, DEFAULT_MIN_HANDOVERS,
};
use clockscope_system::linux::testing::{FakeHost, FakeRoot};
use clockscope_system::linux::{read_topology, Topology};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

fn host_topology(host: FakeHost) -> (FakeRoot, Topology) {
    let root = FakeRoot::new();
    host.write(&root);
    let cpus: Vec<usize> = (0..host.cpu_count()).collect();
    let t = read_topology(root.path(), &cpus).into_found().expect("topology");
    (root, t)
}

fn options(budget_ns: u64, smt_pairs: bool) -> PlanOptions {
    PlanOptions {
        mode: PairMode::Topology,
        smt_pairs,
        budget_ns,
        max_time_ns: DEFAULT_MAX_TIME_NS,
        clocks: 2,
        min_handovers: DEFAULT_MIN_HANDOVERS,
    }
}

/// O(N) pairs, every CPU covered, every ordered package pair and every die
/// pair of a package compared, SMT siblings not paired, time within budget.
fn check_plan(host: FakeHost, p: &Plan, t: &Topology) {
    let n = host.cpu_count();
    assert!(p.pairs.len() <= 2 * n, "{} pairs for {n} CPUs", p.pairs.len());
    assert!(p.pairs.len() >= n - 1);
    assert_eq!(p.covered().len(), n, "uncovered: {:?}", p.uncovered);
    assert!(p.uncovered.is_empty());
    let pairs: HashSet<(usize, usize)> = p.pairs.iter().map(|x| (x.cpu_a, x.cpu_b)).collect();
    assert_eq!(pairs.len(), p.pairs.len(), "no pair twice");
    let package_rep = |pkg: i32| {
        p.representatives
            .iter()
            .find(|r| r.package == pkg && r.die.is_none())
            .unwrap()
            .cpu
    };
    for a in t.packages() {
        for b in t.packages() {
            if a != b {
                assert!(pairs.contains(&(package_rep(a), package_rep(b))), "packages {a}->{b}");
            }
        }
    }
    let cross_package = p.pairs.iter().filter(|x| x.kind == PairKind::CrossPackage).count();
    assert_eq!(cross_package, host.packages * (host.packages - 1));
    let cross_die = p.pairs.iter().filter(|x| x.kind == PairKind::CrossDie).count();
    assert_eq!(cross_die, host.packages * host.dies * (host.dies - 1) / 2);
    for x in &p.pairs {
        assert!(!t.are_smt_siblings(x.cpu_a, x.cpu_b), "{x:?}");
        assert_eq!(x.test_ns, p.unit_test_ns * x.kind.weight());
        let (pa, pb) = (t.place(x.cpu_a).unwrap(), t.place(x.cpu_b).unwrap());
        assert_eq!((x.package_a, x.package_b), (Some(pa.package), Some(pb.package)));
        if x.kind == PairKind::SameDie {
            assert_eq!((pa.package, pa.die), (pb.package, pb.die));
        }
    }
    // Cross-package pairs first, and they get more time.
    assert_eq!(
        p.pairs[0].kind,
        if host.packages > 1 {
            PairKind::CrossPackage
        } else {
            p.pairs[0].kind
        }
    );
    assert!(p.expected_ns <= p.budget_ns, "{} > {}", p.expected_ns, p.budget_ns);
    assert!(p.extended.is_none());
    let group_pairs: usize = p.groups.iter().map(|g| g.pairs).sum();
    assert_eq!(group_pairs, p.pairs.len());
    let group_time: u64 = p.groups.iter().map(|g| g.time_ns).sum();
    assert_eq!(group_time, p.expected_ns);
}

#[test]
fn two_socket_192_cpu_server() {
    let host = FakeHost::new(2, 1, 48, 2);
    let (_root, t) = host_topology(host);
    let p = plan(&(0..192).collect::<Vec<_>>(), Ok(&t), &options(1_000_000_000, false)).unwrap();
    check_plan(host, &p, &t);
    assert_eq!(p.topology.as_deref(), Some("2 packages, 2 dies, 96 cores, 192 CPUs"));
    // 2 across packages, and 190 others each with a representative (the
    // representatives' SMT siblings with the next core).
    assert_eq!(p.pairs.len(), 192);
    assert_eq!(p.pairs[0].cpu_a, 0);
    assert_eq!(p.pairs[0].cpu_b, 48);
    assert_eq!((p.pairs[1].cpu_a, p.pairs[1].cpu_b), (48, 0));
    assert!(
        p.pairs.iter().any(|x| (x.cpu_a, x.cpu_b) == (1, 96)),
        "CPU 96 (CPU 0's sibling) with core 1"
    );
    assert_eq!(p.groups.len(), 3);
    assert_eq!(
        (p.groups[0].package_a, p.groups[0].package_b, p.groups[0].pairs),
        (Some(0), Some(1), 2)
    );
    assert!(p.pairs[0].test_ns == 4 * p.pairs[5].test_ns);

    // With --smt-pairs: every core's threads too, more time than 1 s.
    let smt = plan(&(0..192).collect::<Vec<_>>(), Ok(&t), &options(1_000_000_000, true)).unwrap();
    assert_eq!(
        smt.pairs.len(),
        192 + 96 - 2,
        "the representatives' siblings are paired with them instead"
    );
    assert!(smt.pairs.len() <= 2 * 192);
    assert!(smt
        .pairs
        .iter()
        .any(|x| x.kind == PairKind::SmtSiblings && (x.cpu_a, x.cpu_b) == (0, 96)));
    assert!(smt.expected_ns > smt.budget_ns);
    let msg = smt.extended.as_deref().unwrap();
    assert!(
        msg.starts_with("1.000 s cannot give 286 pairs their minimum (1 ms per test and weight)"),
        "{msg}"
    );

    // `all` would need 18,336 pairs x 4 tests x 1 ms: over the 60 s limit.
    let all = PlanOptions {
        mode: PairMode::All,
        ..options(1_000_000_000, false)
    };
    let e = plan(&(0..192).collect::<Vec<_>>(), Ok(&t), &all).unwrap_err();
    assert!(matches!(e, PlanError::OverTimeLimit { pairs: 18336, .. }), "{e}");
    assert!(e.to_string().contains("more than the time limit of 60.000 s"), "{e}");
}

#[test]
fn one_socket_8_core_laptop() {
    let host = FakeHost::new(1, 1, 8, 2);
    let (_root, t) = host_topology(host);
    let p = plan(&(0..16).collect::<Vec<_>>(), Ok(&t), &options(1_000_000_000, false)).unwrap();
    check_plan(host, &p, &t);
    assert_eq!(p.pairs.len(), 15);
    assert!(p.pairs.iter().all(|x| x.kind == PairKind::SameDie));
    assert_eq!(p.groups.len(), 1);
}

#[test]
fn four_die_single_socket() {
    let host = FakeHost::new(1, 4, 8, 2);
    let (_root, t) = host_topology(host);
    let p = plan(&(0..64).collect::<Vec<_>>(), Ok(&t), &options(1_000_000_000, false)).unwrap();
    check_plan(host, &p, &t);
    let die_reps: Vec<usize> = p
        .representatives
        .iter()
        .filter(|r| r.die.is_some())
        .map(|r| r.cpu)
        .collect();
    assert_eq!(die_reps, vec![0, 8, 16, 24]);
    // 6 die pairs, then each of the other 60 CPUs with its die's representative.
    assert_eq!(p.pairs.len(), 6 + 60);
    // Within the affinity mask only: a subset of CPUs is planned alone.
    let some: Vec<usize> = vec![0, 1, 9, 32, 40];
    let p = plan(&some, Ok(&t), &options(1_000_000_000, false)).unwrap();
    assert_eq!(p.covered().cpus().collect::<Vec<_>>(), some);
    assert_eq!(p.cpus, some);
}

#[test]
fn without_topology_each_cpu_is_compared_with_the_first() {
    let p = plan(&[0, 1, 2, 3], Err("no sysfs"), &options(1_000_000_000, false)).unwrap();
    assert_eq!(p.pairs.len(), 3);
    assert!(p
        .pairs
        .iter()
        .all(|x| x.kind == PairKind::Unknown && x.package_a.is_none()));
    assert!(p.topology_notes[0].contains("no sysfs"), "{:?}", p.topology_notes);
    // Many single-CPU packages (a VM): the package representatives form a star.
    let host = FakeHost::new(40, 1, 1, 1);
    let (_root, t) = host_topology(host);
    let p = plan(&(0..40).collect::<Vec<_>>(), Ok(&t), &options(1_000_000_000, false)).unwrap();
    assert_eq!(p.pairs.len(), 2 * 39);
    assert!(p
        .topology_notes
        .iter()
        .any(|n| n.contains("compared with the first one only")));
}

/// Item 3 of issue 21: a siblings list is checked before it is expanded: a
/// CPU above the kernel's largest, or more CPUs than one core has, is an
/// error naming the file (300 files of `0-4194303` once took 7.9 GB).
#[test]
fn hostile_sibling_lists_are_refused_naming_the_file() {
    use clockscope_system::linux::topology::{CPU_DIR, MAX_SMT_THREADS};
    let root = FakeRoot::new();
    for cpu in 0..300 {
        root.write(&format!("{CPU_DIR}/cpu{cpu}/topology/physical_package_id"), "0\n");
        root.write(&format!("{CPU_DIR}/cpu{cpu}/topology/core_cpus_list"), "0-4194303\n");
    }
    let cpus: Vec<usize> = (0..300).collect();
    let file = root.path().join(format!("{CPU_DIR}/cpu0/topology/core_cpus_list"));
    let why = read_topology(root.path(), &cpus).reason().unwrap().to_string();
    assert!(
        why.starts_with(&format!(
            "{}: CPU 4194303 is above the kernel's largest CPU number 8191",
            file.display()
        )),
        "{why}"
    );
    // A kernel that claims 2^22 CPUs still has no 2^22-thread core.
    root.write(&format!("{CPU_DIR}/kernel_max"), "4194303\n");
    let why = read_topology(root.path(), &cpus).reason().unwrap().to_string();
    assert_eq!(
        why,
        format!(
            "{}: names 4194304 CPUs, more than the {MAX_SMT_THREADS} threads one core may have",
            file.display()
        )
    );
    // The plan goes on without the topology and says why.
    let p = plan(&cpus, Err(&why), &options(1_000_000_000, false)).unwrap();
    assert_eq!(p.pairs.len(), 299);
    assert!(
        p.topology_notes[0].contains("threads one core may have"),
        "{:?}",
        p.topology_notes
    );
}

/// Item 3 of issue 21: pair counts are arithmetic and checked before any
/// pair is made (10,000 CPUs with `all` once took 3.5 GB before refusing).
#[test]
fn plans_are_bounded_before_pairs_are_made() {
    use clockscope_system::crosscpu::{MAX_CPUS, MAX_PAIRS};
    let all = |n: usize, max_time_ns: u64| {
        let cpus: Vec<usize> = (0..n).collect();
        let opts = PlanOptions {
            mode: PairMode::All,
            max_time_ns,
            ..options(1_000_000_000, false)
        };
        plan(&cpus, Err("not read"), &opts)
    };
    let day_ns = 86_400 * 1_000_000_000;
    assert_eq!(
        all(MAX_CPUS, day_ns),
        Err(PlanError::TooManyPairs { pairs: 33_550_336 })
    );
    assert_eq!(
        all(MAX_CPUS + 1, day_ns),
        Err(PlanError::TooManyCpus { cpus: MAX_CPUS + 1 })
    );
    assert_eq!(
        all(MAX_CPUS, day_ns).unwrap_err().to_string(),
        format!("33550336 CPU pairs, more than a plan may have ({MAX_PAIRS})")
    );
    // Every pair of 512 CPUs fits the pair limit; the time limit still applies.
    assert_eq!(512 * 511 / 2, 130_816);
    const { assert!(130_816 <= MAX_PAIRS) };
    assert!(matches!(
        all(512, DEFAULT_MAX_TIME_NS),
        Err(PlanError::OverTimeLimit { pairs: 130_816, .. })
    ));
    assert_eq!(all(512, day_ns).unwrap().pairs.len(), 130_816);
}

/// A shared counter every read advances by 1, plus a per-CPU offset.
struct ScriptedCpus {
    counter: AtomicU64,
    offsets: Vec<i64>,
}

impl CpuClock for ScriptedCpus {
    fn read(&self, cpu: usize) -> u64 {
        let now = self.counter.fetch_add(1, Ordering::SeqCst);
        now.wrapping_add_signed(self.offsets[cpu])
    }
}

fn never() -> bool {
    false
}

/// Reads the fake host's topology, plans and runs as `clockscope cross-cpu`
/// does, with CPUs of `off_package` `offset_ticks` ahead (2 GHz).
fn scripted_run(host: FakeHost, off_package: usize, offset_ticks: i64) -> clockscope_system::crosscpu::CrossCpuReport {
    let (_root, t) = host_topology(host);
    let offsets = (0..host.cpu_count())
        .map(|c| {
            if host.place(c).0 == off_package {
                offset_ticks
            } else {
                0
            }
        })
        .collect();
    let clocks = vec![ClockUnderTest {
        id: ClockId::Rdtscp,
        scale: Some(Scale::from_hz(2_000_000_000).unwrap()),
        scale_source: Some("scripted".into()),
        clock: Box::new(ScriptedCpus {
            counter: AtomicU64::new(1 << 40),
            offsets,
        }),
    }];
    let settings = Settings {
        pair_mode: PairMode::Topology,
        topology: Ok(&t),
        min_handovers: 10,
        min_grace_ns: 5_000_000_000,
        ..Settings::new(40_000_000, &NoPinning, &never)
    };
    let cpus: Vec<usize> = (0..host.cpu_count()).collect();
    let planned = plan(&cpus, settings.topology, &settings.plan_options(clocks.len())).unwrap();
    run_plan(&planned, &clocks, &settings, &mut |_, _| {}).unwrap()
}

#[test]
fn a_package_500_ns_ahead_is_named() {
    let r = scripted_run(FakeHost::new(2, 1, 2, 2), 1, 1000);
    assert_eq!(r.pairs_planned, 2 + 6);
    let groups = r.package_groups();
    let cross = &groups[0];
    assert_eq!((cross.package_a, cross.package_b, cross.pairs), (Some(0), Some(1), 2));
    assert_eq!(cross.problems, 2);
    assert_eq!(cross.worst_verdict, Verdict::Warp);
    // Both directions: [999, 1001] ticks and [-1001, -999] flipped, in ns.
    assert_eq!((cross.agreed_lower_ns, cross.agreed_upper_ns), (Some(499), Some(500)));
    for g in &groups[1..] {
        assert_eq!(g.package_a, g.package_b);
        assert_eq!(g.problems, 0, "{g:?}");
        assert_eq!(
            (g.offset_lower_ns, g.offset_upper_ns),
            (Some(0), Some(0)),
            "±1 tick at 2 GHz"
        );
    }
    let answers = r.answers();
    assert_eq!(answers.len(), 1);
    assert!(answers[0].problem);
    assert!(
        answers[0].text.starts_with(
            "package 1 is off: its clock is 499 to 500 ns ahead of package 0's (2 of 2 pairs between them disagree; "
        ),
        "{}",
        answers[0].text
    );
    assert!(
        answers[0].text.ends_with("warps, largest 499 ns)"),
        "{}",
        answers[0].text
    );

    // Package 0 ahead: package 1 is named, behind the reference (the boot package).
    let r = scripted_run(FakeHost::new(2, 1, 2, 2), 0, 1000);
    assert!(
        r.answers()[0]
            .text
            .starts_with("package 1 is off: its clock is 499 to 500 ns behind package 0's"),
        "{:?}",
        r.answers()
    );
}

#[test]
fn one_of_four_packages_behind_is_named_and_clean_runs_agree() {
    let r = scripted_run(FakeHost::new(4, 1, 1, 1), 2, -1000);
    let a = &r.answers()[0];
    assert!(
        a.text
            .starts_with("package 2 is off: its clock is 499 to 500 ns behind package 0's"),
        "{}",
        a.text
    );

    let r = scripted_run(FakeHost::new(2, 1, 2, 1), 9, 0);
    let a = &r.answers()[0];
    assert!(!a.problem);
    assert_eq!(a.text, "all 2 packages agree within ±0 ns");

    let r = scripted_run(FakeHost::new(1, 1, 3, 1), 9, 0);
    assert_eq!(
        r.answers()[0].text,
        "1 package (package 0): no package pair to compare; its CPUs agree within ±0 ns"
    );
}

#[test]
fn threads_of_a_lone_core_are_paired_only_when_asked() {
    let host = FakeHost::new(1, 1, 1, 2);
    let (_root, t) = host_topology(host);
    let p = plan(&[0, 1], Ok(&t), &options(1_000_000_000, false)).unwrap();
    assert!(p.pairs.is_empty());
    assert_eq!(p.uncovered.len(), 1);
    assert_eq!(p.uncovered[0].cpu, 1);
    assert!(
        p.uncovered[0].reason.contains("--smt-pairs"),
        "{}",
        p.uncovered[0].reason
    );
    let p = plan(&[0, 1], Ok(&t), &options(1_000_000_000, true)).unwrap();
    assert_eq!(p.pairs.len(), 1);
    assert_eq!(
        (p.pairs[0].cpu_a, p.pairs[0].cpu_b, p.pairs[0].kind),
        (0, 1, PairKind::SmtSiblings)
    );
    assert!(p.uncovered.is_empty());
}

//! Which CPUs the cross-CPU tests use: CPU lists, affinity masks, and the
//! online and cgroup cpuset files read from fake trees; plus one real,
//! pinned run on this machine's CPUs (sanity checks only).

use clockscope_system::crosscpu::affinity::{cpus_to_mask, mask_to_cpus};
use clockscope_system::crosscpu::{clocks, cpu_context, ping_pong, warp_test, OsPinner, RunOptions};
use clockscope_system::linux::{read_cpus_online_file, read_cpuset, CpuList, CpuListError, CpuSet, Evidence};
use std::fs;
use std::path::Path;

/// The CPUs of a CPU list file that was found.
fn cpus_of(set: &Evidence<CpuSet>) -> Option<Vec<usize>> {
    set.found().map(|s| s.cpus.cpus().collect())
}

fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

#[test]
fn cpu_lists_round_trip_and_errors_name_the_item() {
    assert_eq!(
        CpuList::parse("0-2,7\n").unwrap().cpus().collect::<Vec<_>>(),
        vec![0, 1, 2, 7]
    );
    assert_eq!(CpuList::from_cpus([7, 0, 1, 2]).to_string(), "0-2,7");
    let e = CpuList::parse("0-1,x").unwrap_err();
    assert!(matches!(e, CpuListError::BadItem { .. }));
    assert_eq!(
        e.to_string(),
        "'x' in CPU list '0-1,x' is not a CPU number or range (like 0-3)"
    );
    assert_eq!(
        CpuList::parse("5-2").unwrap_err().to_string(),
        "range '5-2' in CPU list '5-2' ends before it starts"
    );
}

#[test]
fn affinity_masks_decode_within_their_words() {
    let bits = 8 * std::mem::size_of::<libc::c_ulong>();
    // A mask wider than cpu_set_t's 1024 bits: CPU 1500 is in word 1500/bits.
    let mask = cpus_to_mask(&[0, 3, 1500], 1024);
    assert_eq!(mask.len(), 1501usize.div_ceil(bits));
    assert_eq!(mask_to_cpus(&mask), vec![0, 3, 1500]);
    let mut words = vec![0 as libc::c_ulong; 2];
    words[1] = 1 << (bits - 1);
    assert_eq!(mask_to_cpus(&words), vec![2 * bits - 1]);
}

#[test]
fn online_and_cgroup_v1_cpuset_from_a_fake_tree() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(r, "sys/devices/system/cpu/online", "0-7\n");
    write(r, "proc/self/cgroup", "12:memory:/a\n3:cpuset,cpu:/docker/abc\n0::/\n");
    write(r, "sys/fs/cgroup/cpuset/docker/abc/cpuset.effective_cpus", "2-3\n");
    write(r, "sys/fs/cgroup/cpuset/docker/abc/cpuset.cpus", "2-5\n");
    let online = read_cpus_online_file(r);
    assert_eq!(cpus_of(&online), Some((0..8).collect()));
    let online = online.into_found().unwrap();
    assert_eq!(online.cpus.to_string(), "0-7");
    assert_eq!(
        online.path,
        r.join("sys/devices/system/cpu/online").display().to_string()
    );
    let cs = read_cpuset(r);
    assert_eq!(cpus_of(&cs), Some(vec![2, 3]));
    let cs = cs.into_found().unwrap();
    assert_eq!(
        cs.path,
        r.join("sys/fs/cgroup/cpuset/docker/abc/cpuset.effective_cpus")
            .display()
            .to_string()
    );
    assert_eq!(cs.to_string(), format!("2-3 ({})", cs.path));
}

#[test]
fn cgroup_v2_cpuset_and_missing_files() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    assert!(matches!(read_cpus_online_file(r), Evidence::Missing(_)));
    assert!(matches!(read_cpuset(r), Evidence::Missing(_)));
    write(r, "proc/self/cgroup", "0::/user.slice/session-1.scope\n");
    // No cpuset controller enabled: nothing to read.
    assert!(matches!(read_cpuset(r), Evidence::Missing(_)));
    // An empty v2 `cpuset.cpus` sets no limit (the cgroup inherits its
    // parent's CPUs): it is not a cpuset to report.
    write(r, "sys/fs/cgroup/user.slice/session-1.scope/cpuset.cpus", "");
    assert!(matches!(read_cpuset(r), Evidence::Missing(_)));
    let empty = CpuSet {
        path: "/x/cpuset.cpus".into(),
        cpus: CpuList::default(),
    };
    assert_eq!(empty.to_string(), "(empty) (/x/cpuset.cpus)");
    write(
        r,
        "sys/fs/cgroup/user.slice/session-1.scope/cpuset.cpus.effective",
        "1,3\n",
    );
    assert_eq!(cpus_of(&read_cpuset(r)), Some(vec![1, 3]));
}

#[cfg(target_os = "linux")]
#[test]
fn real_context_and_a_real_pinned_run() {
    let ctx = cpu_context(Path::new("/")).unwrap();
    assert!(!ctx.allowed.is_empty());
    if let Some(online) = ctx.online.found() {
        assert!(ctx.allowed.iter().all(|&c| online.cpus.contains(c)), "{ctx:?}");
    }
    if ctx.allowed.len() < 2 {
        return skip!(optional: "the pinned run needs 2 allowed CPUs, this process has 1");
    }
    let (a, b) = (ctx.allowed[0], ctx.allowed[1]);
    let never = || false;
    let opts = RunOptions {
        grace_ns: 5_000_000_000,
        ..RunOptions::new(20_000_000, &OsPinner, &never)
    };
    let mono = clocks::monotonic();
    let w = warp_test(&*mono.clock, a, b, &opts).unwrap();
    assert!(w.iterations > 0 && w.handovers_a_to_b + w.handovers_b_to_a > 0, "{w:?}");
    assert!(w.warps <= w.iterations);
    let o = ping_pong(&*mono.clock, a, b, &opts).unwrap();
    assert!(o.rounds > 0, "{o:?}");
    assert!(o.lower_ticks.is_some() && o.upper_ticks.is_some());
    assert!(o.min_round_trip_ticks.is_some_and(|t| t > 0), "{o:?}");
}

/// Item 3 of issue 21: a CPU above the kernel's largest (`kernel_max`, else
/// 8191) is an error naming the file, found from the list's highest CPU
/// without expanding it.
#[test]
fn cpus_beyond_the_kernels_largest_are_an_error_naming_the_file() {
    use clockscope_system::linux::{read_cpu_limit, DEFAULT_KERNEL_MAX_CPU};
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let online = r.join("sys/devices/system/cpu/online");
    write(r, "sys/devices/system/cpu/online", "0-9999\n");
    let limit = read_cpu_limit(r);
    assert_eq!(limit.max_cpu, DEFAULT_KERNEL_MAX_CPU);
    assert!(limit.source.contains("kernel_max is absent"), "{}", limit.source);
    let e = read_cpus_online_file(r);
    assert!(matches!(e, Evidence::Unreadable(_)), "{e:?}");
    assert_eq!(
        e.reason().unwrap(),
        format!(
            "{}: CPU 9999 is above the kernel's largest CPU number 8191 (assumed: NR_CPUS 8192, the x86-64 maximum \
             (CONFIG_MAXSMP); {} is absent)",
            online.display(),
            r.join("sys/devices/system/cpu/kernel_max").display()
        )
    );
    // The kernel's own limit wins over the default, both ways.
    write(r, "sys/devices/system/cpu/kernel_max", "9999\n");
    assert_eq!(read_cpus_online_file(r).into_found().unwrap().cpus.len(), 10_000);
    write(r, "sys/devices/system/cpu/kernel_max", "63\n");
    write(r, "sys/devices/system/cpu/online", "0-64\n");
    let why = read_cpus_online_file(r).reason().unwrap().to_string();
    assert!(
        why.contains("CPU 64 is above the kernel's largest CPU number 63"),
        "{why}"
    );
    assert!(why.ends_with("kernel_max)"), "{why}");
    // An unreadable kernel_max falls back to the default and says why.
    write(r, "sys/devices/system/cpu/kernel_max", "lots\n");
    let limit = read_cpu_limit(r);
    assert_eq!(limit.max_cpu, DEFAULT_KERNEL_MAX_CPU);
    assert!(limit.source.contains("not a CPU number"), "{}", limit.source);
    // The cgroup cpuset is held to the same limit, naming its file.
    write(r, "sys/fs/cgroup/cpuset.cpus.effective", "0-4194303\n");
    let why = read_cpuset(r).reason().unwrap().to_string();
    assert!(
        why.starts_with(&format!(
            "{}: CPU 4194303 is above",
            r.join("sys/fs/cgroup/cpuset.cpus.effective").display()
        )),
        "{why}"
    );
}

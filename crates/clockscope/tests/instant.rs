//! `clockscope::Instant` on this machine: the clock `trust()` chose, its
//! exact conversion, signed differences, and `CLOCKSCOPE_CLOCK=system`
//! (checked in a child process, since the choice is made once per process).

use clockscope::{Instant, Scale};
use std::process::Command;

const SYSTEM_CLOCK: &str = "clock_gettime (CLOCK_MONOTONIC)";

fn exact(ticks: u64, hz: u64) -> (u128, bool) {
    let num = u128::from(ticks) * 1_000_000_000;
    (num / u128::from(hz), num % u128::from(hz) != 0)
}

#[test]
fn the_conversion_is_within_one_ns_of_the_exact_value() {
    let scale = Instant::scale();
    let hz = scale.hz();
    assert!(hz > 0);
    let mut samples: Vec<u64> = vec![0, 1, 2, 3, 999, 1000, hz - 1, hz, hz + 1, 3 * hz, u32::MAX.into()];
    for shift in 0..64 {
        samples.extend([(1u64 << shift) - 1, 1u64 << shift]);
    }
    let max_exact = u64::try_from(u128::from(u64::MAX) * u128::from(hz) / 1_000_000_000).unwrap_or(u64::MAX);
    // SplitMix64: deterministic pseudo-random tick counts over the whole range.
    let mut x = 0x0123_4567_89AB_CDEFu64;
    for _ in 0..5000 {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        samples.push((z ^ (z >> 31)) % max_exact.max(1));
    }
    for t in samples {
        let got = scale.ticks_to_ns(t);
        let (floor, frac) = exact(t, hz);
        if floor >= u128::from(u64::MAX) {
            assert_eq!(got, u64::MAX, "saturates at {t} ticks");
            continue;
        }
        let got = u128::from(got);
        assert!(
            got == floor || (frac && got == floor + 1),
            "{t} ticks at {hz} Hz: got {got} ns, exact {floor}{}",
            if frac { "+" } else { "" }
        );
    }
    assert_eq!(scale.ticks_to_ns(hz), 1_000_000_000);
}

#[test]
fn differences_are_the_signed_converted_tick_difference() {
    let scale = Instant::scale();
    let mut prev = Instant::now_precise();
    for _ in 0..1000 {
        let b = Instant::now_precise();
        let d = b.ticks().delta_since(prev.ticks());
        let ns = scale.ticks_to_ns(d.unsigned_abs()) as i64;
        assert_eq!(b.nanos_since(prev), if d < 0 { -ns } else { ns });
        assert_eq!(prev.nanos_since(b), -b.nanos_since(prev));
        match b.checked_duration_since(prev) {
            Some(dur) => assert_eq!(dur.as_nanos() as i64, b.nanos_since(prev)),
            None => assert!(b.nanos_since(prev) < 0),
        }
        prev = b;
    }
}

#[test]
fn the_decision_is_one_per_process_and_says_why() {
    let t = Instant::init();
    assert!(std::ptr::eq(t, Instant::init()));
    assert!(!t.reasons.is_empty());
    if t.use_counter {
        assert_ne!(t.clock_name, SYSTEM_CLOCK);
        assert_eq!(Scale::from_hz(t.frequency_hz.unwrap()), Some(t.scale));
        assert!(t.reasons.iter().all(|r| r.starts_with("ok ")), "{:?}", t.reasons);
    } else {
        assert_eq!((t.clock_name, t.scale), (SYSTEM_CLOCK, Scale::NANOSECONDS));
        assert!(!t.reasons.last().unwrap().starts_with("ok "), "{:?}", t.reasons);
    }
    // Bounded: a 10 ms calibration plus a few small reads (generous for a
    // preempted VM; the time is CLOCK_MONOTONIC's).
    assert!(t.elapsed_ns < 2_000_000_000, "{} ns", t.elapsed_ns);
}

/// Runs `test` of this binary alone in a child with `CLOCKSCOPE_CLOCK=value`
/// (through cargo's runner when the tests run under one, as qemu-user runs
/// the aarch64 tests: without binfmt the binary cannot be executed directly).
fn child(test: &str, value: &str) {
    let exe = std::env::current_exe().unwrap();
    let runner = std::env::var(format!(
        "CARGO_TARGET_{}_UNKNOWN_LINUX_GNU_RUNNER",
        std::env::consts::ARCH.to_uppercase()
    ))
    .ok()
    .filter(|_| cfg!(not(target_arch = "x86_64")));
    let mut words: Vec<String> = runner
        .map(|r| r.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    words.push(exe.display().to_string());
    let out = Command::new(&words[0])
        .args(&words[1..])
        .args(["--exact", test, "--test-threads=1", "--nocapture"])
        .env("CLOCKSCOPE_TEST_CHILD", "1")
        .env("CLOCKSCOPE_CLOCK", value)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("1 passed"), "the child ran no test: {stdout}");
}

#[test]
fn the_environment_forces_the_system_clock() {
    if std::env::var_os("CLOCKSCOPE_TEST_CHILD").is_none() {
        child("the_environment_forces_the_system_clock", "system");
        child("the_environment_forces_the_system_clock", "tsc");
        return;
    }
    let t = Instant::init();
    assert!(!t.use_counter);
    assert_eq!((t.clock_name, t.precise_clock_name), (SYSTEM_CLOCK, SYSTEM_CLOCK));
    assert!(t.reasons[0].contains("forced by CLOCKSCOPE_CLOCK"), "{:?}", t.reasons);
    assert!(
        t.calibration.is_none(),
        "nothing is calibrated when the system clock is forced"
    );
    // The readings are CLOCK_MONOTONIC nanoseconds: one second is 10^9.
    let a = Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let ns = Instant::now().nanos_since(a);
    assert!(ns >= 20_000_000, "{ns}");
}

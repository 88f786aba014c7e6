//! `clockscope::instant::ticks_to_ns` is exact to 1 ns at the frequency this
//! process chose, and the `Instant` duration API is built on it.

use clockscope::crosscpu::affinity;
use clockscope::instant::{self, Instant};
use std::time::Duration;

/// `floor(ticks * 10^9 / hz)` and whether a remainder was dropped.
fn exact(ticks: u64, hz: u64) -> (u128, bool) {
    let num = u128::from(ticks) * 1_000_000_000;
    (num / u128::from(hz), num % u128::from(hz) != 0)
}

#[test]
fn ticks_to_ns_is_within_one_ns_of_the_exact_value() {
    let info = instant::init();
    let hz = info.frequency_hz;
    assert!(hz > 0);
    let mut samples: Vec<u64> = vec![0, 1, 2, 3, 999, 1000, hz - 1, hz, hz + 1, 3 * hz, u32::MAX.into()];
    for shift in 0..64 {
        samples.extend([(1u64 << shift) - 1, 1u64 << shift]);
    }
    // A deterministic spread (SplitMix64), kept below the saturation point.
    let max_exact = u64::try_from(u128::from(u64::MAX) * u128::from(hz) / 1_000_000_000).unwrap_or(u64::MAX);
    let mut x = 0x0123_4567_89AB_CDEFu64;
    for _ in 0..5000 {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        samples.push((z ^ (z >> 31)) % max_exact.max(1));
    }
    for t in samples {
        let got = instant::ticks_to_ns(t);
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
        assert_eq!(u128::from(instant::scale().ticks_to_ns(t)), got);
    }
    // One second of ticks is one second.
    assert_eq!(instant::ticks_to_ns(hz), 1_000_000_000);
}

#[test]
fn durations_are_the_converted_tick_difference() {
    // One CPU: its counter never steps back, so every ordering below holds.
    if let Some(cpu) = affinity::current_cpu() {
        let _ = affinity::pin_current_thread(cpu);
    }
    let a = Instant::now_precise();
    let mut prev = a;
    for _ in 0..1000 {
        let b = Instant::now_precise();
        if let Some(d) = b.checked_duration_since(prev) {
            assert_eq!(d, Duration::from_nanos(instant::ticks_to_ns(b.ticks() - prev.ticks())));
            assert_eq!(b.duration_since(prev), d);
            assert_eq!(b - prev, d);
        } else {
            // Only a step backward (another CPU, within its bound) gives None.
            assert!(b < prev);
            assert_eq!(b.duration_since(prev), Duration::ZERO);
        }
        prev = b;
    }
    // Swapped arguments: None and zero (never a panic or a huge value).
    let later = Instant::now_precise();
    if later > a {
        assert_eq!(a.checked_duration_since(later), None);
        assert_eq!(a.duration_since(later), Duration::ZERO);
        assert_eq!(a - later, Duration::ZERO);
    }
    assert_eq!(a.checked_duration_since(a), Some(Duration::ZERO));
    // elapsed() is a later reading's duration since `a`: no later than a
    // precise reading after it (which waits for the elapsed() read).
    let e = a.elapsed();
    let after = Instant::now_precise();
    assert!(e <= after.duration_since(a), "{e:?} > {:?}", after.duration_since(a));
    let raw = instant::raw_ticks_precise();
    assert!(raw >= after.ticks());
}

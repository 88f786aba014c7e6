//! Every pass over a kernel log is linear in its size: a log of distinct
//! `Marking TSC unstable due to N` reasons (or distinct `Clocksource cN
//! unstable` verdicts) takes four times as long for four times the text, not
//! sixteen (the reasons were once de-duplicated by a linear search). Compared
//! as a ratio within one run, never as an absolute time. And what is kept is
//! bounded: one huge line is cut, the reasons listed are capped.

use clockscope_system::kernel_log::{summarise, MAX_EVENTS};
use std::time::Instant;

/// `lines` distinct lines of `form(i)` up to `bytes`.
fn log(bytes: usize, form: impl Fn(usize) -> String) -> String {
    let mut text = String::with_capacity(bytes + 64);
    let mut i = 0;
    while text.len() < bytes {
        text.push_str(&form(i));
        text.push('\n');
        i += 1;
    }
    text
}

/// The fastest of three runs, in seconds.
fn seconds(text: &str) -> f64 {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(summarise(text, None));
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn assert_linear(form: impl Fn(usize) -> String + Copy, what: &str) {
    let small = log(1 << 20, form);
    let large = log(4 << 20, form);
    let (t1, t4) = (seconds(&small), seconds(&large));
    let ratio = t4 / t1;
    eprintln!("{what}: 1 MiB {t1:.3} s, 4 MiB {t4:.3} s, ratio {ratio:.2}");
    // Linear is 4; quadratic 16. 8 leaves room for a busy machine.
    assert!(ratio < 8.0, "{what}: 4 MiB took {ratio:.1}x as long as 1 MiB");
}

#[test]
fn distinct_unstable_reasons_take_linear_time() {
    assert_linear(
        |i| format!("[    1.000000] tsc: Marking TSC unstable due to {i}"),
        "reasons",
    );
}

/// The case: 8 MiB of distinct reasons, against 1 MiB (printed with
/// `--nocapture`; the bound is the ratio: linear 8, quadratic 64, the test's
/// bound their geometric mean).
#[test]
fn eight_mib_of_distinct_reasons_against_one() {
    let form = |i| format!("[    1.000000] tsc: Marking TSC unstable due to {i}");
    let (t1, t8) = (seconds(&log(1 << 20, form)), seconds(&log(8 << 20, form)));
    eprintln!("reasons: 1 MiB {t1:.3} s, 8 MiB {t8:.3} s, ratio {:.2}", t8 / t1);
    // Halfway between linear (8) and quadratic (64) on a log scale, as
    // assert_linear's 8 is between 4 and 16: a busy machine's noise stays on
    // the linear side.
    let bound = (8.0f64 * 64.0).sqrt();
    assert!(t8 / t1 < bound, "8 MiB took {:.1}x as long as 1 MiB", t8 / t1);
}

#[test]
fn distinct_condemned_clocksources_take_linear_time() {
    assert_linear(
        |i| format!("Clocksource c{i} unstable (delta = -7812500 ns)"),
        "verdicts",
    );
}

#[test]
fn what_is_kept_is_bounded() {
    let s = summarise(&log(1 << 20, |i| format!("tsc: Marking TSC unstable due to {i}")), None);
    assert!(s.unstable_reasons.len() <= MAX_EVENTS, "{}", s.unstable_reasons.len());
    assert_eq!(s.events.len(), MAX_EVENTS);
    assert!(s.events_not_listed > 0);
    // One 8 MB line: its message is cut to 1 KiB and says how much was cut.
    let huge = format!("tsc: Marking TSC unstable due to {}\n", "x".repeat(8 << 20));
    let s = summarise(&huge, None);
    let e = &s.events[0];
    assert!(
        e.message.len() < 1200 && e.message.ends_with("bytes cut]"),
        "{}",
        e.message.len()
    );
    assert!(s.unstable_reasons[0].len() < 1200);
    assert!(s.cited.tsc_marked_unstable.unwrap().text.len() < 1200);
}

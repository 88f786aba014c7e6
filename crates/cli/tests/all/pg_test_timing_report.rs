//! pg_test_timing's report from scripted clocks, recorded CPUID facts and
//! scripted calibrations, compared byte for byte with expected files written
//! by hand from PostgreSQL 19.0's `pg_test_timing.c` (the branch point
//! 9cfd19bc10ac: label column 19 wide; after the TSC blocks the frequency
//! source, in use and calibration lines, then an empty line before the
//! policy sentence), in the C locale and in a locale the tests make.

use clockscope::Scale;
use clockscope::ScriptedClock;
use clockscope_cli::pg_test_timing::locale::PgLocale;
use clockscope_cli::pg_test_timing::{args::Options, report, run, tsc_closing, Counter, CounterSection};
use clockscope_pg::pg_loop::{pg_test_timing_loop, PgOutcome, PgTicksToNs};
use clockscope_system::tsc::cpuid::{CpuidFacts, RecordedCpuid, SIGNATURE_KVM};
use clockscope_system::tsc::pg19::PgTscInfo;
use std::cell::Cell;

const C: fn() -> PgLocale = PgLocale::c;

use crate::common::snapshot::{expected, snapshot_eq};

fn render(readings: Vec<u64>, duration_ns: u64, cutoff: f64) -> String {
    let clock = ScriptedClock::from_readings("scripted", Scale::NANOSECONDS, readings);
    let PgOutcome::Done(run) = pg_test_timing_loop(&clock, PgTicksToNs::SYSTEM, duration_ns) else {
        panic!("the scripted readings go forward");
    };
    let mut out = Vec::new();
    report::write_average(&mut out, &C(), &run).unwrap();
    report::write_histograms(&mut out, &C(), &run, cutoff).unwrap();
    String::from_utf8(out).unwrap()
}

/// Differences 0, 20, 20, 30, 30, 30, 10, 12000, 40, 70 (a zero difference, one
/// >= 10000 ns); elapsed 12300 ns.
fn mixed() -> Vec<u64> {
    vec![
        1000, 1000, 1020, 1040, 1070, 1100, 1130, 1140, 13_140, 13_180, 13_250, 13_300,
    ]
}

#[test]
fn mixed_differences_at_every_cutoff() {
    for (cutoff, file) in [
        (99.99, "pg_report_mixed_c99.99.txt"),
        (50.0, "pg_report_mixed_c50.txt"),
        (0.0, "pg_report_mixed_c0.txt"),
        (100.0, "pg_report_mixed_c100.txt"),
    ] {
        snapshot_eq(file, &render(mixed(), 12_200, cutoff));
    }
}

#[test]
fn largest_difference_below_10000_after_the_cutoff() {
    let mut r = vec![0];
    r.extend((1..=8).map(|i| i * 20));
    r.extend([190, 5190, 5200]);
    snapshot_eq("pg_report_largest_after_cutoff.txt", &render(r, 5000, 50.0));
}

#[test]
fn full_run_sections_in_order() {
    let opts = Options {
        duration_s: 1,
        cutoff_pct: 99.99,
    };
    let system = ScriptedClock::new("scripted system", Scale::NANOSECONDS, |n| n * 250_000);
    let tsc = Scale::from_khz(2_000_000).unwrap();
    let precise = ScriptedClock::new("scripted precise", tsc, |n| n * 500_000);
    let fast = ScriptedClock::new("scripted fast", tsc, |n| n * 500_000);
    // Bare metal with only leaf 0x16 (2000 MHz), TSC_ADJUST: auto uses it.
    let mut info = PgTscInfo::detect(&cpu(2000, None, true, true), None, || panic!("CPUID gave it"));
    let section = CounterSection {
        precise: &precise,
        fast: &fast,
        conv: PgTicksToNs::counter_khz(2_000_000).unwrap(),
        closing_lines: Box::new(move |l, measured| {
            info.complete(|| 1_999_990);
            tsc_closing(l, &info, measured)
        }),
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run(&opts, &C(), &system, Counter::Usable(section), &mut out, &mut err).unwrap();
    assert_eq!(code, 0);
    assert!(err.is_empty());
    snapshot_eq("pg_run_full.txt", &String::from_utf8(out).unwrap());
}

/// CPUID of an x86-64 CPU: leaf 0x16 base `mhz`, `hv` = highest KVM
/// hypervisor leaf (0x40000010 EAX 2 600 000 when it reaches it).
fn cpu(mhz: u32, hv: Option<u32>, rdtscp: bool, tsc_adjust: bool) -> CpuidFacts {
    let mut rec = RecordedCpuid::new()
        .with(0, 0, [0x16, 0x756e_6547, 0x6c65_746e, 0x4965_6e69])
        .with(1, 0, [0x0005_0654, 0, if hv.is_some() { 1 << 31 } else { 0 }, 1 << 4])
        .with(7, 0, [0, if tsc_adjust { 2 } else { 0 }, 0, 0])
        .with(0x16, 0, [mhz, 0, 0, 0])
        .with(0x8000_0000, 0, [0x8000_0008, 0, 0, 0])
        .with(0x8000_0001, 0, [0, 0, 0, if rdtscp { 1 << 27 } else { 0 }])
        .with(0x8000_0007, 0, [0, 0, 0, 1 << 8]);
    if let Some(max) = hv {
        rec.insert(
            0x4000_0000,
            0,
            [max, SIGNATURE_KVM[0], SIGNATURE_KVM[1], SIGNATURE_KVM[2]],
        );
        rec.insert(0x4000_0010, 0, [2_600_000, 0, 0, 0]);
    }
    CpuidFacts::from_recorded(&rec)
}

fn system_part() -> String {
    expected("pg_run_full.txt")
        .split("\nClock source:")
        .next()
        .unwrap()
        .to_string()
}

/// Runs with PostgreSQL's TSC state `info` and no counter blocks (the TSC
/// not usable), returning stdout and the exit code.
fn run_not_usable(mut info: PgTscInfo, calibrated: u32) -> (String, u8) {
    let opts = Options {
        duration_s: 1,
        cutoff_pct: 99.99,
    };
    let system = ScriptedClock::new("scripted system", Scale::NANOSECONDS, |n| n * 250_000);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let counter: Counter<'_> = Counter::NotUsable(Box::new(move |l, measured| {
        info.complete(|| calibrated);
        tsc_closing(l, &info, measured)
    }));
    let code = run(&opts, &C(), &system, counter, &mut out, &mut err).unwrap();
    (String::from_utf8(out).unwrap(), code)
}

const NOT_USABLE: &str = "\nTSC clock source is not usable. Likely unable to determine TSC frequency. \
                          Are you running in an unsupported virtualized environment?\n";

#[test]
fn not_usable_tsc_prints_the_frequency_lines_then_postgresql_sentence() {
    // No RDTSCP: source "x86, no rdtscp", 0 kHz, nothing calibrated.
    let info = PgTscInfo::detect(&cpu(2000, None, false, true), None, || panic!("no calibration"));
    let (out, code) = run_not_usable(info, 1);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!(
            "{}\nTSC frequency source: x86, no rdtscp\nTSC frequency in use: 0 kHz\n\
             TSC calibration did not converge\n{NOT_USABLE}",
            system_part()
        )
    );
    // KVM without 0x40000010 whose calibration did not converge.
    let runs = Cell::new(0);
    let info = PgTscInfo::detect(&cpu(0, Some(0x4000_0001), true, true), Some(b"tsc\n"), || {
        runs.set(runs.get() + 1);
        0
    });
    let (out, _) = run_not_usable(info, 7);
    assert!(out.ends_with(&format!(
        "\nTSC frequency source: x86, hypervisor\nTSC frequency in use: 0 kHz\n\
         TSC calibration did not converge\n{NOT_USABLE}"
    )));
    assert_eq!(runs.get(), 1, "calibrated once, during detection");
}

#[test]
fn calibration_more_than_ten_percent_off_warns_and_exits_1() {
    for (khz, pct) in [(2_860_001u32, "10.0"), (1_300_000, "50.0")] {
        // KVM with 0x40000010 = 2 600 000 kHz; our calibration disagrees.
        let info = PgTscInfo::detect(&cpu(0, Some(0x4000_0010), true, true), None, || panic!("CPUID gave it"));
        let (out, code) = run_not_usable(info, khz);
        assert_eq!(code, 1);
        assert!(
            out.ends_with(&format!(
                "\nTSC frequency source: x86, hypervisor, cpuid 0x40000010\nTSC frequency in use: 2600000 kHz\n\
                 TSC frequency from calibration: {khz} kHz\n\
                 WARNING: Calibrated TSC frequency differs by {pct}% from the TSC frequency in use\n\
                 HINT: Consider setting timing_clock_source to 'system'. Report bugs to <pgsql-bugs@lists.postgresql.org>.\n"
            )),
            "{out}"
        );
    }
}

#[test]
fn kvm_calibration_is_cached_and_printed_twice() {
    let runs = Cell::new(0);
    let calibrate = || {
        runs.set(runs.get() + 1);
        2_595_786
    };
    let info = PgTscInfo::detect(&cpu(0, Some(0x4000_0001), true, false), Some(b"tsc\n"), calibrate);
    let closing = tsc_closing(
        &C(),
        &{
            let mut i = info.clone();
            i.complete(|| 1);
            i
        },
        true,
    );
    assert_eq!(
        String::from_utf8(closing.0).unwrap(),
        "TSC frequency source: x86, hypervisor, calibration\nTSC frequency in use: 2595786 kHz\n\
         TSC frequency from calibration: 2595786 kHz\n\n\
         TSC clock source will be used by default, unless timing_clock_source is set to 'system'.\n"
    );
    assert_eq!((runs.get(), closing.1), (1, 0));
    let info = PgTscInfo::detect(&cpu(0, Some(0x4000_0001), true, false), Some(b"kvm-clock\n"), || {
        2_595_786
    });
    let (text, _) = tsc_closing(&C(), &info, true);
    assert!(String::from_utf8(text)
        .unwrap()
        .ends_with("\nTSC clock source will not be used by default, unless timing_clock_source is set to 'tsc'.\n"));
}

#[test]
fn no_measurements_collected_warning() {
    // A system clock whose first reading makes the end tick wrap (int64):
    // no loop at all, as upstream's arithmetic gives.
    let clock = ScriptedClock::from_readings("s", Scale::NANOSECONDS, vec![i64::MAX as u64 - 10, i64::MAX as u64 - 5]);
    let PgOutcome::Done(r) = pg_test_timing_loop(&clock, PgTicksToNs::SYSTEM, 1_000_000_000) else {
        panic!("no loop, no backward step")
    };
    let mut out = Vec::new();
    report::write_average(&mut out, &C(), &r).unwrap();
    report::write_histograms(&mut out, &C(), &r, 99.99).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "Average loop time including overhead: inf ns\n\
         WARNING: No timing measurements collected. Report this as a bug to <pgsql-bugs@lists.postgresql.org>.\n"
    );
}

#[test]
fn closing_lines_are_computed_after_the_fast_block() {
    // Upstream calibrates after both TSC blocks: the closing lines must be
    // computed once the fast clock has been read for the last time.
    let opts = Options {
        duration_s: 1,
        cutoff_pct: 99.99,
    };
    let system = ScriptedClock::new("scripted system", Scale::NANOSECONDS, |n| n * 250_000);
    let tsc = Scale::from_khz(2_000_000).unwrap();
    let precise = ScriptedClock::new("scripted precise", tsc, |n| n * 500_000);
    let fast = ScriptedClock::new("scripted fast", tsc, |n| n * 500_000);
    let section = CounterSection {
        precise: &precise,
        fast: &fast,
        conv: PgTicksToNs::counter_khz(2_000_000).unwrap(),
        closing_lines: Box::new(|_, _| (format!("fast reads before closing: {}\n", fast.reads()).into_bytes(), 0)),
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(
        run(&opts, &C(), &system, Counter::Usable(section), &mut out, &mut err).unwrap(),
        0
    );
    let out = String::from_utf8(out).unwrap();
    assert!(fast.reads() > 4000, "the fast block ran: {}", fast.reads());
    assert!(
        out.ends_with(&format!("\n\nfast reads before closing: {}\n", fast.reads())),
        "{out}"
    );
}

#[test]
fn backward_step_ends_with_postgresql_message() {
    let opts = Options {
        duration_s: 1,
        cutoff_pct: 99.99,
    };
    // Forward 100 ns per read, then one step back by 40 ns, then forward.
    let system = ScriptedClock::new("scripted system", Scale::NANOSECONDS, |n| {
        if n < 10 {
            1_000 + n * 100
        } else {
            1_000 + n * 100 - 140
        }
    });
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let counter: Counter<'_> = Counter::Absent;
    assert_eq!(run(&opts, &C(), &system, counter, &mut out, &mut err).unwrap(), 1);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "Testing timing overhead for 1 second.\n\nSystem clock source: scripted system\n"
    );
    assert_eq!(
        String::from_utf8(err).unwrap(),
        "Detected clock going backwards in time.\nTime warp: -40 ns\n"
    );
}

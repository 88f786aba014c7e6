//! The perf_event mmap page math: the TSC frequency a `time_mult`/`time_shift`
//! pair implies, and page decoding. The pairs are what x86 Linux publishes
//! for a given tsc_khz: `clocks_calc_mult_shift(khz, NSEC_PER_MSEC, 0)` gives shift 32, which
//! `__set_cyc2ns_scale` lowers to 31 (halving mult) for the perf page.

use clockscope_system::linux::perf::{
    decode_page, hz_from_mult_shift, khz_from_mult_shift, PageFields, CAP_USER_TIME, CAP_USER_TIME_ZERO,
};

/// (tsc kHz, time_mult, time_shift) as the kernel publishes them.
const RECORDED: &[(u64, u32, u16)] = &[
    (2_599_998, 825_955_884, 31), // this machine's kernel frequency
    (2_700_000, 795_364_314, 31),
    (2_449_228, 876_800_219, 31), // PostgreSQL docs' example frequency
    (3_000_000, 715_827_882, 31),
    (3_999_999, 536_871_046, 31),
    (1_000_000, 2_147_483_648, 31),
];

/// The kernel's derivation, to cross-check the table: mult at shift 32
/// rounded to nearest, then halved for shift 31.
fn kernel_mult_shift(khz: u64) -> (u32, u16) {
    let mult32 = ((1_000_000u128 << 32) + khz as u128 / 2) / khz as u128;
    if mult32 >> 32 == 0 {
        ((mult32 >> 1) as u32, 31)
    } else {
        // Below 1 GHz the kernel lowers the shift until mult fits.
        let mut s = 32u16;
        loop {
            s -= 1;
            let m = ((1_000_000u128 << s) + khz as u128 / 2) / khz as u128;
            if m >> 32 == 0 {
                return (m as u32, s);
            }
        }
    }
}

#[test]
fn recorded_pairs_give_back_the_kernel_khz() {
    for &(khz, mult, shift) in RECORDED {
        assert_eq!(kernel_mult_shift(khz), (mult, shift), "table entry {khz}");
        assert_eq!(khz_from_mult_shift(mult, shift), Some(khz), "{mult}/{shift}");
    }
    // 2^31 * 10^9 / 825955884 = 2599998001.9 Hz: the halved mult keeps the
    // scale within 1 ppb of the kernel's kHz.
    assert_eq!(hz_from_mult_shift(825_955_884, 31), Some(2_599_998_002));
}

#[test]
fn every_khz_round_trips_through_the_kernel_scale() {
    // 100 MHz .. 10 GHz in steps of 997 kHz, plus neighbours of round values.
    let mut khz = 100_000u64;
    while khz <= 10_000_000 {
        let (m, s) = kernel_mult_shift(khz);
        let back = khz_from_mult_shift(m, s).unwrap();
        // mult carries ~31 bits, so one unit of mult is < 1 ppm of kHz here.
        let err_ppm = (back as f64 - khz as f64).abs() / khz as f64 * 1e6;
        assert!(err_ppm < 1.0, "{khz} kHz -> {m}/{s} -> {back} kHz");
        khz += 997;
    }
}

#[test]
fn zero_or_absurd_scales_have_no_frequency() {
    assert_eq!(khz_from_mult_shift(0, 31), None);
    assert_eq!(khz_from_mult_shift(1, 65), None);
    assert_eq!(khz_from_mult_shift(1, 64), None, "does not fit in u64");
    assert_eq!(khz_from_mult_shift(u32::MAX, 0), Some(0));
}

#[test]
fn decode_page_needs_cap_user_time() {
    let page = PageFields {
        version: 0,
        capabilities: 0b10, // cap_bit0_is_deprecated only: what a KVM guest without a PMU shows
        ..PageFields::default()
    };
    let e = decode_page(&page, "software dummy").unwrap_err().to_string();
    assert!(
        e.starts_with("no cap_user_time in the perf page (version 0, capabilities 0x2)"),
        "{e}"
    );

    let page = PageFields {
        version: 0,
        capabilities: 0b10 | CAP_USER_TIME | CAP_USER_TIME_ZERO,
        time_shift: 31,
        time_mult: 825_955_884,
        time_offset: 7,
        time_zero: 1_000_000_000,
    };
    let s = decode_page(&page, "software dummy").unwrap();
    assert_eq!(s.khz(), Some(2_599_998));
    assert_eq!(s.event, "software dummy");
    assert_eq!(s.time_zero, Some(1_000_000_000));
    assert_eq!(s.to_string(), "time_mult=825955884 time_shift=31 (2599998 kHz)");

    let no_zero = PageFields {
        capabilities: CAP_USER_TIME,
        ..page
    };
    assert_eq!(decode_page(&no_zero, "x").unwrap().time_zero, None);
    let zero_mult = PageFields { time_mult: 0, ..page };
    assert!(decode_page(&zero_mult, "x").unwrap_err().0.contains("time_mult is 0"));
}

//! Exact ticks-to-nanoseconds conversion in integer fixed point.
//!
//! PostgreSQL 19 converts TSC ticks with `ns = (ticks * scale) >> 14`, where
//! `scale = (10^6 << 14) / kHz` is truncated: at 2.5 GHz the scale is 6553
//! instead of 6553.6, so every duration reads 0.009% short. We keep the
//! nanoseconds-per-tick ratio as a whole part plus a 64-bit binary fraction,
//! rounded *up*:
//!
//! ```text
//! ns_per_tick = whole + frac / 2^64        (frac = ceil(2^64 * (10^9 mod hz) / hz))
//! ns(ticks)   = ticks * whole + (ticks * frac) >> 64
//! ```
//!
//! The rounding error of `frac` is below `2^-64` ns per tick, so over any
//! `u64` tick count it adds less than 1 ns: the result is within 1 ns of the
//! exact rational value `ticks * 10^9 / hz` for every `u64` tick count at any
//! frequency (the tests check 1 MHz to 10 GHz against exact `u128`
//! arithmetic). The hot-path cost is one 64x64->128 multiply, one multiply and
//! an add: no division, no float.

use serde::Serialize;

const NS_PER_S: u64 = 1_000_000_000;

/// The fixed ratio between one clock source's ticks and nanoseconds.
///
/// ```
/// use clockscope::Scale;
/// let tsc = Scale::from_khz(2_596_134).unwrap();
/// assert_eq!(tsc.ticks_to_ns(2_596_134_000), 1_000_000_000); // exact to 1 ns
/// assert_eq!(Scale::NANOSECONDS.ticks_to_ns(42), 42);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Scale {
    hz: u64,
    whole_ns: u64,
    frac: u64,
}

impl Scale {
    /// Ticks that already are nanoseconds (clock_gettime-based sources).
    pub const NANOSECONDS: Scale = Scale {
        hz: NS_PER_S,
        whole_ns: 1,
        frac: 0,
    };

    /// The scale of a counter running at `hz` ticks per second; `None` for 0.
    pub const fn from_hz(hz: u64) -> Option<Scale> {
        if hz == 0 {
            return None;
        }
        let whole_ns = NS_PER_S / hz;
        let rem = (NS_PER_S % hz) as u128;
        // ceil(rem * 2^64 / hz); rem < hz so the result is < 2^64.
        let frac = (rem << 64).div_ceil(hz as u128);
        Some(Scale {
            hz,
            whole_ns,
            frac: frac as u64,
        })
    }

    /// The scale of a counter running at `khz` kilohertz; `None` for 0.
    pub const fn from_khz(khz: u64) -> Option<Scale> {
        match khz.checked_mul(1000) {
            Some(hz) => Scale::from_hz(hz),
            None => None,
        }
    }

    /// Ticks per second.
    pub const fn hz(&self) -> u64 {
        self.hz
    }

    /// Ticks per millisecond (kHz), rounded down.
    pub const fn khz(&self) -> u64 {
        self.hz / 1000
    }

    /// Nanoseconds in `ticks`, never overflowing (a u64 count of 1 MHz ticks
    /// is more nanoseconds than a u64 holds).
    #[inline(always)]
    pub const fn ticks_to_ns_u128(&self, ticks: u64) -> u128 {
        let t = ticks as u128;
        t * self.whole_ns as u128 + ((t * self.frac as u128) >> 64)
    }

    /// Nanoseconds in `ticks`, saturating at `u64::MAX` (584 years).
    #[inline(always)]
    pub const fn ticks_to_ns(&self, ticks: u64) -> u64 {
        let ns = self.ticks_to_ns_u128(ticks);
        if ns > u64::MAX as u128 {
            u64::MAX
        } else {
            ns as u64
        }
    }

    /// Ticks in `ns` nanoseconds, rounded down, saturating.
    pub const fn ns_to_ticks(&self, ns: u64) -> u64 {
        let t = ns as u128 * self.hz as u128 / NS_PER_S as u128;
        if t > u64::MAX as u128 {
            u64::MAX
        } else {
            t as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PostgreSQL 19's conversion (`instr_time.h`), kept to show its error:
    /// `scale = (10^6 << 14) / khz`, `ns = ticks * scale >> 14` (computed here in
    /// `u128` so it never overflows).
    fn postgresql_ticks_to_ns(ticks: u64, khz: u64) -> u128 {
        let scale = ((NS_PER_S as u128 / 1000) << 14) / khz as u128;
        (ticks as u128 * scale) >> 14
    }

    /// Exact `floor(ticks * 10^9 / hz)` and whether there is a remainder.
    fn exact(ticks: u64, hz: u64) -> (u128, bool) {
        let num = ticks as u128 * NS_PER_S as u128;
        (num / hz as u128, !num.is_multiple_of(hz as u128))
    }

    fn assert_within_one_ns(ticks: u64, hz: u64) {
        let s = Scale::from_hz(hz).unwrap();
        let got = s.ticks_to_ns_u128(ticks);
        let (floor, has_frac) = exact(ticks, hz);
        // The exact value lies in [floor, floor+1); ours must be within 1 ns
        // of it, i.e. floor or floor+1 (only floor when exact is an integer).
        let ok = got == floor || (has_frac && got == floor + 1);
        assert!(
            ok,
            "ticks={ticks} hz={hz}: got {got}, exact floor {floor} (+frac: {has_frac})"
        );
    }

    const FREQS_HZ: &[u64] = &[
        1_000_000, // 1 MHz: the slowest counter we accept
        1_000_001,
        3_579_545,  // ACPI PM timer
        14_318_180, // HPET
        19_200_000, // Goldmont crystal / ARM boards
        24_000_000, // ARM generic timer, Skylake crystal
        25_000_000,
        54_000_000,
        999_999_937,   // a prime just under 1 GHz
        1_000_000_000, // ticks are nanoseconds
        1_000_000_007,
        2_449_228_000, // PostgreSQL docs example
        2_599_998_000, // this machine's kernel value
        2_700_000_000,
        3_333_333_333,
        4_294_967_295,
        4_294_967_297,
        9_999_999_967,
        10_000_000_000, // 10 GHz: the fastest counter we accept
    ];

    #[test]
    fn exact_within_one_ns_over_whole_u64_range() {
        let mut ticks_list: Vec<u64> = vec![0, 1, 2, 3, 999, 1000, 1_000_000, u32::MAX as u64];
        for shift in 0..64 {
            let p = 1u64 << shift;
            ticks_list.extend([p - 1, p, p + 1]);
        }
        ticks_list.extend([u64::MAX, u64::MAX - 1, u64::MAX / 3, u64::MAX / 7 * 5]);
        // A deterministic spread of "random" tick counts (SplitMix64).
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ticks_list.push(z ^ (z >> 31));
        }
        for &hz in FREQS_HZ {
            for &t in &ticks_list {
                assert_within_one_ns(t, hz);
            }
        }
    }

    #[test]
    fn every_khz_frequency_at_extreme_tick_counts() {
        // Every 997th kHz value from 1 MHz to 10 GHz, at the largest counts.
        let mut khz = 1000u64;
        while khz <= 10_000_000 {
            for t in [u64::MAX, u64::MAX - 12345, 1u64 << 63, 123_456_789_012_345] {
                assert_within_one_ns(t, khz * 1000);
            }
            khz += 997;
        }
    }

    #[test]
    fn saturating_and_u128_agree_without_overflow() {
        let s = Scale::from_khz(1000).unwrap(); // 1 MHz: 1000 ns per tick
        assert_eq!(s.ticks_to_ns_u128(u64::MAX), u64::MAX as u128 * 1000);
        assert_eq!(s.ticks_to_ns(u64::MAX), u64::MAX);
        let ghz10 = Scale::from_khz(10_000_000).unwrap();
        assert_eq!(ghz10.ticks_to_ns(u64::MAX), u64::MAX / 10);
        assert_eq!(Scale::NANOSECONDS.ticks_to_ns(u64::MAX), u64::MAX);
        assert_eq!(Scale::from_hz(1_000_000_000), Some(Scale::NANOSECONDS));
    }

    #[test]
    fn zero_frequency_has_no_scale() {
        assert_eq!(Scale::from_hz(0), None);
        assert_eq!(Scale::from_khz(0), None);
        assert_eq!(Scale::from_khz(u64::MAX), None);
    }

    #[test]
    fn ns_to_ticks_inverts() {
        let s = Scale::from_khz(2_599_998).unwrap();
        assert_eq!(s.ns_to_ticks(1_000_000_000), 2_599_998_000);
        assert_eq!(s.ns_to_ticks(0), 0);
        let slow = Scale::from_khz(1000).unwrap();
        assert_eq!(slow.ns_to_ticks(u64::MAX), u64::MAX / 1000);
        assert_eq!(s.khz(), 2_599_998);
    }

    #[test]
    fn postgresql_shift_error_is_what_we_fix() {
        // One second of 2.5 GHz ticks: PostgreSQL's truncated scale (6553 for
        // 6553.6) reads 91.6 us short (-0.0092%); ours is exact.
        let ticks = 2_500_000_000u64;
        let pg = postgresql_ticks_to_ns(ticks, 2_500_000);
        assert_eq!(pg, 999_908_447);
        let ours = Scale::from_khz(2_500_000).unwrap().ticks_to_ns(ticks);
        assert_eq!(ours, 1_000_000_000);
        // Worst relative error of PostgreSQL's scale over 1 MHz..10 GHz
        // approaches 1/6553.6 ~ 0.015% at 10 GHz (scale 100 for 100.0 is
        // exact, but 9.99 GHz gives 1640 for 1640.16).
        let khz = 9_990_000u64;
        let t = 9_990_000_000u64;
        let pg = postgresql_ticks_to_ns(t, khz) as f64;
        let rel = (1e9 - pg) / 1e9;
        assert!(rel > 0.0 && rel < 2e-4, "relative error {rel}");
        assert_eq!(Scale::from_khz(khz).unwrap().ticks_to_ns(t), 1_000_000_000);
    }
}

//! Why the RDTSC measuring loop costs more than a bare RDTSC, and how much
//! each part of it adds: one criterion group (`loop_gap`), so every variant
//! is measured in the same run and the ratios compare like with like
//! (`bench/loop_gap.sh` prints them; bench/README.md has the results).
//!
//! Every variant reads RDTSC once per iteration; criterion's time is per
//! iteration, i.e. per read:
//! - `bare`: the read alone (`black_box`);
//! - `lfence_rdtsc`: LFENCE;RDTSC, a read ordered after earlier loads;
//! - `diff`: the difference from the previous read (the loop-carried `prev`),
//!   summed in a register;
//! - `diff_end`: `diff` plus `measure`'s `end > cur` compare and branch;
//! - `diff_alu_chain`: `diff` plus three dependent multiplications of the
//!   difference (about 9 cycles of latency, no memory);
//! - `table`: the tick-indexed increment `short[diff] += 1` (`diff < slots`);
//! - `table_end`: `table` plus `end > cur`: the shape of `measure`'s hot loop
//!   (`run_chunk`);
//! - `table_load_only`: the slot `short[diff]` loaded and summed, no store;
//! - `table_store_only`: the reading stored to `short[diff]`, no load;
//! - `table_deferred`: `table_end` with each increment done one iteration
//!   late, after the next read (its address known long before; the last
//!   difference counted after the loop): the same counts;
//! - `table_fixed_slot`: a volatile increment of one fixed slot, the
//!   difference summed in a register: the same load/add/store per
//!   iteration, its address independent of the read;
//! - `table_two_tables`: `table_end` unrolled by two, odd and even reads
//!   counted in two tables (so successive increments never hit one slot);
//! - `run_length`: equal successive differences counted in a register
//!   (no store per iteration), flushed to the table when the difference
//!   changes.
//!
//! Before the group runs, `clockscope::measure` on RDTSC is run 3 times for
//! 1 s and its average loop times printed (the product's number).

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(30)
        .without_plots()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use clockscope::Rdtsc;
    use clockscope::{measure, Control};
    use criterion::measurement::WallTime;
    use criterion::{BenchmarkGroup, Criterion};
    use std::hint::black_box;
    use std::time::{Duration, Instant as StdInstant};

    #[inline(always)]
    fn rdtsc() -> u64 {
        // SAFETY: RDTSC exists on every x86-64 CPU; it only reads the TSC.
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
    }

    #[inline(always)]
    fn lfence_rdtsc() -> u64 {
        // SAFETY: LFENCE (SSE2, part of x86-64) and RDTSC exist on every
        // x86-64 CPU; neither touches memory.
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_mm_lfence();
            core::arch::x86_64::_rdtsc()
        }
    }

    /// `measure`'s table: one slot per tick up to about 10 µs.
    fn table(khz: u64) -> Vec<u64> {
        vec![0u64; (khz * 10 / 1000 + 2) as usize]
    }

    /// Times `iters` iterations of `body`.
    fn timed(iters: u64, mut body: impl FnMut(u64)) -> Duration {
        let t0 = StdInstant::now();
        body(iters);
        t0.elapsed()
    }

    #[cold]
    #[inline(never)]
    fn cold_long(d: u64, acc: &mut u64) {
        *acc = acc.wrapping_add(d);
    }

    type Group<'a> = BenchmarkGroup<'a, WallTime>;

    /// `clockscope::measure` on RDTSC, 3 runs of 1 s: the product's average
    /// loop time, printed before the group runs.
    fn print_measure_average(clock: &Rdtsc, khz: u64) {
        let mut avg: Vec<f64> = (0..3)
            .filter_map(|_| measure(clock, 1_000_000_000, |_| Control::Continue).avg_loop_ns())
            .collect();
        avg.sort_by(f64::total_cmp);
        eprintln!(
            "loop_gap: clockscope::measure on RDTSC at {khz} kHz, avg loop ns over 3 runs of 1 s: {}",
            avg.iter().map(|v| format!("{v:.2}")).collect::<Vec<_>>().join(" ")
        );
    }

    pub fn loop_gap(c: &mut Criterion) {
        let info = clockscope::Instant::init();
        let khz = info.scale.khz();
        let Some(clock) = Rdtsc::new(info.scale) else {
            eprintln!("loop_gap: no TSC");
            return;
        };
        print_measure_average(&clock, khz);
        let mut g = c.benchmark_group("loop_gap");
        // Never reached: the compare and branch stay, the loop runs `iters`.
        let never = black_box(u64::MAX);
        let mut short = table(khz);
        bench_reads_and_differences(&mut g, never);
        bench_table_increments(&mut g, &mut short, never);
        bench_late_and_fixed_slots(&mut g, &mut short, never);
        bench_two_tables_and_runs(&mut g, &mut short, khz, never);
        g.finish();
    }

    /// `bare`, `lfence_rdtsc`, `diff`, `diff_end`, `diff_alu_chain`: no table.
    fn bench_reads_and_differences(g: &mut Group<'_>, never: u64) {
        g.bench_function("bare", |b| {
            b.iter_custom(|n| {
                timed(n, |n| {
                    for _ in 0..n {
                        black_box(rdtsc());
                    }
                })
            })
        });
        g.bench_function("lfence_rdtsc", |b| {
            b.iter_custom(|n| {
                timed(n, |n| {
                    for _ in 0..n {
                        black_box(lfence_rdtsc());
                    }
                })
            })
        });
        g.bench_function("diff", |b| {
            b.iter_custom(|n| {
                timed(n, |n| {
                    let (mut prev, mut acc) = (rdtsc(), 0u64);
                    for _ in 0..n {
                        let cur = rdtsc();
                        acc = acc.wrapping_add(cur.wrapping_sub(prev));
                        prev = cur;
                    }
                    black_box(acc);
                })
            })
        });
        g.bench_function("diff_end", |b| {
            b.iter_custom(|n| {
                timed(n, |n| {
                    let (mut prev, mut acc) = (rdtsc(), 0u64);
                    for _ in 0..n {
                        let cur = rdtsc();
                        if cur >= never {
                            break;
                        }
                        acc = acc.wrapping_add(cur.wrapping_sub(prev));
                        prev = cur;
                    }
                    black_box(acc);
                })
            })
        });
        g.bench_function("diff_alu_chain", |b| {
            b.iter_custom(|n| {
                let k = black_box(0x9e37_79b9_7f4a_7c15u64);
                timed(n, |n| {
                    let (mut prev, mut acc) = (rdtsc(), 0u64);
                    for _ in 0..n {
                        let cur = rdtsc();
                        let d = cur.wrapping_sub(prev);
                        acc = acc.wrapping_add(d.wrapping_mul(k).wrapping_mul(k).wrapping_mul(k));
                        prev = cur;
                    }
                    black_box(acc);
                })
            })
        });
    }

    /// `table`, `table_end`, `table_load_only`, `table_store_only`.
    fn bench_table_increments(g: &mut Group<'_>, short: &mut [u64], never: u64) {
        g.bench_function("table", |b| {
            b.iter_custom(|n| {
                let slots = short.len() as u64;
                let mut long = 0u64;
                let t = timed(n, |n| {
                    let mut prev = rdtsc();
                    for _ in 0..n {
                        let cur = rdtsc();
                        let d = cur.wrapping_sub(prev);
                        prev = cur;
                        if d < slots {
                            short[d as usize] += 1;
                        } else {
                            cold_long(d, &mut long);
                        }
                    }
                });
                black_box((&short, long));
                t
            })
        });
        g.bench_function("table_end", |b| {
            b.iter_custom(|n| {
                let slots = short.len() as u64;
                let mut long = 0u64;
                let t = timed(n, |n| {
                    let mut cur = rdtsc();
                    for _ in 0..n {
                        if cur >= never {
                            break;
                        }
                        let prev = cur;
                        cur = rdtsc();
                        let d = cur.wrapping_sub(prev);
                        if d < slots {
                            short[d as usize] += 1;
                        } else {
                            cold_long(d, &mut long);
                        }
                    }
                });
                black_box((&short, long));
                t
            })
        });
        g.bench_function("table_load_only", |b| {
            b.iter_custom(|n| {
                let slots = short.len() as u64;
                timed(n, |n| {
                    let (mut prev, mut acc) = (rdtsc(), 0u64);
                    for _ in 0..n {
                        let cur = rdtsc();
                        let d = cur.wrapping_sub(prev);
                        prev = cur;
                        if d < slots {
                            acc = acc.wrapping_add(short[d as usize]);
                        } else {
                            cold_long(d, &mut acc);
                        }
                    }
                    black_box(acc);
                })
            })
        });
        g.bench_function("table_store_only", |b| {
            b.iter_custom(|n| {
                let slots = short.len() as u64;
                let mut long = 0u64;
                let t = timed(n, |n| {
                    let mut prev = rdtsc();
                    for _ in 0..n {
                        let cur = rdtsc();
                        let d = cur.wrapping_sub(prev);
                        prev = cur;
                        if d < slots {
                            short[d as usize] = cur;
                        } else {
                            cold_long(d, &mut long);
                        }
                    }
                });
                black_box((&short, long));
                t
            })
        });
    }

    /// `table_deferred` and `table_fixed_slot`.
    fn bench_late_and_fixed_slots(g: &mut Group<'_>, short: &mut [u64], never: u64) {
        g.bench_function("table_deferred", |b| {
            b.iter_custom(|n| {
                let slots = short.len() as u64;
                let mut long = 0u64;
                let t = timed(n, |n| {
                    let mut cur = rdtsc();
                    // The previous difference's slot, incremented after the
                    // next read (slot 0 and count 0 before the first).
                    let (mut pending, mut one) = (0usize, 0u64);
                    for _ in 0..n {
                        if cur >= never {
                            break;
                        }
                        let prev = cur;
                        cur = rdtsc();
                        short[pending] += one;
                        let d = cur.wrapping_sub(prev);
                        if d < slots {
                            (pending, one) = (d as usize, 1);
                        } else {
                            cold_long(d, &mut long);
                            one = 0;
                        }
                    }
                    short[pending] += one;
                });
                black_box((&short, long));
                t
            })
        });
        g.bench_function("table_fixed_slot", |b| {
            b.iter_custom(|n| {
                let slot: *mut u64 = &mut short[0];
                timed(n, |n| {
                    let (mut prev, mut acc) = (rdtsc(), 0u64);
                    for _ in 0..n {
                        let cur = rdtsc();
                        acc = acc.wrapping_add(cur.wrapping_sub(prev));
                        prev = cur;
                        // SAFETY: `slot` points into `short`, alive and not
                        // otherwise borrowed during the loop.
                        unsafe { slot.write_volatile(slot.read_volatile() + 1) };
                    }
                    black_box(acc);
                })
            })
        });
    }

    /// `table_two_tables` (with a second table) and `run_length`.
    fn bench_two_tables_and_runs(g: &mut Group<'_>, short: &mut [u64], khz: u64, never: u64) {
        let mut odd = table(khz);
        g.bench_function("table_two_tables", |b| {
            b.iter_custom(|n| {
                let slots = short.len() as u64;
                let mut long = 0u64;
                let t = timed(n, |n| {
                    let mut cur = rdtsc();
                    for _ in 0..n / 2 {
                        if cur >= never {
                            break;
                        }
                        let prev = cur;
                        cur = rdtsc();
                        let d = cur.wrapping_sub(prev);
                        if d < slots {
                            short[d as usize] += 1;
                        } else {
                            cold_long(d, &mut long);
                        }
                        if cur >= never {
                            break;
                        }
                        let prev = cur;
                        cur = rdtsc();
                        let d = cur.wrapping_sub(prev);
                        if d < slots {
                            odd[d as usize] += 1;
                        } else {
                            cold_long(d, &mut long);
                        }
                    }
                });
                black_box((&short, &odd, long));
                t
            })
        });
        g.bench_function("run_length", |b| {
            b.iter_custom(|n| {
                let slots = short.len() as u64;
                let mut long = 0u64;
                let t = timed(n, |n| {
                    let mut cur = rdtsc();
                    let (mut last, mut run) = (0u64, 0u64);
                    for _ in 0..n {
                        if cur >= never {
                            break;
                        }
                        let prev = cur;
                        cur = rdtsc();
                        let d = cur.wrapping_sub(prev);
                        if d == last {
                            run += 1;
                        } else {
                            short[last as usize] += run;
                            if d < slots {
                                last = d;
                                run = 1;
                            } else {
                                cold_long(d, &mut long);
                                last = 0;
                                run = 0;
                            }
                        }
                    }
                    short[last as usize] += run;
                });
                black_box((&short, long));
                t
            })
        });
    }
}

#[cfg(target_arch = "x86_64")]
fn loop_gap(c: &mut Criterion) {
    x86::loop_gap(c);
}

#[cfg(not(target_arch = "x86_64"))]
fn loop_gap(_: &mut Criterion) {
    eprintln!("loop_gap: RDTSC loops only (x86-64)");
}

criterion_group! {
    name = benches;
    config = config();
    targets = loop_gap
}
criterion_main!(benches);

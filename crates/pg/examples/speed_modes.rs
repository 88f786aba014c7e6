//! Does this machine's slow mode come from a lower core clock? Alternates a
//! dependent integer chain timed by the counter (ticks per step are
//! proportional to TSC frequency / core frequency: if the core clock drops,
//! ticks per step rise) with short runs of the EXPLAIN model
//! ([`clockscope_pg::predict::executor_loop`], PostgreSQL 19 with the TSC),
//! and prints both per line, so the two can be compared over time.
//!
//! ```text
//! cargo run --release -p clockscope-pg --example speed_modes -- [SECONDS] [MODEL_MS]
//! ```

#[cfg(target_arch = "x86_64")]
mod run {
    use clockscope::{ClockSource, LfenceRdtsc, Scale};
    use clockscope_pg::predict::executor_loop::{self, ModelConfig, PgInstrumentation, Table};
    use std::hint::black_box;

    /// Steps in one chain round: about 10 ms at 3 cycles per step.
    const CHAIN_STEPS: u64 = 8_000_000;

    /// Counter ticks per step of a dependent chain (shift, xor, add: three
    /// dependent single-cycle operations per step on x86-64).
    fn chain_ticks_per_step() -> f64 {
        let tsc = LfenceRdtsc::new(Scale::NANOSECONDS).expect("every x86-64 CPU has a TSC");
        let lfence_rdtsc = || tsc.now().raw();
        let n = black_box(CHAIN_STEPS);
        let mut x = black_box(0x1234_5678_u64);
        let t0 = lfence_rdtsc();
        for i in 0..n {
            x = (x ^ (x >> 1)).wrapping_add(i);
        }
        black_box(x);
        let t1 = lfence_rdtsc();
        (t1 - t0) as f64 / n as f64
    }

    struct Visit {
        seconds: f64,
        model_ms: u64,
    }

    impl clockscope_system::counter::CounterPairVisitor for Visit {
        type Output = ();
        fn visit<P: clockscope::ClockSource, F: clockscope::ClockSource>(self, _p: P, fast: F) {
            let table = Table::new();
            let start = std::time::Instant::now();
            println!("t_s   chain_ticks/step(before,after)  model_off_ns/row  model_added_ns/row  pairs");
            while start.elapsed().as_secs_f64() < self.seconds {
                let c0 = chain_ticks_per_step();
                let config = ModelConfig::new(PgInstrumentation::Pg19 { tsc: true }, self.model_ms * 1_000_000);
                let cost = executor_loop::measure_on_this_machine(Some(&fast), &table, config, &mut || true);
                let c1 = chain_ticks_per_step();
                if let Some(c) = cost {
                    println!(
                        "{:6.2} {:7.3} {:7.3}  {:7.2}  {:7.2}  {}",
                        start.elapsed().as_secs_f64(),
                        c0,
                        c1,
                        c.work_ns_per_row,
                        c.median_ns_per_row,
                        c.pairs
                    );
                }
            }
        }
    }

    pub fn main() {
        let arg = |i: usize, d: f64| std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(d);
        let v = Visit {
            seconds: arg(1, 60.0),
            model_ms: arg(2, 150.0) as u64,
        };
        let scale = clockscope::Scale::from_khz(1_000_000).expect("a valid scale");
        if let Err(why) = clockscope::visit_pair(scale, v) {
            eprintln!("speed_modes: no counter read ({why})");
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn main() {
    run::main()
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    eprintln!("speed_modes: x86-64 only (it times a chain with RDTSC)");
}

//! `pg_test_timing`: a drop-in for PostgreSQL 19's, on any machine.
//! Parse argv byte for byte as PostgreSQL does, then measure the system clock
//! and the CPU counter (RDTSCP/RDTSC on x86-64, ISB;CNTVCT_EL0/CNTVCT_EL0 on
//! aarch64).

#![forbid(unsafe_code)]

use clockscope::clock::posix::PosixClock;
use clockscope_cli::pg_test_timing::args::{self, Parsed};
use clockscope_cli::pg_test_timing::getopt::Ordering;
use clockscope_cli::pg_test_timing::{self as ptt, Counter};
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let opts = match args::parse_with(&argv, Ordering::from_env()) {
        Parsed::Print(text) => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(&text).and_then(|_| out.flush());
            return ExitCode::SUCCESS;
        }
        Parsed::Fail(msg) => {
            let _ = std::io::stderr().lock().write_all(&msg);
            return ExitCode::from(1);
        }
        Parsed::Run(opts) => opts,
    };
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let (mut out, mut err) = (stdout.lock(), stderr.lock());
    let system = PosixClock::monotonic();
    match run_with_counter(&opts, &system, &mut out, &mut err) {
        Ok(code) => ExitCode::from(code),
        // PostgreSQL never checks printf: an unwritable stdout (a closed pipe,
        // a full disk) ends the run quietly with status 0, as its would.
        Err(_) => ExitCode::SUCCESS,
    }
}

/// x86-64: PostgreSQL 19's TSC section. The frequency in use (the one the
/// RDTSCP and RDTSC blocks are converted with, exactly) is PostgreSQL's CPUID
/// frequency, else clockscope's calibration (PostgreSQL would use its own
/// calibration there); `TSC frequency from calibration` is a fresh run of
/// PostgreSQL's calibration algorithm after the blocks, as upstream prints it.
#[cfg(target_arch = "x86_64")]
fn run_with_counter(
    opts: &args::Options,
    system: &PosixClock,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<u8> {
    use clockscope::clock::arch::{Rdtsc, Rdtscp};
    use clockscope::tsc::calibrate::calibrate_tsc_postgresql;
    use clockscope::Scale;
    let tsc = clockscope::tsc::postgres_tsc(std::path::Path::new("/"));
    let clocks = tsc
        .frequency_khz
        .and_then(Scale::from_khz)
        .and_then(|s| Some((Rdtscp::new(s)?, Rdtsc::new(s)?)));
    match (clocks, tsc.frequency_khz) {
        (Some((precise, fast)), Some(in_use_khz)) => {
            let use_by_default = tsc.use_by_default;
            let section = ptt::CounterSection {
                precise: &precise,
                fast: &fast,
                closing_lines: Box::new(move || {
                    ptt::tsc_lines(in_use_khz, calibrate_tsc_postgresql().khz, use_by_default)
                }),
            };
            ptt::run(opts, system, Counter::Usable(section), out, err)
        }
        _ => ptt::run::<_, Rdtscp, Rdtsc>(opts, system, Counter::NotUsable(ptt::report::TSC_NOT_USABLE), out, err),
    }
}

/// aarch64: clockscope's addition. Upstream PostgreSQL builds without a
/// counter clock here and prints the system block only; we print the ARM
/// generic timer in the TSC section's layout (its lines are clockscope's,
/// named "Generic timer ...", never "TSC ...").
#[cfg(target_arch = "aarch64")]
fn run_with_counter(
    opts: &args::Options,
    system: &PosixClock,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<u8> {
    use clockscope::clock::arch::{Cntvct, IsbCntvct};
    use clockscope::Scale;
    let timer = clockscope::arm::gather_local_calibrated(clockscope::tsc::POSTGRES_CALIBRATION_BUDGET_NS);
    match Scale::from_hz(timer.frequency_hz) {
        Some(scale) => {
            let (precise, fast) = (IsbCntvct::new(scale), Cntvct::new(scale));
            let mut lines = timer.frequency_lines();
            lines.push(timer.decision_line());
            let section = ptt::CounterSection {
                precise: &precise,
                fast: &fast,
                closing_lines: Box::new(move || lines),
            };
            ptt::run(opts, system, Counter::Usable(section), out, err)
        }
        None => ptt::run::<_, IsbCntvct, Cntvct>(
            opts,
            system,
            Counter::NotUsable(ptt::report::GENERIC_TIMER_NOT_USABLE),
            out,
            err,
        ),
    }
}

/// Other architectures: the system clock only, as PostgreSQL builds without a counter clock.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn run_with_counter(
    opts: &args::Options,
    system: &PosixClock,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<u8> {
    ptt::run::<_, PosixClock, PosixClock>(opts, system, Counter::Absent, out, err)
}

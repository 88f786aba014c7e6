//! `pg_test_timing`: a drop-in for PostgreSQL 19's, on any machine.
//! Parse argv byte for byte as PostgreSQL does, then measure the system clock
//! and the CPU counter (RDTSCP/RDTSC on x86-64, ISB;CNTVCT_EL0/CNTVCT_EL0 on
//! aarch64).

#![forbid(unsafe_code)]

use clockscope::clock::posix::PgSystemClock;
use clockscope::counter::calibrate::calibrate_postgresql_native;
use clockscope::counter::discover::full_budget;
use clockscope::counter::{self, CounterKind, CounterPairVisitor, Discovery};
use clockscope::ClockSource;
use clockscope_cli::pg_test_timing::args::{self, Parsed};
use clockscope_cli::pg_test_timing::getopt::Ordering;
use clockscope_cli::pg_test_timing::{self as ptt, Counter};
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
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
    let system = PgSystemClock;
    match run_with_counter(&opts, &system, &mut out, &mut err) {
        Ok(code) => ExitCode::from(code),
        // PostgreSQL never checks printf: an unwritable stdout (a closed pipe,
        // a full disk) ends the run quietly with status 0, as its would.
        Err(_) => ExitCode::SUCCESS,
    }
}

/// Hands the counter's precise and fast reads to pg_test_timing's run.
struct RunWith<'a> {
    opts: &'a args::Options,
    system: &'a PgSystemClock,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    closing_lines: ptt::ClosingLines<'a>,
}

impl CounterPairVisitor for RunWith<'_> {
    type Output = std::io::Result<u8>;
    fn visit<P: ClockSource, F: ClockSource>(self, precise: P, fast: F) -> Self::Output {
        let section = ptt::CounterSection {
            precise: &precise,
            fast: &fast,
            closing_lines: self.closing_lines,
        };
        ptt::run(self.opts, self.system, Counter::Usable(section), self.out, self.err)
    }
}

/// PostgreSQL 19's TSC section on x86-64: the frequency in use (the one the
/// RDTSCP and RDTSC blocks are converted with, exactly) is PostgreSQL's CPUID
/// frequency, else clockscope's calibration (PostgreSQL would use its own
/// calibration there); `TSC frequency from calibration` is a fresh run of
/// PostgreSQL's calibration algorithm after the blocks, as upstream prints it.
/// On aarch64 the ARM generic timer where PostgreSQL shows the TSC
/// (PostgreSQL itself has no ARM counter support; the layout is kept);
/// elsewhere the system clock only, as PostgreSQL builds without a counter
/// clock.
fn run_with_counter(
    opts: &args::Options,
    system: &PgSystemClock,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<u8> {
    let budget = clockscope::tsc::POSTGRES_CALIBRATION_BUDGET_NS;
    let report = counter::discover_with(Path::new("/"), None, &Discovery::postgresql(budget), &full_budget);
    let (lines, not_usable) = match (counter::native_kind(), &report.postgres.tsc, report.generic_timer()) {
        (None, _, _) => return ptt::run::<_, PgSystemClock, PgSystemClock>(opts, system, Counter::Absent, out, err),
        (Some(CounterKind::Tsc), Some(tsc), _) => (
            tsc.frequency_khz.map(|in_use_khz| {
                let use_by_default = tsc.use_by_default;
                Box::new(move || ptt::tsc_lines(in_use_khz, calibrate_postgresql_native().khz, use_by_default))
                    as ptt::ClosingLines
            }),
            ptt::report::TSC_NOT_USABLE,
        ),
        (Some(CounterKind::Tsc), None, _) => (None, ptt::report::TSC_NOT_USABLE),
        (Some(CounterKind::GenericTimer), _, timer) => (
            timer.map(|t| {
                let mut lines = t.frequency_lines();
                lines.push(t.decision_line());
                Box::new(move || lines) as ptt::ClosingLines
            }),
            ptt::report::GENERIC_TIMER_NOT_USABLE,
        ),
    };
    let visited = match (lines, report.scale()) {
        (Some(closing_lines), Some(scale)) => {
            let run = RunWith {
                opts,
                system,
                out: &mut *out,
                err: &mut *err,
                closing_lines,
            };
            counter::arch::visit_pair(scale, run).ok()
        }
        _ => None,
    };
    match visited {
        Some(result) => result,
        None => ptt::run::<_, PgSystemClock, PgSystemClock>(opts, system, Counter::NotUsable(not_usable), out, err),
    }
}

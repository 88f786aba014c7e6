//! `pg_test_timing`: a drop-in for PostgreSQL 19.0's, on any machine.
//! Parse argv byte for byte as PostgreSQL does, then measure the system clock
//! and the CPU counter (RDTSCP/RDTSC on x86-64, ISB;CNTVCT_EL0/CNTVCT_EL0 on
//! aarch64), in the user's locale as PostgreSQL prints it.

#![forbid(unsafe_code)]

use clockscope::Scale;
use clockscope_cli::pg_test_timing::args::{self, Parsed};
use clockscope_cli::pg_test_timing::getopt::Ordering;
use clockscope_cli::pg_test_timing::locale::PgLocale;
use clockscope_cli::pg_test_timing::{self as ptt, Counter};
use clockscope_pg::pg_loop::{PgTicksToNs, TimedBlock};
use clockscope_system::counter::calibrate::calibrate_postgresql_native;
use clockscope_system::counter::discover::full_budget;
use clockscope_system::counter::{self, CounterKind, Discovery};
use clockscope_system::tsc::cpuid::CpuidFacts;
use clockscope_system::tsc::pg19::{read_current_clocksource, PgTscInfo};
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    // set_pglocale_pgservice: setlocale(LC_ALL, "") and the catalog.
    let locale = PgLocale::from_env();
    let argv: Vec<OsString> = std::env::args_os().collect();
    let opts = match args::parse_with(&argv, Ordering::from_env(), &locale) {
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
    // Whose output this is, for a person on a host with an older PostgreSQL:
    // only to a terminal, so a captured stderr stays PostgreSQL 19's.
    if std::io::stderr().is_terminal() {
        let installed = clockscope_cli::commands::environment::installed_postgresql_majors(Path::new("/"));
        if let Some(note) = ptt::older_postgresql_note(&installed) {
            let _ = writeln!(std::io::stderr().lock(), "{note}");
        }
    }
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let (mut out, mut err) = (stdout.lock(), stderr.lock());
    // The system clock's loop, compiled in clockscope-pg (optimised in debug builds too).
    let system = clockscope_pg::pg_loop::system_block();
    match run_with_counter(&opts, &locale, system, &mut out, &mut err) {
        Ok(code) => ExitCode::from(code),
        // PostgreSQL never checks printf: an unwritable stdout (a closed pipe,
        // a full disk) ends the run quietly with status 0, as its would.
        Err(_) => ExitCode::SUCCESS,
    }
}

/// PostgreSQL's calibration of this CPU's TSC, as its `uint32` kHz (0: did
/// not converge).
fn pg_calibrate() -> u32 {
    calibrate_postgresql_native()
        .khz
        .map_or(0, |k| k.min(u64::from(u32::MAX)) as u32)
}

/// PostgreSQL 19's TSC part on x86-64 ([`PgTscInfo`]: its CPUID rules, its
/// own calibration once per process, cached, its `auto` policy); on aarch64
/// the ARM generic timer where PostgreSQL shows the TSC (PostgreSQL itself
/// has no ARM counter support; the layout is kept); elsewhere the system
/// clock only, as PostgreSQL builds without a counter clock.
fn run_with_counter(
    opts: &args::Options,
    locale: &PgLocale,
    system: &dyn TimedBlock,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<u8> {
    let (scale, conv, closing_lines): (Scale, PgTicksToNs, ptt::ClosingLines) = match counter::native_kind() {
        None => return ptt::run(opts, locale, system, Counter::Absent, out, err),
        Some(CounterKind::Tsc) => {
            let Some(facts) = CpuidFacts::native() else {
                return ptt::run(opts, locale, system, Counter::Absent, out, err);
            };
            // Before the first block, as pg_set_timing_clock_source does.
            let clocksource = read_current_clocksource(Path::new("/"));
            let mut info = PgTscInfo::detect(&facts, clocksource.as_deref(), pg_calibrate);
            let khz = u64::try_from(info.frequency_khz).unwrap_or(0);
            let parts = PgTicksToNs::counter_khz(khz).map(|conv| (Scale::from_khz(khz), conv));
            let closing = Box::new(move |l: &PgLocale, measured: bool| {
                info.complete(pg_calibrate);
                ptt::tsc_closing(l, &info, measured)
            });
            match parts {
                Some((Some(scale), conv)) => (scale, conv, closing),
                _ => return ptt::run(opts, locale, system, Counter::NotUsable(closing), out, err),
            }
        }
        Some(CounterKind::GenericTimer) => {
            let report = counter::discover_with(
                Path::new("/"),
                None,
                &Discovery::postgresql(clockscope_system::tsc::POSTGRES_CALIBRATION_BUDGET_NS),
                &full_budget,
            );
            let timer = report.generic_timer().map(|t| {
                let mut lines = t.frequency_lines();
                lines.push(t.decision_line());
                lines.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes()
            });
            match (timer, report.scale()) {
                (Some(lines), Some(scale)) => (
                    scale,
                    PgTicksToNs::for_scale(scale),
                    Box::new(move |_: &PgLocale, _| (lines, 0u8)) as ptt::ClosingLines,
                ),
                _ => {
                    let line = format!("{}\n", ptt::report::GENERIC_TIMER_NOT_USABLE).into_bytes();
                    return ptt::run(
                        opts,
                        locale,
                        system,
                        Counter::NotUsable(Box::new(move |_, _| (line, 0u8))),
                        out,
                        err,
                    );
                }
            }
        }
    };
    let mut closing_lines = Some(closing_lines);
    let mut result = None;
    let counter_ran = clockscope_pg::pg_loop::with_counter_blocks(scale, &mut |precise, fast| {
        let section = ptt::CounterSection {
            precise,
            fast,
            conv,
            closing_lines: closing_lines.take().expect("the counter blocks run once"),
        };
        result = Some(ptt::run(opts, locale, system, Counter::Usable(section), out, err));
    });
    match (counter_ran, result) {
        (Ok(()), Some(result)) => result,
        // Unreachable where PostgreSQL can read the TSC (RDTSCP is required).
        _ => ptt::run(opts, locale, system, Counter::Absent, out, err),
    }
}

//! This machine's measurements for the prediction, within `--max-time`:
//! its clocks ([`crate::clockcost`]: the pg_test_timing loops and the
//! executor-like loop) and the 8 kB page-cache read
//! ([`crate::timing_settings::measure_page_cache_read`]).
//!
//! They run on a thread of their own and stop at their next check once the
//! run's deadline has passed (or Ctrl-C). Their checks come every 10 ms in
//! the pg_test_timing loops but only between rounds of the executor-like
//! loop, whose rounds are as long as its work per row makes them (100,000
//! rows of up to 10 us); so the report waits for them until
//! [`crate::budget::LOCAL_OVERRUN`] after the deadline and then goes out
//! without them: the system clock's cost from a 10 ms pg_test_timing loop
//! measured then, RDTSC and the executor-like loop not measured, and a
//! warning that says so. The thread left behind ends with the process.

use crate::budget::{clock_measure_ns_within, LOCAL_OVERRUN};
use crate::clockcost::{self, MachineClocks};
use crate::session::{seconds, StopCheck};
use crate::timing_settings::{self, PageReadReference};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Passes over the file of the page-cache reference read
/// ([`timing_settings::measure_page_cache_read`]): 2,560 reads, a few ms.
pub(crate) use clockscope_pg::predict::settings::page_read::PAGE_READ_ROUNDS;

/// What was measured on this machine.
pub(crate) struct Local {
    pub machine: MachineClocks,
    pub page_read: Option<PageReadReference>,
    /// The pg_test_timing loop's length per clock, ns (shortened when
    /// `--max-time` left less than the full need).
    pub clock_measure_ns: u64,
    /// What `--max-time` cut short, if anything.
    pub warnings: Vec<String>,
}

/// What the measuring thread needs.
pub struct Plan {
    /// The run's deadline.
    pub deadline: Instant,
    /// `--max-time`, for messages.
    pub max_time: Duration,
    /// The pg_test_timing loop's full length per clock, ns.
    pub clock_measure_ns: u64,
    /// Whether the server runs on this machine (the page-cache read is then
    /// the server's).
    pub server_is_local: bool,
    /// The server's `server_version_num`: the instrumentation's shape.
    pub server_version_num: u32,
}

/// What the thread sends by `by` on [`clockscope_system::forward::now`]'s time:
/// received in slices of 20 ms, each a relative wait, so a monotonic clock
/// moved back (which would stretch one `recv_timeout` to `by`) cannot hold
/// the wait past its forward time.
fn receive_by<T>(rx: &mpsc::Receiver<T>, by: std::time::Instant) -> Option<T> {
    const SLICE: Duration = Duration::from_millis(20);
    loop {
        match rx.recv_timeout(SLICE) {
            Ok(v) => return Some(v),
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) if clockscope_system::forward::now() >= by => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Measures this machine's clocks and the page-cache read within
/// `plan.deadline`; `stop` (Ctrl-C) ends them early too.
pub fn measure(plan: &Plan, stop: StopCheck) -> Local {
    let left = plan
        .deadline
        .saturating_duration_since(clockscope_system::forward::now());
    let clock_measure_ns = clock_measure_ns_within(left, plan.clock_measure_ns);
    let (deadline, server_is_local) = (plan.deadline, plan.server_is_local);
    let request = clockcost::MachineRequest {
        duration_ns: clock_measure_ns,
        server_version_num: plan.server_version_num,
    };
    let stop_thread = StopCheck::clone(&stop);
    let work = move || {
        let mut keep_going = || !stop_thread() && clockscope_system::forward::now() < deadline;
        let machine = clockcost::measure_machine(request, &mut keep_going);
        let page_read = keep_going().then(|| page_read(server_is_local)).flatten();
        (machine, page_read)
    };
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("clockscope-local".into())
        .spawn(move || {
            let _ = tx.send(work());
        });
    // No thread: the fallback below, as for a thread past the deadline.
    let measured = spawned.ok().and_then(|_| receive_by(&rx, deadline + LOCAL_OVERRUN));
    let Some((machine, page_read)) = measured else {
        let warning = format!(
            "this machine's clock measurements did not end within --max-time ({}): the prediction uses a 10 ms \
             pg_test_timing loop on the system clock (back to back); the executor-like loop, RDTSC and the \
             page-cache read were not measured",
            seconds(plan.max_time)
        );
        return Local {
            machine: fallback_machine(plan.max_time),
            page_read: None,
            clock_measure_ns: 10_000_000,
            warnings: vec![warning],
        };
    };
    let mut warnings = Vec::new();
    if clock_measure_ns < plan.clock_measure_ns {
        warnings.push(format!(
            "--max-time ({}) left {:.2} s for this machine's clocks: each pg_test_timing loop ran {:.3} s instead \
             of {:.3} s",
            seconds(plan.max_time),
            left.as_secs_f64(),
            clock_measure_ns as f64 / 1e9,
            plan.clock_measure_ns as f64 / 1e9
        ));
    }
    Local {
        machine,
        page_read,
        clock_measure_ns,
        warnings,
    }
}

/// The system clock's cost from one short pg_test_timing loop (it runs one
/// 10 ms chunk when told to stop at once); nothing else.
fn fallback_machine(max_time: Duration) -> MachineClocks {
    MachineClocks {
        system: clockcost::measure_system(10_000_000, &mut || false),
        rdtsc: None,
        rdtscp: None,
        rdtsc_unavailable: Some(format!("not measured within --max-time ({})", seconds(max_time))),
        tsc_auto: false,
    }
}

fn page_read(server_is_local: bool) -> Option<PageReadReference> {
    timing_settings::measure_page_cache_read(PAGE_READ_ROUNDS).map(|p| PageReadReference {
        ns: p.ns,
        low_ns: p.low_ns,
        high_ns: p.high_ns,
        source: format!(
            "an 8 kB pread from the OS page cache (median of {PAGE_READ_ROUNDS} passes over {} pages) measured on \
             this machine, {}",
            timing_settings::PAGE_READ_PAGES,
            if server_is_local {
                "the server's"
            } else {
                "not the server's: an example"
            }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn plan(deadline: Instant) -> Plan {
        Plan {
            deadline,
            max_time: Duration::from_secs(1),
            clock_measure_ns: 500_000_000,
            server_is_local: true,
            server_version_num: 150_000,
        }
    }

    #[test]
    fn a_passed_deadline_ends_the_measurements_at_once_and_says_so() {
        let start = clockscope_system::forward::now();
        let local = measure(&plan(start), Arc::new(|| false));
        // The 10 ms chunks, the TSC's calibration (at most 50 ms), and at
        // most LOCAL_OVERRUN of waiting, with room for a debug build.
        assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
        assert!(local.machine.system.per_read_ns.is_finite());
        assert!(local.machine.system.executor_loop.is_none());
        assert!(local.page_read.is_none());
        assert_eq!(local.clock_measure_ns.min(10_000_000), local.clock_measure_ns);
        assert!(
            local.warnings.iter().any(|w| w.contains("--max-time (1 s)")),
            "{:?}",
            local.warnings
        );
    }
}

//! Bounded waits and cancelling: the deadlines of each statement (server-side
//! `statement_timeout`, client-side deadline), the wait that polls a future
//! next to a deadline and the caller's stop check, and the cancel request.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};
use tokio_postgres::CancelToken;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Server-side `statement_timeout`, fixed part: the statements that do not
/// scale with rows (settings, CREATE, DROP) take milliseconds.
pub(crate) const STATEMENT_TIMEOUT_BASE: Duration = Duration::from_secs(30);
/// Server-side `statement_timeout`, per row of the TEMP table. The slowest
/// statements per row are the fill (INSERT from generate_series: 20,000,000
/// rows in 35.7 s, 1.8 us per row, PostgreSQL 15 on this project's 2-core AMD
/// EPYC VM, psql `\timing`) and EXPLAIN with TIMING ON (two clock reads per
/// row: 0.07 us per row here, up to ~10 us with a slow clocksource such as
/// HPET); 20 us is 11x the fill and 2x that worst case.
pub(crate) const STATEMENT_TIMEOUT_PER_ROW: Duration = Duration::from_micros(20);
/// How long after the server's `statement_timeout` the client gives up.
pub(crate) const CLIENT_DEADLINE_GRACE: Duration = Duration::from_secs(10);
/// How long a stop (Ctrl-C) may take to cancel the statement and drop the
/// TEMP table before the connection is given up; with process exit it keeps
/// an interrupted run under 2 s.
pub(crate) const CLEANUP_BUDGET: Duration = Duration::from_millis(1500);
/// How long sending one cancel request may take (a new connection to the
/// server that carries the request).
pub(crate) const CANCEL_TIMEOUT: Duration = Duration::from_millis(700);
/// After `--max-time`'s deadline: the cancel request, the server's answer
/// and the teardown (ROLLBACK, DROP TABLE) all end within this, then the
/// connection is closed whether the server answered or not.
pub const DEADLINE_GRACE: Duration = CLEANUP_BUDGET;
/// How often a wait checks the caller's stop request.
pub(crate) const STOP_POLL: Duration = Duration::from_millis(20);

/// `statement_timeout` for a TEMP table of `rows` rows:
/// `STATEMENT_TIMEOUT_BASE` + rows x `STATEMENT_TIMEOUT_PER_ROW`
/// (50 s for the default 1,000,000 rows).
pub fn statement_timeout_for(rows: u64) -> Duration {
    STATEMENT_TIMEOUT_BASE + STATEMENT_TIMEOUT_PER_ROW * u32::try_from(rows).unwrap_or(u32::MAX)
}

/// The client-side deadline of each statement:
/// [`statement_timeout_for`] + [`CLIENT_DEADLINE_GRACE`].
pub(crate) fn client_deadline_for(rows: u64) -> Duration {
    statement_timeout_for(rows) + CLIENT_DEADLINE_GRACE
}

/// The caller's "stop now" check (Ctrl-C), polled while waiting on the server.
pub type StopCheck = Arc<dyn Fn() -> bool + Send + Sync>;

/// Sends the server a cancel request for the session's running statement.
/// Cheap to clone, usable from any thread that is not inside a tokio runtime
/// (the CLI sends it from its signal thread before a forced exit).
#[derive(Clone)]
pub struct CancelRequest {
    pub(super) token: CancelToken,
    /// The session's TLS connector: a cancel request goes as the session did.
    pub(super) tls: MakeRustlsConnect,
}

impl CancelRequest {
    /// Sends the request and waits at most `CANCEL_TIMEOUT`; whether the
    /// server took it.
    pub fn send_blocking(&self) -> bool {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return false;
        };
        rt.block_on(async {
            let by = clockscope_system::forward::now() + CANCEL_TIMEOUT;
            matches!(
                within(by, self.token.cancel_query(self.tls.clone())).await,
                Some(Ok(()))
            )
        })
    }
}

/// How a bounded wait ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Waited<T> {
    Done(T),
    TimedOut,
    Stopped,
}

/// Polls `fut` until it completes, `deadline` passes, or `stop()` says so
/// (checked every [`STOP_POLL`]). The deadline is on
/// [`clockscope_system::forward::now`], and the wake-ups come from a thread that
/// sleeps [`STOP_POLL`] at a time, not from tokio's timers: tokio's clock is
/// `Instant::now()`, so a monotonic clock moved back a day (faketime, a bad
/// hypervisor) would hold a tokio sleep for that day.
pub(crate) async fn wait<F: Future>(fut: F, deadline: Option<Instant>, stop: &dyn Fn() -> bool) -> Waited<F::Output> {
    let mut fut = pin!(fut);
    let ticker = Ticker::start();
    poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Waited::Done(v));
        }
        if stop() {
            return Poll::Ready(Waited::Stopped);
        }
        if deadline.is_some_and(|d| clockscope_system::forward::now() >= d) {
            return Poll::Ready(Waited::TimedOut);
        }
        // Wakes this poll again in STOP_POLL to look at `stop` and the deadline.
        ticker.wake_next(cx.waker());
        Poll::Pending
    })
    .await
}

/// `fut`'s output if it ends by `by` ([`clockscope_system::forward::now`]'s time).
pub(crate) async fn within<F: Future>(by: Instant, fut: F) -> Option<F::Output> {
    match wait(fut, Some(by), &|| false).await {
        Waited::Done(v) => Some(v),
        Waited::TimedOut | Waited::Stopped => None,
    }
}

/// Wakes the waker last given every [`STOP_POLL`], from a thread of its own
/// that ends within one period of the ticker's drop. A plain relative sleep
/// is a wake-up no clock step can hold back.
struct Ticker {
    shared: Arc<TickerShared>,
}

#[derive(Default)]
struct TickerShared {
    waker: std::sync::Mutex<Option<Waker>>,
    done: AtomicBool,
}

impl Ticker {
    fn start() -> Ticker {
        let shared = Arc::new(TickerShared::default());
        let theirs = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("explain-wait-tick".into())
            .spawn(move || {
                while !theirs.done.load(Ordering::Acquire) {
                    std::thread::sleep(STOP_POLL);
                    let waker = theirs.waker.lock().unwrap_or_else(PoisonError::into_inner).clone();
                    if let Some(w) = waker {
                        w.wake();
                    }
                }
            });
        // Without the thread (none can be made), nothing wakes the wait
        // before the future does: mark it so the waits still end with it.
        if spawned.is_err() {
            shared.done.store(true, Ordering::Release);
        }
        Ticker { shared }
    }

    fn wake_next(&self, waker: &Waker) {
        let mut held = self.shared.waker.lock().unwrap_or_else(PoisonError::into_inner);
        if !held.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *held = Some(waker.clone());
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.shared.done.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_grow_with_rows() {
        assert_eq!(statement_timeout_for(0), Duration::from_secs(30));
        assert_eq!(statement_timeout_for(1_000_000), Duration::from_secs(50));
        assert_eq!(statement_timeout_for(20_000_000), Duration::from_secs(430));
        assert_eq!(client_deadline_for(1_000_000), Duration::from_secs(60));
        assert_eq!(statement_timeout_for(1_000_000_000), Duration::from_secs(20_030));
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_wait_ends_at_its_deadline_or_a_stop() {
        let soon = Some(clockscope_system::forward::now() + Duration::from_millis(30));
        assert_eq!(
            block_on(wait(std::future::pending::<()>(), soon, &|| false)),
            Waited::TimedOut
        );
        assert_eq!(
            block_on(wait(std::future::pending::<()>(), None, &|| true)),
            Waited::Stopped
        );
        // A stop that comes later is seen by the periodic check.
        let start = Instant::now();
        let later = move || start.elapsed() > Duration::from_millis(50);
        assert_eq!(
            block_on(wait(std::future::pending::<()>(), None, &later)),
            Waited::Stopped
        );
        assert_eq!(block_on(wait(std::future::ready(7), None, &|| true)), Waited::Done(7));
    }
}

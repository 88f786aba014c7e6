//! Bounded statements: each runs to its end, its deadline or a stop; on a
//! stop or a missed deadline the server gets a cancel request and the
//! statement a moment to end, else the connection is given up. Cleanup
//! statements (DROP, ROLLBACK) run after a stop too, within the cleanup
//! budget.

use super::{seconds, PgSession};
use super::{wait, within, Waited, CANCEL_TIMEOUT, CLEANUP_BUDGET, CLIENT_DEADLINE_GRACE, DEADLINE_GRACE};
use crate::error::Error;
use std::future::Future;
use std::pin::{pin, Pin};
use std::time::{Duration, Instant};
use tokio_postgres::error::SqlState;

impl PgSession {
    /// The time by which cleanup must end, fixed at the first stop.
    fn begin_cleanup(&self) -> Instant {
        let by = self
            .cleanup_by
            .get()
            .unwrap_or_else(|| clockscope_system::forward::now() + CLEANUP_BUDGET);
        self.cleanup_by.set(Some(by));
        by
    }

    fn server_error(&self, step: &str, err: &tokio_postgres::Error) -> Error {
        let mut e = Error::server(step, err);
        if err.is_closed() {
            let said = self.last_word.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let (Error::Server { message, .. }, Some(said)) = (&mut e, said) {
                message.push_str(&format!(" ({said})"));
            }
        }
        e
    }

    /// An error of `step` that this side found (it has no SQLSTATE).
    fn client_error(step: &str, message: impl Into<String>) -> Error {
        Error::Server {
            step: step.to_string(),
            message: message.into(),
            sqlstate: None,
        }
    }

    fn unusable(step: &str) -> Error {
        Self::client_error(step, "the connection was given up after a statement did not end")
    }

    /// Runs one statement's future to its end, its deadline or a stop. On a
    /// stop or a missed deadline the server gets a cancel request and the
    /// statement a moment to end; if it does not, the connection is given up.
    pub(super) fn statement<T>(
        &self,
        step: &str,
        fut: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, Error> {
        if self.broken.get() {
            return Err(Self::unusable(step));
        }
        if (self.stop)() {
            self.begin_cleanup();
            return Err(Error::Interrupted);
        }
        let run_deadline = self.budget.map(|b| b.deadline());
        if run_deadline.is_some_and(|d| clockscope_system::forward::now() >= d) {
            return Err(Error::MaxTime(format!(
                "the {} deadline passed before {step}",
                seconds(self.max_time())
            )));
        }
        let own = clockscope_system::forward::now() + self.deadline;
        let (deadline, run_binds) = match run_deadline {
            Some(d) if d <= own => (d, true),
            _ => (own, false),
        };
        self.rt.block_on(async {
            let mut fut = pin!(fut);
            match wait(fut.as_mut(), Some(deadline), &*self.stop).await {
                Waited::Done(r) => r.map_err(|e| self.server_error(step, &e)),
                Waited::Stopped => {
                    let by = self.begin_cleanup();
                    self.cancel_and_settle(fut, by).await;
                    Err(Error::Interrupted)
                }
                Waited::TimedOut if run_binds => {
                    let outcome = self.cancel_and_settle(fut, deadline + DEADLINE_GRACE).await;
                    let note = format!(
                        "the {} deadline passed during {step}: {outcome}",
                        seconds(self.max_time())
                    );
                    *self.deadline_note.borrow_mut() = Some(note.clone());
                    Err(Error::MaxTime(note))
                }
                Waited::TimedOut => {
                    let outcome = self
                        .cancel_and_settle(fut, clockscope_system::forward::now() + CLEANUP_BUDGET)
                        .await;
                    let message = format!(
                        "no answer within {} s (the client's deadline, {} s after statement_timeout); {outcome}",
                        self.deadline.as_secs(),
                        CLIENT_DEADLINE_GRACE.as_secs()
                    );
                    Err(Self::client_error(step, message))
                }
            }
        })
    }

    fn max_time(&self) -> Duration {
        self.budget.map(|b| b.max_time()).unwrap_or_default()
    }

    /// Sends the cancel request for the statement `fut` and waits for it to
    /// end until `by`; says what is known: the server confirmed the cancel
    /// (SQLSTATE 57014), the statement ended anyway, or no answer came (the
    /// connection is then closed).
    async fn cancel_and_settle<T, F>(&self, fut: Pin<&mut F>, by: Instant) -> String
    where
        F: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let asked = clockscope_system::forward::now();
        let cancel_by = by.min(asked + CANCEL_TIMEOUT);
        let sent = match within(cancel_by, self.cancel.cancel_query(self.tls.clone())).await {
            Some(Ok(())) => "cancel sent".to_string(),
            Some(Err(e)) => format!("the cancel request failed ({})", crate::error::describe(&e).0),
            None => format!(
                "the cancel request was not taken within {:.1} s",
                cancel_by.saturating_duration_since(asked).as_secs_f64()
            ),
        };
        // A cancelled statement ends at once with SQLSTATE 57014 and leaves
        // the connection usable.
        match within(by, fut).await {
            Some(Err(e)) if e.code() == Some(&SqlState::QUERY_CANCELED) => {
                format!("{sent}; the server confirmed it: the statement was cancelled (SQLSTATE 57014)")
            }
            Some(Err(e)) => format!(
                "{sent}; the statement ended with another error: {}",
                crate::error::describe(&e).0
            ),
            Some(Ok(_)) => format!("{sent}; the statement ended before the cancel reached it"),
            None => {
                self.give_up();
                format!(
                    "{sent}, no answer from the server within {:.1} s; the connection was closed",
                    by.saturating_duration_since(asked).as_secs_f64()
                )
            }
        }
    }

    /// Abandons the connection: no statement is sent on it again and its
    /// socket is closed (the server ends the session, and drops the TEMP
    /// table, when its backend next runs).
    fn give_up(&self) {
        self.broken.set(true);
        self.driver.abort();
    }

    /// A cleanup statement: runs after a stop too, but only until the
    /// cleanup budget (or the usual deadline when there was no stop).
    pub(super) fn cleanup_statement(
        &self,
        step: &str,
        fut: impl Future<Output = Result<(), tokio_postgres::Error>>,
    ) -> Result<(), Error> {
        if self.broken.get() {
            return Err(Self::unusable(step));
        }
        let own_by = self
            .cleanup_by
            .get()
            .unwrap_or_else(|| clockscope_system::forward::now() + self.deadline);
        let run_by = self.budget.map(|b| b.deadline() + DEADLINE_GRACE);
        let by = run_by.map_or(own_by, |r| r.min(own_by));
        let sent = clockscope_system::forward::now();
        match self.rt.block_on(within(by, fut)) {
            Some(r) => r.map_err(|e| self.server_error(step, &e)),
            // --max-time's grace ended it: no cancel for a cleanup statement.
            None if run_by == Some(by) => {
                self.give_up();
                let note = format!(
                    "the {} deadline passed during {step}: no answer from the server within {:.1} s; the \
                     connection was closed",
                    seconds(self.max_time()),
                    by.saturating_duration_since(sent).as_secs_f64()
                );
                *self.deadline_note.borrow_mut() = Some(note.clone());
                Err(Error::MaxTime(note))
            }
            None => {
                self.give_up();
                Err(Self::client_error(
                    step,
                    "no answer in time; the server drops the table when the session ends",
                ))
            }
        }
    }
}

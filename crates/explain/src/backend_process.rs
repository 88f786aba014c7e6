//! The server's backend as a process of this machine, known beyond its pid.
//!
//! The model's slices are pinned to the CPU the server's backend last ran on
//! (`crate::clockcost`). The pid the server gives (`pg_backend_pid()`) is a
//! process id in the server's pid namespace: a server in a container, or
//! behind a loopback port forwarded to another machine, has pids of its own,
//! and the same number here can be any process, even a `postgres` of another
//! local cluster. So the process here is taken for the backend only when
//! ([`confirm`]):
//!
//! 1. its age agrees with the server's: `clock_timestamp() - backend_start`
//!    (PostgreSQL sets `backend_start` just after the fork) read between two
//!    reads of the process's age here (`proc/uptime` less its start time,
//!    `proc/<pid>/stat` field 22), within [`AGE_TOLERANCE`]. The session is
//!    seconds old, so another process would have to have started within that
//!    window of our connection and hold the same pid;
//! 2. when both can be read, its working directory (`proc/<pid>/cwd`: the
//!    postmaster changes to its data directory before it forks) is the
//!    server's `data_directory` (shown to superusers and
//!    pg_read_all_settings only; the link is readable by root or the
//!    server's user): a backend of another cluster started in the same
//!    second fails here.
//!
//! Otherwise pinning is skipped and a warning says why.

use crate::error::Error;
use crate::session::PgSession;
use clockscope_system::escape::escape_untrusted;
use clockscope_system::linux::process::read_process_age;
use clockscope_system::linux::Evidence;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How far the server's age of its backend may lie outside the ages read
/// here before and after asking it: two 10 ms tick roundings, the fork to
/// `backend_start` (microseconds) and a loaded machine's delays.
pub const AGE_TOLERANCE: Duration = Duration::from_millis(500);

/// What the server says of its own backend.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerView {
    /// `clock_timestamp() - backend_start`, by the server's clock.
    pub age: Duration,
    /// `data_directory`, when this role may read it.
    pub data_directory: Option<String>,
}

/// Whether process `pid` under `root` (`/`) is the backend that `ask`
/// describes ([`ServerView`], asked between two reads of the process here):
/// `Ok(Ok(()))` confirmed, `Ok(Err(why))` not (pinning is then skipped),
/// `Err` when the server could not be asked.
pub fn confirm(
    root: &Path,
    pid: u32,
    ask: &mut dyn FnMut() -> Result<ServerView, Error>,
) -> Result<Result<(), String>, Error> {
    let before = match local_age(root, pid) {
        Ok(age) => age,
        Err(why) => return Ok(Err(why)),
    };
    let server = ask()?;
    let after = match local_age(root, pid) {
        Ok(age) => age,
        Err(why) => return Ok(Err(why)),
    };
    let low = before.saturating_sub(AGE_TOLERANCE);
    let high = after + AGE_TOLERANCE;
    if server.age < low || server.age > high {
        return Ok(Err(format!(
            "process {pid} here started {:.2} s ago, the server's backend {:.2} s ago: another process with the \
             same id (a server in a container or on another machine has process ids of its own)",
            after.as_secs_f64(),
            server.age.as_secs_f64()
        )));
    }
    if let (Some(dir), Some(cwd)) = (&server.data_directory, working_dir(root, pid)) {
        let server_dir = std::fs::canonicalize(dir).unwrap_or_else(|_| PathBuf::from(dir));
        if cwd != server_dir {
            return Ok(Err(format!(
                "process {pid} here works in {}, not in the server's data directory {}: another cluster's process \
                 with the same id",
                escape_untrusted(&cwd.display().to_string()),
                escape_untrusted(dir)
            )));
        }
    }
    Ok(Ok(()))
}

/// The session's backend pid when the server is on this machine
/// (`local`) and the process of that pid here is confirmed to be it
/// ([`confirm`]); else why pinning to it is skipped.
pub(crate) fn of_session(session: &mut PgSession, local: bool) -> Result<(Option<u32>, Option<String>), Error> {
    if !local {
        return Ok((None, None));
    }
    let pid = session.backend_pid()?;
    Ok(match confirm(Path::new("/"), pid, &mut || session.backend_view()) {
        Ok(Ok(())) => (Some(pid), None),
        Ok(Err(why)) => (None, Some(why)),
        // Not a reason to stop the run: a broken connection, a stop or the
        // deadline ends it at the next statement.
        Err(e) => (
            None,
            Some(format!("the server's view of its backend was not read: {e}")),
        ),
    })
}

/// How long ago process `pid` started, or why that cannot be read.
fn local_age(root: &Path, pid: u32) -> Result<Duration, String> {
    match read_process_age(root, pid) {
        Evidence::Found((_, Some(age))) => Ok(age),
        Evidence::Found((_, None)) => Err(format!("process {pid} here started after the uptime read")),
        Evidence::Missing(r) | Evidence::Unreadable(r) => Err(format!("the backend's process {pid} was not read: {r}")),
    }
}

/// `proc/<pid>/cwd` under `root`, when this user may read the link.
fn working_dir(root: &Path, pid: u32) -> Option<PathBuf> {
    std::fs::read_link(root.join(format!("proc/{pid}/cwd"))).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_root(start_ticks: u64, uptime: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let proc_dir = root.path().join("proc/412");
        std::fs::create_dir_all(&proc_dir).unwrap();
        std::fs::write(
            proc_dir.join("stat"),
            format!(
                "412 (postgres) S 398 412 412 0 -1 4194624 301 0 0 0 3 1 0 0 20 0 1 0 {start_ticks} 226000896 2049 \
                 18446744073709551615 1 1 0 0 0 0 4194304 19935232 84487 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
            ),
        )
        .unwrap();
        std::fs::write(root.path().join("proc/uptime"), uptime).unwrap();
        root
    }

    fn view(age_ms: u64) -> ServerView {
        ServerView {
            age: Duration::from_millis(age_ms),
            data_directory: None,
        }
    }

    #[test]
    fn the_ages_must_agree() {
        // Started at 100.00 s, uptime 102.00 s: 2 s old.
        let root = fake_root(10_000, "102.00 1.00\n");
        let ok = confirm(root.path(), 412, &mut || Ok(view(1_900))).unwrap();
        assert_eq!(ok, Ok(()));
        let old = confirm(root.path(), 412, &mut || Ok(view(86_400_000))).unwrap();
        assert!(old.unwrap_err().contains("another process with the same id"));
        let young = confirm(root.path(), 412, &mut || Ok(view(100))).unwrap();
        assert!(young.is_err());
        let missing = confirm(root.path(), 413, &mut || panic!("not asked")).unwrap();
        assert!(missing.unwrap_err().contains("413"));
    }
}

//! A child process that outlives this one for one purpose: it runs a
//! [`Cleanup`] prepared in advance (putting the kernel's clocksource back,
//! removing a temporary file) when this process dies without dismissing it
//! (any signal, a forced exit, SIGKILL, a crash), or when this process asks
//! it to now ([`Guardian::run_now`], which waits for its answer), and exits.
//!
//! The child runs in a session of its own (`setsid`, done before
//! [`Guardian::spawn`] returns): a signal to this process's group or session
//! (`kill -KILL -PGID`, `timeout -s KILL`, a service manager stopping the
//! group, a shell's job control) does not reach it, so it outlives that too
//! and cleans up.
//!
//! The child learns of the death through a pipe: this process holds the
//! only write end, so the kernel closes it on any death and the child's
//! `read` returns end-of-file at once. A byte on the pipe is an order: `D`
//! "done, do nothing" ([`Guardian::dismiss`]), `R` "run it now and say what
//! you did in your exit code" ([`Guardian::run_now`]). The child ignores every
//! catchable signal (a Ctrl-C or Ctrl-\ from the terminal reaches the whole
//! process group), keeps only the file descriptors it is given (a lock it
//! must hold until it has cleaned up, so nobody starts over a half-restored
//! state), stdin/stdout on /dev/null and stderr for its note, and after
//! `fork` makes only async-signal-safe system calls on memory prepared
//! before it (the parent may have other threads).
//!
//! Written over `libc`: no crate forks a non-exec child with a pipe-EOF
//! watch (`std::process` only spawns programs).

use crate::cleanup::{Cleanup, Ran};
use std::io;
use std::os::fd::RawFd;

/// The child and the write end of its pipe (-1 once told or waited for).
pub struct Guardian {
    pid: libc::pid_t,
    order_fd: RawFd,
    /// What a drop tells it: `D` (nothing to do), or nothing at all (as a
    /// death: it runs the cleanup) after [`Guardian::cleanup_on_drop`].
    on_drop: Option<u8>,
}

fn pipe() -> io::Result<[RawFd; 2]> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fds)
}

impl Guardian {
    /// Forks the guardian; it runs `cleanup` if this process dies before
    /// [`Guardian::dismiss`] or [`Guardian::run_now`]. It inherits the
    /// descriptors in `keep` (and holds them until it exits) and no other.
    pub fn spawn(cleanup: Cleanup, keep: &[RawFd]) -> io::Result<Guardian> {
        let [read_fd, write_fd] = pipe()?;
        let [ready_read, ready_write] = pipe().inspect_err(|_| {
            close(read_fd);
            close(write_fd);
        })?;
        // Everything the child needs, prepared before fork.
        let mut kept: Vec<RawFd> = keep.iter().copied().filter(|&fd| fd > 2).collect();
        kept.push(read_fd);
        kept.sort_unstable();
        kept.dedup();
        let dev_null = c"/dev/null";
        // SAFETY: fork has no preconditions; the child below calls only
        // async-signal-safe functions on memory allocated before the fork
        // and ends with _exit, never returning into the parent's code.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = io::Error::last_os_error();
            for fd in [read_fd, write_fd, ready_read, ready_write] {
                close(fd);
            }
            return Err(e);
        }
        if pid == 0 {
            close(write_fd);
            close(ready_read);
            child::prepare(&kept, dev_null, ready_write);
            child::watch(read_fd, &cleanup);
        }
        close(read_fd);
        close(ready_write);
        let mut guardian = Guardian {
            pid,
            order_fd: write_fd,
            on_drop: Some(b'D'),
        };
        // Returned only once it is out of this process group and ignores
        // signals: a signal to the group right after (the switch seen, then
        // `kill -KILL -PGID`) must not reach it.
        let mut byte = [0u8; 1];
        let ready = loop {
            // SAFETY: reads at most one byte into a live local buffer.
            let n = unsafe { libc::read(ready_read, byte.as_mut_ptr().cast(), 1) };
            if n >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break n == 1;
            }
        };
        close(ready_read);
        if !ready {
            guardian.finish(Some(b'D'));
            return Err(io::Error::other("the guardian process died as it started"));
        }
        Ok(guardian)
    }

    /// A drop from now on is a death: the guardian runs the cleanup (and
    /// writes its note), and the drop waits for it.
    pub fn cleanup_on_drop(mut self) -> Guardian {
        self.on_drop = None;
        self
    }

    /// Tells the guardian to do nothing, and waits for it to exit.
    pub fn dismiss(mut self) {
        self.finish(Some(b'D'));
    }

    /// Has the guardian run the cleanup now (without its note) and returns
    /// what it did once it has exited; `None` when it could not say (killed).
    pub fn run_now(mut self) -> Option<Ran> {
        let status = self.finish(Some(b'R'))?;
        libc::WIFEXITED(status).then(|| Ran::from_exit_code(libc::WEXITSTATUS(status)))
    }

    /// Closes the pipe with `order` sent first (`None`: as a death does) and
    /// waits for the guardian to exit; its wait status.
    fn finish(&mut self, order: Option<u8>) -> Option<i32> {
        if self.order_fd < 0 {
            return None;
        }
        if let Some(byte) = order {
            // SAFETY: order_fd is our open write end; the buffer is one live byte.
            // A failure (the child is gone) leaves nothing to tell.
            unsafe { libc::write(self.order_fd, [byte].as_ptr().cast(), 1) };
        }
        close(self.order_fd);
        self.order_fd = -1;
        let mut status = 0;
        loop {
            // SAFETY: pid is our own child; status a valid out-int. Retried on EINTR.
            if unsafe { libc::waitpid(self.pid, &mut status, 0) } == self.pid {
                return Some(status);
            }
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return None;
            }
        }
    }
}

impl Drop for Guardian {
    fn drop(&mut self) {
        self.finish(self.on_drop);
    }
}

fn close(fd: RawFd) {
    // SAFETY: closing a descriptor this code owns; async-signal-safe.
    unsafe { libc::close(fd) };
}

mod child {
    //! What the forked child does: async-signal-safe calls only.

    use super::close;
    use crate::cleanup::Cleanup;
    use std::ffi::CStr;
    use std::os::fd::RawFd;

    /// A session of its own, signals ignored (then a byte on `ready_fd`:
    /// the parent waits for it), stdin/stdout on /dev/null,
    /// every descriptor above 2 but `kept` (sorted) closed, and a name for `ps`.
    pub(super) fn prepare(kept: &[RawFd], dev_null: &CStr, ready_fd: RawFd) {
        // SAFETY: setsid has no arguments and is async-signal-safe. It cannot
        // fail here: a forked child is never a process-group leader. Out of
        // the parent's process group and session, a signal sent to either
        // (kill -KILL -PGID, timeout -s KILL) does not reach the guardian.
        unsafe { libc::setsid() };
        // SAFETY: sigaction with SIG_IGN on every catchable signal (errors for
        // SIGKILL/SIGSTOP and reserved numbers are ignored), a valid local
        // struct; sigprocmask with an empty set; async-signal-safe.
        unsafe {
            let mut ign: libc::sigaction = std::mem::zeroed();
            ign.sa_sigaction = libc::SIG_IGN;
            for sig in 1..=64 {
                libc::sigaction(sig, &ign, std::ptr::null_mut());
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        }
        // SAFETY: a one-byte live buffer; write and close are async-signal-safe.
        unsafe { libc::write(ready_fd, [1u8].as_ptr().cast(), 1) };
        close(ready_fd);
        // SAFETY: open/dup2 on a NUL-terminated path and our descriptors.
        unsafe {
            let null = libc::open(dev_null.as_ptr(), libc::O_RDWR);
            if null >= 0 {
                libc::dup2(null, 0);
                libc::dup2(null, 1);
                if null > 2 && kept.binary_search(&null).is_err() {
                    close(null);
                }
            }
        }
        let mut first: u32 = 3;
        for &fd in kept {
            let fd = fd as u32;
            if fd > first {
                close_range(first, fd - 1);
            }
            first = fd + 1;
        }
        close_range(first, u32::MAX);
        #[cfg(any(target_os = "linux", target_os = "android"))]
        // SAFETY: PR_SET_NAME reads a NUL-terminated name of at most 16 bytes.
        unsafe {
            libc::prctl(libc::PR_SET_NAME, c"clockscope-guard".as_ptr());
        }
    }

    fn close_range(first: u32, last: u32) {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            // SAFETY: the close_range system call (Linux 5.9) closes descriptors; no memory is passed.
            if unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) } == 0 {
                return;
            }
        }
        // Older kernels: the descriptors a process normally has.
        for fd in first..=last.min(4095) {
            close(fd as RawFd);
        }
    }

    /// Waits for an order: `D`: exit; `R`: run the cleanup, exit with what it
    /// did; end-of-file (the parent died): run the cleanup (and its note), exit.
    pub(super) fn watch(read_fd: RawFd, cleanup: &Cleanup) -> ! {
        let mut byte = [0u8; 1];
        loop {
            // SAFETY: reads at most one byte into a live local buffer.
            let n = unsafe { libc::read(read_fd, byte.as_mut_ptr().cast(), 1) };
            if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            let code = match (n, byte[0]) {
                (1, b'D') => 0,
                (1, b'R') => cleanup.run(false).exit_code(),
                _ => cleanup.run(true).exit_code(),
            };
            // SAFETY: _exit ends the child without running the parent's atexit handlers.
            unsafe { libc::_exit(code) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(current: &str) -> (tempfile::TempDir, std::path::PathBuf, Cleanup) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("current");
        std::fs::write(&f, current).unwrap();
        let c = Cleanup::write(&f, b"tsc\n").unwrap().if_file_reads(&f, "hpet").unwrap();
        (dir, f, c)
    }

    #[test]
    fn dismissed_it_does_nothing() {
        let (_d, f, c) = files("hpet\n");
        Guardian::spawn(c, &[]).unwrap().dismiss();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "hpet\n");
        let (_d, f, c) = files("hpet\n");
        drop(Guardian::spawn(c, &[]).unwrap());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "hpet\n");
    }

    #[test]
    fn on_end_of_file_or_a_drop_after_cleanup_on_drop_it_cleans_up() {
        let (_d, f, c) = files("hpet\n");
        drop(Guardian::spawn(c, &[]).unwrap().cleanup_on_drop());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "tsc\n");
        let (_d, f, c) = files("hpet\n");
        drop(Guardian::spawn(c, &[]).unwrap().cleanup_on_drop());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "tsc\n");
        // Its condition fails: nothing written.
        let (_d, f, c) = files("acpi_pm\n");
        drop(Guardian::spawn(c, &[]).unwrap().cleanup_on_drop());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "acpi_pm\n");
    }

    #[test]
    fn run_now_answers_what_it_did() {
        let (_d, f, c) = files("hpet\n");
        assert_eq!(Guardian::spawn(c, &[]).unwrap().run_now(), Some(Ran::Done));
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "tsc\n");
        let (_d, _f, c) = files("acpi_pm\n");
        assert_eq!(Guardian::spawn(c, &[]).unwrap().run_now(), Some(Ran::Skipped));
        let (d, f, _) = files("hpet\n");
        let c = Cleanup::write(&d.path().join("missing"), b"tsc\n").unwrap();
        let ran = Guardian::spawn(c, &[]).unwrap().run_now();
        assert_eq!(ran, Some(Ran::Failed(libc::ENOENT)));
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "hpet\n");
    }

    /// Set in the processes [`a_kill_of_the_whole_group_right_after_spawn_still_cleans_up`]
    /// starts: the file their guardian restores.
    const CHILD_FILE: &str = "CLOCKSCOPE_TEST_GUARDIAN_FILE";

    /// Not a test by itself: the body of those processes (it does nothing
    /// without their environment): spawn, then SIGKILL to the whole group at once.
    #[test]
    fn spawn_then_kill_the_group() {
        let Some(f) = std::env::var_os(CHILD_FILE) else {
            return;
        };
        let f = std::path::PathBuf::from(f);
        let c = Cleanup::write(&f, b"tsc\n").unwrap().if_file_reads(&f, "hpet").unwrap();
        let _guardian = Guardian::spawn(c, &[]).unwrap();
        // SAFETY: SIGKILL to this process's own group, which the test made for it.
        unsafe { libc::kill(0, libc::SIGKILL) };
    }

    #[test]
    fn a_kill_of_the_whole_group_right_after_spawn_still_cleans_up() {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        use std::time::{Duration, Instant};
        for _ in 0..20 {
            let (_d, f, _) = files("hpet\n");
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "guardian::tests::spawn_then_kill_the_group",
                    "--test-threads=1",
                ])
                .env(CHILD_FILE, &f)
                .process_group(0)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
            let start = Instant::now();
            while std::fs::read_to_string(&f).unwrap() != "tsc\n" {
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "the guardian died with the group"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

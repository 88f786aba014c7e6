//! A child process that outlives this one for one purpose: when this
//! process dies without saying "done" (any signal, a forced exit, SIGKILL,
//! a crash), the child runs a [`Cleanup`] prepared in advance, such as
//! putting the kernel's clocksource back, and exits.
//!
//! The child runs in a session of its own (`setsid`): a signal to this
//! process's group or session (`kill -KILL -PGID`, `timeout -s KILL`, a
//! service manager stopping the group, a shell's job control) does not
//! reach it, so it outlives that too and restores.
//!
//! The child learns of the death through a pipe: this process holds the
//! only write end, so the kernel closes it on any death and the child's
//! `read` returns end-of-file at once; a byte on the pipe means "done"
//! ([`Guardian::dismiss`], also on drop). The child ignores every catchable
//! signal (a Ctrl-C or Ctrl-\ from the terminal reaches the whole process
//! group), keeps only the file descriptors it is given (a lock it must hold
//! until it has cleaned up, so nobody starts over a half-restored state),
//! stdin/stdout on /dev/null and stderr for its note, and after `fork` makes
//! only async-signal-safe system calls on memory prepared before it (the
//! parent may have other threads).
//!
//! Written over `libc`: no crate forks a non-exec child with a pipe-EOF
//! watch (`std::process` only spawns programs).

use crate::cleanup::Cleanup;
use std::io;
use std::os::fd::RawFd;

/// The child, and the write end of its pipe (-1 once dismissed).
pub struct Guardian {
    pid: libc::pid_t,
    done_fd: RawFd,
}

impl Guardian {
    /// Forks the guardian; it runs `cleanup` if this process dies before
    /// [`Guardian::dismiss`]. It inherits the descriptors in `keep` (and holds
    /// them until it exits) and no other.
    pub fn spawn(cleanup: Cleanup, keep: &[RawFd]) -> io::Result<Guardian> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let [read_fd, write_fd] = fds;
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
            close(read_fd);
            close(write_fd);
            return Err(e);
        }
        if pid == 0 {
            close(write_fd);
            child::prepare(&kept, dev_null);
            child::watch(read_fd, &cleanup);
        }
        close(read_fd);
        Ok(Guardian { pid, done_fd: write_fd })
    }

    /// Tells the guardian this process cleaned up itself, and waits for it to exit.
    pub fn dismiss(mut self) {
        self.finish(true);
    }

    /// Closes the pipe without the "done" byte, as a death does, and waits
    /// for the guardian to run the cleanup (for tests).
    #[doc(hidden)]
    pub fn abandon(mut self) {
        self.finish(false);
    }

    fn finish(&mut self, done: bool) {
        if self.done_fd < 0 {
            return;
        }
        if done {
            // SAFETY: done_fd is our open write end; the buffer is one live byte.
            // A failure (the child is gone) leaves nothing to tell.
            unsafe { libc::write(self.done_fd, b"D".as_ptr().cast(), 1) };
        }
        close(self.done_fd);
        self.done_fd = -1;
        let mut status = 0;
        // SAFETY: pid is our own child; status a valid out-int. Retried on EINTR.
        while unsafe { libc::waitpid(self.pid, &mut status, 0) } < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    }
}

impl Drop for Guardian {
    fn drop(&mut self) {
        self.finish(true);
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

    /// A session of its own, signals ignored, stdin/stdout on /dev/null,
    /// every descriptor above 2 but `kept` (sorted) closed, and a name for `ps`.
    pub(super) fn prepare(kept: &[RawFd], dev_null: &CStr) {
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

    /// Waits for "done" (exit) or end-of-file (the parent died: clean up, exit).
    pub(super) fn watch(read_fd: RawFd, cleanup: &Cleanup) -> ! {
        let mut byte = [0u8; 1];
        loop {
            // SAFETY: reads at most one byte into a live local buffer.
            let n = unsafe { libc::read(read_fd, byte.as_mut_ptr().cast(), 1) };
            if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if n != 1 {
                cleanup.run();
            }
            // SAFETY: _exit ends the child without running the parent's atexit handlers.
            unsafe { libc::_exit(0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(content: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("current");
        std::fs::write(&f, content).unwrap();
        (dir, f)
    }

    #[test]
    fn dismissed_it_does_nothing() {
        let (_d, f) = file("hpet\n");
        let g = Guardian::spawn(Cleanup::write(&f, b"tsc\n").unwrap(), &[]).unwrap();
        g.dismiss();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "hpet\n");
        let g = Guardian::spawn(Cleanup::write(&f, b"tsc\n").unwrap(), &[]).unwrap();
        drop(g);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "hpet\n");
    }

    #[test]
    fn on_end_of_file_it_cleans_up() {
        let (_d, f) = file("hpet\n");
        let c = Cleanup::write(&f, b"tsc\n").unwrap().if_file_reads(&f, "hpet").unwrap();
        Guardian::spawn(c, &[]).unwrap().abandon();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "tsc\n");
        // Its condition fails now: nothing written.
        std::fs::write(&f, "acpi_pm\n").unwrap();
        let c = Cleanup::write(&f, b"tsc\n").unwrap().if_file_reads(&f, "hpet").unwrap();
        Guardian::spawn(c, &[]).unwrap().abandon();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "acpi_pm\n");
    }
}

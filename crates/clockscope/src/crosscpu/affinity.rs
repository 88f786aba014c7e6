//! CPU affinity system calls: which CPUs this process may run on
//! (`sched_getaffinity`) and pinning the calling thread to one
//! (`sched_setaffinity`). All of the cross-CPU module's unsafe code is here.
//!
//! The mask is an array of `unsigned long` words sized at run time, as glibc's
//! `CPU_ALLOC` documentation describes: start at `CPU_SETSIZE` (1024) bits and
//! double while the kernel answers EINVAL (its mask is wider), up to
//! [`MAX_MASK_BITS`]. Bits are only read within the mask the kernel filled.
//! The affinity mask already reflects the cgroup cpuset and `taskset`.
//!
//! Linux only; elsewhere every function returns
//! [`AffinityError::Unsupported`].

/// The widest affinity mask tried: 2^22 bits (512 KiB), far above the
/// kernel's CONFIG_NR_CPUS limit of 8192.
pub const MAX_MASK_BITS: usize = 1 << 22;

/// Why an affinity call failed.
#[derive(Debug, thiserror::Error)]
pub enum AffinityError {
    /// Not Linux.
    #[error("CPU affinity (sched_getaffinity/sched_setaffinity) needs Linux; this is {0}")]
    Unsupported(&'static str),
    /// sched_getaffinity failed.
    #[error("sched_getaffinity failed: {0}")]
    Get(std::io::Error),
    /// sched_setaffinity failed for `cpu`.
    #[error("could not pin a thread to CPU {cpu} (sched_setaffinity: {err})")]
    Pin { cpu: usize, err: std::io::Error },
    /// After pinning, the thread reported running elsewhere.
    #[error("a thread pinned to CPU {cpu} runs on CPU {running_on}")]
    NotMoved { cpu: usize, running_on: usize },
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{AffinityError, MAX_MASK_BITS};
    use crate::crosscpu::cpulist::{cpus_to_mask, mask_to_cpus, MASK_WORD_BITS};
    use std::io;
    use std::mem::size_of;

    /// The calling thread's affinity mask, grown until the kernel accepts its width.
    fn get_mask() -> Result<Vec<libc::c_ulong>, AffinityError> {
        let mut bits = libc::CPU_SETSIZE as usize;
        loop {
            let mut words = vec![0 as libc::c_ulong; bits / MASK_WORD_BITS];
            let bytes = words.len() * size_of::<libc::c_ulong>();
            // SAFETY: `words` is a live, writable buffer of exactly `bytes`
            // bytes, aligned for `unsigned long` like `cpu_set_t` (an array of
            // `unsigned long` in glibc and musl); the kernel writes at most
            // `bytes` bytes into it. pid 0 is the calling thread.
            let rc = unsafe { libc::sched_getaffinity(0, bytes, words.as_mut_ptr().cast::<libc::cpu_set_t>()) };
            if rc == 0 {
                return Ok(words);
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINVAL) && bits < MAX_MASK_BITS {
                bits *= 2;
                continue;
            }
            return Err(AffinityError::Get(err));
        }
    }

    pub fn allowed_cpus() -> Result<Vec<usize>, AffinityError> {
        Ok(mask_to_cpus(&get_mask()?))
    }

    pub fn current_cpu() -> Option<usize> {
        // SAFETY: sched_getcpu takes no arguments and only returns a number.
        let cpu = unsafe { libc::sched_getcpu() };
        usize::try_from(cpu).ok()
    }

    pub fn pin_current_thread(cpu: usize) -> Result<(), AffinityError> {
        // As wide as the mask the kernel accepted from sched_getaffinity.
        let width_bits = get_mask()?.len() * MASK_WORD_BITS;
        let mask = cpus_to_mask(&[cpu], width_bits);
        let bytes = mask.len() * size_of::<libc::c_ulong>();
        // SAFETY: `mask` is a live buffer of exactly `bytes` bytes, aligned
        // for `unsigned long` like `cpu_set_t`; the kernel only reads it.
        // pid 0 is the calling thread.
        let rc = unsafe { libc::sched_setaffinity(0, bytes, mask.as_ptr().cast::<libc::cpu_set_t>()) };
        if rc != 0 {
            return Err(AffinityError::Pin {
                cpu,
                err: io::Error::last_os_error(),
            });
        }
        // sched_setaffinity migrates the calling thread before it returns.
        match current_cpu() {
            Some(running_on) if running_on != cpu => Err(AffinityError::NotMoved { cpu, running_on }),
            _ => Ok(()),
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::AffinityError;

    pub fn allowed_cpus() -> Result<Vec<usize>, AffinityError> {
        Err(AffinityError::Unsupported(std::env::consts::OS))
    }

    pub fn current_cpu() -> Option<usize> {
        None
    }

    pub fn pin_current_thread(_cpu: usize) -> Result<(), AffinityError> {
        Err(AffinityError::Unsupported(std::env::consts::OS))
    }
}

/// The CPUs this process may run on (sorted), from `sched_getaffinity`.
pub fn allowed_cpus() -> Result<Vec<usize>, AffinityError> {
    imp::allowed_cpus()
}

/// The CPU the calling thread runs on now (`sched_getcpu`), when known.
pub fn current_cpu() -> Option<usize> {
    imp::current_cpu()
}

/// Pins the calling thread to `cpu` alone and checks that it moved there.
pub fn pin_current_thread(cpu: usize) -> Result<(), AffinityError> {
    imp::pin_current_thread(cpu)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn allowed_cpus_are_sorted_and_include_the_current_one() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
        if let Some(cpu) = current_cpu() {
            assert!(cpus.contains(&cpu), "running on {cpu}, allowed {cpus:?}");
        }
    }

    #[test]
    fn pinning_moves_a_thread_and_an_unknown_cpu_is_refused() {
        let cpus = allowed_cpus().unwrap();
        let last = *cpus.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            assert_eq!(current_cpu(), Some(last));
            assert_eq!(allowed_cpus().unwrap(), vec![last]);
            // 8191: the kernel's largest CONFIG_NR_CPUS; a CPU that does not
            // exist (or is not allowed) is refused with EINVAL.
            if !cpus.contains(&8191) {
                let err = pin_current_thread(8191).unwrap_err();
                assert!(
                    err.to_string().starts_with("could not pin a thread to CPU 8191"),
                    "{err}"
                );
            }
        })
        .join()
        .unwrap();
    }
}

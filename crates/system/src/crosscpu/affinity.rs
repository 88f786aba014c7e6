//! CPU affinity system calls: which CPUs this process may run on
//! (`sched_getaffinity`) and pinning the calling thread to one
//! (`sched_setaffinity`), and the affinity bit masks they take. All of the
//! cross-CPU module's unsafe code is here.
//!
//! The mask is an array of `unsigned long` words sized at run time. Its
//! width is the kernel's `nr_cpu_ids` (the highest CPU in
//! `/sys/devices/system/cpu/possible`, plus one) rounded up to whole words,
//! so the mask is as small as the kernel accepts: 1 word on a 2-CPU machine.
//! Only when that file is unreadable does the width start at `CPU_SETSIZE`
//! (1024) bits; either way it doubles while the kernel answers EINVAL (its
//! mask is wider), up to [`MAX_MASK_BITS`], as glibc's `CPU_ALLOC`
//! documentation describes. Bits are only read within the mask the kernel
//! filled. The affinity mask already reflects the cgroup cpuset and `taskset`.
//!
//! Small masks matter under qemu-user, which copies a mask onto the calling
//! thread's stack (a fixed-size stack for the threads it creates): a 512 KiB
//! mask passed from a spawned thread crashes qemu 7.2.
//!
//! Linux only; elsewhere every function returns
//! [`AffinityError::Unsupported`].

use crate::linux::{self, CpuList, Evidence};

/// The widest affinity mask tried: 2^22 bits (512 KiB), far above the
/// kernel's CONFIG_NR_CPUS limit of 8192; one more than
/// [`linux::cpulist::MAX_CPU`], so every CPU a list can name fits.
pub const MAX_MASK_BITS: usize = linux::cpulist::MAX_CPU + 1;

/// Bits in one word of an affinity mask (the kernel's `unsigned long`).
pub(crate) const MASK_WORD_BITS: usize = 8 * std::mem::size_of::<libc::c_ulong>();

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
    Pin {
        /// The CPU asked for.
        cpu: usize,
        /// The system call's error.
        err: std::io::Error,
    },
    /// The CPU is not among those the thread may run on now (`taskset`, a
    /// cpuset): pinning there would override the user's choice.
    #[error("CPU {cpu} is not among the CPUs this thread may run on ({allowed})")]
    NotAllowed {
        /// The CPU asked for.
        cpu: usize,
        /// The CPUs it may run on, as a list ("0,2-3").
        allowed: String,
    },
    /// After pinning, the thread reported running elsewhere.
    #[error("a thread pinned to CPU {cpu} runs on CPU {running_on}")]
    NotMoved {
        /// The CPU asked for.
        cpu: usize,
        /// The CPU it runs on.
        running_on: usize,
    },
}

/// The CPUs set in an affinity mask of `unsigned long` words, as the kernel
/// lays it out (CPU `n` is bit `n % word_bits` of word `n / word_bits`). Only
/// the words given are read: iteration never runs past the mask.
pub fn mask_to_cpus(words: &[libc::c_ulong]) -> Vec<usize> {
    let mut cpus = Vec::new();
    for (w, &word) in words.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let bit = bits.trailing_zeros() as usize;
            cpus.push(w * MASK_WORD_BITS + bit);
            bits &= bits - 1;
        }
    }
    cpus
}

/// An affinity mask with exactly `cpus` set, at least `min_bits` wide (the
/// kernel rejects a mask narrower than its own CPU count, so callers pass
/// the width `sched_getaffinity` accepted).
pub fn cpus_to_mask(cpus: &[usize], min_bits: usize) -> Vec<libc::c_ulong> {
    let top = cpus.iter().max().map_or(0, |&c| c + 1);
    let words = top.max(min_bits).div_ceil(MASK_WORD_BITS).max(1);
    let mut mask = vec![0 as libc::c_ulong; words];
    for &cpu in cpus {
        mask[cpu / MASK_WORD_BITS] |= 1 << (cpu % MASK_WORD_BITS);
    }
    mask
}

/// The mask width to start with, in bits: the kernel's `nr_cpu_ids` (the
/// highest possible CPU plus one) rounded up to whole words, from `possible`
/// (see [`linux::read_cpus_possible`]); `None` when that list is unreadable or
/// empty, and the caller starts at `CPU_SETSIZE` instead.
pub fn mask_bits_for(possible: &Evidence<CpuList>) -> Option<usize> {
    let highest = possible.found()?.highest()?;
    Some((highest + 1).div_ceil(MASK_WORD_BITS) * MASK_WORD_BITS)
}

/// [`mask_bits_for`] this machine's `/sys/devices/system/cpu/possible`.
#[cfg(target_os = "linux")]
fn possible_mask_bits() -> Option<usize> {
    mask_bits_for(&linux::read_cpus_possible(std::path::Path::new("/")))
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{cpus_to_mask, mask_to_cpus, possible_mask_bits, AffinityError, MASK_WORD_BITS, MAX_MASK_BITS};
    use std::io;
    use std::mem::size_of;

    /// The calling thread's affinity mask, `start_bits` wide (`None`:
    /// `CPU_SETSIZE`), doubled while the kernel refuses the width.
    pub(crate) fn get_mask(start_bits: Option<usize>) -> Result<Vec<libc::c_ulong>, AffinityError> {
        let mut bits = start_bits.unwrap_or(libc::CPU_SETSIZE as usize).clamp(1, MAX_MASK_BITS);
        loop {
            let mut words = vec![0 as libc::c_ulong; bits.div_ceil(MASK_WORD_BITS)];
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
                bits = (bits * 2).min(MAX_MASK_BITS);
                continue;
            }
            return Err(AffinityError::Get(err));
        }
    }

    /// The CPUs this process may run on (sorted), from `sched_getaffinity`.
    pub fn allowed_cpus() -> Result<Vec<usize>, AffinityError> {
        Ok(mask_to_cpus(&get_mask(possible_mask_bits())?))
    }

    /// The CPU the calling thread runs on now (`sched_getcpu`), when known.
    pub fn current_cpu() -> Option<usize> {
        // SAFETY: sched_getcpu takes no arguments and only returns a number.
        let cpu = unsafe { libc::sched_getcpu() };
        usize::try_from(cpu).ok()
    }

    /// Sets the calling thread's mask to exactly `cpus`; `Pin` names the
    /// first of them when the kernel refuses.
    pub fn set_current_thread_cpus(cpus: &[usize]) -> Result<(), AffinityError> {
        // As wide as the mask the kernel accepted from sched_getaffinity
        // (wider only to hold a CPU the kernel then refuses).
        let width_bits = get_mask(possible_mask_bits())?.len() * MASK_WORD_BITS;
        let mask = cpus_to_mask(cpus, width_bits);
        let bytes = mask.len() * size_of::<libc::c_ulong>();
        // SAFETY: `mask` is a live buffer of exactly `bytes` bytes, aligned
        // for `unsigned long` like `cpu_set_t`; the kernel only reads it.
        // pid 0 is the calling thread.
        let rc = unsafe { libc::sched_setaffinity(0, bytes, mask.as_ptr().cast::<libc::cpu_set_t>()) };
        if rc != 0 {
            return Err(AffinityError::Pin {
                cpu: cpus.first().copied().unwrap_or(0),
                err: io::Error::last_os_error(),
            });
        }
        Ok(())
    }

    /// Pins the calling thread to `cpu` alone and checks that it moved there.
    pub fn pin_current_thread(cpu: usize) -> Result<(), AffinityError> {
        set_current_thread_cpus(&[cpu])?;
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

    /// The CPUs this process may run on (sorted), from `sched_getaffinity`.
    pub fn allowed_cpus() -> Result<Vec<usize>, AffinityError> {
        Err(AffinityError::Unsupported(std::env::consts::OS))
    }

    /// The CPU the calling thread runs on now (`sched_getcpu`), when known.
    pub fn current_cpu() -> Option<usize> {
        None
    }

    /// Pins the calling thread to `cpu` alone and checks that it moved there.
    pub fn pin_current_thread(_cpu: usize) -> Result<(), AffinityError> {
        Err(AffinityError::Unsupported(std::env::consts::OS))
    }

    pub fn set_current_thread_cpus(_cpus: &[usize]) -> Result<(), AffinityError> {
        Err(AffinityError::Unsupported(std::env::consts::OS))
    }
}

pub use imp::{allowed_cpus, current_cpu, pin_current_thread};

/// The calling thread pinned to one CPU for a while: the mask it had is
/// put back when this is dropped ([`pin_current_thread_for_now`]).
#[derive(Debug)]
#[must_use = "the thread is unpinned when the guard is dropped"]
pub struct PinnedForNow {
    before: Vec<usize>,
    /// The CPU pinned to.
    pub cpu: usize,
    /// Not `Send`: `sched_setaffinity(0)` acts on the calling thread, so the
    /// guard must be dropped on the thread it pinned.
    _this_thread: std::marker::PhantomData<*const ()>,
}

impl Drop for PinnedForNow {
    fn drop(&mut self) {
        // The mask was the thread's own a moment ago: the kernel accepts it
        // back unless a CPU went offline meanwhile, and then the thread stays
        // where it is, which is still a CPU it was allowed.
        let _ = imp::set_current_thread_cpus(&self.before);
    }
}

/// Pins the calling thread to `cpu`, one of the CPUs it may run on now,
/// until the returned guard is dropped, which restores the mask it had (for
/// measurements that must run where another process runs, then leave the
/// thread as they found it). A CPU outside the thread's mask is refused
/// ([`AffinityError::NotAllowed`]): the mask may be the user's `taskset`.
pub fn pin_current_thread_for_now(cpu: usize) -> Result<PinnedForNow, AffinityError> {
    let before = imp::allowed_cpus()?;
    if !before.contains(&cpu) {
        return Err(AffinityError::NotAllowed {
            cpu,
            allowed: before.iter().map(ToString::to_string).collect::<Vec<_>>().join(","),
        });
    }
    let guard = PinnedForNow {
        before,
        cpu,
        _this_thread: std::marker::PhantomData,
    };
    imp::pin_current_thread(cpu)?;
    Ok(guard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_round_trip_across_words() {
        let cpus = vec![0, 1, MASK_WORD_BITS - 1, MASK_WORD_BITS, 3 * MASK_WORD_BITS + 5];
        let mask = cpus_to_mask(&cpus, 0);
        assert_eq!(mask.len(), 4);
        assert_eq!(mask_to_cpus(&mask), cpus);
        assert_eq!(cpus_to_mask(&[2], 1024).len(), 1024 / MASK_WORD_BITS);
        assert_eq!(mask_to_cpus(&[0b101]), vec![0, 2]);
        assert_eq!(mask_to_cpus(&[]), Vec::<usize>::new());
    }

    #[test]
    fn mask_width_is_nr_cpu_ids_in_whole_words() {
        let possible = |s: &str| Evidence::Found(CpuList::parse(s).unwrap());
        assert_eq!(mask_bits_for(&possible("0-1")), Some(MASK_WORD_BITS));
        assert_eq!(mask_bits_for(&possible("0")), Some(MASK_WORD_BITS));
        assert_eq!(
            mask_bits_for(&possible("0-63")),
            Some(64usize.div_ceil(MASK_WORD_BITS) * MASK_WORD_BITS)
        );
        assert_eq!(
            mask_bits_for(&possible("0-64")),
            Some(65usize.div_ceil(MASK_WORD_BITS) * MASK_WORD_BITS)
        );
        // A sparse list: the width follows the highest CPU.
        assert_eq!(mask_bits_for(&possible("0,8191")), Some(8192));
        assert_eq!(mask_bits_for(&possible("")), None);
        assert_eq!(mask_bits_for(&Evidence::Missing("not present".into())), None);
        assert_eq!(mask_bits_for(&Evidence::Unreadable("bad".into())), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn allowed_cpus_are_sorted_and_include_the_current_one() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
        if let Some(cpu) = current_cpu() {
            assert!(cpus.contains(&cpu), "running on {cpu}, allowed {cpus:?}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_sized_mask_and_the_growing_loop_agree() {
        let Some(bits) = possible_mask_bits() else {
            // No readable cpu/possible: allowed_cpus already used the loop.
            // Written past libtest's output capture, so the skip shows in every run.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                b"skipped: the_sized_mask_and_the_growing_loop_agree: /sys/devices/system/cpu/possible is unreadable or empty\n",
            );
            return;
        };
        let sized = imp::get_mask(Some(bits)).unwrap();
        assert_eq!(
            sized.len() * MASK_WORD_BITS,
            bits,
            "the kernel accepted nr_cpu_ids bits"
        );
        let grown = imp::get_mask(None).unwrap();
        assert_eq!(mask_to_cpus(&sized), mask_to_cpus(&grown));
        // A start narrower than the kernel's mask grows until it is accepted
        // (1 bit is one word, which is enough on machines of up to 64 CPUs).
        assert_eq!(mask_to_cpus(&imp::get_mask(Some(1)).unwrap()), mask_to_cpus(&grown));
    }

    #[cfg(target_os = "linux")]
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

    #[cfg(target_os = "linux")]
    #[test]
    fn a_pin_for_now_puts_the_mask_back_even_when_it_fails() {
        std::thread::spawn(|| {
            let before = allowed_cpus().unwrap();
            let last = *before.last().unwrap();
            {
                let pinned = pin_current_thread_for_now(last).unwrap();
                assert_eq!(pinned.cpu, last);
                assert_eq!(allowed_cpus().unwrap(), vec![last]);
            }
            assert_eq!(allowed_cpus().unwrap(), before);
            if !before.contains(&8191) {
                let err = pin_current_thread_for_now(8191).unwrap_err();
                assert!(
                    err.to_string()
                        .starts_with("CPU 8191 is not among the CPUs this thread may run on ("),
                    "{err}"
                );
                assert_eq!(allowed_cpus().unwrap(), before);
            }
            // Narrowed (as by taskset) to one CPU: another one is refused, not
            // taken; the narrowed mask stays.
            if before.len() >= 2 {
                pin_current_thread(before[0]).unwrap();
                assert!(matches!(
                    pin_current_thread_for_now(before[1]),
                    Err(AffinityError::NotAllowed { .. })
                ));
                assert_eq!(allowed_cpus().unwrap(), vec![before[0]]);
            }
        })
        .join()
        .unwrap();
    }
}

//! perf_event_open(2), mmap of the event's user page and its seqlocked read
//! (Linux x86-64). All of the perf module's unsafe code is here.

use super::{decode_page, errno_name, PageFields, PerfTimeScale, PerfUnavailable};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{compiler_fence, Ordering};

/// `struct perf_event_attr` up to PERF_ATTR_SIZE_VER5 (112 bytes); every
/// field we do not set is zero, which the kernel accepts.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
}

const PERF_ATTR_SIZE_VER5: u32 = 112;
const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER5 as usize);

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const PERF_COUNT_SW_DUMMY: u64 = 9;
/// attr.flags bits: disabled, exclude_kernel, exclude_hv (so that
/// perf_event_paranoid=2 still allows a user-space-only event on ourselves).
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// Byte offsets in `struct perf_event_mmap_page`.
const OFF_VERSION: usize = 0;
const OFF_LOCK: usize = 8;
const OFF_CAPABILITIES: usize = 40;
const OFF_TIME_SHIFT: usize = 50;
const OFF_TIME_MULT: usize = 52;
const OFF_TIME_OFFSET: usize = 56;
const OFF_TIME_ZERO: usize = 64;

/// Seqlock retries before giving up (the kernel rewrites the page on context
/// switches; a few retries always suffice unless something is wrong).
const MAX_SEQLOCK_RETRIES: u32 = 10_000;

/// The events tried, in order: the dummy software event needs no PMU.
const EVENTS: [(&str, u32, u64); 3] = [
    ("software dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY),
    ("hardware cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES),
    ("software cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK),
];

pub(super) fn read_tsc_scale() -> Result<PerfTimeScale, PerfUnavailable> {
    // (reason, events that gave it), in the order first seen.
    let mut reasons: Vec<(String, Vec<&str>)> = Vec::new();
    for (name, type_, config) in EVENTS {
        match read_event(name, type_, config) {
            Ok(scale) => return Ok(scale),
            Err(e) => match reasons.iter_mut().find(|(r, _)| *r == e.0) {
                Some((_, names)) => names.push(name),
                None => reasons.push((e.0, vec![name])),
            },
        }
    }
    let parts: Vec<String> = reasons
        .into_iter()
        .map(|(r, names)| format!("{}: {r}", names.join(", ")))
        .collect();
    Err(PerfUnavailable(parts.join("; ")))
}

fn paranoid() -> String {
    crate::linux::read_text(
        std::path::Path::new("/proc/sys/kernel/perf_event_paranoid"),
        &crate::input::KERNEL_VALUE,
    )
    .into_found()
    .map(|s| crate::escape::escape_untrusted(s.trim()).into_owned())
    .unwrap_or_else(|| "unknown".to_string())
}

fn read_event(name: &'static str, type_: u32, config: u64) -> Result<PerfTimeScale, PerfUnavailable> {
    let fd = open_event(type_, config).map_err(|errno| {
        let what = errno_name(errno);
        PerfUnavailable(match errno {
            libc::EACCES | libc::EPERM => {
                format!("perf_event_open: {what} (perf_event_paranoid={})", paranoid())
            }
            libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP if type_ == PERF_TYPE_HARDWARE => {
                format!("perf_event_open: {what} (no PMU for hardware events)")
            }
            _ => format!("perf_event_open: {what}"),
        })
    })?;
    let page = map_and_read(&fd)?;
    decode_page(&page, name)
}

/// perf_event_open(attr, pid = 0 (this process), cpu = -1 (any), group = -1, FD_CLOEXEC).
fn open_event(type_: u32, config: u64) -> Result<OwnedFd, i32> {
    let attr = PerfEventAttr {
        type_,
        size: PERF_ATTR_SIZE_VER5,
        config,
        flags: FLAG_DISABLED | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV,
        ..PerfEventAttr::default()
    };
    // SAFETY: `attr` is a valid, fully initialised perf_event_attr of the
    // size it declares, alive for the call; the other arguments are plain
    // integers. The kernel only reads `attr`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    // SAFETY: a non-negative return is a new file descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(rc as libc::c_int) })
}

/// A read-only mapping of the event's user page, unmapped on drop.
struct UserPage {
    ptr: *const u8,
    len: usize,
}

impl Drop for UserPage {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned; nothing
        // references the mapping after drop.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

impl UserPage {
    /// # Safety
    /// `off` plus the size of `T` must lie within the page and be aligned for `T`.
    unsafe fn read<T: Copy>(&self, off: usize) -> T {
        // SAFETY: guaranteed by the caller; the page is mapped readable for
        // the lifetime of `self`. Volatile: the kernel writes it concurrently.
        unsafe { std::ptr::read_volatile(self.ptr.add(off) as *const T) }
    }
}

fn map_and_read(fd: &OwnedFd) -> Result<PageFields, PerfUnavailable> {
    // SAFETY: sysconf has no memory-safety preconditions.
    let len = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let len = if len > 0 { len as usize } else { 4096 };
    // SAFETY: a fresh shared read-only mapping of the perf fd's first page
    // (the user page); the kernel picks the address. Checked for MAP_FAILED.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
        return Err(PerfUnavailable(format!("mmap of the perf page: {}", errno_name(errno))));
    }
    let page = UserPage {
        ptr: ptr as *const u8,
        len,
    };
    for _ in 0..MAX_SEQLOCK_RETRIES {
        // SAFETY: (this and the reads below) the offsets are those of `struct
        // perf_event_mmap_page`, within its first 96 bytes and naturally
        // aligned; the page is at least 4096 bytes and page-aligned.
        let seq: u32 = unsafe { page.read(OFF_LOCK) };
        compiler_fence(Ordering::SeqCst);
        // SAFETY: as for the lock read above.
        let fields = unsafe {
            PageFields {
                version: page.read(OFF_VERSION),
                capabilities: page.read(OFF_CAPABILITIES),
                time_shift: page.read(OFF_TIME_SHIFT),
                time_mult: page.read(OFF_TIME_MULT),
                time_offset: page.read(OFF_TIME_OFFSET),
                time_zero: page.read(OFF_TIME_ZERO),
            }
        };
        compiler_fence(Ordering::SeqCst);
        // SAFETY: as for the lock read above.
        let seq_after: u32 = unsafe { page.read(OFF_LOCK) };
        if seq == seq_after {
            return Ok(fields);
        }
    }
    Err(PerfUnavailable(format!(
        "the perf page kept changing under its seqlock ({MAX_SEQLOCK_RETRIES} tries)"
    )))
}

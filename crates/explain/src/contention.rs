//! Is the machine busy with other work while a local server runs our EXPLAINs?
//!
//! When the server runs on this machine (unix socket or loopback), its
//! backend competes for the CPUs with everything else here, and a busy
//! neighbour shows up as noise in both timing modes. [`CpuSample`] reads the
//! machine's CPU time from `/proc/stat` (the aggregate `cpu` line) and this
//! process's from `/proc/self/stat`, before and after the runs;
//! [`other_busy_fraction`] says what share of all CPUs' time went to work
//! that was neither ours nor the server's statements:
//!
//! ```text
//! busy   = user + nice + system + irq + softirq + steal      (all CPUs, ticks)
//! total  = busy + idle + iowait
//! ours   = this process's utime + stime
//!        + the statements' CPU time summed (ms x USER_HZ / 1000): each
//!          one's "Execution Time" plus its parallel workers'
//! other  = (delta busy - delta ours) / delta total
//! ```
//!
//! The backend's own CPU time is taken from EXPLAIN's "Execution Time" rather
//! than `/proc/<pid>/stat`: a loopback server may be in a container whose
//! process ids are not ours. A parallel plan's workers are the query's own
//! work, not contention: their time is added to "ours"
//! ([`crate::plan::PlanSummary::server_busy_ms`]): each worker's total time
//! on the node below its Gather with TIMING ON, and with TIMING OFF (no
//! times) the bound `Workers Launched` x "Execution Time". The bound can
//! only overstate ours, so the share of other work is never overstated by
//! it; /proc cannot tell the workers apart when the server is not ours. `guest` and `guest_nice` are left out (the
//! kernel already counts them in user and nice). Ticks are USER_HZ, 100 on
//! every Linux architecture this builds for. The warning threshold,
//! [`BUSY_WARN_FRACTION`], is a quarter of the machine: one busy process on
//! a 2-CPU machine (half of it) is above it, a short background task is not.

use std::io::Read;
use std::path::Path;

/// `/proc/stat` and `/proc/<pid>/stat` count in USER_HZ ticks per second.
pub const USER_HZ: f64 = 100.0;
/// Warn when other processes used at least this share of all CPUs' time
/// during the runs.
pub const BUSY_WARN_FRACTION: f64 = 0.25;
/// Most bytes read from /proc/stat (a 1024-CPU /proc/stat is ~100 kB).
const MAX_PROC_BYTES: u64 = 1 << 20;

/// The machine's and this process's CPU time at one moment, in ticks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuSample {
    /// user + nice + system + irq + softirq + steal, all CPUs.
    pub busy: u64,
    /// busy + idle + iowait, all CPUs.
    pub total: u64,
    /// CPUs listed (`cpuN` lines).
    pub cpus: u32,
    /// This process's utime + stime.
    pub ours: u64,
}

fn read_bounded(path: &Path) -> Option<String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_PROC_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// Parses `/proc/stat`'s aggregate `cpu` line and counts the `cpuN` lines:
/// (busy, total, cpus).
pub(crate) fn parse_proc_stat(text: &str) -> Option<(u64, u64, u32)> {
    let mut agg = None;
    let mut cpus = 0;
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        match fields.next() {
            Some("cpu") => {
                let v: Vec<u64> = fields.map(|f| f.parse().ok()).collect::<Option<_>>()?;
                if v.len() < 8 {
                    return None;
                }
                // user nice system idle iowait irq softirq steal [guest guest_nice]
                let busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
                agg = Some((busy, busy + v[3] + v[4]));
            }
            Some(name) if name.starts_with("cpu") && name[3..].bytes().all(|b| b.is_ascii_digit()) => cpus += 1,
            _ => {}
        }
    }
    let (busy, total) = agg?;
    Some((busy, total, cpus))
}

impl CpuSample {
    /// Reads `<root>/proc/stat` and `<root>/proc/self/stat` (root `/` on the
    /// real machine); `None` when either is missing or unreadable.
    pub fn read(root: &Path) -> Option<CpuSample> {
        let (busy, total, cpus) = parse_proc_stat(&read_bounded(&root.join("proc/stat"))?)?;
        let ours = clockscope_system::linux::process::read_own_place(root)
            .found()?
            .cpu_ticks;
        Some(CpuSample {
            busy,
            total,
            cpus,
            ours,
        })
    }
}

/// The share of all CPUs' time between `before` and `after` that went to
/// other work (see the module docs); `server_ms` is the statements' summed
/// CPU time (leader and parallel workers). `None` when no time passed.
pub fn other_busy_fraction(before: &CpuSample, after: &CpuSample, server_ms: f64) -> Option<f64> {
    let total = after.total.checked_sub(before.total)?;
    if total == 0 {
        return None;
    }
    let busy = after.busy.saturating_sub(before.busy) as f64;
    let ours = after.ours.saturating_sub(before.ours) as f64 + server_ms.max(0.0) * USER_HZ / 1000.0;
    Some(((busy - ours) / total as f64).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 5 50 1000 10 3 2 40 7 0\ncpu0 50 2 25 500 5 1 1 20 0 0\n\
                        cpu1 50 3 25 500 5 2 1 20 7 0\nintr 12345\nctxt 999\n";

    #[test]
    fn proc_stat_gives_busy_and_total() {
        // busy = 100 + 5 + 50 + 3 + 2 + 40; total adds idle 1000 and iowait 10.
        assert_eq!(parse_proc_stat(STAT), Some((200, 1210, 2)));
        assert_eq!(parse_proc_stat("cpu 1 2 3\n"), None);
        assert_eq!(parse_proc_stat("intr 1\n"), None);
    }

    #[test]
    fn others_are_what_is_busy_beyond_us_and_the_server() {
        let before = CpuSample {
            busy: 1000,
            total: 10_000,
            cpus: 2,
            ours: 10,
        };
        // 10 s on 2 CPUs = 2000 ticks; 1500 busy, of which we took 20 and the
        // server's statements 5 s = 500 ticks: 980 ticks of others, 49%.
        let after = CpuSample {
            busy: 2500,
            total: 12_000,
            cpus: 2,
            ours: 30,
        };
        let f = other_busy_fraction(&before, &after, 5000.0).unwrap();
        assert!((f - 0.49).abs() < 1e-12, "{f}");
        // A quiet machine: only the server was busy.
        let quiet = CpuSample { busy: 1520, ..after };
        assert_eq!(other_busy_fraction(&before, &quiet, 5000.0), Some(0.0));
        assert_eq!(other_busy_fraction(&before, &before, 0.0), None);
    }
}

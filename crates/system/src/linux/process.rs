//! Where a process last ran, and its CPU time: `proc/<pid>/stat` under the
//! root.
//!
//! A model that must run at the speed another process sees (the CPU a local
//! PostgreSQL backend runs its statements on) pins itself to the CPU that
//! process last ran on: field 39 (`processor`) of `/proc/<pid>/stat`
//! (proc(5)). The command name (field 2) is in parentheses and may hold
//! spaces and parentheses itself, so the fields after it count from the last
//! `)`. Its parent (field 4) and the command name let a caller check that the
//! pid is the process it expects: a server behind loopback may run in a
//! container whose process ids are not this machine's. Its start time
//! (field 22, USER_HZ ticks after boot) against `proc/uptime` gives its age
//! ([`read_process_age`]), which a caller compares with the age the process
//! claims (a PostgreSQL backend's `backend_start`): a pid alone can name
//! another process of this machine.

use super::cpu_time::USER_HZ;
use super::{read_parsed, Evidence};
use std::path::Path;
use std::time::Duration;

/// What `/proc/<pid>/stat` says of one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessPlace {
    /// The command name (field 2, `comm`, at most 15 bytes in the kernel;
    /// untrusted text: escape it before showing it).
    pub comm: String,
    /// The parent's pid (field 4).
    pub ppid: u32,
    /// The CPU it last ran on (field 39).
    pub cpu: usize,
    /// CPU time so far, user + system (fields 14 and 15), in USER_HZ ticks
    /// ([`super::cpu_time::USER_HZ`]).
    pub cpu_ticks: u64,
    /// When it started: USER_HZ ticks after boot (field 22, `starttime`).
    pub start_ticks: u64,
}

/// Reads `proc/<pid>/stat` under `root` ([`ProcessPlace`]).
pub fn read_process_place(root: &Path, pid: u32) -> Evidence<ProcessPlace> {
    read_parsed(root, &format!("proc/{pid}/stat"), parse_process_place)
}

/// Reads `proc/self/stat` under `root`: this process.
pub fn read_own_place(root: &Path) -> Evidence<ProcessPlace> {
    read_parsed(root, "proc/self/stat", parse_process_place)
}

/// Parses one `/proc/<pid>/stat` line (see the module docs).
pub(crate) fn parse_process_place(text: &str) -> Result<ProcessPlace, String> {
    let open = text.find('(').ok_or("no '(' before the command name")?;
    let close = text.rfind(')').ok_or("no ')' after the command name")?;
    if close < open {
        return Err("')' before '('".into());
    }
    let comm = text[open + 1..close].to_string();
    // Field 3 (state) is the first after the name: field n is rest[n - 3].
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    let field = |n: usize, name: &str| -> Result<&str, String> {
        rest.get(n - 3)
            .copied()
            .ok_or_else(|| format!("no field {n} ({name}): {} fields after the name", rest.len()))
    };
    let ppid = field(4, "ppid")?
        .parse::<u32>()
        .map_err(|_| "field 4 (ppid) is not a number".to_string())?;
    let number = |n: usize, name: &str| -> Result<u64, String> {
        field(n, name)?
            .parse::<u64>()
            .map_err(|_| format!("field {n} ({name}) is not a number"))
    };
    let cpu = number(39, "processor")? as usize;
    let cpu_ticks = number(14, "utime")?.saturating_add(number(15, "stime")?);
    let start_ticks = number(22, "starttime")?;
    Ok(ProcessPlace {
        comm,
        ppid,
        cpu,
        cpu_ticks,
        start_ticks,
    })
}

/// Reads `proc/<pid>/stat` and `proc/uptime` under `root`: the process and
/// how long ago it started (uptime, CLOCK_BOOTTIME, less its `starttime`;
/// each to 10 ms). `None` for the age when the start lies after the uptime
/// read (a garbled file).
pub fn read_process_age(root: &Path, pid: u32) -> Evidence<(ProcessPlace, Option<Duration>)> {
    let place = match read_process_place(root, pid) {
        Evidence::Found(place) => place,
        other => return other.map(|place| (place, None)),
    };
    read_parsed(root, "proc/uptime", parse_uptime).map(|up| {
        let started = Duration::from_millis(place.start_ticks.saturating_mul(1000) / USER_HZ);
        let age = up.checked_sub(started);
        (place, age)
    })
}

/// `proc/uptime`'s first field: seconds since boot, with a fraction.
fn parse_uptime(text: &str) -> Result<Duration, String> {
    let first = text.split_ascii_whitespace().next().ok_or("empty")?;
    let secs: f64 = first
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s >= 0.0 && *s < 1e12)
        .ok_or_else(|| "the uptime is not a number of seconds".to_string())?;
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::testing::FakeRoot;

    /// A real line (a PostgreSQL 15 backend, Linux 6.18), fields 1-52.
    const BACKEND: &str = "412 (postgres) S 398 412 412 0 -1 4194624 301 0 0 0 3 1 0 0 20 0 1 0 4410 226000896 \
                           2049 18446744073709551615 1 1 0 0 0 0 4194304 19935232 84487 0 0 0 17 1 0 0 0 0 0 0 0 0 0 \
                           0 0 0 0\n";

    #[test]
    fn reads_the_name_the_parent_and_the_last_cpu() {
        let p = parse_process_place(BACKEND).unwrap();
        assert_eq!(
            p,
            ProcessPlace {
                comm: "postgres".into(),
                ppid: 398,
                cpu: 1,
                cpu_ticks: 4,
                start_ticks: 4410,
            }
        );
    }

    #[test]
    fn a_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let line = BACKEND.replace("(postgres)", "(a) b (c))");
        let p = parse_process_place(&line).unwrap();
        assert_eq!((p.comm.as_str(), p.ppid, p.cpu, p.cpu_ticks), ("a) b (c)", 398, 1, 4));
    }

    #[test]
    fn short_or_garbled_lines_are_errors_that_name_the_field() {
        let short = "412 (postgres) S 398 412";
        assert!(parse_process_place(short).unwrap_err().contains("field 39"));
        assert!(parse_process_place("412 postgres S").is_err());
        let bad = BACKEND.replace(" 17 1 0 0 0", " 17 x 0 0 0");
        assert!(parse_process_place(&bad).unwrap_err().contains("processor"));
    }

    #[test]
    fn read_under_a_root_or_missing() {
        let root = FakeRoot::new();
        root.write("proc/412/stat", BACKEND);
        assert_eq!(read_process_place(root.path(), 412).found().map(|p| p.cpu), Some(1));
        root.write("proc/self/stat", BACKEND);
        assert_eq!(read_own_place(root.path()).found().map(|p| p.cpu_ticks), Some(4));
        assert!(matches!(read_process_place(root.path(), 413), Evidence::Missing(_)));
    }

    #[test]
    fn the_age_is_the_uptime_less_the_start() {
        let root = FakeRoot::new();
        root.write("proc/412/stat", BACKEND);
        root.write("proc/uptime", "50.25 90.00\n");
        let (place, age) = read_process_age(root.path(), 412).found().cloned().unwrap();
        assert_eq!(place.start_ticks, 4410);
        assert_eq!(age, Some(Duration::from_millis(6150)));
        root.write("proc/uptime", "40.00 90.00\n");
        assert_eq!(read_process_age(root.path(), 412).found().map(|f| f.1), Some(None));
        root.write("proc/uptime", "soon\n");
        assert!(read_process_age(root.path(), 412).found().is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn another_process_is_found_on_a_possible_cpu() {
        // Our parent (cargo, or whatever ran the tests): another process, as
        // a server's backend is. Not our own pid: qemu-user answers its own
        // /proc/<pid>/stat from a file of its making, which the bounded
        // reader refuses as "changed while being opened".
        let root = Path::new("/");
        let evidence = read_process_place(root, std::os::unix::process::parent_id());
        let me = evidence.found().cloned().unwrap_or_else(|| panic!("{evidence:?}"));
        assert!(!me.comm.is_empty());
        if let Some(possible) = crate::linux::read_cpus_possible(root).found() {
            assert!(possible.contains(me.cpu), "{me:?} not in {possible:?}");
        }
    }
}

//! Live reads of this machine's kernel evidence and perf page (`#[ignore]`:
//! they depend on the host; run with `--ignored --nocapture` to see them).
//! They check only that reading never fails in a way the types cannot carry.

use clockscope_system::linux::{perf, LinuxEvidence};
use std::path::Path;

#[test]
#[ignore = "reads this machine's /proc, /sys and /dev/kmsg"]
fn print_this_machine() {
    let ev = LinuxEvidence::read(Path::new("/"));
    println!("{}", serde_json::to_string_pretty(&ev).unwrap());
    println!("kernel TSC kHz: {:?}", ev.kernel_tsc_khz());
    match perf::read_tsc_scale() {
        Ok(s) => println!("perf: {s} time_zero={:?} event={}", s.time_zero, s.event),
        Err(e) => println!("perf: unavailable: {e}"),
    }
    // /proc/cpuinfo exists on every Linux system.
    assert!(ev.cpuinfo.is_found(), "{:?}", ev.cpuinfo.reason());
}

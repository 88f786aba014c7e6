//! libfaketime for the tests of clocks sped up or stepped back on their way
//! to clockscope (faketime_cli.rs, explain_cli.rs).

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// libfaketime as the `faketime` wrapper preloads it (`$LIB` is expanded by
/// ld.so: `lib/x86_64-linux-gnu` on Debian).
pub const LIBFAKETIME: &str = "/usr/$LIB/faketime/libfaketime.so.1";

/// Whether `faketime -f '+0 x10'` runs here and speeds a clock up.
pub fn faketime_works() -> Result<(), String> {
    let out = Command::new("faketime")
        .args(["-f", "+100d", "date", "+%s"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("faketime: {e} (Debian package faketime)"))?;
    let faked: i64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("faketime did not run date: {}", String::from_utf8_lossy(&out.stderr)))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // 100 days ahead: a test of the library, not of this machine's speed.
    if faked - now < 86_400 {
        return Err("faketime ran but did not change the time".to_string());
    }
    Ok(())
}

/// Whether libfaketime reads `FAKETIME_TIMESTAMP_FILE` here: `Err` with why not.
pub fn timestamp_file_works(file: &std::path::Path) -> Result<(), String> {
    faketime_works()?;
    std::fs::write(file, "-100d\n").unwrap();
    let probe = Command::new("date")
        .arg("+%s")
        .env("LD_PRELOAD", LIBFAKETIME)
        .env("FAKETIME_TIMESTAMP_FILE", file)
        .env("FAKETIME_NO_CACHE", "1")
        .output()
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let faked: i64 = String::from_utf8_lossy(&probe.stdout).trim().parse().unwrap_or(now);
    std::fs::write(file, "+0\n").unwrap();
    if now - faked < 86_400 {
        return Err(format!("{LIBFAKETIME} does not read FAKETIME_TIMESTAMP_FILE here"));
    }
    Ok(())
}

/// Writes `-100`, `-200`, ... seconds to `file` (replacing it whole, so
/// libfaketime never reads half a file) every 50 ms until `stop`: a clock
/// that only ever steps back, as when a faketime file goes from +0 to -100.
pub fn step_back_until(file: std::path::PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let tmp = file.with_extension("tmp");
        let mut offset = 0u64;
        while !stop.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(50));
            offset += 100;
            std::fs::write(&tmp, format!("-{offset}\n")).unwrap();
            std::fs::rename(&tmp, &file).unwrap();
        }
    })
}

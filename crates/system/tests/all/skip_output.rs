//! `skip!`'s line goes to the test process's own standard error: with stderr
//! redirected to a file (`./scripts/test.sh >log 2>&1`), the line lands after
//! what the file already holds instead of overwriting its start. The test runs
//! its own binary again as the child that skips, with stderr on a temp file.
use crate::common;

use std::io::{Read, Seek, Write};
use std::process::{Command, Stdio};

/// Set in the child's environment: the child reports a skip and returns.
const CHILD: &str = "CLOCKSCOPE_SKIP_OUTPUT_CHILD";
/// The test's full name in the one test binary (tests/all/main.rs), for `--exact`.
const TEST_NAME: &str = "skip_output::skip_line_lands_after_what_redirected_stderr_holds";

#[test]
fn skip_line_lands_after_what_redirected_stderr_holds() {
    if std::env::var_os(CHILD).is_some() {
        common::skip::report(false, format_args!("the child's reason"));
        return;
    }
    let mut log = tempfile::tempfile().expect("temp file");
    let before = "a line written before the tests ran, as a redirected log holds\n";
    log.write_all(before.as_bytes()).expect("write the log's first line");
    let exe = std::env::current_exe().expect("own test binary");
    // Under an emulator (cargo's runner, e.g. qemu-user for aarch64) the
    // binary is another architecture's: run the child through the same
    // runner, which the test scripts export as CARGO_TARGET_<TRIPLE>_RUNNER
    // (scripts/test-aarch64.sh). None on a native run.
    let prefix = format!("CARGO_TARGET_{}_", std::env::consts::ARCH.to_uppercase());
    let mut words: Vec<String> = std::env::vars()
        .find(|(k, _)| k.starts_with(&prefix) && k.ends_with("_RUNNER"))
        .map(|(_, r)| r.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    words.push(exe.to_string_lossy().into_owned());
    let status = Command::new(&words[0])
        .args(&words[1..])
        .args([TEST_NAME, "--exact", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove(common::skip::REQUIRE_DEPS)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log.try_clone().expect("clone the log's handle"))
        .status();
    let status = match status {
        // Another architecture's binary with no runner in the environment
        // (a runner from .cargo/config.toml only): the kernel cannot exec it.
        Err(e) if e.raw_os_error() == Some(libc_enoexec()) => {
            common::skip::report(
                false,
                format_args!("cannot re-run this test binary without a runner: {e}"),
            );
            return;
        }
        other => other.expect("run the child"),
    };
    if status.code() == Some(127) && words.len() == 1 {
        // The same under qemu-user, whose emulated exec reports 127.
        common::skip::report(
            false,
            format_args!("cannot re-run this test binary without a runner (exit 127)"),
        );
        return;
    }
    assert!(status.success(), "child: {status} (run as {words:?})");
    let mut text = String::new();
    log.rewind().expect("rewind");
    log.read_to_string(&mut text).expect("read the log");
    assert!(text.starts_with(before), "the log's start was overwritten: {text:?}");
    assert!(
        text[before.len()..].contains("the child's reason"),
        "no skip line after the first line: {text:?}"
    );
}

/// ENOEXEC (8 on every Linux architecture): "Exec format error".
fn libc_enoexec() -> i32 {
    8
}

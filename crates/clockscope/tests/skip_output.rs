//! `skip!`'s line goes to the test process's own standard error: with stderr
//! redirected to a file (`./scripts/test.sh >log 2>&1`), the line lands after
//! what the file already holds instead of overwriting its start. The test runs
//! its own binary again as the child that skips, with stderr on a temp file.
mod common;

use std::io::{Read, Seek, Write};
use std::process::{Command, Stdio};

/// Set in the child's environment: the child reports a skip and returns.
const CHILD: &str = "CLOCKSCOPE_SKIP_OUTPUT_CHILD";
const TEST_NAME: &str = "skip_line_lands_after_what_redirected_stderr_holds";

#[test]
fn skip_line_lands_after_what_redirected_stderr_holds() {
    if std::env::var_os(CHILD).is_some() {
        common::skip::report(false, format_args!("the child's reason"));
        return;
    }
    let mut log = tempfile::tempfile().expect("temp file");
    let before = "a line written before the tests ran, as a redirected log holds\n";
    log.write_all(before.as_bytes()).expect("write the log's first line");
    let status = Command::new(std::env::current_exe().expect("own test binary"))
        .args([TEST_NAME, "--exact", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove(common::skip::REQUIRE_DEPS)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log.try_clone().expect("clone the log's handle"))
        .status()
        .expect("run the child");
    assert!(status.success(), "child: {status}");
    let mut text = String::new();
    log.rewind().expect("rewind");
    log.read_to_string(&mut text).expect("read the log");
    assert!(text.starts_with(before), "the log's start was overwritten: {text:?}");
    assert!(
        text[before.len()..].contains("the child's reason"),
        "no skip line after the first line: {text:?}"
    );
}

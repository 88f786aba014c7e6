//! `scripts/pg19-server.sh`: its refusals always (no PostgreSQL needed: a
//! PREFIX, SRC_DIR or DIR inside the repository is refused in one line and
//! nothing is created), and with `CLOCKSCOPE_PG19=/path/to/install` (opt-in,
//! `common/pg19.rs`) a real PostgreSQL 19 cluster started on a unix socket in
//! a temp dir, asked what it is, and stopped.

use crate::common::pg19;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn script(args: &[&str]) -> Output {
    Command::new(repo().join("scripts/pg19-server.sh"))
        .args(args)
        .output()
        .expect("run scripts/pg19-server.sh")
}

fn assert_refused(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{needle}: {err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn refuses_directories_inside_the_repository() {
    let outside = tempfile::tempdir().unwrap();
    let inside = repo().join("target/pg19-server-script-test-prefix");
    let _ = std::fs::remove_dir_all(&inside);
    let inside_s = inside.to_str().unwrap();
    let outside_s = outside.path().to_str().unwrap();
    // PREFIX inside, also spelled relative to the repository through "..".
    assert_refused(&script(&["build", outside_s, inside_s]), "PREFIX");
    let dotted = format!("{}/crates/../target/pg19-x", repo().display());
    assert_refused(&script(&["build", outside_s, &dotted]), "is inside the repository");
    // The source tree may not be inside it either.
    assert_refused(&script(&["build", inside_s, outside_s]), "SRC_DIR");
    // Nor a cluster's directory (checked before PREFIX's binaries).
    assert!(!inside.exists(), "nothing created");
    let fake_prefix = tempfile::tempdir().unwrap();
    std::fs::create_dir(fake_prefix.path().join("bin")).unwrap();
    let pg_ctl = fake_prefix.path().join("bin/pg_ctl");
    std::fs::write(&pg_ctl, "#!/bin/sh\nexit 99\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pg_ctl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let prefix_s = fake_prefix.path().to_str().unwrap();
    assert_refused(&script(&["start", prefix_s, inside_s]), "DIR");
    assert_refused(&script(&["stop", prefix_s, inside_s]), "DIR");
    assert!(!inside.exists(), "nothing created");
}

#[test]
fn bad_arguments_are_one_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    assert_refused(&script(&[]), "usage:");
    assert_refused(&script(&["frob"]), "unknown command 'frob'");
    assert_refused(&script(&["build", d]), "usage:");
    assert_refused(&script(&["build", d, "/tmp/x", "--frob"]), "unknown option '--frob'");
    // Not a PostgreSQL tree, not PostgreSQL 19.
    let prefix = dir.path().join("prefix");
    let p = prefix.to_str().unwrap();
    assert_refused(&script(&["build", d, p]), "has no configure script");
    std::fs::write(dir.path().join("configure"), "PACKAGE_VERSION='18.1'\n").unwrap();
    assert_refused(&script(&["build", d, p]), "is not PostgreSQL 19");
    assert!(!prefix.exists(), "nothing created for a refused build");
    // A PREFIX without a build, a bad port.
    assert_refused(&script(&["start", d, "/tmp/c"]), "has no bin/pg_ctl");
    std::fs::create_dir(dir.path().join("bin")).unwrap();
    std::fs::write(dir.path().join("bin/pg_ctl"), "").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path().join("bin/pg_ctl"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let cluster = dir.path().join("c");
    let c = cluster.to_str().unwrap();
    assert_refused(&script(&["start", d, c, "54x"]), "PORT must be a number");
    assert_refused(&script(&["start", d, c, "70000"]), "PORT must be in 1..65535");
    assert_refused(
        &script(&["start", d, "/tmp/has space"]),
        "contains a quote, backslash or space",
    );
    assert!(!cluster.exists(), "nothing created for a refused start");
}

fn psql(install: &Path, dir: &Path, port: &str, sql: &str) -> String {
    let o = Command::new(install.join("bin/psql"))
        .args(["-X", "-q", "-A", "-t", "-h"])
        .arg(dir)
        .args(["-p", port, "-U", "postgres", "-d", "postgres", "-c", sql])
        .env_remove("PGSERVICE")
        .env_remove("PGPASSWORD")
        .output()
        .expect("run psql");
    assert!(o.status.success(), "{sql}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn starts_and_stops_a_real_postgresql_19() {
    let Some(install) = pg19::install("starts_and_stops_a_real_postgresql_19") else {
        return;
    };
    let tmp = tempfile::Builder::new().prefix("clockscope-pg19-").tempdir().unwrap();
    let dir = tmp.path().join("cluster");
    let (inst, d) = (install.to_str().unwrap(), dir.to_str().unwrap());
    let port = "54329";
    let o = script(&["start", inst, d, port]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stopped_at_end = Stop { inst, dir: d };
    assert!(dir.join(format!(".s.PGSQL.{port}")).exists(), "socket in DIR");
    let version: u32 = psql(&install, &dir, port, "SHOW server_version_num").parse().unwrap();
    assert!(version >= 190000, "server_version_num {version}");
    let source = psql(&install, &dir, port, "SHOW timing_clock_source");
    assert!(source.starts_with("auto"), "timing_clock_source {source}");
    assert_eq!(
        psql(
            &install,
            &dir,
            port,
            "SET timing_clock_source = 'system'; SHOW timing_clock_source"
        ),
        "system"
    );
    assert_eq!(psql(&install, &dir, port, "SHOW listen_addresses"), "");
    // A second start finds it running; stop removes the pid file.
    assert!(script(&["start", inst, d]).status.success());
    drop(stopped_at_end);
    assert!(!dir.join("data/postmaster.pid").exists(), "stopped");
    let o = script(&["stop", inst, d]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not running"));
}

/// Stops the cluster when the test ends, passed or failed.
struct Stop<'a> {
    inst: &'a str,
    dir: &'a str,
}

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        let _ = script(&["stop", self.inst, self.dir]);
    }
}

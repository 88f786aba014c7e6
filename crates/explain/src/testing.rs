//! A throw-away PostgreSQL server for tests (feature `testing`).
//!
//! [`TestServer::start`] finds the newest `/usr/lib/postgresql/*/bin` (or
//! `$CLOCKSCOPE_PG_BIN`), runs `initdb` into a temp dir, and starts the
//! server on a unix socket in that dir and on 127.0.0.1 at a free port.
//! Authentication is `trust` for everyone except [`PASSWORD_ROLE`], which
//! must give [`PASSWORD`] (scram-sha-256). The server is stopped with
//! `pg_ctl stop -m immediate` on drop, so a failing test leaves nothing
//! running; [`shared`] keeps one server per test binary and stops it at
//! process exit.
//!
//! initdb refuses to run as root, and CI runs tests as root: then initdb and
//! pg_ctl run as the `postgres` user through `runuser -u postgres --`, with
//! the temp dir chowned to it (the root test process can still use it).
//!
//! Without PostgreSQL binaries the start fails with a message saying to
//! install them: tests fail, they do not skip.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A role that logs in with a password only.
pub const PASSWORD_ROLE: &str = "clockscope_pw";
/// Its password.
pub const PASSWORD: &str = "right-password";
/// The superuser initdb creates.
pub const SUPERUSER: &str = "postgres";
/// Where Debian puts PostgreSQL's server binaries, one dir per major version.
pub const PG_LIB_DIR: &str = "/usr/lib/postgresql";

/// A running server in a temp dir.
pub struct TestServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    as_postgres: bool,
    running: bool,
}

/// The newest `/usr/lib/postgresql/<major>/bin` with initdb, or
/// `$CLOCKSCOPE_PG_BIN`.
pub fn find_pg_bin() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("CLOCKSCOPE_PG_BIN") {
        let dir = PathBuf::from(dir);
        return if dir.join("initdb").is_file() {
            Ok(dir)
        } else {
            Err(format!("CLOCKSCOPE_PG_BIN={}: no initdb there", dir.display()))
        };
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(PG_LIB_DIR)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| {
                    let major: u32 = e.file_name().to_str()?.parse().ok()?;
                    let bin = e.path().join("bin");
                    bin.join("initdb").is_file().then_some((major, bin))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.pop().map(|(_, bin)| bin).ok_or_else(|| {
        format!(
            "no PostgreSQL server binaries: {PG_LIB_DIR}/*/bin/initdb is missing. \
             Install them (apt-get install -y postgresql) or set CLOCKSCOPE_PG_BIN"
        )
    })
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// uid and gid of a user, from `id` (no FFI needed).
fn user_ids(name: &str) -> Option<(u32, u32)> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, name]).output().ok()?;
        out.status.success().then_some(())?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// Servers start one at a time (initdb is CPU-heavy and port picking racy).
static SERVER_START: Mutex<()> = Mutex::new(());

impl TestServer {
    /// initdb, configure, start; roles set up. Fails with a clear message.
    pub fn start() -> Result<TestServer, String> {
        let _serial = SERVER_START.lock().unwrap_or_else(|p| p.into_inner());
        let bin = find_pg_bin()?;
        let dir = tempfile::Builder::new()
            .prefix("clockscope-pg-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let as_postgres = is_root();
        if as_postgres {
            let (uid, gid) = user_ids(SUPERUSER).ok_or(
                "running as root, and initdb refuses root, but there is no 'postgres' user to run it as \
                 (it comes with the postgresql package)",
            )?;
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .map_err(|e| format!("chown {} to postgres: {e}", dir.path().display()))?;
        }
        let port = free_port()?;
        let mut server = TestServer {
            bin,
            dir,
            port,
            as_postgres,
            running: false,
        };
        let data = server.data_dir();
        server.pg_tool(
            "initdb",
            &[
                "-D",
                path_str(&data)?,
                "-U",
                SUPERUSER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        )?;
        let sock = server.socket_dir().to_path_buf();
        let conf = format!(
            "\n# clockscope tests\nlisten_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{}'\n\
             fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 30\n\
             shared_buffers = 32MB\nlogging_collector = off\n",
            sock.display()
        );
        append(&data.join("postgresql.conf"), &conf)?;
        let hba = format!(
            "local all {PASSWORD_ROLE} scram-sha-256\nhost all {PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n\
             local all all trust\nhost all all 127.0.0.1/32 trust\n"
        );
        std::fs::write(data.join("pg_hba.conf"), hba).map_err(|e| format!("pg_hba.conf: {e}"))?;
        let log = server.dir.path().join("server.log");
        server.pg_tool(
            "pg_ctl",
            &["-D", path_str(&data)?, "-l", path_str(&log)?, "-w", "-t", "60", "start"],
        )?;
        server.running = true;
        server.sql(&format!("CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD '{PASSWORD}'"))?;
        Ok(server)
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The unix-socket directory.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The port (TCP on 127.0.0.1, and the socket's name).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// How to reach this server.
    pub fn handle(&self) -> ServerHandle {
        ServerHandle {
            socket_dir: self.socket_dir().to_path_buf(),
            port: self.port,
        }
    }

    /// Runs SQL as the superuser over the socket (one-line error on failure).
    pub fn sql(&self, sql: &str) -> Result<(), String> {
        self.handle().sql(sql)
    }

    /// Stops the server now (`pg_ctl stop -m immediate`).
    pub fn stop(&mut self) -> Result<(), String> {
        if !self.running {
            return Ok(());
        }
        self.running = false;
        let data = self.data_dir();
        self.pg_tool(
            "pg_ctl",
            &["-D", path_str(&data)?, "-m", "immediate", "-w", "-t", "30", "stop"],
        )
        .map(|_| ())
    }

    /// Runs a server program from `bin`, as postgres when we are root.
    fn pg_tool(&self, program: &str, args: &[&str]) -> Result<Output, String> {
        let exe = self.bin.join(program);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", SUPERUSER, "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args).current_dir(self.dir.path());
        // pg_ctl's children keep stdout open; give it files, not pipes we wait on.
        let out = cmd
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} {} failed ({}): {} {}\n{}",
                exe.display(),
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout).trim(),
                String::from_utf8_lossy(&out.stderr).trim(),
                self.log()
            ));
        }
        Ok(out)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn path_str(p: &Path) -> Result<&str, String> {
    p.to_str().ok_or_else(|| format!("{} is not UTF-8", p.display()))
}

fn append(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all(text.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

static SHARED: OnceLock<Mutex<Option<TestServer>>> = OnceLock::new();

extern "C" fn stop_shared_at_exit() {
    if let Some(m) = SHARED.get() {
        let mut guard = m.lock().unwrap_or_else(|p| p.into_inner());
        // Dropping stops it and removes the temp dir.
        guard.take();
    }
}

/// The test binary's one shared server, started on first use and stopped
/// when the process exits (statics are not dropped, so an atexit hook does
/// it; libtest exits through `exit` even when tests fail). Panics with the
/// start error, so a missing PostgreSQL fails the test that asked.
pub fn shared() -> ServerHandle {
    let m = SHARED.get_or_init(|| {
        let server = TestServer::start().unwrap_or_else(|e| panic!("cannot start a test PostgreSQL server: {e}"));
        // SAFETY: registering a plain extern "C" fn with no arguments.
        unsafe { libc::atexit(stop_shared_at_exit) };
        Mutex::new(Some(server))
    });
    let guard = m.lock().unwrap_or_else(|p| p.into_inner());
    guard.as_ref().expect("the shared test server was stopped").handle()
}

/// How to reach a test server.
#[derive(Clone, Debug)]
pub struct ServerHandle {
    pub socket_dir: PathBuf,
    pub port: u16,
}

impl ServerHandle {
    /// A conninfo string for the unix socket.
    pub fn socket_dsn(&self, user: &str, dbname: &str) -> String {
        format!(
            "host={} port={} user={user} dbname={dbname}",
            self.socket_dir.display(),
            self.port
        )
    }

    /// A conninfo string for TCP on 127.0.0.1.
    pub fn tcp_dsn(&self, user: &str, dbname: &str) -> String {
        format!("host=127.0.0.1 port={} user={user} dbname={dbname}", self.port)
    }

    /// Runs SQL as the superuser over the socket (one-line error on failure).
    pub fn sql(&self, sql: &str) -> Result<(), String> {
        let mut c = self.superuser_client()?;
        c.batch_execute(sql)
            .map_err(|e| format!("{sql}: {}", crate::error::describe(&e).0))
    }

    /// A superuser connection over the socket.
    pub fn superuser_client(&self) -> Result<postgres::Client, String> {
        postgres::Client::connect(&self.socket_dsn(SUPERUSER, "postgres"), postgres::NoTls)
            .map_err(|e| format!("connect: {}", crate::error::describe(&e).0))
    }
}

/// Waits until `cond` holds, polling every 20 ms, for at most `timeout`.
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

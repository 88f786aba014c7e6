//! The server's backend known beyond its pid (`backend_process::confirm`),
//! against real processes of two real clusters: the session's own backend is
//! confirmed; a process of this machine that a server in another pid
//! namespace could name by the same number is not: the same cluster's
//! checkpointer (a `postgres` whose parent is the postmaster, working in the
//! server's data directory: only its age tells), another cluster's
//! checkpointer, and another cluster's backend started in the same moment
//! (only its data directory tells).

use clockscope_explain::backend_process::confirm;
use clockscope_explain::connect::resolve;
use clockscope_explain::session::PgSession;
use clockscope_explain::testing::{self, ServerHandle, TestServer, SUPERUSER};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn session(server: &ServerHandle) -> PgSession {
    let home = std::env::temp_dir().display().to_string();
    let t = resolve(Some(&server.socket_dsn(SUPERUSER, "postgres")), &move |k| {
        (k == "HOME").then(|| home.clone())
    })
    .unwrap();
    PgSession::connect(&t, Arc::new(|| false)).unwrap()
}

fn checkpointer(server: &ServerHandle) -> u32 {
    let mut c = server.superuser_client().unwrap();
    let pid: i32 = c
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'",
            &[],
        )
        .unwrap()
        .get(0);
    pid as u32
}

fn confirmed(pid: u32, s: &mut PgSession) -> Result<(), String> {
    confirm(Path::new("/"), pid, &mut || s.backend_view()).unwrap()
}

#[test]
fn only_the_sessions_own_backend_is_taken_for_it() {
    let other_server = TestServer::start().unwrap();
    let other = other_server.handle();
    let here = testing::shared();
    // Both clusters' checkpointers well older than the session.
    std::thread::sleep(Duration::from_millis(1500));
    let mut s = session(&here);
    let own = s.backend_pid().unwrap();
    assert_eq!(confirmed(own, &mut s), Ok(()));

    let same_cluster = confirmed(checkpointer(&here), &mut s).unwrap_err();
    assert!(
        same_cluster.contains("another process with the same id"),
        "{same_cluster}"
    );
    let other_cluster = confirmed(checkpointer(&other), &mut s).unwrap_err();
    assert!(
        other_cluster.contains("another process with the same id"),
        "{other_cluster}"
    );

    // Another cluster's backend started with ours: the ages agree (tried a
    // few times on a loaded machine), the data directory does not.
    let mut last = String::new();
    for _ in 0..5 {
        let mut s = session(&here);
        let mut c = other.superuser_client().unwrap();
        let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
        last = confirmed(pid as u32, &mut s).unwrap_err();
        if last.contains("data directory") {
            return;
        }
    }
    panic!("another cluster's backend was not told apart by its data directory: {last}");
}

//! The password file and the service file, as real files (HOME pointed at a
//! temp dir), against a real PostgreSQL with a scram-sha-256 role
//! (`clockscope_explain::testing`).

use clockscope_explain::connect::{resolve, Target};
use clockscope_explain::session::PgSession;
use clockscope_explain::testing::{self, PASSWORD, PASSWORD_ROLE};
use clockscope_explain::Error;
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

fn target(dsn: Option<&str>, home: &Path, extra: &[(&str, String)]) -> Result<Target, Error> {
    let mut env: HashMap<String, String> = extra.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    env.insert("HOME".into(), home.display().to_string());
    resolve(dsn, &move |k| env.get(k).cloned())
}

fn user_of(t: &Target) -> Result<String, Error> {
    let mut s = PgSession::connect(t, Arc::new(|| false))?;
    s.session_user()
}

fn write(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn the_password_comes_from_pgpass_in_home() {
    let server = testing::shared();
    let home = tempfile::tempdir().unwrap();
    let dsn = server.tcp_dsn(PASSWORD_ROLE, "postgres");
    // No file: the server asks and the client has nothing to give.
    let t = target(Some(&dsn), home.path(), &[]).unwrap();
    assert!(t.password_source.is_none());
    let e = user_of(&t).unwrap_err().to_string();
    assert!(e.contains("password missing"), "{e}");

    write(
        &home.path().join(".pgpass"),
        &format!(
            "# other servers first\ndb.example.com:*:*:*:nope\n127.0.0.1:{}:*:{PASSWORD_ROLE}:{PASSWORD}\n",
            server.port
        ),
        0o600,
    );
    let t = target(Some(&dsn), home.path(), &[]).unwrap();
    assert!(
        t.password_source.as_deref().unwrap().ends_with(".pgpass line 3"),
        "{:?}",
        t.password_source
    );
    assert_eq!(user_of(&t).unwrap(), PASSWORD_ROLE);

    // Readable by others: ignored (libpq's warning goes to stderr).
    std::fs::set_permissions(home.path().join(".pgpass"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let t = target(Some(&dsn), home.path(), &[]).unwrap();
    assert!(t.password_source.is_none());
}

#[test]
fn pgpassfile_with_wildcards_and_escapes() {
    let server = testing::shared();
    let role = "clockscope_pw_escaped";
    let password = r"a:b\c";
    server
        .sql(&format!(
            "DO $$ BEGIN CREATE ROLE {role} LOGIN PASSWORD 'a:b\\c'; EXCEPTION WHEN duplicate_object THEN NULL; END $$"
        ))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("passwords");
    write(
        &file,
        &format!("*:*:*:{role}:{}\n", password.replace('\\', r"\\").replace(':', r"\:")),
        0o600,
    );
    // The hba rules only ask the password role for a password: give this one
    // the same rule by connecting as it over TCP with `passfile=`.
    let dsn = format!(
        "host=127.0.0.1 port={} user={role} dbname=postgres passfile={}",
        server.port,
        file.display()
    );
    let t = target(Some(&dsn), dir.path(), &[]).unwrap();
    assert_eq!(t.config.get_password(), Some(password.as_bytes()));
    assert!(t.password_source.as_deref().unwrap().ends_with("passwords line 1"));
    // A line that does not parse, reached before a match: one line naming it.
    write(&file, "127.0.0.1:5432\n", 0o600);
    let e = target(
        None,
        dir.path(),
        &[
            ("PGPASSFILE", file.display().to_string()),
            ("PGHOST", "127.0.0.1".into()),
            ("PGUSER", role.into()),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("PGPASSFILE: ") && e.ends_with("passwords line 1: not hostname:port:database:username:password"),
        "{e}"
    );
}

#[test]
fn a_service_gives_host_user_and_password_below_the_dsn_and_environment() {
    let server = testing::shared();
    let home = tempfile::tempdir().unwrap();
    write(
        &home.path().join(".pg_service.conf"),
        &format!(
            "[bench]\nhost=127.0.0.1\nport={}\nuser={PASSWORD_ROLE}\npassword={PASSWORD}\ndbname=postgres\nsslmode=disable\n",
            server.port
        ),
        0o600,
    );
    let t = target(Some("service=bench"), home.path(), &[]).unwrap();
    assert_eq!(user_of(&t).unwrap(), PASSWORD_ROLE);
    assert!(t.password_source.as_deref().unwrap().ends_with("[bench] password"));
    // PGSERVICE, with PGUSER above the service's user.
    let t = target(
        None,
        home.path(),
        &[("PGSERVICE", "bench".into()), ("PGUSER", "postgres".into())],
    )
    .unwrap();
    assert_eq!(user_of(&t).unwrap(), "postgres");
    // The DSN above both.
    let t = target(
        Some(&format!("service=bench user={PASSWORD_ROLE}")),
        home.path(),
        &[("PGUSER", "postgres".into())],
    )
    .unwrap();
    assert_eq!(user_of(&t).unwrap(), PASSWORD_ROLE);
    // PGSERVICEFILE elsewhere, and an unknown name.
    let other = home.path().join("elsewhere.conf");
    write(&other, "[x]\nhost=/nonexistent\n", 0o644);
    let e = target(
        Some("service=bench"),
        home.path(),
        &[
            ("PGSERVICEFILE", other.display().to_string()),
            ("PGSYSCONFDIR", home.path().join("no").display().to_string()),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("--dsn service: definition of service \"bench\" not found (searched "),
        "{e}"
    );
    assert!(e.contains("elsewhere.conf"), "{e}");
}

/// HOME that cannot hold files: `/dev/null` (not a directory: every path
/// under it fails with ENOTDIR) and a path that does not exist (ENOENT).
/// Every default file (`~/.pgpass`, `~/.pg_service.conf`,
/// `~/.postgresql/root.crt`, `root.crl`, `postgresql.crt`) is then absent,
/// as libpq has it: over the unix socket (where libpq reads no TLS file), over
/// TCP with sslmode=prefer (where the TLS files are looked for), and with a
/// service found in the system service file after the user's default one.
#[test]
fn a_home_that_cannot_hold_files_has_no_default_files() {
    let server = testing::shared();
    let sys = tempfile::tempdir().unwrap();
    write(
        &sys.path().join("pg_service.conf"),
        &format!(
            "[sys]\nhost={}\nport={}\nuser=postgres\ndbname=postgres\n",
            server.socket_dir.display(),
            server.port
        ),
        0o644,
    );
    for home in ["/dev/null", "/nonexistent/clockscope-home"] {
        let home = Path::new(home);
        let socket = target(Some(&server.socket_dsn("postgres", "postgres")), home, &[])
            .unwrap_or_else(|e| panic!("HOME={}, unix socket: {e}", home.display()));
        assert_eq!(user_of(&socket).unwrap(), "postgres");
        // On a socket libpq reads no TLS file, even one named.
        let named = format!(
            "{} sslmode=verify-full sslrootcert=/nonexistent/ca.crt",
            server.socket_dsn("postgres", "postgres")
        );
        assert_eq!(user_of(&target(Some(&named), home, &[]).unwrap()).unwrap(), "postgres");
        let tcp = target(Some(&server.tcp_dsn("postgres", "postgres")), home, &[])
            .unwrap_or_else(|e| panic!("HOME={}, TCP: {e}", home.display()));
        assert!(tcp.tls.root_cert.is_none() && tcp.tls.client_cert.is_none() && tcp.tls.crl.is_none());
        assert_eq!(user_of(&tcp).unwrap(), "postgres");
        let service = target(
            None,
            home,
            &[
                ("PGSERVICE", "sys".into()),
                ("PGSYSCONFDIR", sys.path().display().to_string()),
            ],
        )
        .unwrap_or_else(|e| panic!("HOME={}, service: {e}", home.display()));
        assert_eq!(user_of(&service).unwrap(), "postgres");
    }
}

//! Tests of [`super::resolve`]: precedence, defaults, locality, TLS and
//! timeout settings, one-line errors.

use super::*;
use std::collections::HashMap;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name| map.get(name).cloned()
}

#[test]
fn conninfo_with_a_socket_directory_is_local() {
    let t = resolve(Some("host=/tmp/pg port=5499 user=alice dbname=db"), &env_of(&[])).unwrap();
    assert_eq!(t.locality, Locality::UnixSocket);
    assert_eq!(t.description, "host=/tmp/pg port=5499 user=alice dbname=db");
    assert_eq!(t.config.get_connect_timeout(), Some(&DEFAULT_CONNECT_TIMEOUT));
    assert_eq!(t.connect_timeout, Some(DEFAULT_CONNECT_TIMEOUT));
    assert_eq!(t.config.get_application_name(), Some(APPLICATION_NAME));
}

#[test]
fn uri_with_a_percent_encoded_socket_directory() {
    let t = resolve(
        Some("postgresql://bob@%2Fvar%2Frun%2Fpostgresql:5433/mydb"),
        &env_of(&[]),
    )
    .unwrap();
    assert_eq!(t.locality, Locality::UnixSocket);
    assert_eq!(t.description, "host=/var/run/postgresql port=5433 user=bob dbname=mydb");
}

#[test]
fn environment_fills_what_the_dsn_leaves_out() {
    let env = env_of(&[
        ("PGHOST", "127.0.0.1"),
        ("PGPORT", "6543"),
        ("PGUSER", "carol"),
        ("PGDATABASE", "bench"),
        ("PGPASSWORD", "secret"),
        ("PGCONNECT_TIMEOUT", "1"),
    ]);
    let t = resolve(None, &env).unwrap();
    assert_eq!(t.locality, Locality::Loopback);
    assert_eq!(t.description, "host=127.0.0.1 port=6543 user=carol dbname=bench");
    assert_eq!(t.config.get_password(), Some(&b"secret"[..]));
    assert_eq!(t.config.get_connect_timeout(), Some(&Duration::from_secs(2)));
    assert_eq!(t.connect_timeout, Some(Duration::from_secs(2)));
    // The DSN's own values win.
    let t = resolve(Some("host=localhost user=dave"), &env).unwrap();
    assert_eq!(t.description, "host=localhost port=6543 user=dave dbname=bench");
    assert!(!t.description.contains("secret"));
}

#[test]
fn defaults_to_a_socket_directory_and_port_5432() {
    let t = resolve(None, &env_of(&[])).unwrap();
    assert_eq!(t.locality, Locality::UnixSocket);
    assert!(t.description.starts_with("host=/"), "{}", t.description);
    assert!(t.description.ends_with("port=5432"), "{}", t.description);
}

#[test]
fn remote_hosts_are_recognised() {
    for (host, want) in [
        ("localhost", Locality::Loopback),
        ("127.8.9.10", Locality::Loopback),
        ("::1", Locality::Loopback),
        ("db.example.com", Locality::Remote),
        ("10.0.0.5", Locality::Remote),
        ("/tmp,db.example.com", Locality::Remote),
        ("/tmp,localhost", Locality::Loopback),
    ] {
        let t = resolve(None, &env_of(&[("PGHOST", host)])).unwrap();
        assert_eq!(t.locality, want, "{host}");
    }
    let t = resolve(Some("host=db.example.com hostaddr=127.0.0.1"), &env_of(&[])).unwrap();
    assert_eq!(t.locality, Locality::Loopback);
    let t = resolve(None, &env_of(&[("PGHOSTADDR", "192.0.2.1")])).unwrap();
    assert_eq!(t.locality, Locality::Remote);
}

#[test]
fn bad_settings_are_one_line_errors_naming_the_source() {
    type Case<'a> = (Option<&'a str>, &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 6] = [
        (Some("host=/tmp port=notaport"), &[], "--dsn: "),
        (None, &[("PGPORT", "99999")], "PGPORT: '99999' is not a port number"),
        (
            None,
            &[("PGCONNECT_TIMEOUT", "soon")],
            "PGCONNECT_TIMEOUT: 'soon' is not a number of seconds",
        ),
        (
            None,
            &[("PGSSLMODE", "sometimes")],
            "PGSSLMODE: 'sometimes' is not one of",
        ),
        (
            Some("host=db sslmode=verify-full sslrootcert=/nonexistent/ca.pem"),
            &[],
            "--dsn sslrootcert: /nonexistent/ca.pem: ",
        ),
        (
            None,
            // On a TCP host: a unix socket reads no TLS file (libpq).
            &[("PGSSLCERT", "/nonexistent/c.pem"), ("PGHOST", "db")],
            "PGSSLCERT: /nonexistent/c.pem: ",
        ),
    ];
    for (dsn, env, want) in cases {
        let e = resolve(dsn, &env_of(env)).unwrap_err().to_string();
        assert!(e.starts_with(want), "{e}");
        assert!(!e.contains('\n'));
    }
}

#[test]
fn sslmode_comes_from_the_dsn_then_pgsslmode() {
    let home = tempfile::tempdir().unwrap();
    let home_s = home.path().display().to_string();
    let mode = |dsn: &str, env: &[(&str, &str)]| {
        let mut env: Vec<(&str, &str)> = env.to_vec();
        env.push(("HOME", &home_s));
        resolve(Some(dsn), &env_of(&env)).map(|t| (t.tls.mode, t.config.get_ssl_mode()))
    };
    use crate::tls::SslMode as L;
    assert_eq!(mode("host=db", &[]).unwrap(), (L::Prefer, SslMode::Prefer));
    assert_eq!(
        mode("host=db sslmode=allow", &[]).unwrap(),
        (L::Allow, SslMode::Disable)
    );
    assert_eq!(
        mode("host=db sslmode='require'", &[("PGSSLMODE", "disable")]).unwrap(),
        (L::Require, SslMode::Require)
    );
    assert_eq!(
        mode("postgresql://u@db/x?connect_timeout=3&sslmode=require", &[]).unwrap(),
        (L::Require, SslMode::Require)
    );
    assert_eq!(
        mode("host=db", &[("PGSSLMODE", "disable")]).unwrap(),
        (L::Disable, SslMode::Disable)
    );
    // libpq never uses TLS on a unix socket.
    assert_eq!(
        mode("host=/tmp sslmode=require", &[]).unwrap(),
        (L::Require, SslMode::Disable)
    );
    let e = mode("host=db sslmode=verify-full", &[]).unwrap_err().to_string();
    assert!(e.starts_with("sslmode=verify-full: root certificate file"), "{e}");
    let e = mode("host=db sslmode=sometimes", &[]).unwrap_err().to_string();
    assert_eq!(
        e,
        "--dsn sslmode: 'sometimes' is not one of disable, allow, prefer, require, verify-ca, verify-full"
    );
}

#[test]
fn precedence_is_dsn_then_environment_then_service() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("services");
    std::fs::write(
        &file,
        "[svc]\nhost=svc-host\nport=7000\nuser=svc-user\ndbname=svc-db\nsslmode=disable\n",
    )
    .unwrap();
    let file_s = file.display().to_string();
    let home_s = dir.path().display().to_string();
    let base = [("PGSERVICEFILE", file_s.as_str()), ("HOME", home_s.as_str())];
    let resolve_with = |dsn: Option<&str>, extra: &[(&str, &str)]| {
        let mut env = base.to_vec();
        env.extend_from_slice(extra);
        resolve(dsn, &env_of(&env)).unwrap()
    };
    let t = resolve_with(Some("service=svc"), &[]);
    assert_eq!(t.description, "host=svc-host port=7000 user=svc-user dbname=svc-db");
    assert_eq!(t.tls.mode, crate::tls::SslMode::Disable);
    assert_eq!(t.service.as_deref(), Some("svc"));
    let t = resolve_with(
        None,
        &[("PGSERVICE", "svc"), ("PGUSER", "env-user"), ("PGSSLMODE", "require")],
    );
    assert_eq!(t.description, "host=svc-host port=7000 user=env-user dbname=svc-db");
    assert_eq!(t.tls.mode, crate::tls::SslMode::Require);
    let t = resolve_with(Some("service=svc port=7100"), &[("PGPORT", "7200")]);
    assert_eq!(t.description, "host=svc-host port=7100 user=svc-user dbname=svc-db");
    let e = resolve(Some("service=nope"), &env_of(&base)).unwrap_err().to_string();
    assert!(
        e.starts_with("--dsn service: definition of service \"nope\" not found"),
        "{e}"
    );
}

#[test]
fn connect_timeout_follows_libpq() {
    let timeout = |dsn: &str, env: &[(&str, &str)]| resolve(Some(dsn), &env_of(env)).unwrap().connect_timeout;
    assert_eq!(
        timeout("host=/tmp connect_timeout=5", &[]),
        Some(Duration::from_secs(5))
    );
    assert_eq!(
        timeout("host=/tmp connect_timeout=1", &[]),
        Some(Duration::from_secs(2))
    );
    assert_eq!(
        timeout("host=/tmp connect_timeout=0", &[("PGCONNECT_TIMEOUT", "7")]),
        None
    );
    assert_eq!(
        timeout("host=/tmp", &[("PGCONNECT_TIMEOUT", "7")]),
        Some(Duration::from_secs(7))
    );
    assert_eq!(timeout("host=/tmp", &[("PGCONNECT_TIMEOUT", "-1")]), None);
    assert_eq!(
        timeout("postgres://%2Ftmp/db?connect_timeout=4", &[]),
        Some(Duration::from_secs(4))
    );
    // Per host: two hosts may take twice as long.
    let t = resolve(Some("host=/tmp,/var/run connect_timeout=3"), &env_of(&[])).unwrap();
    assert_eq!(t.setup_timeout(), Some(Duration::from_secs(6)));
}

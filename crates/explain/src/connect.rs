//! Where to connect, by libpq's conventions: a conninfo string or URI, with
//! whatever it leaves out taken from PGHOST, PGHOSTADDR, PGPORT, PGUSER,
//! PGDATABASE, PGPASSWORD, PGCONNECT_TIMEOUT and PGSSLMODE, then libpq's
//! defaults (a unix socket in /var/run/postgresql or /tmp, port 5432, the OS
//! user name). Also decides whether the server is on this machine.
//!
//! Not supported, and said so in one line when asked for: TLS (`sslmode`
//! require/verify-ca/verify-full; this build has no TLS library) and
//! `~/.pgpass` lookup.

use crate::error::Error;
use postgres::config::{Host, SslMode};
use postgres::Config;
use serde::Serialize;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// libpq's compiled-in socket directories: Debian's, then upstream's.
pub const DEFAULT_SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];
/// Used when neither the DSN nor PGCONNECT_TIMEOUT sets one, so an
/// unreachable host fails in seconds rather than at the kernel's TCP timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Shown in pg_stat_activity for our session.
pub const APPLICATION_NAME: &str = "clockscope explain";

/// Whether the server shares this machine (and so its clocks).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Locality {
    /// Every host is a unix-socket directory.
    UnixSocket,
    /// Every host is loopback: localhost, 127.0.0.0/8 or ::1.
    Loopback,
    /// At least one host may be another machine.
    Remote,
}

impl Locality {
    /// Whether this machine's clock is the server's clock.
    pub fn is_local(&self) -> bool {
        !matches!(self, Locality::Remote)
    }
}

/// A resolved connection: the client configuration and how to describe it.
#[derive(Clone, Debug)]
pub struct Target {
    pub config: Config,
    /// `host=... port=... user=... dbname=...`, never the password.
    pub description: String,
    pub locality: Locality,
}

/// Resolves `dsn` (or nothing) against the environment `env` (a lookup, so
/// tests pass a map) into a connection target.
pub fn resolve(dsn: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Result<Target, Error> {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    let mut config = match dsn {
        Some(text) => text.parse::<Config>().map_err(|e| {
            let (message, _) = crate::error::describe(&e);
            Error::Settings(format!("--dsn: {message}"))
        })?,
        None => Config::new(),
    };
    let dsn_text = dsn.unwrap_or("");

    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        match env("PGHOST") {
            Some(hosts) => {
                for h in hosts.split(',') {
                    add_host(&mut config, h);
                }
            }
            None => {
                if let Some(addrs) = env("PGHOSTADDR") {
                    for a in addrs.split(',') {
                        let ip: IpAddr = a
                            .trim()
                            .parse()
                            .map_err(|_| Error::Settings(format!("PGHOSTADDR: '{a}' is not an IP address")))?;
                        config.hostaddr(ip);
                    }
                } else {
                    config.host_path(default_socket_dir());
                }
            }
        }
    }
    if config.get_ports().is_empty() {
        let port = match env("PGPORT") {
            Some(p) => p
                .trim()
                .parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| Error::Settings(format!("PGPORT: '{p}' is not a port number")))?,
            None => 5432,
        };
        config.port(port);
    }
    if config.get_user().is_none() {
        if let Some(user) = env("PGUSER") {
            config.user(&user);
        }
    }
    if config.get_dbname().is_none() {
        if let Some(db) = env("PGDATABASE") {
            config.dbname(&db);
        }
    }
    if config.get_password().is_none() {
        if let Some(pw) = env("PGPASSWORD") {
            config.password(pw);
        }
    }
    if config.get_connect_timeout().is_none() {
        let timeout = match env("PGCONNECT_TIMEOUT") {
            Some(t) => {
                let secs: u64 = t
                    .trim()
                    .parse()
                    .map_err(|_| Error::Settings(format!("PGCONNECT_TIMEOUT: '{t}' is not a number of seconds")))?;
                // libpq: 0 (or negative) means wait forever; less than 2 s is raised to 2 s.
                (secs > 0).then(|| Duration::from_secs(secs.max(2)))
            }
            None => Some(DEFAULT_CONNECT_TIMEOUT),
        };
        if let Some(t) = timeout {
            config.connect_timeout(t);
        }
    }
    if config.get_application_name().is_none() {
        config.application_name(APPLICATION_NAME);
    }

    // sslmode: the DSN's own setting wins over PGSSLMODE (the client library
    // cannot tell us whether the DSN set it, so look for the keyword).
    let dsn_sets_sslmode = dsn_text.contains("sslmode");
    let mode_text = if dsn_sets_sslmode { None } else { env("PGSSLMODE") };
    match mode_text.as_deref() {
        Some("disable") => {
            config.ssl_mode(SslMode::Disable);
        }
        Some("allow") | Some("prefer") => {
            config.ssl_mode(SslMode::Prefer);
        }
        Some(m @ ("require" | "verify-ca" | "verify-full")) => return Err(no_tls(&format!("PGSSLMODE={m}"))),
        Some(other) => {
            return Err(Error::Settings(format!(
                "PGSSLMODE: '{other}' is not one of disable, allow, prefer, require, verify-ca, verify-full"
            )))
        }
        None => {}
    }
    if config.get_ssl_mode() == SslMode::Require {
        return Err(no_tls("sslmode=require"));
    }

    let locality = locality(&config);
    let description = describe(&config);
    Ok(Target {
        config,
        description,
        locality,
    })
}

/// Resolves against the process environment.
pub fn resolve_from_env(dsn: Option<&str>) -> Result<Target, Error> {
    resolve(dsn, &|name| std::env::var(name).ok())
}

fn no_tls(what: &str) -> Error {
    Error::Settings(format!(
        "{what}: this build of clockscope has no TLS support; use sslmode=disable or prefer, or a unix socket"
    ))
}

fn add_host(config: &mut Config, host: &str) {
    let host = host.trim();
    if host.starts_with('/') {
        config.host_path(host);
    } else {
        config.host(host);
    }
}

fn default_socket_dir() -> &'static str {
    DEFAULT_SOCKET_DIRS
        .into_iter()
        .find(|d| Path::new(d).is_dir())
        .unwrap_or("/tmp")
}

/// Loopback by name or address: `localhost`, 127.0.0.0/8, ::1 (and
/// ::ffff:127.x). A unix socket is always local.
fn is_loopback_name(name: &str) -> bool {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    if bare.eq_ignore_ascii_case("localhost") || bare.to_ascii_lowercase().ends_with(".localhost") {
        return true;
    }
    match bare.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => v4.is_loopback(),
        Ok(IpAddr::V6(v6)) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        Err(_) => false,
    }
}

fn locality(config: &Config) -> Locality {
    let hosts = config.get_hosts();
    let addrs = config.get_hostaddrs();
    if !addrs.is_empty() {
        // hostaddr, when given, is where the connection goes.
        let all_loopback = addrs.iter().all(|a| is_loopback_name(&a.to_string()));
        return if all_loopback {
            Locality::Loopback
        } else {
            Locality::Remote
        };
    }
    if hosts.iter().all(|h| matches!(h, Host::Unix(_))) {
        return Locality::UnixSocket;
    }
    let all_local = hosts.iter().all(|h| match h {
        Host::Unix(_) => true,
        Host::Tcp(name) => is_loopback_name(name),
    });
    if all_local {
        Locality::Loopback
    } else {
        Locality::Remote
    }
}

fn describe(config: &Config) -> String {
    let mut parts = Vec::new();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => PathBuf::from(path).display().to_string(),
        })
        .collect();
    if !hosts.is_empty() {
        parts.push(format!("host={}", hosts.join(",")));
    }
    let addrs: Vec<String> = config.get_hostaddrs().iter().map(|a| a.to_string()).collect();
    if !addrs.is_empty() {
        parts.push(format!("hostaddr={}", addrs.join(",")));
    }
    let ports: Vec<String> = config.get_ports().iter().map(|p| p.to_string()).collect();
    if !ports.is_empty() {
        parts.push(format!("port={}", ports.join(",")));
    }
    if let Some(user) = config.get_user() {
        parts.push(format!("user={user}"));
    }
    if let Some(db) = config.get_dbname() {
        parts.push(format!("dbname={db}"));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
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
                &[("PGSSLMODE", "require")],
                "PGSSLMODE=require: this build of clockscope has no TLS support",
            ),
            (
                None,
                &[("PGSSLMODE", "sometimes")],
                "PGSSLMODE: 'sometimes' is not one of",
            ),
            (Some("host=/tmp sslmode=require"), &[], "sslmode=require: this build"),
        ];
        for (dsn, env, want) in cases {
            let e = resolve(dsn, &env_of(env)).unwrap_err().to_string();
            assert!(e.starts_with(want), "{e}");
            assert!(!e.contains('\n'));
        }
        // The DSN's sslmode wins over the variable.
        let t = resolve(Some("host=/tmp sslmode=disable"), &env_of(&[("PGSSLMODE", "require")])).unwrap();
        assert_eq!(t.config.get_ssl_mode(), SslMode::Disable);
    }
}

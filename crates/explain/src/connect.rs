//! Where to connect, by libpq's conventions: a conninfo string or URI, with
//! whatever it leaves out taken from PGHOST, PGHOSTADDR, PGPORT, PGUSER,
//! PGDATABASE, PGPASSWORD, PGCONNECT_TIMEOUT and PGSSLMODE, then libpq's
//! defaults (a unix socket in /var/run/postgresql or /tmp, port 5432, the OS
//! user name). Also decides whether the server is on this machine.
//!
//! `connect_timeout` (the DSN's, else PGCONNECT_TIMEOUT, else 10 s) bounds the
//! whole connection set-up, as in libpq: socket connect, startup and
//! authentication, per host tried; 0 or less means no limit (as in libpq; Ctrl-C
//! still stops the wait) and 1 is raised to 2 (libpq's rounding guard).
//!
//! Not supported, and said so in one line when asked for: TLS (`sslmode`
//! require/verify-ca/verify-full, from the DSN or PGSSLMODE alike; this build
//! has no TLS library) and `~/.pgpass` lookup.

use crate::error::Error;
use clockscope::escape::escape_untrusted;
use serde::Serialize;
use std::net::IpAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::Config;

/// libpq's compiled-in socket directories: Debian's, then upstream's.
pub const DEFAULT_SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];
/// Used when neither the DSN nor PGCONNECT_TIMEOUT sets one, so an
/// unreachable host fails in seconds rather than at the kernel's TCP timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Shown in pg_stat_activity for our session (unless the DSN or
/// PGAPPNAME names another), so an interrupted run can be checked for leftovers.
pub const APPLICATION_NAME: &str = "clockscope";

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

impl Target {
    /// The bound on the whole connection set-up: `connect_timeout` for each
    /// host the client may try in turn (libpq applies it per host).
    pub fn setup_timeout(&self) -> Option<Duration> {
        let hosts = self
            .config
            .get_hosts()
            .len()
            .max(self.config.get_hostaddrs().len())
            .max(1);
        self.connect_timeout.map(|t| t * hosts as u32)
    }
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
    /// libpq's `connect_timeout` per host tried: the bound on socket connect,
    /// startup and authentication; `None` = no limit (0 was asked for).
    pub connect_timeout: Option<Duration>,
    /// `host=... port=... user=... dbname=...`, never the password.
    pub description: String,
    pub locality: Locality,
}

/// Resolves `dsn` (or nothing) against the environment `env` (a lookup, so
/// tests pass a map) into a connection target.
pub fn resolve(dsn: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Result<Target, Error> {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    // The client library knows fewer sslmode values than libpq (no allow,
    // verify-ca, verify-full) and drops connect_timeout=0, so read both from
    // the DSN first; a DSN's sslmode is checked as PGSSLMODE is.
    let mut dsn_ssl_mode = None;
    let mut dsn_timeout = None;
    let mut parse_text = dsn.map(str::to_string);
    if let Some(text) = dsn {
        if let Some((span, value)) = dsn_param(text, "sslmode") {
            let mode = ssl_mode("--dsn sslmode", &value)?;
            dsn_ssl_mode = Some(mode);
            let known = if mode == SslMode::Disable { "disable" } else { "prefer" };
            let mut rewritten = text.to_string();
            rewritten.replace_range(span, known);
            parse_text = Some(rewritten);
        }
        if let Some((_, value)) = dsn_param(text, "connect_timeout") {
            if let Ok(secs) = value.trim().parse::<i64>() {
                dsn_timeout = Some(libpq_timeout(secs));
            }
        }
    }
    let mut config = match &parse_text {
        Some(text) => text.parse::<Config>().map_err(|e| {
            let (message, _) = crate::error::describe(&e);
            Error::Settings(format!("--dsn: {message}"))
        })?,
        None => Config::new(),
    };

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
    let connect_timeout = match dsn_timeout {
        Some(t) => t,
        None => match env("PGCONNECT_TIMEOUT") {
            Some(t) => {
                let secs: i64 = t.trim().parse().map_err(|_| {
                    Error::Settings(format!(
                        "PGCONNECT_TIMEOUT: '{}' is not a number of seconds",
                        escape_untrusted(&t)
                    ))
                })?;
                libpq_timeout(secs)
            }
            None => Some(DEFAULT_CONNECT_TIMEOUT),
        },
    };
    // The client's own timeout bounds each socket connect; ours (in the
    // session) bounds the whole set-up.
    if let Some(t) = connect_timeout {
        config.connect_timeout(t);
    }
    if config.get_application_name().is_none() {
        match env("PGAPPNAME") {
            Some(name) => config.application_name(&name),
            None => config.application_name(APPLICATION_NAME),
        };
    }

    // sslmode: the DSN's own setting wins over PGSSLMODE.
    let mode = match dsn_ssl_mode {
        Some(mode) => Some(mode),
        None => env("PGSSLMODE").map(|m| ssl_mode("PGSSLMODE", &m)).transpose()?,
    };
    if let Some(mode) = mode {
        config.ssl_mode(mode);
    }

    let locality = locality(&config);
    let description = describe(&config);
    Ok(Target {
        config,
        connect_timeout,
        description,
        locality,
    })
}

/// libpq's reading of a connect_timeout in seconds: 0 or less is no limit,
/// 1 is raised to 2.
fn libpq_timeout(secs: i64) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(secs.max(2) as u64))
}

/// The client's mode for a libpq `sslmode` value from `source` (`PGSSLMODE`
/// or `--dsn sslmode`): disable, or prefer for allow/prefer (this build never
/// uses TLS, so both connect without it); one-line errors for the modes that
/// need TLS and for unknown values.
fn ssl_mode(source: &str, value: &str) -> Result<SslMode, Error> {
    match value {
        "disable" => Ok(SslMode::Disable),
        "allow" | "prefer" => Ok(SslMode::Prefer),
        "require" | "verify-ca" | "verify-full" => Err(no_tls(&format!("{source}={value}"))),
        other => Err(Error::Settings(format!(
            "{source}: '{}' is not one of disable, allow, prefer, require, verify-ca, verify-full",
            escape_untrusted(other)
        ))),
    }
}

/// The last value of `key` in a libpq conninfo string (`key=value`, values
/// optionally single-quoted, backslash escapes) or URI (`?key=value&...`,
/// percent-encoded): the byte range of its raw text in `dsn` and its decoded
/// value. `None` when absent or when the text does not parse (the client
/// library then reports the error). Written by hand: the client library's
/// parser is private, and only these two keys need reading before it.
pub fn dsn_param(dsn: &str, key: &str) -> Option<(Range<usize>, String)> {
    if dsn.starts_with("postgresql://") || dsn.starts_with("postgres://") {
        let query_start = dsn.find('?')? + 1;
        let mut found = None;
        let mut pos = query_start;
        for pair in dsn[query_start..].split('&') {
            if let Some((k, v)) = pair.split_once('=') {
                if percent_decode(k)? == key {
                    let start = pos + k.len() + 1;
                    found = Some((start..start + v.len(), percent_decode(v)?));
                }
            }
            pos += pair.len() + 1;
        }
        return found;
    }
    let bytes = dsn.as_bytes();
    let mut i = 0;
    let mut found = None;
    let skip_space = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_space(i);
        if i >= bytes.len() {
            return found;
        }
        let key_start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let this_key = &dsn[key_start..i];
        i = skip_space(i);
        if bytes.get(i) != Some(&b'=') {
            return None;
        }
        i = skip_space(i + 1);
        let value_start = i;
        let mut value = Vec::new();
        if bytes.get(i) == Some(&b'\'') {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return None,
                    Some(b'\'') => break,
                    Some(b'\\') => {
                        value.push(*bytes.get(i + 1)?);
                        i += 2;
                    }
                    Some(&b) => {
                        value.push(b);
                        i += 1;
                    }
                }
            }
            i += 1;
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                if bytes[i] == b'\\' && i + 1 < bytes.len() {
                    i += 1;
                }
                value.push(bytes[i]);
                i += 1;
            }
        }
        if this_key == key {
            found = Some((value_start..i, String::from_utf8(value).ok()?));
        }
    }
}

/// `%XX` decoding of a URI component; `None` for a bad escape or non-UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
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
                &[("PGSSLMODE", "require")],
                "PGSSLMODE=require: this build of clockscope has no TLS support",
            ),
            (
                None,
                &[("PGSSLMODE", "sometimes")],
                "PGSSLMODE: 'sometimes' is not one of",
            ),
            (
                Some("host=/tmp sslmode=require"),
                &[],
                "--dsn sslmode=require: this build",
            ),
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

    #[test]
    fn dsn_sslmode_gets_the_same_messages_as_pgsslmode() {
        let no_tls = "this build of clockscope has no TLS support; use sslmode=disable or prefer, or a unix socket";
        for mode in ["require", "verify-ca", "verify-full"] {
            let from_env = resolve(None, &env_of(&[("PGSSLMODE", mode)])).unwrap_err().to_string();
            assert_eq!(from_env, format!("PGSSLMODE={mode}: {no_tls}"));
            for dsn in [
                format!("host=/tmp sslmode={mode}"),
                format!("host=/tmp sslmode = '{mode}'"),
                format!("postgresql://u@localhost/db?connect_timeout=3&sslmode={mode}"),
            ] {
                let from_dsn = resolve(Some(&dsn), &env_of(&[])).unwrap_err().to_string();
                assert_eq!(from_dsn, format!("--dsn sslmode={mode}: {no_tls}"), "{dsn}");
            }
        }
        let odd = resolve(Some("host=/tmp sslmode=sometimes"), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            odd,
            "--dsn sslmode: 'sometimes' is not one of disable, allow, prefer, require, verify-ca, verify-full"
        );
        // allow and prefer connect without TLS, from either source.
        for (dsn, env) in [
            (Some("host=/tmp sslmode=allow"), &[][..]),
            (Some("postgres://%2Ftmp/db?sslmode=allow"), &[][..]),
            (None, &[("PGSSLMODE", "allow")][..]),
            (Some("host=/tmp sslmode=prefer"), &[][..]),
        ] {
            let t = resolve(dsn, &env_of(env)).unwrap();
            assert_eq!(t.config.get_ssl_mode(), SslMode::Prefer, "{dsn:?}");
        }
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

    #[test]
    fn dsn_params_are_read_as_libpq_writes_them() {
        let value = |dsn: &str, key: &str| dsn_param(dsn, key).map(|(_, v)| v);
        assert_eq!(value("a=1 sslmode=x b=2", "sslmode").as_deref(), Some("x"));
        assert_eq!(value("sslmode = 'a b\\'c' x=1", "sslmode").as_deref(), Some("a b'c"));
        assert_eq!(value("sslmode=a sslmode=b", "sslmode").as_deref(), Some("b"));
        assert_eq!(value("password='sslmode=x'", "sslmode"), None);
        assert_eq!(
            value("postgres://h/db?a=1&ssl%6dode=verify%2Dfull", "sslmode").as_deref(),
            Some("verify-full")
        );
        assert_eq!(value("postgres://h/db", "sslmode"), None);
        assert_eq!(value("broken 'x", "sslmode"), None);
        let dsn = "host=/tmp sslmode='allow' user=u";
        let (span, _) = dsn_param(dsn, "sslmode").unwrap();
        assert_eq!(&dsn[span], "'allow'");
    }
}

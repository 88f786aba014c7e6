//! Where to connect, by libpq's conventions: a conninfo string or URI, with
//! whatever it leaves out taken from the environment (PGHOST, PGHOSTADDR,
//! PGPORT, PGUSER, PGDATABASE, PGPASSWORD, PGCONNECT_TIMEOUT, PGAPPNAME, the
//! PGSSL* variables, PGSERVICE, PGPASSFILE), then from the service file's
//! entry (`service=` or PGSERVICE, see [`crate::pgfiles`]), then libpq's
//! defaults (a unix socket in /var/run/postgresql or /tmp, port 5432, the OS
//! user name); a password still missing is looked up in the password file
//! (`passfile=`, PGPASSFILE, `~/.pgpass`). TLS settings are planned by
//! [`crate::tls`]. Also decides whether the server is on this machine.
//!
//! `connect_timeout` (the DSN's, else PGCONNECT_TIMEOUT, else the service's,
//! else 10 s) bounds the whole connection set-up, as in libpq: socket
//! connect, TLS, startup and authentication, per host tried; 0 or less means
//! no limit (as in libpq; Ctrl-C still stops the wait) and 1 is raised to 2
//! (libpq's rounding guard).

use crate::error::Error;
use crate::pgfiles::{self, DEFAULT_SOCKET_DIRS};
use crate::tls;
use clockscope::escape::escape_untrusted;
use serde::Serialize;
use std::net::IpAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::Config;

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
    /// How TLS is used (libpq's sslmode and certificate files).
    pub tls: tls::Tls,
    /// The service file entry used (`service=`, PGSERVICE), if any.
    pub service: Option<String>,
    /// Where the password came from (`--dsn password`, `PGPASSWORD`, a
    /// service file, a password file line), never the password.
    pub password_source: Option<String>,
}

/// libpq's keys that the client library does not know (or knows fewer
/// values of): read here and removed from the DSN before it parses it.
const OWN_KEYS: [&str; 7] = [
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "sslcrl",
    "service",
    "passfile",
];

/// Resolves `dsn` (or nothing) against the environment `env` (a lookup, so
/// tests pass a map) into a connection target. Precedence is libpq's: the
/// DSN, then the environment, then the service file's entry, then defaults.
pub fn resolve(dsn: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Result<Target, Error> {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    let home = env("HOME").map(PathBuf::from);
    // The DSN's own keys (see OWN_KEYS), then the rest for the client library.
    let mut own: Vec<(String, String)> = Vec::new();
    let mut dsn_timeout = None;
    let mut parse_text = dsn.map(str::to_string);
    if let Some(text) = dsn {
        if let Some(params) = dsn_params(text) {
            for p in &params {
                if OWN_KEYS.contains(&p.key.as_str()) {
                    own.push((p.key.clone(), p.value.clone()));
                }
                if p.key == "connect_timeout" {
                    if let Ok(secs) = p.value.trim().parse::<i64>() {
                        dsn_timeout = Some(libpq_timeout(secs));
                    }
                }
            }
            parse_text = Some(strip_params(text, &params, &OWN_KEYS));
        }
    }
    let dsn_own = |key: &str| own.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let mut config = match &parse_text {
        Some(text) => text.parse::<Config>().map_err(|e| {
            let (message, _) = crate::error::describe(&e);
            Error::Settings(format!("--dsn: {message}"))
        })?,
        None => Config::new(),
    };

    // The service file's entry, below the DSN and the environment.
    let service = match dsn_own("service") {
        Some(name) => Some((name, "--dsn service")),
        None => env("PGSERVICE").map(|n| (n, "PGSERVICE")),
    };
    let service = match service {
        Some((name, source)) => Some(pgfiles::find_service(&name, source, home.as_deref(), &env)?),
        None => None,
    };
    let from_service = |key: &str| -> Option<(String, String)> {
        let s = service.as_ref()?;
        s.get(key).map(|v| (v.to_string(), s.source_of(key)))
    };
    // A value and where it came from: the DSN's own keys, the variable, the service.
    let pick = |key: &str, var: &str| -> Option<(String, String)> {
        dsn_own(key)
            .map(|v| (v, format!("--dsn {key}")))
            .or_else(|| env(var).map(|v| (v, var.to_string())))
            .or_else(|| from_service(key))
    };
    let from_env_or_service =
        |var: &str, key: &str| env(var).map(|v| (v, var.to_string())).or_else(|| from_service(key));

    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        let hosts = match env("PGHOST") {
            Some(h) => Some(h),
            None if env("PGHOSTADDR").is_none() => from_service("host").map(|(h, _)| h),
            None => None,
        };
        let addrs = match env("PGHOSTADDR") {
            Some(a) => Some((a, "PGHOSTADDR".to_string())),
            None if hosts.is_none() => from_service("hostaddr"),
            None => None,
        };
        if let Some(hosts) = &hosts {
            for h in hosts.split(',') {
                add_host(&mut config, h);
            }
        }
        if let Some((addrs, source)) = &addrs {
            for a in addrs.split(',') {
                let ip: IpAddr = a.trim().parse().map_err(|_| {
                    Error::Settings(format!("{source}: '{}' is not an IP address", escape_untrusted(a)))
                })?;
                config.hostaddr(ip);
            }
        }
        if hosts.is_none() && addrs.is_none() {
            config.host_path(default_socket_dir());
        }
    }
    if config.get_ports().is_empty() {
        let port =
            match from_env_or_service("PGPORT", "port") {
                Some((p, source)) => p.trim().parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(|| {
                    Error::Settings(format!("{source}: '{}' is not a port number", escape_untrusted(&p)))
                })?,
                None => 5432,
            };
        config.port(port);
    }
    if config.get_user().is_none() {
        if let Some((user, _)) = from_env_or_service("PGUSER", "user") {
            config.user(&user);
        }
    }
    if config.get_dbname().is_none() {
        if let Some((db, _)) = from_env_or_service("PGDATABASE", "dbname") {
            config.dbname(&db);
        }
    }
    let mut password_source = None;
    if config.get_password().is_none() {
        if let Some((pw, source)) = from_env_or_service("PGPASSWORD", "password") {
            config.password(pw);
            password_source = Some(source);
        }
    } else {
        password_source = Some("--dsn password".to_string());
    }
    if config.get_options().is_none() {
        if let Some((options, _)) = from_env_or_service("PGOPTIONS", "options") {
            config.options(&options);
        }
    }
    let connect_timeout = match dsn_timeout {
        Some(t) => t,
        None => match from_env_or_service("PGCONNECT_TIMEOUT", "connect_timeout") {
            Some((t, source)) => {
                let secs: i64 = t.trim().parse().map_err(|_| {
                    Error::Settings(format!(
                        "{source}: '{}' is not a number of seconds",
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
        match from_env_or_service("PGAPPNAME", "application_name") {
            Some((name, _)) => config.application_name(&name),
            None => config.application_name(APPLICATION_NAME),
        };
    }

    // TLS: each setting from the DSN, else its PGSSL* variable, else the service.
    let setting = |key: &str, var: &str| pick(key, var).map(|(value, source)| tls::Setting { value, source });
    let ssl_mode = match pick("sslmode", "PGSSLMODE") {
        Some((value, source)) => Some(tls::SslMode::parse(&source, &value)?),
        None => None,
    };
    let tls = tls::plan(
        &tls::TlsSettings {
            mode: ssl_mode,
            root_cert: setting("sslrootcert", "PGSSLROOTCERT"),
            cert: setting("sslcert", "PGSSLCERT"),
            key: setting("sslkey", "PGSSLKEY"),
            crl: setting("sslcrl", "PGSSLCRL"),
        },
        home.as_deref(),
    )?;
    let locality = locality(&config);
    // libpq never uses TLS on a unix socket, whatever sslmode says.
    if locality == Locality::UnixSocket {
        config.ssl_mode(SslMode::Disable);
    } else {
        config.ssl_mode(tls.mode.first_attempt());
    }

    // The password file, when nothing else gave a password.
    if config.get_password().is_none() {
        let passfile = pick("passfile", "PGPASSFILE");
        if let Some(found) = pgfiles::password_for(&config, passfile, home.as_deref())? {
            config.password(found.password);
            password_source = Some(found.source);
        }
    }

    let description = describe(&config);
    Ok(Target {
        config,
        connect_timeout,
        description,
        locality,
        tls,
        service: service.map(|s| s.name),
        password_source,
    })
}

/// libpq's reading of a connect_timeout in seconds: 0 or less is no limit,
/// 1 is raised to 2.
fn libpq_timeout(secs: i64) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(secs.max(2) as u64))
}

/// One `key=value` of a conninfo string or a URI's query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub key: String,
    pub value: String,
    /// The raw text of the value in the DSN.
    pub value_span: Range<usize>,
    /// The raw text of the whole pair.
    pub pair_span: Range<usize>,
}

/// `dsn` without the pairs whose key is in `keys` (a URI's query is rebuilt
/// from the remaining pairs).
fn strip_params(dsn: &str, params: &[Param], keys: &[&str]) -> String {
    let is_uri = dsn.starts_with("postgresql://") || dsn.starts_with("postgres://");
    if is_uri {
        let Some(q) = dsn.find('?') else {
            return dsn.to_string();
        };
        let kept: Vec<&str> = params
            .iter()
            .filter(|p| !keys.contains(&p.key.as_str()))
            .map(|p| &dsn[p.pair_span.clone()])
            .collect();
        let mut out = dsn[..q].to_string();
        if !kept.is_empty() {
            out.push('?');
            out.push_str(&kept.join("&"));
        }
        return out;
    }
    let mut out = dsn.to_string();
    for p in params.iter().rev() {
        if keys.contains(&p.key.as_str()) {
            out.replace_range(p.pair_span.clone(), " ");
        }
    }
    out
}

/// The last value of `key` in a libpq conninfo string or URI: the byte
/// range of its raw text in `dsn` and its decoded value (see [`dsn_params`]).
pub fn dsn_param(dsn: &str, key: &str) -> Option<(Range<usize>, String)> {
    dsn_params(dsn)?
        .into_iter()
        .rev()
        .find(|p| p.key == key)
        .map(|p| (p.value_span, p.value))
}

/// Every `key=value` of a libpq conninfo string (values optionally
/// single-quoted, backslash escapes) or of a URI's query (`?key=value&...`,
/// percent-encoded), in order. `None` when the text does not parse (the
/// client library then reports the error). Written by hand: the client
/// library's parser is private, and it rejects libpq keys it does not know.
pub fn dsn_params(dsn: &str) -> Option<Vec<Param>> {
    let mut found = Vec::new();
    if dsn.starts_with("postgresql://") || dsn.starts_with("postgres://") {
        let Some(q) = dsn.find('?') else {
            return Some(found);
        };
        let query_start = q + 1;
        let mut pos = query_start;
        for pair in dsn[query_start..].split('&') {
            if let Some((k, v)) = pair.split_once('=') {
                let start = pos + k.len() + 1;
                found.push(Param {
                    key: percent_decode(k)?,
                    value: percent_decode(v)?,
                    value_span: start..start + v.len(),
                    pair_span: pos..pos + pair.len(),
                });
            }
            pos += pair.len() + 1;
        }
        return Some(found);
    }
    let bytes = dsn.as_bytes();
    let mut i = 0;
    let skip_space = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_space(i);
        if i >= bytes.len() {
            return Some(found);
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
        found.push(Param {
            key: this_key.to_string(),
            value: String::from_utf8(value).ok()?,
            value_span: value_start..i,
            pair_span: key_start..i,
        });
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
                &[("PGSSLCERT", "/nonexistent/c.pem")],
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
    fn libpq_only_keys_are_removed_before_the_client_parses() {
        let dsn = "host=db sslrootcert='/a b' user=u sslkey=/k passfile=/p";
        let params = dsn_params(dsn).unwrap();
        let stripped = strip_params(dsn, &params, &OWN_KEYS);
        assert_eq!(stripped.split_whitespace().collect::<Vec<_>>(), ["host=db", "user=u"]);
        let uri = "postgresql://u@db/x?sslcert=%2Fc&connect_timeout=3&service=s";
        let params = dsn_params(uri).unwrap();
        assert_eq!(
            strip_params(uri, &params, &OWN_KEYS),
            "postgresql://u@db/x?connect_timeout=3"
        );
        let uri = "postgresql://u@db/x?service=s";
        assert_eq!(
            strip_params(uri, &dsn_params(uri).unwrap(), &OWN_KEYS),
            "postgresql://u@db/x"
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

//! Where to connect, by libpq's conventions: a conninfo string or URI, with
//! whatever it leaves out taken from the environment (PGHOST, PGHOSTADDR,
//! PGPORT, PGUSER, PGDATABASE, PGPASSWORD, PGCONNECT_TIMEOUT, PGAPPNAME, the
//! PGSSL* variables, PGSERVICE, PGPASSFILE), then from the service file's
//! entry (`service=` or PGSERVICE, see `crate::pgfiles`), then libpq's
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

//!
//! Its parts: `conninfo.rs` (the conninfo and URI lexer) and `locality.rs`
//! (whether the server is on this machine).

mod conninfo;
mod locality;

pub use locality::Locality;

use crate::error::Error;
use crate::pgfiles::{self, DEFAULT_SOCKET_DIRS};
use crate::tls;
use clockscope_system::escape::escape_untrusted;
use conninfo::{dsn_params, strip_params};
use locality::locality;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::Config;

/// Used when neither the DSN nor PGCONNECT_TIMEOUT sets one, so an
/// unreachable host fails in seconds rather than at the kernel's TCP timeout.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Shown in pg_stat_activity for our session (unless the DSN or
/// PGAPPNAME names another), so an interrupted run can be checked for leftovers.
pub(crate) const APPLICATION_NAME: &str = "clockscope";

impl Target {
    /// The bound on the whole connection set-up: `connect_timeout` for each
    /// host the client may try in turn (libpq applies it per host).
    pub(crate) fn setup_timeout(&self) -> Option<Duration> {
        let hosts = self
            .config
            .get_hosts()
            .len()
            .max(self.config.get_hostaddrs().len())
            .max(1);
        self.connect_timeout.map(|t| t * hosts as u32)
    }
}

/// A resolved connection: the client configuration and how to describe it.
#[derive(Clone, Debug)]
pub struct Target {
    /// The client library's configuration, complete (hosts, port, user,
    /// database, password, timeouts, application name, sslmode).
    pub config: Config,
    /// libpq's `connect_timeout` per host tried: the bound on socket connect,
    /// startup and authentication; `None` = no limit (0 was asked for).
    pub connect_timeout: Option<Duration>,
    /// `host=... port=... user=... dbname=...`, never the password.
    pub description: String,
    /// Whether the server shares this machine.
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
    let Dsn {
        mut config,
        own,
        timeout: dsn_timeout,
    } = read_dsn(dsn)?;
    let mut src = Sources {
        env: &env,
        own,
        service: None,
    };
    src.service = find_service(&src, home.as_deref())?;
    set_hosts(&mut config, &src)?;
    set_port(&mut config, &src)?;
    let mut password_source = set_login(&mut config, &src);
    let connect_timeout = dsn_timeout.map_or_else(|| env_connect_timeout(&src), Ok)?;
    // The client's own timeout bounds each socket connect; ours (in the
    // session) bounds the whole set-up.
    if let Some(t) = connect_timeout {
        config.connect_timeout(t);
    }
    if config.get_application_name().is_none() {
        let name = src.env_or_service("PGAPPNAME", "application_name");
        config.application_name(name.map_or(APPLICATION_NAME.to_string(), |(name, _)| name));
    }
    let locality = locality(&config);
    // libpq never uses TLS on a unix socket, whatever sslmode says, and so
    // reads none of its certificate files.
    let tls = plan_tls(&src, home.as_deref(), locality == Locality::UnixSocket)?;
    if locality == Locality::UnixSocket {
        config.ssl_mode(SslMode::Disable);
    } else {
        config.ssl_mode(tls.mode.first_attempt());
    }
    // The password file, when nothing else gave a password.
    if config.get_password().is_none() {
        let passfile = src.pick("passfile", "PGPASSFILE");
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
        service: src.service.map(|s| s.name),
        password_source,
    })
}

/// The DSN read: the client library's configuration of what it knows, the
/// keys it does not ([`OWN_KEYS`]), and its `connect_timeout`.
struct Dsn {
    config: Config,
    /// The DSN's own keys and values, in order (the last one wins).
    own: Vec<(String, String)>,
    /// The DSN's `connect_timeout` as libpq reads it, when it is a number.
    timeout: Option<Option<Duration>>,
}

/// Reads `dsn` (nothing: an empty configuration): its own keys out, the
/// rest parsed by the client library.
fn read_dsn(dsn: Option<&str>) -> Result<Dsn, Error> {
    let mut own: Vec<(String, String)> = Vec::new();
    let mut timeout = None;
    let mut parse_text = dsn.map(str::to_string);
    if let Some(text) = dsn {
        if let Some(params) = dsn_params(text) {
            for p in &params {
                if OWN_KEYS.contains(&p.key.as_str()) {
                    own.push((p.key.clone(), p.value.clone()));
                }
                if p.key == "connect_timeout" {
                    if let Ok(secs) = p.value.trim().parse::<i64>() {
                        timeout = Some(libpq_timeout(secs));
                    }
                }
            }
            parse_text = Some(strip_params(text, &params, &OWN_KEYS));
        }
    }
    let config = match &parse_text {
        Some(text) => text.parse::<Config>().map_err(|e| {
            let (message, _) = crate::error::describe(&e);
            Error::Settings(format!("--dsn: {message}"))
        })?,
        None => Config::new(),
    };
    Ok(Dsn { config, own, timeout })
}

/// Where a setting may come from, in libpq's order: the DSN's own keys, the
/// environment, the service file's entry.
struct Sources<'a> {
    /// The environment, empty values left out.
    env: &'a dyn Fn(&str) -> Option<String>,
    /// The DSN's own keys ([`OWN_KEYS`]), in order (the last one wins).
    own: Vec<(String, String)>,
    /// The service file's entry (`service=` or PGSERVICE), if any.
    service: Option<pgfiles::Service>,
}

impl Sources<'_> {
    fn env(&self, var: &str) -> Option<String> {
        (self.env)(var)
    }

    fn dsn_own(&self, key: &str) -> Option<String> {
        self.own.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    /// The service entry's `key` and where it came from.
    fn service_value(&self, key: &str) -> Option<(String, String)> {
        let s = self.service.as_ref()?;
        s.get(key).map(|v| (v.to_string(), s.source_of(key)))
    }

    /// A value and where it came from: the DSN's own keys, the variable,
    /// the service.
    fn pick(&self, key: &str, var: &str) -> Option<(String, String)> {
        self.dsn_own(key)
            .map(|v| (v, format!("--dsn {key}")))
            .or_else(|| self.env(var).map(|v| (v, var.to_string())))
            .or_else(|| self.service_value(key))
    }

    /// A value the client library read from the DSN if it was there: else
    /// the variable, else the service.
    fn env_or_service(&self, var: &str, key: &str) -> Option<(String, String)> {
        self.env(var)
            .map(|v| (v, var.to_string()))
            .or_else(|| self.service_value(key))
    }
}

/// The service file's entry named by the DSN's `service=`, else PGSERVICE.
fn find_service(src: &Sources, home: Option<&Path>) -> Result<Option<pgfiles::Service>, Error> {
    let service = match src.dsn_own("service") {
        Some(name) => Some((name, "--dsn service")),
        None => src.env("PGSERVICE").map(|n| (n, "PGSERVICE")),
    };
    service
        .map(|(name, source)| pgfiles::find_service(&name, source, home, src.env))
        .transpose()
}

/// Hosts and host addresses when the DSN gave none: PGHOST and PGHOSTADDR,
/// else the service's, else libpq's default socket directory.
fn set_hosts(config: &mut Config, src: &Sources) -> Result<(), Error> {
    if !(config.get_hosts().is_empty() && config.get_hostaddrs().is_empty()) {
        return Ok(());
    }
    let hosts = match src.env("PGHOST") {
        Some(h) => Some(h),
        None if src.env("PGHOSTADDR").is_none() => src.service_value("host").map(|(h, _)| h),
        None => None,
    };
    let addrs = match src.env("PGHOSTADDR") {
        Some(a) => Some((a, "PGHOSTADDR".to_string())),
        None if hosts.is_none() => src.service_value("hostaddr"),
        None => None,
    };
    if let Some(hosts) = &hosts {
        for h in hosts.split(',') {
            add_host(config, h);
        }
    }
    if let Some((addrs, source)) = &addrs {
        for a in addrs.split(',') {
            let ip: IpAddr = a
                .trim()
                .parse()
                .map_err(|_| Error::Settings(format!("{source}: '{}' is not an IP address", escape_untrusted(a))))?;
            config.hostaddr(ip);
        }
    }
    if hosts.is_none() && addrs.is_none() {
        config.host_path(default_socket_dir());
    }
    Ok(())
}

/// The port when the DSN gave none: PGPORT, the service's, else 5432.
fn set_port(config: &mut Config, src: &Sources) -> Result<(), Error> {
    if config.get_ports().is_empty() {
        let port =
            match src.env_or_service("PGPORT", "port") {
                Some((p, source)) => p.trim().parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(|| {
                    Error::Settings(format!("{source}: '{}' is not a port number", escape_untrusted(&p)))
                })?,
                None => 5432,
            };
        config.port(port);
    }
    Ok(())
}

/// User, database, password and options where the DSN gave none; returns
/// where the password came from.
fn set_login(config: &mut Config, src: &Sources) -> Option<String> {
    if config.get_user().is_none() {
        if let Some((user, _)) = src.env_or_service("PGUSER", "user") {
            config.user(&user);
        }
    }
    if config.get_dbname().is_none() {
        if let Some((db, _)) = src.env_or_service("PGDATABASE", "dbname") {
            config.dbname(&db);
        }
    }
    let mut password_source = None;
    if config.get_password().is_none() {
        if let Some((pw, source)) = src.env_or_service("PGPASSWORD", "password") {
            config.password(pw);
            password_source = Some(source);
        }
    } else {
        password_source = Some("--dsn password".to_string());
    }
    if config.get_options().is_none() {
        if let Some((options, _)) = src.env_or_service("PGOPTIONS", "options") {
            config.options(&options);
        }
    }
    password_source
}

/// `connect_timeout` when the DSN set none: PGCONNECT_TIMEOUT, the
/// service's, else [`DEFAULT_CONNECT_TIMEOUT`].
fn env_connect_timeout(src: &Sources) -> Result<Option<Duration>, Error> {
    let Some((t, source)) = src.env_or_service("PGCONNECT_TIMEOUT", "connect_timeout") else {
        return Ok(Some(DEFAULT_CONNECT_TIMEOUT));
    };
    let secs: i64 = t.trim().parse().map_err(|_| {
        Error::Settings(format!(
            "{source}: '{}' is not a number of seconds",
            escape_untrusted(&t)
        ))
    })?;
    Ok(libpq_timeout(secs))
}

/// TLS: each setting from the DSN, else its PGSSL* variable, else the
/// service; on a unix socket (`unix_socket`) no file is read.
fn plan_tls(src: &Sources, home: Option<&Path>, unix_socket: bool) -> Result<tls::Tls, Error> {
    let setting = |key: &str, var: &str| src.pick(key, var).map(|(value, source)| tls::Setting { value, source });
    let ssl_mode = src
        .pick("sslmode", "PGSSLMODE")
        .map(|(value, source)| tls::SslMode::parse(&source, &value))
        .transpose()?;
    if unix_socket {
        return tls::not_used(ssl_mode);
    }
    tls::plan(
        &tls::TlsSettings {
            mode: ssl_mode,
            root_cert: setting("sslrootcert", "PGSSLROOTCERT"),
            cert: setting("sslcert", "PGSSLCERT"),
            key: setting("sslkey", "PGSSLKEY"),
            crl: setting("sslcrl", "PGSSLCRL"),
        },
        home,
    )
}

/// libpq's reading of a connect_timeout in seconds: 0 or less is no limit,
/// 1 is raised to 2.
fn libpq_timeout(secs: i64) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(secs.max(2) as u64))
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

fn describe(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => PathBuf::from(path).display().to_string(),
        })
        .collect();
    let addrs: Vec<String> = config.get_hostaddrs().iter().map(|a| a.to_string()).collect();
    let ports: Vec<String> = config.get_ports().iter().map(|p| p.to_string()).collect();
    let mut parts: Vec<String> = [("host", hosts), ("hostaddr", addrs), ("port", ports)]
        .into_iter()
        .filter(|(_, values)| !values.is_empty())
        .map(|(key, values)| format!("{key}={}", values.join(",")))
        .collect();
    parts.extend(config.get_user().map(|user| format!("user={user}")));
    parts.extend(config.get_dbname().map(|db| format!("dbname={db}")));
    parts.join(" ")
}

#[cfg(test)]
mod tests;

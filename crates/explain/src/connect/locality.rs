//! Whether the server shares this machine (and so its clocks): every host a
//! unix-socket directory, every host loopback, or possibly another machine.

use serde::Serialize;
use std::net::IpAddr;
use tokio_postgres::config::Host;
use tokio_postgres::Config;

/// Whether the server shares this machine (and so its clocks).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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

/// Where `config`'s hosts (or, when given, its host addresses) are.
pub(crate) fn locality(config: &Config) -> Locality {
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

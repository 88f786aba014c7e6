//! libpq's two connection files, read as libpq reads them (bounded, through
//! [`clockscope_system::input`]):
//!
//! - the service file: `[name]` sections of `key=value` lines, `#` comments.
//!   A service is looked up in PGSERVICEFILE (else `~/.pg_service.conf`),
//!   then in `PGSYSCONFDIR/pg_service.conf` (else Debian's
//!   `/etc/postgresql-common/pg_service.conf`); a name found in neither is
//!   an error naming the files searched.
//! - the password file (`passfile=`, PGPASSFILE, else `~/.pgpass`): lines of
//!   `hostname:port:database:username:password`, `*` matching anything in the
//!   first four fields, `\` escaping `:` and `\`, `#` comments; the first
//!   matching line wins. A file that group or others can read is ignored with
//!   libpq's warning on stderr; a missing file is ignored.
//!
//! A default file (one no setting named: `~/.pgpass`, `~/.pg_service.conf`,
//! the system service file, and `crate::tls`'s `~/.postgresql/*`) whose path
//! cannot be looked at is absent, as libpq treats it ([`default_file_absent`]):
//! HOME that does not exist, is not a directory (`HOME=/dev/null`) or may not
//! be searched by this user is no error.
//!
//! Stricter than libpq, on purpose: a password-file line with fewer than five
//! fields is an error naming the file and the line (libpq skips it silently,
//! and the login then fails with "password missing").
//!
//! Written by hand: no maintained crate reads these files.

use crate::error::Error;
use clockscope_system::escape::escape_untrusted;
use clockscope_system::input::{self, InputLimit};
use std::path::{Path, PathBuf};
use tokio_postgres::config::Host;
use tokio_postgres::Config;

/// libpq's compiled-in socket directories: Debian's, then upstream's.
pub(crate) const DEFAULT_SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];

/// A service or password file: 1 MiB (real ones are a few kB).
pub(crate) const CONNECTION_FILE: InputLimit = InputLimit {
    kind: "libpq connection file",
    max_bytes: 1 << 20,
};

/// Where Debian's libpq looks for the system-wide service file.
pub(crate) const SYSCONFDIR: &str = "/etc/postgresql-common";

/// Whether a default file at `path` is absent as libpq sees it: its `stat`
/// fails because the path does not exist (ENOENT), runs through something
/// that is not a directory (ENOTDIR: `HOME=/dev/null`), or through a
/// directory this user may not search (EACCES). libpq's own tests are
/// `stat(...) != 0` for root.crt, root.crl, the service files and `.pgpass`
/// (any failure is "absent"), and ENOENT/ENOTDIR for postgresql.crt (where
/// libpq refuses on EACCES; here the certificate is not sent). Any other
/// failure (EIO, ELOOP, ...) is returned.
pub(crate) fn default_file_absent(path: &Path) -> std::io::Result<bool> {
    use std::io::ErrorKind::{NotADirectory, NotFound, PermissionDenied};
    match std::fs::metadata(path) {
        Ok(_) => Ok(false),
        Err(e) if matches!(e.kind(), NotFound | NotADirectory | PermissionDenied) => Ok(true),
        Err(e) => Err(e),
    }
}

/// Keys a service entry may set here.
const SERVICE_KEYS: [&str; 15] = [
    "host",
    "hostaddr",
    "port",
    "user",
    "dbname",
    "password",
    "passfile",
    "connect_timeout",
    "application_name",
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "sslcrl",
    "options",
];

/// A service file entry.
#[derive(Clone, Debug)]
pub(crate) struct Service {
    pub name: String,
    /// The file it was found in.
    pub file: PathBuf,
    entries: Vec<(String, String)>,
}

impl Service {
    /// The entry's value of `key` (the last one given).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// `service file PATH [name] key`, for messages.
    pub(crate) fn source_of(&self, key: &str) -> String {
        format!(
            "service file {} [{}] {key}",
            path_text(&self.file),
            escape_untrusted(&self.name)
        )
    }
}

/// A path as messages print it (escaped).
pub(crate) fn path_text(p: &Path) -> String {
    escape_untrusted(&p.display().to_string()).into_owned()
}

/// Finds service `name` (given by `source`: `--dsn service` or PGSERVICE).
pub(crate) fn find_service(
    name: &str,
    source: &str,
    home: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Service, Error> {
    // (file, whether it is a default no setting named)
    let user_file = match env("PGSERVICEFILE") {
        Some(f) => Some((PathBuf::from(f), false)),
        None => home.map(|h| (h.join(".pg_service.conf"), true)),
    };
    let sys_file = match env("PGSYSCONFDIR") {
        Some(dir) => (PathBuf::from(dir).join("pg_service.conf"), false),
        None => (PathBuf::from(SYSCONFDIR).join("pg_service.conf"), true),
    };
    let mut searched = Vec::new();
    for (file, default) in user_file.into_iter().chain([sys_file]) {
        searched.push(path_text(&file));
        if default && default_file_absent(&file).unwrap_or(false) {
            continue;
        }
        let text = match input::read_text(&file, &CONNECTION_FILE) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(Error::Settings(format!("{source}={}: {e}", escape_untrusted(name)))),
        };
        if let Some(entries) = parse_service(&text, name, &file)? {
            return Ok(Service {
                name: name.to_string(),
                file,
                entries,
            });
        }
    }
    Err(Error::Settings(format!(
        "{source}: definition of service \"{}\" not found (searched {})",
        escape_untrusted(name),
        searched.join(", ")
    )))
}

/// The entries of section `name` in a service file's `text`, if it has one.
fn parse_service(text: &str, name: &str, file: &Path) -> Result<Option<Vec<(String, String)>>, Error> {
    let mut in_section = false;
    let mut found = false;
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = || format!("service file {}, line {}", path_text(file), n + 1);
        if let Some(rest) = line.strip_prefix('[') {
            let Some(section) = rest.strip_suffix(']') else {
                return Err(Error::Settings(format!("{}: syntax error", at())));
            };
            if found {
                // libpq stops at the next section once the service is read.
                break;
            }
            in_section = section == name;
            found = in_section;
            continue;
        }
        if !in_section {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(Error::Settings(format!("{}: syntax error (key=value expected)", at())));
        };
        let key = key.trim();
        if key == "service" {
            return Err(Error::Settings(format!(
                "{}: nested service specifications not supported",
                at()
            )));
        }
        if !SERVICE_KEYS.contains(&key) {
            return Err(Error::Settings(format!(
                "{}: connection option \"{}\" is not supported here (supported: {})",
                at(),
                escape_untrusted(key),
                SERVICE_KEYS.join(", ")
            )));
        }
        entries.push((key.to_string(), value.trim().to_string()));
    }
    Ok(found.then_some(entries))
}

/// A password found in the password file.
#[derive(Clone, Debug)]
pub(crate) struct FoundPassword {
    pub password: String,
    /// `password file PATH line N`.
    pub source: String,
}

/// The password for `config`'s first host, port, database and user from the
/// password file (`passfile`: the setting and its source, else
/// `home`/.pgpass). `None` when the file is missing, ignored or has no match.
pub(crate) fn password_for(
    config: &Config,
    passfile: Option<(String, String)>,
    home: Option<&Path>,
) -> Result<Option<FoundPassword>, Error> {
    let (path, source) = match passfile {
        Some((p, source)) => (PathBuf::from(p), source),
        None => match home {
            Some(h) => {
                let path = h.join(".pgpass");
                if default_file_absent(&path).unwrap_or(false) {
                    return Ok(None);
                }
                (path, "password file (~/.pgpass)".to_string())
            }
            None => return Ok(None),
        },
    };
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::Settings(format!("{source}: {}: {e}", path_text(&path)))),
    };
    if !meta.is_file() {
        eprintln!("WARNING: password file \"{}\" is not a plain file", path_text(&path));
        return Ok(None);
    }
    if meta.mode() & 0o077 != 0 {
        // libpq's own warning, word for word; the file is then ignored.
        eprintln!(
            "WARNING: password file \"{}\" has group or world access; permissions should be u=rw (0600) or less",
            path_text(&path)
        );
        return Ok(None);
    }
    let text = input::read_text(&path, &CONNECTION_FILE).map_err(|e| Error::Settings(format!("{source}: {e}")))?;

    let host = match (config.get_hosts().first(), config.get_hostaddrs().first()) {
        (Some(Host::Tcp(name)), _) => name.clone(),
        (Some(Host::Unix(dir)), _) => {
            let dir = dir.display().to_string();
            // libpq matches its default socket directory as "localhost".
            if DEFAULT_SOCKET_DIRS.contains(&dir.trim_end_matches('/')) {
                "localhost".to_string()
            } else {
                dir
            }
        }
        (None, Some(addr)) => addr.to_string(),
        (None, None) => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = config
        .get_user()
        .map_or_else(|| whoami::username().unwrap_or_default(), str::to_string);
    let dbname = config.get_dbname().map(str::to_string).unwrap_or_else(|| user.clone());
    let wanted = [host.as_str(), port.as_str(), dbname.as_str(), user.as_str()];

    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields = split_pgpass_line(line).ok_or_else(|| {
            Error::Settings(format!(
                "{source}: {} line {}: not hostname:port:database:username:password",
                path_text(&path),
                n + 1
            ))
        })?;
        let matches = fields[..4]
            .iter()
            .zip(wanted)
            .all(|(field, want)| field == "*" || field == want);
        if matches {
            return Ok(Some(FoundPassword {
                password: fields[4].clone(),
                source: format!("password file {} line {}", path_text(&path), n + 1),
            }));
        }
    }
    Ok(None)
}

/// The five fields of a password-file line (`\` escapes the next
/// character; the password is the rest of the line, unescaped).
fn split_pgpass_line(line: &str) -> Option<[String; 5]> {
    let mut fields: Vec<String> = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut()?.push(chars.next()?),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut()?.push(c),
        }
    }
    fields.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn pgpass_lines_split_with_escapes() {
        assert_eq!(
            split_pgpass_line("h:5432:db:u:pw").unwrap(),
            ["h", "5432", "db", "u", "pw"].map(String::from)
        );
        assert_eq!(
            split_pgpass_line(r"h\:x:*:db:u:p\:w:rest\\").unwrap(),
            ["h:x", "*", "db", "u", r"p:w:rest\"].map(String::from)
        );
        assert!(split_pgpass_line("h:5432:db:u").is_none());
        assert!(split_pgpass_line(r"h:5432:db:u:pw\").is_none());
    }

    fn config(dsn: &str) -> Config {
        dsn.parse().unwrap()
    }

    fn write_private(path: &Path, text: &str, mode: u32) {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_first_matching_line_wins_and_wildcards_match() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".pgpass");
        write_private(
            &file,
            "# comment\nother:5432:*:*:no\nlocalhost:5433:*:alice:first\n*:*:*:alice:second\n",
            0o600,
        );
        let find = |dsn: &str| {
            password_for(&config(dsn), None, Some(dir.path()))
                .unwrap()
                .map(|f| (f.password, f.source))
        };
        let (pw, source) = find("host=localhost port=5433 user=alice dbname=x").unwrap();
        assert_eq!(pw, "first");
        assert!(source.ends_with(".pgpass line 3"), "{source}");
        assert_eq!(find("host=db port=1 user=alice").unwrap().0, "second");
        // The default socket directory is "localhost".
        assert_eq!(find("host=/tmp port=5433 user=alice").unwrap().0, "first");
        assert!(find("host=db port=1 user=bob").is_none());
    }

    #[test]
    fn a_file_others_can_read_is_ignored_and_a_bad_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pass");
        write_private(&file, "*:*:*:*:pw\n", 0o644);
        let named = Some((file.display().to_string(), "PGPASSFILE".to_string()));
        assert!(password_for(&config("host=h user=u"), named.clone(), None)
            .unwrap()
            .is_none());
        write_private(&file, "*:*:*:*:pw\nbroken:line\n", 0o600);
        // The first line matches before the bad one is reached.
        assert!(password_for(&config("host=h user=u"), named.clone(), None)
            .unwrap()
            .is_some());
        write_private(&file, "broken:line\n*:*:*:*:pw\n", 0o600);
        let e = password_for(&config("host=h user=u"), named, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("PGPASSFILE: ") && e.ends_with("pass line 1: not hostname:port:database:username:password"),
            "{e}"
        );
    }

    #[test]
    fn services_are_found_in_the_user_file_then_the_system_file() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let sys = dir.path().join("etc");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&sys).unwrap();
        std::fs::write(
            home.join(".pg_service.conf"),
            "# mine\n[a]\nhost=h1\nport = 5433\n\n[b]\nhost=hb\n",
        )
        .unwrap();
        std::fs::write(sys.join("pg_service.conf"), "[a]\nhost=sys\n[c]\nuser=cu\n").unwrap();
        let sysdir = sys.display().to_string();
        let env = move |k: &str| (k == "PGSYSCONFDIR").then(|| sysdir.clone());
        let a = find_service("a", "PGSERVICE", Some(&home), &env).unwrap();
        assert_eq!(
            (a.get("host"), a.get("port"), a.get("user")),
            (Some("h1"), Some("5433"), None)
        );
        let c = find_service("c", "PGSERVICE", Some(&home), &env).unwrap();
        assert_eq!(c.get("user"), Some("cu"));
        assert!(c.source_of("user").ends_with("pg_service.conf [c] user"));
        let e = find_service("nope", "--dsn service", Some(&home), &env)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--dsn service: definition of service \"nope\" not found (searched "),
            "{e}"
        );
        std::fs::write(home.join(".pg_service.conf"), "[a]\nsslmode\n").unwrap();
        let e = find_service("a", "PGSERVICE", Some(&home), &env)
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(".pg_service.conf, line 2: syntax error (key=value expected)"),
            "{e}"
        );
    }
}

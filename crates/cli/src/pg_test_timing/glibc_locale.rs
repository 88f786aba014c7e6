//! glibc's compiled locale data, read without glibc: whether a locale
//! exists for a category, and its `LC_NUMERIC` decimal point. So the static
//! (musl) binary prints `63,08` under `LANG=de_DE.UTF-8` on a glibc host,
//! as PostgreSQL does, and the glibc binary needs no `setlocale` (which
//! would change its own C library's number parsing behind our back).
//!
//! Where glibc looks (`_nl_find_locale`): with `LOCPATH` set, only its
//! directories, `<dir>/<name>/LC_<CATEGORY>`; otherwise the archive
//! `/usr/lib/locale/locale-archive` (names stored with the codeset
//! normalised, `de_DE.utf8`), then `/usr/lib/locale/<name>/`. A category
//! file is `magic, nstrings, offsets[nstrings], data`; `LC_NUMERIC`'s magic
//! is `0x20031115 ^ 1` and its item 0 is `DECIMAL_POINT` (`RADIXCHAR`).
//!
//! Hand-written: no crate reads glibc's locale files. Every read is bounded
//! ([`MAX_ARCHIVE_BYTES`], [`MAX_CATEGORY_BYTES`]) and checked; anything
//! unexpected reads as "no such locale" or ".".

use std::io::Read;
use std::path::{Path, PathBuf};

/// glibc's locale directory.
pub const GLIBC_LOCALE_DIR: &str = "/usr/lib/locale";
/// Largest `locale-archive` read (Debian's with every locale is ~230 MiB;
/// only its header, name table and the needed record are read).
const MAX_ARCHIVE_BYTES: u64 = 1 << 30;
/// Largest category file or record read.
const MAX_CATEGORY_BYTES: u64 = 1 << 20;
const ARCHIVE_MAGIC: u32 = 0xde02_0109;

/// The categories `setlocale(LC_ALL, "")` sets, each numbered as glibc
/// numbers it (`LC_ALL` is 6, so the later ones skip it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    Ctype = 0,
    Numeric = 1,
    Time = 2,
    Collate = 3,
    Monetary = 4,
    Messages = 5,
    Paper = 7,
    Name = 8,
    Address = 9,
    Telephone = 10,
    Measurement = 11,
    Identification = 12,
}

impl Category {
    /// Every category of `LC_ALL`.
    pub const ALL: [Category; 12] = [
        Category::Ctype,
        Category::Numeric,
        Category::Time,
        Category::Collate,
        Category::Monetary,
        Category::Messages,
        Category::Paper,
        Category::Name,
        Category::Address,
        Category::Telephone,
        Category::Measurement,
        Category::Identification,
    ];

    /// Its environment variable and file name.
    pub const fn env_name(self) -> &'static str {
        match self {
            Category::Ctype => "LC_CTYPE",
            Category::Numeric => "LC_NUMERIC",
            Category::Time => "LC_TIME",
            Category::Collate => "LC_COLLATE",
            Category::Monetary => "LC_MONETARY",
            Category::Messages => "LC_MESSAGES",
            Category::Paper => "LC_PAPER",
            Category::Name => "LC_NAME",
            Category::Address => "LC_ADDRESS",
            Category::Telephone => "LC_TELEPHONE",
            Category::Measurement => "LC_MEASUREMENT",
            Category::Identification => "LC_IDENTIFICATION",
        }
    }

    /// glibc's category number.
    const fn index(self) -> usize {
        self as usize
    }
}

/// glibc's `_nl_normalize_codeset`: letters lowercased, digits kept,
/// everything else dropped; all-digit codesets get an `iso` prefix.
pub fn normalize_codeset(codeset: &str) -> String {
    let kept: String = codeset
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if !kept.is_empty() && kept.chars().all(|c| c.is_ascii_digit()) {
        format!("iso{kept}")
    } else {
        kept
    }
}

/// `name` with its codeset normalised (`de_DE.UTF-8` -> `de_DE.utf8`).
fn normalized_name(name: &str) -> String {
    let (rest, modifier) = name.split_once('@').map_or((name, None), |(r, m)| (r, Some(m)));
    let mut out = match rest.split_once('.') {
        Some((base, cs)) => format!("{base}.{}", normalize_codeset(cs)),
        None => rest.to_string(),
    };
    if let Some(m) = modifier {
        out.push('@');
        out.push_str(m);
    }
    out
}

/// glibc refuses names that could leave the locale directories.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() < 256 && !name.contains('/') && name != "." && name != ".."
}

fn read_at(file: &mut std::fs::File, off: u64, len: u64) -> Option<Vec<u8>> {
    use std::io::Seek;
    if len > MAX_CATEGORY_BYTES.max(4 << 20) {
        return None;
    }
    file.seek(std::io::SeekFrom::Start(off)).ok()?;
    let mut buf = Vec::new();
    file.take(len).read_to_end(&mut buf).ok()?;
    (buf.len() as u64 == len).then_some(buf)
}

fn u32_ne(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Finds locales where glibc does.
pub struct Finder {
    locpath: Option<Vec<PathBuf>>,
    dir: PathBuf,
}

impl Finder {
    /// glibc's search: `LOCPATH`'s directories when set, else `dir`'s
    /// archive then its subdirectories.
    pub fn new(dir: &Path, locpath: Option<&str>) -> Finder {
        Finder {
            locpath: locpath.map(|p| p.split(':').filter(|d| !d.is_empty()).map(PathBuf::from).collect()),
            dir: dir.to_path_buf(),
        }
    }

    /// The category's data of locale `name`, bounded.
    /// `read`: false only asks whether it exists (an empty vector).
    fn category_data(&self, name: &str, cat: Category, read: bool) -> Option<Vec<u8>> {
        if !valid_name(name) {
            return None;
        }
        let dirs: Vec<PathBuf> = match &self.locpath {
            Some(dirs) => dirs.clone(),
            None => {
                if let Some(d) = self.in_archive(name, cat, read) {
                    return Some(d);
                }
                vec![self.dir.clone()]
            }
        };
        for dir in dirs {
            for variant in name_variants(name) {
                let path = dir.join(&variant).join(cat.env_name());
                let data = if path.is_dir() {
                    // LC_MESSAGES is a directory holding SYS_LC_MESSAGES.
                    path.join("SYS_LC_MESSAGES").is_file().then(Vec::new)
                } else if !read {
                    path.is_file().then(Vec::new)
                } else {
                    let mut buf = Vec::new();
                    std::fs::File::open(&path)
                        .ok()
                        .and_then(|f| f.take(MAX_CATEGORY_BYTES).read_to_end(&mut buf).ok())
                        .map(|_| buf)
                };
                if data.is_some() {
                    return data;
                }
            }
        }
        None
    }

    /// The record of `name` for `cat` in the locale archive.
    fn in_archive(&self, name: &str, cat: Category, read: bool) -> Option<Vec<u8>> {
        let mut f = std::fs::File::open(self.dir.join("locale-archive")).ok()?;
        if f.metadata().ok()?.len() > MAX_ARCHIVE_BYTES {
            return None;
        }
        let head = read_at(&mut f, 0, 56)?;
        if u32_ne(&head, 0)? != ARCHIVE_MAGIC {
            return None;
        }
        let (hash_off, hash_size) = (u32_ne(&head, 8)? as u64, u32_ne(&head, 16)? as u64);
        let (string_off, string_size) = (u32_ne(&head, 20)? as u64, u32_ne(&head, 28)? as u64);
        if hash_size > 1 << 20 || string_size > 64 << 20 {
            return None;
        }
        let table = read_at(&mut f, hash_off, hash_size * 12)?;
        let strings = read_at(&mut f, string_off, string_size)?;
        let wanted = [name.to_string(), normalized_name(name)];
        for entry in table.chunks_exact(12) {
            let (name_off, locrec_off) = (u32_ne(entry, 4)? as u64, u32_ne(entry, 8)? as u64);
            if name_off == 0 || name_off < string_off {
                continue;
            }
            let start = usize::try_from(name_off - string_off).ok()?;
            let Some(rest) = strings.get(start..) else { continue };
            let stored = rest.split(|&b| b == 0).next().unwrap_or_default();
            if wanted.iter().any(|w| w.as_bytes() == stored) {
                let rec = read_at(&mut f, locrec_off + 4 + cat.index() as u64 * 8, 8)?;
                let (off, len) = (u32_ne(&rec, 0)? as u64, u32_ne(&rec, 4)? as u64);
                if !read {
                    return (len > 0).then(Vec::new);
                }
                return (len <= MAX_CATEGORY_BYTES).then(|| read_at(&mut f, off, len)).flatten();
            }
        }
        None
    }

    /// glibc would load `cat` of `name`.
    pub fn exists(&self, name: &str, cat: Category) -> bool {
        self.category_data(name, cat, false).is_some()
    }

    /// `localeconv()->decimal_point` of `name`'s `LC_NUMERIC`; `None` when
    /// missing or malformed (or not printable UTF-8 of at most 8 bytes).
    pub fn decimal_point(&self, name: &str) -> Option<String> {
        let data = self.category_data(name, Category::Numeric, true)?;
        let magic = u32_ne(&data, 0)?;
        if magic != 0x2003_1115 ^ 1 || u32_ne(&data, 4)? == 0 {
            return None;
        }
        let off = u32_ne(&data, 8)? as usize;
        let s = data.get(off..)?.split(|&b| b == 0).next()?;
        let s = std::str::from_utf8(s).ok()?;
        (!s.is_empty() && s.len() <= 8 && !s.chars().any(char::is_control)).then(|| s.to_string())
    }
}

/// gettext's and glibc's name variants, most specific first:
/// `ll_CC.codeset@mod`, with the codeset normalised (`UTF-8` -> `utf8`),
/// then without the codeset, the territory, the modifier.
pub fn name_variants(name: &str) -> Vec<String> {
    let (rest, modifier) = name.split_once('@').map_or((name, None), |(r, m)| (r, Some(m)));
    let (rest, codeset) = rest.split_once('.').map_or((rest, None), |(r, c)| (r, Some(c)));
    let (language, territory) = rest.split_once('_').map_or((rest, None), |(l, t)| (l, Some(t)));
    let norm = codeset.map(normalize_codeset);
    let mut out: Vec<String> = Vec::new();
    // Repeated names (no modifier, territory or codeset to leave out) are kept once.
    for m in [modifier, None] {
        for t in [territory, None] {
            for c in [codeset, norm.as_deref(), None] {
                let mut s = language.to_string();
                if let Some(t) = t {
                    s.push('_');
                    s.push_str(t);
                }
                if let Some(c) = c {
                    s.push('.');
                    s.push_str(c);
                }
                if let Some(m) = m {
                    s.push('@');
                    s.push_str(m);
                }
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
    }
    out
}

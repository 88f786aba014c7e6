//! The facts the README and the guide (docs/) state, checked against the tree:
//! every relative link resolves; the README stays short (at most 220 lines of
//! at most 120 columns); the user docs hold no working notes ("issue 13",
//! "this session"; docs/dev/ holds developers' notes) or a third party's copy of PostgreSQL; the Rust version they
//! name is `rust-version` in Cargo.toml; sizes of built artefacts are stated
//! only in bench/README.md, and each is within 10% of the artefact when it is
//! built here (a visible skip when it is not).

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// README.md and every Markdown file under docs/.
fn user_docs() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(dir) = dirs.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The file's lines outside fenced code blocks, with their line numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// The targets of the inline Markdown links `[text](target)` on a line.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        match after.find(')') {
            Some(end) => {
                out.push(&after[..end]);
                rest = &after[end..];
            }
            None => break,
        }
    }
    out
}

#[test]
fn link_scan_finds_links() {
    assert_eq!(link_targets("see [a](b.md) and [`c`](../d/#x)."), ["b.md", "../d/#x"]);
    assert_eq!(prose("a\n```\n[x](y)\n```\nb"), [(1, "a"), (5, "b")]);
}

#[test]
fn every_relative_link_resolves() {
    let mut checked = 0;
    let mut broken = Vec::new();
    for file in user_docs().into_iter().chain([root().join("bench/README.md")]) {
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in prose(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") || target.starts_with('#') {
                    continue;
                }
                let path = target.split('#').next().unwrap();
                checked += 1;
                if !file.parent().unwrap().join(path).exists() {
                    broken.push(format!("{}:{n}: {target}", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "links that do not resolve:\n{}", broken.join("\n"));
    assert!(checked > 30, "only {checked} relative links found: the scan is broken");
}

#[test]
fn readme_is_short_and_narrow() {
    let text = fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() <= 220, "README.md has {} lines (at most 220)", lines.len());
    for (i, line) in lines.iter().enumerate() {
        assert!(
            line.chars().count() <= 120,
            "README.md:{}: {} columns",
            i + 1,
            line.chars().count()
        );
    }
    // The two commands, as CI runs the second, within the first screen.
    let first_screen = lines[..lines.len().min(40)].join("\n");
    assert!(first_screen.contains("cargo run --release -p clockscope-cli --bin clockscope"));
    assert!(first_screen.contains("./scripts/test.sh"));
    let ci = fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(ci.contains("exec ./scripts/test.sh"), "{ci}");
}

#[test]
fn user_docs_hold_no_working_notes() {
    let banned = [
        "this session",
        "not available this session",
        "ananya-l",
        "dbis-project",
        "described above",
    ];
    let mut found = Vec::new();
    // docs/dev/ holds developers' working notes (kernel message formats and their sources).
    let dev = root().join("docs/dev");
    for file in user_docs().into_iter().filter(|f| !f.starts_with(&dev)) {
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in prose(&text) {
            let lower = line.to_lowercase();
            for b in banned {
                if lower.contains(b) {
                    found.push(format!("{}:{n}: {b}", file.display()));
                }
            }
            // "issue 13", "issue #13"
            let words: Vec<&str> = lower.split_whitespace().collect();
            for w in words.windows(2) {
                if w[0].trim_start_matches('(') == "issue"
                    && w[1].trim_start_matches('#').starts_with(|c: char| c.is_ascii_digit())
                {
                    found.push(format!("{}:{n}: {} {}", file.display(), w[0], w[1]));
                }
            }
        }
    }
    assert!(found.is_empty(), "working notes in user docs:\n{}", found.join("\n"));
}

#[test]
fn rust_version_is_cargo_tomls() {
    let manifest = fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("rust-version in Cargo.toml");
    let mut named = 0;
    for file in user_docs() {
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(i) = rest.find("Rust ") {
                let v: String = rest[i + 5..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                let v = v.trim_end_matches('.');
                if v.contains('.') {
                    named += 1;
                    assert_eq!(
                        v,
                        version,
                        "{}:{}: Rust {v}, but rust-version is {version}",
                        file.display(),
                        n + 1
                    );
                }
                rest = &rest[i + 5..];
            }
        }
    }
    assert!(named >= 1, "the README names no Rust version");
}

/// `1,234,567` -> 1234567.
fn bytes(cell: &str) -> Option<u64> {
    let digits: String = cell
        .chars()
        .filter(|c| *c != ',')
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// The rows of bench/README.md's table of built artefacts: (path, bytes).
fn stated_sizes() -> Vec<(String, u64)> {
    let text = fs::read_to_string(root().join("bench/README.md")).unwrap();
    let section = text
        .split("## What the install commands build")
        .nth(1)
        .expect("the artefact section");
    let section = section.split("\n## ").next().unwrap();
    let mut rows = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `target/")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let path = cells[1].trim_matches('`').to_string();
        let size = bytes(cells[2]).unwrap_or_else(|| panic!("no byte count in: {line}"));
        rows.push((path, size));
    }
    rows
}

/// The file a stated path names, `*` matching within the last component.
fn artefact(path: &str) -> Option<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from);
    let rel = Path::new(path).strip_prefix("target").unwrap();
    let full = target.join(rel);
    let name = full.file_name()?.to_str()?.to_string();
    if let Some((pre, post)) = name.split_once('*') {
        let mut found: Vec<PathBuf> = fs::read_dir(full.parent()?)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(pre) && n.ends_with(post))
            })
            .collect();
        found.sort();
        return found.pop();
    }
    full.is_file().then_some(full)
}

#[test]
fn stated_sizes_match_the_built_artefacts() {
    let rows = stated_sizes();
    assert!(rows.len() >= 2, "bench/README.md states {} artefact sizes", rows.len());
    for (path, stated) in rows {
        let Some(file) = artefact(&path) else {
            skip!(optional: "{path} is not built here (bench/README.md states {stated} bytes)");
            continue;
        };
        let actual = fs::metadata(&file).unwrap().len();
        let ratio = actual as f64 / stated as f64;
        assert!(
            (0.9..=1.1).contains(&ratio),
            "{}: {actual} bytes, bench/README.md states {stated} ({:+.1}%): measure again and update it",
            file.display(),
            (ratio - 1.0) * 100.0
        );
    }
}

#[test]
fn artefact_sizes_are_stated_only_in_bench_readme() {
    // A byte count on a line about a binary or a package belongs in bench/README.md.
    for file in user_docs() {
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in prose(&text) {
            let about_artefact = line.contains(".deb") || line.contains("binary") || line.contains("target/");
            let has_size = line.split_whitespace().collect::<Vec<_>>().windows(2).any(|w| {
                bytes(w[0]).is_some_and(|b| b >= 1000)
                    && ["bytes", "MiB", "MB", "KiB"]
                        .iter()
                        .any(|u| w[1].trim_end_matches([',', ';', ')']) == *u)
            });
            assert!(
                !(about_artefact && has_size),
                "{}:{n}: an artefact size outside bench/README.md: {line}",
                file.display()
            );
        }
    }
}

/// The "Where is X" table of docs/development.md: every path it names exists
/// and every item it names is in the first file of its row.
#[test]
fn the_where_is_table_matches_the_tree() {
    let doc = fs::read_to_string(root().join("docs/development.md")).unwrap();
    let start = doc
        .find("## Where is X")
        .expect("docs/development.md has a `## Where is X` section");
    let section = &doc[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    let mut rows = 0;
    let mut failures = Vec::new();
    for line in section[..end]
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| What"))
    {
        let cells: Vec<&str> = line.split(" | ").collect();
        let ticked = |cell: &str| -> Vec<String> { cell.split('`').skip(1).step_by(2).map(str::to_string).collect() };
        let paths = ticked(cells.get(1).copied().unwrap_or(""));
        if paths.is_empty() {
            failures.push(format!("no path in: {line}"));
            continue;
        }
        rows += 1;
        for p in &paths {
            if !root().join(p).exists() {
                failures.push(format!("{p}: no such path"));
            }
        }
        for item in ticked(cells.get(2).copied().unwrap_or("")) {
            let text = fs::read_to_string(root().join(&paths[0])).unwrap_or_default();
            if !text.contains(&item) {
                failures.push(format!("{}: no `{item}`", paths[0]));
            }
        }
    }
    assert!(rows >= 20, "only {rows} rows in the Where is X table");
    assert!(
        failures.is_empty(),
        "docs/development.md's Where is X table:\n{}",
        failures.join("\n")
    );
}

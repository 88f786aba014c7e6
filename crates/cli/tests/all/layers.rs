//! The layers the docs promise, checked on the source: no file-level import
//! cycle in any crate of the workspace, the CLI's commands (one folder each)
//! never import one another beyond the two by design and `report/` names no
//! command, every JSON is written through `report::json` (no other
//! `serde_json::to_writer`), and the library's lower layers never import
//! higher ones.
//!
//! The graph is built from the text of each file (comments and test-only
//! modules, `#[cfg(test)]` or a `cfg` naming `test`, left out): every `crate::a::b` path (in `use` trees and inline),
//! `super::` and `self::` paths, and `use child::...` of a module declared in
//! the file. A path names the deepest module that has a file of its own;
//! `mod.rs`, `a.rs` beside `a/`, and `lib.rs` map to their module. A hand
//! scan rather than `syn`: the workspace's code is formatted by rustfmt, and a
//! parser would add a dependency for a test that reads paths only.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One crate's files: module path (`a::b`, "" for the root) -> source file.
struct Crate {
    name: &'static str,
    modules: BTreeMap<String, PathBuf>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn collect(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if path.is_dir() {
            if prefix.is_empty() && name == "bin" {
                continue; // each binary is a crate of its own, a user of the library
            }
            let mut p = prefix.to_vec();
            p.push(name);
            collect(&path, &p, out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            let mut p = prefix.to_vec();
            if stem != "mod" && !(prefix.is_empty() && stem == "lib") {
                p.push(stem.to_string());
            }
            out.insert(p.join("::"), path);
        }
    }
}

fn load(name: &'static str, dir: &str) -> Crate {
    let mut modules = BTreeMap::new();
    collect(&workspace().join(dir), &[], &mut modules);
    Crate { name, modules }
}

/// The file's code: comments removed, string literals blanked, and the
/// `#[cfg(test)]` modules cut (tests may import anything).
fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' && (i == 0 || b[i - 1] != b'\'') {
            // A raw string r#"..."# is rare here and holds no path we count.
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    let mut kept = String::new();
    let mut lines = out.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if is_test_cfg(t) {
            if let Some(next) = lines.peek() {
                if next.trim_start().starts_with("mod ") && next.trim_end().ends_with('{') {
                    // Skip to the closing brace at the same indentation.
                    let indent = &next[..next.len() - next.trim_start().len()];
                    let close = format!("{indent}}}");
                    for l in lines.by_ref() {
                        if l.trim_end() == close {
                            break;
                        }
                    }
                    continue;
                }
            }
        }
        kept.push_str(line);
        kept.push('\n');
    }
    kept
}

/// `#[cfg(test)]`, or a `cfg` whose predicate names `test` (e.g.
/// `#[cfg(all(test, feature = "testing"))]`): a module compiled for unit
/// tests only.
fn is_test_cfg(attr: &str) -> bool {
    attr.starts_with("#[cfg(") && attr.split(|c: char| !is_ident(c)).any(|w| w == "test")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Expand a `use` tree (whitespace removed) into its paths.
fn expand(tree: &str, prefix: &str, out: &mut Vec<String>) {
    if let Some(open) = tree.find('{') {
        let head = &tree[..open];
        let inner = &tree[open + 1..tree.rfind('}').unwrap()];
        let mut depth = 0;
        let mut start = 0;
        let mut parts = Vec::new();
        for (k, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&inner[start..k]);
                    start = k + 1;
                }
                _ => {}
            }
        }
        parts.push(&inner[start..]);
        for p in parts.into_iter().filter(|p| !p.is_empty()) {
            expand(p, &format!("{prefix}{head}"), out);
        }
    } else {
        let path = tree.split(" as ").next().unwrap();
        out.push(format!("{prefix}{path}"));
    }
}

/// Every path the code names that starts with `crate::`, `super::`, `self::`
/// or (in `use` trees) another first segment.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    // `use` trees.
    let mut rest = code;
    while let Some(pos) = find_word(rest, "use ") {
        let after = &rest[pos + 4..];
        let end = after.find(';').unwrap_or(after.len());
        let tree: String = after[..end]
            .split_whitespace()
            .map(|t| if t == "as" { " as " } else { t })
            .collect();
        expand(&tree, "", &mut out);
        rest = &after[end..];
    }
    // Inline paths.
    for root in ["crate::", "super::", "self::"] {
        let mut rest = code;
        while let Some(pos) = find_word(rest, root) {
            let tail = &rest[pos..];
            let end = tail
                .char_indices()
                .find(|&(_, c)| !(is_ident(c) || c == ':'))
                .map_or(tail.len(), |(k, _)| k);
            out.push(tail[..end].to_string());
            rest = &tail[end..];
        }
    }
    out
}

/// Position of `word` in `s` not preceded by an identifier character or `::`.
fn find_word(s: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(k) = s[from..].find(word) {
        let at = from + k;
        let before = s[..at].chars().next_back();
        if !before.is_some_and(|c| is_ident(c) || c == ':') {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// Module path of a file's parent, for `super::`.
fn parent(module: &str) -> String {
    module.rsplit_once("::").map_or(String::new(), |(p, _)| p.to_string())
}

/// The modules one file imports (other than itself and its own children;
/// `mod` declarations are not imports).
fn imports(krate: &Crate, module: &str, file: &Path) -> BTreeSet<String> {
    let text = fs::read_to_string(file).unwrap();
    let mut targets = BTreeSet::new();
    for p in paths(&code(&text)) {
        let p = p.trim_end_matches(':');
        let mut segs: Vec<&str> = p.split("::").filter(|s| !s.is_empty()).collect();
        let mut base: Vec<String> = Vec::new();
        match segs.first().copied() {
            Some("crate") => {
                segs.remove(0);
            }
            Some("self") => {
                segs.remove(0);
                base = split(module);
            }
            Some("super") => {
                let mut m = module.to_string();
                while segs.first() == Some(&"super") {
                    segs.remove(0);
                    m = parent(&m);
                }
                base = split(&m);
            }
            Some(first) => {
                // `use child::...` of a module declared in this file.
                let child = join(&split(module), first);
                if !krate.modules.contains_key(&child) {
                    continue;
                }
                base = split(module);
            }
            None => continue,
        }
        let mut full = base;
        full.extend(segs.iter().map(|s| s.to_string()));
        // The deepest module with a file of its own.
        let mut target = None;
        for n in (1..=full.len()).rev() {
            let cand = full[..n].join("::");
            if krate.modules.contains_key(&cand) {
                target = Some(cand);
                break;
            }
        }
        // A module naming its own children (`pub use child::X`) contains
        // them; that is not an import between layers.
        let contains = |t: &String| t == module || module.is_empty() || t.starts_with(&format!("{module}::"));
        if let Some(t) = target.filter(|t| !contains(t)) {
            targets.insert(t);
        }
    }
    targets
}

fn split(module: &str) -> Vec<String> {
    module
        .split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn join(base: &[String], seg: &str) -> String {
    let mut v = base.to_vec();
    v.push(seg.to_string());
    v.join("::")
}

type Graph = BTreeMap<String, BTreeSet<String>>;

fn graph(krate: &Crate) -> Graph {
    krate
        .modules
        .iter()
        .map(|(m, f)| (m.clone(), imports(krate, m, f)))
        .collect()
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

fn describe(g: &Graph, comp: &[String]) -> String {
    let mut s = String::new();
    for m in comp {
        for t in &g[m] {
            if comp.contains(t) {
                s.push_str(&format!("    {m} -> {t}\n"));
            }
        }
    }
    s
}

#[test]
fn no_file_level_import_cycle_in_any_crate() {
    let mut failures = String::new();
    for krate in [
        load("clockscope", "crates/clockscope/src"),
        load("clockscope-system", "crates/system/src"),
        load("clockscope-pg", "crates/pg/src"),
        load("clockscope-explain", "crates/explain/src"),
        load("clockscope-cli", "crates/cli/src"),
    ] {
        let g = graph(&krate);
        for comp in cycles(&g) {
            failures.push_str(&format!(
                "{}: cycle among {comp:?}\n{}",
                krate.name,
                describe(&g, &comp)
            ));
        }
    }
    assert!(failures.is_empty(), "file-level import cycles:\n{failures}");
}

#[test]
fn commands_never_import_each_other_and_reports_never_import_commands() {
    // Each command is one folder (commands/<name>/: run, judge, model, text);
    // what several share is in commands/environment.rs or report/ (the
    // header, JSON, Prometheus, fitting text), which names no command. Two
    // commands build on another by design: `check -v` prints `tsc`'s evidence
    // and PostgreSQL 19 blocks, each `sweep` row is `check`'s verdict for
    // the system clock, and `sweep --dsn` runs `explain`'s measurement (with
    // its Ctrl-C handling) under each clocksource. commands/schema.rs lists
    // every command's model.
    const BUILDS_ON: &[(&str, &str)] = &[("check", "tsc"), ("sweep", "check"), ("sweep", "explain")];
    let shared = |c: &String| c.is_empty() || c == "environment" || c == "schema";
    let krate = load("clockscope-cli", "crates/cli/src");
    let mut failures = Vec::new();
    let command_of = |m: &str| -> Option<String> {
        let mut parts = m.split("::");
        (parts.next() == Some("commands")).then(|| parts.next().unwrap_or("").to_string())
    };
    for (module, file) in &krate.modules {
        let targets = imports(&krate, module, file);
        if module.starts_with("report") {
            failures.extend(
                targets
                    .iter()
                    .filter(|t| t.starts_with("commands"))
                    .map(|t| format!("{module} -> {t}")),
            );
            continue;
        }
        let Some(own) = command_of(module).filter(|c| !shared(c)) else {
            continue;
        };
        for t in &targets {
            if let Some(other) = command_of(t).filter(|c| !shared(c) && *c != own) {
                if BUILDS_ON.contains(&(own.as_str(), other.as_str())) {
                    continue;
                }
                failures.push(format!("{module} -> {t} (command {own} imports command {other})"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "commands import each other or report/ imports a command: {failures:#?}"
    );
}

/// The source files of the workspace's crates (tests and benches too).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.ends_with("target") {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_json_goes_through_report_json() {
    let mut files = Vec::new();
    rust_files(&workspace().join("crates"), &mut files);
    let own = workspace().join("crates/cli/src/report/json.rs");
    let mut failures = Vec::new();
    for file in files.iter().filter(|f| **f != own) {
        let text = code(&fs::read_to_string(file).unwrap());
        if text.contains("serde_json::to_writer") || text.contains("serde_json::Serializer") {
            failures.push(file.display().to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "JSON written past report::json (its escaping of C1 and bidi controls): {failures:?}"
    );
}

/// Each library crate's layers, bottom first: a module imports only modules
/// of its own layer or the ones below. Between crates the order is a compile
/// error already (`clockscope` <- `clockscope-system` <- `clockscope-pg`):
/// the published `clockscope` reads clocks; `clockscope-system` gathers and
/// judges the machine's evidence; `clockscope-pg` models PostgreSQL's loops.
const LIBRARY_LAYERS: &[(&str, &str, &[&[&str]])] = &[
    (
        "clockscope",
        "crates/clockscope/src",
        &[
            &["ticks", "convert"],
            // The counter instructions (arch/, the only unsafe besides
            // clock_gettime) and the clock sources built on them.
            &["arch", "clock", "counter"],
            &["calibrate", "measure"],
            &["trust"],
            &["instant"],
        ],
    ),
    (
        "clockscope-system",
        "crates/system/src",
        &[
            &["escape", "input", "stats", "forward"],
            // The kernel log's interpretation: plain text in; the
            // `/dev/kmsg` reader (linux) and everything above use it.
            &["kernel_log"],
            &["linux", "interference", "engine"],
            // What the counter's judges and its gatherer share: a
            // calibration's result, a decision line, time interposition.
            &["evidence"],
            &["arm", "tsc", "counter"],
            &["crosscpu"],
        ],
    ),
    (
        "clockscope-pg",
        "crates/pg/src",
        &[&["system_clock", "pg_loop"], &["predict"]],
    ),
];

fn layer(layers: &[&[&str]], module: &str) -> Option<usize> {
    let top = module.split("::").next().unwrap();
    layers.iter().position(|l| l.contains(&top))
}

#[test]
fn library_lower_layers_never_import_higher_ones() {
    let mut failures = String::new();
    for &(name, dir, layers) in LIBRARY_LAYERS {
        let krate = load(name, dir);
        let g = graph(&krate);
        for (from, targets) in &g {
            if from.is_empty() {
                continue; // lib.rs re-exports from every layer
            }
            let Some(lf) = layer(layers, from) else {
                failures.push_str(&format!("  {name}: {from}: not in LIBRARY_LAYERS\n"));
                continue;
            };
            for to in targets.iter().filter(|t| !t.is_empty()) {
                match layer(layers, to) {
                    Some(lt) if lt > lf => failures.push_str(&format!("  {name}: {from} -> {to}\n")),
                    None => failures.push_str(&format!("  {name}: {to}: not in LIBRARY_LAYERS\n")),
                    _ => {}
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "the library's lower layers import higher ones:\n{failures}"
    );
}

/// Files at their seams: no source file over 600 lines (inline tests count).
const MAX_SOURCE_LINES: usize = 600;

#[test]
fn no_source_file_over_600_lines() {
    let mut files = Vec::new();
    for dir in [
        "crates/clockscope/src",
        "crates/system/src",
        "crates/pg/src",
        "crates/explain/src",
        "crates/cli/src",
    ] {
        rust_files(&workspace().join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = fs::read_to_string(f).unwrap().lines().count();
            (n > MAX_SOURCE_LINES).then(|| format!("  {} ({n} lines)", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "source files over {MAX_SOURCE_LINES} lines (split them where their ideas part):\n{}",
        long.join("\n")
    );
}

/// The published `clockscope` crate stays the size of quanta: no public
/// module, and at most 30 items re-exported at its root (counted on x86-64,
/// where the three TSC reads are the architecture's counter types).
#[test]
fn the_published_crate_exports_at_most_30_items_and_no_module() {
    let lib = fs::read_to_string(workspace().join("crates/clockscope/src/lib.rs")).unwrap();
    assert!(
        !lib.lines().any(|l| l.trim_start().starts_with("pub mod ")),
        "crates/clockscope/src/lib.rs declares a public module: its API is the items re-exported at the root"
    );
    let mut items = BTreeSet::new();
    let mut skip_next = false;
    for line in lib.lines().map(str::trim).filter(|l| !l.starts_with("//")) {
        if line.starts_with("#[cfg(") {
            // Another architecture's counter types, or test support behind a feature.
            skip_next = line.contains("aarch64") || line.contains("testing") || line.contains("test,");
            continue;
        }
        if let Some(rest) = line.strip_prefix("pub use ") {
            if !std::mem::take(&mut skip_next) {
                let names = rest.trim_end_matches(';');
                let names = names.split_once('{').map_or(names, |(_, n)| n.trim_end_matches('}'));
                for n in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    items.insert(n.rsplit("::").next().unwrap().to_string());
                }
            }
        }
        skip_next = false;
    }
    assert!(items.len() >= 20, "only {} items found: {items:?}", items.len());
    assert!(
        items.len() <= 30,
        "the published crate exports {} items (at most 30): {items:?}",
        items.len()
    );
}

#!/usr/bin/env python3
"""Lines of Rust code under crates/*/src: no blank lines, no comments (// and /* */, doc comments included),
no tests and no test support: files named tests.rs or *_tests.rs, `testing/` folders and `testing.rs` files, items
under `#[cfg(test)]`, `#[cfg(all(test, ...))]` or `#[cfg(any(test, feature = "testing"))]` (what only tests or the
`testing` feature compile), and the files of modules declared under those attributes. The measure issue 33 asks for
("lines of src/, code, not tests or comments"). Usage: scripts/code-size.py [ROOT] (default: the repository)."""
import os
import re
import sys


TEST_ONLY = re.compile(r'^#\[cfg\((test|all\(test\b.*|any\(test, feature = "testing"\))\)\]$')


def is_test_only(line):
    """`#[cfg(test)]`, `#[cfg(all(test, ...))]` or `#[cfg(any(test, feature = "testing"))]`."""
    return bool(TEST_ONLY.match(line))


def test_only_modules(text):
    """Names of the modules `text` declares (`mod name;`) under a test-only attribute."""
    names = []
    lines = [line.strip() for line in text.split("\n")]
    for a, b in zip(lines, lines[1:]):
        m = re.match(r"^(?:pub(?:\([^)]*\))? )?mod (\w+);$", b)
        if m and is_test_only(a):
            names.append(m.group(1))
    return names


def code_lines(text):
    lines = text.split("\n")
    out = []
    in_block = False
    for line in lines:
        s = line.strip()
        if in_block:
            if "*/" in s:
                in_block = False
            continue
        if s.startswith("/*"):
            if "*/" not in s:
                in_block = True
            continue
        if not s or s.startswith("//"):
            continue
        out.append(s)
    # drop #[cfg(test)] items: the attribute and the braced block after it
    kept = []
    i = 0
    while i < len(out):
        if is_test_only(out[i]):
            j = i + 1
            depth = 0
            opened = False
            while j < len(out):
                depth += out[j].count("{") - out[j].count("}")
                if "{" in out[j]:
                    opened = True
                if opened and depth <= 0:
                    break
                if not opened and out[j].endswith(";"):
                    break
                j += 1
            i = j + 1
            continue
        kept.append(out[i])
        i += 1
    return len(kept)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    total = 0
    per_crate = {}
    for crate in sorted(os.listdir(os.path.join(root, "crates"))):
        src = os.path.join(root, "crates", crate, "src")
        paths = []
        for dirpath, _, files in os.walk(src):
            paths += [os.path.join(dirpath, f) for f in files if f.endswith(".rs")]
        texts = {}
        for path in paths:
            with open(path, encoding="utf-8") as fh:
                texts[path] = fh.read()
        # the files of modules only tests (or the testing feature) compile: a.rs or a/mod.rs, and below a/
        excluded = []
        for path, text in texts.items():
            d, f = os.path.split(path)
            base = d if f in ("mod.rs", "lib.rs", "main.rs") else os.path.join(d, f[:-3])
            excluded += [os.path.join(base, name) for name in test_only_modules(text)]
        for path in sorted(paths):
            rel = os.path.relpath(path, src)
            f = os.path.basename(path)
            if f in ("tests.rs", "testing.rs") or f.endswith("_tests.rs") or "testing" in rel.split(os.sep)[:-1]:
                continue
            if any(path == e + ".rs" or path.startswith(e + os.sep) for e in excluded):
                continue
            n = code_lines(texts[path])
            per_crate[crate] = per_crate.get(crate, 0) + n
            total += n
    for crate, n in per_crate.items():
        print(f"{crate:12} {n:6}")
    print(f"{'total':12} {total:6}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Lines of Rust code under crates/*/src: no blank lines, no comments (// and /* */, doc comments included),
no unit tests (files named tests.rs or *_tests.rs, and `#[cfg(test)]` modules). The measure issue 33 asks for
("lines of src/, code, not tests or comments"). Usage: scripts/code-size.py [ROOT] (default: the repository)."""
import os
import re
import sys


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
        if out[i].startswith("#[cfg(test)]"):
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
        for dirpath, _, files in os.walk(src):
            for f in files:
                if not f.endswith(".rs") or f == "tests.rs" or f.endswith("_tests.rs") or "/testing" in dirpath:
                    continue
                with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                    n = code_lines(fh.read())
                per_crate[crate] = per_crate.get(crate, 0) + n
                total += n
    for crate, n in per_crate.items():
        print(f"{crate:12} {n:6}")
    print(f"{'total':12} {total:6}")


if __name__ == "__main__":
    main()

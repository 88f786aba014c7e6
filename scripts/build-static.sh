#!/usr/bin/env bash
# Builds fully static, stripped x86-64 binaries of `clockscope` and
# `pg_test_timing` (target x86_64-unknown-linux-musl): no glibc, no dynamic
# loader, so they run on any x86-64 Linux (RHEL 8, Ubuntu 20.04, Debian 11...).
# Installs what is missing: the rustup target and Debian's musl-tools.
# Output: ${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-musl/release/{clockscope,pg_test_timing}.
# Slow (a release build with LTO): not part of scripts/test.sh; scripts/package.sh calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'build-static: %s\n' "$*" >&2; }
TARGET=x86_64-unknown-linux-musl

if ! command -v musl-gcc >/dev/null; then
    say "installing musl-tools (musl-gcc, for any C code a dependency builds)"
    ./scripts/apt-install.sh musl-tools
fi
if ! rustup target list --installed | grep -qx "$TARGET"; then
    say "rustup target add $TARGET"
    rustup target add "$TARGET"
fi

# The release profile has no debug info (profile.profiling keeps it); a
# shipped static binary also drops every symbol.
say "cargo build --release --target $TARGET (stripped, static)"
CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols \
    CC_x86_64_unknown_linux_musl=musl-gcc \
    cargo build -q --release --locked --target "$TARGET" -p clockscope-cli --bins

out="${CARGO_TARGET_DIR:-target}/$TARGET/release"
for bin in clockscope pg_test_timing; do
    f="$out/$bin"
    desc="$(file -b "$f")"
    case "$desc" in
        *"statically linked"* | *"static-pie linked"*) ;;
        *) say "$f is not static: $desc"; exit 1 ;;
    esac
    case "$desc" in *"not stripped"*) say "$f is not stripped: $desc"; exit 1 ;; esac
    "$f" --version >/dev/null 2>&1 || [ "$bin" = pg_test_timing ] || { say "$f --version failed"; exit 1; }
    say "$f: $(stat -c %s "$f") bytes; $desc"
done

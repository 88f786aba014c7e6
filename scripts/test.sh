#!/usr/bin/env bash
# Runs every test of clockscope, installing what a fresh machine lacks first:
#   - PostgreSQL's server binaries (Debian package `postgresql`) for the
#     `clockscope explain` tests, which start a real server in a temp dir;
#   - promtool and node_exporter (Debian packages `prometheus`,
#     `prometheus-node-exporter`) for the Prometheus output's lint test and
#     the fleet test (scripts/test-fleet.sh);
#   - faketime (Debian package `faketime`: libfaketime and its wrapper) for
#     the tests of a clock changed on its way to clockscope
#     (crates/cli/tests/all/faketime_cli.rs; they print a skip without it);
#   - the aarch64 cross toolchain and qemu-user (scripts/test-aarch64.sh);
#   - the ru_RU.UTF-8 locale (Debian package `locales`, then localedef) for the
#     tests of the Russian reports, which run the binary under LANG=ru_RU.UTF-8
#     (clockscope speaks English where the locale is not installed);
#   - the rustup targets riscv64gc-unknown-linux-gnu (a build check) and
#     aarch64-unknown-linux-gnu (the tests under qemu).
# It prints that list before installing anything. Debian packages go through
# scripts/apt-install.sh, which keeps their services from starting.
# Then: formatting and clippy (-D warnings, also of the CLI built without its
# `explain` feature), the docs' intra-doc links, the workspace's tests (unit, integration against the
# real binaries and a real PostgreSQL, doc tests), the fleet files against a
# real node_exporter and promtool, a compile check of the benchmarks
# (crates/benches), and the aarch64 tests under qemu.
#
# Environment: SKIP_AARCH64=1 skips the aarch64 part; CARGO_TARGET_DIR is honoured.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'test: %s\n' "$*" >&2; }

# --- set-up -----------------------------------------------------------------
# What is missing, said before anything is installed.
if ! command -v cargo >/dev/null; then
    say "cargo is missing: install Rust with rustup (https://rustup.rs)"; exit 1
fi
apt_missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_missing+=(postgresql)
command -v promtool >/dev/null || apt_missing+=(prometheus)
command -v prometheus-node-exporter >/dev/null || apt_missing+=(prometheus-node-exporter)
command -v faketime >/dev/null || apt_missing+=(faketime)
ru_locale_missing=0
locale -a 2>/dev/null | grep -qix 'ru_RU.utf8' || ru_locale_missing=1
if [ "$ru_locale_missing" = 1 ] && [ ! -e /usr/share/i18n/locales/ru_RU ]; then apt_missing+=(locales); fi
targets_missing=()
installed_targets=$(rustup target list --installed 2>/dev/null || true)
grep -qx riscv64gc-unknown-linux-gnu <<<"$installed_targets" || targets_missing+=(riscv64gc-unknown-linux-gnu)
if [ "${SKIP_AARCH64:-0}" != 1 ]; then
    command -v aarch64-linux-gnu-gcc >/dev/null || apt_missing+=(gcc-aarch64-linux-gnu)
    [ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || apt_missing+=(libc6-dev-arm64-cross)
    command -v qemu-aarch64 >/dev/null || command -v qemu-aarch64-static >/dev/null || apt_missing+=(qemu-user)
    grep -qx aarch64-unknown-linux-gnu <<<"$installed_targets" || targets_missing+=(aarch64-unknown-linux-gnu)
fi
say "will install: apt packages: ${apt_missing[*]:-none}; locales: $([ "$ru_locale_missing" = 1 ] && echo ru_RU.UTF-8 || echo none);" \
    "user postgres: $([ "$(id -u)" = 0 ] && ! getent passwd postgres >/dev/null && echo create || echo none);" \
    "rustup targets: ${targets_missing[*]:-none};" \
    "rustup components: rustfmt clippy (if missing); crates: none beyond Cargo.lock's dependencies"
if [ ${#apt_missing[@]} -gt 0 ]; then
    ./scripts/apt-install.sh "${apt_missing[@]}"
fi
if [ "$ru_locale_missing" = 1 ]; then
    # Compiled into the system's locale archive, as `locale-gen` would (root or sudo).
    say "localedef -i ru_RU -f UTF-8 ru_RU.UTF-8"
    if [ "$(id -u)" = 0 ]; then localedef -i ru_RU -f UTF-8 ru_RU.UTF-8; else sudo localedef -i ru_RU -f UTF-8 ru_RU.UTF-8; fi
fi
# As root the tests' servers run as `postgres` (runuser), the user Debian's
# package creates; a machine with the binaries but without that user gets it
# here, as the package would make it (a system user and group).
if [ "$(id -u)" = 0 ] && ! getent passwd postgres >/dev/null; then
    group=--user-group
    getent group postgres >/dev/null && group="--gid postgres"
    say "useradd --system $group --home-dir /var/lib/postgresql --shell /bin/bash postgres"
    useradd --system $group --home-dir /var/lib/postgresql --shell /bin/bash postgres
fi
for t in "${targets_missing[@]}"; do
    say "rustup target add $t"
    rustup target add "$t" >/dev/null 2>&1 || say "rustup could not add $t (without rustup: install its standard library)"
done
rustup component add rustfmt clippy >/dev/null 2>&1 || true

# --- checks and tests -------------------------------------------------------
say "cargo fmt --check"
cargo fmt --all -- --check
say "cargo clippy --workspace --all-targets -D warnings"
cargo clippy --workspace --all-targets -q -- -D warnings
# Without the default `explain` feature the tools build without PostgreSQL's
# client (postgres, tokio): that build must stay warning-free and lean.
say "cargo clippy -p clockscope-cli --no-default-features (no explain: no postgres/tokio)"
cargo clippy -q -p clockscope-cli --no-default-features --all-targets -- -D warnings
lean_deps=$(cargo tree -q -p clockscope-cli --no-default-features -e normal,build --prefix none)
if grep -E '^(postgres|tokio|tokio-postgres|clockscope-explain) ' <<<"$lean_deps"; then
    say "clockscope-cli --no-default-features still depends on the crates above"; exit 1
fi
# Every intra-doc link resolves (private items documented too: the docs are a
# map of the tree, and a link that no longer resolves is a map that drifted).
say "cargo doc --workspace --document-private-items, every intra-doc link resolved"
RUSTDOCFLAGS="-D warnings -A rustdoc::private_intra_doc_links" cargo doc -q --workspace --no-deps --document-private-items
say "cargo test --workspace"
# The reports speak the caller's language: the tests that expect English run
# under C.UTF-8, whatever the developer's locale; the Russian ones set theirs.
# --default-signal: the tests signal their children (INT, QUIT, TERM) and expect
# the default actions; a shell starts a background job with INT and QUIT
# ignored, and an ignored signal stays ignored across exec.
env --default-signal -u LANGUAGE -u LC_ALL -u LC_MESSAGES LANG=C.UTF-8 cargo test --workspace -q
say "fleet files on loopback: node_exporter, promtool, dashboard, systemd units (scripts/test-fleet.sh)"
./scripts/test-fleet.sh
say "cargo bench --no-run (benchmarks compile)"
cargo bench --workspace --no-run -q 2>/dev/null || cargo bench --workspace --no-run
# A target with no CPU counter support must still build (the library falls
# back to the system clock there).
if rustup target list --installed 2>/dev/null | grep -qx riscv64gc-unknown-linux-gnu; then
    say "cargo clippy -p clockscope --target riscv64gc-unknown-linux-gnu (no CPU counter: fallback paths)"
    cargo clippy -q -p clockscope --target riscv64gc-unknown-linux-gnu -- -D warnings
else
    say "skipping the riscv64 build check: rustup could not add the target"
fi
if [ "${SKIP_AARCH64:-0}" != 1 ]; then
    say "aarch64 under qemu-user"
    CLIPPY=1 ./scripts/test-aarch64.sh
fi
say "all tests passed"

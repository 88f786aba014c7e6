#!/usr/bin/env bash
# Cross-builds clockscope for aarch64 Linux and runs it under qemu-user:
#   1. installs what is missing (Debian packages only when their binaries are
#      missing; the rustup target only when it is not installed),
#   2. runs the clockscope crate's tests for aarch64 (cargo's runner is
#      qemu-aarch64, see .cargo/config.toml),
#   3. runs `clockscope check -d 0.2` and `pg_test_timing -d 1` under qemu.
# Emulated timings are meaningless, so only behaviour is checked: exit codes
# and the report's section lines, in order.
#
# Idempotent; safe to run repeatedly. Environment:
#   CARGO_TARGET_DIR          honoured (binaries are under <dir>/aarch64-unknown-linux-gnu/debug)
#   CLIPPY=1                  also run clippy for aarch64 with -D warnings
#   REQUIRE_PG_ARM_SECTIONS=0 do not fail when pg_test_timing prints no
#                             generic-timer section (default 1: required)
set -euo pipefail

cd "$(dirname "$0")/.."
TARGET=aarch64-unknown-linux-gnu
SYSROOT=/usr/aarch64-linux-gnu
say() { printf 'test-aarch64: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# --- 1. toolchain -----------------------------------------------------------
missing=()
command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
[ -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ] || missing+=(libc6-dev-arm64-cross)
command -v qemu-aarch64 >/dev/null || command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user)
if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    # --no-install-recommends (in apt-install.sh) keeps qemu-user-binfmt out:
    # registering binfmt handlers changes a kernel setting, and cargo's runner
    # does not need it.
    ./scripts/apt-install.sh "${missing[@]}"
fi
QEMU=$(command -v qemu-aarch64 || command -v qemu-aarch64-static)
# .cargo/config.toml names qemu-aarch64; follow whichever binary exists.
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="$QEMU -L $SYSROOT"

if ! rustc --print sysroot >/dev/null 2>&1; then die "rustc not found"; fi
if [ ! -d "$(rustc --print sysroot)/lib/rustlib/$TARGET" ]; then
    command -v rustup >/dev/null || die "the $TARGET standard library is missing and rustup is not available"
    say "adding rust target $TARGET"
    rustup target add "$TARGET" >/dev/null
fi

# --- 2. library tests under qemu --------------------------------------------
say "cargo test -p clockscope -p clockscope-system -p clockscope-pg --target $TARGET (under $QEMU)"
cargo test -q -p clockscope -p clockscope-system -p clockscope-pg --target "$TARGET"

if [ "${CLIPPY:-0}" = 1 ]; then
    say "cargo clippy -p clockscope -p clockscope-system -p clockscope-pg --target $TARGET --all-targets -- -D warnings"
    cargo clippy -q -p clockscope -p clockscope-system -p clockscope-pg --target "$TARGET" --all-targets -- -D warnings
fi

# --- 3. the tools under qemu ------------------------------------------------
say "cargo build -p clockscope-cli --target $TARGET"
cargo build -q -p clockscope-cli --target "$TARGET"
BIN="${CARGO_TARGET_DIR:-target}/$TARGET/debug"
run() { timeout 600 "$QEMU" -L "$SYSROOT" "$@"; }

# expect_in_order FILE PATTERN...: each extended regex matches a line after
# the previous pattern's line.
expect_in_order() {
    local file=$1 line=0 pat n
    shift
    for pat in "$@"; do
        n=$(tail -n +"$((line + 1))" "$file" | grep -n -E -m1 -- "$pat" | cut -d: -f1 || true)
        [ -n "$n" ] || { say "expected a line matching /$pat/ after line $line of:"; cat "$file" >&2; return 1; }
        line=$((line + n))
    done
}

out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

# clockscope check: 0 (GOOD/OK) or 1 (a problem found) are both behaviour;
# which one depends on emulated timings. 2 (error) and 130 are failures.
say "clockscope check -d 0.2 (under qemu)"
set +e
run "$BIN/clockscope" check -d 0.2 >"$out" 2>"$err"
rc=$?
set -e
if grep -q "not built yet" "$err"; then
    say "SKIP clockscope check: the command is not implemented yet"
else
    [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || { cat "$out" "$err" >&2; die "clockscope check exited $rc"; }
    # Rows are named by their --clock names (the legend line gives the full names).
    expect_in_order "$out" '^Environment' '^Clocks \(' '^ +monotonic ' '^ +isb_cntvct ' '^ +cntvct ' \
        '^ +monotonic = clock_gettime \(CLOCK_MONOTONIC\); isb_cntvct = ISB;CNTVCT_EL0; cntvct = CNTVCT_EL0$' \
        '^Verdict: '
    say "clockscope check: exit $rc, sections in order"
fi

# pg_test_timing: supported once --help prints PostgreSQL's usage line.
if ! run "$BIN/pg_test_timing" --help 2>/dev/null | grep -q '^Usage: pg_test_timing'; then
    say "SKIP pg_test_timing: the binary does not implement PostgreSQL's command line yet"
else
    say "pg_test_timing -d 1 (under qemu)"
    set +e
    run "$BIN/pg_test_timing" -d 1 >"$out" 2>"$err"
    rc=$?
    set -e
    [ "$rc" -eq 0 ] || { cat "$out" "$err" >&2; die "pg_test_timing exited $rc"; }
    expect_in_order "$out" '^Testing timing overhead for 1 second\.$' \
        '^System clock source: clock_gettime \(CLOCK_MONOTONIC\)$' \
        '^Average loop time including overhead: [0-9]+\.[0-9]{2} ns$' '^Histogram of timing durations:$' \
        '^Observed timing durations up to [0-9.]+%:$'
    if grep -q '^Clock source: ' "$out"; then
        expect_in_order "$out" '^System clock source: ' '^Clock source: ISB;CNTVCT_EL0$' \
            '^Average loop time including overhead: ' '^Histogram of timing durations:$' \
            '^Fast clock source: CNTVCT_EL0$' '^Average loop time including overhead: ' \
            '^Histogram of timing durations:$' \
            '^Generic timer frequency source: arm64, CNTFRQ_EL0$' '^Generic timer frequency in use: [0-9.]+ kHz$' \
            '^Generic timer resolution: [0-9.]+ ns$' '^Generic timer clock source is (not )?trustworthy here'
        say "pg_test_timing: exit 0, system and generic-timer sections in order"
    elif [ "${REQUIRE_PG_ARM_SECTIONS:-1}" = 1 ]; then
        cat "$out" >&2
        die "pg_test_timing printed no generic-timer section (Clock source: ISB;CNTVCT_EL0)"
    else
        say "pg_test_timing: exit 0, system section in order; NOTE: no generic-timer section yet"
    fi
fi
say "all aarch64 checks passed"

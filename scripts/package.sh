#!/usr/bin/env bash
# Builds the Debian package of clockscope with cargo-deb:
#   1. the static, stripped binaries (scripts/build-static.sh);
#   2. man pages (`clockscope man`, one per subcommand) and shell completions
#      (`clockscope completions bash|zsh|fish`) generated from the built binary
#      into target/deb-assets/;
#   3. `cargo deb --no-build` (assets: crates/cli/Cargo.toml [package.metadata.deb]).
# With --install-test (root): `dpkg -i` it, run /usr/bin/clockscope --version and
# check every file is in place, then `dpkg -r` it.
# Installs cargo-deb from crates.io when missing. Slow: not part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'package: %s\n' "$*" >&2; }
TARGET=x86_64-unknown-linux-musl
install_test=0
[ "${1:-}" = --install-test ] && install_test=1

command -v cargo-deb >/dev/null || { say "cargo install cargo-deb"; cargo install -q --locked cargo-deb; }
./scripts/build-static.sh
bin="${CARGO_TARGET_DIR:-target}/$TARGET/release/clockscope"

assets=target/deb-assets
rm -rf "$assets"
mkdir -p "$assets/man" "$assets/completions"
"$bin" man | gzip -9n >"$assets/man/clockscope.1.gz"
# Every subcommand's page (crates/cli/tests/all/shipping.rs checks this list
# against the CLI's subcommands).
for sub in check clocks tsc cross-cpu dmesg explain sweep completions man; do
    "$bin" man "$sub" | gzip -9n >"$assets/man/clockscope-$sub.1.gz"
done
"$bin" completions bash >"$assets/completions/clockscope.bash"
"$bin" completions zsh >"$assets/completions/_clockscope"
"$bin" completions fish >"$assets/completions/clockscope.fish"

say "cargo deb --no-build --target $TARGET"
deb="$(cargo deb -p clockscope-cli --no-build --no-strip --target "$TARGET" 2>/dev/null | tail -1)"
[ -f "$deb" ] || { say "cargo deb did not report a package ($deb)"; exit 1; }
say "$deb: $(stat -c %s "$deb") bytes"
dpkg-deb --contents "$deb" | awk '{print $3, $6}' >&2

if [ "$install_test" = 1 ]; then
    if dpkg -s clockscope >/dev/null 2>&1; then say "clockscope is already installed here: not touching it"; exit 1; fi
    say "dpkg -i $deb"
    dpkg -i "$deb" >/dev/null
    trap 'dpkg -r clockscope >/dev/null' EXIT
    /usr/bin/clockscope --version
    /usr/bin/pg_test_timing --version
    for f in /usr/share/man/man1/clockscope.1.gz /usr/share/man/man1/clockscope-check.1.gz \
        /usr/share/man/man1/clockscope-sweep.1.gz /usr/share/man/man1/clockscope-dmesg.1.gz \
        /usr/share/bash-completion/completions/clockscope /usr/share/zsh/vendor-completions/_clockscope \
        /usr/share/fish/vendor_completions.d/clockscope.fish /lib/systemd/system/clockscope.service \
        /lib/systemd/system/clockscope.timer /usr/share/clockscope/prometheus/clockscope.rules.yml \
        /usr/share/clockscope/grafana/clockscope.json /usr/share/doc/clockscope/metrics.md; do
        [ -s "$f" ] || { say "missing after dpkg -i: $f"; exit 1; }
    done
    if command -v systemd-analyze >/dev/null; then
        SYSTEMD_LOG_LEVEL=notice systemd-analyze verify /lib/systemd/system/clockscope.service /lib/systemd/system/clockscope.timer
    fi
    dpkg -r clockscope >/dev/null
    trap - EXIT
    [ ! -e /usr/bin/clockscope ] || { say "dpkg -r left /usr/bin/clockscope"; exit 1; }
    say "dpkg -i, /usr/bin/clockscope --version, dpkg -r: ok"
fi

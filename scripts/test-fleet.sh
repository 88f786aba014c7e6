#!/usr/bin/env bash
# The fleet files (fleet/) tested for real, on loopback, in a temp dir:
#   1. Debian's prometheus-node-exporter on 127.0.0.1 with its textfile
#      collector on a temp dir; the timer's command (clockscope.service's
#      ExecStart, pointed at the built binary and the temp dir) run once;
#      /metrics scraped and the clockscope metrics found, read without error;
#   2. `promtool check rules` and `promtool test rules` (every alert with
#      series that fire and series that do not);
#   3. the Grafana dashboard parses and every metric it queries is in the
#      scraped output;
#   4. `systemd-analyze verify` on the units (a printed skip where it cannot run);
#   5. bad input: a missing or unwritable textfile directory is one line,
#      exit 2, and the previous good file stays.
# Needs promtool and node_exporter (scripts/test.sh installs them); about 10 s.
# Environment: CLOCKSCOPE_BIN (default: build target/debug/clockscope).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'test-fleet: %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

for tool in promtool prometheus-node-exporter curl python3; do
    command -v "$tool" >/dev/null || fail "$tool is missing (scripts/test.sh installs prometheus, prometheus-node-exporter)"
done
if [ -z "${CLOCKSCOPE_BIN:-}" ]; then
    cargo build -q -p clockscope-cli --bin clockscope
    CLOCKSCOPE_BIN="${CARGO_TARGET_DIR:-target}/debug/clockscope"
fi
BIN="$(realpath "$CLOCKSCOPE_BIN")"

tmp="$(mktemp -d)"
exporter_pid=""
cleanup() {
    if [ -n "$exporter_pid" ]; then kill "$exporter_pid" 2>/dev/null || true; wait "$exporter_pid" 2>/dev/null || true; fi
    chmod -R u+w "$tmp" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
textfile="$tmp/textfile"
mkdir "$textfile"

# --- 1. node_exporter on loopback, the timer's command once ------------------
# A free port, chosen by the kernel.
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
prometheus-node-exporter --web.listen-address="127.0.0.1:$port" \
    --collector.disable-defaults --collector.textfile --collector.textfile.directory="$textfile" \
    >"$tmp/exporter.log" 2>&1 &
exporter_pid=$!

# The service's ExecStart with the binary and the directory replaced.
exec_start="$(sed -n 's/^ExecStart=//p' fleet/clockscope.service)"
[ -n "$exec_start" ] || fail "no ExecStart in fleet/clockscope.service"
cmd="${exec_start//\/usr\/bin\/clockscope/$BIN}"
cmd="${cmd//\/var\/lib\/prometheus\/node-exporter/$textfile}"
say "running the timer's command: $cmd"
set +e; $cmd; rc=$?; set -e
case $rc in 0|1) ;; *) fail "the timer's command exited $rc" ;; esac
[ -s "$textfile/clockscope.prom" ] || fail "no $textfile/clockscope.prom"
[ "$(ls -A "$textfile")" = clockscope.prom ] || fail "left behind: $(ls -A "$textfile")"

scrape="$tmp/scrape.txt"
for _ in $(seq 1 100); do
    if curl -sf --max-time 5 "http://127.0.0.1:$port/metrics" >"$scrape"; then break; fi
    kill -0 "$exporter_pid" 2>/dev/null || { cat "$tmp/exporter.log" >&2; fail "node_exporter exited"; }
    sleep 0.1
done
[ -s "$scrape" ] || fail "could not scrape 127.0.0.1:$port/metrics"
grep -q '^node_textfile_scrape_error 0$' "$scrape" || { grep textfile "$scrape" >&2; fail "node_exporter could not read the textfile"; }
for m in 'clockscope_verdict{status="good"}' 'clockscope_clock_read_cost_seconds{clock="monotonic"}' \
    'clockscope_last_run_timestamp_seconds' 'clockscope_info{' 'clockscope_interrupted 0'; do
    grep -qF "$m" "$scrape" || fail "$m is not in node_exporter's /metrics"
done
[ "$(grep -c '^clockscope_verdict{' "$scrape")" = 5 ] || fail "the verdict state set does not have 5 states"
say "node_exporter on 127.0.0.1:$port serves $(grep -c '^clockscope_' "$scrape") clockscope samples"

# --- 2. alerting rules ---------------------------------------------------------
promtool check rules fleet/clockscope.rules.yml >/dev/null
(cd fleet && promtool test rules clockscope.rules.test.yml >/dev/null) || {
    (cd fleet && promtool test rules clockscope.rules.test.yml) >&2; fail "promtool test rules"; }
# Every alert is exercised by the tests.
for alert in $(sed -n 's/^ *- alert: //p' fleet/clockscope.rules.yml); do
    grep -q "alertname: $alert\$" fleet/clockscope.rules.test.yml || fail "alert $alert has no promtool test"
done
# The rule tests are fed with the captures of real runs verbatim (fleet/captures/README.md).
for capture in fleet/captures/quiet.prom fleet/captures/busy.prom; do
    host="$(basename "$capture" .prom)"
    python3 fleet/captures/to-series.py "$capture" "$host" 240 >"$tmp/series.yml"
    [ -s "$tmp/series.yml" ] || fail "$capture: no series for the rules"
    python3 -c 'import sys; sys.exit(open(sys.argv[1]).read() not in open(sys.argv[2]).read())' \
        "$tmp/series.yml" fleet/clockscope.rules.test.yml ||
        fail "fleet/clockscope.rules.test.yml does not hold $capture as captured (fleet/captures/to-series.py)"
done
# No rule and no panel reads the loop average (deprecated name or new): busy hosts would page.
if grep -nE '"?expr"?:.*clockscope_clock_(read|loop_average)_seconds' fleet/clockscope.rules.yml fleet/grafana-dashboard.json; then
    fail "a rule or panel reads the gap-inclusive loop average"
fi
say "promtool check rules, test rules: ok ($(grep -c -- '- alert:' fleet/clockscope.rules.yml) alerts, fed with fleet/captures)"

# --- 3. the dashboard ------------------------------------------------------------
python3 - "$scrape" fleet/grafana-dashboard.json <<'EOF'
import json, re, sys
scrape = open(sys.argv[1]).read()
present = set(re.findall(r'^(clockscope_\w+)', scrape, re.M))
dash = json.load(open(sys.argv[2]))
exprs = []
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "expr": exprs.append(x)
            walk(x)
    elif isinstance(v, list):
        for x in v: walk(x)
walk(dash)
used = set(m for e in exprs for m in re.findall(r'clockscope_\w+', e))
missing = used - present
if not exprs or missing:
    sys.exit(f"dashboard queries metrics absent from real output: {sorted(missing)} (exprs: {len(exprs)})")
print(f"test-fleet: dashboard: {len(exprs)} queries over {len(used)} metrics, all in the scrape", file=sys.stderr)
EOF

# --- 4. systemd-analyze verify ------------------------------------------------------
if command -v systemd-analyze >/dev/null; then
    units="$tmp/units"
    mkdir "$units"
    sed "s|/usr/bin/clockscope|$BIN|" fleet/clockscope.service >"$units/clockscope.service"
    cp fleet/clockscope.timer "$units/"
    # man: references are checked against installed pages; the package installs them.
    if out="$(cd "$units" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no clockscope.service clockscope.timer 2>&1)"; then
        [ -z "$out" ] || { echo "$out" >&2; fail "systemd-analyze verify printed findings"; }
        say "systemd-analyze verify: ok"
    elif echo "$out" | grep -qiE 'Failed to (connect|initialize)|not been booted|Failed to set up|No such file or directory.*(bus|manager)'; then
        say "SKIPPED systemd-analyze verify: it cannot run here ($(echo "$out" | head -1))"
    else
        echo "$out" >&2; fail "systemd-analyze verify"
    fi
else
    say "SKIPPED systemd-analyze verify: systemd-analyze is not installed"
fi

# --- 5. bad input: missing or unwritable textfile directory ----------------------
good="$(cat "$textfile/clockscope.prom")"
bad="${cmd//$textfile/$tmp/missing}"
set +e; $bad 2>"$tmp/err"; rc=$?; set -e
[ "$rc" = 2 ] || fail "a missing textfile directory: exit $rc, not 2"
[ "$(wc -l <"$tmp/err")" = 1 ] || fail "a missing textfile directory: not one line: $(cat "$tmp/err")"
grep -q -- '--output ' "$tmp/err" || fail "the error does not name --output: $(cat "$tmp/err")"
chmod 0555 "$textfile"
chmod 0755 "$tmp"
run_unprivileged=()
[ "$(id -u)" -eq 0 ] && run_unprivileged=(setpriv --reuid=65534 --regid=65534 --clear-groups)
set +e; "${run_unprivileged[@]}" $cmd 2>"$tmp/err"; rc=$?; set -e
chmod 0755 "$textfile"
[ "$rc" = 2 ] || fail "an unwritable textfile directory: exit $rc, not 2 ($(cat "$tmp/err"))"
[ "$(wc -l <"$tmp/err")" = 1 ] || fail "an unwritable textfile directory: not one line: $(cat "$tmp/err")"
[ "$(cat "$textfile/clockscope.prom")" = "$good" ] || fail "the previous good file changed"
[ "$(ls -A "$textfile")" = clockscope.prom ] || fail "left behind: $(ls -A "$textfile")"
say "missing/unwritable textfile directory: one line, exit 2, previous file kept ($(cat "$tmp/err"))"
say "all fleet tests passed"

#!/usr/bin/env bash
# explain's headline run after run (issue 36): N runs of `clockscope
# explain` in a row against one server, default options, and per clock
# source the per-row overhead of each run with its 95% interval and result,
# their median, the largest deviation from the median, and how many runs
# said "not resolved" (or "measurement problem").
#
#   bench/explain_series.sh CONNINFO [RUNS] [BIN]
#
# CONNINFO: a libpq conninfo (e.g. "host=/tmp/pg15 port=5433 user=postgres
# dbname=postgres"); a superuser measures both timing_clock_source values
# on PostgreSQL 19. RUNS (default 10). BIN: the clockscope binary (default:
# a release build of this tree, built first). Every number comes from the
# JSON the runs print; the CPU, kernel, clocksource, load and the date are
# printed with them. Target (issue 36): every stated per-row overhead within
# +-20% of the median of the stated ones, no stated overhead of the wrong
# sign; a run may say "not resolved" instead.
set -euo pipefail

cd "$(dirname "$0")/.."
conninfo=${1:-}
runs=${2:-10}
bin=${3:-}
if [ -z "$conninfo" ]; then
    echo "explain_series.sh: CONNINFO is required (e.g. \"host=/tmp port=5432 user=postgres dbname=postgres\")" >&2
    exit 2
fi
case "$runs" in
'' | *[!0-9]* | 0)
    echo "explain_series.sh: RUNS must be a whole number above 0, got '$runs'" >&2
    exit 2
    ;;
esac
command -v python3 >/dev/null || {
    echo "explain_series.sh: python3 is needed to read the JSON" >&2
    exit 2
}
if [ -z "$bin" ]; then
    cargo build --release -p clockscope-cli --bin clockscope >&2
    target_dir=$(cargo metadata --format-version 1 --no-deps |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
    bin="$target_dir/release/clockscope"
fi
[ -x "$bin" ] || {
    echo "explain_series.sh: $bin is not an executable" >&2
    exit 2
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_before=$(cut -d" " -f1-3 /proc/loadavg 2>/dev/null || echo "unknown")
for i in $(seq 1 "$runs"); do
    echo "explain run $i/$runs" >&2
    rc=0
    "$bin" explain --dsn "$conninfo" --format json >"$work/explain.$i.json" || rc=$?
    # 1 is a measurement problem, reported in the JSON; anything else failed.
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
        echo "explain_series.sh: clockscope explain failed (run $i, exit $rc)" >&2
        exit 2
    fi
done
load_after=$(cut -d" " -f1-3 /proc/loadavg 2>/dev/null || echo "unknown")

cpu=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo "unknown")
echo "explain_series.sh, $started: $runs runs of clockscope explain (default options) against $conninfo"
echo "machine: ${cpu:-unknown CPU}, $(nproc) CPUs, $(uname -r), clocksource $clocksource; load average before" \
    "$load_before, after $load_after"
python3 - "$work" "$runs" <<'PY'
import json, statistics, sys

work, runs = sys.argv[1], int(sys.argv[2])
reports = [json.load(open(f"{work}/explain.{i}.json")) for i in range(1, runs + 1)]
print(f"server: PostgreSQL {reports[0]['server_version']}")
names = []
for r in reports:
    for s in r["clock_sources"]:
        if s["clock_source"] not in names:
            names.append(s["clock_source"])
for name in names:
    print()
    print(f"{name}: per-row overhead (ns) of each run, its 95% interval and the result")
    print(f"  {'run':>3} {'per row':>9} {'95% interval':>21} {'slowdown':>9} {'A/A':>17}  result")
    stated, unresolved, problems = [], 0, 0
    for i, r in enumerate(reports, 1):
        s = next((s for s in r["clock_sources"] if s["clock_source"] == name), None)
        if s is None:
            print(f"  {i:>3} not measured")
            continue
        lo, hi = s.get("overhead_per_row_low_ns"), s.get("overhead_per_row_high_ns")
        iv = f"{lo:.2f} to {hi:.2f}" if lo is not None and hi is not None else "-"
        c = s["control"]
        aa = f"{c['low']:.3f}-{c['high']:.3f}" if c["low"] is not None else "-"
        print(f"  {i:>3} {s['overhead_per_row_ns']:>9.2f} {iv:>21} {s['slowdown']:>8.3f}x {aa:>17}  {s['result']}")
        if s["result"] == "resolved":
            stated.append(s["overhead_per_row_ns"])
        elif s["result"] == "not_resolved":
            unresolved += 1
        else:
            problems += 1
    if stated:
        med = statistics.median(stated)
        dev = max(abs(v - med) for v in stated)
        rel = dev / med * 100 if med > 0 else float("nan")
        wrong = sum(1 for v in stated if v <= 0)
        print(f"  stated in {len(stated)} runs: median {med:.2f} ns, largest deviation from it {dev:.2f} ns "
              f"({rel:.1f}%), wrong sign {wrong}")
    else:
        print("  stated in no run")
    print(f"  not resolved: {unresolved}; measurement problem: {problems}")
PY

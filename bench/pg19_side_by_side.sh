#!/usr/bin/env bash
# Our pg_test_timing against PostgreSQL 19's own binary, side by side on this
# machine: the three "Average loop time including overhead" numbers (system
# clock, RDTSCP, RDTSC) and the shape of the whole output.
#
#   bench/pg19_side_by_side.sh PG19_BIN_DIR [ROUNDS] [DURATION_S]
#                                  (ROUNDS >= 5, default 5; DURATION_S default 2)
#
# PG19_BIN_DIR holds PostgreSQL 19's pg_test_timing (e.g. the bin/ of an
# install made by scripts/pg19-server.sh build). Builds ours with
# `cargo build --release`, then ROUNDS rounds of `pg_test_timing -d
# DURATION_S`, ours and PostgreSQL's alternately (ours first in odd rounds,
# PostgreSQL's first in even ones, so a drift in the machine's load hits both
# alike). Prints each round's three loop times for both, the per-round ratios
# ours / PostgreSQL 19 and their medians (target 0.97-1.03), and whether the
# two outputs have the same lines, widths and sentences once the numbers are
# masked (first round; a table row is checked for its width, a run of rows
# counts as one). The machine's CPU, kernel TSC line (when dmesg is readable),
# clocksource and load averages before and after are printed with the table.
#
# RUN_WITH, when set, is put in front of both binaries alike, e.g. on a
# machine shared with other work: RUN_WITH="chrt -f 10 taskset -c 1"
# (real-time priority and one CPU for each run, so the other work does not
# preempt either; as root). It is printed with the results.
set -euo pipefail

cd "$(dirname "$0")/.."
usage="usage: bench/pg19_side_by_side.sh PG19_BIN_DIR [ROUNDS] [DURATION_S]"
pg_dir=${1:?$usage}
rounds=${2:-5}
duration=${3:-2}
for v in "$rounds" "$duration"; do
    case "$v" in
    '' | *[!0-9]*)
        echo "pg19_side_by_side.sh: ROUNDS and DURATION_S must be whole numbers, got '$v'" >&2
        exit 2
        ;;
    esac
done
if [ "$rounds" -lt 5 ]; then
    echo "pg19_side_by_side.sh: ROUNDS must be at least 5, got $rounds" >&2
    exit 2
fi
if [ "$duration" -lt 1 ]; then
    echo "pg19_side_by_side.sh: DURATION_S must be at least 1, got $duration" >&2
    exit 2
fi
pg_bin="$pg_dir/pg_test_timing"
if [ ! -x "$pg_bin" ]; then
    echo "pg19_side_by_side.sh: no executable pg_test_timing in '$pg_dir'" >&2
    exit 2
fi
pg_version=$("$pg_bin" --version 2>/dev/null || true)
case "$pg_version" in
*"(PostgreSQL) 19"*) ;;
*)
    echo "pg19_side_by_side.sh: '$pg_bin' is not PostgreSQL 19's (--version says '$pg_version')" >&2
    exit 2
    ;;
esac
command -v python3 >/dev/null || {
    echo "pg19_side_by_side.sh: python3 is needed for the medians" >&2
    exit 2
}

cargo build --release -p clockscope-cli --bin pg_test_timing >&2
target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
ours_bin="$target_dir/release/pg_test_timing"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_before=$(cut -d" " -f1-3 /proc/loadavg 2>/dev/null || echo "unknown")
run_with=${RUN_WITH:-}
# shellcheck disable=SC2086 # RUN_WITH is a command prefix, split on purpose
run() { $run_with "$@"; }
for i in $(seq 1 "$rounds"); do
    echo "round $i/$rounds" >&2
    if [ $((i % 2)) -eq 1 ]; then
        run "$ours_bin" -d "$duration" >"$work/ours.$i" 2>&1 || true
        run "$pg_bin" -d "$duration" >"$work/pg.$i" 2>&1 || true
    else
        run "$pg_bin" -d "$duration" >"$work/pg.$i" 2>&1 || true
        run "$ours_bin" -d "$duration" >"$work/ours.$i" 2>&1 || true
    fi
done
load_after=$(cut -d" " -f1-3 /proc/loadavg 2>/dev/null || echo "unknown")

cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
[ -n "$cpu_model" ] || cpu_model=$(uname -m)
tsc_line=$(dmesg 2>/dev/null | grep -o 'tsc: Detected [0-9.]* MHz' | head -n 1 || true)
[ -n "$tsc_line" ] || tsc_line="kernel TSC line not readable"
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo "unknown")

python3 - "$work" "$rounds" "$duration" "$started" "$cpu_model" "$tsc_line" "$(uname -r)" "$clocksource" \
    "$(nproc)" "$pg_bin" "$pg_version" "$load_before" "$load_after" "${run_with:-(none)}" <<'PY'
import os, re, statistics, sys

(work, rounds, duration, started, cpu, tsc_line, kernel, clocksource, ncpu, pg_bin, pg_version,
 load_before, load_after, run_with) = sys.argv[1:15]
rounds = int(rounds)
LOOP = re.compile(r"^Average loop time including overhead: ([0-9.]+) ns")
ROW = re.compile(r"^ *[0-9]+   +[0-9.]+ +[0-9.]+ +[0-9]+$")
BLOCKS = ("system", "RDTSCP", "RDTSC")

def blocks(path):
    """Loop times by block: 'system' (the first), then 'RDTSCP', 'RDTSC'."""
    out, label = {}, "system"
    with open(path) as f:
        for line in f:
            if line.startswith(("Clock source: ", "Fast clock source: ")):
                label = line.split(": ", 1)[1].strip()
            m = LOOP.match(line)
            if m and label not in out:
                out[label] = float(m.group(1))
    return out

def shape(path):
    """The output with numbers masked: a table row becomes ROW(width), a run
    of rows one entry; other lines keep every byte but digits."""
    out = []
    with open(path) as f:
        for line in f.read().split("\n"):
            if ROW.match(line):
                entry = f"ROW(width {len(line)})"
                if not out or out[-1] != entry:
                    out.append(entry)
            else:
                out.append(re.sub(r"[0-9]+(\.[0-9]+)?", "N", line))
    return out

ours = [blocks(os.path.join(work, f"ours.{i}")) for i in range(1, rounds + 1)]
pg = [blocks(os.path.join(work, f"pg.{i}")) for i in range(1, rounds + 1)]

def fmt(v, w=7):
    return f"{v:{w}.2f}" if v is not None else " " * (w - 1) + "-"

print(f"Run: {started}; machine: {cpu} ({tsc_line}), {ncpu} CPUs, kernel {kernel}, clocksource {clocksource}")
print(f"Load average before {load_before}, after {load_after}")
print(f"PostgreSQL 19: {pg_bin} ({pg_version}); ours: target/release/pg_test_timing; "
      f"{rounds} rounds of -d {duration}, alternating (ours first in odd rounds); RUN_WITH {run_with}")
print()
print("Average loop time including overhead, ns per round:")
medians = {}
for b in BLOCKS:
    o = [r.get(b) for r in ours]
    p = [r.get(b) for r in pg]
    ratios = [x / y for x, y in zip(o, p) if x and y]
    print(f"  {b:<7} ours:   " + " ".join(fmt(v) for v in o))
    print(f"  {b:<7} PG19:   " + " ".join(fmt(v) for v in p))
    print(f"  {b:<7} ratio:  " + " ".join(f"{r:7.3f}" for r in ratios))
    medians[b] = statistics.median(ratios) if len(ratios) == rounds else None
print()
print("Median of the per-round ratios ours / PostgreSQL 19 (target 0.97-1.03):")
for b in BLOCKS:
    m = medians[b]
    if m is None:
        print(f"  {b:<7} not measured in every round (see the outputs)")
    else:
        print(f"  {b:<7} {m:.3f}   {'met' if 0.97 <= m <= 1.03 else 'MISSED'}")
print()
a, b = shape(os.path.join(work, "ours.1")), shape(os.path.join(work, "pg.1"))
if a == b:
    print(f"Output shape, round 1 (numbers masked): identical ({len(a)} entries)")
else:
    import difflib
    print("Output shape, round 1 (numbers masked): DIFFERENT")
    for line in difflib.unified_diff(b, a, "PostgreSQL 19", "ours", lineterm="", n=1):
        print("  " + line)
PY

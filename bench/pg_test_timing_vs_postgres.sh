#!/usr/bin/env bash
# Our pg_test_timing against PostgreSQL's installed one, and our loop times
# against bare reads of the same instruction.
#
#   bench/pg_test_timing_vs_postgres.sh [RUNS]      (RUNS >= 5, default 5)
#
# Builds with `cargo build --release` (the pg_test_timing binary and the
# bare_reads example), then RUNS times, alternately: our `pg_test_timing -d 1`,
# PostgreSQL's newest /usr/lib/postgresql/*/bin/pg_test_timing -d 1, and
# `bare_reads` (median of 3 runs of 5,000,000 reads per clock). Prints the
# medians, the median of the per-round ratios ours / PostgreSQL's for the
# system clock's loop time, and our RDTSC, RDTSCP and system-clock loop
# times next to the bare reads. Information only: our loop is PostgreSQL
# 19's (it converts and counts every difference), heavier than PostgreSQL
# 15-18's and than a bare read by design; the target (ours / PostgreSQL 19
# within 0.97-1.03) is checked by bench/pg19_side_by_side.sh against
# PostgreSQL 19's own binary.
# PostgreSQL 15-18 print "Per loop time including overhead", 19 "Average
# loop time including overhead"; the first such line is the system clock.
set -euo pipefail

cd "$(dirname "$0")/.."
runs=${1:-5}
case "$runs" in
'' | *[!0-9]*)
    echo "pg_test_timing_vs_postgres.sh: RUNS must be a whole number, got '$runs'" >&2
    exit 2
    ;;
esac
if [ "$runs" -lt 5 ]; then
    echo "pg_test_timing_vs_postgres.sh: RUNS must be at least 5, got $runs" >&2
    exit 2
fi
command -v python3 >/dev/null || {
    echo "pg_test_timing_vs_postgres.sh: python3 is needed for the medians" >&2
    exit 2
}
pg_bin=$(ls -d /usr/lib/postgresql/*/bin/pg_test_timing 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$pg_bin" ]; then
    echo "pg_test_timing_vs_postgres.sh: no /usr/lib/postgresql/*/bin/pg_test_timing (install postgresql)" >&2
    exit 2
fi

cargo build --release -p clockscope-cli --bin pg_test_timing >&2
cargo build --release -p clockscope-pg --example bare_reads >&2
target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
ours_bin="$target_dir/release/pg_test_timing"
bare_bin="$target_dir/release/examples/bare_reads"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$(date -u '+%Y-%m-%d %H:%M UTC')
for i in $(seq 1 "$runs"); do
    echo "round $i/$runs" >&2
    "$ours_bin" -d 1 >"$work/ours.$i" 2>&1 || true
    "$pg_bin" -d 1 >"$work/pg.$i" 2>&1 || true
    "$bare_bin" 5000000 3 >"$work/bare.$i" 2>&1
done

cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
[ -n "$cpu_model" ] || cpu_model=$(uname -m)
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo "unknown")
loadavg=$(cut -d" " -f1-3 /proc/loadavg 2>/dev/null || echo "unknown")
pg_version=$("$pg_bin" --version 2>/dev/null || echo "version unknown")

python3 - "$work" "$runs" "$started" "$cpu_model" "$(uname -r)" "$clocksource" "$(nproc)" "$pg_bin" "$pg_version" "$loadavg" <<'PY'
import os, re, statistics, sys

work, runs, started, cpu, kernel, clocksource, ncpu, pg_bin, pg_version, loadavg = sys.argv[1:11]
runs = int(runs)
LOOP = re.compile(r"^(?:Average|Per) loop time including overhead: ([0-9.]+) ns")

def blocks(path):
    """Loop times by block: 'system' (the first), then 'RDTSCP', 'RDTSC'."""
    out, label = {}, "system"
    with open(path) as f:
        for line in f:
            if line.startswith("Clock source: "):
                label = line.split(": ", 1)[1].strip()
            elif line.startswith("Fast clock source: "):
                label = line.split(": ", 1)[1].strip()
            m = LOOP.match(line)
            if m and label not in out:
                out[label] = float(m.group(1))
    return out

def bare(path):
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"^bare (.+): ([0-9.]+) ns per read", line)
            if m:
                out[m.group(1)] = float(m.group(2))
    return out

ours = [blocks(os.path.join(work, f"ours.{i}")) for i in range(1, runs + 1)]
pg = [blocks(os.path.join(work, f"pg.{i}")) for i in range(1, runs + 1)]
bares = [bare(os.path.join(work, f"bare.{i}")) for i in range(1, runs + 1)]

def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

def fmt(v):
    return f"{v:7.2f}" if v is not None else "      -"

print(f"Run: {started}; machine: {cpu}, {ncpu} CPUs, kernel {kernel}, clocksource {clocksource}; load average after the run {loadavg}")
print(f"PostgreSQL: {pg_bin} ({pg_version}); ours: target/release/pg_test_timing; {runs} rounds of -d 1, alternating")
print()
sys_ours = [o.get("system") for o in ours]
sys_pg = [p.get("system") for p in pg]
print("System clock (clock_gettime (CLOCK_MONOTONIC)) loop time, ns per round:")
print("  ours:       " + " ".join(fmt(v) for v in sys_ours) + f"   median {fmt(med(sys_ours))}")
print("  PostgreSQL: " + " ".join(fmt(v) for v in sys_pg) + f"   median {fmt(med(sys_pg))}")
ratios = [o / p for o, p in zip(sys_ours, sys_pg) if o and p]
if ratios:
    r = statistics.median(ratios)
    print(f"  median of per-round ratios ours / PostgreSQL = {r:.3f}   (ours is PostgreSQL 19's loop; see bench/pg19_side_by_side.sh)")
else:
    print("  no ratio: a loop time line was missing (see the outputs)")
print()
print("Our loop times next to a bare read of the same clock (medians over rounds):")
print("  pg_test_timing block               loop ns   bare read               bare ns   loop - bare")
pairs = [
    ("RDTSC", "Fast clock source: RDTSC", "RDTSC"),
    ("RDTSCP", "Clock source: RDTSCP", "RDTSCP"),
    ("system", "System clock", "clock_gettime (CLOCK_MONOTONIC)"),
]
for key, label, bare_name in pairs:
    loop = med([o.get(key) for o in ours])
    b = med([x.get(bare_name) for x in bares])
    if loop is None or b is None:
        print(f"  {label:<34}{fmt(loop)}   {bare_name:<22}{fmt(b)}   (not measured here)")
        continue
    d = loop - b
    print(f"  {label:<34}{fmt(loop)}   {bare_name:<22}{fmt(b)}   {d:+10.2f}")
extra = [k for k in ("clockscope::Instant::now", "clockscope::Instant::now_precise") if any(k in x for x in bares)]
for k in extra:
    print(f"  (bare {k}: {fmt(med([x.get(k) for x in bares]))} ns)")
PY

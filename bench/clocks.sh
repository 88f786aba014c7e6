#!/usr/bin/env bash
# Runs the criterion benchmarks of crates/benches/benches/clocks.rs and
# prints one table: clockscope::instant against std::time::Instant,
# quanta::Instant, minstant::Instant and a bare RDTSC, the ratios the
# targets are stated in, and the contention runs (1 and 2 threads).
#
#   bench/clocks.sh [criterion arguments...]
#
# Numbers are criterion's point estimates (slope, else mean) read from
# <target>/criterion/<group>/<bench>/new/estimates.json after this run; old
# results of the two groups are removed first so nothing stale is reported.
# criterion's own output goes to stderr, the table to stdout.
set -euo pipefail

cd "$(dirname "$0")/.."
command -v python3 >/dev/null || {
    echo "clocks.sh: python3 is needed to read criterion's JSON estimates" >&2
    exit 2
}
target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
crit="$target_dir/criterion"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rm -rf "$crit/clocks" "$crit/contention"

started=$(date -u '+%Y-%m-%d %H:%M UTC')
cargo bench -p clockscope-benches --bench clocks -- "$@" 2>&1 | tee "$log" >&2

cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
[ -n "$cpu_model" ] || cpu_model=$(uname -m)
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo "unknown")
loadavg=$(cut -d" " -f1-3 /proc/loadavg 2>/dev/null || echo "unknown")
versions=$(awk '/^name = "(quanta|minstant|criterion)"$/ {n=$3; getline; gsub(/"/, "", n); gsub(/"/, "", $3); printf "%s %s, ", n, $3}' Cargo.lock | sed 's/, $//')
ours_line=$(grep -m1 '^clockscope::instant:' "$log" || echo "clockscope::instant: (line not found in the bench output)")

python3 - "$crit" "$started" "$cpu_model" "$(uname -r)" "$clocksource" "$(nproc)" "$versions" "$ours_line" "$loadavg" <<'PY'
import json, os, sys

crit, started, cpu, kernel, clocksource, ncpu, versions, ours_line, loadavg = sys.argv[1:10]

def est(group, bench):
    path = os.path.join(crit, group, bench, "new", "estimates.json")
    try:
        with open(path) as f:
            e = json.load(f)
    except OSError:
        return None
    point = (e.get("slope") or e["mean"])["point_estimate"]
    return float(point)

def fmt(v, width=9):
    return f"{v:{width}.2f}" if v is not None else f"{'-':>{width}}"

print(f"Run: {started}; machine: {cpu}, {ncpu} CPUs, kernel {kernel}, clocksource {clocksource}; load average after the run {loadavg}")
print(f"Crates: {versions}")
print(ours_line)
print()
print("One reading, ns (criterion point estimate)       now()   now()+ns since a start")
rows = [
    ("clockscope Instant::now / elapsed().as_nanos()", "now_clockscope", "elapsed_ns_clockscope"),
    ("clockscope raw_ticks + ticks_to_ns", None, "elapsed_ns_clockscope_raw_ticks"),
    ("clockscope Instant::now_precise", "now_clockscope_precise", None),
    ("std::time::Instant", "now_std", "elapsed_ns_std"),
    ("quanta::Instant", "now_quanta", "elapsed_ns_quanta"),
    ("minstant::Instant", "now_minstant", "elapsed_ns_minstant"),
    ("bare RDTSC (+ Scale::ticks_to_ns)", "now_bare_rdtsc", "elapsed_ns_bare_rdtsc"),
    ("OnceLock::get + RDTSC (design comparison)", "now_design_oncelock_rdtsc", None),
]
for label, now, conv in rows:
    a = est("clocks", now) if now else None
    b = est("clocks", conv) if conv else None
    if a is None and b is None:
        continue
    print(f"  {label:<46}{fmt(a)}{fmt(b, 12)}")

def verdict(ok):
    return "met" if ok else "MISSED"

print()
ours = est("clocks", "now_clockscope")
rivals = {k: est("clocks", f"now_{k}") for k in ("quanta", "minstant")}
rivals = {k: v for k, v in rivals.items() if v is not None}
if ours is not None and rivals:
    name, best = min(rivals.items(), key=lambda kv: kv[1])
    r = ours / best
    print(f"  now(): ours / fastest of quanta, minstant ({name} {best:.2f} ns) = {r:.3f}   target <= 1.00: {verdict(r <= 1.0)}")
bare = est("clocks", "now_bare_rdtsc")
if ours is not None and bare is not None:
    d = ours - bare
    print(f"  now(): ours - bare RDTSC = {d:+.2f} ns   target <= 1 ns: {verdict(d <= 1.0)}")
ours_c = est("clocks", "elapsed_ns_clockscope")
rivals_c = {k: est("clocks", f"elapsed_ns_{k}") for k in ("quanta", "minstant")}
rivals_c = {k: v for k, v in rivals_c.items() if v is not None}
if ours_c is not None and rivals_c:
    name, best = min(rivals_c.items(), key=lambda kv: kv[1])
    print(f"  now()+ns: ours / fastest of quanta, minstant ({name} {best:.2f} ns) = {ours_c / best:.3f}")
std = est("clocks", "now_std")
if ours is not None and std is not None:
    print(f"  now(): ours / std::time::Instant = {ours / std:.3f}")

print()
print("Contention, ns per now() per thread (slowest thread)    1 thread   2 threads   2/1")
for lib in ("clockscope", "quanta", "minstant", "std"):
    one = est("contention", f"threads_1_{lib}")
    two = est("contention", f"threads_2_{lib}")
    if one is None and two is None:
        continue
    ratio = f"{two / one:6.2f}" if one and two else f"{'-':>6}"
    print(f"  {lib:<52}{fmt(one, 9)}{fmt(two, 12)}{ratio:>7}")
PY

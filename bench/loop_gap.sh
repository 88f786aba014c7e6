#!/usr/bin/env bash
# Runs the criterion group `loop_gap` (crates/benches/benches/loop_gap.rs)
# RUNS times (default 3) and prints, per variant of the RDTSC measuring
# loop, the median ns per read over the runs, their spread (min-max), and
# the median of the per-run ratios and differences to the bare RDTSC of the
# same run; with the CPU, kernel, clocksource and the load average before
# and after each run (the machine may be shared).
#
#   bench/loop_gap.sh [RUNS]
#
# Numbers are criterion's point estimates (slope, else mean) from
# <target>/criterion/loop_gap/<bench>/new/estimates.json, read after each run.
set -euo pipefail

cd "$(dirname "$0")/.."
runs=${1:-3}
case $runs in '' | *[!0-9]* | 0)
    echo "loop_gap.sh: RUNS must be a positive integer, got '$runs'" >&2
    exit 2
    ;;
esac
command -v python3 >/dev/null || {
    echo "loop_gap.sh: python3 is needed to read criterion's JSON estimates" >&2
    exit 2
}
target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
crit="$target_dir/criterion/loop_gap"
results=$(mktemp)
log=$(mktemp)
trap 'rm -f "$results" "$log"' EXIT

started=$(date -u '+%Y-%m-%d %H:%M UTC')
cargo bench -p clockscope-benches --bench loop_gap --no-run >&2
for i in $(seq "$runs"); do
    rm -rf "$crit"
    before=$(cut -d" " -f1 /proc/loadavg)
    cargo bench -p clockscope-benches --bench loop_gap 2>&1 | tee "$log" >&2
    after=$(cut -d" " -f1 /proc/loadavg)
    measure_line=$(grep -m1 '^loop_gap: clockscope::measure' "$log" || echo "")
    python3 - "$crit" "$i" "$before" "$after" "$measure_line" >>"$results" <<'PY'
import json, os, sys
crit, run, before, after, measure_line = sys.argv[1:6]
out = {"run": int(run), "load": [before, after], "measure": measure_line, "ns": {}}
for bench in sorted(os.listdir(crit)) if os.path.isdir(crit) else []:
    path = os.path.join(crit, bench, "new", "estimates.json")
    if os.path.exists(path):
        with open(path) as f:
            e = json.load(f)
        out["ns"][bench] = float((e.get("slope") or e["mean"])["point_estimate"])
print(json.dumps(out))
PY
done

cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
family=$(awk -F': ' '/^cpu family/ {f=$2} /^model\t/ {m=$2} END {printf "family %s model %s", f, m}' /proc/cpuinfo 2>/dev/null || true)
tsc_line=$({ dmesg 2>/dev/null || true; } | grep -o 'tsc: Detected [0-9.]* MHz' | head -n1 || true)
[ -n "$tsc_line" ] || tsc_line="tsc: (kernel log unreadable)"
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo "unknown")

python3 - "$results" "$started" "${cpu_model:-$(uname -m)} ($family, \"$tsc_line\")" "$(uname -r)" "$clocksource" "$(nproc)" <<'PY'
import json, statistics, sys
path, started, cpu, kernel, clocksource, ncpu = sys.argv[1:7]
runs = [json.loads(l) for l in open(path) if l.strip()]
print(f"Run: {started}; machine: {cpu}, {ncpu} CPUs, kernel {kernel}, clocksource {clocksource}")
print("Load average (1 min) before/after each run: " + ", ".join(f"{r['load'][0]}/{r['load'][1]}" for r in runs))
for r in runs:
    if r["measure"]:
        print(f"  run {r['run']}: {r['measure'].removeprefix('loop_gap: ')}")
order = ["bare", "lfence_rdtsc", "diff", "diff_end", "diff_alu_chain", "table", "table_end",
         "table_load_only", "table_store_only", "table_deferred",
         "table_fixed_slot", "table_two_tables", "run_length"]
names = [b for b in order if any(b in r["ns"] for r in runs)]
names += sorted({b for r in runs for b in r["ns"]} - set(names))
print()
print(f"ns per read, {len(runs)} runs     median   min-max         / bare (median)   - bare (median)")
for b in names:
    v = [r["ns"][b] for r in runs if b in r["ns"]]
    ratio = [r["ns"][b] / r["ns"]["bare"] for r in runs if b in r["ns"] and "bare" in r["ns"]]
    diff = [r["ns"][b] - r["ns"]["bare"] for r in runs if b in r["ns"] and "bare" in r["ns"]]
    rs = f"{statistics.median(ratio):8.3f}" if ratio else f"{'-':>8}"
    ds = f"{statistics.median(diff):+8.2f} ns" if diff else ""
    print(f"  {b:<24}{statistics.median(v):8.2f}   {min(v):6.2f}-{max(v):<6.2f}   {rs}          {ds}")
PY

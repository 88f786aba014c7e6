#!/usr/bin/env bash
# EXPLAIN's prediction against a real server: observed / predicted per clock
# source, check's per-row predictions against what the server shows, and how
# stable check's predictions are from run to run.
#
#   bench/explain_vs_server.sh CONNINFO [RUNS] [CHECK_RUNS]
#
# CONNINFO: a libpq conninfo for the server (e.g. "host=/tmp port=5432
# user=postgres dbname=postgres"); a superuser measures both
# timing_clock_source values on PostgreSQL 19. RUNS (default 3): runs of
# `clockscope explain` (1M rows, default options). CHECK_RUNS (default 5):
# runs of `clockscope check -d 0.3`, alternating with the explain runs.
#
# Prints, per explain run and clock source: the observed overhead per row
# ((TIMING ON - TIMING OFF) / rows), the model's prediction per row with its
# 95% interval, and observed / predicted (target 0.85-1.15). Then check's
# per-row predictions (system clock and RDTSC) per run, each against the
# median server observation of that clock (target for RDTSC on PostgreSQL
# 19: within +-25%), and each run's spread around the median of the check
# runs (target: within +-15%). Every number comes from the JSON the two
# commands print; the machine (CPU, kernel, clocksource, load) and the date
# are printed with them.
set -euo pipefail

cd "$(dirname "$0")/.."
conninfo=${1:-}
runs=${2:-3}
check_runs=${3:-5}
if [ -z "$conninfo" ]; then
    echo "explain_vs_server.sh: CONNINFO is required (e.g. \"host=/tmp port=5432 user=postgres dbname=postgres\")" >&2
    exit 2
fi
for v in "$runs" "$check_runs"; do
    case "$v" in
    '' | *[!0-9]* | 0)
        echo "explain_vs_server.sh: RUNS and CHECK_RUNS must be whole numbers above 0, got '$v'" >&2
        exit 2
        ;;
    esac
done
command -v python3 >/dev/null || {
    echo "explain_vs_server.sh: python3 is needed to read the JSON" >&2
    exit 2
}

cargo build --release -p clockscope-cli --bin clockscope >&2
target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
bin="$target_dir/release/clockscope"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_before=$(cut -d" " -f1-3 /proc/loadavg 2>/dev/null || echo "unknown")
most=$((runs > check_runs ? runs : check_runs))
for i in $(seq 1 "$most"); do
    if [ "$i" -le "$runs" ]; then
        echo "explain run $i/$runs" >&2
        "$bin" explain --dsn "$conninfo" --format json >"$work/explain.$i.json" || {
            echo "explain_vs_server.sh: clockscope explain failed (run $i)" >&2
            exit 1
        }
    fi
    if [ "$i" -le "$check_runs" ]; then
        echo "check run $i/$check_runs" >&2
        # Exit 1 is a verdict (a problem found), not a failure.
        "$bin" check -d 0.3 --format json >"$work/check.$i.json" || [ $? -eq 1 ]
    fi
done

cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
[ -n "$cpu_model" ] || cpu_model=$(uname -m)
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo "unknown")
load_after=$(cut -d" " -f1-3 /proc/loadavg 2>/dev/null || echo "unknown")
echo "Run: $started; machine: $cpu_model, $(nproc) CPUs, kernel $(uname -r), clocksource $clocksource"
echo "Load average before $load_before, after $load_after"

python3 - "$work" "$runs" "$check_runs" <<'EOF'
import json, statistics, sys

work, runs, check_runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(name):
    with open(f"{work}/{name}") as f:
        return json.load(f)

def fmt(v, d=2):
    return "-" if v is None else f"{v:.{d}f}"

observed = {}   # "system" / "tsc" -> observed ns per row, per run
io_explain = []  # explain's INSTR_TIME_SET_CURRENT price per read, and its clock
first = load("explain.1.json")
print(f"Server: PostgreSQL {first['server_version']} ({first['server_version_num']}), {first['rows']:,} rows, "
      f"{first['workload']}")
print()
def paired(s):
    p = s.get("paired_in_time")
    if not p:
        return f"{'-':>7} {'-':>12}"
    iv = "-" if p["low"] is None else f"{p['low']:.2f}-{p['high']:.2f}"
    return f"{p['observed_over_predicted']:>7.2f} {iv:>12}"


print("explain: observed and predicted TIMING ON cost per row (target observed / predicted 0.85-1.15)")
print("(paired: each balanced block of two pairs against the model slices run just before its pairs, median of")
print("the ratios and its 95% interval; it holds when the machine changes speed during the runs)")
print("(observed: explain's one estimate, stated when its result is resolved; see bench/explain_series.sh)")
print(f"  {'run':<4} {'clock source':<14} {'observed':>10} {'predicted':>10} {'95% interval':>19} {'obs/pred':>9} "
      f"{'paired':>7} {'paired 95%':>12}  status")
for i in range(1, runs + 1):
    r = load(f"explain.{i}.json")
    for s in r["clock_sources"]:
        key = "tsc" if "tsc" in s["clock_source"] else "system"
        observed.setdefault(key, []).append(s["overhead_per_row_ns"])
        lo, hi = s["predicted_overhead_per_row_low_ns"], s["predicted_overhead_per_row_high_ns"]
        interval = "-" if lo is None else f"{lo:.2f}-{hi:.2f}"
        print(f"  {i:<4} {s['clock_source']:<14} {s['overhead_per_row_ns']:>10.2f} "
              f"{fmt(s['predicted_overhead_per_row_ns']):>10} {interval:>19} "
              f"{fmt(s['observed_over_predicted']):>9} {paired(s)}  {s['prediction_status']}")
    io = r["timing_settings"]["io_read"]
    if io:
        io_explain.append((io["ns"], io["clock"]))
        print(f"       I/O timing priced at {io['ns']:.1f} ns per read ({io['clock']})")
for key, v in observed.items():
    print(f"  median observed, {key}: {statistics.median(v):.2f} ns per row over {len(v)} runs")

print()
print("check -d 0.3: predicted ns per row per node (target: within +-15% of the median of the runs; RDTSC within")
print("+-25% of the server's observed tsc cost)")
preds = {"system": [], "RDTSC": []}
io_check = {}  # clock display name -> check's read cost per run
for i in range(1, check_runs + 1):
    doc = load(f"check.{i}.json")
    for c in doc["clocks"]:
        io_check.setdefault(c["display_name"], []).append(c["read_cost_ns"])
    v = doc["verdict"]
    row = []
    for key, p in (("system", v["explain_system"]), ("RDTSC", v["explain_tsc"])):
        val = p and p["per_row_per_node_ns"]
        preds[key].append(val)
        interval = p and p["executor_loop"] and p["executor_loop"]["interval_text"]
        row.append(f"{key} {fmt(val)} ({interval or (p and p['status']) or 'not measured'})")
    print(f"  run {i}: " + "; ".join(row))
for key, vals in preds.items():
    got = [x for x in vals if x is not None]
    if not got:
        print(f"  {key}: no resolved prediction")
        continue
    med = statistics.median(got)
    spread = max(abs(x / med - 1) for x in got) * 100 if med else float("nan")
    line = f"  {key}: median {med:.2f} ns, {len(got)}/{len(vals)} resolved, largest distance from the median {spread:.1f}%"
    server_key = "tsc" if key == "RDTSC" else "system"
    if observed.get(server_key):
        obs = statistics.median(observed[server_key])
        line += f"; server {obs:.2f} ns, check / server {med / obs:.2f}"
    print(line)

print()
print("track_io_timing's read (INSTR_TIME_SET_CURRENT), ns per read (target: check and explain within 20%)")
if io_explain:
    clock = io_explain[0][1]
    e = statistics.median(x for x, _ in io_explain)
    c = io_check.get(clock)
    if c:
        cm = statistics.median(c)
        print(f"  {clock}: explain {e:.1f} (median of {len(io_explain)}), check {cm:.1f} (median of {len(c)}), "
              f"explain / check {e / cm:.2f}")
    else:
        print(f"  {clock}: explain {e:.1f}; check did not measure that clock")
EOF

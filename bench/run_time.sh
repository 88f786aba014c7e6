#!/usr/bin/env bash
# Wall time of default `clockscope check` runs against issue 24's limit:
# 1.3 x (clocks x -d) + 0.5 s. Usage: bench/run_time.sh [RUNS] [DURATION_S]
# (default 5 runs of -d 1). Builds the release binary first; prints the machine
# (CPU, kernel, clocksource, load) and, per run, the wall time, the limit and
# their ratio (<= 1.00 is within the limit). CLOCKSCOPE_BIN=path uses that
# binary instead of building one (the budgets are wall-clock time, so a debug
# build's run time is comparable; its read costs are not).
set -euo pipefail
runs=${1:-5}
d=${2:-1}
cd "$(dirname "$0")/.."
if [ -n "${CLOCKSCOPE_BIN:-}" ]; then
    bin=$CLOCKSCOPE_BIN
else
    cargo build --release -q -p clockscope-cli --bin clockscope
    bin=target/release/clockscope
fi
echo "binary:      $bin"
echo "CPU:         $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "kernel:      $(uname -r)"
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
echo "date:        $(date -u +%Y-%m-%dT%H:%M:%SZ)"
# The default clocks: as many rows as the JSON report has clocks.
clocks=$("$bin" -d 0.01 --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["clocks"]))')
limit=$(python3 -c "print(1.3 * $clocks * $d + 0.5)")
echo "clocks:      $clocks at -d $d: limit 1.3 x $clocks x $d + 0.5 = $limit s"
printf '%-4s %-10s %-9s %-7s %s\n' run load1 wall_s ratio within
worst=0
for i in $(seq 1 "$runs"); do
    load=$(cut -d' ' -f1 /proc/loadavg)
    start=$(date +%s.%N)
    "$bin" -d "$d" >/dev/null
    end=$(date +%s.%N)
    wall=$(python3 -c "print(f'{$end - $start:.2f}')")
    ratio=$(python3 -c "print(f'{$wall / $limit:.2f}')")
    within=$(python3 -c "print('yes' if $wall <= $limit else 'NO')")
    worst=$(python3 -c "print(max($worst, $ratio))")
    printf '%-4s %-10s %-9s %-7s %s\n' "$i" "$load" "$wall" "$ratio" "$within"
done
echo "worst ratio: $worst (wall / limit)"

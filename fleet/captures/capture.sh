#!/usr/bin/env bash
# Captures the fleet unit's own measurement (clockscope.service's command:
# `nice -n 19 clockscope check -d 0.2 --format prometheus`) on this machine,
# for fleet/clockscope.rules.test.yml:
#   quiet.prom  as the machine is (run it when nothing else runs; on a shared
#               machine that is never idle, QUIET_PREFIX='chrt -f 10' runs it
#               SCHED_FIFO, so that other processes cannot preempt it: what an
#               idle host gives, interrupts and the hypervisor still included);
#   busy.prom   beside two busy loops, `sh -c 'while :; do :; done'`, pinned
#               one to each of the first two CPUs with taskset (a stress-like
#               load on a 2-CPU host).
# Usage: fleet/captures/capture.sh [BIN] [OUTDIR]   (default: target/debug/clockscope, fleet/captures)
# Prints the load average before each run; README.md records the runs committed.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-target/debug/clockscope}"
out="${2:-fleet/captures}"
mkdir -p "$out"
run() { ${2:-} nice -n 19 "$bin" check -d 0.2 --format prometheus --output "$1" || [ $? = 1 ]; }

printf 'quiet: load average %s%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "${QUIET_PREFIX:+, under $QUIET_PREFIX}"
run "$out/quiet.prom" "${QUIET_PREFIX:-}"

loops=()
trap 'for p in "${loops[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
for cpu in 0 1; do
    taskset -c "$cpu" sh -c 'while :; do :; done' &
    loops+=("$!")
done
sleep 2
printf 'busy: load average %s, busy loops %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "${loops[*]}"
run "$out/busy.prom"
for p in "${loops[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
loops=()
grep -hE '^clockscope_(interference_lost_ratio|measurement_noisy|clock_read_cost_seconds\{clock="monotonic"|clock_loop_average_seconds\{clock="monotonic"|verdict\{status="good"|problems)' \
    "$out/quiet.prom" "$out/busy.prom"

#!/usr/bin/env python3
"""Prints a capture (a clockscope.prom written by a real run) as promtool
`input_series` for one host: every sample of the metrics the alert rules
read, labelled instance=INSTANCE, job="node", repeated for MINUTES one-minute
samples (node_exporter re-exposes the file between the 15-minute runs).

    fleet/captures/to-series.py fleet/captures/busy.prom busy 240

scripts/test-fleet.sh runs it again on every capture and fails when
fleet/clockscope.rules.test.yml does not hold its output verbatim, so the
rule tests stay fed with what the tool really wrote."""
import re
import sys

# The metrics fleet/clockscope.rules.yml reads.
RULE_METRICS = {
    "clockscope_verdict", "clockscope_tsc_trusted", "clockscope_info", "clockscope_syscall_fallback",
    "clockscope_clock_read_cost_seconds", "clockscope_clock_loop_average_seconds", "clockscope_clock_read_seconds",
    "clockscope_explain_predicted_slowdown_ratio", "clockscope_measurement_noisy",
    "clockscope_interference_lost_ratio", "clockscope_last_run_timestamp_seconds",
}
SAMPLE = re.compile(r'^(clockscope_\w+)(?:\{(.*)\})? (\S+)$')


def series(path, instance, minutes):
    out = []
    for line in open(path, encoding="utf-8"):
        m = SAMPLE.match(line.rstrip("\n"))
        if not m or m.group(1) not in RULE_METRICS:
            continue
        name, labels, value = m.groups()
        labels = (labels + "," if labels else "") + f'instance="{instance}",job="node"'
        # YAML single quotes: a ' inside doubles.
        sel = f"{name}{{{labels}}}".replace("'", "''")
        out.append(f"      - series: '{sel}'\n        values: '{value}x{minutes}'")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: to-series.py CAPTURE.prom INSTANCE MINUTES")
    print("\n".join(series(sys.argv[1], sys.argv[2], int(sys.argv[3]))))

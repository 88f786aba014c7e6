#!/usr/bin/env python3
"""Writes fixtures/*.txt and fixtures/*.expected.json for `clockscope dmesg`.

Every kernel line below is built from a format string documented in
FORMATS.md (with the kernel version it belongs to); the numbers are made up
but consistent (kHz values are exactly what the %lu.%03lu line says).
Each fixture is rendered in one paste style (see FORMATS.md part B).
Re-run: python3 gen_fixtures.py   (writes into ./fixtures, deterministic).
"""
import datetime
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
BOOT = datetime.datetime(2026, 11, 24, 20, 0, 1, tzinfo=datetime.timezone.utc)
HOST = "db1"

LVL = {"emerg": 0, "alert": 1, "crit": 2, "err": 3, "warn": 4, "notice": 5, "info": 6, "debug": 7}
# dmesg -x prints the level name padded to 6 and the facility to 6 ("kern  :warn  : ").
XLVL = {"err": "err   ", "warn": "warn  ", "notice": "notice", "info": "info  ", "debug": "debug "}


def ts(t):
    return "[%12.6f]" % t


def wall(t):
    return BOOT + datetime.timedelta(seconds=t)


def render(style, t, lvl, msg, seq):
    w = wall(t)
    if style == "dmesg":
        return f"{ts(t)} {msg}"
    if style == "dmesg_notime":
        return msg
    if style == "dmesg_T":  # dmesg -T: ctime-like, %e day
        return f"[{w.strftime('%a %b %e %H:%M:%S %Y')}] {msg}"
    if style == "dmesg_iso":  # dmesg --time-format iso (comma before usec)
        return f"{w.strftime('%Y-%m-%dT%H:%M:%S')},{w.microsecond:06d}+00:00 {msg}"
    if style == "dmesg_x":  # dmesg -x (decode facility and level)
        return f"kern  :{XLVL[lvl]}: {ts(t)} {msg}"
    if style == "dmesg_r":  # dmesg -r (raw: <prio> = facility*8 + level; kern = 0)
        return f"<{LVL[lvl]}>{ts(t)} {msg}"
    if style == "dmesg_caller":  # CONFIG_PRINTK_CALLER, kernel-side format (dmesg -S, console)
        caller = "T0" if t < 0.2 else ("T1" if t < 2 else "C3")
        return f"{ts(t)}[{caller:>6}] {msg}"
    if style == "kmsg":  # /dev/kmsg record: prio,seq,usec,flags[,caller=..];msg
        return f"{LVL[lvl]},{seq},{int(round(t * 1e6))},-,caller=T{1 if t > 0.1 else 0};{msg}"
    if style == "journal":  # journalctl -k (short): no [ts]
        return f"{w.strftime('%b %d %H:%M:%S')} {HOST} kernel: {msg}"
    if style == "journal_precise":  # journalctl -k -o short-precise
        return f"{w.strftime('%b %d %H:%M:%S')}.{w.microsecond:06d} {HOST} kernel: {msg}"
    if style == "journal_iso":  # journalctl -k -o short-iso (systemd >= 249 prints +00:00)
        return f"{w.strftime('%Y-%m-%dT%H:%M:%S')}+00:00 {HOST} kernel: {msg}"
    if style == "syslog":  # rsyslog traditional / kern.log with the kernel's [ts]
        return f"{w.strftime('%b %e %H:%M:%S')} {HOST} kernel: {ts(t)} {msg}"
    if style == "rfc5424":  # rsyslog RSYSLOG_FileFormat (high-precision ISO) + [ts]
        return f"{w.strftime('%Y-%m-%dT%H:%M:%S')}.{w.microsecond:06d}+00:00 {HOST} kernel: {ts(t)} {msg}"
    if style == "journal_monotonic":  # journalctl -k -o short-monotonic
        return f"{ts(t)} {HOST} kernel: {msg}"
    if style == "openwrt":  # OpenWrt logread: "<ctime> kern.<level> kernel: [ts] msg"
        return f"{w.strftime('%a %b %e %H:%M:%S %Y')} kern.{lvl} kernel: {ts(t)} {msg}"
    raise ValueError(style)


def write(name, style, lines, expected, *, crlf=False, indent="", noise=None, kmsg_dict=None, note=""):
    out = []
    seq = 0
    for i, (t, lvl, msg) in enumerate(lines):
        if noise and i in noise:
            out.extend(noise[i])
        out.append(indent + render(style, t, lvl, msg, seq))
        if kmsg_dict and i in kmsg_dict:
            out.extend(" " + d for d in kmsg_dict[i])
        seq += 1
    eol = "\r\n" if crlf else "\n"
    with open(os.path.join(OUT, name + ".txt"), "w", newline="") as f:
        f.write(eol.join(out) + eol)
    expected = dict(expected)
    expected = {"fixture": name + ".txt", "paste_style": style + (" +CRLF" if crlf else "") + (" +indent" if indent else ""),
                "note": note, **expected}
    with open(os.path.join(OUT, name + ".expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")


def exp(*, unstable, reasons, final, watchdog, warps, proc, tsc, refined, hyp, events, hyp_tsc=None, kernel):
    return {
        "kernel": kernel,
        "tsc_marked_unstable": unstable,
        "unstable_reasons": reasons,
        "final_clocksource": final,
        "watchdog": watchdog,
        "warp_cycles": warps,
        "detected_processor_khz": proc,
        "detected_tsc_khz": tsc,
        "refined_khz": refined,
        "hypervisor_tsc_khz": hyp_tsc,
        "hypervisor": hyp,
        "events": events,
    }


W22 = " " * 22  # the watchdog detail lines' own indentation (part of the format string)

# 1 ---------------------------------------------------------------- bare metal, 1 socket, Intel, healthy (6.8)
L = [
    (0.0, "info", "Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103) #49-Ubuntu SMP PREEMPT_DYNAMIC"),
    (0.0, "info", "DMI: Supermicro SYS-5019C-M/X11SCM-F, BIOS 2.6 02/22/2023"),
    (0.0, "info", "tsc: Detected 3600.000 MHz processor"),
    (0.0, "info", "tsc: Detected 3599.996 MHz TSC"),
    (0.021345, "info", "TSC deadline timer available"),
    (0.062077, "info", "clocksource: refined-jiffies: mask: 0xffffffff max_cycles: 0xffffffff, max_idle_ns: 7645519600211568 ns"),
    (0.151102, "info", "clocksource: tsc-early: mask: 0xffffffffffffffff max_cycles: 0x33e452fbb2f, max_idle_ns: 440795236593 ns"),
    (0.305112, "info", "clocksource: hpet: mask: 0xffffffff max_cycles: 0xffffffff, max_idle_ns: 133484882848 ns"),
    (0.312004, "info", "clocksource: Switched to clocksource tsc-early"),
    (0.331210, "info", "clocksource: acpi_pm: mask: 0xffffff max_cycles: 0xffffff, max_idle_ns: 2085701024 ns"),
    (0.790301, "info", "clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x33e452fbb2f, max_idle_ns: 440795236593 ns"),
    (0.790512, "info", "clocksource: Switched to clocksource tsc"),
]
write("baremetal_intel_1s_healthy", "dmesg", L, exp(
    kernel="6.8", unstable=False, reasons=[], final="tsc", watchdog=None, warps=[], proc=3600000, tsc=3599996,
    refined=None, hyp=None, events=["tsc_detected_processor", "tsc_detected_tsc", "tsc_deadline_timer",
                                    "clocksource_switched", "clocksource_switched"]),
    note="CPUID 0x15/0x16 known frequency: no Refined line, tsc registered directly; 'clocksource: X: mask:' registration lines are not events")

# 2 ---------------------------------------------------------------- 2 sockets, sync warp, 3.2 (old formats)
L = [
    (0.0, "info", "Linux version 3.2.0-4-amd64 (debian-kernel@lists.debian.org) (gcc version 4.6.3 (Debian 4.6.3-14) ) #1 SMP Debian 3.2.96-2"),
    (0.0, "info", "Initializing cgroup subsys cpuset"),
    (0.0, "info", "Fast TSC calibration using PIT"),
    (0.0, "info", "Detected 2400.084 MHz processor."),
    (0.004001, "info", "Calibrating delay loop (skipped), value calculated using timer frequency.. 4800.16 BogoMIPS (lpj=9600336)"),
    (0.176210, "info", "Booting Node   0, Processors  #1 #2 #3"),
    (0.181305, "info", "checking TSC synchronization [CPU#0 -> CPU#1]: passed."),
    (0.203417, "info", "checking TSC synchronization [CPU#0 -> CPU#2]: passed."),
    (0.225506, "info", "checking TSC synchronization [CPU#0 -> CPU#3]: passed."),
    (0.247611, "info", "Booting Node   1, Processors  #4"),
    (0.269810, "info", "checking TSC synchronization [CPU#0 -> CPU#4]:"),
    (0.289905, "warn", "Measured 2588706918 cycles TSC warp between CPUs, turning off TSC clock."),
    (0.289911, "info", "Marking TSC unstable due to check_tsc_sync_source failed"),
    (1.012335, "info", "Switching to clocksource hpet"),
]
write("baremetal_2s_warp_3x", "syslog", L, exp(
    kernel="3.2", unstable=True, reasons=["check_tsc_sync_source failed"], final="hpet", watchdog=None,
    warps=[2588706918], proc=2400084, tsc=None, refined=None, hyp=None,
    events=["tsc_fast_calibration_ok", "tsc_detected_processor", "tsc_sync_passed", "tsc_sync_passed", "tsc_sync_passed",
            "tsc_sync_warp", "tsc_marked_unstable", "clocksource_switched"]),
    note="pre-3.5 tsc.c: no 'tsc: ' prefix, trailing '.' on Detected; pre-3.10 'Switching to clocksource'; "
         "'checking TSC synchronization [..]:' + 'Measured ..' is ONE warp event (CPU#0 -> CPU#4, 2588706918 cycles); no Refined line on an unstable TSC")

# 3 ---------------------------------------------------------------- 4 sockets, TSC_ADJUST compensation then warp, 6.6
L = [
    (0.0, "info", "Linux version 6.6.0-31.el9 (mockbuild@build) #1 SMP PREEMPT_DYNAMIC"),
    (0.0, "info", "tsc: Fast TSC calibration using PIT"),
    (0.0, "info", "tsc: Detected 2099.998 MHz processor"),
    (0.158201, "info", "clocksource: tsc-early: mask: 0xffffffffffffffff max_cycles: 0x1e452ea631d, max_idle_ns: 440795244572 ns"),
    (1.201006, "info", "smp: Bringing up secondary CPUs ..."),
    (1.512880, "warn", "TSC ADJUST compensate: CPU72 observed 1174 warp. Adjust: 1174"),
    (1.533011, "warn", "TSC ADJUST compensate: CPU72 observed -86 warp. Adjust: 1088"),
    (1.553104, "warn", "TSC synchronization [CPU#0 -> CPU#72]:"),
    (1.553106, "warn", "Measured 43 cycles TSC warp between CPUs, turning off TSC clock."),
    (1.553219, "info", "tsc: Marking TSC unstable due to check_tsc_sync_source failed"),
    (2.940233, "info", "clocksource: hpet: mask: 0xffffffff max_cycles: 0xffffffff, max_idle_ns: 133484873504 ns"),
    (2.951877, "info", "clocksource: Switched to clocksource hpet"),
]
write("baremetal_4s_warp_6x", "journal", L, exp(
    kernel="6.6", unstable=True, reasons=["check_tsc_sync_source failed"], final="hpet", watchdog=None,
    warps=[43], proc=2099998, tsc=None, refined=None, hyp=None,
    events=["tsc_fast_calibration_ok", "tsc_detected_processor", "tsc_adjust_compensate", "tsc_adjust_compensate",
            "tsc_sync_warp", "tsc_marked_unstable", "clocksource_switched"]),
    note="journalctl -k: no [ts]; tsc_sync.c has no pr_fmt (no 'tsc: ' on its lines); warp_cycles only from 'Measured' lines, "
         "the compensate warps (1174, -86) are TSC_ADJUST events")

# 4 ---------------------------------------------------------------- watchdog, old one-line form, 3.2, no timestamps
L = [
    (0.0, "info", "Fast TSC calibration using PIT"),
    (0.0, "info", "Detected 2793.687 MHz processor."),
    (0.7, "info", "Switching to clocksource hpet"),
    (1.8, "info", "Refined TSC clocksource calibration: 2793.552 MHz."),
    (1.9, "info", "Switching to clocksource tsc"),
    (5000.0, "warn", "Clocksource tsc unstable (delta = -116862067 ns)"),
    (5000.1, "info", "Switching to clocksource hpet"),
]
write("baremetal_watchdog_3x_oneline", "dmesg_notime", L, exp(
    kernel="3.2", unstable=True, reasons=["clocksource watchdog"], final="hpet", watchdog=None,
    warps=[], proc=2793687, tsc=None, refined=2793552, hyp=None,
    events=["tsc_fast_calibration_ok", "tsc_detected_processor", "clocksource_switched", "tsc_refined",
            "clocksource_switched", "watchdog_marked_unstable", "clocksource_switched"]),
    note="pre-4.1 watchdog: one line, no watchdog name, no CPU; skew -116862067 ns; no 'Marking TSC unstable due to' line "
         "before 4.11, so the reason 'clocksource watchdog' is the parser's own (same words later kernels print); watchdog "
         "name is not printed (likely hpet, not stated)")

# 5 ---------------------------------------------------------------- watchdog 4.15, wd_now/cs_now form, dmesg -T
L = [
    (0.0, "info", "tsc: Fast TSC calibration using PIT"),
    (0.0, "info", "tsc: Detected 3392.143 MHz processor"),
    (0.412, "info", "clocksource: Switched to clocksource hpet"),
    (1.532, "info", "tsc: Refined TSC clocksource calibration: 3392.144 MHz"),
    (1.533, "info", "clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x30e5b4a57a6, max_idle_ns: 440795259229 ns"),
    (2.550, "info", "clocksource: Switched to clocksource tsc"),
    (26977.145667, "warn", "clocksource: timekeeping watchdog on CPU3: Marking clocksource 'tsc' as unstable because the skew is too large:"),
    (26977.145674, "warn", f"clocksource: {W22}'hpet' wd_now: 24f422b8 wd_last: 247dea41 mask: ffffffff"),
    (26977.145677, "warn", f"clocksource: {W22}'tsc' cs_now: 144d927c4e cs_last: 140ba6e2a0 mask: ffffffffffffffff"),
    (26977.145690, "info", "tsc: Marking TSC unstable due to clocksource watchdog"),
    (26977.145701, "warn", "TSC found unstable after boot, most likely due to broken BIOS. Use 'tsc=unstable'."),
    (26977.145712, "info", "sched_clock: Marking unstable (26977145712, 4203921)<-(26977159573071, -9656937)"),
    (26977.146218, "info", "clocksource: Switched to clocksource hpet"),
]
write("baremetal_watchdog_4x_wdnow", "dmesg_T", L, exp(
    kernel="4.15", unstable=True, reasons=["clocksource watchdog"], final="hpet", watchdog="hpet",
    warps=[], proc=3392143, tsc=None, refined=3392144, hyp=None,
    events=["tsc_fast_calibration_ok", "tsc_detected_processor", "clocksource_switched", "tsc_refined", "clocksource_switched",
            "watchdog_marked_unstable", "tsc_marked_unstable", "tsc_unstable_after_boot", "sched_clock_unstable",
            "clocksource_switched"]),
    note="4.x form: '... on CPU%d' header + 'wd_now'/'cs_now' detail lines (no wd_nsec); the two detail lines belong to "
         "the watchdog event (CPU3, watchdog 'hpet'); skew is not printed in this form (raw counters only)")

# 6 ---------------------------------------------------------------- watchdog 6.6, wd_nsec + skewed line, /dev/kmsg
L = [
    (0.0, "info", "tsc: Fast TSC calibration using PIT"),
    (0.0, "info", "tsc: Detected 2194.917 MHz processor"),
    (0.301, "info", "clocksource: Switched to clocksource tsc-early"),
    (1.402, "info", "tsc: Refined TSC clocksource calibration: 2194.843 MHz"),
    (1.402, "info", "clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x1fa3704c1ef, max_idle_ns: 440795207117 ns"),
    (2.421, "info", "clocksource: Switched to clocksource tsc"),
    (9.632421, "warn", "clocksource: timekeeping watchdog on CPU2: Marking clocksource 'tsc' as unstable because the skew is too large:"),
    (9.632562, "warn", f"clocksource: {W22}'hpet' wd_nsec: 496465510 wd_now: 35cb8d4b wd_last: 32d60174 mask: ffffffff"),
    (9.632716, "warn", f"clocksource: {W22}'tsc' cs_nsec: 495601885 cs_now: ede20d106 cs_last: e7b28bbd8 mask: ffffffffffffffff"),
    (9.632801, "warn", f"clocksource: {W22}Clocksource 'tsc' skewed -863625 ns (0 ms) over watchdog 'hpet' interval of 496465510 ns (496 ms)"),
    (9.632905, "warn", f"clocksource: {W22}'tsc' is current clocksource."),
    (9.633116, "info", "tsc: Marking TSC unstable due to clocksource watchdog"),
    (9.633370, "warn", "TSC found unstable after boot, most likely due to broken BIOS. Use 'tsc=unstable'."),
    (9.633582, "info", "sched_clock: Marking unstable (9591130806, 42179201)<-(9639096934, -5782662)"),
    (9.634011, "info", "clocksource: Checking clocksource tsc synchronization from CPU 3 to CPUs 0-2,4-7."),
    (9.634321, "warn", "clocksource:         CPUs 5 ahead of CPU 3 for clocksource tsc."),
    (9.634402, "warn", "clocksource:         CPU 3 check durations 2096ns - 4768ns for clocksource tsc."),
    (9.634921, "info", "clocksource: Switched to clocksource hpet"),
]
write("baremetal_watchdog_6x_wdnsec", "kmsg", L, exp(
    kernel="6.6", unstable=True, reasons=["clocksource watchdog"], final="hpet", watchdog="hpet",
    warps=[], proc=2194917, tsc=None, refined=2194843, hyp=None,
    events=["tsc_fast_calibration_ok", "tsc_detected_processor", "clocksource_switched", "tsc_refined", "clocksource_switched",
            "watchdog_marked_unstable", "tsc_marked_unstable", "tsc_unstable_after_boot", "sched_clock_unstable",
            "clocksource_sync_check", "clocksource_sync_ahead", "clocksource_sync_durations", "clocksource_switched"]),
    kmsg_dict={0: ["SUBSYSTEM=cpu", "DEVICE=+cpu:cpu0"]},
    note="/dev/kmsg records (caller= field, one dictionary continuation block starting with a space); 6.3+ adds the "
         "'skewed N ns (M ms) over watchdog W interval of I ns (J ms)' line: skew -863625 ns over a 496465510 ns interval, CPU2")

# 7 ---------------------------------------------------------------- watchdog 5.15, wd_nsec without skewed line, ISO syslog
L = [
    (0.0, "info", "tsc: Detected 2500.000 MHz processor"),
    (0.0, "info", "tsc: Detected 2499.998 MHz TSC"),
    (0.310, "info", "clocksource: Switched to clocksource tsc-early"),
    (1.201, "info", "clocksource: Switched to clocksource tsc"),
    (505.067666, "warn", "clocksource: timekeeping watchdog on CPU6: hpet retried 3 times before success"),
    (505.068593, "warn", "clocksource: timekeeping watchdog on CPU6: Marking clocksource 'tsc' as unstable because the skew is too large:"),
    (505.069596, "warn", f"clocksource: {W22}'hpet' wd_nsec: 499376790 wd_now: be2f200d wd_last: bb3522fe mask: ffffffff"),
    (505.071131, "warn", f"clocksource: {W22}'tsc' cs_nsec: 498867307 cs_now: 103895c060a cs_last: 1034aea96ea mask: ffffffffffffffff"),
    (505.072994, "warn", f"clocksource: {W22}'tsc' is current clocksource."),
    (505.074748, "info", "tsc: Marking TSC unstable due to clocksource watchdog"),
    (505.075001, "warn", "TSC found unstable after boot, most likely due to broken BIOS. Use 'tsc=unstable'."),
    (505.075120, "info", "sched_clock: Marking unstable (505034816502, 40183098)<-(505075120440, -1212)"),
    (505.075601, "warn", "clocksource: Not enough CPUs to check clocksource 'tsc'."),
    (505.076102, "info", "clocksource: Switched to clocksource hpet"),
]
write("baremetal_watchdog_5x_wdnsec", "rfc5424", L, exp(
    kernel="5.15", unstable=True, reasons=["clocksource watchdog"], final="hpet", watchdog="hpet",
    warps=[], proc=2500000, tsc=2499998, refined=None, hyp=None,
    events=["tsc_detected_processor", "tsc_detected_tsc", "clocksource_switched", "clocksource_switched",
            "watchdog_retried", "watchdog_marked_unstable", "tsc_marked_unstable", "tsc_unstable_after_boot",
            "sched_clock_unstable", "clocksource_sync_not_enough_cpus", "clocksource_switched"]),
    note="5.14..6.2 form: wd_nsec/cs_nsec but no 'skewed' line; skew = cs_nsec - wd_nsec = -509483 ns over 499376790 ns")

# 8 ---------------------------------------------------------------- KVM guest, kvm-clock stays, dmesg -x
L = [
    (0.0, "info", "DMI: QEMU Standard PC (i440FX + PIIX, 1996), BIOS 1.14.0-2 04/01/2014"),
    (0.0, "info", "Hypervisor detected: KVM"),
    (0.0, "info", "kvm-clock: Using msrs 4b564d01 and 4b564d00"),
    (0.0, "info", "kvm-clock: cpu 0, msr 3:ffff1001, primary cpu clock"),
    (0.000003, "info", "kvm-clock: using sched offset of 1386118676 cycles"),
    (0.000558, "info", "clocksource: kvm-clock: mask: 0xffffffffffffffff max_cycles: 0x1cd42e4dffb, max_idle_ns: 881590591483 ns"),
    (0.002592, "info", "tsc: Detected 2593.906 MHz processor"),
    (0.061201, "info", "Booting paravirtualized kernel on KVM"),
    (0.420114, "info", "clocksource: Switched to clocksource kvm-clock"),
    (1.532006, "info", "tsc: Refined TSC clocksource calibration: 2593.992 MHz"),
    (1.532110, "info", "clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x2563da43d76, max_idle_ns: 440795252307 ns"),
]
write("kvm_guest_kvmclock", "dmesg_x", L, exp(
    kernel="5.4", unstable=False, reasons=[], final="kvm-clock", watchdog=None, warps=[], proc=2593906, tsc=None,
    refined=2593992, hyp="kvm",
    events=["hypervisor_detected", "kvm_clock", "kvm_clock", "kvm_clock", "tsc_detected_processor", "paravirt_kernel",
            "clocksource_switched", "tsc_refined"]),
    note="kvm-clock (rating 400) outranks tsc (300) before 5.16-ish invariant-TSC preference: TSC healthy but not used")

# 9 ---------------------------------------------------------------- KVM guest, invariant TSC preferred, dmesg -r
L = [
    (0.0, "info", "Hypervisor detected: KVM"),
    (0.0, "info", "kvm-clock: Using msrs 4b564d01 and 4b564d00"),
    (0.000001, "info", "kvm-clock: using sched offset of 4120044715 cycles"),
    (0.000004, "info", "clocksource: kvm-clock: mask: 0xffffffffffffffff max_cycles: 0x1cd42e4dffb, max_idle_ns: 881590591483 ns"),
    (0.000008, "info", "tsc: Detected 2445.404 MHz processor"),
    (0.031110, "info", "TSC deadline timer available"),
    (0.052880, "info", "Booting paravirtualized kernel on KVM"),
    (0.318045, "info", "clocksource: Switched to clocksource kvm-clock"),
    (1.455721, "info", "tsc: Refined TSC clocksource calibration: 2445.406 MHz"),
    (1.455738, "info", "clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x233fca5d3f5, max_idle_ns: 440795316541 ns"),
    (1.456102, "info", "clocksource: Switched to clocksource tsc"),
]
write("kvm_guest_tsc", "dmesg_r", L, exp(
    kernel="6.1", unstable=False, reasons=[], final="tsc", watchdog=None, warps=[], proc=2445404, tsc=None,
    refined=2445406, hyp="kvm",
    events=["hypervisor_detected", "kvm_clock", "kvm_clock", "tsc_detected_processor", "tsc_deadline_timer",
            "paravirt_kernel", "clocksource_switched", "tsc_refined", "clocksource_switched"]),
    note="dmesg -r raw <level> prefix (kern facility 0: <6> info, <4> warn)")

# 10 --------------------------------------------------------------- AMD KVM guest with the P0 firmware-bug line, CRLF
L = [
    (0.0, "info", "Linux version 6.1.0-26-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.1.112-1"),
    (0.0, "warn", "[Firmware Bug]: TSC doesn't count with P0 frequency!"),
    (0.0, "info", "BIOS-provided physical RAM map:"),
    (0.0, "info", "Hypervisor detected: KVM"),
    (0.0, "info", "kvm-clock: Using msrs 4b564d01 and 4b564d00"),
    (0.000002, "info", "kvm-clock: using sched offset of 7727014399 cycles"),
    (0.000005, "info", "clocksource: kvm-clock: mask: 0xffffffffffffffff max_cycles: 0x1cd42e4dffb, max_idle_ns: 881590591483 ns"),
    (0.000011, "info", "tsc: Detected 2445.404 MHz processor"),
    (0.054812, "info", "Booting paravirtualized kernel on KVM"),
    (0.331007, "info", "clocksource: Switched to clocksource kvm-clock"),
    (1.472399, "info", "tsc: Refined TSC clocksource calibration: 2445.388 MHz"),
    (1.472431, "info", "clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x233fa4b7a18, max_idle_ns: 440795307133 ns"),
    (1.473002, "info", "clocksource: Switched to clocksource tsc"),
]
write("amd_kvm_guest_p0", "dmesg", L, exp(
    kernel="6.1", unstable=False, reasons=[], final="tsc", watchdog=None, warps=[], proc=2445404, tsc=None,
    refined=2445388, hyp="kvm",
    events=["firmware_bug_p0", "hypervisor_detected", "kvm_clock", "kvm_clock", "tsc_detected_processor",
            "paravirt_kernel", "clocksource_switched", "tsc_refined", "clocksource_switched"]),
    crlf=True,
    note="CRLF line endings (pasted from Windows); P0 line is benign in a guest (virtual HWCR bit 24 clear)")

# 11 --------------------------------------------------------------- Xen PV, 3.13, indented paste with noise
L = [
    (0.0, "info", "Booting paravirtualized kernel on Xen"),
    (0.0, "info", "Xen version: 4.2.amazon (preserve-AD)"),
    (0.0, "info", "tsc: Detected 2494.028 MHz processor"),
    (0.720113, "info", "Switched to clocksource xen"),
]
write("xen_pv", "dmesg", L, exp(
    kernel="3.13", unstable=False, reasons=[], final="xen", watchdog=None, warps=[], proc=2494028, tsc=None,
    refined=None, hyp="xen",
    events=["paravirt_kernel", "xen_version", "tsc_detected_processor", "clocksource_switched"]),
    indent="    ",
    noise={0: ["Here is what `dmesg | grep -iE 'xen|tsc|clocksource'` says on the old PV instance:", "",
               "```"]},
    note="indented by 4 spaces (markdown paste) with prose and a code fence before it; 3.10..4.1 print "
         "'Switched to clocksource' without the 'clocksource: ' prefix; Xen PV before 4.14 prints no 'Hypervisor "
         "detected' line: the hypervisor comes from 'Booting paravirtualized kernel on Xen'")
# close the code fence after the last line
with open(os.path.join(OUT, "xen_pv.txt"), "a") as f:
    f.write("    ```\n\nand clock_gettime is slow there.\n")

# 12 --------------------------------------------------------------- Xen HVM (AWS), 4.14, dmesg --time-format iso
L = [
    (0.0, "info", "DMI: Xen HVM domU, BIOS 4.11.amazon 08/24/2006"),
    (0.0, "info", "Hypervisor detected: Xen HVM"),
    (0.0, "info", "Xen version 4.11."),
    (0.0, "info", "Xen Platform PCI: I/O protocol version 1"),
    (0.0, "info", "tsc: Fast TSC calibration using PIT"),
    (0.0, "info", "tsc: Detected 2300.062 MHz processor"),
    (0.043677, "info", "Booting paravirtualized kernel on Xen HVM"),
    (0.120201, "info", "clocksource: xen: mask: 0xffffffffffffffff max_cycles: 0x1cd42e4dffb, max_idle_ns: 881590591483 ns"),
    (0.120508, "info", "installing Xen timer for CPU 0"),
    (0.481107, "info", "clocksource: Switched to clocksource xen"),
    (1.608912, "info", "tsc: Refined TSC clocksource calibration: 2300.019 MHz"),
    (1.608935, "info", "clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x212742ae4e1, max_idle_ns: 440795239611 ns"),
]
write("xen_hvm", "dmesg_iso", L, exp(
    kernel="4.14", unstable=False, reasons=[], final="xen", watchdog=None, warps=[], proc=2300062, tsc=None,
    refined=2300019, hyp="xen",
    events=["hypervisor_detected", "xen_version", "tsc_fast_calibration_ok", "tsc_detected_processor", "paravirt_kernel",
            "clocksource_switched", "tsc_refined"]),
    note="dmesg --time-format iso: 'YYYY-MM-DDTHH:MM:SS,uuuuuu+00:00 msg' (comma before the microseconds)")

# 13 --------------------------------------------------------------- Hyper-V old host (2012 R2), 4.4, grep-filtered dmesg
L = [
    (0.0, "info", "Command line: BOOT_IMAGE=/boot/vmlinuz-4.4.0-210-generic root=/dev/sda1 ro clocksource=tsc"),
    (0.0, "info", "Hypervisor detected: Microsoft HyperV"),
    (0.0, "info", "HyperV: features 0x2e7f, hints 0x2c2c"),
    (0.0, "info", "HyperV: LAPIC Timer Frequency: 0xc3500"),
    (0.0, "info", "tsc: Marking TSC unstable due to running on Hyper-V"),
    (0.0, "info", "tsc: Fast TSC calibration failed"),
    (0.0, "info", "tsc: Unable to calibrate against PIT"),
    (0.0, "info", "tsc: using PMTIMER reference calibration"),
    (0.0, "info", "tsc: Detected 2194.918 MHz processor"),
    (0.388121, "warn", "Override clocksource tsc is unstable and not HRT compatible - cannot switch while in HRT/NOHZ mode"),
    (0.388301, "info", "clocksource: Switched to clocksource hyperv_clocksource"),
]
write("hyperv_old_host", "dmesg", L, exp(
    kernel="4.4", unstable=True, reasons=["running on Hyper-V"], final="hyperv_clocksource", watchdog=None, warps=[],
    proc=2194918, tsc=None, refined=None, hyp="hyper-v",
    events=["hypervisor_detected", "hyperv_features", "hyperv_features", "tsc_marked_unstable",
            "tsc_fast_calibration_failed", "tsc_pit_unable", "tsc_reference_calibration", "tsc_detected_processor",
            "override_unstable_not_hrt", "clocksource_switched"]),
    note="a `dmesg | grep -iE 'tsc|clocksource|hyper'` paste; old name 'Microsoft HyperV' and 'HyperV:' prefix; "
         "unconditional TSC unstable on Hyper-V (before the invariant-TSC check); clocksource=tsc override refused")

# 14 --------------------------------------------------------------- Hyper-V new host (2022), 6.8, caller id
L = [
    (0.0, "info", "Hypervisor detected: Microsoft Hyper-V"),
    (0.0, "info", "Hyper-V: privilege flags low 0xae7f, high 0x3b8030, hints 0x64e24, misc 0xbed7b2"),
    (0.0, "info", "Hyper-V: Host Build 10.0.20348.1633-1-0"),
    (0.0, "info", "Hyper-V: LAPIC Timer Frequency: 0xa2c2a"),
    (0.0, "info", "Hyper-V: Using hypercall for remote TLB flush"),
    (0.0, "info", "clocksource: hyperv_clocksource_tsc_page: mask: 0xffffffffffffffff max_cycles: 0x24e6a1710, max_idle_ns: 440795202120 ns"),
    (0.000003, "info", "tsc: Detected 2593.905 MHz processor"),
    (0.021117, "info", "TSC deadline timer available"),
    (0.289010, "info", "clocksource: Switched to clocksource tsc-early"),
    (0.901220, "info", "clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x25644bd94a2, max_idle_ns: 440795206342 ns"),
    (0.901500, "info", "clocksource: Switched to clocksource tsc"),
]
write("hyperv_new_host", "dmesg_caller", L, exp(
    kernel="6.8", unstable=False, reasons=[], final="tsc", watchdog=None, warps=[], proc=2593905, tsc=None,
    refined=None, hyp="hyper-v",
    events=["hypervisor_detected", "hyperv_features", "hyperv_features", "hyperv_features", "tsc_detected_processor",
            "tsc_deadline_timer", "clocksource_switched", "clocksource_switched"]),
    note="CONFIG_PRINTK_CALLER '[    0.000000][    T0] ' prefix; invariant TSC exposed: hyperv_clocksource_tsc_page "
         "rated below tsc, frequency from the hypervisor (TSC_KNOWN_FREQ: no Refined line)")

# 15 --------------------------------------------------------------- VMware, 5.15, journalctl -o short-iso
L = [
    (0.0, "info", "DMI: VMware, Inc. VMware Virtual Platform/440BX Desktop Reference Platform, BIOS 6.00 11/12/2020"),
    (0.0, "info", "vmware: hypercall mode: 0x02"),
    (0.0, "info", "Hypervisor detected: VMware"),
    (0.0, "info", "vmware: TSC freq read from hypervisor : 2195.872 MHz"),
    (0.0, "info", "vmware: Host bus clock speed read from hypervisor : 66000000 Hz"),
    (0.000001, "info", "vmware: using clock offset of 8762927953 ns"),
    (0.000002, "info", "tsc: Detected 2195.872 MHz processor"),
    (0.060102, "info", "Booting paravirtualized kernel on VMware hypervisor"),
    (0.302114, "info", "clocksource: Switched to clocksource tsc-early"),
    (0.811091, "info", "clocksource: tsc: mask: 0xffffffffffffffff max_cycles: 0x1fa6d5ff2b6, max_idle_ns: 440795215436 ns"),
    (0.811300, "info", "clocksource: Switched to clocksource tsc"),
]
write("vmware_guest", "journal_iso", L, exp(
    kernel="5.15", unstable=False, reasons=[], final="tsc", watchdog=None, warps=[], proc=2195872, tsc=None,
    refined=None, hyp="vmware", hyp_tsc=2195872,
    events=["hypervisor_detected", "hypervisor_tsc_frequency", "tsc_detected_processor", "paravirt_kernel",
            "clocksource_switched", "clocksource_switched"]),
    note="frequency from the hypervisor (vmware: prefix since ~4.19; older kernels print the same text without it); "
         "TSC_KNOWN_FREQ|TSC_RELIABLE: no Refined line, no watchdog on the TSC")

# 16 --------------------------------------------------------------- QEMU TCG emulator, 6.1, journalctl -o short-precise
L = [
    (0.0, "info", "DMI: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 1.16.2-debian-1.16.2-1 04/01/2014"),
    (0.0, "info", "tsc: Fast TSC calibration failed"),
    (0.0, "warn", "tsc: Unable to calibrate against PIT"),
    (0.0, "info", "tsc: using HPET reference calibration"),
    (0.0, "info", "tsc: Detected 1995.245 MHz processor"),
    (0.921004, "info", "clocksource: Switched to clocksource tsc-early"),
    (3.802117, "warn", "clocksource: timekeeping watchdog on CPU0: Marking clocksource 'tsc-early' as unstable because the skew is too large:"),
    (3.802389, "warn", f"clocksource: {W22}'hpet' wd_nsec: 511882310 wd_now: 3c5f1aa wd_last: 1c4b5e8 mask: ffffffff"),
    (3.802610, "warn", f"clocksource: {W22}'tsc-early' cs_nsec: 1011960012 cs_now: 2d3e0cc1f cs_last: 24a6fb6d1 mask: ffffffffffffffff"),
    (3.802790, "warn", f"clocksource: {W22}'tsc-early' is current clocksource."),
    (3.802991, "info", "tsc: Marking TSC unstable due to clocksource watchdog"),
    (3.841077, "info", "clocksource: Switched to clocksource hpet"),
]
write("qemu_tcg_emulator", "journal_precise", L, exp(
    kernel="6.1", unstable=True, reasons=["clocksource watchdog"], final="hpet", watchdog="hpet", warps=[],
    proc=1995245, tsc=None, refined=None, hyp=None,
    events=["tsc_fast_calibration_failed", "tsc_pit_unable", "tsc_reference_calibration", "tsc_detected_processor",
            "clocksource_switched", "watchdog_marked_unstable", "tsc_marked_unstable", "clocksource_switched"]),
    note="TCG exposes no hypervisor signature (no 'Hypervisor detected'): hypervisor null though DMI says QEMU; the "
         "watchdog judged 'tsc-early' (counts as the TSC)")

# 17 --------------------------------------------------------------- read-back delay, clock-skew test skipped, OpenWrt logread
L = [
    (0.0, "info", "Hypervisor detected: KVM"),
    (0.0, "info", "tsc: Detected 1497.600 MHz processor"),
    (0.5, "info", "clocksource: Switched to clocksource kvm-clock"),
    (14669.048261, "info", "clocksource: timekeeping watchdog on CPU1: acpi_pm wd-wd read-back delay of 144431ns"),
    (14669.056895, "info", "clocksource: wd-tsc-wd read-back delay of 124876ns, clock-skew test skipped!"),
    (15013.044543, "info", "clocksource: timekeeping watchdog on CPU1: acpi_pm wd-wd read-back delay of 371834ns"),
    (15013.052421, "info", "clocksource: wd-tsc-wd read-back delay of 114539ns, clock-skew test skipped!"),
    (15066.040401, "warn", "clocksource: timekeeping watchdog on CPU3: acpi_pm retried 2 times before success"),
]
write("readback_delay_skipped", "openwrt", L, exp(
    kernel="5.15", unstable=False, reasons=[], final="kvm-clock", watchdog="acpi_pm", warps=[], proc=1497600, tsc=None,
    refined=None, hyp="kvm",
    events=["hypervisor_detected", "tsc_detected_processor", "clocksource_switched", "watchdog_skew_test_skipped",
            "watchdog_skew_test_skipped", "watchdog_retried"]),
    note="OpenWrt logread: '<ctime> kern.<level> kernel: [ts] msg'; each wd-wd + wd-tsc-wd pair is one skipped-test "
         "event (watchdog acpi_pm, CPU1, delays 144431/124876 ns); watchdog reported because it judged the TSC even "
         "though it never condemned it")

# 18 --------------------------------------------------------------- long readout interval + excessive read-back, dmesg -x
L = [
    (0.0, "info", "tsc: Fast TSC calibration using PIT"),
    (0.0, "info", "tsc: Detected 2893.202 MHz processor"),
    (0.3, "info", "clocksource: Switched to clocksource tsc-early"),
    (1.5, "info", "tsc: Refined TSC clocksource calibration: 2893.209 MHz"),
    (1.5, "info", "clocksource: Switched to clocksource tsc"),
    (812.118801, "warn", "clocksource: Long readout interval, skipping watchdog check: cs_nsec: 1044401264 wd_nsec: 1044400727"),
    (3419.880863, "warn", "clocksource: timekeeping watchdog on CPU227: wd-tsc-wd excessive read-back delay of 153560ns vs. limit of 125000ns, wd-wd read-back delay only 11440ns, attempt 3, marking tsc unstable"),
    (3419.936243, "info", "tsc: Marking TSC unstable due to clocksource watchdog"),
    (3420.068173, "warn", "TSC found unstable after boot, most likely due to broken BIOS. Use 'tsc=unstable'."),
    (3420.092382, "info", "sched_clock: Marking unstable (3419294969739, 159204297)<-(3425446229205, -5992055152)"),
    (3420.643627, "info", "clocksource: Checking clocksource tsc synchronization from CPU 319 to CPUs 0,99,136,180,210,542,601,896."),
    (3421.067990, "info", "clocksource: Switched to clocksource hpet"),
]
write("long_readout_and_readback_unstable", "dmesg_x", L, exp(
    kernel="6.8", unstable=True, reasons=["clocksource watchdog"], final="hpet", watchdog=None, warps=[], proc=2893202,
    tsc=None, refined=2893209, hyp=None,
    events=["tsc_fast_calibration_ok", "tsc_detected_processor", "clocksource_switched", "tsc_refined", "clocksource_switched",
            "watchdog_long_readout", "watchdog_readback_unstable", "tsc_marked_unstable", "tsc_unstable_after_boot",
            "sched_clock_unstable", "clocksource_sync_check", "clocksource_switched"]),
    note="6.2+ 'wd-%s-wd excessive read-back delay' form names only the clocksource under test, not the watchdog: "
         "watchdog null (it is whichever is best among non-MUST_VERIFY, typically hpet)")

# 19 --------------------------------------------------------------- TSC_ADJUST firmware bugs, 4.10 forms, syslog
L = [
    (0.0, "info", "tsc: Fast TSC calibration using PIT"),
    (0.0, "info", "tsc: Detected 2197.477 MHz processor"),
    (0.0, "warn", "[Firmware Bug]: TSC ADJUST: CPU0: -2097151 force to 0"),
    (0.191004, "warn", "[Firmware Bug]: TSC ADJUST differs: Reference CPU0: -2097151 CPU1: 0"),
    (0.191007, "warn", "TSC ADJUST synchronize: Reference CPU0: 0 CPU1: 0"),
    (0.312001, "info", "clocksource: Switched to clocksource hpet"),
    (1.4, "info", "tsc: Refined TSC clocksource calibration: 2197.456 MHz"),
    (2.41, "info", "clocksource: Switched to clocksource tsc"),
]
write("tsc_adjust_4_10", "syslog", L, exp(
    kernel="4.10", unstable=False, reasons=[], final="tsc", watchdog=None, warps=[], proc=2197477, tsc=None,
    refined=2197456, hyp=None,
    events=["tsc_fast_calibration_ok", "tsc_detected_processor", "tsc_adjust_force_zero", "tsc_adjust_differs",
            "tsc_adjust_synchronize", "clocksource_switched", "tsc_refined", "clocksource_switched"]),
    note="4.10..4.11 per-CPU 'Reference CPU%u' forms; the kernel repaired TSC_ADJUST and the TSC stayed")

# 20 --------------------------------------------------------------- TSC_ADJUST firmware bugs, 6.x forms (boot + runtime), dmesg
L = [
    (0.0, "info", "tsc: Detected 2100.000 MHz processor"),
    (0.0, "info", "tsc: Detected 2099.944 MHz TSC"),
    (0.0, "warn", "[Firmware Bug]: TSC ADJUST: CPU0: -1409246302 force to 0"),
    (0.402210, "warn", "[Firmware Bug]: TSC ADJUST differs within socket(s), fixing all errors"),
    (0.702114, "info", "clocksource: Switched to clocksource tsc-early"),
    (1.1, "info", "clocksource: Switched to clocksource tsc"),
    (7204.559120, "warn", "[Firmware Bug]: TSC ADJUST differs: CPU14 0 --> -1410. Restoring"),
]
write("tsc_adjust_6x", "dmesg", L, exp(
    kernel="6.6", unstable=False, reasons=[], final="tsc", watchdog=None, warps=[], proc=2100000, tsc=2099944,
    refined=None, hyp=None,
    events=["tsc_detected_processor", "tsc_detected_tsc", "tsc_adjust_force_zero", "tsc_adjust_differs",
            "clocksource_switched", "clocksource_switched", "tsc_adjust_restored"]),
    note="runtime 'differs ... Restoring' after two hours: SMM/firmware wrote IA32_TSC_ADJUST on CPU14")

# 21 --------------------------------------------------------------- RHEL 6 (2.6.32): skew reported, NOT marked; e-mail quoted syslog
L = [
    (0.0, "info", "Detected 2933.436 MHz processor."),
    (0.0, "info", "Fast TSC calibration using PIT"),
    (1.2, "info", "Switching to clocksource tsc"),
    (5012.3, "warn", "Clocksource tsc unstable (delta = 62500000 ns).  Enable clocksource failover by adding "
                     "clocksource_failover kernel parameter."),
]
write("rhel6_failover_quoted", "syslog", L, exp(
    kernel="2.6.32-RHEL6", unstable=False, reasons=[], final="tsc", watchdog=None, warps=[], proc=2933436, tsc=None,
    refined=None, hyp=None,
    events=["tsc_detected_processor", "tsc_fast_calibration_ok", "clocksource_switched", "watchdog_skew_reported"]),
    indent="> ",
    noise={2: ["> Nov 24 20:00:02 db1 ntpd[1234]: Switched to clocksource hpet (another program's line)",
               "> Nov 24 20:00:02 db1 systemd[1]: Marking TSC unstable due to nothing (not the kernel)"]},
    note="RHEL 6's vendor W1 variant prints the skew but keeps the TSC unless booted with clocksource_failover; "
         "'> '-quoted e-mail reply; other programs' syslog lines (ntpd, systemd) are not kernel lines")

# 22 --------------------------------------------------------------- KVM guest, 3.10 (RHEL 7): one-line watchdog, short-monotonic
L = [
    (0.0, "info", "Booting paravirtualized kernel on KVM"),
    (0.0, "info", "kvm-clock: cpu 0, msr 0:1ff87001, primary cpu clock"),
    (0.0, "info", "tsc: Detected 2399.996 MHz processor"),
    (0.6, "info", "Switched to clocksource kvm-clock"),
    (86400.1, "warn", "Clocksource tsc unstable (delta = -7812500 ns)"),
]
write("kvm_3x_oneline_monotonic", "journal_monotonic", L, exp(
    kernel="3.10", unstable=True, reasons=["clocksource watchdog"], final="kvm-clock", watchdog=None, warps=[],
    proc=2399996, tsc=None, refined=None, hyp="kvm",
    events=["paravirt_kernel", "kvm_clock", "tsc_detected_processor", "clocksource_switched",
            "watchdog_marked_unstable"]),
    note="3.10-4.0 one-line W1 watchdog verdict (no watchdog named, no 'Marking TSC unstable' line before 4.11); "
         "journalctl -o short-monotonic '[ts] host kernel:'; H2 only (no Hypervisor detected line in this paste)")

# 23 --------------------------------------------------------------- tsc=recalibrate 6.x bare metal, /dev/kmsg with \x09 escapes
L = [
    (0.0, "info", "tsc: Detected 2100.000 MHz processor"),
    (0.0, "info", "Booting paravirtualized kernel on bare hardware"),
    (1.5, "warn", "tsc: Warning: TSC freq calibrated by CPUID/MSR differs from what is calibrated by HW timer, "
                  "please check with vendor!!"),
    (1.5, "info", "tsc: Previous calibrated TSC freq:\\x09 2100.000 MHz"),
    (1.5, "info", "tsc: TSC freq recalibrated by [HPET]:\\x09 2099.957 MHz"),
    (2.4, "info", "clocksource: Switched to clocksource tsc"),
]
write("baremetal_recalibrate_kmsg", "kmsg", L, exp(
    kernel="6.6", unstable=False, reasons=[], final="tsc", watchdog=None, warps=[], proc=2100000, tsc=None,
    refined=None, hyp=None,
    events=["tsc_detected_processor", "paravirt_kernel", "tsc_recalibrate_mismatch", "tsc_recalibrated",
            "tsc_recalibrated", "clocksource_switched"]),
    kmsg_dict={0: ["SUBSYSTEM=cpu", "DEVICE=+cpu:cpu0"]},
    note="/dev/kmsg escapes the TAB of the tsc=recalibrate lines as \\x09; 'on bare hardware' means bare metal")

print("ok")

//! The environment section at both levels: a few lines on the one screen
//! (the kernel and clocksource, the CPU, the counter's trust and
//! PostgreSQL, how many kernel-log messages `-v` explains), one labelled line
//! per fact in the full report, with the counter's evidence, PostgreSQL 19's
//! view of the TSC, NTP and the kernel's messages.

use super::Detail;
use crate::commands::check::model::CheckReport;
use crate::i18n::library::reason;
use crate::{t, tn};
use clockscope_system::escape::escape_untrusted as esc;
use std::io::{self, Write};

/// Writes the environment at `detail`.
pub(super) fn write(out: &mut dyn Write, r: &CheckReport, detail: Detail) -> io::Result<()> {
    match detail {
        Detail::Screen => screen(out, r),
        Detail::Full => full(out, r),
    }
}

/// The one screen's environment: kernel and clocksource, CPU, counter and
/// PostgreSQL, and how many kernel-log messages `-v` explains.
fn screen(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let e = &r.environment;
    writeln!(out, "{}", t!("Environment"))?;
    let avail = if e.available_clocksources.is_empty() {
        String::new()
    } else {
        t!(" (available: {list})", list = esc(&e.available_clocksources.join(" ")))
    };
    let kernel = t!(
        "kernel {release}, clocksource {clocksource}{available}",
        release = unknown_or(e.kernel_release.as_deref()),
        clocksource = unknown_or(e.current_clocksource.as_deref()),
        available = avail
    );
    writeln!(out, "  {kernel}")?;
    writeln!(out, "  {}", t!("CPU {cpu}", cpu = cpu_words(r)))?;
    let trust = match e.counter_trusted {
        Some(true) => t!("CPU counter trusted"),
        Some(false) => t!("CPU counter NOT trusted"),
        None => t!("CPU counter not assessed"),
    };
    let khz = e.counter_frequency_khz.map_or(String::new(), |k| {
        let source = e
            .counter_frequency_source
            .as_deref()
            .map_or_else(|| t!("an unknown source").to_string(), |s| esc(&reason(s)).into_owned());
        t!(", {khz} kHz from {source}", khz = k, source = source)
    });
    let installed = if e.postgresql_installed_majors.is_empty() {
        t!("PostgreSQL none found in /usr/lib/postgresql").to_string()
    } else {
        let list: Vec<String> = e.postgresql_installed_majors.iter().map(u32::to_string).collect();
        t!("PostgreSQL {versions} installed", versions = list.join(", "))
    };
    writeln!(out, "  {trust}{khz}; {installed}")?;
    if !e.kernel_messages.is_empty() {
        let n = e.kernel_messages.len();
        let line = tn!(
            "kernel log: {n} TSC or clocksource message (-v explains them)",
            "kernel log: {n} TSC or clocksource messages (-v explains them)",
            n,
            n = n
        );
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// The CPU in a few words: model, architecture, usable CPUs, hypervisor.
pub(super) fn cpu_words(r: &CheckReport) -> String {
    let e = &r.environment;
    let model = e
        .cpu_model
        .as_deref()
        .map_or_else(|| t!("unknown CPU").to_string(), |s| esc(s).into_owned());
    let mut cpu = format!("{model} ({})", e.arch);
    if let Some(n) = e.cpus {
        cpu.push_str(", ");
        cpu.push_str(&tn!("{n} CPU usable", "{n} CPUs usable", n, n = n));
    }
    if let Some(h) = &e.hypervisor {
        cpu.push_str(", ");
        cpu.push_str(&t!("{hypervisor} guest", hypervisor = esc(h)));
    }
    cpu
}

/// The clocksource and the CPU counter's trust in a few words.
pub(super) fn clocksource_words(r: &CheckReport) -> String {
    let e = &r.environment;
    let counter = match e.counter_trusted {
        Some(true) => t!("; CPU counter trusted"),
        Some(false) => t!("; CPU counter NOT trusted"),
        None => "",
    };
    format!("{}{counter}", unknown_or(e.current_clocksource.as_deref()))
}

/// An untrusted value escaped, or "unknown" in the report's language.
fn unknown_or(v: Option<&str>) -> String {
    v.map_or_else(|| t!("unknown").to_string(), |s| esc(s).into_owned())
}

/// The full environment: kernel, clocksource, CPU, hypervisor,
/// PostgreSQL, the CPU counter, NTP and the kernel's messages.
fn full(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let e = &r.environment;
    let label = |l: &str| crate::i18n::pad_right(l, env_label_width());
    let or = |v: Option<&str>, none: &str| v.map_or_else(|| none.to_string(), |s| esc(s).into_owned());
    writeln!(out, "{}", t!("Environment"))?;
    writeln!(
        out,
        "  {}{}",
        label(t!("kernel")),
        or(e.kernel_release.as_deref(), t!("unknown"))
    )?;
    let avail = if e.available_clocksources.is_empty() {
        String::new()
    } else {
        t!(" (available: {list})", list = esc(&e.available_clocksources.join(" ")))
    };
    let cs = or(e.current_clocksource.as_deref(), t!("unknown"));
    writeln!(out, "  {}{cs}{avail}", label(t!("clocksource")))?;
    let cpus = e.cpus.map_or(String::new(), |n| {
        let cpuset = match e.cgroup_cpuset_cpus {
            Some(c) if c != n => format!(" (cgroup cpuset: {c})"),
            _ => String::new(),
        };
        format!(
            ", {}{cpuset}",
            crate::tn!("{n} CPU usable", "{n} CPUs usable", n, n = n)
        )
    });
    let cpu = or(e.cpu_model.as_deref(), t!("unknown"));
    writeln!(out, "  {}{cpu} ({}){cpus}", label(t!("CPU")), e.arch)?;
    let hv = or(e.hypervisor.as_deref(), t!("none detected"));
    writeln!(out, "  {}{hv}", label(t!("hypervisor")))?;
    let installed = if e.postgresql_installed_majors.is_empty() {
        t!("none found in /usr/lib/postgresql").to_string()
    } else {
        let list: Vec<String> = e.postgresql_installed_majors.iter().map(u32::to_string).collect();
        t!("{versions} installed (/usr/lib/postgresql)", versions = list.join(", "))
    };
    writeln!(out, "  {}{installed}", label("PostgreSQL"))?;
    write_counter(out, r)
}

/// The environment's label column: 14 in English, as wide as the widest
/// label (and a space) in the report's language.
fn env_label_width() -> usize {
    let labels = [
        t!("kernel"),
        t!("clocksource"),
        t!("CPU"),
        t!("hypervisor"),
        t!("CPU counter"),
        t!("frequency"),
    ];
    crate::report::text::column_width(labels, 1, 14)
}

/// The environment's CPU counter (trust, frequency, evidence), NTP and
/// kernel messages.
fn write_counter(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let e = &r.environment;
    let w = env_label_width();
    let label = |l: &str| crate::i18n::pad_right(l, w);
    let trust = match e.counter_trusted {
        Some(true) => t!("trusted"),
        Some(false) => t!("NOT trusted"),
        None => t!("not assessed"),
    };
    writeln!(out, "  {}{trust}", label(t!("CPU counter")))?;
    if let Some(k) = e.counter_frequency_khz {
        let source = e
            .counter_frequency_source
            .as_deref()
            .map_or_else(|| t!("source unknown").to_string(), |s| esc(&reason(s)).into_owned());
        let freq = t!("{khz} kHz, from {source}", khz = k, source = source);
        writeln!(out, "  {}{freq}", label(t!("frequency")))?;
    }
    for ev in &e.counter_evidence {
        writeln!(out, "  {}{}", " ".repeat(w), esc(&reason(ev)))?;
    }
    if let Some(clockscope_system::counter::CounterDetails::Tsc(t)) = &r.tsc {
        if let Some(v) = &t.postgresql19 {
            writeln!(out, "  PostgreSQL 19")?;
            crate::commands::tsc::pg19::write(out, "    ", v)?;
        }
    }
    writeln!(out, "  NTP")?;
    crate::commands::tsc::evidence::write_ntp(
        out,
        "    ",
        e.ntp.as_ref().ok_or(e.ntp_unavailable.as_deref().unwrap_or("not read")),
    )?;
    if !e.kernel_messages.is_empty() {
        writeln!(out, "  {}", t!("kernel log"))?;
        crate::commands::tsc::evidence::write_kernel_messages(out, "    ", &e.kernel_messages, e.machine)?;
    }
    Ok(())
}

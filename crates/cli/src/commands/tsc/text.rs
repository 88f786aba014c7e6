//! The text form of `clockscope tsc` on x86: CPUID and kernel evidence, the
//! frequency from every source, and both trust decisions
//! ([`clockscope_system::tsc::TscReport`]).

use crate::report::text::{check_line, CheckStyle};
use clockscope_system::linux::tsc_messages::Machine;
use clockscope_system::linux::{KernelCmdline, TscFlags};
use clockscope_system::tsc::frequency::{DISAGREEMENT_LIMIT_PPM, PG_SOURCE_CALIBRATION};
use clockscope_system::tsc::policy::{KernelLogTsc, Reason};
use clockscope_system::tsc::report::ReportSource;
use clockscope_system::tsc::TscReport;
use std::io::Write;
use std::path::Path;

fn khz_text(khz: Option<u64>) -> String {
    khz.map_or("-".to_string(), |k| k.to_string())
}

fn reason_lines(out: &mut dyn Write, reasons: &[Reason]) -> std::io::Result<()> {
    let width = reasons.iter().map(|r| r.name.len()).max().unwrap_or(0);
    for r in reasons {
        writeln_escaped!(out, "  {}", check_line(r, CheckStyle::Table { width }))?;
    }
    Ok(())
}

/// Writes the text report (`clockscope check` may reuse it). `dump` names
/// the analysed file, if any.
pub fn write(out: &mut dyn Write, r: &TscReport, dump: Option<&Path>) -> std::io::Result<()> {
    // Every line fitted to 100 columns (crate::report::text).
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    write_source(out, r, dump)?;
    writeln!(out)?;
    write_cpu(out, r)?;
    writeln!(out)?;
    write_cpuid_flags(out, r)?;
    write_linux(out, r)?;
    writeln!(out)?;
    write_frequency_sources(out, r)?;
    writeln!(out)?;
    write_choices(out, r)?;
    writeln!(out)?;
    if let Some(v) = &r.postgresql19 {
        writeln!(
            out,
            "PostgreSQL 19.0 here (its pg_test_timing and timing_clock_source decide so)"
        )?;
        super::pg19::write(out, "  ", v)?;
        writeln!(out)?;
    }
    write_decisions(out, r)
}

/// What was analysed: this machine (under which root) or a CPUID dump.
pub(super) fn write_source(out: &mut dyn Write, r: &TscReport, dump: Option<&Path>) -> std::io::Result<()> {
    match (&r.evidence_source, dump) {
        (ReportSource::CpuidDump { format, leaves }, Some(p)) => {
            // The same English for every count (its text before catalogs);
            // the plural forms are the catalogs'.
            let line = crate::tn!(
                "CPUID dump {path} ({format} format, {n} leaves, first CPU)",
                "CPUID dump {path} ({format} format, {n} leaves, first CPU)",
                *leaves,
                path = p.display(),
                format = format,
                n = leaves
            );
            writeln_escaped!(out, "{line}")?;
            writeln_escaped!(
                out,
                "{}",
                crate::t!(
                    "  analysing a dump: no kernel evidence, no perf page, no calibration; both decisions lack the kernel's part"
                )
            )?;
        }
        (ReportSource::CpuidDump { format, leaves }, None) => {
            let line = crate::tn!(
                "CPUID dump ({format} format, {n} leaves)",
                "CPUID dump ({format} format, {n} leaves)",
                *leaves,
                format = format,
                n = leaves
            );
            writeln_escaped!(out, "{line}")?;
        }
        (ReportSource::ThisMachine { root }, _) if root != "/" => {
            writeln_escaped!(
                out,
                "{}",
                crate::t!("This machine (kernel files under {root})", root = root)
            )?;
        }
        (ReportSource::ThisMachine { .. }, _) => writeln_escaped!(out, "{}", crate::t!("This machine"))?,
    }
    Ok(())
}

/// The CPU's identity from CPUID.
fn write_cpu(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    writeln_escaped!(out, "CPU")?;
    match &r.cpuid {
        None => writeln_escaped!(
            out,
            "  no CPUID on this architecture ({}): the TSC is x86's",
            std::env::consts::ARCH
        )?,
        Some(f) => {
            writeln_escaped!(out, "  vendor                  {}", f.vendor)?;
            writeln_escaped!(
                out,
                "  family/model/stepping   {:#x}/{:#x}/{}  (signature {:#010x}, family {}, model {})",
                f.family,
                f.model,
                f.stepping,
                f.signature_eax,
                f.family,
                f.model
            )?;
            writeln_escaped!(
                out,
                "  brand                   {}",
                f.brand.as_deref().unwrap_or("(none)")
            )?;
            writeln_escaped!(
                out,
                "  highest leaves          basic {:#x}, extended {:#x}",
                f.max_basic_leaf,
                f.max_extended_leaf
            )?;
        }
    }
    Ok(())
}

/// The CPUID flags that matter to the TSC, and leaves 0x15 and 0x16,
/// followed by a blank line; nothing without CPUID.
fn write_cpuid_flags(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let Some(f) = &r.cpuid else { return Ok(()) };
    writeln_escaped!(out, "CPUID flags")?;
    // A flag of a leaf the CPU does not report is unknown, not "no".
    let flag = |leaf: u32, b: bool| {
        f.unreported(leaf)
            .unwrap_or_else(|| if b { "yes" } else { "no" }.to_string())
    };
    writeln_escaped!(out, "  TSC             (1 EDX bit 4)            {}", flag(1, f.tsc))?;
    writeln_escaped!(
        out,
        "  RDTSCP          (0x80000001 EDX bit 27)  {}",
        flag(0x8000_0001, f.rdtscp)
    )?;
    writeln_escaped!(
        out,
        "  invariant TSC   (0x80000007 EDX bit 8)   {}",
        flag(0x8000_0007, f.invariant_tsc)
    )?;
    writeln_escaped!(
        out,
        "  TSC_ADJUST      (7.0 EBX bit 1)          {}",
        flag(7, f.tsc_adjust)
    )?;
    let hv = match (&f.hypervisor, f.hypervisor_bit) {
        (_, false) => "no".to_string(),
        (None, true) => "yes (leaf 0x40000000 not read)".to_string(),
        (Some(h), true) => format!(
            "yes: \"{}\", highest leaf {:#010x}{}",
            h.signature,
            h.max_leaf,
            h.timing_leaf_tsc_khz
                .map_or(String::new(), |k| format!(", 0x40000010 EAX {k} kHz"))
        ),
    };
    writeln_escaped!(out, "  hypervisor      (1 ECX bit 31)           {hv}")?;
    let unreported = |leaf: u32| f.unreported(leaf).unwrap_or_else(|| "not reported".to_string());
    let l15 = f.leaf_15.map_or_else(
        || unreported(0x15),
        |l| {
            format!(
                "EAX {} (denominator), EBX {} (numerator), ECX {} Hz (crystal)",
                l.eax_denominator, l.ebx_numerator, l.ecx_crystal_hz
            )
        },
    );
    writeln_escaped!(out, "  leaf 0x15                                {l15}")?;
    let l16 = f.leaf_16.map_or_else(
        || unreported(0x16),
        |l| format!("base {} MHz, max {} MHz, bus {} MHz", l.base_mhz, l.max_mhz, l.bus_mhz),
    );
    writeln_escaped!(out, "  leaf 0x16                                {l16}")?;
    writeln!(out)
}

/// /proc/cpuinfo's TSC flags: those present, then those absent.
fn tsc_flags_text(f: &TscFlags) -> String {
    let all = [
        ("constant_tsc", f.constant_tsc),
        ("nonstop_tsc", f.nonstop_tsc),
        ("tsc_known_freq", f.tsc_known_freq),
        ("tsc_reliable", f.tsc_reliable),
        ("tsc_adjust", f.tsc_adjust),
        ("rdtscp", f.rdtscp),
        ("hypervisor", f.hypervisor),
    ];
    let have: Vec<&str> = all.iter().filter(|(_, b)| *b).map(|(n, _)| *n).collect();
    let lack: Vec<&str> = all.iter().filter(|(_, b)| !*b).map(|(n, _)| *n).collect();
    format!(
        "{} (absent: {})",
        if have.is_empty() {
            "none".to_string()
        } else {
            have.join(" ")
        },
        if lack.is_empty() {
            "none".to_string()
        } else {
            lack.join(" ")
        }
    )
}

/// The boot options that bear on the TSC.
fn boot_options_text(c: &KernelCmdline) -> String {
    let mut parts: Vec<String> = c.tsc.iter().map(|t| format!("tsc={t}")).collect();
    if let Some(cs) = &c.clocksource {
        parts.push(format!("clocksource={cs}"));
    }
    if c.notsc {
        parts.push("notsc".to_string());
    }
    if parts.is_empty() {
        "no tsc=, clocksource= or notsc".to_string()
    } else {
        parts.join(" ")
    }
}

/// What the kernel log says of the TSC: its frequency, whether it was
/// marked unstable, how many records were read.
fn kernel_log_text(l: &KernelLogTsc) -> String {
    let khz = match (l.tsc_khz, l.tsc_khz_message) {
        (Some(k), Some(m)) => format!("{k} kHz ({m})"),
        _ => "no \"tsc: Detected/Refined\" line".to_string(),
    };
    let unstable = if l.marked_unstable {
        format!("TSC marked unstable: {}", l.unstable_evidence.join("; "))
    } else {
        "TSC never marked unstable".to_string()
    };
    format!("{khz}; {unstable}; {} records", l.records)
}

/// The kernel's evidence, and its TSC and clocksource messages.
fn write_linux(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    writeln_escaped!(out, "Linux")?;
    let Some(k) = &r.linux else {
        return writeln_escaped!(out, "  not read: analysing a CPUID dump");
    };
    writeln_escaped!(
        out,
        "  kernel                  {}",
        k.kernel_release.describe(|s| s.clone())
    )?;
    writeln_escaped!(
        out,
        "  clocksource             {} (available: {})",
        k.current_clocksource.describe(|s| s.clone()),
        k.available_clocksources.describe(|v| v.join(" "))
    )?;
    writeln_escaped!(
        out,
        "  cpuinfo TSC flags       {}",
        k.tsc_flags.describe(tsc_flags_text)
    )?;
    if let Some(m) = &k.cpu_model_name {
        writeln_escaped!(out, "  cpuinfo model name      {m}")?;
    }
    writeln_escaped!(
        out,
        "  boot options            {}",
        k.cmdline.describe(boot_options_text)
    )?;
    writeln_escaped!(
        out,
        "  kernel log              {}",
        k.kernel_log.describe(kernel_log_text)
    )?;
    if let Some(l) = k.kernel_log.found() {
        writeln!(out)?;
        writeln_escaped!(out, "Kernel log, TSC and clocksource messages")?;
        let machine = match &r.hypervisor {
            Some(_) => Machine::Guest,
            None if r.cpuid.is_some() => Machine::BareMetal,
            None => Machine::Unknown,
        };
        super::evidence::write_kernel_messages(out, "  ", &l.messages, Some(machine))?;
    }
    Ok(())
}

/// The frequency from every source, in ppm against the one in use, and
/// what the table's marks mean.
fn write_frequency_sources(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let in_use = r.clockscope_frequency.khz;
    match (in_use, r.clockscope_frequency.source_label) {
        (Some(k), Some(s)) => writeln_escaped!(
            out,
            "TSC frequency sources (ppm vs the frequency in use: {k} kHz from {s})"
        )?,
        _ => writeln_escaped!(out, "TSC frequency sources (no frequency in use)")?,
    }
    let label_w = r
        .frequency_sources
        .iter()
        .map(|s| s.source.len())
        .max()
        .unwrap_or(6)
        .max(6);
    writeln_escaped!(out, "    {:<label_w$}  {:>10}  {:>9}  note", "source", "kHz", "ppm")?;
    for s in &r.frequency_sources {
        let flag = if s.flagged { "!" } else { " " };
        let ppm = s.ppm_vs_in_use.map_or("-".to_string(), |p| format!("{p:+.1}"));
        let mut note = s.note.clone();
        if let Some(u) = s.uncertainty_ppm {
            note = format!("±{u:.2} ppm; {note}");
        }
        writeln_escaped!(
            out,
            "  {flag} {:<label_w$}  {:>10}  {:>9}  {note}",
            s.source,
            khz_text(s.khz),
            ppm
        )?;
    }
    writeln_escaped!(
        out,
        "  ! = differs from the frequency in use by more than {DISAGREEMENT_LIMIT_PPM} ppm (plus a calibration's own uncertainty)"
    )?;
    writeln_escaped!(
        out,
        "  CPUID 0x16, Linux 4.x's crystal table and PostgreSQL's calibration are shown for comparison: they do not count \
         in the agreement check below"
    )?;
    if r.frequency_sources.iter().any(|s| !s.independent) {
        super::evidence::write_wrapped(
            out,
            "  ",
            "with clocksource tsc, MONOTONIC(_RAW) is the TSC scaled by the kernel: a calibration against it \
             checks the kernel's arithmetic and is not independent evidence (not counted below)",
        )?;
    }
    super::evidence::write_wrapped(out, "  ", &format!("Linux's CPUID rule: {}", r.cpuid_tsc_rule))
}

/// The frequency PostgreSQL 19 would use and the one clockscope uses, and why.
fn write_choices(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let pg = &r.postgresql_frequency;
    let pg_line = match (pg.tsc_usable, pg.khz, pg.source) {
        (false, _, _) => "no TSC".to_string(),
        (true, Some(k), Some(s)) => format!("{k} kHz ({s})"),
        (true, _, _) => format!("no frequency ({PG_SOURCE_CALIBRATION} not available)"),
    };
    writeln_escaped!(out, "PostgreSQL 19 would use   {pg_line}")?;
    writeln_escaped!(out, "  why: {}", pg.why)?;
    let cs = &r.clockscope_frequency;
    let cs_line = match (cs.khz, cs.source_label) {
        (Some(k), Some(s)) => format!("{k} kHz ({s})"),
        _ => "no frequency".to_string(),
    };
    writeln_escaped!(out, "clockscope uses           {cs_line}")?;
    writeln_escaped!(out, "  why: {}", cs.why)?;
    writeln_escaped!(out, "  cross-check: {}", r.frequency_agreement.evidence)
}

/// Both trust decisions: PostgreSQL 19's `auto` and clockscope's, each with its reasons.
fn write_decisions(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let a = &r.postgresql_auto;
    writeln_escaped!(
        out,
        "PostgreSQL 19 timing_clock_source=auto: {}",
        if a.use_by_default {
            "uses the TSC (SHOW gives 'auto (tsc)')"
        } else {
            "uses the system clock (SHOW gives 'auto (system)')"
        }
    )?;
    reason_lines(out, &a.reasons)?;
    writeln!(out)?;
    let d = &r.clockscope_decision;
    writeln_escaped!(
        out,
        "clockscope: the TSC is {}",
        if d.trusted {
            "trusted (every check passed)"
        } else {
            "NOT trusted (a check failed or its evidence is missing)"
        }
    )?;
    reason_lines(out, &d.reasons)
}

/// Writes the report and the independent evidence beside it: NTP, and the
/// `--drift` result when measured.
pub fn write_output(out: &mut dyn Write, o: &crate::commands::tsc::model::TscOutput) -> std::io::Result<()> {
    write(out, o.report, o.dump)?;
    writeln!(out)?;
    writeln_escaped!(out, "NTP (adjtimex, read-only)")?;
    super::evidence::write_ntp(
        out,
        "  ",
        o.ntp.as_ref().ok_or(o.ntp_unavailable.as_deref().unwrap_or("not read")),
    )?;
    if let Some(d) = &o.drift {
        writeln!(out)?;
        super::evidence::write_drift(out, d)?;
    }
    Ok(())
}

//! The text form of `clockscope tsc` on x86: CPUID and kernel evidence, the
//! frequency from every source, and both trust decisions
//! ([`clockscope_system::tsc::TscReport`]).

use crate::i18n::{library::reason as said, num, pad_left, pad_right, signed};
use crate::t;
use clockscope_system::evidence::Check;
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

/// One check of a decision as a table row: its mark, its name (in the
/// report's language where the catalog has it) and the library's evidence.
fn reason_line(c: &Check, mark_w: usize, name_w: usize) -> String {
    let mark = if c.ok { t!("ok") } else { t!("NOT OK") };
    let name = super::summary::check_name(c.name);
    let evidence = super::summary::check_evidence(&c.evidence);
    if name.is_empty() {
        format!("{}  {evidence}", pad_right(mark, mark_w))
    } else {
        format!("{}  {}  {evidence}", pad_right(mark, mark_w), pad_right(name, name_w))
    }
}

fn reason_lines(out: &mut dyn Write, reasons: &[Reason]) -> std::io::Result<()> {
    let name_w = reasons
        .iter()
        .map(|r| textwrap::core::display_width(super::summary::check_name(r.name)))
        .max()
        .unwrap_or(0);
    let mark_w = [t!("ok"), t!("NOT OK")]
        .iter()
        .map(|m| textwrap::core::display_width(m))
        .max()
        .unwrap_or(0)
        .max(6);
    for r in reasons {
        writeln_escaped!(out, "  {}", reason_line(r, mark_w, name_w))?;
    }
    Ok(())
}

/// The width of a column of labels `labels` (at least `min`, and two
/// columns more than the widest in the report's language).
fn label_width(labels: &[&str], min: usize) -> usize {
    labels
        .iter()
        .map(|l| textwrap::core::display_width(l) + 2)
        .max()
        .unwrap_or(0)
        .max(min)
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
            "{}",
            t!("PostgreSQL 19.0 here (its pg_test_timing and timing_clock_source decide so)")
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

/// The labels of the CPU and Linux blocks, one column (24 in English).
fn machine_labels() -> [&'static str; 10] {
    [
        t!("vendor"),
        t!("family/model/stepping"),
        t!("brand"),
        t!("highest leaves"),
        t!("kernel"),
        t!("clocksource"),
        t!("cpuinfo TSC flags"),
        t!("cpuinfo model name"),
        t!("boot options"),
        t!("kernel log"),
    ]
}

/// `  label   value` in the CPU and Linux blocks.
fn machine_line(out: &mut dyn Write, label: &str, value: &str) -> std::io::Result<()> {
    let w = label_width(&machine_labels(), 24);
    writeln_escaped!(out, "  {}{value}", pad_right(label, w))
}

/// The CPU's identity from CPUID.
fn write_cpu(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    writeln_escaped!(out, "{}", heading(t!("CPU")))?;
    match &r.cpuid {
        None => writeln_escaped!(
            out,
            "{}",
            t!(
                "  no CPUID on this architecture ({arch}): the TSC is x86's",
                arch = std::env::consts::ARCH
            )
        )?,
        Some(f) => {
            machine_line(out, t!("vendor"), &f.vendor)?;
            let fms = t!(
                "{family}/{model}/{stepping}  (signature {signature}, family {family_dec}, model {model_dec})",
                family = format!("{:#x}", f.family),
                model = format!("{:#x}", f.model),
                stepping = f.stepping,
                signature = format!("{:#010x}", f.signature_eax),
                family_dec = f.family,
                model_dec = f.model
            );
            machine_line(out, t!("family/model/stepping"), &fms)?;
            machine_line(out, t!("brand"), f.brand.as_deref().unwrap_or(t!("(none)")))?;
            let leaves = t!(
                "basic {basic}, extended {extended}",
                basic = format!("{:#x}", f.max_basic_leaf),
                extended = format!("{:#x}", f.max_extended_leaf)
            );
            machine_line(out, t!("highest leaves"), &leaves)?;
        }
    }
    Ok(())
}

/// A label used as a heading: its first letter upper-case (`процессор`,
/// the label, is the heading `Процессор`; English is unchanged).
pub(super) fn heading(label: &str) -> String {
    let mut c = label.chars();
    c.next()
        .map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

/// `yes` or `no` in the report's language.
fn yes_no(b: bool) -> &'static str {
    if b {
        t!("yes")
    } else {
        t!("no")
    }
}

/// The CPUID flags that matter to the TSC, and leaves 0x15 and 0x16,
/// followed by a blank line; nothing without CPUID.
fn write_cpuid_flags(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let Some(f) = &r.cpuid else { return Ok(()) };
    writeln_escaped!(out, "{}", t!("CPUID flags"))?;
    // A flag of a leaf the CPU does not report is unknown, not "no".
    let flag = |leaf: u32, b: bool| f.unreported(leaf).map_or_else(|| yes_no(b).to_string(), |w| said(&w));
    let hv = match (&f.hypervisor, f.hypervisor_bit) {
        (_, false) => t!("no").to_string(),
        (None, true) => t!("yes (leaf 0x40000000 not read)").to_string(),
        (Some(h), true) => t!(
            "yes: \"{signature}\", highest leaf {leaf}{khz}",
            signature = h.signature,
            leaf = format!("{:#010x}", h.max_leaf),
            khz = h
                .timing_leaf_tsc_khz
                .map_or(String::new(), |k| t!(", 0x40000010 EAX {khz} kHz", khz = k))
        ),
    };
    let rows = [
        ("TSC", t!("(1 EDX bit 4)"), flag(1, f.tsc)),
        ("RDTSCP", t!("(0x80000001 EDX bit 27)"), flag(0x8000_0001, f.rdtscp)),
        (
            t!("invariant TSC"),
            t!("(0x80000007 EDX bit 8)"),
            flag(0x8000_0007, f.invariant_tsc),
        ),
        ("TSC_ADJUST", t!("(7.0 EBX bit 1)"), flag(7, f.tsc_adjust)),
        (t!("hypervisor"), t!("(1 ECX bit 31)"), hv),
    ];
    let name_w = label_width(&rows.iter().map(|r| r.0).collect::<Vec<_>>(), 16);
    let where_w = label_width(&rows.iter().map(|r| r.1).collect::<Vec<_>>(), 25);
    for (name, bits, value) in &rows {
        writeln_escaped!(out, "  {}{}{value}", pad_right(name, name_w), pad_right(bits, where_w))?;
    }
    let unreported = |leaf: u32| {
        f.unreported(leaf)
            .map_or_else(|| t!("not reported").to_string(), |w| said(&w))
    };
    let l15 = f.leaf_15.map_or_else(
        || unreported(0x15),
        |l| {
            t!(
                "EAX {eax} (denominator), EBX {ebx} (numerator), ECX {ecx} Hz (crystal)",
                eax = l.eax_denominator,
                ebx = l.ebx_numerator,
                ecx = l.ecx_crystal_hz
            )
        },
    );
    writeln_escaped!(out, "  {}{l15}", pad_right(t!("leaf 0x15"), name_w + where_w))?;
    let l16 = f.leaf_16.map_or_else(
        || unreported(0x16),
        |l| {
            t!(
                "base {base} MHz, max {max} MHz, bus {bus} MHz",
                base = l.base_mhz,
                max = l.max_mhz,
                bus = l.bus_mhz
            )
        },
    );
    writeln_escaped!(out, "  {}{l16}", pad_right(t!("leaf 0x16"), name_w + where_w))?;
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
    let list = |v: Vec<&str>| {
        if v.is_empty() {
            t!("none").to_string()
        } else {
            v.join(" ")
        }
    };
    t!("{have} (absent: {lack})", have = list(have), lack = list(lack))
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
        t!("no tsc=, clocksource= or notsc").to_string()
    } else {
        parts.join(" ")
    }
}

/// What the kernel log says of the TSC: its frequency, whether it was
/// marked unstable, how many records were read.
fn kernel_log_text(l: &KernelLogTsc) -> String {
    let khz = match (l.tsc_khz, l.tsc_khz_message) {
        (Some(k), Some(m)) => t!("{khz} kHz ({message})", khz = k, message = said(m)),
        _ => t!("no \"tsc: Detected/Refined\" line").to_string(),
    };
    let unstable = if l.marked_unstable {
        t!(
            "TSC marked unstable: {evidence}",
            evidence = l.unstable_evidence.join("; ")
        )
    } else {
        t!("TSC never marked unstable").to_string()
    };
    crate::tn!(
        "{khz}; {unstable}; {n} records",
        "{khz}; {unstable}; {n} records",
        l.records,
        khz = khz,
        unstable = unstable,
        n = l.records
    )
}

/// The kernel's evidence, and its TSC and clocksource messages.
fn write_linux(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    writeln_escaped!(out, "Linux")?;
    let Some(k) = &r.linux else {
        return writeln_escaped!(out, "{}", t!("  not read: analysing a CPUID dump"));
    };
    machine_line(out, t!("kernel"), &k.kernel_release.describe(|s| s.clone()))?;
    let cs = t!(
        "{current} (available: {available})",
        current = k.current_clocksource.describe(|s| s.clone()),
        available = k.available_clocksources.describe(|v| v.join(" "))
    );
    machine_line(out, t!("clocksource"), &cs)?;
    machine_line(out, t!("cpuinfo TSC flags"), &k.tsc_flags.describe(tsc_flags_text))?;
    if let Some(m) = &k.cpu_model_name {
        machine_line(out, t!("cpuinfo model name"), m)?;
    }
    machine_line(out, t!("boot options"), &k.cmdline.describe(boot_options_text))?;
    machine_line(out, t!("kernel log"), &k.kernel_log.describe(kernel_log_text))?;
    if let Some(l) = k.kernel_log.found() {
        writeln!(out)?;
        writeln_escaped!(out, "{}", t!("Kernel log, TSC and clocksource messages"))?;
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
    let head = match (in_use, r.clockscope_frequency.source_label) {
        (Some(k), Some(s)) => t!(
            "TSC frequency sources (ppm vs the frequency in use: {khz} kHz from {source})",
            khz = k,
            source = said(s)
        ),
        _ => t!("TSC frequency sources (no frequency in use)").to_string(),
    };
    writeln_escaped!(out, "{head}")?;
    let label_w = r
        .frequency_sources
        .iter()
        .map(|s| textwrap::core::display_width(&said(s.source)))
        .max()
        .unwrap_or(6)
        .max(textwrap::core::display_width(t!("source")))
        .max(6);
    writeln_escaped!(
        out,
        "    {}  {}  {}  {}",
        pad_right(t!("source"), label_w),
        pad_left(t!("kHz"), 10),
        pad_left("ppm", 9),
        t!("note")
    )?;
    for s in &r.frequency_sources {
        let flag = if s.flagged { "!" } else { " " };
        let ppm = s.ppm_vs_in_use.map_or("-".to_string(), |p| signed(p, 1));
        let mut note = said(&s.note);
        if let Some(u) = s.uncertainty_ppm {
            note = t!("±{ppm} ppm; {note}", ppm = num(u, 2), note = note);
        }
        writeln_escaped!(
            out,
            "  {flag} {}  {:>10}  {:>9}  {note}",
            pad_right(&said(s.source), label_w),
            khz_text(s.khz),
            ppm
        )?;
    }
    writeln_escaped!(
        out,
        "{}",
        t!(
            "  ! = differs from the frequency in use by more than {ppm} ppm (plus a calibration's own uncertainty)",
            ppm = DISAGREEMENT_LIMIT_PPM
        )
    )?;
    writeln_escaped!(
        out,
        "{}",
        t!(
            "  CPUID 0x16, Linux 4.x's crystal table and PostgreSQL's calibration are shown for comparison: they do not count \
             in the agreement check below"
        )
    )?;
    if r.frequency_sources.iter().any(|s| !s.independent) {
        super::evidence::write_wrapped(
            out,
            "  ",
            t!(
                "with clocksource tsc, MONOTONIC(_RAW) is the TSC scaled by the kernel: a calibration against it \
                 checks the kernel's arithmetic and is not independent evidence (not counted below)"
            ),
        )?;
    }
    super::evidence::write_wrapped(
        out,
        "  ",
        &t!("Linux's CPUID rule: {rule}", rule = said(&r.cpuid_tsc_rule)),
    )
}

/// The frequency PostgreSQL 19 would use and the one clockscope uses, and why.
fn write_choices(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let w = label_width(&[t!("PostgreSQL 19 would use"), t!("clockscope uses")], 26);
    let pg = &r.postgresql_frequency;
    let pg_line = match (pg.tsc_usable, pg.khz, pg.source) {
        (false, _, _) => t!("no TSC").to_string(),
        (true, Some(k), Some(s)) => t!("{khz} kHz ({source})", khz = k, source = s),
        (true, _, _) => t!("no frequency ({source} not available)", source = PG_SOURCE_CALIBRATION),
    };
    writeln_escaped!(out, "{}{pg_line}", pad_right(t!("PostgreSQL 19 would use"), w))?;
    writeln_escaped!(out, "{}", t!("  why: {why}", why = said(&pg.why)))?;
    let cs = &r.clockscope_frequency;
    let cs_line = match (cs.khz, cs.source_label) {
        (Some(k), Some(s)) => t!("{khz} kHz ({source})", khz = k, source = said(s)),
        _ => t!("no frequency").to_string(),
    };
    writeln_escaped!(out, "{}{cs_line}", pad_right(t!("clockscope uses"), w))?;
    writeln_escaped!(out, "{}", t!("  why: {why}", why = said(&cs.why)))?;
    writeln_escaped!(
        out,
        "{}",
        t!(
            "  cross-check: {evidence}",
            evidence = said(&r.frequency_agreement.evidence)
        )
    )
}

/// Both trust decisions: PostgreSQL 19's `auto` and clockscope's, each with its reasons.
fn write_decisions(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let a = &r.postgresql_auto;
    let auto = if a.use_by_default {
        t!("uses the TSC (SHOW gives 'auto (tsc)')")
    } else {
        t!("uses the system clock (SHOW gives 'auto (system)')")
    };
    writeln_escaped!(
        out,
        "{}",
        t!("PostgreSQL 19 timing_clock_source=auto: {auto}", auto = auto)
    )?;
    reason_lines(out, &a.reasons)?;
    writeln!(out)?;
    let d = &r.clockscope_decision;
    let trusted = if d.trusted {
        t!("trusted (every check passed)")
    } else {
        t!("NOT trusted (a check failed or its evidence is missing)")
    };
    writeln_escaped!(out, "{}", t!("clockscope: the TSC is {trusted}", trusted = trusted))?;
    reason_lines(out, &d.reasons)
}

/// Writes the report and the independent evidence beside it: NTP, and the
/// `--drift` result when measured.
pub fn write_output(out: &mut dyn Write, o: &crate::commands::tsc::model::TscOutput) -> std::io::Result<()> {
    write(out, o.report, o.dump)?;
    writeln!(out)?;
    writeln_escaped!(out, "{}", t!("NTP (adjtimex, read-only)"))?;
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

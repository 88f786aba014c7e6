//! Property tests of every parser of untrusted input: arbitrary bytes, and
//! soups of the tokens each parser looks for (so the deep paths are reached,
//! not only "not a dump"), into the CPUID dump parser, the kernel-evidence
//! parsers (/proc/cpuinfo, the kernel log, /proc/cmdline, CPU lists) and the
//! ARM ones (cpuinfo, BogoMIPS, MIDR, ACPI GTDT header); and arbitrary CPUID
//! registers into the frequency table (no arithmetic overflow).
//!
//! Properties: no panic; error messages hold no raw control character and
//! stay short; a recorded CPUID set printed as a dump parses back to itself.
//! Time is bounded by the inputs (at most a few kB) and the case count
//! ([`CASES`] per property): the whole file runs in a few seconds.
//!
//! There is no cgroup `cpu.stat` parser in clockscope, so none is tested.

use clockscope_system::arm::{cores, errata, frequency as arm_frequency, midr::Midr};
use clockscope_system::linux::kmsg::parse_mhz_as_khz;
use clockscope_system::linux::{CpuInfo, CpuList, KernelCmdline, KernelLog};
use clockscope_system::tsc::cpuid::{parse_dump, CpuidFacts, RecordedCpuid};
use clockscope_system::tsc::frequency::{frequency_report, FrequencyInputs};
use proptest::prelude::*;

/// Cases per property.
const CASES: u32 = 256;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Arbitrary bytes (up to 2 kB) as the text a reader would hand over:
/// readers refuse non-UTF-8, so lossy conversion covers every string they pass.
fn bytes_as_text() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<u8>(), 0..2048).prop_map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Up to 200 of `tokens`, concatenated.
fn soup(tokens: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(tokens), 0..200).prop_map(|t| t.concat())
}

/// Either arbitrary bytes or a token soup.
fn input(tokens: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![bytes_as_text(), soup(tokens), any::<String>()]
}

const DUMP_TOKENS: &[&str] = &[
    "CPU 0:",
    "CPU 1:",
    "CPU:",
    "\n",
    "\r\n",
    " ",
    "   ",
    "0x00000000",
    "0x00000015",
    "0x40000010",
    "0x00",
    "0x01",
    ":",
    " eax=0x00000001",
    " ebx=0xffffffff",
    " ecx=0x016e3600",
    " edx=0x00000000",
    "eax=",
    "=0x",
    "0x123456789",
    "CPUID ",
    "00000000:",
    "00000015:",
    "0000000D:",
    " 00000016-756E6547-6C65746E-49656E69",
    " 00000002-0000009E-00000000-00000000",
    "-",
    "[SL 01]",
    "[SL ",
    "[SL zz]",
    "]",
    "------[ Logical CPU #1 ]------",
    "------[ Versions ]------",
    "CPU#001 AffMask: 0x2",
    "#",
    "\u{feff}",
    "\x1b]0;x\x07",
    "\u{202e}",
    "ffffffff",
    "é",
];

const KMSG_TOKENS: &[&str] = &[
    "6,1,0,-;",
    "\\x",
    "\\xe2\\x80",
    " SUBSYSTEM=cpu",
    "\r\n",
    "> ",
    "    ",
    "[Tue Nov 24 20:00:01 2026] ",
    "2026-11-24T20:00:01,000008+00:00 ",
    "2026-11-24T20:00:01.5Z db1 kernel: ",
    "<6>1 2026-11-24T20:00:01Z db1 kernel - - - ",
    "kern  :info  : ",
    "Tue Nov 24 20:00:01 2026 kern.info kernel: ",
    "Nov  4 20:00:01 db1 systemd[1]: ",
    "timekeeping watchdog on CPU",
    "99999999999",
    ": Marking clocksource 'tsc' as unstable because the skew is too large:",
    "                      'hpet' wd_nsec: ",
    " wd_now: 1 wd_last: 2 mask: ff",
    "Clocksource 'tsc' skewed -9223372036854775808 ns (0 ms) over watchdog 'hpet' interval of ",
    "Clocksource tsc unstable (delta = ",
    " hpet wd-wd read-back delay of ",
    "wd-tsc-wd read-back delay of ",
    "ns, clock-skew test skipped!",
    "checking TSC synchronization [CPU#",
    " -> CPU#",
    "]: ",
    "Measured ",
    " cycles TSC warp between CPUs, turning off TSC clock.",
    "[Firmware Bug]: TSC ADJUST differs: CPU",
    " --> ",
    ". Restoring",
    "TSC ADJUST: CPU",
    " force to 0",
    "Hypervisor detected: ",
    "Booting paravirtualized kernel on ",
    "bare hardware",
    "Switching to clocksource ",
    "TSC freq read from hypervisor : ",
    "Checking clocksource tsc synchronization from CPU ",
    "        CPUs 0-3 ahead of CPU ",
    "4,99999999999999999999999,1,-;",
    "6,0,58,-,caller=T0;",
    "[    0.000058] ",
    "[    T0] ",
    "[",
    "]",
    "<6>",
    "<",
    ">",
    "Jan 16 17:13:19 host kernel: ",
    "tsc: Detected ",
    "2599.998",
    "99999999999999999999.999",
    "0.0001",
    " MHz processor",
    " MHz TSC",
    "Refined TSC clocksource calibration: ",
    " MHz",
    "Marking TSC unstable due to ",
    "clocksource watchdog",
    "Marking clocksource '",
    "tsc",
    "'",
    " as unstable",
    "Switched to clocksource ",
    "Measured ",
    "-9223372036854775809",
    " cycles TSC warp between CPUs, turning off TSC clock.",
    "kvm-clock: using sched offset",
    "Performance Events: ",
    "sched_clock",
    "\n",
    " ",
    " KEY=value\n",
    ";",
    ",",
    ".",
    "\x1b[2J",
];

const CPUINFO_TOKENS: &[&str] = &[
    "processor\t: 0\n",
    "processor\t: 4294967296\n",
    "processor\t: x\n",
    "vendor_id\t: GenuineIntel\n",
    "cpu family\t: 6\n",
    "model\t\t: 99999999999999999999999\n",
    "model name\t: Intel(R) Xeon(R)\n",
    "stepping\t: 1\n",
    "flags\t\t: ",
    "tsc ",
    "constant_tsc ",
    "nonstop_tsc ",
    "tsc_reliable ",
    "tsc_known_freq ",
    "CPU implementer\t: 0x41\n",
    "CPU implementer\t: 0x1ff\n",
    "CPU variant\t: 0x3\n",
    "CPU part\t: 0xd0c\n",
    "CPU part\t: zz\n",
    "CPU revision\t: 1\n",
    "BogoMIPS\t: 50.00\n",
    "BogoMIPS\t: 1e309\n",
    "BogoMIPS\t: -1\n",
    "bogomips\t: 5199.99\n",
    "\n\n",
    "\n",
    ":",
    "\t",
    " ",
];

const CMDLINE_TOKENS: &[&str] = &[
    "tsc=",
    "unstable",
    "reliable",
    "nowatchdog",
    "clocksource=",
    "hpet",
    "notsc",
    "--",
    " ",
    "\"",
    "=",
    ",",
    "\n",
    "BOOT_IMAGE=/vmlinuz",
];

const CPULIST_TOKENS: &[&str] = &[
    "0",
    "1",
    "7",
    "-",
    ",",
    "4194303",
    "4194304",
    "99999999999999999999999",
    " ",
    "\n",
    "a",
    ":",
    "/",
];

const MIDR_TOKENS: &[&str] = &["0x", "0X", "413fd0c1", "ffffffffffffffff", "1", "\n", " ", "g"];

/// An error message quoting untrusted text: no raw control character, short.
fn assert_safe_message(msg: &str) {
    assert!(
        !msg.chars()
            .any(|c| (c.is_control() && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c)),
        "raw control character in {msg:?}"
    );
    assert!(msg.chars().count() < 600, "{} characters: {msg:?}", msg.chars().count());
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn dump_parser_never_panics_and_quotes_safely(text in input(DUMP_TOKENS)) {
        match parse_dump(&text) {
            Ok(d) => {
                // Whatever parsed decodes and gives a frequency table.
                let facts = CpuidFacts::from_recorded(&d.leaves);
                let _ = frequency_report(&dump_inputs(&facts));
            }
            Err(e) => {
                assert!(e.line >= 1);
                assert_safe_message(&e.to_string());
            }
        }
    }

    #[test]
    fn recorded_leaves_print_and_parse_back(
        leaves in prop::collection::btree_map((any::<u32>(), 0u32..=0xff), any::<[u32; 4]>(), 0..40),
        leaf0 in any::<[u32; 4]>(),
    ) {
        let mut rec = RecordedCpuid::new().with(0, 0, leaf0);
        for ((leaf, sub), regs) in leaves {
            rec.insert(leaf, sub, regs);
        }
        let parsed = parse_dump(&rec.to_string()).expect("our own output parses");
        prop_assert_eq!(parsed.leaves, rec);
    }

    #[test]
    fn any_cpuid_registers_give_a_frequency_table_without_overflow(
        leaf15 in any::<[u32; 3]>(),
        leaf16 in any::<[u32; 3]>(),
        hv_khz in any::<u32>(),
        signature in 0usize..3,
        hypervisor in any::<bool>(),
        sig_eax in any::<u32>(),
    ) {
        let vendor = [0x756e_6547, 0x6c65_746e, 0x4965_6e69];
        let sigs = [
            clockscope_system::tsc::cpuid::SIGNATURE_KVM,
            clockscope_system::tsc::cpuid::SIGNATURE_VMWARE,
            [1, 2, 3],
        ];
        let mut rec = RecordedCpuid::new()
            .with(0, 0, [0x16, vendor[0], vendor[2], vendor[1]])
            .with(1, 0, [sig_eax, 0, if hypervisor { 1 << 31 } else { 0 }, 1 << 4])
            .with(0x15, 0, [leaf15[0], leaf15[1], leaf15[2], 0])
            .with(0x16, 0, [leaf16[0], leaf16[1], leaf16[2], 0])
            .with(0x8000_0000, 0, [0x8000_0008, 0, 0, 0])
            .with(0x8000_0001, 0, [0, 0, 0, 1 << 27])
            .with(0x8000_0007, 0, [0, 0, 0, 1 << 8]);
        let s = sigs[signature];
        rec.insert(0x4000_0000, 0, [0x4000_0010, s[0], s[1], s[2]]);
        rec.insert(0x4000_0010, 0, [hv_khz, 0, 0, 0]);
        let facts = CpuidFacts::from_recorded(&rec);
        let report = frequency_report(&dump_inputs(&facts));
        // Nothing clockscope uses is implausible.
        for src in &report.sources {
            if let Some(k) = src.khz {
                if !src.id.label().starts_with("calibration") {
                    prop_assert!((100_000..=10_000_000).contains(&k), "{:?}", src);
                }
            }
            prop_assert!(!(src.khz.is_some() && src.implausible_khz.is_some()));
        }
        if let Some(k) = report.clockscope.khz {
            prop_assert!((100_000..=10_000_000).contains(&k));
        }
        let _ = clockscope_system::tsc::frequency::postgres_cpuid_khz(&facts);
    }

    #[test]
    fn kernel_log_parser_never_panics(text in input(KMSG_TOKENS)) {
        let log = KernelLog::parse(&text);
        assert!(log.records as usize <= text.lines().count());
        for line in text.lines() {
            let _ = parse_mhz_as_khz(line);
        }
        let _ = log.kernel_tsc_khz();
        let _ = log.tsc_marked_unstable();
        // The interpretation `dmesg` reports: events bounded by the lines.
        let s = clockscope_system::kernel_log::summarise(&text, None);
        assert!(s.events.len() <= text.lines().count());
        assert!(s.lines as usize <= text.lines().count());
        for e in &s.events {
            // Verbatim: every message is text of the input (or decoded \xNN).
            assert!(!e.message.is_empty());
        }
    }

    #[test]
    fn cpuinfo_parsers_never_panic(text in input(CPUINFO_TOKENS)) {
        if let Err(e) = CpuInfo::parse(&text) {
            assert_safe_message(&e);
        }
        let _ = cores::parse_cpuinfo(&text);
        let _ = arm_frequency::bogomips_hz(&text);
    }

    #[test]
    fn cmdline_parser_never_panics(text in input(CMDLINE_TOKENS)) {
        let _ = KernelCmdline::parse(&text);
    }

    #[test]
    fn cpulist_parser_never_panics_and_stays_small(text in input(CPULIST_TOKENS)) {
        match CpuList::parse(&text) {
            Ok(list) => {
                // Ranges, not CPUs, are stored: a huge range costs nothing.
                assert!(list.ranges().len() <= text.len());
                assert!(list.highest().is_none_or(|h| h <= clockscope_system::linux::cpulist::MAX_CPU));
            }
            Err(e) => assert_safe_message(&e.to_string()),
        }
    }

    #[test]
    fn midr_and_gtdt_parsers_never_panic(
        text in input(MIDR_TOKENS),
        bytes in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let _ = Midr::parse_sysfs(&text);
        let mut table = b"GTDT".to_vec();
        table.extend_from_slice(&bytes);
        let _ = errata::parse_gtdt_header(&table);
        let _ = errata::parse_gtdt_header(&bytes);
    }
}

/// Frequency inputs for a dump: CPUID only.
fn dump_inputs(facts: &CpuidFacts) -> FrequencyInputs<'_> {
    let none = "not read: fuzzing".to_string();
    FrequencyInputs {
        cpuid: Some(facts),
        perf_page_khz: Err(none.clone()),
        kernel_log_khz: Err(none.clone()),
        calibration: Err(none.clone()),
        postgres_calibration: Err(none),
        clocksource_is_counter: false,
    }
}

//! The dump parser on every format, the first processor's block, and its errors.

use super::*;

const RAW: &str = "CPU 0:\n   0x00000000 0x00: eax=0x00000016 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n   \
                   0x00000004 0x01: eax=0x1c004122 ebx=0x01c0003f ecx=0x0000003f edx=0x00000000\n\
                   CPU 1:\n   0x00000000 0x00: eax=0x00000099 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n";

#[test]
fn raw_first_cpu_only() {
    let d = parse_dump(RAW).unwrap();
    assert_eq!(d.format, DumpFormat::CpuidRaw);
    assert_eq!(d.leaves.get(0, 0), Some([0x16, 0x756e6547, 0x6c65746e, 0x49656e69]));
    assert_eq!(d.leaves.get(4, 1), Some([0x1c004122, 0x01c0003f, 0x3f, 0]));
    assert_eq!(d.leaves.len(), 2);
}

#[test]
fn raw_rejects_free_text() {
    let text = format!("{RAW}hello\n");
    let e = parse_dump(&text).unwrap_err();
    assert_eq!(e.line, 6);
    assert_eq!(e.to_string(), "line 6: not a `cpuid -r` line: 'hello'");
    let e = parse_dump("$ cpuid -r\nCPU:\n   0x00000000 0x00: eax=0x1 ebx=0x0 ecx=0x0 edx=0x0\n").unwrap_err();
    assert_eq!(e.line, 1, "{e}");
}

#[test]
fn raw_malformed_leaf_line() {
    let e = parse_dump("CPU:\n   0x00000000 0x00: eax=0x00000016 ebx=0x756e6547 ecx=0x6c65746e\n").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.reason.contains("needs eax, ebx, ecx and edx"), "{e}");
    let e = parse_dump("CPU:\n   0x00000000 0x00: eax=0x1 ebx=0x0 ecx=0x0 edx=0x123456789\n").unwrap_err();
    assert!(e.reason.contains("not 32-bit hex"), "{e}");
    // A wrapped line (as in mailing-list archives) is not silently accepted.
    let e = parse_dump("CPU:\n   0x00000000 0x00: eax=0x1 ebx=0x0 ecx=0x0\nedx=0x0\n").unwrap_err();
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn aida_subleaves_and_annotations() {
    let text = "------[ Versions ]------\n\nProgram Version : AIDA64 v5.20.3478 Beta\n\
                CPUID Manufacturer: GenuineIntel\n\
                ------[ Logical CPU #0 ]------\nallcpu: Package 0 / Core 0 / Thread 0: Valid\n\
                CPUID 00000000: 00000016-756E6547-6C65746E-49656E69 [GenuineIntel]\n\
                CPUID 0000000D: 00000207-00000340-00000380-00000000 [SL 00] [x87]\n\
                CPUID 0000000D: 00000040-00000340-00000000-00000000 [SL 09] [PKRU]\n\
                CPUID 00000016: 00000CE4-00000FA0-00000064-00000000 [3300 / 4000 / 100]\n\
                L1    Data Cache:    32 KB,  8-way Associative, 64-byte Line\n\
                ------[ Logical CPU #1 ]------\n\
                CPUID 00000000: 00000099-756E6547-6C65746E-49656E69 [GenuineIntel]\n\
                MSR 000001AC: < FAILED >\n";
    let d = parse_dump(text).unwrap();
    assert_eq!(d.format, DumpFormat::Aida64);
    assert_eq!(d.leaves.get(0, 0).unwrap()[0], 0x16);
    assert_eq!(d.leaves.get(0xd, 9), Some([0x40, 0x340, 0, 0]));
    assert_eq!(d.leaves.get(0x16, 0), Some([0xce4, 0xfa0, 0x64, 0]));
    assert_eq!(d.leaves.len(), 4);
}

#[test]
fn aida_ordinal_subleaves_and_second_cpu_by_leaf0() {
    let text = "CPUID 00000000: 00000016-756E6547-6C65746E-49656E69\n\
                CPUID 00000004: 1C004121-01C0003F-0000003F-00000000\n\
                CPUID 00000004: 1C004122-01C0003F-0000003F-00000000\n\
                CPUID 00000000: 00000016-756E6547-6C65746E-49656E69\n\
                CPUID 00000004: 2C004121-01C0003F-0000003F-00000000\n";
    let d = parse_dump(text).unwrap();
    assert_eq!(d.leaves.get(4, 0).unwrap()[0], 0x1C004121);
    assert_eq!(d.leaves.get(4, 1).unwrap()[0], 0x1C004122);
    assert_eq!(d.leaves.len(), 3);
}

#[test]
fn aida_malformed_leaf_line() {
    let e = parse_dump("CPUID 00000000: 00000016-756E6547-6C65746E\n").unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.reason.contains("EAX-EBX-ECX-EDX"), "{e}");
}

#[test]
fn not_a_dump() {
    let e = parse_dump("\n\nhello world\nsecond line\n").unwrap_err();
    assert_eq!(e.line, 3);
    assert_eq!(e.content, "hello world");
    assert!(e.to_string().starts_with("line 3: not a CPUID dump"), "{e}");
    let e = parse_dump("").unwrap_err();
    assert_eq!(e.line, 1);
    let e = parse_dump("CPU:\n   0x00000001 0x00: eax=0x1 ebx=0x0 ecx=0x0 edx=0x0\n").unwrap_err();
    assert!(e.reason.contains("no leaf 0x00000000"), "{e}");
}

#[test]
fn byte_order_mark_is_skipped() {
    let with_bom = format!("\u{feff}{RAW}");
    assert_eq!(parse_dump(&with_bom).unwrap(), parse_dump(RAW).unwrap());
    let aida = "\u{feff}CPUID 00000000: 00000016-756E6547-6C65746E-49656E69\n";
    assert_eq!(parse_dump(aida).unwrap().format, DumpFormat::Aida64);
}

#[test]
fn duplicated_leaf_with_other_values_names_both_lines() {
    let text = "CPU 0:\n   0x00000000 0x00: eax=0x00000016 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n   \
                0x00000015 0x00: eax=0x00000002 ebx=0x0000009e ecx=0x00000000 edx=0x00000000\n   \
                0x00000015 0x00: eax=0x00000001 ebx=0xffffffff ecx=0xffffffff edx=0x00000000\n";
    let e = parse_dump(text).unwrap_err();
    assert_eq!(e.line, 4);
    assert!(
        e.reason
            .contains("leaf 0x00000015 subleaf 0x0 is given twice with different registers, on line 3 and line 4"),
        "{e}"
    );
    // The same registers twice: accepted, one leaf.
    let twice = "CPU 0:\n   0x00000000 0x00: eax=0x00000016 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n   \
                 0x00000000 0x00: eax=0x00000016 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n";
    assert_eq!(parse_dump(twice).unwrap().leaves.len(), 1);
    // InstLatX64 with [SL nn].
    let aida = "CPUID 00000000: 00000016-756E6547-6C65746E-49656E69\n\
                CPUID 0000000D: 00000207-00000340-00000380-00000000 [SL 01]\n\
                CPUID 0000000D: 00000208-00000340-00000380-00000000 [SL 01]\n";
    let e = parse_dump(aida).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(e.reason.contains("on line 2 and line 3"), "{e}");
    // A second processor's leaves are not duplicates.
    assert!(parse_dump(RAW).is_ok());
}

#[test]
fn control_characters_in_errors_are_escaped() {
    let e = parse_dump("CPU:\n   0x00000000 0x00: eax=0x1 \x1b]0;x\x07=0x1\n").unwrap_err();
    let shown = e.to_string();
    assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
    assert!(shown.contains("\\x1b]0;x\\x07"), "{shown}");
    let e = parse_dump("\x1b[2J\x00hello\n").unwrap_err();
    let shown = e.to_string();
    assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
    assert!(shown.ends_with("'\\x1b[2J\\x00hello'"), "{shown}");
}

#[test]
fn mixed_formats_rejected() {
    let text = "CPU:\n   0x00000000 0x00: eax=0x1 ebx=0x0 ecx=0x0 edx=0x0\nCPUID 00000001: 00000000-00000000-00000000-00000000\n";
    let e = parse_dump(text).unwrap_err();
    assert_eq!(e.line, 3);
}

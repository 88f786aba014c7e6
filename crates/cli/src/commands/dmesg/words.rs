//! `dmesg`'s sentences from the kernel-log library
//! (`clockscope_system::kernel_log`: what the log means for PostgreSQL, the
//! verdict, what to do, the next command) in the report's language.
//!
//! The library writes them in English (JSON carries them as they are) by
//! joining fixed phrases around a clocksource's or a hypervisor's name; each
//! phrase is a message here (`n_!`, extracted into the catalog like `t!`)
//! and is replaced by its translation, longest first, so the names between
//! them stay as the log gave them. A phrase the library adds later stays
//! English until it is added here; `every_fixture_reads_in_russian` fails
//! when one of the recorded logs gives such a sentence.

use crate::n_;

/// Every phrase of the library's sentences (crates/system/src/kernel_log/advice.rs and meaning.rs's `by_machine`).
const PHRASES: &[&str] = &[
    // verdict
    n_!("act: the log ends on '"),
    n_!("', which costs a system call per clock read"),
    n_!("act: the kernel marked the TSC unstable and the log shows no fast clocksource after it"),
    n_!("nothing to act on: the kernel marked the TSC unstable, but '"),
    n_!("' is read in the vDSO"),
    n_!("nothing to act on: the log shows no slow clock"),
    // what it means for PostgreSQL
    n_!("clock_gettime reads the TSC in the vDSO without a system call: timing is cheap"),
    n_!(
        "clock_gettime reads the ARM generic timer in the vDSO without a system call: timing is cheap (the TSC \
         messages do not apply to ARM)"
    ),
    n_!(
        "clock_gettime leaves the vDSO: every call is a system call (about a microsecond or more), so EXPLAIN \
         ANALYZE, track_io_timing and pg_test_timing slow down"
    ),
    n_!("clock_gettime reads the paravirtual clock in the vDSO while the host marks it stable: timing stays cheap"),
    n_!("clock_gettime reads this clocksource"),
    n_!("the log shows no clocksource switch (clockscope check reports the current one)"),
    n_!("; PostgreSQL 19's timing_clock_source=auto will not use the TSC once the kernel marked it unstable"),
    // what to do
    n_!("on bare metal: "),
    n_!("; in a guest: "),
    n_!("; until then keep EXPLAIN ANALYZE timing and track_io_timing to what you need"),
    n_!(
        "find the cause (BIOS/firmware update, SMIs, deep C-states, a multi-socket TSC sync problem); do not force \
         tsc=reliable unless the TSCs are proven in step"
    ),
    n_!(
        "the TSC was not marked unstable: if clockscope check finds it invariant and in step, the kernel can use it \
         (clocksource=tsc); otherwise timing stays slow"
    ),
    n_!("nothing to do for the clock"),
    n_!(
        "Hyper-V/Azure: the TSC page clocksource is read in the vDSO, so clock reads stay cheap; newer host builds \
         also expose an invariant TSC that kernels 5.x and later use directly: nothing to do for the clock"
    ),
    n_!(
        "Hyper-V/Azure: this kernel reads a slow Hyper-V clock; a kernel of 4.14 or later uses the TSC page \
         clocksource in the vDSO (ask for a current image or VM generation, or a host build with an invariant TSC)"
    ),
    n_!(
        "KVM: kvm-clock is read in the vDSO while the host marks it stable; to let the guest use the TSC ask the \
         host or cloud for an invariant TSC passed through (libvirt host-passthrough or -cpu host,+invtsc), no CPU \
         overcommit and no migration between different CPUs"
    ),
    n_!(
        "KVM: ask the host or cloud for an invariant TSC passed through (libvirt host-passthrough or -cpu \
         host,+invtsc), no CPU overcommit and no migration between different CPUs, and a guest kernel with \
         kvm-clock (CONFIG_KVM_GUEST)"
    ),
    n_!(
        "Xen: the xen clocksource costs a system call per read; where the host gives an invariant TSC and does not \
         migrate the guest (AWS advises this for its Xen instances), boot with clocksource=tsc, or ask for a \
         KVM-based (AWS Nitro) instance type"
    ),
    n_!(
        "VMware: ask the VMware administrator for a host with an invariant TSC, no CPU overcommit and the VM's TSC \
         kept in step (the kernel read the TSC frequency from the hypervisor)"
    ),
    n_!("ask the host for an invariant, stable TSC passed to the guest (no overcommit)"),
    n_!(
        "ask the host or cloud for an invariant, stable TSC passed to the guest (no overcommit, CPU passthrough of \
         invtsc) or accept the slower clock"
    ),
    // next
    n_!("clockscope cross-cpu (on that machine: are the CPUs' TSCs in step now?)"),
    n_!("clockscope check (on that machine: the clocksource, the TSC and the cost of a clock read now)"),
    n_!("clockscope check (on that machine, to confirm the clock as it runs now)"),
];

/// `text`, one of the library's sentences, in the report's language.
pub fn library_words(text: &str) -> String {
    if crate::i18n::current().is_english() {
        return text.to_string();
    }
    let mut phrases: Vec<&'static str> = PHRASES.to_vec();
    phrases.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let mut out = text.to_string();
    for p in phrases {
        if out.contains(p) {
            out = out.replace(p, crate::i18n::gettext(p));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clockscope_system::kernel_log::summarise;

    /// Three Latin words in a row: an English phrase left untranslated.
    fn english_left(s: &str) -> Option<String> {
        let words: Vec<&str> = s
            .split([' ', '(', ')', ';', ':', ','])
            .filter(|w| !w.is_empty())
            .collect();
        let latin = |w: &&str| w.chars().all(|c| c.is_ascii_lowercase());
        words.windows(3).find(|w| w.iter().all(latin)).map(|w| w.join(" "))
    }

    #[test]
    fn every_fixture_reads_in_russian() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/dev/kernel-messages/fixtures");
        let ru = crate::i18n::Lang::from_code("ru").unwrap();
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "txt") {
                continue;
            }
            let s = summarise(&std::fs::read_to_string(&path).unwrap(), None);
            for text in [&s.postgres, &s.verdict, &s.advice, &s.next_command] {
                let words = crate::i18n::with_language(ru, || library_words(text));
                assert_eq!(english_left(&words), None, "{}: {words}", path.display());
                assert_eq!(crate::i18n::in_english(|| library_words(text)), *text);
                seen += 1;
            }
        }
        assert!(seen >= 20, "{seen} sentences");
    }
}

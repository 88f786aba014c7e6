//! The sweep model's sentences that `check`'s judge wrote in English (as
//! JSON carries them), said again in the reader's language for the text:
//! each part is rebuilt through the catalog from the words the model holds
//! and used only when its English is exactly the model's part; a part
//! worded otherwise stays in English rather than be mistranslated.

use crate::i18n::{current, in_english, localize_number};
use crate::t;

/// Why a clocksource costs a syscall per read (`check`'s
/// `rules::syscall_fallback`: by the clocksource's name, by the read cost,
/// or both, joined by `; `), in the current language.
pub fn syscall_fallback(clocksource: &str, model: &str) -> String {
    if current().is_english() {
        return model.to_string();
    }
    let by_name = |cs: &str| {
        t!(
            "the kernel clocksource '{clocksource}' has no vDSO read: every clock_gettime is a syscall",
            clocksource = cs
        )
    };
    let by_cost = |cost: &str, limit: &str| {
        t!(
            "clock_gettime costs {cost} ns per read (> {limit} ns): it behaves like a syscall, not a vDSO call",
            cost = localize_number(cost.to_string()),
            limit = limit
        )
    };
    model
        .split("; ")
        .map(|part| {
            if in_english(|| by_name(clocksource)) == part {
                return by_name(clocksource);
            }
            let numbers = part
                .strip_prefix("clock_gettime costs ")
                .and_then(|rest| rest.split_once(" ns per read (> "))
                .and_then(|(cost, rest)| rest.split_once(" ns)").map(|(limit, _)| (cost, limit)));
            match numbers {
                Some((cost, limit)) if in_english(|| by_cost(cost, limit)) == part => by_cost(cost, limit),
                _ => part.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

//! The explain report's sentences that the `clockscope-explain` crate writes
//! into its model (English, as JSON carries them), said again in the
//! reader's language for the text: each is rebuilt here from the model's
//! numbers through the catalog and used only when its English is exactly
//! the model's sentence; a sentence the crate words differently stays in
//! English rather than be mistranslated.

use crate::i18n::{current, in_english, num};
use crate::{n_, t, tn};
use clockscope_explain::report::{AaControl, SourceResult, TscPrediction};

/// `rebuild()` in the current language where its English is `model`'s.
fn again(model: &str, rebuild: impl Fn() -> String) -> String {
    if current().is_english() || in_english(&rebuild) != model {
        return model.to_string();
    }
    rebuild()
}

/// The order of the runs (`measure::ORDER_TEXT`).
pub fn order(model: &str) -> String {
    again(model, || {
        crate::i18n::gettext(n_!(
            "pairs alternate OFF-ON and ON-OFF (balanced blocks of two), a model slice before each pair's first \
             run; every third block an A/A control (OFF against OFF)"
        ))
        .to_string()
    })
}

/// Which server reads the TSC for EXPLAIN.
pub fn used_by(p: &TscPrediction, server_version_num: u32) -> String {
    again(&p.used_by, || {
        if server_version_num < clockscope_explain::measure::PG19_VERSION_NUM {
            t!(
                "PostgreSQL {major} reads the system clock for EXPLAIN; PostgreSQL 19 and later read the TSC \
                 (timing_clock_source = tsc, or auto where it trusts it): what upgrading would give",
                major = server_version_num / 10_000
            )
        } else {
            t!("this server reads the TSC when timing_clock_source = tsc (or auto where it trusts the TSC)").to_string()
        }
    })
}

/// Why a clock source's estimate is stated or not (`arith::judge_result`).
pub fn result_reason(s: &SourceResult) -> String {
    again(&s.result_reason, || {
        reason(s.slowdown_low, s.slowdown_high, s.noise.blocks, &s.control)
    })
}

fn reason(low: Option<f64>, high: Option<f64>, blocks: usize, control: &AaControl) -> String {
    let (Some(lo), Some(hi)) = (low, high) else {
        return tn!(
            "not resolved here: {n} block of pairs, an interval needs 6 (more time: --max-time, or more --rows)",
            "not resolved here: {n} blocks of pairs, an interval needs 6 (more time: --max-time, or more --rows)",
            blocks,
            n = blocks
        );
    };
    let (Some(clo), Some(chi)) = (control.low, control.high) else {
        return t!(
            "not resolved here: no A/A control block completed, so the machine's own variation is unknown (more \
             time: --max-time)"
        )
        .to_string();
    };
    let aa = if control.extent == "range" {
        tn!(
            "A/A {low}x to {high}x, the range of {n} blocks",
            "A/A {low}x to {high}x, the range of {n} blocks",
            control.blocks,
            low = num(clo, 2),
            high = num(chi, 2),
            n = control.blocks
        )
    } else {
        t!("A/A {low}x to {high}x", low = num(clo, 2), high = num(chi, 2))
    };
    let (lo_s, hi_s) = (num(lo, 2), num(hi, 2));
    if lo > chi.max(1.0) {
        t!(
            "resolved: {low}x to {high}x lies above the machine's own variation ({aa})",
            low = lo_s,
            high = hi_s,
            aa = aa
        )
    } else if hi < clo.min(1.0) {
        t!(
            "measurement problem: TIMING ON measured faster than TIMING OFF ({low}x to {high}x, below the {aa}); \
             timing every row cannot make EXPLAIN faster, so something else changed between the runs (a CPU's \
             speed, a cache, other work on the machine); no overhead is stated",
            low = lo_s,
            high = hi_s,
            aa = aa
        )
    } else {
        t!(
            "not resolved here: the machine's own variation ({aa}) is as large as the effect ({low}x to {high}x)",
            aa = aa,
            low = lo_s,
            high = hi_s
        )
    }
}

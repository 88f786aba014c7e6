//! The JSON Schema of every command's `--format json` output, derived from
//! the types it serialises (schemars, mirroring their serde attributes; doc
//! comments become descriptions). `docs/schema/` holds them as generated;
//! `crates/cli/tests/all/json_schemas.rs` fails when a committed file differs from
//! [`all`] and rewrites them under `CLOCKSCOPE_UPDATE_SCHEMAS=1`.
//!
//! Three rules are added to what the types give: every object is strict
//! (`additionalProperties: false`, so a key the types do not write is
//! caught), `schema_version` is the command's constant, and the top level
//! carries the `$id`, title and description that docs link to. The
//! counter reports (`tsc`, `generic-timer`) require only the library
//! report's keys: `check` embeds that report, without the stamp and the
//! command's own keys (docs/json.md).

use crate::commands::{
    check::model as check, clocks::model as clocks, cross_cpu::model as cross_cpu, dmesg::model as dmesg,
    sweep::model as sweep, tsc::model as tsc,
};
use crate::report::stamp::Stamped;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Value};

/// One schema file of `docs/schema/`.
pub struct SchemaFile {
    /// The file name in `docs/schema/` (also the last part of `$id`).
    pub file: &'static str,
    /// The schema, as written to the file (pretty-printed, a newline added).
    pub schema: Value,
}

/// Where each command's schema is published and what it is about.
struct Meta {
    file: &'static str,
    title: &'static str,
    description: &'static str,
    schema_version: u32,
    /// The report is also embedded in `check`'s JSON as this type's schema
    /// (without the stamp and the command's own keys): only what it requires
    /// is required.
    embedded: Option<fn() -> Value>,
}

/// Every command's schema, in the order of their file names.
pub fn all() -> Vec<SchemaFile> {
    let mut files = measuring_commands();
    files.extend(explain());
    files.extend(the_rest());
    files
}

/// `check`, `clocks`, `cross-cpu` (and its plan) and `dmesg`.
fn measuring_commands() -> Vec<SchemaFile> {
    vec![
        file::<check::CheckReport>(Meta {
            file: "check.schema.json",
            title: "clockscope check --format json",
            description: "What `clockscope check` measured: the environment, one entry per clock, and the verdict. \
                Every duration is in nanoseconds (fields end in _ns), frequencies in kHz (_khz), shares in percent \
                (_pct) unless the name says ratio. The `tsc` key follows tsc.schema.json on x86-64 and \
                generic-timer.schema.json on aarch64.",
            schema_version: check::SCHEMA_VERSION,
            embedded: None,
        }),
        file::<Stamped<'static, clocks::ClocksReport>>(Meta {
            file: "clocks.schema.json",
            title: "clockscope clocks --format json",
            description: "Every clock source clockscope knows, whether it works here and its resolution: \
                clock_getres(2), the counter period, and the smallest step and average loop time seen in a 20 ms \
                run of pg_test_timing's loop. Durations are in ns (fields ending in _ns, fractional where the type \
                is number), frequencies in kHz (_khz).",
            schema_version: clocks::SCHEMA_VERSION,
            embedded: None,
        }),
        file::<Stamped<'static, crate::commands::cross_cpu::PlanJson<'static>>>(Meta {
            file: "cross-cpu-plan.schema.json",
            title: "clockscope cross-cpu --plan --format json",
            description: "What a cross-cpu run would do, without measuring: the CPU pairs, their grouping by \
                package, and the expected run time (clockscope_system::crosscpu::Plan plus the CPU context). Durations \
                are in ns.",
            schema_version: cross_cpu::PLAN_SCHEMA_VERSION,
            embedded: None,
        }),
        file::<Stamped<'static, crate::commands::cross_cpu::Json<'static>>>(Meta {
            file: "cross-cpu.schema.json",
            title: "clockscope cross-cpu --format json",
            description: "Whether clocks agree across CPUs: for each CPU pair and clock, a warp test (does time go \
                backwards when a reading on one CPU follows one on the other?) and a ping-pong estimate of the \
                offset between the CPUs' clocks. Durations are in ns (fields ending in _ns), counter readings in \
                ticks (_ticks), frequencies in Hz (_hz) or kHz (_khz). Offsets are the clock of CPU b minus the \
                clock of CPU a. The library's report (clockscope_system::crosscpu::CrossCpuReport) plus the CPU context, \
                the counter calibration and the outcome.",
            schema_version: cross_cpu::SCHEMA_VERSION,
            embedded: None,
        }),
        file::<Stamped<'static, dmesg::DmesgReport>>(Meta {
            file: "dmesg.schema.json",
            title: "clockscope dmesg --format json",
            description: "A kernel log's TSC and clocksource events and what they add up to \
                (clockscope_system::kernel_log::Summary, the interpretation check and tsc share): this machine's \
                /dev/kmsg, a saved file, or stdin. Frequencies in kHz (_khz), durations in ns (_ns), warps in TSC \
                cycles. Text from the log is verbatim (the JSON writer escapes control characters).",
            schema_version: dmesg::SCHEMA_VERSION,
            embedded: None,
        }),
    ]
}

/// `explain` (built with the feature of that name).
fn explain() -> Option<SchemaFile> {
    #[cfg(not(feature = "explain"))]
    return None;
    #[cfg(feature = "explain")]
    Some(file::<Stamped<'static, clockscope_explain::report::Report>>(Meta {
        file: "explain.schema.json",
        title: "clockscope explain --format json",
        description: "EXPLAIN ANALYZE's timing overhead measured on a real PostgreSQL server \
            (clockscope_explain::report::Report): SELECT count(*) over a TEMP table, run with TIMING OFF and \
            TIMING ON alternately, per clock source the server offers, next to the overhead predicted from this \
            machine's clock read cost. Server times are EXPLAIN's \"Execution Time\" in ms (fields ending in _ms); \
            per-read and per-row costs in ns (_ns); slowdown and observed_over_predicted are ratios. Statistics \
            are medians of the runs unless the name ends in _min or _max.",
        schema_version: clockscope_explain::report::SCHEMA_VERSION,
        embedded: None,
    }))
}

/// `tsc` on aarch64 (`generic-timer`), `sweep` and `tsc`.
fn the_rest() -> Vec<SchemaFile> {
    vec![
        file::<Stamped<'static, tsc::GenericTimerOutput<'static>>>(Meta {
            file: "generic-timer.schema.json",
            title: "clockscope tsc --format json on aarch64",
            description: "The ARM generic timer report (clockscope_system::arm::GenericTimerReport): the counter \
                frequency CNTFRQ_EL0, the cores (MIDR_EL1), known counter errata, firmware cross-checks and \
                clockscope's decision whether CNTVCT_EL0 / CNTFRQ_EL0 can replace clock_gettime. Printed by \
                `clockscope tsc --format json` on aarch64 (without --cpuid-dump) and embedded as the `tsc` key of \
                `clockscope check --format json` there. Frequencies are in Hz (fields ending in _hz), durations in \
                ns (_ns), disagreements in parts per million (_ppm). PostgreSQL 19 has no ARM counter support: \
                this is clockscope's decision only.",
            schema_version: tsc::GENERIC_TIMER_SCHEMA_VERSION,
            embedded: Some(root::<clockscope_system::arm::GenericTimerReport>),
        }),
        file::<sweep::SweepReport>(Meta {
            file: "sweep.schema.json",
            title: "clockscope sweep --format json",
            description: "The kernel clocksources, and with --apply the system clock (clock_gettime \
                CLOCK_MONOTONIC) measured under each in turn with check's loop, statistics and verdict; then the \
                recommendation. Durations in ns (_ns), seconds (_s). The original clocksource is restored before \
                this document is printed (unless someone else changed the clocksource under the sweep: then their \
                choice is left in place, restore is left_alone); a sweep that cannot restore it prints an error \
                instead.",
            schema_version: sweep::SCHEMA_VERSION,
            embedded: None,
        }),
        file::<Stamped<'static, tsc::TscOutput<'static>>>(Meta {
            file: "tsc.schema.json",
            title: "clockscope tsc --format json (x86-64, or any architecture with --cpuid-dump)",
            description:
                "The TSC report (clockscope_system::tsc::TscReport): what CPUID says, what the kernel says, the \
                TSC frequency from every source, which frequency PostgreSQL 19 and clockscope use, and both trust \
                decisions. Frequencies are in kHz (fields ending in _khz) or Hz (_hz), durations in ns (_ns), \
                disagreements in parts per million (_ppm). Integers are exact. Also embedded as the `tsc` key of \
                `clockscope check --format json` on x86-64. On aarch64 without --cpuid-dump the command prints \
                generic-timer.schema.json instead.",
            schema_version: tsc::SCHEMA_VERSION,
            embedded: Some(root::<clockscope_system::tsc::report::TscReport>),
        }),
    ]
}

/// The schema of `T` as `meta` publishes it.
fn file<T: JsonSchema>(meta: Meta) -> SchemaFile {
    let mut schema = root::<T>();
    strict(&mut schema);
    let top = schema.as_object_mut().expect("a root schema is an object");
    let version = top
        .get_mut("properties")
        .and_then(|p| p.get_mut("schema_version"))
        .and_then(Value::as_object_mut)
        .expect("every report has a schema_version");
    version.remove("type");
    version.remove("format");
    version.remove("minimum");
    version.insert("const".into(), json!(meta.schema_version));
    let mut head = serde_json::Map::new();
    head.insert(
        "$schema".into(),
        top.remove("$schema").expect("schemars writes $schema"),
    );
    head.insert(
        "$id".into(),
        json!(format!("https://clockscope.invalid/schema/{}", meta.file)),
    );
    head.insert("title".into(), json!(meta.title));
    top.remove("title");
    head.insert("description".into(), json!(meta.description));
    top.remove("description");
    if let Some(embedded) = meta.embedded {
        let inner = embedded();
        let inner = inner["required"].as_array().expect("a struct lists its required keys");
        if let Some(Value::Array(required)) = top.get_mut("required") {
            required.retain(|k| inner.contains(k));
        }
    }
    head.append(top);
    SchemaFile {
        file: meta.file,
        schema: Value::Object(head),
    }
}

/// The schema of `T` as schemars derives it for serialising.
fn root<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12().for_serialize().into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

/// `additionalProperties: false` on every object schema that lists its
/// properties: the types name every key they write.
fn strict(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            map.values_mut().for_each(strict);
        }
        Value::Array(items) => items.iter_mut().for_each(strict),
        _ => {}
    }
}

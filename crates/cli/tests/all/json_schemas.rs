//! Every `clockscope` JSON output against its documented JSON Schema in
//! `docs/schema/`: the real outputs of `clocks`, `tsc` (this machine, every recorded
//! CPUID dump, a fake kernel tree), `cross-cpu` (all CPUs, two CPUs, one
//! CPU), `explain` (a real PostgreSQL) and the `tsc` object embedded in
//! `check`, `dmesg` of every kernel log fixture, plus the aarch64 generic-timer report built from fake sysfs
//! trees. Each schema is also shown to reject mutated documents (a wrong
//! type, an extra key, a broken rule), so these tests can fail. Times are
//! never asserted, only the shape.

use crate::common;
use clockscope_system::arm::CalibrationEvidence;
use clockscope_system::linux::testing::FakeRoot;
use common::{allowed_cpus, clockscope, has_taskset, PG_VARS};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const SCHEMAS: [&str; 9] = [
    "dmesg.schema.json",
    "check.schema.json",
    "clocks.schema.json",
    "tsc.schema.json",
    "generic-timer.schema.json",
    "cross-cpu.schema.json",
    "cross-cpu-plan.schema.json",
    "explain.schema.json",
    "sweep.schema.json",
];

fn schema_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schema")
        .join(name)
}

fn schema_value(name: &str) -> Value {
    let path = schema_path(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()))
}

/// The validator of a schema file (which must itself be a valid 2020-12 schema).
fn validator(name: &str) -> jsonschema::Validator {
    jsonschema::validator_for(&schema_value(name)).unwrap_or_else(|e| panic!("{name} is not a valid schema: {e}"))
}

/// Panics with every validation error of `doc` (and the document) when it does not match.
fn assert_valid(v: &jsonschema::Validator, doc: &Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} does not match its schema:\n{errors:#?}\n{}",
        serde_json::to_string_pretty(doc).unwrap()
    );
}

/// `doc` with `value` put at JSON pointer `at` (which must exist).
fn with(doc: &Value, at: &str, value: Value) -> Value {
    let mut d = doc.clone();
    *d.pointer_mut(at).unwrap_or_else(|| panic!("no {at} in the document")) = value;
    d
}

/// `doc` with an unknown key added to the object at `at` ("" for the top).
fn with_extra_key(doc: &Value, at: &str) -> Value {
    let mut d = doc.clone();
    d.pointer_mut(at)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no object at {at:?}"))
        .insert("surprise_ns".into(), json!(1));
    d
}

/// The schema rejects each mutated document.
fn assert_rejects(v: &jsonschema::Validator, bad: &[(&str, Value)]) {
    for (what, doc) in bad {
        assert!(!v.is_valid(doc), "the schema accepted {what}");
    }
}

/// The JSON on stdout, after checking the exit status is one of `codes`.
fn json_out(out: &Output, codes: &[i32], what: &str) -> Value {
    let code = out.status.code();
    assert!(
        code.is_some_and(|c| codes.contains(&c)),
        "{what}: exit {code:?}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: no JSON on stdout ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Every property of every object in `schema` carries a description, directly
/// or through its `$ref` (docs/json.md promises a description with its unit).
fn undescribed(schema: &Value, root: &Value, path: &str, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                // An enum variant: `{"found": ..}` described by the variant's
                // doc comment, or `{"kind": "..", ..}` whose tag is a constant.
                let variant = map.get("description").is_some();
                for (key, prop) in props {
                    let tag = variant && prop.get("const").is_some();
                    let direct = tag || (variant && props.len() == 1) || prop.get("description").is_some();
                    let via_ref = prop
                        .get("$ref")
                        .and_then(Value::as_str)
                        .and_then(|r| r.strip_prefix('#'))
                        .and_then(|p| root.pointer(p))
                        .is_some_and(|target| target.get("description").is_some());
                    // Properties inside if/then/else and prefixItems only constrain
                    // what is described elsewhere.
                    let constraint = path.contains("/if") || path.contains("/then") || path.contains("/else");
                    let constraint = constraint || path.contains("/prefixItems");
                    if !(direct || via_ref || constraint) {
                        out.push(format!("{path}/properties/{key}"));
                    }
                }
            }
            for (k, sub) in map {
                undescribed(sub, root, &format!("{path}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, sub) in items.iter().enumerate() {
                undescribed(sub, root, &format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// The committed schemas are what the types generate
/// (`clockscope_cli::commands::schema`); `CLOCKSCOPE_UPDATE_SCHEMAS=1` writes
/// them instead.
#[test]
fn committed_schemas_are_generated_from_the_types() {
    let update = std::env::var_os("CLOCKSCOPE_UPDATE_SCHEMAS").is_some_and(|v| v == "1");
    let generated = clockscope_cli::commands::schema::all();
    let names: Vec<&str> = generated.iter().map(|f| f.file).collect();
    let mut expected = SCHEMAS.to_vec();
    if !cfg!(feature = "explain") {
        expected.retain(|n| *n != "explain.schema.json");
    }
    expected.sort_unstable();
    assert_eq!(names, expected, "a schema file without a generator, or the reverse");
    let mut stale = Vec::new();
    for f in &generated {
        let text = serde_json::to_string_pretty(&f.schema).unwrap() + "\n";
        let path = schema_path(f.file);
        if update {
            std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != text {
            let first = committed
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| committed.lines().count().min(text.lines().count()));
            stale.push(format!(
                "{}: differs from the types from line {} on\n  committed: {}\n  generated: {}",
                path.display(),
                first + 1,
                committed.lines().nth(first).unwrap_or("<end of file>").trim(),
                text.lines().nth(first).unwrap_or("<end of file>").trim(),
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "{}\nThe JSON types changed: run `CLOCKSCOPE_UPDATE_SCHEMAS=1 cargo test -p clockscope-cli --test \
         json_schemas committed_schemas` and commit docs/schema/ (keep the output backward compatible: add fields).",
        stale.join("\n")
    );
}

#[test]
fn every_schema_is_valid_strict_and_describes_every_field() {
    for name in SCHEMAS {
        let schema = schema_value(name);
        validator(name);
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        assert_eq!(
            schema["$id"],
            format!("https://clockscope.invalid/schema/{name}"),
            "{name}: docs link to this $id"
        );
        assert_eq!(schema["additionalProperties"], false, "{name}: top level not strict");
        let mut missing = Vec::new();
        undescribed(&schema, &schema, "", &mut missing);
        assert!(
            missing.is_empty(),
            "{name}: properties without a description (a doc comment on the field): {missing:#?}"
        );
    }
}

#[test]
fn dmesg_of_every_fixture_matches_its_schema() {
    let v = validator("dmesg.schema.json");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/dev/kernel-messages/fixtures");
    let mut checked = 0;
    for txt in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
        if txt.extension().is_some_and(|x| x == "txt") {
            let what = format!("dmesg --format json {}", txt.display());
            let doc = json_out(
                &clockscope(&["dmesg", "--format", "json", txt.to_str().unwrap()]),
                &[0, 1],
                &what,
            );
            assert_valid(&v, &doc, &what);
            let bad = [
                ("an extra key", with_extra_key(&doc, "")),
                ("refined_khz as text", with(&doc, "/refined_khz", json!("2400.000 MHz"))),
                ("an unknown kind", with(&doc, "/events/0/kind", json!("sundial"))),
                ("an extra fact", with_extra_key(&doc, "/events/0/facts")),
            ];
            assert_rejects(&v, &bad);
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked}");
}

#[test]
fn clocks_matches_its_schema() {
    let doc = json_out(
        &clockscope(&["clocks", "--format", "json"]),
        &[0],
        "clocks --format json",
    );
    let v = validator("clocks.schema.json");
    assert_valid(&v, &doc, "clocks --format json");
    let clocks = doc["clocks"].as_array().unwrap();
    let working = clocks.iter().position(|c| c["works"] == true).expect("monotonic works");
    // A clock has a reason exactly when it does not work.
    for c in clocks {
        assert_eq!(c["works"] == false, c["reason"].is_string(), "{c}");
    }
    let bad = [
        (
            "avg_loop_ns as text",
            with(&doc, &format!("/clocks/{working}/avg_loop_ns"), json!("18 ns")),
        ),
        ("an extra top-level key", with_extra_key(&doc, "")),
        ("an extra key in a clock", with_extra_key(&doc, "/clocks/0")),
    ];
    assert_rejects(&v, &bad);
}

/// clockscope's TSC decision is trusted exactly when every one of its checks
/// passed (a rule between keys, asserted here rather than in the schema).
fn assert_trusted_only_when_every_check_passed(doc: &Value) {
    let decision = &doc["clockscope_decision"];
    let reasons = decision["reasons"].as_array().expect("reasons");
    assert!(!reasons.is_empty(), "{decision}");
    let all_ok = reasons.iter().all(|r| r["ok"] == true);
    assert_eq!(decision["trusted"] == true, all_ok, "{decision}");
}

/// The schema `clockscope tsc` (no dump) follows on this architecture.
fn counter_schema() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "generic-timer.schema.json"
    } else {
        "tsc.schema.json"
    }
}

#[test]
fn tsc_on_this_machine_matches_its_schema() {
    let doc = json_out(&clockscope(&["tsc", "--format", "json"]), &[0], "tsc --format json");
    let v = validator(counter_schema());
    assert_valid(&v, &doc, "tsc --format json");
    if cfg!(target_arch = "aarch64") {
        assert_rejects(
            &v,
            &[
                ("frequency_hz as text", with(&doc, "/frequency_hz", json!("24 MHz"))),
                ("an extra key", with_extra_key(&doc, "")),
            ],
        );
        return;
    }
    assert_eq!(doc["evidence_source"]["kind"], "this_machine");
    assert_trusted_only_when_every_check_passed(&doc);
    assert_rejects(
        &v,
        &[
            ("family as text", with(&doc, "/family", json!("six"))),
            (
                "an unknown source id",
                with(&doc, "/frequency_sources/0/id", json!("cpuid17")),
            ),
            ("an extra top-level key", with_extra_key(&doc, "")),
            (
                "an extra key in a decision",
                with_extra_key(&doc, "/clockscope_decision"),
            ),
            ("Evidence with an unknown variant", {
                with(&doc, "/linux/kernel_release", json!({"maybe": "6.1"}))
            }),
        ],
    );
}

#[test]
fn tsc_of_every_recorded_cpuid_dump_matches_the_schema() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../system/tests/data/cpuid");
    let mut dumps: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    dumps.sort();
    assert!(dumps.len() >= 9, "expected the recorded dumps in {}", dir.display());
    let v = validator("tsc.schema.json");
    let mut formats = std::collections::BTreeSet::new();
    for dump in &dumps {
        let what = format!("tsc --cpuid-dump {}", dump.display());
        let doc = json_out(
            &clockscope(&["tsc", "--cpuid-dump", dump.to_str().unwrap(), "--format", "json"]),
            &[0],
            &what,
        );
        assert_valid(&v, &doc, &what);
        assert_eq!(doc["evidence_source"]["kind"], "cpuid_dump", "{what}");
        assert_trusted_only_when_every_check_passed(&doc);
        assert!(doc["linux"].is_null() && doc["calibration"].is_null(), "{what}");
        formats.insert(doc["evidence_source"]["format"].as_str().unwrap().to_string());
        assert_rejects(
            &v,
            &[
                ("leaves as text", with(&doc, "/evidence_source/leaves", json!("12"))),
                ("an extra key in cpuid", with_extra_key(&doc, "/cpuid")),
            ],
        );
    }
    assert_eq!(
        formats.into_iter().collect::<Vec<_>>(),
        ["InstLatX64/AIDA64", "cpuid -r"]
    );
}

/// A fake kernel tree where files are missing or unreadable, so the
/// `{"missing": ..}` and `{"unreadable": ..}` forms of the evidence appear.
#[test]
#[cfg_attr(not(target_arch = "x86_64"), ignore = "reads x86-64 CPUID and TSC evidence")]
fn tsc_with_missing_and_unreadable_kernel_evidence_matches_the_schema() {
    let root = FakeRoot::new();
    root.write(
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
        "hpet\n",
    )
    .write("sys/devices/system/clocksource/clocksource0/available_clocksource", "")
    .write("proc/cpuinfo/is-a-directory", "");
    let doc = json_out(
        &clockscope(&[
            "tsc",
            "--root",
            root.path().to_str().unwrap(),
            "--format",
            "json",
            "--calibration-ms",
            "5",
        ]),
        &[0],
        "tsc --root <fake>",
    );
    assert_valid(&validator("tsc.schema.json"), &doc, "tsc --root <fake>");
    let linux = &doc["linux"];
    assert!(linux["kernel_release"]["missing"].is_string(), "{linux}");
    assert!(linux["tsc_flags"]["unreadable"].is_string(), "{linux}");
    assert_eq!(linux["current_clocksource"]["found"], "hpet");
    assert_eq!(linux["available_clocksources"]["found"], json!([]));
}

/// The report of a machine without CPUID (what `clockscope tsc` prints on
/// architectures other than x86-64 and aarch64), built from injected evidence.
#[test]
fn tsc_report_without_cpuid_matches_the_schema() {
    use clockscope_system::tsc::policy::KernelEvidence;
    use clockscope_system::tsc::report::{LiveEvidence, TscReport};
    let v = validator("tsc.schema.json");
    let root = FakeRoot::new();
    let no_tsc = "no TSC: not an x86-64 CPU".to_string();
    let live = LiveEvidence {
        root: root.path().display().to_string(),
        kernel: KernelEvidence::read(root.path()),
        perf_page_khz: Err(no_tsc.clone()),
        calibration: Err(no_tsc.clone()),
        postgresql_calibration: Err(no_tsc),
        time_libraries: Vec::new(),
    };
    let doc = serde_json::to_value(TscReport::build(None, Some(live), None)).unwrap();
    assert_valid(&v, &doc, "TSC report without CPUID");
    assert!(doc["vendor"].is_null() && doc["cpuid"].is_null() && doc["calibration"].is_null());
    assert!(doc["linux"]["cmdline"]["missing"].is_string(), "{}", doc["linux"]);
    assert_eq!(doc["clockscope_decision"]["trusted"], false);
    assert_trusted_only_when_every_check_passed(&doc);
    assert_rejects(
        &v,
        &[("evidence with two variants", {
            with(&doc, "/linux/cmdline", json!({"missing": "x", "unreadable": "y"}))
        })],
    );

    let doc = serde_json::to_value(TscReport::build(None, None, None)).unwrap();
    assert_valid(&v, &doc, "TSC report of injected leaves");
    assert_eq!(
        doc["evidence_source"],
        json!({"kind": "cpuid_dump", "format": "injected", "leaves": 0})
    );
}

#[test]
fn tsc_embedded_in_check_matches_its_schema() {
    let doc = json_out(
        &clockscope(&["-d", "0.01", "--clock", "monotonic", "--format", "json"]),
        &[0, 1],
        "check --format json",
    );
    assert_valid(&validator("check.schema.json"), &doc, "check --format json");
    let tsc = &doc["tsc"];
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        assert!(tsc.is_object(), "no counter report in check's JSON: {tsc}");
        assert_valid(&validator(counter_schema()), tsc, "check's tsc object");
    } else {
        assert!(tsc.is_null(), "{tsc}");
    }
}

/// An interrupted run exits 130; otherwise a problem exits 1 and anything
/// else 0; nothing measured (a note) means no pairs and no calibration.
/// (Rules between keys, asserted here rather than in the schema.)
fn assert_exit_code_follows_the_outcome(doc: &Value) {
    let expected = if doc["interrupted"] == true {
        130
    } else if doc["problem"] == true {
        1
    } else {
        0
    };
    assert_eq!(doc["exit_code"], expected, "{doc}");
    if doc["note"].is_string() {
        assert!(
            doc["pairs"].as_array().unwrap().is_empty() && doc["calibration"].is_null(),
            "{doc}"
        );
    }
}

/// Exit status 1 (a warp or offset found on a shared VM) is a valid outcome.
fn cross_cpu_json(args: &[&str], what: &str) -> Value {
    let mut all = vec!["cross-cpu"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    json_out(&clockscope(&all), &[0, 1], what)
}

#[test]
fn cross_cpu_matches_its_schema() {
    let v = validator("cross-cpu.schema.json");
    let cpus = allowed_cpus();
    let doc = cross_cpu_json(&["-d", "0.2"], "cross-cpu -d 0.2");
    assert_valid(&v, &doc, "cross-cpu -d 0.2");
    assert_exit_code_follows_the_outcome(&doc);
    if cpus.len() < 2 {
        assert!(doc["note"].is_string(), "{doc}");
        return skip!(optional: "the pair checks need 2 allowed CPUs, this process has 1");
    }
    assert!(!doc["pairs"].as_array().unwrap().is_empty(), "{doc}");
    assert_exit_code_follows_the_outcome(&doc);
    assert_rejects(
        &v,
        &[
            ("cpus as a list string", with(&doc, "/cpus", json!("0-1"))),
            ("warps negative", with(&doc, "/pairs/0/clocks/0/warps", json!(-1))),
            (
                "an unknown verdict",
                with(&doc, "/pairs/0/clocks/0/verdict", json!("fine")),
            ),
            ("an extra top-level key", with_extra_key(&doc, "")),
            ("an extra key in a result", with_extra_key(&doc, "/pairs/0/clocks/0")),
        ],
    );

    let two = format!("{},{}", cpus[0], cpus[1]);
    let doc = cross_cpu_json(&["-d", "0.1", "--cpus", &two], "cross-cpu --cpus");
    assert_valid(&v, &doc, "cross-cpu --cpus <two CPUs>");
    assert_eq!(doc["cpus"], json!([cpus[0], cpus[1]]));
    assert_eq!(doc["pairs"].as_array().unwrap().len(), 1);
}

/// `cross-cpu --plan` on a fake 2-socket, 4-die-per-socket tree (with --smt-pairs,
/// so the plan is extended) and on this machine.
#[test]
fn cross_cpu_plan_matches_its_schema() {
    let v = validator("cross-cpu-plan.schema.json");
    let root = FakeRoot::new();
    clockscope_system::linux::testing::FakeHost::new(2, 4, 4, 2).write(&root);
    let r = root.path().to_str().unwrap();
    let doc = cross_cpu_json(&["--plan", "--root", r, "--smt-pairs"], "cross-cpu --plan --root");
    assert_valid(&v, &doc, "cross-cpu --plan --root <2x4 dies> --smt-pairs");
    assert!(doc["representatives"].as_array().unwrap().len() == 2 + 8, "{doc}");
    let doc = cross_cpu_json(&["--plan"], "cross-cpu --plan");
    assert_valid(&v, &doc, "cross-cpu --plan");
    if allowed_cpus().len() < 2 {
        return skip!(optional: "a measured cross-cpu report needs 2 allowed CPUs, this process has 1");
    }
    assert_rejects(
        &v,
        &[
            ("an unknown pair kind", with(&doc, "/pairs/0/kind", json!("near"))),
            ("a test shorter than 1 ms", with(&doc, "/unit_test_ns", json!(5))),
            ("an extra top-level key", with_extra_key(&doc, "")),
        ],
    );
}

/// One allowed CPU (taskset): nothing to measure, a note, exit 0. (`--cpus`
/// refuses a single CPU, so taskset is the way to reach this output.)
#[test]
fn cross_cpu_on_one_cpu_matches_its_schema() {
    if !has_taskset() {
        return skip!("taskset not found (util-linux)");
    }
    let v = validator("cross-cpu.schema.json");
    let one = allowed_cpus()[0];
    let out = Command::new("taskset")
        .args([
            "-c",
            &one.to_string(),
            env!("CARGO_BIN_EXE_clockscope"),
            "cross-cpu",
            "--format",
            "json",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let what = "taskset -c <cpu> clockscope cross-cpu --format json";
    let doc = json_out(&out, &[0], what);
    assert_valid(&v, &doc, what);
    assert_exit_code_follows_the_outcome(&doc);
    assert_eq!(doc["allowed_cpus"], json!([one]));
    assert!(doc["note"].is_string() && doc["calibration"].is_null(), "{doc}");
    assert_eq!(doc["exit_code"], 0);
    assert_rejects(
        &v,
        &[
            ("a pair without its plan keys", {
                with(&doc, "/pairs", json!([{"cpu_a": 0, "cpu_b": 1, "clocks": []}]))
            }),
            ("note as a number", with(&doc, "/note", json!(1))),
            ("an empty allowed_cpus", with(&doc, "/allowed_cpus", json!([]))),
            ("an extra key in online_cpus", with_extra_key(&doc, "/online_cpus")),
        ],
    );
}

/// A 4-CPU Neoverse N1 (r3p1) with a device-tree timer and BogoMIPS that
/// agree with CNTFRQ_EL0: trusted, with erratum 1418040 (32-bit only) as a note.
fn neoverse_root() -> FakeRoot {
    let root = FakeRoot::new();
    let mut cpuinfo = String::new();
    for cpu in 0..4 {
        root.write(
            &format!("sys/devices/system/cpu/cpu{cpu}/regs/identification/midr_el1"),
            "0x00000000413fd0c1\n",
        );
        cpuinfo.push_str(&format!(
            "processor\t: {cpu}\nBogoMIPS\t: 48.00\nFeatures\t: fp asimd evtstrm\nCPU implementer\t: 0x41\n\
             CPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n"
        ));
    }
    root.write("proc/cpuinfo", &cpuinfo)
        .write("sys/firmware/devicetree/base/timer/compatible", "arm,armv8-timer\0")
        .write(
            "sys/firmware/devicetree/base/timer/clock-frequency",
            // 24 MHz as a big-endian u32 cell; FakeRoot writes text, so use
            // only bytes that are valid UTF-8 (0x01 0x6e 0x36 0x00).
            "\u{1}n6\0",
        );
    root
}

/// A big.LITTLE SoC with a Cortex-A73 (erratum 858921) and an ACPI GTDT.
fn big_little_root() -> FakeRoot {
    let root = FakeRoot::new();
    for (cpu, midr) in [
        (0, "0x410fd034"),
        (1, "0x410fd034"),
        (2, "0x410fd092"),
        (3, "0x410fd092"),
    ] {
        root.write(
            &format!("sys/devices/system/cpu/cpu{cpu}/regs/identification/midr_el1"),
            midr,
        );
    }
    let mut gtdt = b"GTDT\x60\0\0\0\x02\0HISI  HIP07   ".to_vec();
    gtdt.extend_from_slice(&0u32.to_le_bytes());
    gtdt.resize(96, 0);
    root.write("sys/firmware/acpi/tables/README", "");
    std::fs::write(root.path().join("sys/firmware/acpi/tables/GTDT"), gtdt).unwrap();
    root.write("sys/devices/system/cpu/cpu9/regs/identification/midr_el1", "garbage");
    root
}

#[test]
fn generic_timer_report_matches_its_schema() {
    let v = validator("generic-timer.schema.json");
    let to_json = |r: &clockscope_system::arm::GenericTimerReport| serde_json::to_value(r).unwrap();

    let n1 = neoverse_root();
    let cal = CalibrationEvidence {
        reference: "clock_gettime (CLOCK_MONOTONIC_RAW)".into(),
        calibrated_hz: 24_000_003.5,
        uncertainty_ppm: 0.8,
    };
    let report = clockscope_system::arm::gather(n1.path(), 24_000_000, Some(&cal));
    let doc = to_json(&report);
    assert_valid(&v, &doc, "Neoverse N1 report");
    assert!(report.trusted, "{:?}", report.reasons);
    assert_eq!(doc["cores"].as_array().unwrap().len(), 4);
    assert_eq!(doc["cores"][0]["midr"], "0x413fd0c1");
    assert_eq!(doc["dt_clock_frequency_hz"], 24_000_000);
    assert_eq!(doc["bogomips_hz"], 24_000_000);
    assert_eq!(doc["errata"][0]["affects_aarch64"], false);
    assert_rejects(
        &v,
        &[
            ("frequency_hz as text", with(&doc, "/frequency_hz", json!("24 MHz"))),
            ("a MIDR without 0x", with(&doc, "/cores/0/midr", json!("413fd0c1"))),
            ("an unknown id source", with(&doc, "/cores/0/source", json!("guess"))),
            ("an extra top-level key", with_extra_key(&doc, "")),
            ("an extra key in a core", with_extra_key(&doc, "/cores/0")),
        ],
    );

    // Nothing known: the nulls, and a reason.
    let empty = FakeRoot::new();
    let doc = to_json(&clockscope_system::arm::gather(empty.path(), 1_000_000, None));
    assert_valid(&v, &doc, "empty-root report");
    assert!(doc["resolution_ns"].is_number() && doc["coarse_warning"].is_string());
    assert_eq!(doc["trusted"], false, "a reason, so not trusted: {doc}");
    assert!(!doc["reasons"].as_array().unwrap().is_empty(), "{doc}");

    // Mixed cores, an AArch64 erratum, ACPI, a broken MIDR file, CNTFRQ_EL0 = 0.
    let bl = big_little_root();
    let report = clockscope_system::arm::gather(bl.path(), 0, None);
    let doc = to_json(&report);
    assert_valid(&v, &doc, "big.LITTLE report");
    assert!(!report.trusted && !report.homogeneous && report.firmware.gtdt.is_some());
    assert!(report.errata.iter().any(|e| e.affects_aarch64), "{:?}", report.errata);
    assert!(doc["resolution_ns"].is_null());
}

#[test]
#[cfg_attr(not(feature = "explain"), ignore = "built without the explain feature")]
fn explain_on_a_real_postgresql_matches_its_schema() {
    use clockscope_explain::testing::{self, SUPERUSER};
    let server = testing::shared();
    let dsn = server.socket_dsn(SUPERUSER, "postgres");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clockscope"));
    cmd.args([
        "explain", "--dsn", &dsn, "--rows", "20000", "--runs", "1", "--format", "json",
    ]);
    for var in PG_VARS {
        cmd.env_remove(var);
    }
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    let doc = json_out(&out, &[0], "explain --format json");
    let v = validator("explain.schema.json");
    assert_valid(&v, &doc, "explain --format json");
    assert_eq!(doc["rows"], 20_000);
    assert_eq!(doc["server_locality"], "unix_socket");
    // A recommendation as the footgun server gets it (the default server has none).
    let recommended = with(
        &doc,
        "/timing_settings/settings/0/recommendation",
        json!({"alter_system": "ALTER SYSTEM SET track_io_timing = off;", "then": "SELECT pg_reload_conf();",
               "needs_restart": false, "reason": "r"}),
    );
    assert_valid(&v, &recommended, "explain with a recommendation");
    assert_rejects(
        &v,
        &[
            ("rows as text", with(&doc, "/rows", json!("20000"))),
            (
                "a median as text",
                with(&doc, "/clock_sources/0/timing_on_ms", json!("1 ms")),
            ),
            ("an unknown locality", with(&doc, "/server_locality", json!("nearby"))),
            ("an extra top-level key", with_extra_key(&doc, "")),
            ("an extra key in a result", with_extra_key(&doc, "/clock_sources/0")),
            (
                "an extra key in this_machine",
                with_extra_key(&doc, "/this_machine/system"),
            ),
            ("no clock source", with(&doc, "/clock_sources", json!([]))),
            ("no version() string", with(&doc, "/server_version_full", json!(null))),
            (
                "an extra key in a judged setting",
                with_extra_key(&doc, "/timing_settings/settings/0"),
            ),
            (
                "a recommendation that is not ALTER SYSTEM",
                with(
                    &doc,
                    "/timing_settings/settings/0/recommendation",
                    json!({"alter_system": "SET track_io_timing = off", "then": null, "needs_restart": false, "reason": "r"}),
                ),
            ),
        ],
    );
}

#[test]
#[cfg_attr(not(feature = "explain"), ignore = "built without the explain feature")]
fn explain_query_on_a_real_postgresql_matches_its_schema() {
    use clockscope_explain::testing::{self, SUPERUSER};
    let server = testing::shared();
    let dsn = server.socket_dsn(SUPERUSER, "postgres");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clockscope"));
    cmd.args([
        "explain",
        "--dsn",
        &dsn,
        "--query",
        "SELECT count(*) FROM generate_series(1, 20000) g WHERE g % 3 = 0",
        "--max-time",
        "3",
        "--format",
        "json",
    ]);
    for var in PG_VARS {
        cmd.env_remove(var);
    }
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    let doc = json_out(&out, &[0], "explain --query --format json");
    let v = validator("explain.schema.json");
    assert_valid(&v, &doc, "explain --query --format json");
    assert_eq!(doc["workload"], "query");
    assert!(!doc["query_breakdown"]["nodes"].as_array().unwrap().is_empty());
    assert_rejects(
        &v,
        &[
            (
                "an unknown stop",
                with(&doc, "/clock_sources/0/noise/stopped_by", json!("bored")),
            ),
            (
                "an extra key in a node",
                with_extra_key(&doc, "/query_breakdown/nodes/0"),
            ),
            ("an extra key in noise", with_extra_key(&doc, "/clock_sources/0/noise")),
        ],
    );
}

/// Every command's JSON starts with the same four fields, and its text with
/// the same facts on the first line.
#[test]
fn every_command_stamps_its_report_with_host_time_tool_and_version() {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim_end();
    let rfc3339 = |s: &str| {
        let b = s.as_bytes();
        s.len() == 20
            && s.ends_with('Z')
            && b[4] == b'-'
            && b[7] == b'-'
            && b[10] == b'T'
            && b[13] == b':'
            && b[16] == b':'
            && s.chars().filter(char::is_ascii_digit).count() == 14
    };
    let runs: [&[&str]; 5] = [
        &["check", "-d", "0.01"],
        &["clocks"],
        &["tsc", "--calibration-ms", "20"],
        &["cross-cpu", "--plan"],
        &["sweep"],
    ];
    for args in runs {
        let mut json_args = args.to_vec();
        json_args.extend(["--format", "json"]);
        let out = clockscope(&json_args);
        let doc = json_out(&out, &[0, 1], &json_args.join(" "));
        // First in the document, in this order.
        let raw = String::from_utf8(out.stdout).unwrap();
        let keys: Vec<&str> = raw
            .lines()
            .skip(1)
            .take(4)
            .map(|l| l.trim_start().split('"').nth(1).unwrap_or(""))
            .collect();
        assert_eq!(keys, ["host", "timestamp", "tool", "schema_version"], "{args:?}: {raw}");
        assert_eq!(doc["host"], host, "{args:?}");
        assert!(
            rfc3339(doc["timestamp"].as_str().unwrap()),
            "{args:?}: {}",
            doc["timestamp"]
        );
        assert_eq!(doc["tool"], format!("clockscope {}", env!("CARGO_PKG_VERSION")));
        // check is at 2 (issue 22: the EXPLAIN prediction's keys); sweep at 3 (issue 24: its
        // read_cost_ns became check's read cost, no longer the median difference).
        let version = match args[0] {
            "check" => 2,
            "sweep" => 3,
            _ => 1,
        };
        assert_eq!(doc["schema_version"], version, "{args:?}");

        let text = clockscope(args);
        let text = String::from_utf8(text.stdout).unwrap();
        let first = text.lines().next().unwrap_or("");
        assert!(
            first.starts_with(&format!("clockscope {} on {host}, ", env!("CARGO_PKG_VERSION")))
                && rfc3339(first.rsplit(", ").next().unwrap()),
            "{args:?}: {first}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{args:?}:\n{text}");
    }
}

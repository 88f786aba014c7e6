//! The plan as text (`cross-cpu --plan`): what a run would do, without
//! measuring; its labels, tables and sentences in the report's language.

use super::table::table;
use super::text::{cpu_list, label, ms, package_label};
use crate::commands::cross_cpu::model::PlanView;
use crate::i18n::num;
use crate::report::json::serde_name;
use crate::report::stamp::Stamped;
use crate::report::text::write_line;
use crate::{t, tn};
use clockscope_system::crosscpu::plan::{PlanGroup, Representative};
use clockscope_system::crosscpu::{PairKind, Plan};
use std::io::{self, Write};

fn representatives(reps: &[Representative]) -> String {
    reps.iter()
        .map(|r| match r.die {
            None => t!("package {package}: CPU {cpu}", package = r.package, cpu = r.cpu),
            Some(d) => t!(
                "package {package} die {die}: CPU {cpu}",
                package = r.package,
                die = d,
                cpu = r.cpu
            ),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn group_rows(groups: &[PlanGroup]) -> Vec<Vec<String>> {
    groups
        .iter()
        .map(|g| {
            vec![
                package_label(g.package_a, g.package_b),
                g.pairs.to_string(),
                ms(g.time_ns),
            ]
        })
        .collect()
}

/// The plan as text (`--plan`): what a run would do, without measuring.
pub fn write_plan_text(out: &mut dyn Write, m: &Stamped<'_, PlanView<'_>>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    // Every line fitted to 100 columns (crate::report::text).
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    let (p, cpus_from) = (m.report.plan, m.report.cpus_from.as_str());
    write_plan_pairs(out, p, cpus_from)?;
    write_plan_tests(out, p)?;
    writeln!(out)?;
    write_line(out, t!("By package:"))?;
    table(
        out,
        1,
        &[t!("packages"), t!("pairs"), t!("time")],
        &group_rows(&p.groups),
    )?;
    writeln!(out)?;
    write_line(
        out,
        t!("Pairs, in test order (offsets will be CPU b's clock minus CPU a's):"),
    )?;
    let rows: Vec<Vec<String>> = p
        .pairs
        .iter()
        .map(|x| {
            vec![
                t!("CPU {a} / CPU {b}", a = x.cpu_a, b = x.cpu_b),
                package_label(x.package_a, x.package_b),
                ms(x.test_ns),
                x.kind.label().to_string(),
            ]
        })
        .collect();
    table(out, 1, &["a / b", t!("packages"), t!("each test"), t!("kind")], &rows)
}

/// Where the plan's CPUs came from (the model's English, as JSON carries
/// it) in the report's language; a wording not known here stays English.
fn cpus_from_words(cpus_from: &str) -> String {
    if cpus_from == "the CPUs allowed by sched_getaffinity" {
        return t!("the CPUs allowed by sched_getaffinity").to_string();
    }
    match cpus_from
        .strip_prefix("the online CPUs under ")
        .and_then(|r| r.strip_suffix(" (--root)"))
    {
        Some(root) => t!("the online CPUs under {root} (--root)", root = root),
        None => cpus_from.to_string(),
    }
}

/// The plan's CPUs, topology, pairs and representatives.
fn write_plan_pairs(out: &mut dyn Write, p: &Plan, cpus_from: &str) -> std::io::Result<()> {
    writeln_escaped!(
        out,
        "{}{} ({})",
        label(t!("CPUs planned")),
        cpu_list(&p.cpus),
        cpus_from_words(cpus_from)
    )?;
    let topology = p.topology.as_deref().map_or(t!("not read").to_string(), |t| {
        format!("{t} (sys/devices/system/cpu/cpu*/topology)")
    });
    writeln_escaped!(out, "{}{topology}", label(t!("Topology")))?;
    for n in &p.topology_notes {
        writeln_escaped!(out, "{}{n}", label(t!("Topology note")))?;
    }
    let kinds: Vec<String> = p
        .kind_counts()
        .iter()
        .map(|(k, n)| format!("{n} {}", k.label()))
        .collect();
    let smt = match (p.mode, p.smt_pairs) {
        (clockscope_system::crosscpu::PairMode::Topology, false) => {
            t!("; SMT siblings not paired (--smt-pairs pairs them)")
        }
        (clockscope_system::crosscpu::PairMode::Topology, true) => t!("; SMT siblings paired (--smt-pairs)"),
        _ => "",
    };
    let pairs = tn!(
        "{mode}: {n} pair{kinds}{smt}",
        "{mode}: {n} pairs{kinds}{smt}",
        p.pairs.len(),
        mode = serde_name(&p.mode),
        n = p.pairs.len(),
        kinds = if kinds.is_empty() {
            String::new()
        } else {
            format!(" ({})", kinds.join(", "))
        },
        smt = smt
    );
    writeln_escaped!(out, "{}{pairs}", label(t!("Pairs")))?;
    if !p.representatives.is_empty() {
        writeln_escaped!(
            out,
            "{}{}",
            label(t!("Representatives")),
            representatives(&p.representatives)
        )?;
    }
    Ok(())
}

/// The plan's tests, their expected time, and the CPUs left unpaired.
fn write_plan_tests(out: &mut dyn Write, p: &Plan) -> std::io::Result<()> {
    let tests = tn!(
        "{n} clock x 2 tests (warp, ping-pong) per pair; each test {each} x weight ({package} across packages, \
         {die} across dies, 1 otherwise), and each warp test runs on until it has seen {handovers} handovers each way",
        "{n} clocks x 2 tests (warp, ping-pong) per pair; each test {each} x weight ({package} across packages, \
         {die} across dies, 1 otherwise), and each warp test runs on until it has seen {handovers} handovers each way",
        p.clocks,
        n = p.clocks,
        each = ms(p.unit_test_ns),
        package = PairKind::CrossPackage.weight(),
        die = PairKind::CrossDie.weight(),
        handovers = p.min_handovers
    );
    writeln_escaped!(out, "{}{tests}", label(t!("Tests")))?;
    let expected = t!(
        "{expected} s (-d {budget} s, --max-time {max} s; each test at least {least})",
        expected = num(p.expected_ns as f64 / 1e9, 3),
        budget = num(p.budget_ns as f64 / 1e9, 3),
        max = num(p.max_time_ns as f64 / 1e9, 3),
        least = ms(clockscope_system::crosscpu::MIN_TEST_NS)
    );
    writeln_escaped!(out, "{}{expected}", label(t!("Expected time")))?;
    if let Some(why) = &p.extended {
        writeln_escaped!(out, "{}-d {why}", label(t!("Note")))?;
    }
    for u in &p.uncovered {
        let line = t!("CPU {cpu}: {reason}", cpu = u.cpu, reason = u.reason);
        writeln_escaped!(out, "{}{line}", label(t!("Not paired")))?;
    }
    Ok(())
}

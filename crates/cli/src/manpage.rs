//! The man pages of `clockscope`: clap_mangen renders NAME, SYNOPSIS,
//! DESCRIPTION, OPTIONS and SUBCOMMANDS from the clap definition ([`Cli`]);
//! this module adds what clap does not know: EXIT STATUS, ENVIRONMENT,
//! EXAMPLES and SEE ALSO, per page. Every page a page refers to is generated
//! (`clockscope man` and `clockscope man <subcommand>` for each name in
//! [`page_names`]); the tests check it.

use crate::cli::Cli;
use clap::CommandFactory;

/// The exit codes every command shares (crate::exit).
const EXIT_CODES: &[(&str, &str)] = &[
    ("0", "Measured; nothing wrong was found."),
    (
        "1",
        "A problem was found in what was measured: time went backwards, a bad verdict, a warp between CPUs.",
    ),
    (
        "2",
        "Usage or runtime error: a bad argument, an unreadable file, no server; one line on stderr.",
    ),
    (
        "130",
        "Interrupted by Ctrl-C or SIGTERM; what was measured so far is still printed.",
    ),
];

/// Variables every measuring command reads.
const ENV_COMMON: &[(&str, &str)] = &[
    (
        "TERM",
        "The progress bar on stderr is drawn only when stderr is a terminal and TERM is set and not dumb.",
    ),
    (
        "NO_COLOR",
        "When set to a non-empty value, no progress bar is drawn (https://no-color.org).",
    ),
    (
        "LD_PRELOAD",
        "Read (never changed) to report a time library interposed on the clock, such as libfaketime.",
    ),
    (
        "CLOCKSCOPE_TRACE_STARTUP",
        "When set, prints on stderr the time from main to the first measurement.",
    ),
];

/// libpq's variables, read by `explain` (and `sweep --dsn`) when --dsn does not name a setting.
const ENV_EXPLAIN: &[(&str, &str)] = &[
    (
        "PGHOST, PGHOSTADDR, PGPORT",
        "The server to connect to (default: the local unix socket, port 5432).",
    ),
    ("PGUSER, PGDATABASE", "The role and database."),
    ("PGPASSWORD", "The password (a ~/.pgpass-style file is not read)."),
    ("PGOPTIONS", "Options sent to the server at connection start."),
    ("PGSERVICE", "A service name in the pg_service.conf file."),
];

/// The subcommands that have a page of their own, `clockscope-<name>(1)`:
/// every subcommand clap knows but the generated `help`.
pub fn page_names() -> Vec<String> {
    let mut top = Cli::command().disable_help_subcommand(true);
    top.build();
    top.get_subcommands().map(|c| c.get_name().to_string()).collect()
}

/// Each page's EXAMPLES (`None`: the top page): command line, what it does.
type PageExamples = (Option<&'static str>, &'static [(&'static str, &'static str)]);

/// Every page's EXAMPLES, by page.
const EXAMPLES: &[PageExamples] = &[
    (
        None,
        &[
            (
                "clockscope",
                "Measure the clocks that matter here and print a verdict (the same as clockscope check).",
            ),
            (
                "clockscope tsc",
                "The TSC: CPUID and kernel evidence, its frequency from every source, trust.",
            ),
            (
                "clockscope man sweep | man -l -",
                "Read this page's sibling for sweep without installing it.",
            ),
        ],
    ),
    (
        Some("check"),
        &[
            (
                "clockscope check",
                "Every clock that matters here, within one second each, then one screen: the clocks, the verdict and the \
                 recommendation for this host.",
            ),
            (
                "clockscope check -v",
                "The same with every check, rule and explanation (the full report).",
            ),
            (
                "clockscope check --all -d 0.5",
                "Every clock that works here, half a second each.",
            ),
            (
                "clockscope check --clock rdtscp --clock monotonic",
                "Only these two clocks.",
            ),
            (
                "clockscope check -d 0.2 --format prometheus -o /var/lib/prometheus/node-exporter/clockscope.prom",
                "Metrics for node_exporter's textfile collector, replacing the file atomically.",
            ),
            (
                "clockscope check --plot clocks.svg",
                "Also draw the read-time distributions.",
            ),
        ],
    ),
    (
        Some("clocks"),
        &[
            (
                "clockscope clocks",
                "Every clock source, whether it works here, its resolution.",
            ),
            (
                "clockscope clocks --format json -o clocks.json",
                "The same as JSON (docs/schema/clocks.schema.json), written atomically to clocks.json.",
            ),
        ],
    ),
    (
        Some("tsc"),
        &[
            (
                "clockscope tsc",
                "This machine's TSC or ARM generic timer, on one screen.",
            ),
            (
                "clockscope tsc --verbose",
                "Every CPUID flag, frequency source, kernel message and check.",
            ),
            (
                "clockscope tsc --print-cpuid > host.cpuid",
                "Record this CPU's CPUID leaves.",
            ),
            (
                "clockscope tsc --cpuid-dump host.cpuid",
                "Analyse a recorded dump, from this machine or another.",
            ),
            (
                "clockscope tsc --drift 2m",
                "Also measure the counter against the NTP-disciplined clock for two minutes.",
            ),
            (
                "clockscope tsc --root /tmp/bundle --calibration-ms 50ms -o tsc.txt",
                "Read /sys and /proc from a support bundle; write the report to tsc.txt.",
            ),
        ],
    ),
    (
        Some("cross-cpu"),
        &[
            (
                "clockscope cross-cpu",
                "Warp test and offsets for the topology's CPU pairs: the answer and the problem pairs.",
            ),
            (
                "clockscope cross-cpu -v",
                "The same with every pair's table and the column legend.",
            ),
            (
                "clockscope cross-cpu --pairs all --plan",
                "List every pair that would be measured, without measuring.",
            ),
            (
                "clockscope cross-cpu --cpus 0-3 -d 500ms",
                "Only CPUs 0 to 3, half a second shared by their pairs.",
            ),
            (
                "clockscope cross-cpu --plan --root /tmp/bundle --max-time 2m",
                "Plan for another machine's topology (/tmp/bundle/sys), within two minutes.",
            ),
        ],
    ),
    (
        Some("dmesg"),
        &[
            (
                "clockscope dmesg",
                "Explain this machine's kernel log (/dev/kmsg): TSC and clocksource events, what they mean.",
            ),
            (
                "clockscope dmesg kern.log",
                "Explain a saved log (dmesg, dmesg -T, journalctl -k, syslog, /dev/kmsg records).",
            ),
            (
                "clockscope dmesg - < ticket.txt",
                "Explain a log pasted into a ticket, from stdin.",
            ),
            (
                "clockscope dmesg --format json incident.log",
                "The same as JSON for scripts (docs/schema/dmesg.schema.json).",
            ),
            ("clockscope dmesg -v incident.log", "Every event with its meaning."),
        ],
    ),
    (
        Some("explain"),
        &[
            (
                "clockscope explain",
                "EXPLAIN ANALYZE's timing overhead on the server PGHOST/PGPORT name, on one screen.",
            ),
            (
                "clockscope explain --verbose",
                "The same with the runs, the model's every number and each timing setting priced.",
            ),
            (
                "clockscope explain --dsn 'host=/var/run/postgresql dbname=postgres'",
                "A server by conninfo.",
            ),
            (
                "clockscope explain --rows 100000 --runs 10",
                "A smaller TEMP table, more pairs of runs.",
            ),
            (
                "clockscope explain --max-time 90s --format json -o explain.json",
                "At most 90 seconds in all; the JSON report written atomically to explain.json.",
            ),
        ],
    ),
    (
        Some("sweep"),
        &[
            (
                "clockscope sweep",
                "List the clocksources and what --apply would do; changes nothing.",
            ),
            (
                "sudo clockscope sweep --apply -d 0.5",
                "Measure the system clock under each clocksource in turn, then restore the original.",
            ),
            (
                "sudo clockscope sweep --apply --verbose",
                "The same with the sysfs directory and what each column means.",
            ),
            (
                "sudo clockscope sweep --apply --dsn 'host=/var/run/postgresql dbname=postgres'",
                "Also EXPLAIN ANALYZE's real overhead per row on this machine's PostgreSQL under each clocksource \
                 (the documentation's experiment), and the recommendation made on it.",
            ),
            (
                "clockscope sweep --root /tmp/fake --format json -o sweep.json",
                "Read a copied sysfs tree (/tmp/fake/sys) instead of /sys; write the report to sweep.json.",
            ),
        ],
    ),
    (
        Some("completions"),
        &[
            (
                "clockscope completions bash > ~/.local/share/bash-completion/completions/clockscope",
                "Install the bash completion for this user.",
            ),
            (
                "clockscope completions zsh > ~/.zfunc/_clockscope",
                "The zsh completion.",
            ),
        ],
    ),
    (
        Some("man"),
        &[
            ("clockscope man | man -l -", "Read the top page."),
            ("clockscope man tsc > clockscope-tsc.1", "Write the page of tsc."),
        ],
    ),
];

/// The EXAMPLES of one page (`None`: the top page): command line, what it does.
fn examples(page: Option<&str>) -> &'static [(&'static str, &'static str)] {
    EXAMPLES.iter().find(|(p, _)| *p == page).map_or(&[], |(_, e)| e)
}

/// What the exit codes mean on one page, beyond [`EXIT_CODES`].
fn exit_note(page: Option<&str>) -> Option<&'static str> {
    match page {
        Some("clocks" | "completions" | "man") => Some("This command never finds a problem: it exits 0 or 2."),
        Some("check") => Some(
            "Exit 1 exactly when the report lists a problem, something to act on (the default screen's `problem` \
             lines; clockscope_problems > 0): time went backwards, the system clock fails PostgreSQL's rule, every \
             read is a syscall, time changed on its way to clockscope, NTP not synchronised. A noisy measurement \
             alone is not one.",
        ),
        Some("sweep") => Some(
            "Exit 1 when someone else changed the clocksource during the sweep (it is then not put back over \
             their change).",
        ),
        Some("dmesg") => Some(
            "Exit 1 when the log shows something to act on: it ends on a clocksource that costs a system call \
             per read (hpet, acpi_pm, xen, ...), or the kernel marked the TSC unstable and no fast clocksource \
             follows (a Hyper-V guest on the TSC page exits 0); 2 when the log cannot be read (a missing file, \
             a FIFO, socket or device named as FILE, more than 8 MiB) or holds no kernel line at all.",
        ),
        Some("explain") => Some(
            "What the server measured is reported, not judged: 0, 2 (also when the server cannot be reached) or 130.",
        ),
        _ => None,
    }
}

fn escape(text: &str) -> String {
    // roff: a backslash starts an escape and a leading dot or quote a request;
    // minus signs are written \- so they copy as ASCII hyphens.
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

fn tagged(roff: &mut String, tag: &str, body: &str) {
    roff.push_str(&format!(".TP\n.B {}\n{}\n", escape(tag), escape(body)));
}

/// EXIT STATUS, ENVIRONMENT, EXAMPLES and SEE ALSO for one page.
fn extra_sections(page: Option<&str>, pages: &[String]) -> String {
    let mut roff = String::from(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in EXIT_CODES {
        tagged(&mut roff, code, meaning);
    }
    if let Some(note) = exit_note(page) {
        roff.push_str(&format!(".PP\n{}\n", escape(note)));
    }
    roff.push_str(".SH ENVIRONMENT\n");
    let env: Vec<_> = match page {
        Some("completions" | "man" | "dmesg") => Vec::new(),
        Some("explain" | "sweep") => ENV_COMMON.iter().chain(ENV_EXPLAIN).collect(),
        _ => ENV_COMMON.iter().collect(),
    };
    if env.is_empty() {
        roff.push_str("No environment variable changes what this command prints.\n");
    }
    for (name, meaning) in env {
        tagged(&mut roff, name, meaning);
    }
    roff.push_str(".SH EXAMPLES\n");
    for (command, meaning) in examples(page) {
        roff.push_str(&format!(
            ".PP\n{}\n.RS 4\n.nf\n{}\n.fi\n.RE\n",
            escape(meaning),
            escape(command)
        ));
    }
    roff.push_str(".SH \"SEE ALSO\"\n");
    let others = pages.iter().filter(|p| page != Some(p.as_str()));
    let refs: Vec<String> = page
        .map(|_| "clockscope".to_string())
        .into_iter()
        .chain(others.map(|p| format!("clockscope-{p}")))
        .map(|r| format!(".BR {} (1)", escape(&r)))
        .collect();
    roff.push_str(&format!("{}\n", refs.join(",\n")));
    roff.push_str(".PP\nThe guide: docs/README.md in the source tree.\n");
    roff
}

/// A part rendered on its own, without the two lines roff puts first in
/// every output (the definition of `\*(Aq`), which the page has once.
fn without_preamble(part: &[u8]) -> &[u8] {
    const PREAMBLE: &[u8] = b".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";
    part.strip_prefix(PREAMBLE).unwrap_or(part)
}

/// The man page of `clockscope`, or of one of its subcommands (named
/// `clockscope-<sub>`, as man pages of subcommands are).
pub fn man_page(subcommand: Option<&str>) -> Result<Vec<u8>, String> {
    let pages = page_names();
    // The generated `help` subcommand has no page: leave it out of SUBCOMMANDS,
    // as clap_mangen's own generate_to does.
    let top = Cli::command().disable_help_subcommand(true);
    let cmd = match subcommand {
        None => top,
        Some(name) => {
            let sub = top
                .find_subcommand(name)
                .filter(|_| pages.iter().any(|p| p == name))
                .cloned()
                .ok_or_else(|| format!("man: unknown subcommand '{name}' (valid: {})", pages.join(", ")))?;
            let synopsis = format!("clockscope {}", sub.get_name());
            sub.clone()
                .name(format!("clockscope-{}", sub.get_name()))
                .bin_name(synopsis)
        }
    };
    let has_version = cmd.get_version().is_some() || cmd.get_long_version().is_some();
    let man = clap_mangen::Man::new(cmd);
    type Render = fn(&clap_mangen::Man, &mut dyn std::io::Write) -> std::io::Result<()>;
    let mut parts: Vec<Render> = vec![
        clap_mangen::Man::render_title,
        clap_mangen::Man::render_name_section,
        clap_mangen::Man::render_synopsis_section,
        clap_mangen::Man::render_description_section,
        clap_mangen::Man::render_options_section,
    ];
    if subcommand.is_none() {
        parts.push(clap_mangen::Man::render_subcommands_section);
    }
    let mut out = Vec::new();
    for (i, render) in parts.iter().enumerate() {
        let mut part = Vec::new();
        render(&man, &mut part).map_err(|e| e.to_string())?;
        out.extend_from_slice(if i == 0 { &part } else { without_preamble(&part) });
    }
    out.extend_from_slice(extra_sections(subcommand, &pages).as_bytes());
    if has_version {
        let mut part = Vec::new();
        man.render_version_section(&mut part).map_err(|e| e.to_string())?;
        out.extend_from_slice(without_preamble(&part));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(sub: Option<&str>) -> String {
        String::from_utf8(man_page(sub).unwrap()).unwrap()
    }

    /// Every `name(1)` a page names, whether as `.BR name (1)` or inline text
    /// (clap_mangen's SUBCOMMANDS list writes `clockscope\-tsc(1)`).
    fn references(page: &str) -> Vec<String> {
        let mut refs = Vec::new();
        for line in page.lines() {
            if let Some(rest) = line.strip_prefix(".BR ") {
                if let Some((name, sect)) = rest.split_once(' ') {
                    if sect.starts_with("(1)") {
                        refs.push(name.replace("\\-", "-"));
                    }
                }
            }
            let plain = line.replace("\\-", "-");
            let mut from = 0;
            while let Some(i) = plain[from..].find("clockscope-") {
                let start = from + i;
                let end = plain[start..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .map_or(plain.len(), |e| start + e);
                if plain[end..].starts_with("(1)") {
                    refs.push(plain[start..end].to_string());
                }
                from = end;
            }
        }
        refs
    }

    #[test]
    #[cfg_attr(not(feature = "explain"), ignore = "built without the explain feature")]
    fn every_subcommand_has_a_page_with_the_sections() {
        let pages = page_names();
        for expected in [
            "check",
            "clocks",
            "tsc",
            "cross-cpu",
            "dmesg",
            "explain",
            "sweep",
            "completions",
            "man",
        ] {
            assert!(pages.iter().any(|p| p == expected), "{expected} missing from {pages:?}");
        }
        assert!(!pages.iter().any(|p| p == "help"), "{pages:?}");
        let mut all = vec![(None, page(None))];
        all.extend(pages.iter().map(|p| (Some(p.as_str()), page(Some(p)))));
        for (name, text) in &all {
            let title = name.map_or("\n.TH clockscope ".to_string(), |n| format!("\n.TH clockscope-{n} "));
            assert!(text.contains(&title), "{name:?}: {}", &text[..120.min(text.len())]);
            assert_eq!(text.matches(".ds Aq").count(), 2, "{name:?}: one preamble");
            for section in [
                ".SH \"EXIT STATUS\"",
                ".SH ENVIRONMENT",
                ".SH EXAMPLES",
                ".SH \"SEE ALSO\"",
            ] {
                assert!(text.contains(section), "{name:?} lacks {section}");
            }
            assert!(!examples(*name).is_empty(), "{name:?} has no example");
        }
    }

    #[test]
    fn every_reference_names_a_generated_page() {
        let pages = page_names();
        let known: Vec<String> = std::iter::once("clockscope".to_string())
            .chain(pages.iter().map(|p| format!("clockscope-{p}")))
            .collect();
        let mut checked = 0;
        for sub in std::iter::once(None).chain(pages.iter().map(|p| Some(p.as_str()))) {
            for r in references(&page(sub)) {
                assert!(known.contains(&r), "{sub:?} refers to {r}(1), which is not generated");
                checked += 1;
            }
        }
        assert!(
            checked > pages.len(),
            "too few references found ({checked}): the scan is broken"
        );
        assert_eq!(
            references(".BR clockscope\\-help (1)\nsee clockscope\\-nope(1)."),
            ["clockscope-help", "clockscope-nope"]
        );
    }

    #[test]
    fn examples_use_real_options() {
        use clap::Parser;
        let pages = page_names();
        let subs = std::iter::once(None).chain(pages.iter().map(|p| Some(p.as_str())));
        let mut parsed = 0;
        for (line, _) in subs.flat_map(examples) {
            if line.contains('\'') {
                continue; // a quoted argument: split by a shell, not by whitespace
            }
            // The shell's parts (`sudo`, `| man -l -`, `> file`, `< file`) cut.
            let words: Vec<&str> = line
                .split_whitespace()
                .skip_while(|w| *w == "sudo")
                .take_while(|w| !matches!(*w, "|" | ">" | "<"))
                .collect();
            if let Err(e) = Cli::try_parse_from(&words) {
                panic!("example `{line}` does not parse: {e}");
            }
            parsed += 1;
        }
        assert!(parsed > 20, "{parsed}");
    }

    #[test]
    fn unknown_page() {
        assert!(man_page(Some("nope"))
            .unwrap_err()
            .contains("unknown subcommand 'nope'"));
        assert!(man_page(Some("help")).is_err());
        let tsc = page(Some("tsc"));
        assert!(tsc.contains("cpuid\\-dump"), "{tsc}");
    }
}

//! What the packages ship beside the binaries, checked on the real binary:
//! a man page for every subcommand (the list scripts/package.sh installs is
//! the CLI's), and shell completions that offer clock names for `--clock`,
//! formats for `--format` and the pages for `clockscope man`.

use crate::common;

use common::clockscope;

fn stdout_of(args: &[&str]) -> String {
    let out = clockscope(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands with a page: `man`'s own error names them.
fn pages() -> Vec<String> {
    let out = clockscope(&["man", "no-such-page"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    let list = err
        .split("(valid: ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .expect("valid list");
    list.split(", ").map(str::to_string).collect()
}

#[test]
fn package_script_installs_every_page() {
    let script = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/package.sh")).unwrap();
    let line = script
        .lines()
        .find(|l| l.starts_with("for sub in ") && l.contains("man"))
        .expect("the man page loop of scripts/package.sh");
    let listed: Vec<&str> = line
        .trim_start_matches("for sub in ")
        .trim_end_matches("; do")
        .split(' ')
        .collect();
    let mut expected = pages();
    if !expected.iter().any(|p| p == "explain") {
        expected.push("explain".into()); // built without the feature; the package has it
    }
    let mut listed_sorted: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
    listed_sorted.sort();
    expected.sort();
    assert_eq!(listed_sorted, expected, "scripts/package.sh: {line}");
}

#[test]
fn every_page_renders_with_its_sections() {
    for page in std::iter::once(None).chain(pages().iter().map(|p| Some(p.clone()))) {
        let mut args = vec!["man"];
        if let Some(p) = &page {
            args.push(p);
        }
        let text = stdout_of(&args);
        for section in [
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH EXAMPLES",
            ".SH \"SEE ALSO\"",
        ] {
            assert!(text.contains(section), "{page:?} lacks {section}");
        }
        assert!(
            !text.contains("clockscope\\-help"),
            "{page:?} names clockscope-help, which has no page"
        );
    }
}

/// The bash completion's `case` branch of one subcommand (`clockscope__check)`).
fn bash_branch<'a>(script: &'a str, name: &str) -> &'a str {
    let start = script
        .find(&format!("{name})"))
        .unwrap_or_else(|| panic!("no branch {name}"));
    let rest = &script[start..];
    &rest[..rest.find(";;\n        clockscope").unwrap_or(rest.len())]
}

#[test]
fn bash_completes_clock_names_formats_and_man_topics() {
    let script = stdout_of(&["completions", "bash"]);
    let check = bash_branch(&script, "clockscope__subcmd__check");
    let clock_case = &check[check.find("--clock)").expect("--clock case")..];
    let clock_case = &clock_case[..clock_case.find(";;").unwrap()];
    for name in ["monotonic", "monotonic_raw", "realtime", "gettimeofday", "rdtscp"] {
        assert!(
            clock_case.contains(name),
            "--clock does not complete {name}: {clock_case}"
        );
    }
    assert!(
        !clock_case.contains("compgen -f"),
        "--clock completes file names: {clock_case}"
    );
    let format_case = &check[check.find("--format)").expect("--format case")..];
    let format_case = &format_case[..format_case.find(";;").unwrap()];
    for f in ["text", "json", "prometheus"] {
        assert!(format_case.contains(f), "--format does not complete {f}: {format_case}");
    }
    let man = bash_branch(&script, "clockscope__subcmd__man");
    for topic in ["check", "tsc", "sweep", "cross-cpu"] {
        assert!(man.contains(topic), "`clockscope man` does not complete {topic}: {man}");
    }
}

#[test]
fn zsh_and_fish_complete_clock_names() {
    for (shell, marker) in [("zsh", "--clock=["), ("fish", "-l clock ")] {
        let script = stdout_of(&["completions", shell]);
        let at = script.find(marker).unwrap_or_else(|| panic!("{shell}: no {marker}"));
        // The values follow the option, one per line in fish.
        let after: String = script[at..].chars().take(600).collect();
        for name in ["monotonic_raw", "gettimeofday"] {
            assert!(after.contains(name), "{shell}: --clock does not offer {name}: {after}");
        }
    }
}

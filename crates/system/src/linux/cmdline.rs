//! `/proc/cmdline`: the boot options that change how the kernel treats the
//! TSC (`tsc=`, `clocksource=`, `notsc`).

use serde::Serialize;

/// The clock-related kernel parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct KernelCmdline {
    /// Every `tsc=` value in order (`reliable`, `unstable`, `nowatchdog`,
    /// `noirqtime`, `recalibrate`, `watchdog`, ...).
    pub tsc: Vec<String>,
    /// `clocksource=` (the last one wins, as in the kernel).
    pub clocksource: Option<String>,
    /// `tsc=reliable`: the kernel skips the TSC watchdog and sync checks.
    pub tsc_reliable: bool,
    /// `tsc=unstable`: the kernel marks the TSC unstable at boot.
    pub tsc_unstable: bool,
    /// `tsc=nowatchdog`: no clocksource watchdog for the TSC.
    pub tsc_nowatchdog: bool,
    /// `notsc`: the kernel does not use the TSC at all.
    pub notsc: bool,
    /// The whole command line.
    pub raw: String,
}

impl KernelCmdline {
    /// Parses a kernel command line. Words after a lone `--` belong to init
    /// and are ignored; double quotes group a value with spaces, as the
    /// kernel's own parser does.
    pub fn parse(text: &str) -> KernelCmdline {
        let raw = text.trim().to_string();
        let mut out = KernelCmdline {
            raw: raw.clone(),
            ..KernelCmdline::default()
        };
        for word in split_words(&raw) {
            if word == "--" {
                break;
            }
            let (key, value) = match word.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (word.as_str(), None),
            };
            match (key, value) {
                ("tsc", Some(v)) => {
                    match v {
                        "reliable" => out.tsc_reliable = true,
                        "unstable" => out.tsc_unstable = true,
                        "nowatchdog" => out.tsc_nowatchdog = true,
                        _ => {}
                    }
                    out.tsc.push(v.to_string());
                }
                ("clocksource", Some(v)) => out.clocksource = Some(v.to_string()),
                ("notsc", None) => out.notsc = true,
                _ => {}
            }
        }
        out
    }
}

/// Splits on whitespace, keeping "double quoted" runs together and dropping
/// the quotes.
fn split_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_quotes = false;
    let mut started = false;
    for ch in s.chars() {
        match ch {
            '"' => {
                in_quotes = !in_quotes;
                started = true;
            }
            c if c.is_whitespace() && !in_quotes => {
                if started {
                    words.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            c => {
                cur.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(cur);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tsc_and_clocksource() {
        let c = KernelCmdline::parse(
            "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro tsc=reliable tsc=nowatchdog clocksource=hpet quiet\n",
        );
        assert_eq!(c.tsc, ["reliable", "nowatchdog"]);
        assert!(c.tsc_reliable && c.tsc_nowatchdog && !c.tsc_unstable && !c.notsc);
        assert_eq!(c.clocksource.as_deref(), Some("hpet"));
    }

    #[test]
    fn last_clocksource_wins_and_init_args_are_ignored() {
        let c = KernelCmdline::parse("clocksource=tsc clocksource=kvm-clock notsc -- tsc=unstable clocksource=acpi_pm");
        assert_eq!(c.clocksource.as_deref(), Some("kvm-clock"));
        assert!(c.notsc);
        assert!(c.tsc.is_empty() && !c.tsc_unstable);
    }

    #[test]
    fn quotes_group_words() {
        let c = KernelCmdline::parse("dyndbg=\"file tsc.c +p\" tsc=unstable");
        assert_eq!(c.tsc, ["unstable"]);
        assert!(c.tsc_unstable);
        assert_eq!(split_words("a=\"b c\" d"), ["a=b c", "d"]);
    }

    #[test]
    fn empty_command_line() {
        assert_eq!(KernelCmdline::parse(""), KernelCmdline::default());
    }
}

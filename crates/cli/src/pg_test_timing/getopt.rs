//! glibc's `getopt_long`, as pg_test_timing calls it: short options that all
//! take an argument (`"d:c:"`), their long names, and glibc's own messages.
//!
//! What glibc does and this reproduces: options may follow operands (glibc
//! permutes them to the end), unless `POSIXLY_CORRECT` is set, which stops at
//! the first operand; `--` ends the options; `-d5` and `-d 5`; `--duration=5`
//! and `--duration 5`; a long name may be abbreviated to any unique prefix,
//! an exact name wins, and an empty name (`--=5`) prefixes every option and
//! is ambiguous; the value of an option is the next argument whatever it
//! looks like (`-d -5`). Messages name `argv[0]` as given.
//!
//! Written by hand because the C function keeps global state and prints its
//! messages itself, and clap has neither glibc's permutation nor its messages.

/// A long option: its name and the short option it stands for.
#[derive(Clone, Copy, Debug)]
pub struct LongOption {
    pub name: &'static [u8],
    pub short: u8,
}

/// How operands are handled: glibc's default, or `POSIXLY_CORRECT`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ordering {
    /// Operands are set aside and options after them still parsed.
    Permute,
    /// The first operand ends the options (`POSIXLY_CORRECT` set).
    RequireOrder,
}

impl Ordering {
    /// glibc's choice for an option string without a `+`/`-` prefix:
    /// [`Ordering::RequireOrder`] when `POSIXLY_CORRECT` is set at all.
    pub fn from_env() -> Ordering {
        if std::env::var_os("POSIXLY_CORRECT").is_some() {
            Ordering::RequireOrder
        } else {
            Ordering::Permute
        }
    }
}

/// One step of the parse.
#[derive(Clone, Debug, PartialEq)]
pub enum Item<'a> {
    /// An option (by its short letter) and its value.
    Option(u8, &'a [u8]),
    /// glibc's message for a bad option, one line with its newline; the
    /// caller prints it and stops (getopt_long returned `'?'`).
    Error(Vec<u8>),
}

/// glibc's message for the last error, as its `fprintf(stderr, _(msgid), ...)`
/// call makes it: the msgid of glibc's `libc` catalog, its arguments, and
/// what glibc prints after it untranslated (the ambiguous option's list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GetoptMessage {
    /// glibc 2.26+'s msgid.
    pub msgid: &'static str,
    /// Its `%s`/`%c` arguments (`argv[0]` first).
    pub args: Vec<Vec<u8>>,
    /// Printed after it, untranslated (`" '--cutoff' '--duration'\n"`).
    pub tail: Vec<u8>,
}

/// The parser: iterate for the options, then [`GetoptLong::operands`].
pub struct GetoptLong<'a> {
    args: &'a [&'a [u8]],
    shorts: &'a [u8],
    longs: &'a [LongOption],
    ordering: Ordering,
    next: usize,
    operands: Vec<&'a [u8]>,
    done: bool,
    last_error: Option<GetoptMessage>,
}

impl<'a> GetoptLong<'a> {
    /// `args` is the whole argv, `argv[0]` included; every option in
    /// `shorts` and `longs` requires an argument.
    pub fn new(args: &'a [&'a [u8]], shorts: &'a [u8], longs: &'a [LongOption], ordering: Ordering) -> Self {
        GetoptLong {
            args,
            shorts,
            longs,
            ordering,
            next: 1,
            operands: Vec::new(),
            done: false,
            last_error: None,
        }
    }

    /// The operands, in order, once the iteration has ended (what
    /// `argv[optind..]` holds after getopt_long returned -1).
    pub fn operands(&self) -> &[&'a [u8]] {
        &self.operands
    }

    fn argv0(&self) -> &'a [u8] {
        self.args.first().copied().unwrap_or(b"")
    }

    /// The message of the last [`Item::Error`], for translation.
    pub fn last_error(&self) -> Option<&GetoptMessage> {
        self.last_error.as_ref()
    }

    /// `msgid` with the program name and then `args` as its arguments.
    fn message(&self, msgid: &'static str, args: &[&[u8]]) -> GetoptMessage {
        GetoptMessage {
            msgid,
            args: [self.argv0()].iter().chain(args).map(|a| a.to_vec()).collect(),
            tail: Vec::new(),
        }
    }

    fn error(&mut self, parts: &[&[u8]], message: GetoptMessage) -> Item<'a> {
        self.done = true;
        let mut line = parts.concat();
        line.push(b'\n');
        self.last_error = Some(message);
        Item::Error(line)
    }

    /// The value of an option whose name ended its argument: the next argument.
    fn next_arg(&mut self) -> Option<&'a [u8]> {
        let value = self.args.get(self.next).copied()?;
        self.next += 1;
        Some(value)
    }

    fn long(&mut self, arg: &'a [u8], body: &'a [u8]) -> Item<'a> {
        let (name, inline) = match body.iter().position(|&b| b == b'=') {
            Some(p) => (&body[..p], Some(&body[p + 1..])),
            None => (body, None),
        };
        let prefixed: Vec<&LongOption> = self.longs.iter().filter(|o| o.name.starts_with(name)).collect();
        let exact = self.longs.iter().find(|o| o.name == name);
        let found = exact.or(match prefixed.as_slice() {
            [one] => Some(*one),
            _ => None,
        });
        let Some(&LongOption { name: full, short }) = found else {
            if prefixed.len() > 1 {
                let mut parts: Vec<&[u8]> = vec![self.argv0(), b": option '", arg, b"' is ambiguous; possibilities:"];
                let mut tail = Vec::new();
                for o in &prefixed {
                    parts.extend([b" '--".as_slice(), o.name, b"'"]);
                    tail.extend([b" '--".as_slice(), o.name, b"'"].concat());
                }
                tail.push(b'\n');
                let m = GetoptMessage {
                    tail,
                    ..self.message("%s: option '%s%s' is ambiguous; possibilities:", &[b"--", body])
                };
                return self.error(&parts, m);
            }
            let m = self.message("%s: unrecognized option '%s%s'\n", &[b"--", body]);
            return self.error(&[self.argv0(), b": unrecognized option '", arg, b"'"], m);
        };
        match inline.or_else(|| self.next_arg()) {
            Some(value) => Item::Option(short, value),
            None => {
                let m = self.message("%s: option '%s%s' requires an argument\n", &[b"--", full]);
                self.error(&[self.argv0(), b": option '--", full, b"' requires an argument"], m)
            }
        }
    }

    fn short(&mut self, arg: &'a [u8]) -> Item<'a> {
        let c = arg[1];
        // ':' marks arguments in an option string; it is never an option.
        if c == b':' || !self.shorts.contains(&c) {
            let m = self.message("%s: invalid option -- '%c'\n", &[&[c]]);
            return self.error(&[self.argv0(), b": invalid option -- '", &[c], b"'"], m);
        }
        let attached = &arg[2..];
        if !attached.is_empty() {
            return Item::Option(c, attached);
        }
        match self.next_arg() {
            Some(value) => Item::Option(c, value),
            None => {
                let m = self.message("%s: option requires an argument -- '%c'\n", &[&[c]]);
                self.error(&[self.argv0(), b": option requires an argument -- '", &[c], b"'"], m)
            }
        }
    }
}

impl<'a> Iterator for GetoptLong<'a> {
    type Item = Item<'a>;

    fn next(&mut self) -> Option<Item<'a>> {
        while !self.done {
            let Some(arg) = self.next_arg() else {
                self.done = true;
                break;
            };
            if arg == b"--" {
                self.operands.extend_from_slice(&self.args[self.next..]);
                self.done = true;
            } else if let Some(body) = arg.strip_prefix(b"--") {
                return Some(self.long(arg, body));
            } else if arg.len() > 1 && arg[0] == b'-' {
                return Some(self.short(arg));
            } else {
                self.operands.push(arg);
                if self.ordering == Ordering::RequireOrder {
                    self.operands.extend_from_slice(&self.args[self.next..]);
                    self.done = true;
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONGS: [LongOption; 2] = [
        LongOption {
            name: b"duration",
            short: b'd',
        },
        LongOption {
            name: b"cutoff",
            short: b'c',
        },
    ];

    /// Items and operands for `args` (argv[0] = "prog").
    fn parse(args: &[&str], ordering: Ordering) -> (Vec<Item<'static>>, Vec<String>) {
        let mut all: Vec<&'static [u8]> = vec![b"prog"];
        all.extend(
            args.iter()
                .map(|a| -> &'static [u8] { Box::leak(a.as_bytes().to_vec().into_boxed_slice()) }),
        );
        let all: &'static [&'static [u8]] = Box::leak(all.into_boxed_slice());
        let mut g = GetoptLong::new(all, b"dc", &LONGS, ordering);
        let items: Vec<_> = g.by_ref().collect();
        let operands = g
            .operands()
            .iter()
            .map(|o| String::from_utf8_lossy(o).into_owned())
            .collect();
        (items, operands)
    }

    fn err(s: &str) -> Item<'static> {
        Item::Error(format!("{s}\n").into_bytes())
    }

    #[test]
    fn forms_of_an_option_value() {
        let (items, ops) = parse(
            &[
                "-d5",
                "-c",
                "-1",
                "--duration=",
                "--cut",
                "7",
                "--d=x",
                "--duration",
                "--cutoff",
            ],
            Ordering::Permute,
        );
        assert_eq!(
            items,
            vec![
                Item::Option(b'd', b"5"),
                Item::Option(b'c', b"-1"),
                Item::Option(b'd', b""),
                Item::Option(b'c', b"7"),
                Item::Option(b'd', b"x"),
                Item::Option(b'd', b"--cutoff"),
            ]
        );
        assert!(ops.is_empty());
    }

    #[test]
    fn operands_are_permuted_unless_posixly_correct() {
        let (items, ops) = parse(&["a", "-d", "1", "-", "b", "--", "-c", "2"], Ordering::Permute);
        assert_eq!(items, vec![Item::Option(b'd', b"1")]);
        assert_eq!(ops, ["a", "-", "b", "-c", "2"]);

        let (items, ops) = parse(&["a", "-d", "1", "-x"], Ordering::RequireOrder);
        assert!(items.is_empty(), "{items:?}");
        assert_eq!(ops, ["a", "-d", "1", "-x"]);
        let (items, ops) = parse(&["-d", "1", "a", "-c", "2"], Ordering::RequireOrder);
        assert_eq!(items, vec![Item::Option(b'd', b"1")]);
        assert_eq!(ops, ["a", "-c", "2"]);
    }

    #[test]
    fn glibc_messages_and_the_parse_stops_at_the_first() {
        for (args, msg) in [
            (&["-x", "-d"][..], "prog: invalid option -- 'x'"),
            (&["-:"][..], "prog: invalid option -- ':'"),
            (&["-d"][..], "prog: option requires an argument -- 'd'"),
            (&["--cutoff"][..], "prog: option '--cutoff' requires an argument"),
            (&["--cu"][..], "prog: option '--cutoff' requires an argument"),
            (&["--durationx=1"][..], "prog: unrecognized option '--durationx=1'"),
            (
                &["--=1"][..],
                "prog: option '--=1' is ambiguous; possibilities: '--duration' '--cutoff'",
            ),
            (&["--", "-x"][..], ""),
        ] {
            let (items, _) = parse(args, Ordering::Permute);
            let expected = if msg.is_empty() { vec![] } else { vec![err(msg)] };
            assert_eq!(items, expected, "{args:?}");
        }
    }
}

//! `--query`'s calls whose effects ROLLBACK cannot undo.
//!
//! Every run of `--query` is `BEGIN READ ONLY ... ROLLBACK`: the server
//! refuses writes to tables, and ROLLBACK undoes what the transaction did in
//! the database. It cannot undo what happened outside this transaction. The
//! functions in [`ESCAPES`] do exactly that; a query calling one is refused
//! (one line naming it) unless the user passes `--allow-side-effects`.
//!
//! # What ROLLBACK undoes and what it cannot (PostgreSQL 15, checked here)
//! Undone: table and large-object writes (READ ONLY refuses the first; a
//! large-object write takes a transaction id, which clockscope refuses after
//! the run), `SET`/`set_config(..., false)` (settings are transactional),
//! `NOTIFY`/`pg_notify` (delivered only at COMMIT, so never), transaction-level
//! advisory locks (`pg_advisory_xact_lock`).
//!
//! Not undone, refused here: SQL run through dblink (another session, which
//! commits on its own); sequence values (`nextval`, `setval`: READ ONLY
//! refuses them on ordinary sequences, not on TEMP ones); statistics resets
//! (`pg_stat_reset*`, `pg_stat_statements_reset`); session-level advisory
//! locks (held past ROLLBACK until the session ends, blocking others
//! meanwhile); signals to other sessions (`pg_terminate_backend`,
//! `pg_cancel_backend`, `pg_log_backend_memory_contexts`); server actions
//! (`pg_reload_conf`, `pg_rotate_logfile`, `pg_switch_wal`,
//! `pg_create_restore_point`, backups, `pg_promote`, WAL replay); replication
//! slots and origins (a slot created under READ ONLY survives ROLLBACK, and
//! keeps WAL); `pg_logical_emit_message` (non-transactional messages);
//! server files (`lo_export`, adminpack's `pg_file_*`).
//!
//! Not seen, so not refused: what C code does on its own (a type's input
//! function, an FDW, hooks and libraries the server loads), and what a
//! foreign table's remote side does (postgres_fdw rolls its remote
//! transaction back with ours, but not, e.g., a sequence advanced by a remote
//! view).
//!
//! # How calls are found
//! Three times, and a call found any way is refused:
//! 0. Through the catalogs, on the server, before anything is planned
//!    ([`reach`]): every route by which the statement can call a function
//!    (operators, domains' CHECKs, casts, defaults, triggers, rules, views,
//!    policies, types' and aggregates' support functions, function bodies),
//!    and a function not known safe (not built in, nor SQL or PL/pgSQL whose
//!    body is read and followed) is refused with its route.
//! 1. In the text, before connecting: a small SQL lexer ([`called_names`])
//!    skips comments, string literals (`'...'`, `E'...'`, dollar quotes) and
//!    whitespace, reads quoted (`"DbLink_Exec"`, `U&"..."`) and unquoted
//!    identifiers, and takes every name followed by `(` as a call, its schema
//!    qualification (`public.dblink_exec`) dropped, compared without case.
//! 2. In the plan, on the server: `EXPLAIN (VERBOSE, FORMAT JSON)` without
//!    ANALYZE (nothing runs) prints every expression the executor will
//!    evaluate, with views expanded and SQL functions inlined; the same lexer
//!    reads each of its strings ([`escapes_in_plan`]).
//!
//! A hand-written lexer: the SQL parsers on crates.io parse statements into
//! syntax trees (and refuse PostgreSQL syntax they lack); this needs only the
//! names before `(` and must not miss one in syntax a parser does not know.

mod lexer;
mod reach;

use lexer::{Lexer, Token};

pub(crate) use reach::{unsafe_reachable, Unsafe};
use serde_json::Value;

/// A function whose effect ROLLBACK cannot undo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Escape {
    /// The function's name (lower case), or a prefix ending in `*`.
    pub function: &'static str,
    /// Why ROLLBACK cannot undo it.
    pub why: &'static str,
}

const OTHER_SESSION: &str = "runs SQL in another session, which commits on its own";
const SEQUENCE: &str = "a sequence's value is not rolled back";
const STATS: &str = "statistics resets are not transactional";
const LOCK: &str = "a session-level advisory lock is held past ROLLBACK until the session ends";
const SIGNAL: &str = "signals another session";
const SERVER: &str = "acts on the server at once";
const SLOT: &str = "replication slots and origins are not transactional";
const MESSAGE: &str = "writes a non-transactional WAL message";
const FILE: &str = "writes a file on the server";
const SQL_TEXT: &str = "runs SQL given as text, which clockscope cannot follow";
const RELATIONS_BY_NAME: &str = "reads relations (views included) named at run time, which clockscope cannot follow";

/// The known calls ROLLBACK cannot undo: (function, why). A name ending in
/// `*` matches every function it begins.
pub(crate) const ESCAPES: [(&str, &str); 51] = [
    ("dblink*", OTHER_SESSION),
    ("nextval", SEQUENCE),
    ("setval", SEQUENCE),
    ("pg_stat_reset*", STATS),
    ("pg_stat_statements_reset", STATS),
    ("pg_advisory_lock", LOCK),
    ("pg_advisory_lock_shared", LOCK),
    ("pg_try_advisory_lock", LOCK),
    ("pg_try_advisory_lock_shared", LOCK),
    ("pg_terminate_backend", SIGNAL),
    ("pg_cancel_backend", SIGNAL),
    ("pg_log_backend_memory_contexts", SIGNAL),
    ("pg_reload_conf", SERVER),
    ("pg_rotate_logfile", SERVER),
    ("pg_switch_wal", SERVER),
    ("pg_switch_xlog", SERVER),
    ("pg_create_restore_point", SERVER),
    ("pg_start_backup", SERVER),
    ("pg_stop_backup", SERVER),
    ("pg_backup_start", SERVER),
    ("pg_backup_stop", SERVER),
    ("pg_promote", SERVER),
    ("pg_wal_replay_pause", SERVER),
    ("pg_wal_replay_resume", SERVER),
    ("pg_create_physical_replication_slot", SLOT),
    ("pg_create_logical_replication_slot", SLOT),
    ("pg_drop_replication_slot", SLOT),
    ("pg_copy_physical_replication_slot", SLOT),
    ("pg_copy_logical_replication_slot", SLOT),
    ("pg_replication_slot_advance", SLOT),
    ("pg_logical_slot_get_changes", SLOT),
    ("pg_logical_slot_get_binary_changes", SLOT),
    ("pg_replication_origin_create", SLOT),
    ("pg_replication_origin_drop", SLOT),
    ("pg_replication_origin_advance", SLOT),
    ("pg_replication_origin_session_setup", SLOT),
    ("pg_replication_origin_session_reset", SLOT),
    ("pg_replication_origin_xact_setup", SLOT),
    ("pg_replication_origin_xact_reset", SLOT),
    ("pg_logical_emit_message", MESSAGE),
    ("lo_export", FILE),
    ("pg_file_write", FILE),
    ("pg_file_rename", FILE),
    ("pg_file_unlink", FILE),
    ("pg_file_sync", FILE),
    ("query_to_xml*", SQL_TEXT),
    ("ts_stat", SQL_TEXT),
    ("ts_rewrite", SQL_TEXT),
    ("table_to_xml*", RELATIONS_BY_NAME),
    ("schema_to_xml*", RELATIONS_BY_NAME),
    ("database_to_xml*", RELATIONS_BY_NAME),
];

/// A call found: the function as called (lower case, escaped for the
/// terminal) and why ROLLBACK cannot undo it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub function: String,
    pub why: &'static str,
}

/// The escape `name` (a called function's name, any case) is, if any.
pub(crate) fn escape_of(name: &str) -> Option<Escape> {
    let name = name.to_lowercase();
    ESCAPES
        .into_iter()
        .find(|(function, _)| match function.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *function,
        })
        .map(|(function, why)| Escape { function, why })
}

fn add(found: &mut Vec<Found>, name: &str) {
    if let Some(e) = escape_of(name) {
        let function = clockscope_system::escape::escape_untrusted(&name.to_lowercase()).into_owned();
        if !found.iter().any(|f| f.function == function) {
            found.push(Found { function, why: e.why });
        }
    }
}

/// The escapes `sql` calls by name, in order of first call, each once. The
/// text is read twice, with `standard_conforming_strings` on (a backslash in
/// '...' is a character) and off (it escapes the next one), so a literal
/// read either way hides no call.
pub(crate) fn escapes_in_sql(sql: &str) -> Vec<Found> {
    let mut found = Vec::new();
    for name in called_names(sql).into_iter().chain(lex_calls(sql, true)) {
        add(&mut found, &name);
    }
    found
}

/// The escapes an `EXPLAIN (VERBOSE, FORMAT JSON)` plan calls: every string
/// in it read as SQL ([`called_names`]), and every "Function Name". The
/// walk is a loop over an explicit stack (any depth).
pub(crate) fn escapes_in_plan(plan: &Value) -> Vec<Found> {
    let mut found = Vec::new();
    let mut stack = vec![plan];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                for name in called_names(s) {
                    add(&mut found, &name);
                }
            }
            Value::Array(items) => stack.extend(items.iter().rev()),
            Value::Object(map) => {
                if let Some(Value::String(name)) = map.get("Function Name") {
                    add(&mut found, name);
                }
                stack.extend(map.values().rev());
            }
            _ => {}
        }
    }
    found
}

/// The functions found, each with why ROLLBACK cannot undo it, for one line.
pub fn describe(found: &[Found]) -> String {
    found
        .iter()
        .map(|f| format!("{}() ({})", f.function, f.why))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What `--query` reaches that is not known safe ([`reach`]), for one
/// line: the first finding with its route, and how many more.
pub fn describe_reached(found: &[Unsafe]) -> String {
    let Some(first) = found.first() else {
        return String::new();
    };
    let route = if first.route.is_empty() {
        String::new()
    } else {
        format!(" through {}", first.route.join(" -> "))
    };
    let more = match found.len() - 1 {
        0 => String::new(),
        n => format!(" (and {n} more)"),
    };
    format!("{} ({}){route}{more}", first.what, first.why)
}

/// The names `sql` calls: every identifier followed by `(`, after its
/// schema or database qualification, lower case when unquoted, as written
/// when quoted. Comments, string literals and whitespace between tokens are
/// skipped; an unterminated literal or comment ends the text.
pub(crate) fn called_names(sql: &str) -> Vec<String> {
    lex_calls(sql, false)
}

/// [`called_names`]; `backslash_escapes` reads '...' as with
/// `standard_conforming_strings = off`.
fn lex_calls(sql: &str, backslash_escapes: bool) -> Vec<String> {
    let mut lexer = Lexer {
        s: sql.as_bytes(),
        i: 0,
        backslash_escapes,
    };
    let mut names = Vec::new();
    let mut last_ident: Option<String> = None;
    while let Some(token) = lexer.next_token() {
        match token {
            Token::Ident(name) => last_ident = Some(name),
            Token::Punct(b'(') => names.extend(last_ident.take()),
            // A qualification: `schema.name` keeps the last name.
            Token::Punct(b'.') => {}
            _ => last_ident = None,
        }
    }
    names
}

/// The words of a text, for following what it may call ([`reach`]): every
/// identifier (lower case when unquoted) and every operator, read both ways
/// a backslash in '...' can be read.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Words {
    pub idents: std::collections::BTreeSet<String>,
    /// The identifiers that can name a function called: followed by `(`,
    /// or after a `.` (`row.f` is `f(row)`, PostgreSQL's attribute notation).
    pub calls: std::collections::BTreeSet<String>,
    /// Every operator written, and each of its prefixes (PostgreSQL's
    /// lexer drops a trailing `+` or `-` from some).
    pub ops: std::collections::BTreeSet<String>,
}

/// The [`Words`] of `sql`.
pub(crate) fn words(sql: &str) -> Words {
    let mut w = Words::default();
    for backslash_escapes in [false, true] {
        let mut lexer = Lexer {
            s: sql.as_bytes(),
            i: 0,
            backslash_escapes,
        };
        let (mut last_ident, mut after_dot) = (None::<String>, false);
        while let Some(token) = lexer.next_token() {
            let dot = matches!(token, Token::Punct(b'.'));
            match token {
                Token::Ident(name) => {
                    if after_dot {
                        w.calls.insert(name.clone());
                    }
                    w.idents.insert(name.clone());
                    last_ident = Some(name);
                }
                Token::Punct(b'(') => w.calls.extend(last_ident.take()),
                Token::Op(op) => {
                    w.ops.extend((1..=op.len()).map(|end| op[..end].to_string()));
                    last_ident = None;
                }
                // '.' included: what comes before a dot is not called.
                _ => last_ident = None,
            }
            after_dot = dot;
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sql: &str) -> Vec<String> {
        escapes_in_sql(sql).into_iter().map(|e| e.function).collect()
    }

    #[test]
    fn calls_are_found_whatever_the_case_quoting_qualification_and_comments() {
        for sql in [
            "SELECT dblink_exec('x', 'y')",
            "SELECT DbLink_Exec('x', 'y')",
            "SELECT \"DbLink_Exec\"('x', 'y')",
            "SELECT \"dblink_exec\" ('x', 'y')",
            "SELECT public.dblink_exec('x', 'y')",
            "SELECT \"public\" . \"dblink_exec\"('x')",
            "SELECT mydb.public.dblink_exec('x')",
            "SELECT dblink_exec/* a comment */('x')",
            "SELECT dblink_exec -- a comment\n ('x')",
            "SELECT dblink_exec\n\t(\n'x')",
            "SELECT U&\"dblink\\005fexec\"('x')",
            "SELECT U&\"dblink!005fexec\" UESCAPE '!' ('x')",
            "SELECT U&\"\\+000064blink_exec\"('x')",
            "SELECT * FROM dblink('conn', 'SELECT 1') AS t(a int)",
            "SELECT 1 WHERE /* /* nested */ still a comment */ dblink_connect('x') IS NULL",
        ] {
            let want = if sql.contains("FROM dblink(") {
                "dblink"
            } else if sql.contains("connect") {
                "dblink_connect"
            } else {
                "dblink_exec"
            };
            assert_eq!(names(sql), vec![want], "{sql}");
        }
        assert_eq!(names("SELECT pg_stat_reset()"), vec!["pg_stat_reset"]);
        assert_eq!(
            names("SELECT pg_catalog.PG_STAT_RESET_SHARED('bgwriter'), nextval('s'), setval('s', 1), nextval('t')"),
            vec!["pg_stat_reset_shared", "nextval", "setval"]
        );
        assert_eq!(names("SELECT lo_export(1, '/tmp/x')"), vec!["lo_export"]);
        assert_eq!(names("SELECT pg_advisory_lock(1)"), vec!["pg_advisory_lock"]);
        // SQL in a literal is run by these, so they are refused themselves.
        assert_eq!(
            names("SELECT query_to_xml('SELECT dblink_exec(''c'', ''s'')', true, true, '')"),
            vec!["query_to_xml"]
        );
        assert_eq!(
            names("SELECT table_to_xml('v'::regclass, true, true, '')"),
            vec!["table_to_xml"]
        );
    }

    #[test]
    fn names_in_literals_comments_and_other_uses_are_not_calls() {
        for sql in [
            "SELECT 'dblink_exec(1)'",
            "SELECT E'\\' dblink_exec(1)'",
            "SELECT 'it''s dblink_exec(1)'",
            "SELECT $$ dblink_exec(1) $$",
            "SELECT $tag$ nextval('s') $tag$",
            "SELECT $1, dblink_exec FROM t",
            "-- SELECT dblink_exec('x')\nSELECT 1",
            "/* nextval('s') */ SELECT 1",
            "SELECT nextval_like(1), my_nextval(2), pg_advisory_xact_lock(1), pg_notify('c', 'm')",
            "SELECT set_config('work_mem', '8MB', false), currval('s'), lo_get(1)",
            "SELECT \"nextval\" FROM t",
        ] {
            assert!(names(sql).is_empty(), "{sql}: {:?}", names(sql));
        }
    }

    #[test]
    fn the_plan_is_read_everywhere_and_at_any_depth() {
        let plan: Value = serde_json::from_str(
            r#"[{"Plan": {"Node Type": "Result", "Output": ["public.dblink_exec('x'::text, 'y'::text)"],
                "Plans": [{"Node Type": "Function Scan", "Function Name": "pg_stat_reset",
                "Filter": "(nextval('s'::regclass) > 0)"}]}}]"#,
        )
        .unwrap();
        let found: Vec<String> = escapes_in_plan(&plan).into_iter().map(|e| e.function).collect();
        assert_eq!(found, vec!["dblink_exec", "pg_stat_reset", "nextval"]);
        let quiet: Value = serde_json::from_str(r#"[{"Plan": {"Output": ["'nextval(x)'::text"]}}]"#).unwrap();
        assert!(escapes_in_plan(&quiet).is_empty());
    }

    #[test]
    fn the_description_names_each_function_and_why() {
        let found = escapes_in_sql("SELECT dblink_exec('a', 'b'), nextval('s')");
        assert_eq!(
            describe(&found),
            "dblink_exec() (runs SQL in another session, which commits on its own), nextval() (a sequence's \
             value is not rolled back)"
        );
    }

    #[test]
    fn a_backslash_in_a_literal_hides_nothing_either_way() {
        // With standard_conforming_strings off, 'a\' ' is one literal and the
        // call after it is real; with it on, the call is in a literal.
        assert_eq!(names("SELECT 'a\\' ', pg_stat_reset(), '"), vec!["pg_stat_reset"]);
        assert_eq!(names("SELECT 'a\\', pg_stat_reset(), '\\''"), vec!["pg_stat_reset"]);
    }

    #[test]
    fn words_are_every_identifier_and_operator_with_its_prefixes() {
        let w = words("SELECT a ### b, \"Q\"(1) FROM t WHERE x <-2 -- ### c\n /* @@ */ AND 'lit ##' = $1");
        let idents: Vec<&str> = w.idents.iter().map(String::as_str).collect();
        assert_eq!(idents, ["Q", "a", "and", "b", "from", "select", "t", "where", "x"]);
        let ops: Vec<&str> = w.ops.iter().map(String::as_str).collect();
        assert_eq!(ops, ["#", "##", "###", "<", "<-", "="]);
        let calls: Vec<&str> = w.calls.iter().map(String::as_str).collect();
        assert_eq!(calls, ["Q"]);
        let w = words("SELECT s.f (1), t.col, g\n(2), h FROM s.t");
        let calls: Vec<&str> = w.calls.iter().map(String::as_str).collect();
        assert_eq!(calls, ["col", "f", "g", "t"]);
    }

    #[test]
    fn unterminated_text_ends_the_scan() {
        for sql in [
            "SELECT 'abc",
            "SELECT \"abc",
            "SELECT /* abc",
            "SELECT $$ abc",
            "SELECT E'\\",
        ] {
            assert!(names(sql).is_empty(), "{sql}");
        }
    }
}

//! SQL classification: a statement's first keyword, and what went wrong
//! running `--query` said in one line (a write refused, several statements, a
//! statement EXPLAIN cannot run, the time limit, the server's error).

use crate::error::Error;
use clockscope_system::escape::escape_untrusted;

/// SQLSTATE read_only_sql_transaction: CREATE on a standby or in a read-only
/// transaction.
pub(crate) const READ_ONLY_TRANSACTION: &str = "25006";

/// Statements EXPLAIN can run, by their first keyword (CREATE TABLE AS is
/// refused as a write anyway).
const EXPLAINABLE: [&str; 10] = [
    "SELECT", "VALUES", "TABLE", "WITH", "INSERT", "UPDATE", "DELETE", "MERGE", "EXECUTE", "DECLARE",
];

/// First keywords of PostgreSQL's utility statements and DDL, which EXPLAIN
/// refuses with a syntax error; any other first word in a syntax error is a
/// typo, reported as the server's syntax error.
const UTILITY: [&str; 42] = [
    "ABORT",
    "ALTER",
    "ANALYZE",
    "BEGIN",
    "CALL",
    "CHECKPOINT",
    "CLOSE",
    "CLUSTER",
    "COMMENT",
    "COMMIT",
    "COPY",
    "CREATE",
    "DEALLOCATE",
    "DISCARD",
    "DO",
    "DROP",
    "END",
    "EXPLAIN",
    "FETCH",
    "GRANT",
    "IMPORT",
    "LISTEN",
    "LOAD",
    "LOCK",
    "MOVE",
    "NOTIFY",
    "PREPARE",
    "REASSIGN",
    "REFRESH",
    "REINDEX",
    "RELEASE",
    "RESET",
    "REVOKE",
    "ROLLBACK",
    "SAVEPOINT",
    "SECURITY",
    "SET",
    "SHOW",
    "START",
    "TRUNCATE",
    "UNLISTEN",
    "VACUUM",
];

/// The first keyword of `sql`, upper-cased, after blanks, `--` and `/* */`
/// comments and opening parentheses; empty when it does not start with a word.
pub(crate) fn first_keyword(sql: &str) -> String {
    let mut rest = sql;
    loop {
        let trimmed = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
        if let Some(after) = trimmed.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, r)| r);
        } else if let Some(after) = trimmed.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r);
        } else {
            rest = trimmed;
            break;
        }
    }
    rest.chars()
        .take_while(|c| c.is_ascii_alphabetic() || *c == '_')
        .collect::<String>()
        .to_ascii_uppercase()
}

/// Says what went wrong running `--query` `sql` in one line naming it: a
/// write refused by the READ ONLY transaction, several statements, a
/// statement EXPLAIN cannot run, `--max-time`'s statement_timeout, or the
/// server's error. Server text is already escaped ([`Error::server`]).
pub(crate) fn query_error(e: Error, sql: &str) -> Error {
    let Error::Server { message, sqlstate, .. } = &e else {
        return e;
    };
    let state = crate::error::sqlstate_suffix(sqlstate);
    let keyword = first_keyword(sql);
    match sqlstate.as_deref() {
        Some(READ_ONLY_TRANSACTION) => Error::Query(format!(
            "the query writes, which this READ ONLY transaction refused (rolled back, nothing changed): \
             {message}{state}"
        )),
        Some("42601") if message.contains("multiple commands") => Error::Query(format!(
            "several statements; give one statement (the server: {message}{state})"
        )),
        Some("42601") if !EXPLAINABLE.contains(&keyword.as_str()) && UTILITY.contains(&keyword.as_str()) => {
            Error::Query(format!(
                "EXPLAIN cannot run {} (a utility statement or DDL); give one SELECT, VALUES, TABLE or WITH \
             query (the server: {message}{state})",
                if keyword.is_empty() {
                    "this statement".to_string()
                } else {
                    format!("a {} statement", escape_untrusted(&keyword))
                }
            ))
        }
        Some("57014") if message.contains("statement timeout") => Error::MaxTime(format!(
            "a run of --query was cancelled by statement_timeout at the time left{state}"
        )),
        _ => Error::Query(format!("the server refused it: {message}{state}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_keywords_skip_comments_and_parentheses() {
        assert_eq!(first_keyword("  select 1"), "SELECT");
        assert_eq!(first_keyword("-- note\n/* c */ (SELECT 1)"), "SELECT");
        assert_eq!(first_keyword("create table t (a int)"), "CREATE");
        assert_eq!(first_keyword("; x"), "");
        assert_eq!(first_keyword("-- only a comment"), "");
    }

    fn server_error(message: &str, state: &str) -> Error {
        Error::Server {
            step: "EXPLAIN ANALYZE of --query".into(),
            message: message.into(),
            sqlstate: Some(state.into()),
        }
    }

    #[test]
    fn query_errors_name_the_option_and_the_cause() {
        let write = query_error(
            server_error("cannot execute INSERT in a read-only transaction", "25006"),
            "INSERT INTO t VALUES (1)",
        );
        assert!(write.to_string().starts_with("--query: the query writes"), "{write}");
        let two = query_error(
            server_error("cannot insert multiple commands into a prepared statement", "42601"),
            "SELECT 1; SELECT 2",
        );
        assert!(two.to_string().starts_with("--query: several statements"), "{two}");
        let ddl = query_error(
            server_error("syntax error at or near \"TABLE\"", "42601"),
            "CREATE TABLE t (a int)",
        );
        assert!(
            ddl.to_string()
                .starts_with("--query: EXPLAIN cannot run a CREATE statement"),
            "{ddl}"
        );
        // A typo in the first word is a syntax error, not a utility statement.
        let typo = query_error(server_error("syntax error at or near \"SELEC\"", "42601"), "SELEC 1");
        assert!(
            typo.to_string()
                .starts_with("--query: the server refused it: syntax error at or near"),
            "{typo}"
        );
        let syntax = query_error(
            server_error("syntax error at or near \"FRM\"", "42601"),
            "SELECT 1 FRM t",
        );
        assert!(
            syntax
                .to_string()
                .starts_with("--query: the server refused it: syntax error"),
            "{syntax}"
        );
        let timeout = query_error(
            server_error("canceling statement due to statement timeout", "57014"),
            "SELECT pg_sleep(9)",
        );
        assert!(timeout.to_string().starts_with("--max-time: "), "{timeout}");
        assert!(matches!(
            query_error(Error::Interrupted, "SELECT 1"),
            Error::Interrupted
        ));
    }
}

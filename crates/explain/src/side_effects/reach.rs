//! What `--query` can call, followed through the catalogs before anything
//! plans or runs it.
//!
//! A statement calls more than the names it writes: an operator runs its
//! function (`pg_operator.oprcode`, and the planner its estimators
//! `oprrest`/`oprjoin`, its commutator and negator); a value cast to a domain
//! runs the domain's CHECK constraints; a cast runs its function
//! (`pg_cast.castfunc`); an INSERT runs the table's column defaults, its
//! triggers, its rules, its index expressions; a view runs what its rule
//! says; a policy runs its expressions; a type runs its input and output
//! functions and, sorted or grouped, its default operator classes' support
//! functions; an aggregate runs its support functions; and each function
//! runs what its body says. Planning alone runs some of them: the planner
//! folds IMMUTABLE and STABLE calls on constants (a column default, an
//! operator on literals) and calls operators' estimators, so this check
//! comes before the plan check's EXPLAIN.
//!
//! So every route is followed from the query's words ([`super::words`]):
//! each identifier names the user-defined types and relations of that name,
//! each one followed by `(` or after a `.` (attribute notation: `row.f` is
//! `f(row)`) the functions of that name (any schema: search_path is not
//! resolved, so more is followed than is called), each operator the
//! operators of that name; from those,
//! every catalog edge above, and `pg_depend`'s edges of the objects that
//! store expressions (rules, triggers, defaults, policies, CHECK
//! constraints, indexes, domains, functions with SQL-standard bodies), whose
//! text (`pg_get_ruledef`, `pg_get_expr`, ...) is read for words too (calls
//! of built-in functions are not in `pg_depend`). A function is known safe
//! only when built in (oid below 16384, `FirstNormalObjectId`) and not one of
//! [`super::ESCAPES`], or written in SQL or PL/pgSQL with a body read here
//! (and followed in turn) that runs no SQL built at run time (`EXECUTE`) and
//! no `COPY`, `DO`, `LOAD`, `CHECKPOINT`, `ANALYZE` or `VACUUM`. Anything else
//! (C, PL/Python, PL/Perl, ..., extensions such as dblink) is refused, named
//! with the route that reaches it.
//!
//! Not seen: C code's own calls (a type's input function, an FDW, a table
//! access method, hooks and libraries loaded by the server), a built-in
//! function's effect beyond [`super::ESCAPES`], and search_path tricks that
//! reach a function by a name the text does not spell (none is known).

use super::{called_names, escape_of, words, Words};
use crate::error::Error;
use crate::session::PgSession;
use clockscope_system::escape::escape_untrusted;
use std::collections::{BTreeSet, HashMap};

/// Objects below this oid are built in (PostgreSQL's `FirstNormalObjectId`).
const FIRST_USER_OID: u32 = 16384;
/// Objects followed at most: past this the query is refused (a catalog
/// this large is not read whole before each run).
const MAX_OBJECTS: usize = 20_000;
/// Operators the parser applies without their name being written (IN, BETWEEN,
/// CASE, LIKE, DISTINCT, ...): a user-defined one on built-in types is
/// followed for any query.
const IMPLICIT_OPERATORS: [&str; 14] = [
    "=", "<>", "<", "<=", ">", ">=", "~~", "!~~", "~~*", "!~~*", "~", "!~", "~*", "!~*",
];
/// Words in a function body that run what cannot be read here, and why.
const OPAQUE_WORDS: [(&str, &str); 7] = [
    (
        "execute",
        "runs SQL built at run time (EXECUTE), which clockscope cannot read",
    ),
    ("do", "runs a DO block, whose body is a string clockscope does not read"),
    ("copy", "runs COPY, which can write server files or run programs"),
    ("load", "loads a server library"),
    ("checkpoint", "forces a checkpoint"),
    (
        "analyze",
        "runs ANALYZE (or EXPLAIN ANALYZE), whose statistics updates are not all undone",
    ),
    ("vacuum", "runs VACUUM"),
];

/// A kind of catalog object on a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Kind {
    Function,
    Operator,
    Type,
    Relation,
    OpClass,
}

/// Each kind, in the enum's order: its code in the catalog queries and its
/// word in a route's label.
const KINDS: [(Kind, &str, &str); 5] = [
    (Kind::Function, "f", "function"),
    (Kind::Operator, "o", "operator"),
    (Kind::Type, "t", "type"),
    (Kind::Relation, "r", "relation"),
    (Kind::OpClass, "c", "operator class"),
];

impl Kind {
    fn code(self) -> &'static str {
        KINDS[self as usize].1
    }

    fn of(code: &str) -> Option<Kind> {
        KINDS.iter().find(|k| k.1 == code).map(|k| k.0)
    }
}

type Node = (Kind, u32);

/// Something the query can reach that is not known safe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsafe {
    /// The function (`public.f(integer)`, or a called name `dblink_exec()`).
    pub what: String,
    /// Why it is refused.
    pub why: String,
    /// The route from the query, e.g. `operator public.###(integer,integer)`.
    pub route: Vec<String>,
}

/// The walk's state: every object reached and what reached it.
#[derive(Default)]
struct Walk {
    /// Object -> the object whose edge or text reached it (None: the query).
    reached: HashMap<Node, Option<Node>>,
    /// Names (called, and all) and operators already looked up.
    calls: BTreeSet<String>,
    idents: BTreeSet<String>,
    ops: BTreeSet<String>,
    /// (what, why, the object that reached it or is it)
    found: Vec<(What, String, Option<Node>)>,
}

/// What a finding names: a function called by name in a text, or the
/// function object reached (the last step of its route).
#[derive(Clone, Debug, PartialEq, Eq)]
enum What {
    Called(String),
    Function,
}

impl Walk {
    fn add(&mut self, node: Node, via: Option<Node>) -> bool {
        if self.reached.contains_key(&node) || (node.0 != Kind::Function && node.1 < FIRST_USER_OID) {
            return false;
        }
        self.reached.insert(node, via);
        true
    }

    /// Reads `text` (by `via`): escapes it calls by name are found, its new
    /// words returned for lookup.
    fn read(&mut self, text: &str, via: Option<Node>, seeds: &mut Vec<(Words, Option<Node>)>) {
        let mut w = words(text);
        // Calls with parentheses, and in attribute notation (`x.f`).
        for name in called_names(text).iter().chain(&w.calls) {
            if let Some(e) = escape_of(name) {
                let what = What::Called(format!("{}()", escape_untrusted(&name.to_lowercase())));
                if !self.found.iter().any(|f| f.0 == what) {
                    self.found.push((what, e.why.to_string(), via));
                }
            }
        }
        let seen = [&mut self.calls, &mut self.idents, &mut self.ops];
        for (new, seen) in [&mut w.calls, &mut w.idents, &mut w.ops].into_iter().zip(seen) {
            new.retain(|x| !seen.contains(x));
            seen.extend(new.iter().cloned());
        }
        if !(w.calls.is_empty() && w.idents.is_empty() && w.ops.is_empty()) {
            seeds.push((w, via));
        }
    }
}

/// Follows every route from `sql` through the server's catalogs and
/// returns what is not known safe (empty: nothing found).
pub(crate) fn unsafe_reachable(session: &mut PgSession, sql: &str) -> Result<Vec<Unsafe>, Error> {
    let mut walk = Walk::default();
    let mut seeds = Vec::new();
    walk.read(sql, None, &mut seeds);
    let mut frontier: Vec<Node> = Vec::new();
    for row in session.catalog_query(
        "following --query's implicit calls",
        sql::IMPLICIT,
        &[&IMPLICIT_OPERATORS.to_vec()],
    )? {
        frontier.extend(node_of(row.get(0), row.get(1)).filter(|n| walk.add(*n, None)));
    }
    while !(seeds.is_empty() && frontier.is_empty()) {
        if walk.reached.len() > MAX_OBJECTS {
            walk.found.push((
                What::Called(format!("more than {MAX_OBJECTS} catalog objects")),
                "too many to follow before each run".into(),
                None,
            ));
            break;
        }
        for (w, via) in std::mem::take(&mut seeds) {
            let calls: Vec<String> = w.calls.into_iter().collect();
            let idents: Vec<String> = w.idents.into_iter().collect();
            let ops: Vec<String> = w.ops.into_iter().collect();
            for row in session.catalog_query("following --query's names", sql::BY_NAME, &[&calls, &idents, &ops])? {
                frontier.extend(node_of(row.get(0), row.get(1)).filter(|n| walk.add(*n, via)));
            }
        }
        let batch = std::mem::take(&mut frontier);
        expand(session, &mut walk, &batch, &mut frontier, &mut seeds)?;
    }
    describe_found(session, &walk)
}

/// One step from `batch`: its edges (new objects into `frontier`), the text
/// of what stores expressions, and the functions' bodies (into `seeds`).
fn expand(
    session: &mut PgSession,
    walk: &mut Walk,
    batch: &[Node],
    frontier: &mut Vec<Node>,
    seeds: &mut Vec<(Words, Option<Node>)>,
) -> Result<(), Error> {
    let of = |k: Kind| -> Vec<u32> { batch.iter().filter(|n| n.0 == k).map(|n| n.1).collect() };
    let (rels, types, funcs, ops, classes) = (
        of(Kind::Relation),
        of(Kind::Type),
        of(Kind::Function),
        of(Kind::Operator),
        of(Kind::OpClass),
    );
    let rows = session.catalog_query(
        "following --query's catalog edges",
        sql::EDGES,
        &[&rels, &types, &funcs, &ops, &classes],
    )?;
    for row in rows {
        let Some(from) = node_of(row.get(0), row.get(1)) else {
            continue;
        };
        let text: Option<String> = row.get(4);
        let to_kind: Option<&str> = row.get(2);
        match (to_kind.and_then(|k| node_of(k, row.get(3))), text) {
            (Some(to), _) => {
                if walk.add(to, Some(from)) {
                    frontier.push(to);
                }
            }
            (None, Some(text)) => walk.read(&text, Some(from), seeds),
            (None, None) => {}
        }
    }
    for row in session.catalog_query("reading --query's functions", sql::FUNCTIONS, &[&funcs])? {
        let oid: u32 = row.get(0);
        let name: String = row.get(1);
        let language: String = row.get(2);
        let kind: i8 = row.get(3);
        let body: Option<String> = row.get(4);
        let node = (Kind::Function, oid);
        if let Some(e) = escape_of(&name) {
            let called = What::Called(format!("{}()", escape_untrusted(&name.to_lowercase())));
            if !walk.found.iter().any(|f| f.0 == called) {
                walk.found.push((What::Function, e.why.to_string(), Some(node)));
            }
            continue;
        }
        if oid < FIRST_USER_OID || kind as u8 == b'a' {
            continue;
        }
        match body {
            Some(body) => {
                let w = words(&body);
                if let Some((_, why)) = OPAQUE_WORDS.iter().find(|(word, _)| w.idents.contains(*word)) {
                    walk.found.push((What::Function, (*why).to_string(), Some(node)));
                } else {
                    walk.read(&body, Some(node), seeds);
                }
            }
            None => walk.found.push((
                What::Function,
                format!(
                    "LANGUAGE {}: clockscope cannot see what it does",
                    escape_untrusted(&language)
                ),
                Some(node),
            )),
        }
    }
    Ok(())
}

fn node_of(kind: &str, oid: u32) -> Option<Node> {
    Kind::of(kind).map(|k| (k, oid))
}

/// The findings with their objects named and their routes from the query.
fn describe_found(session: &mut PgSession, walk: &Walk) -> Result<Vec<Unsafe>, Error> {
    let mut out = Vec::new();
    for (what, why, via) in &walk.found {
        // At most 65 steps back: the route to the query.
        let mut route: Vec<Node> = std::iter::successors(*via, |node| walk.reached.get(node).copied().flatten())
            .take(65)
            .collect();
        route.reverse();
        if *what == What::Function {
            // The function itself is the last step, not a step on the way.
            route.pop();
        }
        let labels = route
            .iter()
            .map(|node| label(session, *node))
            .collect::<Result<_, _>>()?;
        let what = match (what, via) {
            (What::Called(name), _) => name.clone(),
            (What::Function, Some(node)) => label(session, *node)?,
            (What::Function, None) => "a function".to_string(),
        };
        out.push(Unsafe {
            what,
            why: why.clone(),
            route: labels,
        });
    }
    Ok(out)
}

/// `function public.f(integer)`, `operator public.###(integer,integer)`,
/// `type public.d`, `relation public.t`, `operator class public.c`.
fn label(session: &mut PgSession, node: Node) -> Result<String, Error> {
    let rows = session.catalog_query("naming --query's routes", sql::LABEL, &[&node.0.code(), &node.1])?;
    let name: Option<String> = rows.first().and_then(|r| r.get(0));
    let kind = KINDS[node.0 as usize].2;
    Ok(format!(
        "{kind} {}",
        escape_untrusted(&name.unwrap_or_else(|| node.1.to_string()))
    ))
}

/// The catalog queries (PostgreSQL 12 and later: `pg_proc.prokind`).
mod sql {
    /// User-defined operators the parser applies unnamed, on built-in
    /// types, and user-defined casts between built-in types.
    pub const IMPLICIT: &str = "\
        SELECT 'o', o.oid FROM pg_catalog.pg_operator o \
         WHERE o.oprname = ANY($1) AND o.oid >= 16384 AND o.oprleft < 16384 AND o.oprright < 16384 \
        UNION ALL SELECT 'f', c.castfunc FROM pg_catalog.pg_cast c \
         WHERE c.castfunc >= 16384 AND c.castsource < 16384 AND c.casttarget < 16384";

    /// User-defined functions named by the called names $1, types and
    /// relations by any name $2, operators by $3 (built-in ones are
    /// leaves, found by name in the text).
    pub const BY_NAME: &str = "\
        SELECT 'f', p.oid FROM pg_catalog.pg_proc p WHERE p.proname = ANY($1) AND p.oid >= 16384 \
        UNION ALL SELECT 't', t.oid FROM pg_catalog.pg_type t WHERE t.typname = ANY($2) AND t.oid >= 16384 \
        UNION ALL SELECT 'r', c.oid FROM pg_catalog.pg_class c WHERE c.relname = ANY($2) AND c.oid >= 16384 \
         AND c.relkind IN ('r', 'v', 'm', 'f', 'p') \
        UNION ALL SELECT 'o', o.oid FROM pg_catalog.pg_operator o WHERE o.oprname = ANY($3)";

    /// Edges from relations $1, types $2, functions $3, operators $4 and
    /// operator classes $5: (from kind, from oid, to kind, to oid, text).
    pub const EDGES: &str = "\
        WITH r AS (SELECT unnest($1::oid[]) AS oid), t AS (SELECT unnest($2::oid[]) AS oid), \
         f AS (SELECT unnest($3::oid[]) AS oid), o AS (SELECT unnest($4::oid[]) AS oid), \
         c AS (SELECT unnest($5::oid[]) AS oid), \
        parts AS ( \
         SELECT 'pg_catalog.pg_rewrite'::regclass AS cls, x.oid AS obj, 'r' AS k, x.ev_class AS o, \
          pg_catalog.pg_get_ruledef(x.oid) AS def FROM pg_catalog.pg_rewrite x JOIN r ON x.ev_class = r.oid \
         UNION ALL SELECT 'pg_catalog.pg_trigger'::regclass, x.oid, 'r', x.tgrelid, pg_catalog.pg_get_triggerdef(x.oid) \
          FROM pg_catalog.pg_trigger x JOIN r ON x.tgrelid = r.oid \
         UNION ALL SELECT 'pg_catalog.pg_attrdef'::regclass, x.oid, 'r', x.adrelid, \
          pg_catalog.pg_get_expr(x.adbin, x.adrelid) FROM pg_catalog.pg_attrdef x JOIN r ON x.adrelid = r.oid \
         UNION ALL SELECT 'pg_catalog.pg_policy'::regclass, x.oid, 'r', x.polrelid, \
          concat_ws(' ', pg_catalog.pg_get_expr(x.polqual, x.polrelid), pg_catalog.pg_get_expr(x.polwithcheck, x.polrelid)) \
          FROM pg_catalog.pg_policy x JOIN r ON x.polrelid = r.oid \
         UNION ALL SELECT 'pg_catalog.pg_constraint'::regclass, x.oid, 'r', x.conrelid, pg_catalog.pg_get_constraintdef(x.oid) \
          FROM pg_catalog.pg_constraint x JOIN r ON x.conrelid = r.oid WHERE x.contype = 'c' \
         UNION ALL SELECT 'pg_catalog.pg_class'::regclass, x.indexrelid, 'r', x.indrelid, pg_catalog.pg_get_indexdef(x.indexrelid) \
          FROM pg_catalog.pg_index x JOIN r ON x.indrelid = r.oid \
         UNION ALL SELECT 'pg_catalog.pg_constraint'::regclass, x.oid, 't', x.contypid, pg_catalog.pg_get_constraintdef(x.oid) \
          FROM pg_catalog.pg_constraint x JOIN t ON x.contypid = t.oid \
         UNION ALL SELECT 'pg_catalog.pg_type'::regclass, x.oid, 't', x.oid, x.typdefault \
          FROM pg_catalog.pg_type x JOIN t ON x.oid = t.oid \
         UNION ALL SELECT 'pg_catalog.pg_proc'::regclass, f.oid, 'f', f.oid, NULL FROM f \
         UNION ALL SELECT 'pg_catalog.pg_operator'::regclass, o.oid, 'o', o.oid, NULL FROM o \
        ) \
        SELECT p.k, p.o, CASE d.refclassid WHEN 'pg_catalog.pg_proc'::regclass THEN 'f' \
          WHEN 'pg_catalog.pg_operator'::regclass THEN 'o' WHEN 'pg_catalog.pg_type'::regclass THEN 't' \
          WHEN 'pg_catalog.pg_class'::regclass THEN 'r' WHEN 'pg_catalog.pg_opclass'::regclass THEN 'c' END, \
          d.refobjid, NULL::text \
         FROM parts p JOIN pg_catalog.pg_depend d ON d.classid = p.cls AND d.objid = p.obj \
        UNION ALL SELECT p.k, p.o, NULL, 0::oid, p.def FROM parts p WHERE p.def IS NOT NULL \
        UNION ALL SELECT 'r', a.attrelid, 't', a.atttypid, NULL FROM pg_catalog.pg_attribute a JOIN r ON a.attrelid = r.oid \
         WHERE a.attnum > 0 AND NOT a.attisdropped \
        UNION ALL SELECT 'r', i.inhparent, 'r', i.inhrelid, NULL FROM pg_catalog.pg_inherits i JOIN r ON i.inhparent = r.oid \
        UNION ALL SELECT 't', x.oid, u.k, u.o, NULL FROM pg_catalog.pg_type x JOIN t ON x.oid = t.oid, \
         LATERAL (VALUES ('t', x.typbasetype), ('t', x.typelem), ('r', x.typrelid), ('f', x.typinput::oid), \
          ('f', x.typoutput::oid), ('f', x.typreceive::oid), ('f', x.typsend::oid), ('f', x.typmodin::oid), \
          ('f', x.typmodout::oid), ('f', x.typanalyze::oid)) u(k, o) WHERE u.o <> 0 \
        UNION ALL SELECT 't', t.oid, 'f', x.castfunc, NULL FROM pg_catalog.pg_cast x JOIN t \
         ON t.oid IN (x.castsource, x.casttarget) WHERE x.castfunc <> 0 \
        UNION ALL SELECT 't', t.oid, 'o', x.oid, NULL FROM pg_catalog.pg_operator x JOIN t ON t.oid IN (x.oprleft, x.oprright) \
        UNION ALL SELECT 't', t.oid, 'c', x.oid, NULL FROM pg_catalog.pg_opclass x JOIN t ON x.opcintype = t.oid \
         WHERE x.opcdefault \
        UNION ALL SELECT 'o', x.oid, u.k, u.o, NULL FROM pg_catalog.pg_operator x JOIN o ON x.oid = o.oid, \
         LATERAL (VALUES ('f', x.oprcode::oid), ('f', x.oprrest::oid), ('f', x.oprjoin::oid), ('o', x.oprcom), \
          ('o', x.oprnegate), ('t', x.oprleft), ('t', x.oprright), ('t', x.oprresult)) u(k, o) WHERE u.o <> 0 \
        UNION ALL SELECT 'f', x.oid, 't', u.o, NULL FROM pg_catalog.pg_proc x JOIN f ON x.oid = f.oid, \
         LATERAL unnest(x.proargtypes::oid[] || x.prorettype) u(o) \
        UNION ALL SELECT 'f', x.aggfnoid::oid, 'f', u.o, NULL FROM pg_catalog.pg_aggregate x JOIN f ON x.aggfnoid = f.oid, \
         LATERAL unnest(ARRAY[x.aggtransfn, x.aggfinalfn, x.aggcombinefn, x.aggserialfn, x.aggdeserialfn, \
          x.aggmtransfn, x.aggminvtransfn, x.aggmfinalfn]::oid[]) u(o) WHERE u.o <> 0 \
        UNION ALL SELECT 'f', x.oid, 'f', x.prosupport::oid, NULL FROM pg_catalog.pg_proc x JOIN f ON x.oid = f.oid \
         WHERE x.prosupport <> 0 \
        UNION ALL SELECT 'c', x.oid, 'f', p.amproc::oid, NULL FROM pg_catalog.pg_opclass x JOIN c ON x.oid = c.oid \
         JOIN pg_catalog.pg_amproc p ON p.amprocfamily = x.opcfamily \
        UNION ALL SELECT 'c', x.oid, 'o', p.amopopr, NULL FROM pg_catalog.pg_opclass x JOIN c ON x.oid = c.oid \
         JOIN pg_catalog.pg_amop p ON p.amopfamily = x.opcfamily";

    /// Functions $1: oid, name, language, kind, and the body read here
    /// (SQL and PL/pgSQL only; SQL-standard bodies deparsed).
    pub const FUNCTIONS: &str = "\
        SELECT p.oid, p.proname::text, l.lanname::text, p.prokind::\"char\", \
         CASE WHEN l.lanname IN ('sql', 'plpgsql') AND p.prokind <> 'a' \
          THEN coalesce(nullif(p.prosrc, ''), pg_catalog.pg_get_functiondef(p.oid)) END \
         FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang WHERE p.oid = ANY($1)";

    /// An object's name for messages: kind $1, oid $2.
    pub const LABEL: &str = "\
        SELECT CASE $1::text WHEN 'f' THEN $2::oid::regprocedure::text WHEN 'o' THEN $2::oid::regoperator::text \
         WHEN 't' THEN pg_catalog.format_type($2::oid, NULL) WHEN 'r' THEN $2::oid::regclass::text \
         WHEN 'c' THEN (SELECT opcname::text FROM pg_catalog.pg_opclass WHERE oid = $2::oid) END";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_listed_in_the_enums_order_with_distinct_codes() {
        for (i, &(kind, code, _)) in KINDS.iter().enumerate() {
            assert_eq!(kind as usize, i, "{kind:?}");
            assert_eq!(Kind::of(code), Some(kind));
            assert_eq!(kind.code(), code);
        }
    }
}

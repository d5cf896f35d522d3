//! Metadata filters: which documents a query may reach, and so which of
//! their passages and which clusters above them.
//!
//! A [`Filter`] is a list of conditions that must all hold on a document's
//! metadata (the extra fields of its source record, a JSON object). Each
//! condition names a field (`a.b` reaches into nested objects when no field
//! is called `a.b`) and tests it:
//!
//! | test | CLI (`--filter`) | JSON (HTTP, Python) |
//! |---|---|---|
//! | equal | `source=wiki` | `{"source": "wiki"}` or `{"source": {"eq": "wiki"}}` |
//! | not equal (or missing) | `lang!=de` | `{"lang": {"ne": "de"}}` |
//! | one of | `tenant in [a, b]` | `{"tenant": {"in": ["a", "b"]}}` |
//! | range | `year>=2019`, `date<2024-01-01` | `{"year": {"gte": 2019, "lt": 2022}}` |
//!
//! A field holding a list matches when one of its items does. A number
//! equals the same number written as text (`"2019"`), so metadata from TSV
//! columns compares too; a range bound is a number or an ISO 8601 date
//! (`2024-01-31`, `2024-01-31T12:00:00Z`), and dates compare as text.
//! Every test but `ne` fails on a missing field.

use crate::{NodeId, NodeKind, Tree};
use fixedbitset::FixedBitSet;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Why a filter could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("filter `{clause}`: {why}")]
pub struct FilterError {
    /// The clause (CLI) or field (JSON) at fault.
    pub clause: String,
    /// What is wrong with it.
    pub why: String,
}

fn bad(clause: impl Into<String>, why: impl Into<String>) -> FilterError {
    FilterError {
        clause: clause.into(),
        why: why.into(),
    }
}

/// A range bound: a number, or an ISO 8601 date compared as text.
#[derive(Debug, Clone, PartialEq)]
enum Bound {
    Number(f64),
    Date(String),
}

/// What a condition asks of a field.
#[derive(Debug, Clone, PartialEq)]
enum Test {
    Eq(Value),
    Ne(Value),
    In(Vec<Value>),
    /// Lower and upper bounds, each with whether it is inclusive.
    Range {
        lower: Option<(Bound, bool)>,
        upper: Option<(Bound, bool)>,
    },
}

/// One field's test.
#[derive(Debug, Clone, PartialEq)]
struct Condition {
    key: String,
    test: Test,
}

/// Conditions on document metadata, all of which must hold. The empty
/// filter lets everything through.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    conditions: Vec<Condition>,
}

/// Operators of the JSON form.
const OPERATORS: &str = "eq, ne, in, gt, gte, lt, lte";
/// The most conditions a filter may have.
pub const MAX_CONDITIONS: usize = 64;
/// The most values an `in` list may have.
pub const MAX_IN_VALUES: usize = 1024;

impl Filter {
    /// The filter that lets everything through.
    pub fn none() -> Filter {
        Filter::default()
    }

    /// Whether it lets everything through.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    /// Reads CLI clauses (`key=value`, `key!=value`, `key in [a, b]`,
    /// `key>=v`, `key>v`, `key<=v`, `key<v`), all of which must hold.
    pub fn parse_clauses<S: AsRef<str>>(clauses: &[S]) -> Result<Filter, FilterError> {
        let mut filter = Filter::none();
        for clause in clauses {
            filter.conditions.push(parse_clause(clause.as_ref())?);
        }
        filter.checked()
    }

    /// Reads the JSON form: an object of field → value (equal) or field →
    /// object of operators (`eq`, `ne`, `in`, `gt`, `gte`, `lt`, `lte`).
    /// `null` is the empty filter.
    pub fn from_json(value: &Value) -> Result<Filter, FilterError> {
        let object = match value {
            Value::Null => return Ok(Filter::none()),
            Value::Object(o) => o,
            other => {
                return Err(bad(
                    other.to_string(),
                    "a filter is an object of field names to values or operators",
                ))
            }
        };
        let mut filter = Filter::none();
        for (key, spec) in object {
            if key.is_empty() {
                return Err(bad(key, "a field name is empty"));
            }
            filter.conditions.extend(json_conditions(key, spec)?);
        }
        filter.checked()
    }

    /// The filter, if within [`MAX_CONDITIONS`] and [`MAX_IN_VALUES`].
    /// This filter's conditions and `other`'s, all of which must hold.
    pub fn and(mut self, other: &Filter) -> Result<Filter, FilterError> {
        self.conditions.extend(other.conditions.iter().cloned());
        self.checked()
    }

    fn checked(self) -> Result<Filter, FilterError> {
        if self.conditions.len() > MAX_CONDITIONS {
            return Err(bad(
                format!("{} conditions", self.conditions.len()),
                format!("a filter has at most {MAX_CONDITIONS} conditions"),
            ));
        }
        for c in &self.conditions {
            if let Test::In(values) = &c.test {
                if values.len() > MAX_IN_VALUES {
                    return Err(bad(
                        &c.key,
                        format!(
                            "`in` takes at most {MAX_IN_VALUES} values, not {}",
                            values.len()
                        ),
                    ));
                }
            }
        }
        Ok(self)
    }

    /// Whether a document with this metadata passes.
    pub fn matches(&self, metadata: Option<&Map<String, Value>>) -> bool {
        self.conditions.iter().all(|c| c.holds(metadata))
    }
}

impl std::fmt::Display for Filter {
    /// The JSON form, for logs and cache keys.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .conditions
            .iter()
            .map(|c| format!("{}: {}", Value::from(c.key.as_str()), c.test.json()))
            .collect();
        write!(f, "[{}]", parts.join(", "))
    }
}

fn json_conditions(key: &str, spec: &Value) -> Result<Vec<Condition>, FilterError> {
    let condition = |test| Condition {
        key: key.to_string(),
        test,
    };
    let ops = match spec {
        Value::Object(ops) => ops,
        Value::Array(_) => {
            return Err(bad(
                key,
                "a list is not a value; ask for one of several with {\"in\": [...]}",
            ))
        }
        scalar => return Ok(vec![condition(Test::Eq(scalar.clone()))]),
    };
    if ops.is_empty() {
        return Err(bad(key, format!("no operator; use one of {OPERATORS}")));
    }
    let mut out = Vec::new();
    let (mut lower, mut upper) = (None, None);
    for (op, value) in ops {
        let scalar = || match value {
            Value::Object(_) | Value::Array(_) => Err(bad(
                key,
                format!("`{op}` takes a number, text or true/false"),
            )),
            v => Ok(v.clone()),
        };
        match op.as_str() {
            "eq" => out.push(condition(Test::Eq(scalar()?))),
            "ne" => out.push(condition(Test::Ne(scalar()?))),
            "in" => match value {
                Value::Array(items) if items.iter().all(|v| !v.is_object() && !v.is_array()) => {
                    out.push(condition(Test::In(items.clone())))
                }
                _ => {
                    return Err(bad(
                        key,
                        "`in` takes a list of numbers, texts or true/false",
                    ))
                }
            },
            "gt" | "gte" => set_bound(&mut lower, key, op, value, op == "gte")?,
            "lt" | "lte" => set_bound(&mut upper, key, op, value, op == "lte")?,
            other => {
                return Err(bad(
                    key,
                    format!("unknown operator `{other}`; use one of {OPERATORS}"),
                ))
            }
        }
    }
    if lower.is_some() || upper.is_some() {
        out.push(condition(range(key, lower, upper)?));
    }
    Ok(out)
}

fn set_bound(
    slot: &mut Option<(Bound, bool)>,
    key: &str,
    op: &str,
    value: &Value,
    inclusive: bool,
) -> Result<(), FilterError> {
    if slot.is_some() {
        return Err(bad(key, "two lower (or two upper) bounds"));
    }
    if let Value::String(s) = value {
        if date_shaped(s) && !is_date(s) {
            return Err(bad(
                key,
                format!("`{s}` is not a calendar date (month 01–12, a day the month has)"),
            ));
        }
    }
    let bound = match value {
        Value::Number(n) => n.as_f64().map(Bound::Number),
        Value::String(s) if is_date(s) => Some(Bound::Date(s.clone())),
        _ => None,
    }
    .ok_or_else(|| bad(key, format!("`{op}` takes a number or an ISO 8601 date")))?;
    *slot = Some((bound, inclusive));
    Ok(())
}

/// A range test, its bounds of one kind (numbers or dates).
fn range(
    key: &str,
    lower: Option<(Bound, bool)>,
    upper: Option<(Bound, bool)>,
) -> Result<Test, FilterError> {
    if let (Some((a, _)), Some((b, _))) = (&lower, &upper) {
        if std::mem::discriminant(a) != std::mem::discriminant(b) {
            return Err(bad(key, "one bound is a number and the other a date"));
        }
    }
    Ok(Test::Range { lower, upper })
}

/// Shaped as `YYYY-MM-DD`, alone or followed by a time (`T…` or ` …`).
fn date_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && matches!(b.get(10), None | Some(b'T' | b't' | b' '))
}

/// A real calendar date `YYYY-MM-DD` (optionally followed by a time):
/// `2023-13-45` and `2023-02-30` are not. A metadata value that is not one
/// never matches a date range.
pub fn is_date(s: &str) -> bool {
    if !date_shaped(s) {
        return false;
    }
    let number = |r: std::ops::Range<usize>| s.get(r).and_then(|d| d.parse::<u32>().ok());
    let (Some(year), Some(month), Some(day)) = (number(0..4), number(5..7), number(8..10)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// The operators of a clause, longest first.
const CLAUSE_OPERATORS: [&str; 6] = ["!=", ">=", "<=", "=", ">", "<"];

fn parse_clause(clause: &str) -> Result<Condition, FilterError> {
    let text = clause.trim();
    if let Some((key, list)) = split_in(text) {
        let inner = list
            .trim()
            .strip_prefix('[')
            .and_then(|l| l.strip_suffix(']'))
            .ok_or_else(|| bad(clause, "`in` takes a list in brackets: `key in [a, b]`"))?;
        let items: Vec<Value> = inner
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(clause_value)
            .collect();
        return Ok(Condition {
            key: clause_key(clause, key)?,
            test: Test::In(items),
        });
    }
    let (at, op) = text
        .char_indices()
        .find_map(|(i, _)| {
            CLAUSE_OPERATORS
                .iter()
                .find(|op| text[i..].starts_with(**op))
                .map(|op| (i, *op))
        })
        .ok_or_else(|| {
            bad(
                clause,
                "no operator; write key=value, key!=value, key in [a, b], key>=v, key>v, key<=v or key<v",
            )
        })?;
    let key = clause_key(clause, &text[..at])?;
    let raw = text[at + op.len()..].trim();
    if raw.is_empty() {
        return Err(bad(clause, "no value after the operator"));
    }
    if let Some(extra) = raw
        .chars()
        .next()
        .filter(|c| matches!(c, '=' | '<' | '>' | '!'))
    {
        return Err(bad(
            clause,
            format!(
                "`{op}{extra}` is not an operator; write key=value, key!=value, key>=v, key>v, key<=v or key<v"
            ),
        ));
    }
    let value = clause_value(raw);
    let test = match op {
        "=" => Test::Eq(value),
        "!=" => Test::Ne(value),
        _ => {
            let mut slot = None;
            let inclusive = op.ends_with('=');
            set_bound(&mut slot, clause, op, &value, inclusive)?;
            if op.starts_with('>') {
                range(clause, slot, None)?
            } else {
                range(clause, None, slot)?
            }
        }
    };
    Ok(Condition { key, test })
}

/// `key in [...]`: the key and the list text.
fn split_in(text: &str) -> Option<(&str, &str)> {
    let at = text.find(" in ")?;
    let key = &text[..at];
    (!key.contains(['=', '<', '>'])).then(|| (key, &text[at + 4..]))
}

fn clause_key(clause: &str, key: &str) -> Result<String, FilterError> {
    let key = key.trim();
    if key.is_empty() {
        return Err(bad(clause, "no field name before the operator"));
    }
    Ok(key.to_string())
}

/// A CLI value: quoted text, a JSON number or `true`/`false`, else text.
fn clause_value(raw: &str) -> Value {
    if let Some(inner) = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
    {
        return Value::from(inner);
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ (Value::Number(_) | Value::Bool(_))) => v,
        _ => Value::from(raw),
    }
}

impl Test {
    fn json(&self) -> Value {
        let bound = |b: &Bound| match b {
            Bound::Number(n) => Value::from(*n),
            Bound::Date(d) => Value::from(d.as_str()),
        };
        let mut ops = Map::new();
        match self {
            Test::Eq(v) => drop(ops.insert("eq".into(), v.clone())),
            Test::Ne(v) => drop(ops.insert("ne".into(), v.clone())),
            Test::In(v) => drop(ops.insert("in".into(), Value::from(v.clone()))),
            Test::Range { lower, upper } => {
                if let Some((b, inc)) = lower {
                    ops.insert(if *inc { "gte" } else { "gt" }.into(), bound(b));
                }
                if let Some((b, inc)) = upper {
                    ops.insert(if *inc { "lte" } else { "lt" }.into(), bound(b));
                }
            }
        }
        Value::Object(ops)
    }
}

impl Condition {
    fn holds(&self, metadata: Option<&Map<String, Value>>) -> bool {
        let field = metadata.and_then(|m| lookup(m, &self.key));
        let any = |f: &dyn Fn(&Value) -> bool| match field {
            None | Some(Value::Null) => false,
            Some(Value::Array(items)) => items.iter().any(f),
            Some(v) => f(v),
        };
        match &self.test {
            Test::Eq(want) => any(&|v| same(v, want)),
            Test::Ne(want) => !any(&|v| same(v, want)),
            Test::In(wants) => any(&|v| wants.iter().any(|w| same(v, w))),
            Test::Range { lower, upper } => any(&|v| within(v, lower, upper)),
        }
    }
}

/// A field by name, or by a dotted path into nested objects.
fn lookup<'a>(metadata: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if let Some(v) = metadata.get(key) {
        return Some(v);
    }
    let mut parts = key.split('.');
    let mut at = metadata.get(parts.next()?)?;
    for part in parts {
        at = at.as_object()?.get(part)?;
    }
    Some(at)
}

/// Equal values; a number equals the same number as text, `true` equals `"true"`.
fn same(field: &Value, want: &Value) -> bool {
    match (field, want) {
        (Value::Number(_), Value::Number(_)) => as_number(field) == as_number(want),
        (Value::String(s), Value::Number(_)) | (Value::Number(_), Value::String(s)) => {
            let other = if field.is_number() { field } else { want };
            s.trim().parse::<f64>().ok() == as_number(other)
        }
        (Value::String(s), Value::Bool(b)) | (Value::Bool(b), Value::String(s)) => s
            .trim()
            .eq_ignore_ascii_case(if *b { "true" } else { "false" }),
        _ => field == want,
    }
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

fn within(v: &Value, lower: &Option<(Bound, bool)>, upper: &Option<(Bound, bool)>) -> bool {
    let side = |b: &Option<(Bound, bool)>, above: bool| {
        let Some((bound, inclusive)) = b else {
            return true;
        };
        let order = match bound {
            Bound::Number(x) => as_number(v).and_then(|y| y.partial_cmp(x)),
            Bound::Date(d) => v.as_str().filter(|s| is_date(s)).map(|s| s.cmp(d.as_str())),
        };
        match order {
            Some(std::cmp::Ordering::Equal) => *inclusive,
            Some(std::cmp::Ordering::Greater) => above,
            Some(std::cmp::Ordering::Less) => !above,
            None => false,
        }
    };
    side(lower, true) && side(upper, false)
}

/// The nodes a filter lets through: matching documents, their passages,
/// and every cluster above one of them (and the root).
#[derive(Debug, Clone)]
pub struct Allowed {
    nodes: FixedBitSet,
    passages: usize,
}

impl Allowed {
    /// Whether the node may be judged or returned.
    pub fn contains(&self, id: NodeId) -> bool {
        self.nodes.contains(id.index())
    }

    /// How many passages pass.
    pub fn passages(&self) -> usize {
        self.passages
    }
}

/// The tree's document metadata, parsed once, for filtering.
#[derive(Debug, Default)]
pub struct MetadataTable {
    by_document: HashMap<NodeId, Map<String, Value>>,
    /// Every field some document carries.
    fields: std::collections::BTreeSet<String>,
}

impl MetadataTable {
    /// Parses every document node's metadata (text that is not a JSON
    /// object counts as none).
    pub fn of(tree: &Tree) -> MetadataTable {
        let by_document = tree
            .documents()
            .filter_map(|id| {
                let NodeKind::Document {
                    metadata: Some(m), ..
                } = &tree.get(id)?.kind
                else {
                    return None;
                };
                match serde_json::from_str::<Value>(m) {
                    Ok(Value::Object(o)) => Some((id, o)),
                    _ => None,
                }
            })
            .collect::<HashMap<NodeId, Map<String, Value>>>();
        let fields = by_document
            .values()
            .flat_map(|m| m.keys().cloned())
            .collect();
        MetadataTable {
            by_document,
            fields,
        }
    }

    /// An error for the first field `filter` names that no document
    /// carries (a typo would otherwise pass nothing, silently), with the
    /// closest field the tree has.
    pub fn check_fields(&self, filter: &Filter) -> Result<(), FilterError> {
        let Some(unknown) = filter
            .conditions
            .iter()
            .find(|c| !self.fields.contains(&c.key))
        else {
            return Ok(());
        };
        let key = &unknown.key;
        let closest = self
            .fields
            .iter()
            .map(|f| {
                (
                    strsim::damerau_levenshtein(&key.to_lowercase(), &f.to_lowercase()),
                    f,
                )
            })
            .filter(|(d, f)| *d <= 2.max(f.chars().count() / 3))
            .min();
        let hint = match closest {
            Some((_, f)) => format!("did you mean `{f}`?"),
            None if self.fields.is_empty() => "this tree's documents carry no metadata".to_string(),
            None => format!(
                "its documents carry {}",
                self.fields
                    .iter()
                    .take(12)
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Err(bad(
            key.clone(),
            format!("no document of this tree has the field `{key}`; {hint}"),
        ))
    }

    /// A document's metadata, if it has any.
    pub fn get(&self, document: NodeId) -> Option<&Map<String, Value>> {
        self.by_document.get(&document)
    }

    /// The nodes of `tree` that `filter` lets through.
    pub fn allowed(&self, tree: &Tree, filter: &Filter) -> Allowed {
        let mut nodes = FixedBitSet::with_capacity(tree.len());
        let mut passages = 0;
        for doc in tree.documents() {
            if !filter.matches(self.get(doc)) {
                continue;
            }
            nodes.insert(doc.index());
            for child in tree.children(doc) {
                nodes.insert(child.index());
                passages += 1;
            }
            let mut up = tree.get(doc).and_then(|n| n.parent);
            while let Some(p) = up {
                if nodes.put(p.index()) {
                    break;
                }
                up = tree.get(p).and_then(|n| n.parent);
            }
        }
        Allowed { nodes, passages }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn cli(clauses: &[&str]) -> Filter {
        Filter::parse_clauses(clauses).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn clauses_and_json_read_the_same_filter() {
        let pairs = [
            ("source=wiki", json!({"source": "wiki"})),
            ("lang!=de", json!({"lang": {"ne": "de"}})),
            ("tenant in [a, b]", json!({"tenant": {"in": ["a", "b"]}})),
            ("year>=2019", json!({"year": {"gte": 2019}})),
            ("date<2024-01-01", json!({"date": {"lt": "2024-01-01"}})),
            ("n=3", json!({"n": 3})),
            ("ok=true", json!({"ok": true})),
            ("name=\"a=b\"", json!({"name": "a=b"})),
        ];
        for (clause, json) in pairs {
            let a = cli(&[clause]);
            let b = Filter::from_json(&json).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(a.to_string(), b.to_string(), "{clause}");
        }
    }

    #[test]
    fn tests_hold_as_documented() {
        let doc = meta(json!({
            "source": "wiki", "year": 2020, "tags": ["a", "b"], "date": "2023-05-01",
            "tsv_year": "2018", "author": {"name": "Ada"}, "flag": "true"
        }));
        let yes = [
            vec!["source=wiki"],
            vec!["year>=2020", "year<2021"],
            vec!["tags=b"],
            vec!["tags in [x, a]"],
            vec!["date>=2023-01-01", "date<2023-06-01"],
            vec!["tsv_year=2018", "tsv_year<2019"],
            vec!["author.name=Ada"],
            vec!["missing!=x"],
            vec!["flag=true"],
            vec!["year=2020.0"],
        ];
        for clauses in yes {
            assert!(cli(&clauses).matches(Some(&doc)), "{clauses:?}");
        }
        let no = [
            vec!["source=news"],
            vec!["year>2020"],
            vec!["tags!=a"],
            vec!["missing=x"],
            vec!["date>2023-05-01"],
            vec!["source>=2000"],
            vec!["source=wiki", "year<2000"],
        ];
        for clauses in no {
            assert!(!cli(&clauses).matches(Some(&doc)), "{clauses:?}");
        }
        assert!(Filter::none().matches(None));
        assert!(!cli(&["source=wiki"]).matches(None));
        assert!(cli(&["source!=wiki"]).matches(None));
    }

    #[test]
    fn dates_are_calendar_dates() {
        for ok in [
            "2024-02-29",
            "2000-02-29",
            "2023-12-31T23:59:59Z",
            "2023-01-01 10:00",
        ] {
            assert!(is_date(ok), "{ok}");
        }
        for bad in [
            "2023-02-29",
            "1900-02-29",
            "2023-13-01",
            "2023-00-10",
            "2023-04-31",
            "2023-01-00",
            "2023-1-01",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
        // A metadata value that is no date never matches a date range.
        let f = cli(&["date>=2023-01-01"]);
        let meta = |d: &str| json!({ "date": d }).as_object().cloned().expect("object");
        assert!(f.matches(Some(&meta("2023-05-01"))));
        assert!(!f.matches(Some(&meta("2023-13-45"))));
    }

    #[test]
    fn bad_filters_say_what_is_wrong() {
        for (clause, says) in [
            ("source", "no operator"),
            ("=wiki", "no field name"),
            ("year>=", "no value"),
            ("year>=recent", "number or an ISO 8601 date"),
            ("year=>2019", "`=>` is not an operator"),
            ("year==2019", "`==` is not an operator"),
            ("year<>2019", "`<>` is not an operator"),
            ("date>=2023-13-45", "not a calendar date"),
            ("date<2023-02-30", "not a calendar date"),
            ("tenant in a, b", "in brackets"),
        ] {
            let e = Filter::parse_clauses(&[clause]).expect_err(clause);
            assert!(e.to_string().contains(says), "{clause}: {e}");
        }
        for (json, says) in [
            (json!(["a"]), "object of field names"),
            (json!({"a": {"like": 1}}), "unknown operator `like`"),
            (json!({"a": [1, 2]}), "{\"in\": [...]}"),
            (json!({"a": {}}), "no operator"),
            (
                json!({"a": {"gte": 1, "lt": "2020-01-01"}}),
                "a number and the other a date",
            ),
            (json!({"a": {"in": [{"x": 1}]}}), "`in` takes a list"),
            (json!({"": 1}), "field name is empty"),
        ] {
            let e = Filter::from_json(&json).expect_err(&json.to_string());
            assert!(e.to_string().contains(says), "{json}: {e}");
        }
        assert_eq!(Filter::from_json(&Value::Null), Ok(Filter::none()));
        let many: Map<String, Value> = (0..=MAX_CONDITIONS)
            .map(|i| (format!("k{i}"), json!(i)))
            .collect();
        let e = Filter::from_json(&Value::Object(many)).expect_err("too many");
        assert!(e.to_string().contains("at most 64 conditions"), "{e}");
        let long: Vec<usize> = (0..=MAX_IN_VALUES).collect();
        let e = Filter::from_json(&json!({"k": {"in": long}})).expect_err("too long");
        assert!(e.to_string().contains("at most 1024 values"), "{e}");
    }
}

//! `treenav query T --queries FILE|-`: many queries through one loaded
//! tree and judge, one JSON line answered per query, in input order.
//!
//! A line is a query as text, or a JSON object: `query` (or BEIR's
//! `text`), optional `id` (or `_id`; the line number otherwise) and
//! `filter` (the JSON form, joined to `--filter`); BEIR's `metadata` is
//! read and ignored, any other field refused. Every line is checked
//! before the first query runs; a query that fails gets a line with its
//! `error` and the exit status says how many failed.

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use std::io::{BufRead, Read};
use std::path::Path;
use treenav::navigator::Navigator;
use treenav::tree::filter::Filter;

/// The longest line of a queries file.
const MAX_LINE: u64 = 64 * 1024;
/// The most queries one batch reads.
const MAX_QUERIES: usize = 1_000_000;

/// One query of a batch.
#[derive(Debug)]
pub struct Query {
    pub id: String,
    pub text: String,
    pub filter: Filter,
}

/// A JSON line of a queries file.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    #[serde(alias = "_id")]
    id: Option<serde_json::Value>,
    #[serde(alias = "text")]
    query: Option<String>,
    filter: Option<serde_json::Value>,
    /// BEIR's queries carry it; nothing in it applies to a search.
    #[serde(rename = "metadata")]
    _metadata: Option<serde_json::Value>,
}

/// Reads every query of `path` (`-`: stdin), checked, before any runs.
pub fn read_queries(path: &Path) -> Result<Vec<Query>> {
    let name = if path == Path::new("-") {
        "stdin".to_string()
    } else {
        path.display().to_string()
    };
    let input: Box<dyn BufRead> = if path == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        let file = std::fs::File::open(path).with_context(|| format!("--queries {name}"))?;
        Box::new(std::io::BufReader::new(file))
    };
    let queries = read_from(input, &name)?;
    if queries.is_empty() {
        bail!("{name} holds no query (one per line, or JSON lines with `query`)");
    }
    Ok(queries)
}

fn read_from(mut input: Box<dyn BufRead>, name: &str) -> Result<Vec<Query>> {
    let mut queries = Vec::new();
    let mut raw = Vec::new();
    for number in 1.. {
        raw.clear();
        let read = input
            .by_ref()
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut raw)
            .with_context(|| format!("{name}:{number}: cannot read"))?;
        if read == 0 {
            break;
        }
        if raw.len() as u64 > MAX_LINE {
            bail!("{name}:{number}: a line longer than {MAX_LINE} bytes");
        }
        let text = std::str::from_utf8(&raw)
            .map_err(|_| anyhow::anyhow!("{name}:{number}: not UTF-8"))?
            .trim();
        if text.is_empty() {
            continue;
        }
        if queries.len() == MAX_QUERIES {
            bail!("{name}: more than {MAX_QUERIES} queries; split the file");
        }
        let query =
            parse_line(text, number).map_err(|e| anyhow::anyhow!("{name}:{number}: {e}"))?;
        queries.push(query);
    }
    Ok(queries)
}

/// One non-blank line: a JSON object (it opens with a brace, `\x7b`), or
/// the query itself.
fn parse_line(text: &str, number: usize) -> std::result::Result<Query, String> {
    if !text.starts_with('\x7b') {
        return Ok(Query {
            id: number.to_string(),
            text: text.to_string(),
            filter: Filter::none(),
        });
    }
    let line: Line = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let query = line
        .query
        .filter(|q| !q.trim().is_empty())
        .ok_or("field `query`: missing or empty")?;
    let id = match line.id {
        None => number.to_string(),
        Some(serde_json::Value::String(s)) if !s.is_empty() => s,
        Some(serde_json::Value::Number(n)) => n.to_string(),
        Some(other) => return Err(format!("field `id`: {other} is not a string or a number")),
    };
    let filter = match line.filter {
        None => Filter::none(),
        Some(f) => Filter::from_json(&f).map_err(|e| format!("field `filter`: {e}"))?,
    };
    Ok(Query {
        id,
        text: query,
        filter,
    })
}

/// A batch run over one navigator.
pub struct Batch<'a> {
    pub navigator: &'a Navigator,
    /// `--filter`, joined to each query's own.
    pub filter: &'a Filter,
    pub concurrency: usize,
    /// The tree's name in each answer.
    pub tree: &'a str,
    pub generation: u64,
    /// Whether each answer carries its trace.
    pub trace: bool,
}

impl Batch<'_> {
    /// Runs every query, at most `concurrency` at once, and prints one JSON
    /// line per query as soon as those before it are printed.
    pub async fn run(&self, queries: Vec<Query>) -> Result<()> {
        let total = queries.len();
        let bars = crate::progress::Bars::new(false);
        treenav::tree::Progress::stage(&bars, "queries", total as u64);
        let mut answers = futures::stream::iter(queries.iter())
            .map(|q| async move { (q, self.answer(q).await) })
            .buffered(self.concurrency);
        let mut failed = 0;
        while let Some((q, answer)) = answers.next().await {
            let line = match answer {
                Ok(found) => serde_json::to_value(found)?,
                Err(e) => {
                    failed += 1;
                    serde_json::json!({"id": q.id, "query": q.text, "error": e})
                }
            };
            crate::emit(&crate::json_line(&line)?)?;
            treenav::tree::Progress::inc(&bars, 1);
        }
        bars.finish();
        if failed > 0 {
            bail!("{failed} of {total} queries failed (their lines carry `error`)");
        }
        Ok(())
    }

    /// The service's answer for one query, with the query's id first.
    async fn answer(&self, q: &Query) -> std::result::Result<Answer, String> {
        let filter = self
            .filter
            .clone()
            .and(&q.filter)
            .map_err(|e| e.to_string())?;
        let found = self
            .navigator
            .retrieve_filtered(&q.text, &filter)
            .await
            .map_err(|e| format!("navigation failed: {e}"))?;
        Ok(Answer {
            id: q.id.clone(),
            found: treenav::serve::api::RetrieveResponse::new(
                self.tree,
                found,
                self.trace,
                self.generation,
            ),
        })
    }
}

/// One line of a batch's output: the query's id, then the service's answer.
#[derive(serde::Serialize)]
struct Answer {
    id: String,
    #[serde(flatten)]
    found: treenav::serve::api::RetrieveResponse,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<Query>> {
        read_from(Box::new(std::io::Cursor::new(text.to_string())), "q.jsonl")
    }

    #[test]
    fn lines_are_queries_or_json_objects_with_ids_and_filters() {
        let queries = read(concat!(
            "what is insulin\n",
            "\n",
            r#"{"_id": "q7", "text": "sky on Mars", "metadata": {}}"#,
            "\n",
            r#"{"id": 12, "query": "rotate keys", "filter": {"team": "ops"}}"#,
            "\n"
        ))
        .expect("read");
        let got: Vec<(&str, &str, bool)> = queries
            .iter()
            .map(|q| (q.id.as_str(), q.text.as_str(), q.filter.is_empty()))
            .collect();
        assert_eq!(
            got,
            [
                ("1", "what is insulin", true),
                ("q7", "sky on Mars", true),
                ("12", "rotate keys", false)
            ]
        );
    }

    #[test]
    fn a_bad_line_is_named_by_file_line_and_field() {
        for (text, says) in [
            ("ok\n{\"query\": \"\"}\n", "q.jsonl:2: field `query`"),
            (
                "{\"query\": \"a\", \"top\": 3}\n",
                "q.jsonl:1: unknown field `top`",
            ),
            ("{\"query\": \"a\", \"id\": [1]}\n", "q.jsonl:1: field `id`"),
            (
                "a\nb\n{\"query\": \"a\", \"filter\": {\"year\": {\"gt\": \"2023-02-30\"}}}\n",
                "q.jsonl:3: field `filter`",
            ),
            ("{\"query\": \"a\"\n", "q.jsonl:1:"),
        ] {
            let e = read(text).expect_err(text).to_string();
            assert!(e.starts_with(says), "{text:?}: {e}");
        }
        let long = "x".repeat(MAX_LINE as usize + 10);
        let e = read(&long).expect_err("long").to_string();
        assert!(e.contains("longer than"), "{e}");
    }
}

//! Benchmark datasets: a corpus, queries, and each query's gold.
//!
//! * **SQuAD v1.1 JSON** (`data[].title`, `data[].paragraphs[].context`,
//!   `…qas[].{id, question}`): a title is a document, a paragraph a passage,
//!   and a question's gold is its paragraph ([`GoldLevel::Passage`]).
//! * **BEIR folder** (`corpus.jsonl`, `queries.jsonl`, `qrels/{split}.tsv`):
//!   documents are chunked into passages; gold is a set of documents
//!   ([`GoldLevel::Document`]): a hit is a passage from a gold document.
//!
//! [`load`] detects the format from the path. Bad records are errors that
//! name the file and line.

use crate::{Error, Result};
use rand::seq::index::sample;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use treenav_corpus::Problem;
use treenav_corpus::{squad_passage_id, Corpus, Format, LoadOptions};

/// What a query's gold names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoldLevel {
    /// Passage ids (SQuAD: the question's paragraph).
    Passage,
    /// Document ids (BEIR qrels).
    Document,
}

/// A dataset's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetFormat {
    /// SQuAD v1.1 JSON.
    Squad,
    /// A BEIR folder.
    Beir,
}

/// One query and its gold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Query {
    /// Its id.
    pub id: String,
    /// Its text.
    pub text: String,
    /// Gold passage ids or document ids (see [`Dataset::gold_level`]); never empty.
    pub gold: Vec<String>,
}

/// A loaded benchmark.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Where it came from.
    pub path: PathBuf,
    /// A short name (the file stem or folder name).
    pub name: String,
    /// Its format.
    pub format: DatasetFormat,
    /// The BEIR split read, if any.
    pub split: Option<String>,
    /// The corpus, passages as the tree and every baseline see them.
    pub corpus: Corpus,
    /// The queries, in file order.
    pub queries: Vec<Query>,
    /// What the gold names.
    pub gold_level: GoldLevel,
    /// Queries in the file before any sampling.
    pub queries_total: usize,
    /// Qrels lines naming a document or query the files lack (skipped).
    pub dangling_qrels: usize,
}

/// Options of [`load`].
#[derive(Debug, Clone)]
pub struct DatasetOptions {
    /// BEIR split (`qrels/{split}.tsv`). By default, `test`.
    pub split: String,
    /// Word budget of a passage when chunking BEIR documents. By default, 128.
    pub passage_words: usize,
    /// Skip bad corpus records (duplicate ids, malformed lines) and go on,
    /// as `treenav build --skip-bad` does, instead of stopping at the first.
    /// Skipped records are listed in the corpus's `skipped`. By default, off.
    pub skip_bad: bool,
}

impl Default for DatasetOptions {
    fn default() -> Self {
        DatasetOptions {
            split: "test".into(),
            passage_words: treenav_corpus::chunk::DEFAULT_PASSAGE_WORDS,
            skip_bad: false,
        }
    }
}

/// Reads a data set file: a regular file only (never a FIFO or a device).
fn read(path: &Path) -> Result<Vec<u8>> {
    let kind = treenav_files::Kind::new("data set file", 64 << 30);
    treenav_files::read(path, &kind).map_err(|e| {
        Error::Corpus(treenav_corpus::Error::Io {
            path: path.to_path_buf(),
            source: e.into_io(),
        })
    })
}

/// Detects the format: a folder (or a `corpus.jsonl` in one) with
/// `queries.jsonl` is BEIR; a `.json` file is SQuAD.
pub fn detect(path: &Path) -> Result<(DatasetFormat, PathBuf)> {
    let dir = if path.is_file() && path.file_name().is_some_and(|n| n == "corpus.jsonl") {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        path.to_path_buf()
    };
    if dir.is_dir() {
        if dir.join("corpus.jsonl").is_file() && dir.join("queries.jsonl").is_file() {
            return Ok((DatasetFormat::Beir, dir));
        }
        return Err(Error::Dataset {
            path: path.to_path_buf(),
            problem: "a BEIR folder needs corpus.jsonl, queries.jsonl and qrels/{split}.tsv".into(),
        });
    }
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        if !path.is_file() {
            return Err(Error::Dataset {
                path: path.to_path_buf(),
                problem: "no such file".into(),
            });
        }
        return Ok((DatasetFormat::Squad, path.to_path_buf()));
    }
    Err(Error::Dataset {
        path: path.to_path_buf(),
        problem: "not a dataset: expected SQuAD v1.1 JSON (.json) or a BEIR folder".into(),
    })
}

/// Loads a dataset, detecting its format from the path.
pub fn load(path: &Path, options: &DatasetOptions) -> Result<Dataset> {
    let (format, path) = detect(path)?;
    match format {
        DatasetFormat::Squad => load_squad(&path),
        DatasetFormat::Beir => load_beir(&path, options),
    }
}

impl Dataset {
    /// Leaves out the queries whose ids are in `ids` (e.g. those a fit was
    /// made on); how many were left out.
    pub fn exclude(&mut self, ids: &HashSet<String>) -> usize {
        let before = self.queries.len();
        self.queries.retain(|q| !ids.contains(&q.id));
        before - self.queries.len()
    }

    /// Keeps a seeded random sample of `n` queries (in file order); all when
    /// `n` is at least the count. The same seed gives the same sample.
    pub fn sample(&mut self, n: usize, seed: u64) {
        if n >= self.queries.len() {
            return;
        }
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut picked = sample(&mut rng, self.queries.len(), n).into_vec();
        picked.sort_unstable();
        let queries = std::mem::take(&mut self.queries);
        let keep: HashSet<usize> = picked.into_iter().collect();
        self.queries = queries
            .into_iter()
            .enumerate()
            .filter(|(i, _)| keep.contains(i))
            .map(|(_, q)| q)
            .collect();
    }

    /// Passage-text statistics for the lexical judge (as the navigator
    /// computes them from its tree).
    pub fn corpus_stats(&self) -> std::sync::Arc<treenav_judge::CorpusStats> {
        std::sync::Arc::new(treenav_judge::CorpusStats::from_texts(
            self.corpus
                .documents
                .iter()
                .flat_map(|d| d.passages.iter().map(|p| p.text.as_str())),
        ))
    }

    /// Passage id → document id, over the whole corpus.
    pub fn passage_documents(&self) -> HashMap<&str, &str> {
        self.corpus
            .documents
            .iter()
            .flat_map(|d| {
                d.passages
                    .iter()
                    .map(move |p| (p.id.as_str(), d.id.as_str()))
            })
            .collect()
    }
}

/// A SQuAD file, parsed once (the corpus owns the schema): its paragraphs
/// are the passages, each question's gold its paragraph.
fn load_squad(path: &Path) -> Result<Dataset> {
    let (corpus, file) = treenav_corpus::squad::load_with_questions(path)?;
    let passages: HashSet<&str> = corpus
        .documents
        .iter()
        .flat_map(|d| d.passages.iter().map(|p| p.id.as_str()))
        .collect();
    let mut queries = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (i, article) in file.data.iter().enumerate() {
        for (j, paragraph) in article.paragraphs.iter().enumerate() {
            let gold = squad_passage_id(&article.title, j);
            for (k, qa) in paragraph.qas.iter().enumerate() {
                let at = || format!("data[{i}].paragraphs[{j}].qas[{k}]");
                let bad = |problem: String| Error::Dataset {
                    path: path.to_path_buf(),
                    problem: format!("{}: {problem}", at()),
                };
                let Some(id) = &qa.id else {
                    return Err(bad("missing field `id`".into()));
                };
                let question = qa.question.as_deref().unwrap_or_default();
                if question.trim().is_empty() {
                    return Err(bad(format!("empty question (id `{id}`)")));
                }
                if !passages.contains(gold.as_str()) {
                    return Err(bad("its paragraph has no text".into()));
                }
                if !seen.insert(id.clone()) {
                    return Err(bad(format!("duplicate question id `{id}`")));
                }
                queries.push(Query {
                    id: id.clone(),
                    text: question.trim().to_string(),
                    gold: vec![gold.clone()],
                });
            }
        }
    }
    if queries.is_empty() {
        return Err(Error::Dataset {
            path: path.to_path_buf(),
            problem: "no question found (qas are empty)".into(),
        });
    }
    Ok(Dataset {
        name: stem(path),
        path: path.to_path_buf(),
        format: DatasetFormat::Squad,
        split: None,
        corpus,
        queries_total: queries.len(),
        queries,
        gold_level: GoldLevel::Passage,
        dangling_qrels: 0,
    })
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .or_else(|| path.file_name())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dataset".into())
}

/// A bad record of a dataset file, at a 1-based line.
fn record(path: &Path, line: usize, problem: Problem) -> Error {
    Error::Corpus(treenav_corpus::Error::Record {
        path: path.to_path_buf(),
        line,
        problem,
    })
}

/// Non-blank lines with their 1-based numbers; invalid UTF-8 is an error.
fn text_lines(path: &Path, bytes: &[u8]) -> Result<Vec<(usize, String)>> {
    let mut out = Vec::new();
    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let line = std::str::from_utf8(raw)
            .map_err(|e| record(path, i + 1, Problem::InvalidUtf8(e.valid_up_to())))?;
        if !line.trim().is_empty() {
            out.push((i + 1, line.to_string()));
        }
    }
    Ok(out)
}

fn load_beir(dir: &Path, options: &DatasetOptions) -> Result<Dataset> {
    let qrels_path = dir.join("qrels").join(format!("{}.tsv", options.split));
    if !qrels_path.is_file() {
        return Err(missing_split(dir, qrels_path, &options.split));
    }
    let corpus = treenav_corpus::load(
        &dir.join("corpus.jsonl"),
        Format::Beir,
        &LoadOptions {
            skip_bad: options.skip_bad,
            passage_words: options.passage_words,
        },
    )?;
    let documents: HashSet<&str> = corpus.documents.iter().map(|d| d.id.as_str()).collect();
    let (mut texts, order) = beir_queries(&dir.join("queries.jsonl"))?;
    let (mut gold, dangling) = beir_qrels(&qrels_path, &texts, &documents)?;
    let queries: Vec<Query> = order
        .into_iter()
        .filter_map(|id| {
            let g = gold.remove(&id)?;
            let (_, text) = texts.remove(&id)?;
            Some(Query { id, text, gold: g })
        })
        .collect();
    if queries.is_empty() {
        return Err(Error::Dataset {
            path: qrels_path,
            problem: "no query has a relevant document in this split".into(),
        });
    }
    Ok(Dataset {
        name: stem(dir),
        path: dir.to_path_buf(),
        format: DatasetFormat::Beir,
        split: Some(options.split.clone()),
        corpus,
        queries_total: queries.len(),
        queries,
        gold_level: GoldLevel::Document,
        dangling_qrels: dangling,
    })
}

/// The error for a split without qrels, listing the splits there are.
fn missing_split(dir: &Path, qrels_path: PathBuf, split: &str) -> Error {
    let mut splits: Vec<String> = std::fs::read_dir(dir.join("qrels"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".tsv").map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    splits.sort();
    let here = if splits.is_empty() {
        "none".to_string()
    } else {
        splits.join(", ")
    };
    Error::Dataset {
        path: qrels_path,
        problem: format!("no qrels for split `{split}` (splits here: {here})"),
    }
}

/// Query id → (line, text), and the ids in file order.
type BeirQueries = (HashMap<String, (usize, String)>, Vec<String>);

/// `queries.jsonl`: `{"_id", "text"}` per line; ids unique, texts non-empty.
fn beir_queries(path: &Path) -> Result<BeirQueries> {
    let mut texts: HashMap<String, (usize, String)> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for (line, text) in text_lines(path, &read(path)?)? {
        let bad = |problem: String| record(path, line, Problem::Judgement(problem));
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("malformed JSON: {e}")))?;
        let id = match value.get("_id") {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            Some(_) => return Err(bad("field `_id` must be a string or number".into())),
            None => return Err(bad("missing field `_id`".into())),
        };
        let query = match value.get("text") {
            Some(serde_json::Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            Some(serde_json::Value::String(_)) => {
                return Err(bad(format!("query `{id}` is empty")))
            }
            Some(_) => return Err(bad("field `text` must be a string".into())),
            None => return Err(bad("missing field `text`".into())),
        };
        if let Some((first, _)) = texts.get(&id) {
            return Err(bad(format!(
                "duplicate query id `{id}` (first on line {first})"
            )));
        }
        texts.insert(id.clone(), (line, query));
        order.push(id);
    }
    Ok((texts, order))
}

/// `qrels/{split}.tsv`: query-id, corpus-id, score, an optional header.
/// Returns each query's relevant documents (score > 0) and how many lines
/// named a query or document the files lack (skipped, with a warning).
fn beir_qrels(
    path: &Path,
    queries: &HashMap<String, (usize, String)>,
    documents: &HashSet<&str>,
) -> Result<(HashMap<String, Vec<String>>, usize)> {
    let mut gold: HashMap<String, Vec<String>> = HashMap::new();
    let mut dangling = 0;
    for (n, (line, text)) in text_lines(path, &read(path)?)?.into_iter().enumerate() {
        let cols: Vec<&str> = text.split('\t').map(str::trim).collect();
        if n == 0
            && cols
                .first()
                .is_some_and(|c| c.eq_ignore_ascii_case("query-id"))
        {
            continue;
        }
        let bad = |problem: String| record(path, line, Problem::Judgement(problem));
        if cols.len() < 3 {
            return Err(bad(format!(
                "expected 3 tab-separated columns (query-id, corpus-id, score), found {}",
                cols.len()
            )));
        }
        let score: f64 = cols[2]
            .parse()
            .map_err(|_| bad(format!("score `{}` is not a number", cols[2])))?;
        if score.is_nan() || score <= 0.0 {
            continue; // not relevant (a NaN score is no relevance either)
        }
        if !queries.contains_key(cols[0]) || !documents.contains(cols[1]) {
            dangling += 1;
            continue;
        }
        let entry = gold.entry(cols[0].to_string()).or_default();
        if !entry.iter().any(|d| d == cols[1]) {
            entry.push(cols[1].to_string());
        }
    }
    if dangling > 0 {
        tracing::warn!(
            file = %path.display(),
            dangling,
            "qrels lines name a query or document the files lack; skipped"
        );
    }
    Ok((gold, dangling))
}

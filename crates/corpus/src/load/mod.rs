//! Corpus loaders and format detection: one file per format below, the
//! shared record plumbing (line splitting, field checks, the skip sink) here.

mod beir;
mod files;
mod passages;
pub mod squad;

use beir::beir;
use files::{collect_text_files, file_document, files};
use passages::{passages_jsonl, passages_tsv};
use squad::squad;
pub use squad::squad_passage_id;

use crate::chunk::{self, DEFAULT_PASSAGE_WORDS};
use crate::{Corpus, Document, Error, Passage, Problem, Result, Skipped};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The corpus formats treenav reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A BEIR folder (with `corpus.jsonl`) or a `corpus.jsonl` file:
    /// `{"_id","title","text"}` per line; other fields become metadata.
    Beir,
    /// SQuAD v1.1 JSON: a title is a document, each paragraph a passage.
    Squad,
    /// Pre-chunked passages as JSONL: `{"id","text","title"?,"doc_id"?}`,
    /// grouped into documents by `doc_id`, else by `title`.
    PassagesJsonl,
    /// Pre-chunked passages as DPR-style TSV: `id<TAB>text<TAB>title`
    /// (an `id text title` header line is allowed), grouped by title.
    PassagesTsv,
    /// A folder of `.md`/`.txt` files (or one such file): title from the
    /// first heading, else the file name; split at headings and paragraphs.
    Files,
}

impl Format {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Beir => "beir",
            Format::Squad => "squad",
            Format::PassagesJsonl => "passages-jsonl",
            Format::PassagesTsv => "passages-tsv",
            Format::Files => "files",
        }
    }

    /// Detects the format of a path from its layout, extension and first record.
    pub fn detect(path: &Path) -> Result<Format> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        if !meta.is_dir() && !meta.is_file() {
            return Err(Error::UnknownFormat {
                path: path.to_path_buf(),
                hint: "not a regular file or folder (a device or pipe)".into(),
            });
        }
        if meta.is_dir() {
            if path.join("corpus.jsonl").is_file() {
                return Ok(Format::Beir);
            }
            let mut files = Vec::new();
            collect_text_files(path, &mut files)?;
            if files.is_empty() {
                return Err(Error::UnknownFormat {
                    path: path.to_path_buf(),
                    hint: "a folder with neither corpus.jsonl nor .md/.txt files".into(),
                });
            }
            return Ok(Format::Files);
        }
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        match ext.as_str() {
            "md" | "markdown" | "txt" => Ok(Format::Files),
            "tsv" => Ok(Format::PassagesTsv),
            "json" => Ok(Format::Squad),
            "jsonl" | "ndjson" => {
                if path.file_name().and_then(|n| n.to_str()) == Some("corpus.jsonl") {
                    return Ok(Format::Beir);
                }
                let bytes = read_regular(path)?;
                let first = bytes
                    .split(|b| *b == b'\n')
                    .map(|l| String::from_utf8_lossy(l).trim().to_string())
                    .find(|l| !l.is_empty())
                    .unwrap_or_default();
                match serde_json::from_str::<Value>(&first) {
                    Ok(Value::Object(obj)) if obj.contains_key("_id") => Ok(Format::Beir),
                    Ok(Value::Object(obj)) if obj.contains_key("id") => Ok(Format::PassagesJsonl),
                    _ => Err(Error::UnknownFormat {
                        path: path.to_path_buf(),
                        hint: "first JSONL record has neither `_id` (BEIR) nor `id` (passages)"
                            .into(),
                    }),
                }
            }
            other => Err(Error::UnknownFormat {
                path: path.to_path_buf(),
                hint: format!("unknown extension `{other}`"),
            }),
        }
    }
}

impl FromStr for Format {
    type Err = Error;
    fn from_str(s: &str) -> Result<Format> {
        match s {
            "beir" => Ok(Format::Beir),
            "squad" => Ok(Format::Squad),
            "passages-jsonl" | "jsonl" => Ok(Format::PassagesJsonl),
            "passages-tsv" | "tsv" | "dpr" => Ok(Format::PassagesTsv),
            "files" | "md" | "txt" => Ok(Format::Files),
            other => Err(Error::Option(format!(
                "unknown format `{other}` (expected beir, squad, passages-jsonl, passages-tsv or files)"
            ))),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Options of a load.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Skip bad records (listing them in [`Corpus::skipped`]) instead of failing.
    /// By default, false.
    pub skip_bad: bool,
    /// Word budget of a passage for documents that are not pre-chunked.
    /// By default, 128.
    pub passage_words: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            skip_bad: false,
            passage_words: DEFAULT_PASSAGE_WORDS,
        }
    }
}

/// The largest corpus file read whole, bytes.
const CORPUS_FILE_CAP: u64 = 64 << 30;

/// What a corpus file is, for the checks on opening it.
fn corpus_kind() -> treenav_files::Kind {
    treenav_files::Kind::new("corpus input", CORPUS_FILE_CAP)
}

/// Reads a whole corpus file, refusing anything but a regular file first
/// (a device such as `/dev/zero` or a pipe is never read or waited on).
fn read_regular(p: &Path) -> Result<Vec<u8>> {
    treenav_files::read(p, &corpus_kind()).map_err(|e| Error::Io {
        path: p.to_path_buf(),
        source: e.into_io(),
    })
}

/// Loads a corpus from a path in the given format (see [`Format::detect`]).
pub fn load(path: &Path, format: Format, options: &LoadOptions) -> Result<Corpus> {
    check_options(options)?;
    let read = read_regular;
    let mut sink = Sink::new(options.skip_bad);
    let documents = match format {
        Format::Beir => {
            let file = if path.is_dir() {
                path.join("corpus.jsonl")
            } else {
                path.to_path_buf()
            };
            beir(&read(&file)?, &file, options, &mut sink)?
        }
        Format::Squad => squad(&read(path)?, path)?,
        Format::PassagesJsonl => passages_jsonl(&read(path)?, path, &mut sink)?,
        Format::PassagesTsv => passages_tsv(&read(path)?, path, &mut sink)?,
        Format::Files => files(path, options, &mut sink)?,
    };
    finish(path, documents, sink)
}

/// Gives each document of the corpus at `path` to `each`, in corpus order,
/// and returns the records skipped (with [`LoadOptions::skip_bad`]): the
/// documents [`load`] gives, with its checks and errors. A BEIR file is read
/// a line at a time, one document held at once (a corpus larger than
/// memory); the other formats group or nest records across the file and
/// are loaded whole first.
pub fn for_each_document(
    path: &Path,
    format: Format,
    options: &LoadOptions,
    mut each: impl FnMut(Document) -> Result<()>,
) -> Result<Vec<Skipped>> {
    if format != Format::Beir {
        let corpus = load(path, format, options)?;
        corpus.documents.into_iter().try_for_each(each)?;
        return Ok(corpus.skipped);
    }
    check_options(options)?;
    let file = if path.is_dir() {
        path.join("corpus.jsonl")
    } else {
        path.to_path_buf()
    };
    let mut sink = Sink::new(options.skip_bad);
    let documents = beir::each_beir(&file, options, &mut sink, &mut each)?;
    if documents == 0 {
        return finish(path, Vec::new(), sink).map(|_| Vec::new());
    }
    Ok(sink.skipped)
}

/// Loads a corpus from text already in memory; `name` stands for the file in errors.
pub fn load_str(text: &str, name: &str, format: Format, options: &LoadOptions) -> Result<Corpus> {
    load_bytes(text.as_bytes(), name, format, options)
}

/// Loads a corpus from bytes already in memory (which may be any bytes:
/// invalid UTF-8 is a record error like any other); `name` stands for the
/// file in errors.
pub fn load_bytes(
    bytes: &[u8],
    name: &str,
    format: Format,
    options: &LoadOptions,
) -> Result<Corpus> {
    check_options(options)?;
    let path = PathBuf::from(name);
    let mut sink = Sink::new(options.skip_bad);
    let documents = match format {
        Format::Beir => beir(bytes, &path, options, &mut sink)?,
        Format::Squad => squad(bytes, &path)?,
        Format::PassagesJsonl => passages_jsonl(bytes, &path, &mut sink)?,
        Format::PassagesTsv => passages_tsv(bytes, &path, &mut sink)?,
        Format::Files => {
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or(name)
                .to_string();
            match std::str::from_utf8(bytes) {
                Ok(text) => {
                    file_document(name.to_string(), &stem, text, options, &path, &mut sink)?
                        .into_iter()
                        .collect()
                }
                Err(e) => {
                    let at = e.valid_up_to();
                    let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
                    sink.bad(&path, line, Problem::InvalidUtf8(at))?;
                    Vec::new()
                }
            }
        }
    };
    finish(&path, documents, sink)
}

fn check_options(options: &LoadOptions) -> Result<()> {
    if options.passage_words == 0 {
        return Err(Error::Option("passage_words must be at least 1".into()));
    }
    Ok(())
}

fn finish(path: &Path, documents: Vec<Document>, sink: Sink) -> Result<Corpus> {
    if documents.is_empty() {
        let detail = if sink.skipped.is_empty() {
            "no documents found".to_string()
        } else {
            format!("all {} records were bad and skipped", sink.skipped.len())
        };
        return Err(Error::Empty {
            path: path.to_path_buf(),
            detail,
        });
    }
    Ok(Corpus {
        documents,
        skipped: sink.skipped,
    })
}

/// Either fails on a bad record or records it as skipped.
struct Sink {
    skip_bad: bool,
    skipped: Vec<Skipped>,
}

impl Sink {
    fn new(skip_bad: bool) -> Sink {
        Sink {
            skip_bad,
            skipped: Vec::new(),
        }
    }

    fn bad(&mut self, path: &Path, line: usize, problem: Problem) -> Result<()> {
        if self.skip_bad {
            self.skipped.push(Skipped {
                file: path.to_path_buf(),
                line: Some(line),
                problem: problem.to_string(),
            });
            Ok(())
        } else {
            Err(Error::Record {
                path: path.to_path_buf(),
                line,
                problem,
            })
        }
    }
}

/// Yields (1-based line number, line) for non-blank lines, or the line's UTF-8 problem.
fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, std::result::Result<&str, Problem>)> {
    bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .filter_map(|(i, raw)| Some((i + 1, line_text(raw)?)))
}

/// One line's text without its `\r`, or its UTF-8 problem; `None` when it
/// is blank.
fn line_text(raw: &[u8]) -> Option<std::result::Result<&str, Problem>> {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let line = std::str::from_utf8(raw).map_err(|e| Problem::InvalidUtf8(e.valid_up_to()));
    (!matches!(line, Ok(s) if s.trim().is_empty())).then_some(line)
}

/// A record's extra fields as metadata: a `metadata` object's fields are
/// lifted beside the others (a field of the record itself wins).
fn lift_metadata(mut obj: Map<String, Value>) -> Map<String, Value> {
    if let Some(Value::Object(inner)) = obj.get("metadata") {
        let inner = inner.clone();
        obj.remove("metadata");
        for (k, v) in inner {
            obj.entry(k).or_insert(v);
        }
    }
    obj
}

fn parse_object(line: &str) -> std::result::Result<Map<String, Value>, Problem> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(obj)) => Ok(obj),
        Ok(_) => Err(Problem::Json("expected a JSON object".into())),
        Err(e) => Err(Problem::Json(e.to_string())),
    }
}

/// An id field: a string, or a number written as a string.
fn id_field(
    obj: &mut Map<String, Value>,
    field: &'static str,
) -> std::result::Result<Option<String>, Problem> {
    match obj.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s)),
        Some(Value::String(_)) => Err(Problem::WrongType {
            field,
            expected: "a non-empty string",
        }),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(Problem::WrongType {
            field,
            expected: "a string or a number",
        }),
    }
}

fn text_field(
    obj: &mut Map<String, Value>,
    field: &'static str,
) -> std::result::Result<Option<String>, Problem> {
    match obj.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Problem::WrongType {
            field,
            expected: "a string",
        }),
    }
}

fn chunked_passages(doc_id: &str, title: &str, text: &str, words: usize) -> Vec<Passage> {
    let mut chunks = chunk::chunk_text(text, words);
    if chunks.is_empty() {
        // A document with a title only: its title is its one passage.
        chunks.push(title.trim().to_string());
    }
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, text)| Passage {
            id: format!("{doc_id}#{i}"),
            text,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> LoadOptions {
        LoadOptions::default()
    }

    #[test]
    fn markdown_front_matter_is_title_and_metadata() -> Result<()> {
        let md = "---\ntitle: Tesla notes\nsource: wiki\nyear: 2020\ntags: [a, b]\n---\n# Heading\n\nBody text here.\n";
        let c = load_str(md, "n.md", Format::Files, &opts())?;
        let d = &c.documents[0];
        assert_eq!(d.title, "Tesla notes");
        assert!(!d.passages.iter().any(|p| p.text.contains("source")));
        let meta: Value =
            serde_json::from_str(d.metadata.as_deref().unwrap_or("null")).unwrap_or_default();
        assert_eq!(
            meta,
            serde_json::json!({"source": "wiki", "year": 2020, "tags": ["a", "b"]})
        );
        let bad = "---\nsource: [unclosed\n---\ntext\n";
        let err = load_str(bad, "n.md", Format::Files, &opts())
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.starts_with("n.md:") && e.contains("front matter")),
            "{err:?}"
        );
        let list = "---\n- a\n---\ntext\n";
        let err = load_str(list, "n.md", Format::Files, &opts())
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("not a mapping")),
            "{err:?}"
        );
        // Nesting 100,000 deep (flow, block items, indentation) is refused
        // at once, before the parser's quadratic work; 10 levels are read.
        let deep = [
            format!("a: {}1{}", "[".repeat(100_000), "]".repeat(100_000)),
            format!("a:\n{}x", "- ".repeat(100_000)),
            (0..200)
                .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
                .collect(),
        ];
        for yaml in deep {
            let started = std::time::Instant::now();
            let err = load_str(
                &format!("---\n{yaml}\n---\ntext\n"),
                "n.md",
                Format::Files,
                &opts(),
            )
            .err()
            .map(|e| e.to_string());
            assert!(
                err.as_deref()
                    .is_some_and(|e| e.contains("at most 64 levels")),
                "{err:?}"
            );
            assert!(
                started.elapsed().as_secs() < 5,
                "took {:?}",
                started.elapsed()
            );
        }
        let ten = format!("---\na: {}1{}\n---\ntext\n", "[".repeat(10), "]".repeat(10));
        assert!(load_str(&ten, "n.md", Format::Files, &opts()).is_ok());
        // A rule at the top with no closing line is text; fields after
        // it with no closing line are an error (they would become text).
        let c = load_str("---\nJust text.\n", "n.md", Format::Files, &opts())?;
        assert_eq!(c.documents[0].metadata, None);
        let err = load_str(
            "---\ntitle: VPN\nteam: ops\n\nHow to set it up.\n",
            "n.md",
            Format::Files,
            &opts(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            err.contains("n.md:1") && err.contains("never closed"),
            "{err}"
        );
        Ok(())
    }

    #[test]
    fn passages_carry_metadata_per_document() -> Result<()> {
        let jsonl = concat!(
            r#"{"id":"p1","doc_id":"d","text":"one","source":"wiki","year":2020}"#,
            "\n",
            r#"{"id":"p2","doc_id":"d","text":"two","source":"wiki","lang":"en"}"#,
            "\n",
            r#"{"id":"p3","text":"three","metadata":{"source":"news"}}"#,
            "\n",
        );
        let c = load_str(jsonl, "p.jsonl", Format::PassagesJsonl, &opts())?;
        let meta: Vec<Value> = c
            .documents
            .iter()
            .map(|d| {
                serde_json::from_str(d.metadata.as_deref().unwrap_or("null")).unwrap_or_default()
            })
            .collect();
        assert_eq!(
            meta[0],
            serde_json::json!({"source": "wiki", "year": 2020, "lang": "en"})
        );
        assert_eq!(meta[1], serde_json::json!({"source": "news"}));
        let clash = concat!(
            r#"{"id":"p1","doc_id":"d","text":"one","year":2020}"#,
            "\n",
            r#"{"id":"p2","doc_id":"d","text":"two","year":2021}"#,
            "\n",
        );
        let err = load_str(clash, "p.jsonl", Format::PassagesJsonl, &opts()).err();
        let said = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            said.contains("p.jsonl:2") && said.contains("`year` differs from line 1"),
            "{said}"
        );
        let tsv = "id\ttext\tsource\tyear\np1\tone\twiki\t2020\np2\ttwo\t\t\n";
        let c = load_str(tsv, "p.tsv", Format::PassagesTsv, &opts())?;
        assert_eq!(
            c.documents[0].metadata.as_deref(),
            Some(r#"{"source":"wiki","year":"2020"}"#)
        );
        assert_eq!(c.documents[1].metadata, None);
        Ok(())
    }

    #[test]
    fn beir_reads_fields_and_metadata() -> Result<()> {
        let text = "{\"_id\":\"1\",\"title\":\"T\",\"text\":\"Hello world.\",\"year\":2020}\n\n{\"_id\":2,\"text\":\"Second.\"}\n";
        let c = load_str(text, "corpus.jsonl", Format::Beir, &opts())?;
        assert_eq!(c.documents.len(), 2);
        assert_eq!(c.documents[0].metadata.as_deref(), Some("{\"year\":2020}"));
        assert_eq!(c.documents[1].id, "2");
        assert_eq!(c.documents[1].passages[0].text, "Second.");
        Ok(())
    }

    #[test]
    fn beir_bad_records_name_line_and_field() {
        let cases = [
            (
                "{\"_id\":\"1\",\"text\":\"a\"}\n{oops\n",
                2,
                "malformed JSON",
            ),
            (
                "{\"_id\":\"1\",\"text\":\"a\"}\n{\"_id\":\"2\"}\n",
                2,
                "missing field `text`",
            ),
            (
                "{\"_id\":\"1\",\"text\":\"a\"}\n{\"_id\":\"1\",\"text\":\"b\"}\n",
                2,
                "duplicate id `1` (first seen on line 1)",
            ),
            (
                "{\"_id\":\"1\",\"title\":\" \",\"text\":\"\"}\n",
                1,
                "empty document",
            ),
            (
                "{\"_id\":\"1\",\"text\":5}\n",
                1,
                "field `text` must be a string",
            ),
        ];
        for (text, line, needle) in cases {
            let err = load_str(text, "c.jsonl", Format::Beir, &opts()).err();
            let Some(Error::Record {
                line: l, problem, ..
            }) = err
            else {
                panic!("expected a record error for {text:?}, got {err:?}");
            };
            assert_eq!(l, line, "{text:?}");
            assert!(
                problem.to_string().contains(needle),
                "{problem} lacks {needle}"
            );
        }
    }

    #[test]
    fn invalid_utf8_is_reported_with_line() {
        let mut bytes = b"{\"_id\":\"1\",\"text\":\"a\"}\n{\"_id\":\"2\",\"text\":\"".to_vec();
        bytes.extend_from_slice(&[0xff, 0xfe]);
        bytes.extend_from_slice(b"\"}\n");
        let mut sink = Sink::new(false);
        let err = beir(&bytes, Path::new("c.jsonl"), &opts(), &mut sink).err();
        assert!(
            matches!(
                err,
                Some(Error::Record {
                    line: 2,
                    problem: Problem::InvalidUtf8(_),
                    ..
                })
            ),
            "{err:?}"
        );
    }

    #[test]
    fn skip_bad_lists_skipped_records() -> Result<()> {
        let text = "{\"_id\":\"1\",\"text\":\"a\"}\nnot json\n{\"_id\":\"1\",\"text\":\"b\"}\n";
        let o = LoadOptions {
            skip_bad: true,
            ..opts()
        };
        let c = load_str(text, "c.jsonl", Format::Beir, &o)?;
        assert_eq!(c.documents.len(), 1);
        let lines: Vec<_> = c.skipped.iter().map(|s| s.line).collect();
        assert_eq!(lines, vec![Some(2), Some(3)]);
        Ok(())
    }

    /// `load` and `for_each_document` on one file: the documents and the
    /// skipped records, or the error's message.
    fn both_ways(bytes: &[u8], o: &LoadOptions) -> [std::result::Result<String, String>; 2] {
        let dir = std::env::temp_dir().join(format!("treenav-each-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp folder");
        let path = dir.join(format!("{:x}.jsonl", twox_hash::XxHash3_64::oneshot(bytes)));
        std::fs::write(&path, bytes).expect("write the corpus");
        let whole =
            load(&path, Format::Beir, o).map(|c| format!("{:?} {:?}", c.documents, c.skipped));
        let mut docs = Vec::new();
        let each = for_each_document(&path, Format::Beir, o, |d| {
            docs.push(d);
            Ok(())
        })
        .map(|skipped| format!("{docs:?} {skipped:?}"));
        let _ = std::fs::remove_file(&path);
        [whole, each].map(|r| r.map_err(|e| e.to_string()))
    }

    #[test]
    fn a_beir_file_read_a_line_at_a_time_gives_what_loading_it_gives() {
        let skip = LoadOptions {
            skip_bad: true,
            ..opts()
        };
        let mut bad_utf8 = b"{\"_id\":\"1\",\"text\":\"a\"}\n{\"_id\":\"2\",\"text\":\"".to_vec();
        bad_utf8.extend_from_slice(&[0xff, 0xfe]);
        bad_utf8.extend_from_slice(b"\"}\n");
        let inputs: Vec<&[u8]> = vec![
            b"{\"_id\":\"1\",\"title\":\"T\",\"text\":\"Hello world. Again.\",\"year\":2020}\r\n\n{\"_id\":2,\"text\":\"Second.\"}",
            b"{\"_id\":\"1\",\"text\":\"a\"}\nnot json\n{\"_id\":\"1\",\"text\":\"b\"}\n",
            b"{\"_id\":\"1\",\"text\":\"a\"}\n{\"_id\":\"2\"}\n",
            b"\n \n",
            b"junk\n",
            &bad_utf8,
        ];
        let mut errors = 0;
        for bytes in inputs {
            for o in [&opts(), &skip] {
                let [whole, each] = both_ways(bytes, o);
                errors += usize::from(whole.is_err());
                assert_eq!(whole, each, "{:?}", String::from_utf8_lossy(bytes));
            }
        }
        assert!(errors >= 4, "the inputs include errors both ways: {errors}");
        let missing = for_each_document(
            Path::new("/nonexistent/c.jsonl"),
            Format::Beir,
            &opts(),
            |_| Ok(()),
        );
        assert!(missing.is_err_and(|e| e.to_string().contains("/nonexistent/c.jsonl")));
    }

    #[test]
    fn the_fingerprint_made_a_document_at_a_time_is_the_corpus_fingerprint() -> Result<()> {
        let text = "{\"_id\":\"1\",\"title\":\"T\",\"text\":\"One. Two.\"}\n{\"_id\":\"2\",\"text\":\"Three.\"}\n";
        let c = load_str(text, "c.jsonl", Format::Beir, &opts())?;
        let mut f = crate::Fingerprinter::default();
        c.documents.iter().for_each(|d| f.add_document(d));
        assert_eq!(f.finish(), c.fingerprint());
        Ok(())
    }

    #[test]
    fn empty_corpus_is_an_error() {
        assert!(matches!(
            load_str("\n\n", "c.jsonl", Format::Beir, &opts()),
            Err(Error::Empty { .. })
        ));
        let o = LoadOptions {
            skip_bad: true,
            ..opts()
        };
        let err = load_str("junk\n", "c.jsonl", Format::Beir, &o).err();
        assert!(err.is_some_and(|e| e.to_string().contains("all 1 records were bad")));
    }

    #[test]
    fn squad_paragraphs_are_passages() -> Result<()> {
        let text = r#"{"version":"1.1","data":[{"title":"Super_Bowl","paragraphs":[
            {"context":"The game was played.","qas":[]},{"context":"It was won.","qas":[]}]}]}"#;
        let c = load_str(text, "dev.json", Format::Squad, &opts())?;
        assert_eq!(c.documents[0].title, "Super Bowl");
        assert_eq!(c.documents[0].passages[1].id, "Super_Bowl#1");
        assert_eq!(c.documents[0].passages[1].text, "It was won.");
        Ok(())
    }

    #[test]
    fn squad_malformed_names_line() {
        let err = load_str(
            "{\"data\": [\n{\"title\": 3}]}",
            "dev.json",
            Format::Squad,
            &opts(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(err.contains("dev.json") && err.contains("line 2"), "{err}");
    }

    #[test]
    fn passages_group_by_doc_id_then_title() -> Result<()> {
        let text = "{\"id\":\"p1\",\"text\":\"a\",\"title\":\"A\"}\n{\"id\":\"p2\",\"text\":\"b\",\"title\":\"B\"}\n{\"id\":\"p3\",\"text\":\"c\",\"title\":\"A\"}\n{\"id\":\"p4\",\"text\":\"d\",\"doc_id\":\"X\"}\n";
        let c = load_str(text, "p.jsonl", Format::PassagesJsonl, &opts())?;
        let shape: Vec<(String, usize)> = c
            .documents
            .iter()
            .map(|d| (d.id.clone(), d.passages.len()))
            .collect();
        assert_eq!(
            shape,
            vec![("A".into(), 2), ("B".into(), 1), ("X".into(), 1)]
        );
        Ok(())
    }

    #[test]
    fn dpr_tsv_with_header_and_quotes() -> Result<()> {
        let text = "id\ttext\ttitle\n1\t\"He said \"\"hi\"\".\"\tAaron\n2\tMore text.\tAaron\n3\tOther.\tBob\n";
        let c = load_str(text, "psgs.tsv", Format::PassagesTsv, &opts())?;
        assert_eq!(c.documents.len(), 2);
        assert_eq!(c.documents[0].passages[0].text, "He said \"hi\".");
        let err = load_str("1\tonly\tT\n2\n", "p.tsv", Format::PassagesTsv, &opts()).err();
        assert!(matches!(
            err,
            Some(Error::Record {
                line: 2,
                problem: Problem::Columns { .. },
                ..
            })
        ));
        Ok(())
    }

    /// Issue 12, item 13: a quoted field holding a tab used to be split
    /// inside the quotes, and extra columns were dropped without a word.
    #[test]
    fn tsv_quoted_tabs_and_column_counts() -> Result<()> {
        let c = load_str(
            "1\t\"hello\tworld\"\tT\n",
            "p.tsv",
            Format::PassagesTsv,
            &opts(),
        )?;
        assert_eq!(c.documents[0].passages[0].text, "hello\tworld");
        assert_eq!(c.documents[0].title, "T");
        // A quoted newline stays in the field; the next record's line is right.
        let text = "1\t\"two\nlines\"\tT\n2\ta\tb\textra\n";
        let err = load_str(text, "p.tsv", Format::PassagesTsv, &opts()).err();
        match err {
            Some(Error::Record {
                line: 3,
                problem: Problem::Columns { found: 4, .. },
                ..
            }) => {}
            other => panic!("expected a column error on line 3, got {other:?}"),
        }
        // With a header, every record has the header's count.
        let text = "id\ttext\n1\tok\n2\tok\tsurplus\n";
        let err = load_str(text, "p.tsv", Format::PassagesTsv, &opts()).err();
        assert!(
            matches!(
                err,
                Some(Error::Record {
                    line: 3,
                    problem: Problem::Columns { found: 3, .. },
                    ..
                })
            ),
            "{err:?}"
        );
        // Header columns in any order, doc_id groups passages.
        let text = "id\ttitle\tdoc_id\ttext\np1\tA\td\tone\np2\tA\td\ttwo\n";
        let c = load_str(text, "p.tsv", Format::PassagesTsv, &opts())?;
        assert_eq!(c.documents.len(), 1);
        assert_eq!(c.documents[0].id, "d");
        assert_eq!(c.documents[0].passages[1].text, "two");
        // Other columns are metadata, but the text column must be there.
        let err = load_str("id\tbody\n", "p.tsv", Format::PassagesTsv, &opts()).err();
        assert!(
            matches!(
                err,
                Some(Error::Record {
                    problem: Problem::MissingField("text"),
                    ..
                })
            ),
            "{err:?}"
        );
        // Bad UTF-8 names the line; with skip_bad the rest loads.
        let bytes = b"1\tok\n2\tbad \xff\n3\tfine\n";
        let err = load_bytes(bytes, "p.tsv", Format::PassagesTsv, &opts()).err();
        assert!(
            matches!(err, Some(Error::Record { line: 2, .. })),
            "{err:?}"
        );
        let skip = LoadOptions {
            skip_bad: true,
            ..opts()
        };
        let c = load_bytes(bytes, "p.tsv", Format::PassagesTsv, &skip)?;
        assert_eq!(c.passage_count(), 2);
        assert_eq!(c.skipped[0].line, Some(2));
        Ok(())
    }

    #[test]
    fn markdown_title_and_sections() -> Result<()> {
        let text = "Intro line.\n\n# Guide\n\nFirst para.\n\n## Install\n\nRun it.\n";
        let c = load_str(text, "docs/guide.md", Format::Files, &opts())?;
        let d = &c.documents[0];
        assert_eq!(d.title, "Guide");
        let texts: Vec<&str> = d.passages.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(
            texts,
            // The title heading is not repeated in the text; a section
            // heading stays as its words.
            vec!["Intro line.", "First para.", "Install\n\nRun it."]
        );
        let plain = load_str("just text", "my_notes.txt", Format::Files, &opts())?;
        assert_eq!(plain.documents[0].title, "my notes");
        Ok(())
    }

    #[test]
    fn format_names_round_trip() -> Result<()> {
        for f in [
            Format::Beir,
            Format::Squad,
            Format::PassagesJsonl,
            Format::PassagesTsv,
            Format::Files,
        ] {
            assert_eq!(f.name().parse::<Format>()?, f);
        }
        assert!("xml".parse::<Format>().is_err());
        Ok(())
    }
}

use std::path::PathBuf;

/// Result of the corpus crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What is wrong with one record of a corpus file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The record is not valid JSON (or not a JSON object).
    #[error("malformed JSON: {0}")]
    Json(String),
    /// A required field is absent.
    #[error("missing field `{0}`")]
    MissingField(&'static str),
    /// A field has the wrong JSON type.
    #[error("field `{field}` must be {expected}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// What it should be.
        expected: &'static str,
    },
    /// The id was already used by an earlier record.
    #[error("duplicate id `{id}` (first seen on line {first_line})")]
    DuplicateId {
        /// The id.
        id: String,
        /// Where it was first used.
        first_line: usize,
    },
    /// Neither title nor text holds anything but whitespace.
    #[error("empty document `{0}`: no title and no text")]
    EmptyDocument(String),
    /// The line is not valid UTF-8.
    #[error("invalid UTF-8 at byte {0} of the line")]
    InvalidUtf8(usize),
    /// A TSV record has the wrong number of columns.
    #[error("expected {expected} tab-separated columns, found {found}")]
    Columns {
        /// The columns a record must have, e.g. `2 or 3 (id, text, title)`.
        expected: String,
        /// Columns present.
        found: usize,
    },
    /// A TSV header has an empty or repeated column name.
    #[error("bad column `{0}` in the header (columns: id, text, title, doc_id, then metadata fields, each named once)")]
    UnknownColumn(String),
    /// A Markdown file's YAML front matter cannot be read.
    #[error("front matter: {0}")]
    FrontMatter(String),
    /// Two passages of one document give a metadata field different values.
    #[error("metadata field `{field}` differs from line {first_line}, a passage of the same document (metadata is per document: give each passage its own doc_id to differ)")]
    MetadataConflict {
        /// The field.
        field: String,
        /// The line that gave it first.
        first_line: usize,
    },
    /// A TSV record cannot be parsed (e.g. invalid UTF-8 in a field).
    #[error("malformed TSV: {0}")]
    Tsv(String),
    /// A record of a benchmark's queries or relevance judgements is bad
    /// (said in full: the field and what it must be).
    #[error("{0}")]
    Judgement(String),
}

/// Errors of loading a corpus.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file or folder could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// One record is bad (use `--skip-bad` to skip such records).
    #[error("{}:{line}: {problem}", path.display())]
    Record {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        problem: Problem,
    },
    /// The whole file is malformed (e.g. SQuAD JSON that does not parse).
    #[error("{}: {problem}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong, with line and column where known.
        problem: String,
    },
    /// Loading produced no document.
    #[error("{}: empty corpus: {detail}", path.display())]
    Empty {
        /// The source.
        path: PathBuf,
        /// Why nothing was found.
        detail: String,
    },
    /// The format could not be recognised.
    #[error("{}: cannot tell the corpus format ({hint}); pass --format beir|squad|passages-jsonl|passages-tsv|files", path.display())]
    UnknownFormat {
        /// The source.
        path: PathBuf,
        /// What was seen.
        hint: String,
    },
    /// An option value is not valid.
    #[error("invalid option: {0}")]
    Option(String),
}

//! Documents, passages and the corpus loaders of treenav.
//!
//! A corpus is a list of [`Document`]s, each holding the [`Passage`]s the
//! retriever returns. Loaders read the formats RAG corpora ship in and are
//! chosen by [`Format::detect`] (or forced): a BEIR folder or its
//! `corpus.jsonl`, SQuAD v1.1 JSON, pre-chunked passages (JSONL or DPR-style
//! TSV) and folders of `.md`/`.txt` files. Documents that are not pre-chunked
//! go through the sentence-aware [`chunk`] module.
//!
//! Loading is strict by default: the first bad record stops the load with an
//! [`Error`] naming the file, the line and the problem. With
//! [`LoadOptions::skip_bad`] such records are skipped and listed in
//! [`Corpus::skipped`] instead.
//!
//! [`for_each_document`] gives the same documents one at a time (a BEIR
//! file is read a line at a time and never held whole: a corpus larger
//! than memory), and a [`Fingerprinter`] makes the corpus's fingerprint
//! as they pass.
//!
//! ```
//! use treenav_corpus::{load_str, Format, LoadOptions};
//!
//! let jsonl = r#"{"_id":"d1","title":"Rust","text":"Rust is a language. It is fast."}
//! {"_id":"d2","title":"Tea","text":"Tea is a drink."}"#;
//! let corpus = load_str(jsonl, "corpus.jsonl", Format::Beir, &LoadOptions::default())?;
//! assert_eq!(corpus.documents.len(), 2);
//! assert_eq!(corpus.documents[0].passages[0].id, "d1#0");
//! # Ok::<(), treenav_corpus::Error>(())
//! ```
#![warn(missing_docs)]

pub mod chunk;
mod error;
mod load;
pub mod part;

pub use error::{Error, Problem, Result};
pub use load::{
    for_each_document, load, load_bytes, load_str, squad, squad_passage_id, Format, LoadOptions,
};
pub use part::Part;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A passage: the unit the retriever returns (a leaf of the tree).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Passage {
    /// Unique id across the corpus (given by the source, or `{doc_id}#{n}`).
    pub id: String,
    /// The passage text.
    pub text: String,
}

/// A document: a titled group of passages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// Unique id across the corpus.
    pub id: String,
    /// The title (may be empty when the source has none).
    pub title: String,
    /// The passages, in reading order; never empty.
    pub passages: Vec<Passage>,
    /// Extra fields of the source record, as a JSON object text.
    pub metadata: Option<String>,
}

impl Document {
    /// The first `n` sentences of the document's first passage.
    pub fn lead(&self, n: usize) -> String {
        self.passages
            .first()
            .map(|p| chunk::first_sentences(&p.text, n))
            .unwrap_or_default()
    }
}

/// A record left out by a load with [`LoadOptions::skip_bad`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The file the record came from.
    pub file: PathBuf,
    /// Its 1-based line, when the format is line-based.
    pub line: Option<usize>,
    /// What was wrong with it.
    pub problem: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file.display(), line, self.problem),
            None => write!(f, "{}: {}", self.file.display(), self.problem),
        }
    }
}

/// A loaded corpus.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    /// The documents, in source order.
    pub documents: Vec<Document>,
    /// Records skipped because they were bad (only with `skip_bad`).
    pub skipped: Vec<Skipped>,
}

impl Corpus {
    /// Number of passages over all documents.
    pub fn passage_count(&self) -> usize {
        self.documents.iter().map(|d| d.passages.len()).sum()
    }

    /// The corpus's [`ContentDigest`] (order-independent).
    pub fn content_digest(&self) -> ContentDigest {
        let mut out = ContentDigest {
            documents: 0,
            passages: 0,
            sum: 0,
        };
        for d in &self.documents {
            let passages = d.passages.iter().map(|p| (p.id.as_str(), p.text.as_str()));
            out.add(
                document_digest(&d.id, &d.title, passages),
                d.passages.len() as u64,
            );
        }
        out
    }

    /// A stable fingerprint of the corpus's content: every document's id and
    /// title and every passage's id and text, in order. Two loads of the
    /// same files with the same options agree; a different corpus, or the
    /// same one chunked differently, does not.
    pub fn fingerprint(&self) -> Fingerprint {
        fingerprint_of(self.documents.iter().map(|d| {
            let passages = d.passages.iter().map(|p| (p.id.as_str(), p.text.as_str()));
            (d.id.as_str(), d.title.as_str(), passages.collect())
        }))
    }
}

/// The [`Fingerprint`] of documents given in order as (id, title, its
/// passages' (id, text)): [`Corpus::fingerprint`]'s, and a compacted
/// tree's over the documents it holds.
pub fn fingerprint_of<'a>(
    documents: impl Iterator<Item = (&'a str, &'a str, Vec<(&'a str, &'a str)>)>,
) -> Fingerprint {
    let mut out = Fingerprinter::default();
    for (id, title, passages) in documents {
        out.add(id, title, passages.into_iter());
    }
    out.finish()
}

/// A [`Fingerprint`] made a document at a time (a corpus read as a
/// stream, never held whole): the same as [`fingerprint_of`] over the same
/// documents in the same order.
#[derive(Default)]
pub struct Fingerprinter {
    hasher: twox_hash::XxHash3_128,
    documents: u64,
    passages: u64,
}

impl Fingerprinter {
    /// Adds the next document: its id, title and passages' (id, text).
    pub fn add<'a>(
        &mut self,
        id: &str,
        title: &str,
        passages: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
    ) {
        self.documents += 1;
        self.passages += passages.len() as u64;
        hash_document(&mut self.hasher, id, title, passages);
    }

    /// Adds the next document.
    pub fn add_document(&mut self, d: &Document) {
        let passages = d.passages.iter().map(|p| (p.id.as_str(), p.text.as_str()));
        self.add(&d.id, &d.title, passages);
    }

    /// The fingerprint of the documents added.
    pub fn finish(&self) -> Fingerprint {
        Fingerprint {
            documents: self.documents,
            passages: self.passages,
            xxh3_128: format!("{:032x}", self.hasher.finish_128()),
        }
    }
}

/// One document's content hash (XXH3-128 of its id, title and passages,
/// length-prefixed, as [`Corpus::fingerprint`] hashes it).
pub fn document_digest<'a>(
    id: &str,
    title: &str,
    passages: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
) -> u128 {
    let mut hasher = twox_hash::XxHash3_128::new();
    hash_document(&mut hasher, id, title, passages);
    hasher.finish_128()
}

/// Feeds one document (id, title, passage count, each passage's id and
/// text) to `hasher`, each field length-prefixed so that field boundaries
/// cannot shift between texts.
fn hash_document<'a>(
    hasher: &mut twox_hash::XxHash3_128,
    id: &str,
    title: &str,
    passages: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
) {
    let mut field = |bytes: &[u8]| {
        hasher.write(&(bytes.len() as u64).to_le_bytes());
        hasher.write(bytes);
    };
    field(id.as_bytes());
    field(title.as_bytes());
    field(&(passages.len() as u64).to_le_bytes());
    for (passage, text) in passages {
        field(passage.as_bytes());
        field(text.as_bytes());
    }
}

/// What a set of documents holds, whatever their order: the document and
/// passage counts and the wrapping sum of their [`document_digest`]s (a
/// tree changed by updates holds its documents in another order than any
/// corpus file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentDigest {
    /// Documents.
    pub documents: u64,
    /// Passages.
    pub passages: u64,
    /// The sum of the documents' digests.
    pub sum: u128,
}

impl ContentDigest {
    /// Adds one document.
    pub fn add(&mut self, digest: u128, passages: u64) {
        self.documents += 1;
        self.passages += passages;
        self.sum = self.sum.wrapping_add(digest);
    }
}

/// What a corpus was, kept in the tree built from it so that a tree used
/// with another corpus is caught ([`Corpus::fingerprint`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Number of documents.
    pub documents: u64,
    /// Number of passages.
    pub passages: u64,
    /// XXH3-128 of the ids, titles and texts, as 32 hex digits (a published,
    /// fixed algorithm: stable across versions and machines).
    pub xxh3_128: String,
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} documents, {} passages, xxh3-128 {}",
            self.documents, self.passages, self.xxh3_128
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn corpus(texts: &[(&str, &str)]) -> Corpus {
        let documents = texts
            .iter()
            .map(|(id, text)| Document {
                id: id.to_string(),
                title: String::new(),
                passages: vec![Passage {
                    id: format!("{id}#0"),
                    text: text.to_string(),
                }],
                metadata: None,
            })
            .collect();
        Corpus {
            documents,
            skipped: Vec::new(),
        }
    }

    #[test]
    fn fingerprint_is_stable_and_tells_corpora_apart() {
        let a = corpus(&[("d1", "Rust is fast."), ("d2", "Tea is a drink.")]);
        assert_eq!(a.fingerprint(), a.clone().fingerprint());
        // A pinned value: the fingerprint is stored in tree files, so it must
        // not change between versions of treenav.
        assert_eq!(a.fingerprint().xxh3_128, "96f4b244b97e1464d0572b5c97636606");
        let other_text = corpus(&[("d1", "Rust is fast."), ("d2", "Tea is a drink!")]);
        assert_ne!(a.fingerprint(), other_text.fingerprint());
        // Moving a boundary between fields changes the fingerprint.
        let shifted = corpus(&[("d1", "Rust is fast.d"), ("2", "Tea is a drink.")]);
        assert_ne!(a.fingerprint(), shifted.fingerprint());
        let reordered = corpus(&[("d2", "Tea is a drink."), ("d1", "Rust is fast.")]);
        assert_ne!(a.fingerprint(), reordered.fingerprint());
    }
}

//! A corpus split into parts by document id, for a tree larger than one
//! machine: each part is built as a complete tree over its slice and
//! served by its own process (a query goes to every part and their
//! passages are merged by score).
//!
//! A document belongs to part `xxh3_64(id) mod count`: the id alone
//! decides, so a document keeps its part whatever else the corpus holds,
//! and a writer routes an added document to its part without reading the
//! others (Elasticsearch routes by a hash of the id the same way).
//!
//! ```
//! use treenav_corpus::{load_str, Format, LoadOptions, Part};
//!
//! let jsonl = r#"{"_id":"d1","title":"Rust","text":"Rust is a language."}
//! {"_id":"d2","title":"Tea","text":"Tea is a drink."}
//! {"_id":"d3","title":"Oak","text":"Oak is a tree."}"#;
//! let corpus = load_str(jsonl, "corpus.jsonl", Format::Beir, &LoadOptions::default())?;
//! let sizes: Vec<usize> = ["0/2", "1/2"]
//!     .iter()
//!     .map(|p| Ok(corpus.clone().into_part(p.parse::<Part>()?).map_or(0, |c| c.documents.len())))
//!     .collect::<Result<_, treenav_corpus::Error>>()?;
//! assert_eq!(sizes.iter().sum::<usize>(), 3); // each document in one part
//! # Ok::<(), treenav_corpus::Error>(())
//! ```

use crate::{Corpus, Error, Result};

/// The most parts a corpus is split into.
pub const MAX_PARTS: u32 = 4096;

/// Part `index` of `count` (from 0), written `I/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    index: u32,
    count: u32,
}

impl Part {
    /// Part `index` of `count`; the index counts from 0.
    pub fn new(index: u32, count: u32) -> Result<Part> {
        if count == 0 || count > MAX_PARTS {
            return Err(Error::Option(format!(
                "--part: the part count must be in 1..={MAX_PARTS}, got {count}"
            )));
        }
        if index >= count {
            return Err(Error::Option(format!(
                "--part {index}/{count}: the index counts from 0, so it must be below {count}"
            )));
        }
        Ok(Part { index, count })
    }

    /// Which part, from 0.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Of how many.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The part a document id belongs to, of `count` (at least 1).
    pub fn of(id: &str, count: u32) -> u32 {
        let hash = twox_hash::XxHash3_64::oneshot(id.as_bytes());
        (hash % u64::from(count.max(1))) as u32
    }

    /// Whether the document with this id belongs to this part.
    pub fn holds(&self, id: &str) -> bool {
        Part::of(id, self.count) == self.index
    }
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// `I/N` read as (I, N), spaces around either allowed; `None` unless both
/// are whole numbers (a part's and a plan shard's spelling).
pub fn index_of_count(s: &str) -> Option<(u32, u32)> {
    let (i, n) = s.split_once('/')?;
    Some((i.trim().parse().ok()?, n.trim().parse().ok()?))
}

impl std::str::FromStr for Part {
    type Err = Error;
    fn from_str(s: &str) -> Result<Part> {
        let (i, n) = index_of_count(s)
            .ok_or_else(|| Error::Option(format!("--part `{s}`: write INDEX/COUNT, e.g. 0/3")))?;
        Part::new(i, n)
    }
}

impl Corpus {
    /// The documents of one part, in source order (the skipped records are
    /// kept: they are the source's, not the part's). Fails when the part
    /// holds no document: a tree needs one.
    pub fn into_part(mut self, part: Part) -> Result<Corpus> {
        let total = self.documents.len();
        self.documents.retain(|d| part.holds(&d.id));
        if self.documents.is_empty() {
            return Err(Error::Option(format!(
                "--part {part}: none of the corpus's {total} documents falls in this part (a document's part is a hash of its id); use fewer parts"
            )));
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` one-passage documents `doc-0` … (lib.rs's test corpus).
    fn corpus(n: usize) -> Corpus {
        let texts: Vec<(String, String)> = (0..n)
            .map(|i| (format!("doc-{i}"), format!("text {i}")))
            .collect();
        let refs: Vec<(&str, &str)> = texts
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        crate::tests::corpus(&refs)
    }

    #[test]
    fn the_parts_split_the_corpus_without_overlap_in_source_order() {
        let whole = corpus(300);
        let mut seen: Vec<String> = Vec::new();
        for i in 0..3 {
            let part = whole
                .clone()
                .into_part(Part::new(i, 3).expect("valid"))
                .expect("valid");
            // Roughly a third each: the hash spreads the ids.
            assert!(
                (60..140).contains(&part.documents.len()),
                "{}",
                part.documents.len()
            );
            let ids: Vec<String> = part.documents.iter().map(|d| d.id.clone()).collect();
            let mut sorted = ids.clone();
            sorted.sort_by_key(|id| id[4..].parse::<usize>().expect("valid"));
            assert_eq!(ids, sorted, "source order kept");
            seen.extend(ids);
        }
        seen.sort();
        let mut all: Vec<String> = whole.documents.iter().map(|d| d.id.clone()).collect();
        all.sort();
        assert_eq!(seen, all, "every document in exactly one part");
    }

    #[test]
    fn a_documents_part_depends_on_its_id_alone() {
        // The same id, in any corpus, in the same part: a writer can route it.
        assert_eq!(Part::of("doc-7", 3), Part::of("doc-7", 3));
        let small = corpus(8).into_part(Part::new(Part::of("doc-7", 3), 3).expect("valid"));
        assert!(small
            .expect("valid")
            .documents
            .iter()
            .any(|d| d.id == "doc-7"));
        // xxh3-64 of the id's bytes, mod the count: fixed forever (the
        // parts of a built corpus must not move), pinned here.
        // Python's `xxhash.xxh3_64_intdigest(b"doc-7")` gives the same.
        assert_eq!(
            twox_hash::XxHash3_64::oneshot(b"doc-7"),
            4062204581482224284
        );
        assert_eq!(Part::of("doc-7", 3), (4062204581482224284u64 % 3) as u32);
        assert!(Part::new(0, 1).expect("valid").holds("anything"));
    }

    #[test]
    fn bad_parts_are_refused_with_the_form_to_write() {
        for bad in ["3/3", "1/0", "x/3", "1", "-1/3", "0/5000"] {
            let err = bad.parse::<Part>().expect_err("refused").to_string();
            assert!(err.contains("--part"), "{bad}: {err}");
        }
        assert_eq!(
            "2 / 3".parse::<Part>().expect("valid"),
            Part::new(2, 3).expect("valid")
        );
        let other = Part::new(Part::of("doc-0", 2) ^ 1, 2).expect("valid");
        let err = corpus(1).into_part(other).expect_err("refused");
        assert!(err.to_string().contains("use fewer parts"), "{err}");
    }
}

//! The hand-written BM25 index of trees saved before tantivy (a `.lexical`
//! file of layout 1): read back, read-only, so those trees answer as they
//! did. New trees and the bench's baseline use [`crate::index`]; building
//! and writing here remain for this module's tests of the stored format,
//! and go once no layout-1 tree needs reading (issue 25, item 5).
//!
//! The term weights come from the `bm25` crate's [`bm25::Embedder`] (k1 = 1.2,
//! b = 0.75, average length fitted to the texts), so scores are the crate's to
//! the bit. Its `SearchEngine` is not used for search: it scores each matching
//! text by a linear scan of that text's tokens, sorts every match, and clones
//! the top texts out, which made BM25 over SciFact take ~4 ms a query. Here the
//! weights go into posting lists once, and a query adds up the postings of its
//! terms in f32 in query-term order (the crate's order, so the same sums), then
//! selects the top `n` with ties broken by the lower index.

use bm25::{Embedder, EmbedderBuilder, Tokenizer};
use std::collections::HashMap;

/// The words BM25 indexes: [`crate::terms`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Words;

impl Tokenizer for Words {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        crate::terms(input_text).collect()
    }
}

/// A BM25 index over texts numbered 0, 1, … in the order given: built in
/// memory ([`Bm25Index::new`]) or read from bytes it wrote
/// ([`Bm25Index::write_to`], [`Bm25Index::from_bytes`], e.g. a memory-mapped
/// file), with the same scores to the bit either way.
pub struct Bm25Index {
    embedder: Embedder<u64, Words>,
    postings: Postings,
    texts: usize,
}

/// Where the posting lists live.
enum Postings {
    /// Built here: token hash → its slot; per slot, (text, term weight) for
    /// every text holding the token, by text.
    Memory {
        slots: HashMap<u64, u32>,
        lists: Vec<Vec<(u32, f32)>>,
    },
    /// In bytes written by [`Bm25Index::write_to`].
    Stored(Stored),
}

impl std::fmt::Debug for Bm25Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (terms, stored) = match &self.postings {
            Postings::Memory { lists, .. } => (lists.len(), false),
            Postings::Stored(s) => (s.terms, true),
        };
        f.debug_struct("Bm25Index")
            .field("texts", &self.texts)
            .field("terms", &terms)
            .field("stored", &stored)
            .finish()
    }
}

/// Texts embedded in parallel per step of [`Bm25Index::new`].
/// (Small under test, so the tests cross chunk boundaries.)
const EMBED_CHUNK: usize = if cfg!(test) { 7 } else { 16_384 };

impl Bm25Index {
    /// Indexes `texts` (text i gets index i) with k1 = 1.2 and b = 0.75.
    ///
    /// # Panics
    /// Never for any input; at most `u32::MAX` texts are indexed (the rest
    /// are ignored).
    pub fn new(texts: &[&str]) -> Bm25Index {
        use rayon::prelude::*;
        let texts = &texts[..texts.len().min(u32::MAX as usize)];
        let embedder =
            EmbedderBuilder::<u64, Words>::with_tokenizer_and_fit_to_corpus(Words, texts)
                .k1(1.2)
                .b(0.75)
                .build();
        let mut slots: HashMap<u64, u32> = HashMap::new();
        let mut postings: Vec<Vec<(u32, f32)>> = Vec::new();
        // Texts are embedded in parallel, a bounded chunk at a time, and
        // merged in text order (so postings are as a serial pass makes them).
        for (c, chunk) in texts.chunks(EMBED_CHUNK).enumerate() {
            let embedded: Vec<Vec<(u64, f32)>> = chunk
                .par_iter()
                .map(|text| {
                    embedder
                        .embed(text)
                        .iter()
                        .map(|t| (t.index, t.value))
                        .collect()
                })
                .collect();
            for (j, tokens) in embedded.into_iter().enumerate() {
                let doc = (c * EMBED_CHUNK + j) as u32;
                for (index, value) in tokens {
                    let slot = *slots.entry(index).or_insert_with(|| {
                        postings.push(Vec::new());
                        (postings.len() - 1) as u32
                    });
                    let list = &mut postings[slot as usize];
                    // A token repeats in a text's embedding with the same
                    // weight; the first occurrence is the one scored.
                    if list.last().is_none_or(|(d, _)| *d != doc) {
                        list.push((doc, value));
                    }
                }
            }
        }
        Bm25Index {
            embedder,
            postings: Postings::Memory {
                slots,
                lists: postings,
            },
            texts: texts.len(),
        }
    }

    /// The posting list of a token hash, if any text holds it.
    fn list(&self, token: u64) -> Result<Option<List<'_>>, StoreError> {
        Ok(match &self.postings {
            Postings::Memory { slots, lists } => slots
                .get(&token)
                .and_then(|s| lists.get(*s as usize))
                .map(|l| List::Memory(l)),
            Postings::Stored(stored) => stored.list(token)?.map(List::Stored),
        })
    }

    /// Writes the index in its stored form (little-endian; see
    /// [`Bm25Index::open`]): a header, the term table sorted by token hash,
    /// then the postings of each term in that order. Token hashes are the
    /// `bm25` crate's (FxHash, a fixed function), so they stay valid across
    /// builds.
    pub fn write_to(&self, out: &mut impl std::io::Write) -> Result<(), StoreError> {
        // (token hash, postings), sorted by hash: lists built here are
        // borrowed, not copied; stored ones are read back.
        let mut table: Vec<(u64, ListRef<'_>)> = match &self.postings {
            Postings::Memory { slots, lists } => slots
                .iter()
                .map(|(h, s)| {
                    (
                        *h,
                        lists
                            .get(*s as usize)
                            .map(Vec::as_slice)
                            .unwrap_or(&[])
                            .into(),
                    )
                })
                .collect(),
            Postings::Stored(stored) => (0..stored.terms)
                .map(|t| {
                    let (hash, range) = stored.entry(t);
                    let list = List::Stored(stored.postings(range)?);
                    Ok((hash, list.iter().collect::<Vec<_>>().into()))
                })
                .collect::<Result<_, StoreError>>()?,
        };
        table.sort_unstable_by_key(|(h, _)| *h);
        let total: usize = table.iter().map(|(_, l)| l.len()).sum();
        use std::io::Write;
        let mut out = std::io::BufWriter::new(out);
        out.write_all(STORED_MAGIC)?;
        out.write_all(&STORED_VERSION.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        for n in [self.texts, table.len(), total] {
            out.write_all(&(n as u64).to_le_bytes())?;
        }
        for x in [self.embedder.avgdl(), 1.2f32, 0.75f32, 0.0f32] {
            out.write_all(&x.to_le_bytes())?;
        }
        let mut start = 0u64;
        for (hash, list) in &table {
            out.write_all(&hash.to_le_bytes())?;
            out.write_all(&start.to_le_bytes())?;
            start += list.len() as u64;
        }
        for (_, list) in &table {
            for (doc, weight) in list.iter() {
                out.write_all(&doc.to_le_bytes())?;
                out.write_all(&weight.to_le_bytes())?;
            }
        }
        out.flush()?;
        Ok(())
    }

    /// The stored size in bytes of the index [`Bm25Index::write_to`] writes.
    pub fn stored_len(&self) -> u64 {
        let (terms, postings) = match &self.postings {
            Postings::Memory { lists, .. } => (
                lists.len() as u64,
                lists.iter().map(|l| l.len() as u64).sum(),
            ),
            Postings::Stored(s) => (s.terms as u64, s.postings),
        };
        STORED_HEADER as u64 + terms * TERM_BYTES as u64 + postings * POSTING_BYTES as u64
    }

    /// Opens the index stored at bytes `at..at + len` of `source`, as
    /// [`Bm25Index::write_to`] wrote it. The header and the term table are
    /// read and checked here; posting lists are read as queries need them
    /// (a text number out of range in a list is skipped).
    pub fn open(
        source: std::sync::Arc<dyn ReadAt>,
        at: u64,
        len: u64,
    ) -> Result<Bm25Index, StoreError> {
        let stored = Stored::open(source, at, len)?;
        let embedder = EmbedderBuilder::<u64, Words>::with_avgdl(stored.avgdl)
            .k1(1.2)
            .b(0.75)
            .build();
        Ok(Bm25Index {
            embedder,
            texts: stored.texts,
            postings: Postings::Stored(stored),
        })
    }

    /// How many texts are indexed.
    pub fn len(&self) -> usize {
        self.texts
    }

    /// Whether no text is indexed.
    pub fn is_empty(&self) -> bool {
        self.texts == 0
    }

    /// The top `n` texts for a query with their scores, best first (ties:
    /// the lower index first). Texts sharing no term with the query are
    /// left out. Only a stored index can fail (a read error).
    pub fn search(&self, query: &str, n: usize) -> Result<Vec<(u32, f32)>, StoreError> {
        let mut scores = vec![0f32; self.texts];
        let mut touched: Vec<u32> = Vec::new();
        let total = self.texts as f32;
        for token in self.embedder.embed(query).iter() {
            let Some(list) = self.list(token.index)? else {
                continue;
            };
            let df = list.len() as f32;
            let idf = (1f32 + ((total - df + 0.5) / (df + 0.5))).ln();
            for (doc, weight) in list.iter() {
                // A stored list is checked when read: a text number out of
                // range is skipped, never a panic.
                let Some(score) = scores.get_mut(doc as usize) else {
                    continue;
                };
                if *score == 0.0 {
                    touched.push(doc);
                }
                *score += idf * weight;
            }
        }
        // Every weight and IDF is positive, so a touched score is never 0
        // again; a text is listed once.
        let mut hits: Vec<(u32, f32)> = touched
            .into_iter()
            .map(|d| (d, scores[d as usize]))
            .collect();
        let order = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if n < hits.len() {
            hits.select_nth_unstable_by(n, order);
            hits.truncate(n);
        }
        hits.sort_unstable_by(order);
        Ok(hits)
    }
}

/// The first bytes of a stored index.
const STORED_MAGIC: &[u8; 8] = b"TRNVBM25";
/// The stored layout's version.
const STORED_VERSION: u32 = 1;
/// Header bytes: magic, version, reserved, three counts, four floats.
const STORED_HEADER: usize = 8 + 4 + 4 + 3 * 8 + 4 * 4;
const TERM_BYTES: usize = 16;
const POSTING_BYTES: usize = 8;

/// A stored index that cannot be read: not what [`Bm25Index::write_to`]
/// wrote, or a read that failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The bytes are not a stored index (or not all of one).
    #[error("not a stored BM25 index: {0}")]
    Malformed(String),
    /// Reading the stored bytes failed.
    #[error("cannot read the stored BM25 index: {0}")]
    Io(#[from] std::io::Error),
}

/// Random access to stored bytes: a file read with positioned reads (no
/// memory map, so a file cut short under a running process gives an error,
/// never a crash), or bytes in memory.
pub trait ReadAt: Send + Sync {
    /// Fills `buf` from byte `at`; an error if the bytes are not all there.
    fn read_at(&self, at: u64, buf: &mut [u8]) -> std::io::Result<()>;
}

impl ReadAt for Vec<u8> {
    fn read_at(&self, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let start = usize::try_from(at).unwrap_or(usize::MAX);
        let bytes = start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(bytes);
        Ok(())
    }
}

/// An index in stored bytes: header and term table read and checked when
/// opened, posting lists read as queries need them.
struct Stored {
    source: std::sync::Arc<dyn ReadAt>,
    /// Per term, sorted by hash: (hash, first posting).
    table: Vec<(u64, u64)>,
    /// Where the postings start in `source`.
    lists: u64,
    texts: usize,
    terms: usize,
    postings: u64,
    avgdl: f32,
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = bytes.get(at..at + 8) {
        b.copy_from_slice(s);
    }
    u64::from_le_bytes(b)
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    if let Some(s) = bytes.get(at..at + 4) {
        b.copy_from_slice(s);
    }
    u32::from_le_bytes(b)
}

impl Stored {
    fn open(source: std::sync::Arc<dyn ReadAt>, at: u64, len: u64) -> Result<Stored, StoreError> {
        let bad = |m: String| StoreError::Malformed(m);
        if len < STORED_HEADER as u64 {
            return Err(bad(format!("{len} bytes, shorter than the header")));
        }
        let mut head = [0u8; STORED_HEADER];
        source.read_at(at, &mut head)?;
        if &head[..8] != STORED_MAGIC {
            return Err(bad("wrong magic bytes".into()));
        }
        let version = u32_at(&head, 8);
        if version != STORED_VERSION {
            return Err(bad(format!(
                "layout version {version}, but this build reads {STORED_VERSION}"
            )));
        }
        let count = |at: usize, what: &str| {
            Some(u64_at(&head, at))
                .filter(|n| *n <= u64::from(u32::MAX))
                .ok_or_else(|| bad(format!("{what} count out of range")))
        };
        let (texts, terms, postings) = (
            count(16, "text")?,
            count(24, "term")?,
            count(32, "posting")?,
        );
        let avgdl = f32::from_bits(u32_at(&head, 40));
        if !avgdl.is_finite() || avgdl < 0.0 {
            return Err(bad(format!("mean text length {avgdl}")));
        }
        let expected =
            STORED_HEADER as u64 + terms * TERM_BYTES as u64 + postings * POSTING_BYTES as u64;
        if len != expected {
            return Err(bad(format!(
                "{len} bytes, but the counts in the header need {expected}"
            )));
        }
        let mut raw = vec![0u8; terms as usize * TERM_BYTES];
        source.read_at(at + STORED_HEADER as u64, &mut raw)?;
        let table: Vec<(u64, u64)> = raw
            .chunks_exact(TERM_BYTES)
            .map(|e| (u64_at(e, 0), u64_at(e, 8)))
            .collect();
        check_table(&table, postings)?;
        Ok(Stored {
            source,
            table,
            lists: at + STORED_HEADER as u64 + terms * TERM_BYTES as u64,
            texts: texts as usize,
            terms: terms as usize,
            postings,
            avgdl,
        })
    }

    /// Term `t`'s hash and the range of its postings.
    fn entry(&self, t: usize) -> (u64, std::ops::Range<u64>) {
        let (hash, start) = self.table.get(t).copied().unwrap_or((0, 0));
        let end = self.table.get(t + 1).map_or(self.postings, |e| e.1);
        (hash, start..end)
    }

    /// Reads a range of postings.
    fn postings(&self, range: std::ops::Range<u64>) -> Result<Vec<u8>, StoreError> {
        let mut buf = vec![0u8; (range.end - range.start) as usize * POSTING_BYTES];
        self.source
            .read_at(self.lists + range.start * POSTING_BYTES as u64, &mut buf)?;
        Ok(buf)
    }

    /// The postings of a token hash (binary search of the term table).
    fn list(&self, token: u64) -> Result<Option<Vec<u8>>, StoreError> {
        match self.table.binary_search_by_key(&token, |e| e.0) {
            Ok(t) => self.postings(self.entry(t).1).map(Some),
            Err(_) => Ok(None),
        }
    }
}

/// Hashes strictly ascending; list starts from 0, never decreasing nor past
/// the postings.
fn check_table(table: &[(u64, u64)], postings: u64) -> Result<(), StoreError> {
    let mut previous: Option<(u64, u64)> = None;
    for (t, &(hash, start)) in table.iter().enumerate() {
        let in_order = previous.is_none_or(|(h, s)| hash > h && start >= s);
        if !in_order || (t == 0 && start != 0) || start > postings {
            return Err(StoreError::Malformed(format!(
                "term {t} is out of order or its list starts at {start}"
            )));
        }
        previous = Some((hash, start));
    }
    Ok(())
}

/// One token's postings while an index is written: borrowed or read back.
type ListRef<'a> = std::borrow::Cow<'a, [(u32, f32)]>;

/// One token's postings, wherever they live.
enum List<'a> {
    Memory(&'a [(u32, f32)]),
    Stored(Vec<u8>),
}

impl List<'_> {
    fn len(&self) -> usize {
        match self {
            List::Memory(l) => l.len(),
            List::Stored(b) => b.len() / POSTING_BYTES,
        }
    }

    fn iter(&self) -> impl Iterator<Item = (u32, f32)> + '_ {
        let (memory, stored) = match self {
            List::Memory(l) => (Some(l.iter().copied()), None),
            List::Stored(b) => (
                None,
                Some(
                    b.chunks_exact(POSTING_BYTES)
                        .map(|p| (u32_at(p, 0), f32::from_bits(u32_at(p, 4)))),
                ),
            ),
        };
        memory
            .into_iter()
            .flatten()
            .chain(stored.into_iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXTS: [&str; 5] = [
        "Insulin lowers blood glucose.",
        "The striker scored a goal in the final.",
        "Glucose is a sugar; glucose feeds cells.",
        "",
        "Blood pressure and blood glucose in diabetes.",
    ];

    /// The crate's own search engine over the same texts, as the reference.
    fn reference(texts: &[&str], query: &str, n: usize) -> Vec<(u32, f32)> {
        let docs = texts
            .iter()
            .enumerate()
            .map(|(i, t)| bm25::Document::new(i as u32, t.to_string()));
        let engine =
            bm25::SearchEngineBuilder::<u32, u64, Words>::with_tokenizer_and_documents(Words, docs)
                .k1(1.2)
                .b(0.75)
                .build();
        let mut hits: Vec<(u32, f32)> = engine
            .search(query, None)
            .into_iter()
            .map(|h| (h.document.id, h.score))
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(n);
        hits
    }

    #[test]
    fn scores_equal_the_bm25_crate_to_the_bit() {
        let index = Bm25Index::new(&TEXTS);
        for query in [
            "blood glucose",
            "glucose glucose insulin",
            "goal",
            "nothing matches",
            "",
            "Blood, blood!",
        ] {
            for n in [0, 1, 2, 10] {
                assert_eq!(
                    index.search(query, n).expect("search"),
                    reference(&TEXTS, query, n),
                    "{query} {n}"
                );
            }
        }
    }

    #[test]
    fn ties_go_to_the_lower_index_and_empty_input_is_fine() {
        let index = Bm25Index::new(&["apple pie", "apple pie", "pear"]);
        assert_eq!(
            index
                .search("apple", 1)
                .expect("search")
                .first()
                .map(|h| h.0),
            Some(0),
            "the lower index wins a tie"
        );
        assert!(Bm25Index::new(&[])
            .search("apple", 3)
            .expect("search")
            .is_empty());
        assert!(Bm25Index::new(&[]).is_empty());
    }

    fn stored(index: &Bm25Index) -> Bm25Index {
        let mut bytes = b"pad".to_vec();
        index.write_to(&mut bytes).expect("write");
        let len = bytes.len() as u64;
        assert_eq!(len - 3, index.stored_len());
        Bm25Index::open(std::sync::Arc::new(bytes), 3, len - 3).expect("stored index")
    }

    #[test]
    fn stored_bytes_are_checked() {
        let mut bytes = Vec::new();
        Bm25Index::new(&TEXTS).write_to(&mut bytes).expect("write");
        let ok = |b: Vec<u8>| {
            let len = b.len() as u64;
            Bm25Index::open(std::sync::Arc::new(b), 0, len).is_ok()
        };
        assert!(ok(bytes.clone()));
        assert!(!ok(bytes[..bytes.len() - 1].to_vec()), "truncated");
        let mut wrong = bytes.clone();
        wrong[0] = b'X';
        assert!(!ok(wrong), "magic");
        let mut swapped = bytes.clone();
        // Two terms' hashes swapped: out of order.
        let (a, b) = (STORED_HEADER, STORED_HEADER + TERM_BYTES);
        let first: Vec<u8> = swapped[a..a + 8].to_vec();
        let second: Vec<u8> = swapped[b..b + 8].to_vec();
        swapped[a..a + 8].copy_from_slice(&second);
        swapped[b..b + 8].copy_from_slice(&first);
        assert!(!ok(swapped), "order");
        let huge = Bm25Index::open(std::sync::Arc::new(bytes.clone()), 5, u64::MAX);
        assert!(huge.is_err(), "range");
    }

    proptest::proptest! {
        #[test]
        fn stored_indexes_score_as_built_ones(
            texts in proptest::collection::vec("[a-f ]{0,24}", 0..30),
            query in "[a-g ]{0,12}",
            n in 0usize..40,
        ) {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let index = Bm25Index::new(&texts);
            let stored = stored(&index);
            proptest::prop_assert_eq!(stored.len(), index.len());
            proptest::prop_assert_eq!(stored.search(&query, n).expect("stored"), index.search(&query, n).expect("memory"));
            // Written again from its stored form: the same bytes.
            let (mut a, mut b) = (Vec::new(), Vec::new());
            index.write_to(&mut a).expect("write");
            stored.write_to(&mut b).expect("write");
            proptest::prop_assert_eq!(a, b);
        }

        #[test]
        fn any_bytes_are_an_index_or_an_error(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200), query in "[a-g ]{0,12}") {
            let mut valid = Vec::new();
            Bm25Index::new(&["ab cd", "cd ef"]).write_to(&mut valid).expect("write");
            for b in [bytes.clone(), [valid[..valid.len().min(56)].to_vec(), bytes].concat()] {
                let len = b.len() as u64;
                if let Ok(index) = Bm25Index::open(std::sync::Arc::new(b), 0, len) {
                    let _ = index.search(&query, 5);
                }
            }
        }

        #[test]
        fn any_texts_score_as_the_crate_does(
            texts in proptest::collection::vec("[a-f ]{0,24}", 0..30),
            query in "[a-g ]{0,12}",
            n in 0usize..40,
        ) {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let index = Bm25Index::new(&texts);
            proptest::prop_assert_eq!(index.search(&query, n).expect("search"), reference(&texts, &query, n));
        }
    }
}

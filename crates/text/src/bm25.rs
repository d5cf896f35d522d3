//! A BM25 inverted index over a fixed list of texts: the lexical entry of
//! the navigator and the flat BM25 baseline of the bench.
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

/// A BM25 index over texts numbered 0, 1, … in the order given.
pub struct Bm25Index {
    embedder: Embedder<u64, Words>,
    /// Token hash → its slot in `postings`.
    slots: HashMap<u64, u32>,
    /// Per token: (text, term weight) for every text holding it, by text.
    postings: Vec<Vec<(u32, f32)>>,
    texts: usize,
}

impl std::fmt::Debug for Bm25Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bm25Index")
            .field("texts", &self.texts)
            .field("terms", &self.postings.len())
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
            slots,
            postings,
            texts: texts.len(),
        }
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
    /// left out.
    pub fn search(&self, query: &str, n: usize) -> Vec<(u32, f32)> {
        let mut scores = vec![0f32; self.texts];
        let mut touched: Vec<u32> = Vec::new();
        let total = self.texts as f32;
        for token in self.embedder.embed(query).iter() {
            let Some(list) = self
                .slots
                .get(&token.index)
                .map(|s| &self.postings[*s as usize])
            else {
                continue;
            };
            let df = list.len() as f32;
            let idf = (1f32 + ((total - df + 0.5) / (df + 0.5))).ln();
            for (doc, weight) in list {
                let score = &mut scores[*doc as usize];
                if *score == 0.0 {
                    touched.push(*doc);
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
        hits
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
                    index.search(query, n),
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
            index.search("apple", 1).first().map(|h| h.0),
            Some(0),
            "the lower index wins a tie"
        );
        assert!(Bm25Index::new(&[]).search("apple", 3).is_empty());
        assert!(Bm25Index::new(&[]).is_empty());
    }

    proptest::proptest! {
        #[test]
        fn any_texts_score_as_the_crate_does(
            texts in proptest::collection::vec("[a-f ]{0,24}", 0..30),
            query in "[a-g ]{0,12}",
            n in 0usize..40,
        ) {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let index = Bm25Index::new(&texts);
            proptest::prop_assert_eq!(index.search(&query, n), reference(&texts, &query, n));
        }
    }
}

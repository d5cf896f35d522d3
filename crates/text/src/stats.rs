//! Corpus statistics for BM25's IDF and length normalisation: what the
//! lexical judge scores passages with. Computed once per tree (at build
//! time, stored beside it) rather than at every start.

use crate::terms;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// Corpus statistics for BM25's IDF and length normalisation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CorpusStats {
    /// Number of documents (or passages) the frequencies count.
    pub documents: u64,
    /// Mean number of terms per document.
    pub mean_terms: f64,
    /// Document frequency per term (terms as [`crate::terms`] yields them).
    pub df: HashMap<String, u64>,
}

impl CorpusStats {
    /// Statistics over a list of texts.
    pub fn from_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> CorpusStats {
        let mut stats = CorpusStats::default();
        let mut total = 0u64;
        for text in texts {
            let mut seen = HashSet::new();
            for t in terms(text) {
                total += 1;
                if seen.insert(t.clone()) {
                    *stats.df.entry(t).or_insert(0) += 1;
                }
            }
            stats.documents += 1;
        }
        stats.mean_terms = total as f64 / stats.documents.max(1) as f64;
        stats
    }

    /// BM25's IDF of a term: ln(1 + (N − df + 0.5) / (df + 0.5)).
    pub fn idf(&self, term: &str) -> f64 {
        let n = self.documents as f64;
        let df = self.df.get(term).copied().unwrap_or(0) as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }
}

//! Corpus statistics for BM25's IDF and length normalisation: what the
//! lexical judge scores passages with. Computed once per tree (at build
//! time, stored beside it) rather than at every start.

use crate::analyzer::Analyzer;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// Corpus statistics for BM25's IDF and length normalisation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CorpusStats {
    /// Number of documents (or passages) the frequencies count.
    pub documents: u64,
    /// Mean number of terms per document.
    pub mean_terms: f64,
    /// Document frequency per term (terms as `analyzer` gives them).
    pub df: HashMap<String, u64>,
    /// The analyzer the terms come from: queries and texts scored with
    /// these statistics are analyzed with it.
    #[serde(default)]
    pub analyzer: Analyzer,
}

impl CorpusStats {
    /// Statistics over a list of texts, with the default analyzer.
    pub fn from_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> CorpusStats {
        CorpusStats::from_texts_with(Analyzer::default(), texts)
    }

    /// Statistics over a list of texts, with `analyzer`.
    pub fn from_texts_with<'a>(
        analyzer: Analyzer,
        texts: impl IntoIterator<Item = &'a str>,
    ) -> CorpusStats {
        let mut stats = CorpusStats {
            analyzer,
            ..CorpusStats::default()
        };
        let mut total = 0u64;
        for text in texts {
            let mut seen = HashSet::new();
            for t in analyzer.terms(text) {
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

    /// [`CorpusStats::from_texts`] over many texts, counted in parallel a
    /// chunk at a time and merged (the same statistics: counts are whole
    /// numbers, the mean is taken once at the end).
    pub fn from_many<S: AsRef<str> + Sync>(analyzer: Analyzer, texts: &[S]) -> CorpusStats {
        use rayon::prelude::*;
        let parts: Vec<(HashMap<String, u64>, u64)> = texts
            .par_chunks(4096)
            .map(|chunk| {
                let mut df: HashMap<String, u64> = HashMap::new();
                let mut total = 0u64;
                let mut seen = HashSet::new();
                for text in chunk {
                    seen.clear();
                    for t in analyzer.terms(text.as_ref()) {
                        total += 1;
                        if seen.insert(t.clone()) {
                            *df.entry(t).or_insert(0) += 1;
                        }
                    }
                }
                (df, total)
            })
            .collect();
        let mut stats = CorpusStats {
            documents: texts.len() as u64,
            analyzer,
            ..CorpusStats::default()
        };
        let mut total = 0u64;
        for (df, t) in parts {
            total += t;
            for (term, n) in df {
                *stats.df.entry(term).or_insert(0) += n;
            }
        }
        stats.mean_terms = total as f64 / stats.documents.max(1) as f64;
        stats
    }

    /// BM25's IDF of a term (as the statistics' analyzer gives it):
    /// ln(1 + (N − df + 0.5) / (df + 0.5)).
    pub fn idf(&self, term: &str) -> f64 {
        let n = self.documents as f64;
        let df = self.df.get(term).copied().unwrap_or(0) as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn counted_in_parallel_as_in_series(texts in proptest::collection::vec("[a-f ]{0,24}", 0..6000)) {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            proptest::prop_assert_eq!(CorpusStats::from_many(Analyzer::EnStem, &texts), CorpusStats::from_texts(refs));
        }
    }
}

//! BM25 scores of a few texts against a query with a corpus's statistics:
//! the one formula the lexical judge scores with and the navigator orders a
//! document's passages by. Term counts are cached per text.

use crate::analyzer::Analyzer;
use crate::stats::CorpusStats;
use std::sync::Arc;

/// BM25's k1 by default.
pub const K1: f64 = 1.2;
/// BM25's b by default.
pub const B: f64 = 0.75;

/// The terms of one text: (term hash, count) sorted by hash, and the total.
#[derive(Debug)]
struct TermCounts {
    terms: Box<[(u64, u32)]>,
    total: f64,
}

impl TermCounts {
    fn of(analyzer: Analyzer, text: &str) -> TermCounts {
        let mut hashes: Vec<u64> = analyzer
            .terms(text)
            .iter()
            .map(|t| crate::term_hash(t))
            .collect();
        let total = hashes.len() as f64;
        hashes.sort_unstable();
        let mut counts: Vec<(u64, u32)> = Vec::with_capacity(hashes.len());
        for h in hashes {
            match counts.last_mut() {
                Some((last, n)) if *last == h => *n += 1,
                _ => counts.push((h, 1)),
            }
        }
        TermCounts {
            terms: counts.into_boxed_slice(),
            total,
        }
    }

    fn count(&self, term: u64) -> u32 {
        self.terms
            .binary_search_by_key(&term, |(h, _)| *h)
            .map_or(0, |i| self.terms[i].1)
    }
}

/// Term counts are a function of the text alone, so one cache serves every
/// lexical judge and navigator in the process: candidate texts
/// (cluster cards, document views, passages) recur from query to query.
fn term_counts(analyzer: Analyzer, text: &str, key: u128) -> Arc<TermCounts> {
    type Cache = quick_cache::sync::Cache<(u128, Analyzer), Arc<TermCounts>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(|| quick_cache::sync::Cache::new(200_000));
    if let Some(hit) = cache.get(&(key, analyzer)) {
        return hit;
    }
    let counts = Arc::new(TermCounts::of(analyzer, text));
    cache.insert((key, analyzer), counts.clone());
    counts
}

/// BM25 score of each text (with its [`crate::fingerprint`] as the cache
/// key) against `query`, with the IDF and mean length of `stats`; query
/// and texts analyzed with the statistics' analyzer.
pub fn bm25<'a>(
    stats: &CorpusStats,
    query: &str,
    texts: impl IntoIterator<Item = (&'a str, u128)>,
    k1: f64,
    b: f64,
) -> Vec<f64> {
    let avg = if stats.mean_terms > 0.0 {
        stats.mean_terms
    } else {
        1.0
    };
    let analyzer = stats.analyzer;
    let mut query_terms: Vec<String> = analyzer.terms(query);
    query_terms.sort();
    query_terms.dedup();
    // (term hash, IDF) once per call, in the sorted order the sum runs.
    let query_terms: Vec<(u64, f64)> = query_terms
        .iter()
        .map(|t| (crate::term_hash(t), stats.idf(t)))
        .collect();
    texts
        .into_iter()
        .map(|(text, key)| {
            let tf = term_counts(analyzer, text, key);
            let norm = k1 * (1.0 - b + b * tf.total / avg);
            query_terms
                .iter()
                .map(|(t, idf)| {
                    let f = f64::from(tf.count(*t));
                    if f == 0.0 {
                        return 0.0;
                    }
                    idf * f * (k1 + 1.0) / (f + norm)
                })
                .sum()
        })
        .collect()
}

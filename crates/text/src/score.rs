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

/// The term-count cache's bound in bytes ([`TermCounts::weight`]).
const CACHED_BYTES: u64 = 64 << 20;

/// A text's term counts leave the cache when no query read them for this
/// long: a served tree that takes updates makes new texts (added passages,
/// document views and cluster cards) and leaves the old ones unread, and an
/// entry-bounded cache kept them until it was full (a soak of adds and
/// removes under `serve` grew by 0.2 MiB a minute, docs/serve.md). Texts a
/// burst of queries shares (cluster cards, popular documents) are read
/// within the minute and stay; the others are analysed again when next met.
const CACHED_IDLE: std::time::Duration = std::time::Duration::from_secs(60);

impl TermCounts {
    /// The bytes an entry holds: the counts, the struct and the cache key.
    fn weight(&self) -> u32 {
        let terms = self.terms.len() * std::mem::size_of::<(u64, u32)>();
        let fixed = std::mem::size_of::<TermCounts>() + std::mem::size_of::<(u128, Analyzer)>();
        u32::try_from(terms + fixed).unwrap_or(u32::MAX)
    }
}

type TermCache = moka::sync::Cache<(u128, Analyzer), Arc<TermCounts>>;

/// Term counts are a function of the text alone, so one cache serves every
/// lexical judge and navigator in the process: candidate texts
/// (cluster cards, document views, passages) recur from query to query.
/// Bounded by bytes ([`CACHED_BYTES`]) and by idleness ([`CACHED_IDLE`]).
fn term_cache() -> &'static TermCache {
    static CACHE: std::sync::OnceLock<TermCache> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| new_term_cache(CACHED_BYTES, CACHED_IDLE))
}

fn new_term_cache(bytes: u64, idle: std::time::Duration) -> TermCache {
    moka::sync::Cache::builder()
        .max_capacity(bytes)
        .weigher(|_, counts: &Arc<TermCounts>| counts.weight())
        .time_to_idle(idle)
        .build()
}

fn term_counts(analyzer: Analyzer, text: &str, key: u128) -> Arc<TermCounts> {
    cached(term_cache(), analyzer, text, key)
}

fn cached(cache: &TermCache, analyzer: Analyzer, text: &str, key: u128) -> Arc<TermCounts> {
    cache.get_with((key, analyzer), || Arc::new(TermCounts::of(analyzer, text)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn text(i: usize) -> String {
        format!("a passage about rivers and engines, number {i}")
    }

    #[test]
    fn texts_no_query_reads_leave_the_cache() {
        let cache = new_term_cache(CACHED_BYTES, Duration::from_millis(200));
        for i in 0..50 {
            cached(&cache, Analyzer::EnStem, &text(i), i as u128);
        }
        cache.run_pending_tasks();
        assert_eq!(cache.entry_count(), 50);
        std::thread::sleep(Duration::from_millis(400));
        cache.run_pending_tasks();
        assert_eq!(cache.entry_count(), 0, "idle entries stayed");
    }

    #[test]
    fn the_cache_holds_at_most_its_bytes_and_counts_stay_right() {
        let one = new_term_cache(u64::MAX, CACHED_IDLE);
        let weight = u64::from(cached(&one, Analyzer::EnStem, &text(0), 0).weight());
        assert!(weight > 100, "{weight}");
        let cache = new_term_cache(10 * weight, CACHED_IDLE);
        for i in 0..1_000 {
            let counts = cached(&cache, Analyzer::EnStem, &text(i), i as u128);
            assert_eq!(counts.count(crate::term_hash("river")), 1);
        }
        cache.run_pending_tasks();
        assert!(
            cache.weighted_size() <= 10 * weight,
            "{}",
            cache.weighted_size()
        );
        assert!(cache.entry_count() > 0);
    }
}

//! BM25 scores of a few texts against a query with a corpus's statistics:
//! the one formula the lexical judge scores with and the navigator orders a
//! document's passages by. Term counts are cached per text.

use crate::analyzer::Analyzer;
use crate::stats::CorpusStats;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// The term-count cache's bound in bytes ([`TermCounts::weight`]), split
/// between its two generations.
const CACHED_BYTES: u64 = 64 << 20;

/// How long a generation of the cache lasts: a text no query read for one
/// to two of these leaves it. A served tree that takes updates makes new
/// texts (added passages, document views and cluster cards) and leaves the
/// old ones unread, and the entry-bounded cache before kept them until it
/// was full (a soak of adds and removes under `serve` grew by 0.2 MiB a
/// minute, docs/serve.md). Texts a burst of queries shares (cluster cards,
/// popular documents) are read within the minute and stay; the others are
/// analysed again when next met.
const CACHED_IDLE: Duration = Duration::from_secs(60);

impl TermCounts {
    /// The bytes an entry holds: the counts, the struct and the cache key.
    fn weight(&self) -> u64 {
        let terms = self.terms.len() * std::mem::size_of::<(u64, u32)>();
        let fixed = std::mem::size_of::<TermCounts>() + std::mem::size_of::<(u128, Analyzer)>();
        (terms + fixed) as u64
    }
}

#[derive(Clone)]
struct ByBytes;

impl quick_cache::Weighter<(u128, Analyzer), Arc<TermCounts>> for ByBytes {
    fn weight(&self, _key: &(u128, Analyzer), counts: &Arc<TermCounts>) -> u64 {
        counts.weight()
    }
}

type Generation = quick_cache::sync::Cache<(u128, Analyzer), Arc<TermCounts>, ByBytes>;

/// Term counts by text, in two generations: lookups and inserts go to the
/// current one, a hit in the previous one moves there, and every
/// [`CACHED_IDLE`] the previous generation is emptied and becomes the
/// current one. An unread text thus leaves after one to two periods, at
/// the cost of one clock read per lookup (a cache that tracks each entry's
/// idle time, moka's, made the default query ≈ 10% slower).
struct TermCache {
    generations: [Generation; 2],
    period: Duration,
    start: Instant,
    /// The period the current generation belongs to.
    epoch: AtomicU64,
}

impl TermCache {
    fn new(bytes: u64, period: Duration) -> TermCache {
        let generation = || Generation::with_weighter(4096, (bytes / 2).max(1), ByBytes);
        TermCache {
            generations: [generation(), generation()],
            period: period.max(Duration::from_millis(1)),
            start: Instant::now(),
            epoch: AtomicU64::new(0),
        }
    }

    /// The current generation and the previous one, after emptying what
    /// the clock says is stale.
    fn generations(&self) -> (&Generation, &Generation) {
        let now = (self.start.elapsed().as_nanos() / self.period.as_nanos()) as u64;
        let seen = self.epoch.load(Ordering::Acquire);
        if now > seen
            && self
                .epoch
                .compare_exchange(seen, now, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // The new current generation held what the one before last
            // read; after two periods or more, both are stale.
            self.generations[(now % 2) as usize].clear();
            if now - seen >= 2 {
                self.generations[((now + 1) % 2) as usize].clear();
            }
        }
        let epoch = self.epoch.load(Ordering::Acquire);
        (
            &self.generations[(epoch % 2) as usize],
            &self.generations[((epoch + 1) % 2) as usize],
        )
    }

    fn get(&self, analyzer: Analyzer, text: &str, key: u128) -> Arc<TermCounts> {
        let (current, previous) = self.generations();
        let key = (key, analyzer);
        if let Some(hit) = current.get(&key) {
            return hit;
        }
        let counts = previous
            .get(&key)
            .unwrap_or_else(|| Arc::new(TermCounts::of(analyzer, text)));
        current.insert(key, counts.clone());
        counts
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        let (current, previous) = self.generations();
        current.len() + previous.len()
    }

    #[cfg(test)]
    fn weight(&self) -> u64 {
        self.generations.iter().map(Generation::weight).sum()
    }
}

/// Term counts are a function of the text alone, so one cache serves every
/// lexical judge and navigator in the process: candidate texts
/// (cluster cards, document views, passages) recur from query to query.
fn term_counts(analyzer: Analyzer, text: &str, key: u128) -> Arc<TermCounts> {
    static CACHE: std::sync::OnceLock<TermCache> = std::sync::OnceLock::new();
    CACHE
        .get_or_init(|| TermCache::new(CACHED_BYTES, CACHED_IDLE))
        .get(analyzer, text, key)
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

    fn text(i: usize) -> String {
        format!("a passage about rivers and engines, number {i}")
    }

    #[test]
    fn texts_no_query_reads_leave_the_cache() {
        let cache = TermCache::new(CACHED_BYTES, Duration::from_millis(300));
        for i in 0..50 {
            cache.get(Analyzer::EnStem, &text(i), i as u128);
        }
        assert_eq!(cache.len(), 50);
        // Read again within the period: kept.
        std::thread::sleep(Duration::from_millis(350));
        cache.get(Analyzer::EnStem, &text(0), 0);
        assert!(cache.len() >= 1, "a text read each period was dropped");
        // Two periods without a read: gone (the one read moves on).
        std::thread::sleep(Duration::from_millis(700));
        assert_eq!(cache.len(), 0, "idle entries stayed");
    }

    #[test]
    fn the_cache_holds_at_most_its_bytes_and_counts_stay_right() {
        let one = TermCache::new(u64::MAX, CACHED_IDLE);
        let weight = one.get(Analyzer::EnStem, &text(0), 0).weight();
        assert!(weight > 100, "{weight}");
        let cache = TermCache::new(20 * weight, CACHED_IDLE);
        for i in 0..1_000 {
            let counts = cache.get(Analyzer::EnStem, &text(i), i as u128);
            assert_eq!(counts.count(crate::term_hash("river")), 1);
        }
        assert!(cache.weight() <= 20 * weight, "{}", cache.weight());
        assert!(cache.len() > 0);
    }
}

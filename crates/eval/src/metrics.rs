//! Ranking metrics over one query's ranked list, and their means.
//!
//! A ranking is given as one entry per ranked item: `Some(u)` when the item
//! is relevant and covers gold unit `u` (a gold passage or document), `None`
//! otherwise. Relevance is binary.
//!
//! * Hit@k: a relevant item in the top k.
//! * Recall@10: distinct gold units covered by the top 10, over all gold units.
//! * MRR@10: 1 / rank of the first relevant item in the top 10, else 0.
//! * nDCG@10: DCG = Σ 1/log2(rank + 1) over relevant items in the top 10;
//!   the ideal ranks `min(10, relevant_items)` relevant items first.

use serde::Serialize;

/// Metrics of one query (or their means over queries).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// A relevant item ranked first.
    pub hit_at_1: f64,
    /// A relevant item in the top 5.
    pub hit_at_5: f64,
    /// Share of gold units covered by the top 10.
    pub recall_at_10: f64,
    /// Reciprocal rank of the first relevant item in the top 10.
    pub mrr_at_10: f64,
    /// Normalised discounted cumulative gain at 10.
    pub ndcg_at_10: f64,
    /// Share of the gold documents among everything the system showed the
    /// judge (document level of judge systems only; averaged over queries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged_recall: Option<f64>,
}

/// Scores one ranking. `gold_units` is how many gold units exist (for
/// recall), `relevant_items` how many items in the whole collection are
/// relevant (for nDCG's ideal; at least `gold_units` for sensible input).
/// With no gold, every metric is 0.
pub fn score(ranked: &[Option<usize>], gold_units: usize, relevant_items: usize) -> Metrics {
    if gold_units == 0 || relevant_items == 0 {
        return Metrics::default();
    }
    let top = |k: usize| ranked.iter().take(k);
    let hit = |k: usize| f64::from(u8::from(top(k).any(Option::is_some)));
    let mut covered: Vec<usize> = top(10).flatten().copied().collect();
    covered.sort_unstable();
    covered.dedup();
    let first = top(10).position(Option::is_some);
    let gain = |rank0: usize| 1.0 / ((rank0 + 2) as f64).log2();
    let dcg: f64 = top(10)
        .enumerate()
        .filter(|(_, r)| r.is_some())
        .map(|(i, _)| gain(i))
        .sum();
    let ideal: f64 = (0..relevant_items.min(10)).map(gain).sum();
    Metrics {
        hit_at_1: hit(1),
        hit_at_5: hit(5),
        recall_at_10: covered.len() as f64 / gold_units as f64,
        mrr_at_10: first.map_or(0.0, |i| 1.0 / (i + 1) as f64),
        ndcg_at_10: dcg / ideal,
        judged_recall: None,
    }
}

/// Running means of [`Metrics`].
#[derive(Debug, Clone, Default)]
pub struct Mean {
    sum: Metrics,
    n: usize,
}

impl Mean {
    /// Adds one query's metrics.
    pub fn add(&mut self, m: &Metrics) {
        self.sum.hit_at_1 += m.hit_at_1;
        self.sum.hit_at_5 += m.hit_at_5;
        self.sum.recall_at_10 += m.recall_at_10;
        self.sum.mrr_at_10 += m.mrr_at_10;
        self.sum.ndcg_at_10 += m.ndcg_at_10;
        self.n += 1;
    }

    /// The means (all 0 with no query).
    pub fn get(&self) -> Metrics {
        let n = self.n.max(1) as f64;
        Metrics {
            hit_at_1: self.sum.hit_at_1 / n,
            hit_at_5: self.sum.hit_at_5 / n,
            recall_at_10: self.sum.recall_at_10 / n,
            mrr_at_10: self.sum.mrr_at_10 / n,
            ndcg_at_10: self.sum.ndcg_at_10 / n,
            judged_recall: None,
        }
    }
}

/// The `q`-quantile (0–1) of values by the nearest-rank method; 0 when empty.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = (q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn first_place_hit() {
        let m = score(&[Some(0), None, None], 1, 1);
        assert_eq!(
            m,
            Metrics {
                hit_at_1: 1.0,
                hit_at_5: 1.0,
                recall_at_10: 1.0,
                mrr_at_10: 1.0,
                ndcg_at_10: 1.0,
                judged_recall: None,
            }
        );
    }

    #[test]
    fn third_place_hit() {
        let m = score(&[None, None, Some(0), None], 1, 1);
        assert_eq!(m.hit_at_1, 0.0);
        assert_eq!(m.hit_at_5, 1.0);
        assert!(close(m.mrr_at_10, 1.0 / 3.0));
        // DCG = 1/log2(4) = 0.5; ideal = 1.
        assert!(close(m.ndcg_at_10, 0.5));
    }

    #[test]
    fn sixth_place_is_not_a_hit_at_5_but_counts_at_10() {
        let ranked = [None, None, None, None, None, Some(0)];
        let m = score(&ranked, 1, 1);
        assert_eq!((m.hit_at_5, m.recall_at_10), (0.0, 1.0));
        assert!(close(m.mrr_at_10, 1.0 / 6.0));
        assert!(close(m.ndcg_at_10, 1.0 / 7f64.log2()));
    }

    #[test]
    fn eleventh_place_counts_for_nothing() {
        let mut ranked = vec![None; 10];
        ranked.push(Some(0));
        assert_eq!(score(&ranked, 1, 1), Metrics::default());
    }

    #[test]
    fn two_gold_documents_one_found_twice() {
        // Gold units 0 and 1; unit 0 is covered at ranks 2 and 4; 3 relevant
        // items exist in the collection.
        let m = score(&[None, Some(0), None, Some(0)], 2, 3);
        assert!(close(m.recall_at_10, 0.5));
        assert!(close(m.mrr_at_10, 0.5));
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let ideal = 1.0 + 1.0 / 3f64.log2() + 1.0 / 4f64.log2();
        assert!(close(m.ndcg_at_10, dcg / ideal));
    }

    #[test]
    fn empty_ranking_and_no_gold() {
        assert_eq!(score(&[], 1, 1), Metrics::default());
        assert_eq!(score(&[Some(0)], 0, 0), Metrics::default());
    }

    #[test]
    fn means_and_quantiles() {
        let mut mean = Mean::default();
        mean.add(&score(&[Some(0)], 1, 1));
        mean.add(&score(&[None, Some(0)], 1, 1));
        let m = mean.get();
        assert!(close(m.hit_at_1, 0.5) && close(m.mrr_at_10, 0.75));
        let v = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        assert_eq!(quantile(&v, 0.95), 5.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }
}

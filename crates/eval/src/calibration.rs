//! Whether a system's `score` means what it says: expected calibration
//! error and a reliability table over the top of each ranking.
//!
//! A score is read as P(relevant); the scores of every query's top
//! [`TOP`] are put into [`BINS`] equal-width bins, and each bin's mean
//! score is set against the share of its passages that are relevant (a
//! gold passage; for document-level gold, any passage of a gold document).
//! ECE is the gap averaged over the bins, weighted by their counts
//! (Guo et al., 2017). Systems without a probability (BM25, dense, hybrid)
//! have none.

use serde::Serialize;

/// How deep into each ranking the scores are read (the depth nDCG@10 reads).
pub const TOP: usize = 10;
/// Equal-width bins over [0, 1].
pub const BINS: usize = 10;

/// Expected calibration error and its reliability table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// Σ over bins of count/total × |mean score − share relevant|.
    pub ece: f64,
    /// Scores read (top [`TOP`] of every query).
    pub scores: usize,
    /// The non-empty bins, lowest first.
    pub bins: Vec<Bin>,
}

/// One bin of the reliability table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bin {
    /// Lower edge (inclusive).
    pub low: f64,
    /// Upper edge (exclusive; the last bin includes 1).
    pub high: f64,
    /// Scores in the bin.
    pub count: usize,
    /// Their mean.
    pub mean_score: f64,
    /// The share of their passages that are relevant.
    pub relevant: f64,
}

/// The calibration of `(score, relevant)` pairs; `None` when there are none.
/// Scores outside [0, 1] (or not finite) are not probabilities: such a
/// system has no calibration either.
pub fn calibration(pairs: impl IntoIterator<Item = (f64, bool)>) -> Option<Calibration> {
    let mut sums = [(0usize, 0.0f64, 0usize); BINS];
    let mut total = 0usize;
    for (score, relevant) in pairs {
        if !(0.0..=1.0).contains(&score) {
            return None;
        }
        // The last bin holds 1 itself.
        let i = ((score * BINS as f64) as usize).min(BINS - 1);
        sums[i].0 += 1;
        sums[i].1 += score;
        sums[i].2 += usize::from(relevant);
        total += 1;
    }
    if total == 0 {
        return None;
    }
    let mut ece = 0.0;
    let mut bins = Vec::new();
    for (i, (count, sum, hits)) in sums.into_iter().enumerate() {
        if count == 0 {
            continue;
        }
        let mean_score = sum / count as f64;
        let relevant = hits as f64 / count as f64;
        ece += count as f64 / total as f64 * (mean_score - relevant).abs();
        bins.push(Bin {
            low: i as f64 / BINS as f64,
            high: (i + 1) as f64 / BINS as f64,
            count,
            mean_score,
            relevant,
        });
    }
    Some(Calibration {
        ece,
        scores: total,
        bins,
    })
}

impl Calibration {
    /// One line: the ECE, then each bin as `low–high: count at mean → share`.
    pub fn line(&self) -> String {
        let bins: Vec<String> = self
            .bins
            .iter()
            .map(|b| {
                format!(
                    "{:.1}–{:.1}: {} at {:.2} → {:.2}",
                    b.low, b.high, b.count, b.mean_score, b.relevant
                )
            })
            .collect();
        format!(
            "ECE {:.3} over {} scores (top {TOP}, {BINS} bins); reliability (bin: scores at mean score → share relevant): {}",
            self.ece,
            self.scores,
            bins.join(" · ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibrated_score_has_no_error_and_an_overconfident_one_has() {
        // Scores of 0.25 relevant a quarter of the time, 0.95 19 times in 20.
        let mut pairs: Vec<(f64, bool)> = (0..4).map(|i| (0.25, i == 0)).collect();
        pairs.extend((0..20).map(|i| (0.95, i != 0)));
        let c = calibration(pairs).expect("pairs");
        assert!(c.ece < 1e-12, "{c:?}");
        assert_eq!(c.scores, 24);
        assert_eq!(c.bins.len(), 2);
        assert_eq!((c.bins[0].low, c.bins[0].count), (0.2, 4));
        assert_eq!((c.bins[1].high, c.bins[1].count), (1.0, 20));

        // Always 0.9, relevant half the time: off by 0.4.
        let c = calibration((0..10).map(|i| (0.9, i % 2 == 0))).expect("pairs");
        assert!((c.ece - 0.4).abs() < 1e-12, "{c:?}");
        assert!(
            c.line().starts_with("ECE 0.400 over 10 scores"),
            "{}",
            c.line()
        );
    }

    #[test]
    fn one_and_zero_fall_in_the_end_bins_and_a_non_probability_has_none() {
        let c = calibration([(1.0, true), (0.0, false)]).expect("pairs");
        assert_eq!(c.bins.len(), 2);
        assert_eq!((c.bins[0].low, c.bins[1].low), (0.0, 0.9));
        assert_eq!(c.ece, 0.0);
        assert_eq!(calibration([(0.5, true), (1.7, false)]), None);
        assert_eq!(calibration([(f64::NAN, true)]), None);
        assert_eq!(calibration(std::iter::empty()), None);
    }
}

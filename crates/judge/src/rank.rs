//! The one calibrated ranking path: a list of candidates for a query, judged
//! in shared-context batches with reference candidates, then the shortlist
//! rerank. The navigator, the pruner's callers and the bench's baselines all
//! rank through here; nothing else splits a list into batches.
//!
//! A level (or list) larger than one batch is split; with calibration on,
//! the first [`REFERENCES`] candidates are shown in every batch and each
//! batch's logits are shifted so that the references' mean logit agrees
//! across batches: a judge that scores relative to its context then ranks
//! the whole list on one scale.

use crate::{Candidate, Judge, Result, Usage};
use std::ops::Range;

/// Reference candidates shown in every batch when calibration is on.
pub const REFERENCES: usize = 2;

/// Probabilities this close to 0 or 1 are saturated (see [`BatchPlan::combine`]).
const SATURATED: f64 = 1e-6;

/// How `n` candidates are split into batches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchPlan {
    size: usize,
    ranges: Vec<Range<usize>>,
    refs: Vec<usize>,
    members: Vec<Vec<usize>>,
}

fn logit(p: f64) -> f64 {
    let p = p.clamp(1e-6, 1.0 - 1e-6);
    (p / (1.0 - p)).ln()
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

impl BatchPlan {
    /// Batches of at most `batch_size` (at least 1) over `n` candidates; the
    /// first [`REFERENCES`] candidates are references when `calibration` is
    /// on and there is more than one batch.
    pub fn new(n: usize, batch_size: usize, calibration: bool) -> BatchPlan {
        let size = batch_size.max(1);
        let ranges: Vec<Range<usize>> = (0..n)
            .step_by(size)
            .map(|start| start..(start + size).min(n))
            .collect();
        let refs: Vec<usize> = if calibration && ranges.len() > 1 {
            (0..REFERENCES.min(n)).collect()
        } else {
            Vec::new()
        };
        let members = ranges
            .iter()
            .map(|r| {
                let mut m: Vec<usize> = r.clone().collect();
                m.extend(refs.iter().filter(|x| !r.contains(x)));
                m
            })
            .collect();
        BatchPlan {
            size,
            ranges,
            refs,
            members,
        }
    }

    /// The candidate indices shown in each batch: its own, then any
    /// reference it lacks.
    pub fn batches(&self) -> &[Vec<usize>] {
        &self.members
    }

    /// Candidates shown over all batches: each reference counts once per
    /// batch that shows it.
    pub fn shown(&self) -> usize {
        self.members.iter().map(Vec::len).sum()
    }

    /// The most candidates whose batches show at most `budget` in all
    /// (references included).
    pub fn fit(budget: usize, batch_size: usize, calibration: bool) -> usize {
        let mut n = budget;
        while n > 0 && BatchPlan::new(n, batch_size, calibration).shown() > budget {
            n -= 1;
        }
        n
    }

    /// Whether calibration applies (references are shown).
    pub fn calibrated(&self) -> bool {
        !self.refs.is_empty()
    }

    /// The batch that scores candidate `i` (its own batch, not the ones it
    /// visits as a reference).
    pub fn batch_of(&self, i: usize) -> usize {
        i / self.size
    }

    /// Combines each batch's probabilities (in [`BatchPlan::batches`] order)
    /// into one score per candidate. Fails with the batch index when a batch
    /// has the wrong number of answers.
    pub fn combine(&self, per_batch: &[Vec<f64>]) -> Result<Vec<f64>, (usize, String)> {
        if per_batch.len() != self.members.len() {
            return Err((
                0,
                format!(
                    "{} batches answered, {} sent",
                    per_batch.len(),
                    self.members.len()
                ),
            ));
        }
        for (b, (members, p)) in self.members.iter().zip(per_batch).enumerate() {
            if p.len() != members.len() {
                return Err((
                    b,
                    format!("{} answers for {} candidates", p.len(), members.len()),
                ));
            }
        }
        // A reference answered 0 or 1 (saturated) in any batch carries no
        // scale: its clamped logit would shift that batch by an arbitrary
        // amount. Only references unsaturated everywhere calibrate.
        let usable: Vec<usize> = self
            .refs
            .iter()
            .copied()
            .filter(|r| {
                self.members.iter().zip(per_batch).all(|(members, p)| {
                    members
                        .iter()
                        .zip(p)
                        .filter(|(m, _)| *m == r)
                        .all(|(_, p)| *p > SATURATED && *p < 1.0 - SATURATED)
                })
            })
            .collect();
        let shift: Vec<f64> = if self.calibrated() && !usable.is_empty() {
            let ref_mean: Vec<f64> = self
                .members
                .iter()
                .zip(per_batch)
                .map(|(members, p)| {
                    let l: Vec<f64> = members
                        .iter()
                        .zip(p)
                        .filter(|(m, _)| usable.contains(m))
                        .map(|(_, p)| logit(*p))
                        .collect();
                    l.iter().sum::<f64>() / l.len().max(1) as f64
                })
                .collect();
            let overall = ref_mean.iter().sum::<f64>() / ref_mean.len().max(1) as f64;
            ref_mean.iter().map(|m| overall - m).collect()
        } else {
            vec![0.0; self.members.len()]
        };
        let n = self.ranges.last().map_or(0, |r| r.end);
        let mut scores = vec![0.0; n];
        let shifted = self.calibrated() && !usable.is_empty();
        for (b, (members, p)) in self.members.iter().zip(per_batch).enumerate() {
            for (m, prob) in members.iter().zip(p) {
                if self.ranges[b].contains(m) {
                    scores[*m] = if shifted {
                        sigmoid(logit(*prob) + shift[b])
                    } else {
                        *prob
                    };
                }
            }
        }
        Ok(scores)
    }
}

/// Scores of candidates judged in batches.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchScores {
    /// One score per candidate, in input order.
    pub scores: Vec<f64>,
    /// Judge calls planned (before any splitting by the dispatcher).
    pub batches: usize,
    /// Candidates shown, references counted in every batch that shows them.
    pub shown: usize,
    /// What judging cost.
    pub usage: Usage,
}

/// How [`Judge::rank`] judges a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankOptions {
    /// Candidates per call (at least 1).
    pub batch_size: usize,
    /// Calibrate across batches with shared references.
    pub calibration: bool,
    /// Candidates reranked by one multiple-choice question (0 or 1: none).
    pub shortlist: usize,
}

/// A list ranked by [`Judge::rank`].
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// Candidate indices, best first: the reranked shortlist, then the rest
    /// by calibrated score (ties keep the input order).
    pub order: Vec<usize>,
    /// Calibrated P(yes) per candidate, in input order.
    pub scores: Vec<f64>,
    /// The shortlist's multiple-choice probability per candidate (input
    /// order; `None` outside the shortlist).
    pub rerank: Vec<Option<f64>>,
    /// Candidates shown to the judge, references and shortlist included.
    pub shown: usize,
    /// Judge calls planned for the batches (the rerank not counted).
    pub batches: usize,
    /// What judging cost, rerank included.
    pub usage: Usage,
}

impl Judge {
    /// Judges `candidates` for `query` in shared-context batches of
    /// `batch_size`, all batches at once, calibrated across batches when
    /// `calibration` is on. No fallback: the first failing batch's error is
    /// returned.
    pub async fn judge_batched(
        &self,
        query: &str,
        candidates: &[Candidate],
        batch_size: usize,
        calibration: bool,
    ) -> Result<BatchScores> {
        let plan = BatchPlan::new(candidates.len(), batch_size, calibration);
        let shown: Vec<Vec<Candidate>> = plan
            .batches()
            .iter()
            .map(|m| m.iter().map(|i| candidates[*i].clone()).collect())
            .collect();
        let results =
            futures::future::join_all(shown.iter().map(|batch| self.judge(query, batch))).await;
        let mut usage = Usage::default();
        let mut per_batch = Vec::with_capacity(results.len());
        for result in results {
            let j = result?;
            usage.add(&j.usage);
            per_batch.push(j.probabilities);
        }
        let scores = plan
            .combine(&per_batch)
            .map_err(|(b, msg)| crate::Error::malformed("rank", format!("batch {b}: {msg}")))?;
        Ok(BatchScores {
            scores,
            batches: plan.batches().len(),
            shown: shown.iter().map(Vec::len).sum(),
            usage,
        })
    }

    /// Ranks a list: [`Judge::judge_batched`], then the best
    /// `how.shortlist` reranked by one multiple-choice question
    /// ([`Judge::rerank_shortlist`]).
    pub async fn rank(
        &self,
        query: &str,
        candidates: &[Candidate],
        how: RankOptions,
    ) -> Result<Ranking> {
        let judged = self
            .judge_batched(query, candidates, how.batch_size, how.calibration)
            .await?;
        let mut order: Vec<usize> = (0..candidates.len()).collect();
        order.sort_by(|a, b| {
            judged.scores[*b]
                .total_cmp(&judged.scores[*a])
                .then(a.cmp(b))
        });
        let mut usage = judged.usage;
        let mut shown = judged.shown;
        let mut rerank = vec![None; candidates.len()];
        if let Some(choice) = self
            .rerank_shortlist(query, candidates, &mut order, &judged.scores, how.shortlist)
            .await?
        {
            usage.add(&choice.usage);
            shown += choice.probabilities.len();
            for (i, p) in order.iter().zip(&choice.probabilities) {
                rerank[*i] = Some(*p);
            }
        }
        Ok(Ranking {
            order,
            scores: judged.scores,
            rerank,
            shown,
            batches: judged.batches,
            usage,
        })
    }

    /// The shortlist rerank: the first `m` of `order` (indices into
    /// `candidates`, best first) asked as one multiple-choice question and
    /// reordered by its probabilities (ties: the higher `scores`). Returns the
    /// choice, whose probabilities follow the **new** order of `order[..m]`;
    /// `None` when fewer than two candidates would be shown.
    pub async fn rerank_shortlist(
        &self,
        query: &str,
        candidates: &[Candidate],
        order: &mut [usize],
        scores: &[f64],
        m: usize,
    ) -> Result<Option<crate::Choice>> {
        let m = m.min(order.len());
        if m < 2 {
            return Ok(None);
        }
        let shortlist: Vec<Candidate> = order[..m].iter().map(|i| candidates[*i].clone()).collect();
        let mut choice = self.choose(query, &shortlist).await?;
        let score = |i: usize| scores.get(i).copied().unwrap_or(0.0);
        let mut head: Vec<(usize, f64)> = order[..m]
            .iter()
            .copied()
            .zip(choice.probabilities.iter().copied())
            .collect();
        head.sort_by(|a, b| b.1.total_cmp(&a.1).then(score(b.0).total_cmp(&score(a.0))));
        for (slot, (i, _)) in order[..m].iter_mut().zip(&head) {
            *slot = *i;
        }
        choice.probabilities = head.iter().map(|(_, p)| *p).collect();
        choice.best = 0;
        Ok(Some(choice))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_batch_has_no_references() {
        let plan = BatchPlan::new(5, 10, true);
        assert_eq!(plan.batches(), &[vec![0, 1, 2, 3, 4]]);
        assert!(!plan.calibrated());
        assert_eq!(
            plan.combine(&[vec![0.1, 0.2, 0.3, 0.4, 0.5]]),
            Ok(vec![0.1, 0.2, 0.3, 0.4, 0.5])
        );
    }

    #[test]
    fn references_visit_every_batch_and_align_scales() {
        let plan = BatchPlan::new(5, 2, true);
        assert_eq!(
            plan.batches(),
            &[vec![0, 1], vec![2, 3, 0, 1], vec![4, 0, 1]]
        );
        assert_eq!(plan.batch_of(4), 2);
        // Batch 1 judges everything one logit higher than batches 0 and 2;
        // after the shift, 2 and 3 sit where batch 0 would have put them
        // relative to the references.
        let up = |p: f64| sigmoid(logit(p) + 1.0);
        let scores = plan
            .combine(&[
                vec![0.5, 0.3],
                vec![up(0.6), up(0.2), up(0.5), up(0.3)],
                vec![0.9, 0.5, 0.3],
            ])
            .expect("combine");
        let rel = |i: usize| logit(scores[i]) - logit(scores[0]);
        assert!(
            (rel(2) - (logit(0.6) - logit(0.5))).abs() < 1e-6,
            "{scores:?}"
        );
        assert!(
            (rel(3) - (logit(0.2) - logit(0.5))).abs() < 1e-6,
            "{scores:?}"
        );
        assert!(
            (rel(4) - (logit(0.9) - logit(0.5))).abs() < 1e-6,
            "{scores:?}"
        );
        assert!(scores[2] > scores[0] && scores[3] < scores[1]);
    }

    #[test]
    fn saturated_references_are_ignored() {
        // Reference 0 scores 0 everywhere; reference 1 alone sets the shift.
        let plan = BatchPlan::new(4, 2, true);
        let up = |p: f64| sigmoid(logit(p) + 2.0);
        let scores = plan
            .combine(&[vec![0.0, 0.5], vec![up(0.7), up(0.2), 0.0, up(0.5)]])
            .expect("combine");
        let rel = |i: usize| logit(scores[i]) - logit(scores[1]);
        assert!((rel(2) - logit(0.7)).abs() < 1e-6, "{scores:?}");
        assert!((rel(3) - logit(0.2)).abs() < 1e-6, "{scores:?}");
        // With no usable reference, scores pass through unshifted.
        let scores = plan
            .combine(&[vec![0.0, 1.0], vec![0.7, 0.2, 0.0, 1.0]])
            .expect("combine");
        assert_eq!(scores, vec![0.0, 1.0, 0.7, 0.2]);
    }

    #[test]
    fn fit_counts_references_against_the_budget() {
        // 195 candidates in batches of 100 with 2 references: 197 shown.
        assert_eq!(BatchPlan::new(195, 100, true).shown(), 197);
        assert_eq!(BatchPlan::fit(195, 100, true), 193);
        assert_eq!(BatchPlan::new(193, 100, true).shown(), 195);
        assert_eq!(BatchPlan::fit(95, 100, true), 95);
        assert_eq!(BatchPlan::fit(195, 100, false), 195);
        assert_eq!(BatchPlan::fit(0, 10, true), 0);
    }

    #[test]
    fn wrong_answer_count_names_the_batch() {
        let plan = BatchPlan::new(4, 2, false);
        let err = plan
            .combine(&[vec![0.1, 0.2], vec![0.3]])
            .expect_err("one answer for two candidates");
        assert_eq!(err.0, 1);
    }
}

//! The one calibrated decision session: every caller that asks a decider
//! about a list (the navigator's levels and best-first rounds, the bench's
//! `rerank` and `flat`, the pruner) asks through a [`Session`].
//!
//! A session owns:
//!
//! * **Batching** within the decider's [`Limits`] (questions and state
//!   tokens, by the dispatcher's own splitting rule), with room left for the
//!   references, so the dispatcher never splits a planned call again and
//!   every call carries its references.
//! * **Calibration.** A list larger than one call ([`Session::judge_list`])
//!   shows its first [`REFERENCES`] candidates in every call and shifts each
//!   call's logits so that the references' mean logit agrees across calls.
//!   Rounds ([`Session::judge_round`]) share one *anchor* across the whole
//!   session: the first candidate ever judged, shown in every later call,
//!   each call shifted so the anchor scores as it did first.
//! * **Pointwise deciders** (a cross-encoder): no references, no anchor,
//!   and the shortlist is the top `m` by score with no second inference, so
//!   every judgment of a budget goes to a distinct candidate.
//! * **Accounting**: candidates shown, usage, cost against a cap.
//!
//! Fallback is the decider's business ([`crate::WithFallback`]); a call
//! answered by the fallback is flagged in [`Call::fallback`].

use crate::probability::{logit, sigmoid};
use crate::render::split_batches;
use crate::{Candidate, Choice, Decide, Error, Usage};
use std::ops::Range;

/// Reference candidates shown in every call of a list larger than one call.
pub const REFERENCES: usize = 2;

/// Probabilities this close to 0 or 1 carry no scale for calibration.
const SATURATED: f64 = 1e-6;

fn unsaturated(p: f64) -> bool {
    p > SATURATED && p < 1.0 - SATURATED
}

/// How a session asks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionOptions {
    /// Candidates per call at most (at least 1), before the decider's own
    /// limits, which always apply.
    pub batch_size: usize,
    /// Calibrate across calls with references (ignored for pointwise deciders).
    pub calibration: bool,
    /// Candidates reranked by one multiple-choice question (0 or 1: none;
    /// a pointwise decider's shortlist is its top by score).
    pub shortlist: usize,
    /// Stop once the session's cost passes this many USD.
    pub max_cost_usd: Option<f64>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            batch_size: 100,
            calibration: true,
            shortlist: 5,
            max_cost_usd: None,
        }
    }
}

/// A call of a session that failed: which call, and why.
#[derive(Debug, thiserror::Error)]
#[error("call {call}: {source}")]
pub struct CallError {
    /// The failing call's index within its list or round.
    pub call: usize,
    /// The decider's error.
    #[source]
    pub source: Error,
}

/// One call of a list or round.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The candidates it scored (indices into the list).
    pub own: Range<usize>,
    /// Reference candidates shown beside them (not scored for the list),
    /// with the probability the decider gave each in this call.
    pub references: Vec<f64>,
    /// Whether a fallback decider answered it.
    pub fallback: bool,
}

/// A list or round judged by a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// Calibrated P(yes) per candidate, in input order.
    pub scores: Vec<f64>,
    /// The calls made, in order.
    pub calls: Vec<Call>,
    /// Candidates shown, references counted in every call that shows them.
    pub shown: usize,
    /// What the calls cost.
    pub usage: Usage,
}

impl Scored {
    /// The call that scored candidate `i`.
    pub fn call_of(&self, i: usize) -> usize {
        self.calls
            .iter()
            .position(|c| c.own.contains(&i))
            .unwrap_or(0)
    }
}

/// A list ranked by [`Session::rank`].
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// Candidate indices, best first: the reranked shortlist, then the rest
    /// by calibrated score (ties keep the input order).
    pub order: Vec<usize>,
    /// Calibrated P(yes) per candidate, in input order.
    pub scores: Vec<f64>,
    /// The shortlist's multiple-choice probability per candidate (input
    /// order; `None` outside the shortlist or for a pointwise decider).
    pub rerank: Vec<Option<f64>>,
    /// Candidates shown to the decider, references and shortlist included.
    pub shown: usize,
    /// Calls made for the list (the rerank not counted).
    pub batches: usize,
    /// What it cost, rerank included.
    pub usage: Usage,
}

/// The anchor of a session's rounds: a candidate and its first logit.
#[derive(Debug, Clone)]
struct Anchor {
    candidate: Candidate,
    logit: f64,
}

/// A planned call: its own candidates and the references appended.
struct Planned {
    own: Range<usize>,
    /// Reference candidates appended (not members of this call).
    refs: Vec<Candidate>,
}

/// One query's conversation with a decider. Cheap to create: one per query.
#[derive(Debug)]
pub struct Session<'d> {
    decider: &'d dyn Decide,
    options: SessionOptions,
    anchor: Option<Anchor>,
    rounds: usize,
    usage: Usage,
    shown: usize,
}

impl<'d> Session<'d> {
    /// A session with `decider`.
    pub fn new(decider: &'d dyn Decide, options: SessionOptions) -> Session<'d> {
        Session {
            decider,
            options,
            anchor: None,
            rounds: 0,
            usage: Usage::default(),
            shown: 0,
        }
    }

    /// The decider.
    pub fn decider(&self) -> &'d dyn Decide {
        self.decider
    }

    /// Whether calls carry references (calibration on, decider not pointwise).
    pub fn calibrates(&self) -> bool {
        self.options.calibration && !self.decider.pointwise()
    }

    /// Judgments the shortlist rerank takes: its size, or 0 when there is
    /// none or the decider is pointwise.
    pub fn shortlist_cost(&self) -> usize {
        if self.decider.pointwise() || self.options.shortlist < 2 {
            0
        } else {
            self.options.shortlist
        }
    }

    /// What the session has cost so far.
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// Candidates shown so far, references and shortlist included.
    pub fn shown(&self) -> usize {
        self.shown
    }

    /// `Some((cap, spent))` once the cost is over the cap.
    pub fn over_cost(&self) -> Option<(f64, f64)> {
        match self.options.max_cost_usd {
            Some(cap) if self.usage.cost_usd > cap => Some((cap, self.usage.cost_usd)),
            _ => None,
        }
    }

    /// Candidates per call: the batch size within the decider's question limit.
    fn call_size(&self) -> usize {
        self.options
            .batch_size
            .min(self.decider.limits().max_questions)
            .max(1)
    }

    /// The most candidates a list may hold so that judging it
    /// ([`Session::judge_list`], references counted) and the shortlist
    /// show at most `budget` candidates (by count; very long texts may need
    /// more calls).
    pub fn fit(&self, budget: usize) -> usize {
        let budget = budget.saturating_sub(self.shortlist_cost());
        let mut n = budget;
        while n > 0 && self.list_shown(n) > budget {
            n -= 1;
        }
        n
    }

    /// Candidates shown when judging a list of `n` (by count).
    fn list_shown(&self, n: usize) -> usize {
        let size = self.call_size();
        if n <= size || !self.calibrates() {
            return n;
        }
        let r = REFERENCES.min(n);
        // The first call holds the references as its own members.
        let calls = 1 + (n - size).div_ceil(self.later_call_size(r));
        n + r * (calls - 1)
    }

    /// Own candidates of a list's calls after the first, which show `r`
    /// references beside them: the batch size, within the decider's limit
    /// once the references are counted.
    fn later_call_size(&self, r: usize) -> usize {
        self.options
            .batch_size
            .min(self.decider.limits().max_questions.saturating_sub(r))
            .max(1)
    }

    /// Plans a list: one call when it fits, else calls with room for the
    /// first [`REFERENCES`] candidates, shown in every call.
    fn plan_list(&self, query: &str, candidates: &[Candidate]) -> Vec<Planned> {
        let size = self.call_size();
        let max_tokens = self.decider.limits().max_state_tokens;
        let whole = split_batches(query, candidates, |_| size, max_tokens);
        if whole.len() <= 1 || !self.calibrates() {
            return whole
                .into_iter()
                .map(|own| Planned {
                    own,
                    refs: Vec::new(),
                })
                .collect();
        }
        let r = REFERENCES.min(candidates.len());
        let ref_tokens: u64 = candidates[..r]
            .iter()
            .map(crate::render::candidate_line_tokens)
            .sum();
        let own = self.later_call_size(r);
        let ranges = split_batches(
            query,
            candidates,
            |b| if b == 0 { size } else { own },
            max_tokens.saturating_sub(ref_tokens),
        );
        ranges
            .into_iter()
            .map(|range| Planned {
                refs: (0..r)
                    .filter(|i| !range.contains(i))
                    .map(|i| candidates[i].clone())
                    .collect(),
                own: range,
            })
            .collect()
    }

    /// Judges a list, all calls at once, calibrated across calls with the
    /// list's first candidates as references (see the module docs).
    pub async fn judge_list(
        &mut self,
        query: &str,
        candidates: &[Candidate],
    ) -> Result<Scored, CallError> {
        let plan = self.plan_list(query, candidates);
        let answers = self.ask(query, candidates, &plan).await?;
        let r = REFERENCES.min(candidates.len());
        let calibrated = plan.iter().any(|p| !p.refs.is_empty());
        // Each reference's probability in each call: its own answer in the
        // call that holds it, else the appended one.
        let ref_probs: Vec<Vec<f64>> = if calibrated {
            plan.iter()
                .zip(&answers)
                .map(|(p, (a, _))| {
                    let mut appended = a[p.own.len()..].iter();
                    (0..r)
                        .map(|i| {
                            if p.own.contains(&i) {
                                a[i - p.own.start]
                            } else {
                                appended.next().copied().unwrap_or(0.5)
                            }
                        })
                        .collect()
                })
                .collect()
        } else {
            Vec::new()
        };
        let shifts = list_shifts(&ref_probs, r, plan.len());
        Ok(self.record(&plan, answers, &shifts, candidates.len()))
    }

    /// How many candidates a round of at most `share` judgments holds in
    /// calls of `slate_size`, the anchor counted in every call that shows it.
    pub fn round_capacity(&self, share: usize, slate_size: usize) -> usize {
        let size = slate_size.min(self.decider.limits().max_questions).max(1);
        let mut left = share;
        let mut total = 0;
        let mut b = 0;
        loop {
            let r = usize::from(self.round_needs_reference(b));
            let take = size.saturating_sub(r).min(left.saturating_sub(r));
            if take == 0 {
                return total;
            }
            total += take;
            left -= take + r;
            b += 1;
        }
    }

    /// Whether call `b` of the next round shows the anchor: every call once
    /// calibrating, except the very first call of the session (which holds
    /// the anchor as its own first candidate).
    fn round_needs_reference(&self, b: usize) -> bool {
        self.calibrates() && !(self.anchor.is_none() && b == 0)
    }

    /// Judges one round: `candidates` in calls of at most `slate_size`, all
    /// at once; every call shows the session's anchor, so all rounds share
    /// one scale. The first round's first candidate becomes the anchor.
    pub async fn judge_round(
        &mut self,
        query: &str,
        candidates: &[Candidate],
        slate_size: usize,
    ) -> Result<Scored, CallError> {
        let size = slate_size.min(self.decider.limits().max_questions).max(1);
        let first = self.anchor.is_none();
        let reference = match (&self.anchor, candidates.first()) {
            (Some(a), _) => Some(a.candidate.clone()),
            (None, Some(c)) if self.calibrates() => Some(c.clone()),
            _ => None,
        };
        let ref_tokens = reference
            .as_ref()
            .map_or(0, crate::render::candidate_line_tokens);
        let max_tokens = self.decider.limits().max_state_tokens;
        let ranges = split_batches(
            query,
            candidates,
            |b| size - usize::from(self.round_needs_reference(b) && size > 1),
            max_tokens.saturating_sub(ref_tokens),
        );
        let plan: Vec<Planned> = ranges
            .into_iter()
            .enumerate()
            .map(|(b, own)| Planned {
                own,
                refs: match &reference {
                    Some(c) if self.round_needs_reference(b) => vec![c.clone()],
                    _ => Vec::new(),
                },
            })
            .collect();
        let answers = self.ask(query, candidates, &plan).await?;
        if first && self.calibrates() {
            if let (Some(c), Some(p)) = (
                candidates.first(),
                answers.first().and_then(|a| a.0.first()),
            ) {
                self.anchor = Some(Anchor {
                    candidate: c.clone(),
                    logit: logit(*p),
                });
            }
        }
        let target = self.anchor.as_ref().map(|a| a.logit);
        let shifts: Vec<Option<f64>> = plan
            .iter()
            .zip(&answers)
            .map(|(p, (a, _))| {
                let target = target?;
                let seen = *a.get(p.own.len())?;
                (!p.refs.is_empty() && unsaturated(seen) && unsaturated(sigmoid(target)))
                    .then(|| target - logit(seen))
            })
            .collect();
        self.rounds += 1;
        Ok(self.record(&plan, answers, &shifts, candidates.len()))
    }

    /// Asks every planned call at once; each answer with its usage.
    async fn ask(
        &self,
        query: &str,
        candidates: &[Candidate],
        plan: &[Planned],
    ) -> Result<Vec<(Vec<f64>, Usage)>, CallError> {
        let shown: Vec<Vec<Candidate>> = plan
            .iter()
            .map(|p| {
                let mut c = candidates[p.own.clone()].to_vec();
                c.extend(p.refs.iter().cloned());
                c
            })
            .collect();
        let results =
            futures::future::join_all(shown.iter().map(|c| self.decider.judge(query, c))).await;
        let mut out = Vec::with_capacity(results.len());
        for (call, (result, c)) in results.into_iter().zip(&shown).enumerate() {
            let j = result.map_err(|source| CallError { call, source })?;
            if j.probabilities.len() != c.len() {
                return Err(CallError {
                    call,
                    source: Error::malformed(
                        self.decider.kind(),
                        format!(
                            "{} answers for {} candidates",
                            j.probabilities.len(),
                            c.len()
                        ),
                    ),
                });
            }
            out.push((j.probabilities, j.usage));
        }
        Ok(out)
    }

    /// Applies each call's shift to its own candidates and accounts.
    fn record(
        &mut self,
        plan: &[Planned],
        answers: Vec<(Vec<f64>, Usage)>,
        shifts: &[Option<f64>],
        n: usize,
    ) -> Scored {
        let mut scores = vec![0.0; n];
        let mut usage = Usage::default();
        let mut calls = Vec::with_capacity(plan.len());
        let mut shown = 0;
        for ((p, (probs, u)), shift) in plan.iter().zip(answers).zip(shifts) {
            for (i, prob) in p.own.clone().zip(&probs) {
                scores[i] = match shift {
                    Some(s) => sigmoid(logit(*prob) + s),
                    None => *prob,
                };
            }
            shown += probs.len();
            calls.push(Call {
                own: p.own.clone(),
                references: probs[p.own.len()..].to_vec(),
                fallback: u.fallbacks > 0,
            });
            usage.add(&u);
        }
        self.usage.add(&usage);
        self.shown += shown;
        Scored {
            scores,
            calls,
            shown,
            usage,
        }
    }

    /// The shortlist rerank: the first `m` of `order` (indices into
    /// `candidates`, best first) asked as one multiple-choice question and
    /// reordered by its probabilities (ties: the higher `scores`). Returns
    /// the choice, whose probabilities follow the **new** order of
    /// `order[..m]`; `None` when fewer than two candidates would be shown or
    /// the decider is pointwise (its order by score stands).
    pub async fn shortlist(
        &mut self,
        query: &str,
        candidates: &[Candidate],
        order: &mut [usize],
        scores: &[f64],
    ) -> crate::Result<Option<Choice>> {
        let m = self.shortlist_cost().min(order.len());
        if m < 2 {
            return Ok(None);
        }
        let shortlist: Vec<Candidate> = order[..m].iter().map(|i| candidates[*i].clone()).collect();
        let mut choice = self.decider.choose(query, &shortlist).await?;
        if choice.probabilities.len() != m {
            return Err(Error::malformed(
                self.decider.kind(),
                format!(
                    "choose: {} probabilities for {m} options",
                    choice.probabilities.len()
                ),
            ));
        }
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
        self.usage.add(&choice.usage);
        self.shown += m;
        Ok(Some(choice))
    }

    /// Ranks a list: [`Session::judge_list`], then the shortlist rerank.
    pub async fn rank(
        &mut self,
        query: &str,
        candidates: &[Candidate],
    ) -> Result<Ranking, CallError> {
        self.rank_by(query, candidates, |scores| scores.to_vec())
            .await
    }

    /// [`Session::rank`] with the order (before the shortlist) given by
    /// `key`, which maps the judged scores (input order) to the scores to
    /// sort by — e.g. the scores fused with first-stage evidence. A key of
    /// the wrong length is the scores themselves.
    pub async fn rank_by(
        &mut self,
        query: &str,
        candidates: &[Candidate],
        key: impl FnOnce(&[f64]) -> Vec<f64>,
    ) -> Result<Ranking, CallError> {
        let judged = self.judge_list(query, candidates).await?;
        let mut keys = key(&judged.scores);
        if keys.len() != judged.scores.len() {
            keys = judged.scores.clone();
        }
        let mut order: Vec<usize> = (0..candidates.len()).collect();
        order.sort_by(|a, b| keys[*b].total_cmp(&keys[*a]).then(a.cmp(b)));
        let mut usage = judged.usage.clone();
        let mut shown = judged.shown;
        let mut rerank = vec![None; candidates.len()];
        let choice = self
            .shortlist(query, candidates, &mut order, &keys)
            .await
            .map_err(|source| CallError {
                call: judged.calls.len(),
                source,
            })?;
        if let Some(choice) = choice {
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
            batches: judged.calls.len(),
            usage,
        })
    }
}

/// The shift of each call of a list: references unsaturated in every call
/// calibrate; each call moves so its references' mean logit is the mean
/// over all calls. No usable reference (or one call): no shift.
fn list_shifts(ref_probs: &[Vec<f64>], r: usize, calls: usize) -> Vec<Option<f64>> {
    let usable: Vec<usize> = (0..r)
        .filter(|i| ref_probs.iter().all(|p| unsaturated(p[*i])))
        .collect();
    if ref_probs.len() < 2 || usable.is_empty() {
        return vec![None; calls];
    }
    let means: Vec<f64> = ref_probs
        .iter()
        .map(|p| usable.iter().map(|i| logit(p[*i])).sum::<f64>() / usable.len() as f64)
        .collect();
    let overall = means.iter().sum::<f64>() / means.len() as f64;
    means.iter().map(|m| Some(overall - m)).collect()
}

#[cfg(test)]
mod tests;

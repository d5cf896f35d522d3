//! Applying a strategy's rule to scores: keep-top-k, the rule, the token
//! budget and the placement.

use crate::{Chunk, Error, KeptChunk, Pruned, Pruner, Result, Scored, Stats, Strategy};

impl Pruner {
    /// Applies `strategy`'s rule (and keep-top-k, the budget, the placement)
    /// to scores from [`Pruner::score_for`] with the same strategy kind.
    pub fn select(&self, chunks: &[Chunk], scored: &Scored, strategy: &Strategy) -> Result<Pruned> {
        strategy.check()?;
        if scored.tokens.len() != chunks.len() {
            return Err(Error::Input(format!(
                "{} scores for {} chunks",
                scored.tokens.len(),
                chunks.len()
            )));
        }
        let n = chunks.len();
        let k = self.options.keep_top_k.min(n);
        let strength = strengths(strategy, scored, n, k)?;
        let passes = passes(strategy, &strength, k);
        // Candidates best first: the forced ones in rank order, then the
        // passing ones by strength.
        let mut admitted: Vec<usize> = (0..k).collect();
        let mut passing: Vec<usize> = (k..n).filter(|i| passes[*i]).collect();
        passing.sort_by(|a, b| strength[*b].total_cmp(&strength[*a]).then(a.cmp(b)));
        admitted.extend(passing);
        if let Some(budget) = self.options.token_budget {
            let mut used = 0;
            let fits = admitted
                .iter()
                .take_while(|i| {
                    used += scored.tokens[**i];
                    used <= budget
                })
                .count();
            admitted.truncate(fits);
        }
        let order = if self.options.edge_placement {
            edge_order(&admitted, &strength)
        } else {
            let mut a = admitted.clone();
            a.sort_unstable();
            a
        };
        let kept: Vec<KeptChunk> = order
            .iter()
            .map(|&i| KeptChunk {
                id: chunks[i].id.clone(),
                text: chunks[i].text.clone(),
                rank: i,
                grade: grade(scored, i),
                probability: probability(scored, i),
                forced: i < k,
                tokens: scored.tokens[i],
            })
            .collect();
        Ok(self.pruned(strategy, scored, kept))
    }

    /// The result with its statistics.
    fn pruned(&self, strategy: &Strategy, scored: &Scored, kept: Vec<KeptChunk>) -> Pruned {
        let tokens_in: usize = scored.tokens.iter().sum();
        let tokens_out: usize = kept.iter().map(|c| c.tokens).sum();
        Pruned {
            strategy: strategy.name(),
            stats: Stats {
                chunks_in: scored.tokens.len(),
                chunks_out: kept.len(),
                tokens_in,
                tokens_out,
                compression: if tokens_in == 0 {
                    0.0
                } else {
                    1.0 - tokens_out as f64 / tokens_in as f64
                },
                token_counter: self.options.counter.name(),
                judge_calls: scored.usage.calls,
                input_tokens: scored.usage.input_tokens,
                cost_usd: scored.usage.cost_usd,
                latency_ms: scored.latency_ms,
            },
            kept,
        }
    }
}

/// Edge placement: the strongest first, the second strongest last, the
/// third second, the fourth second to last, … (forced chunks count as
/// strongest, in rank order).
pub(crate) fn edge_order(admitted: &[usize], strength: &[f64]) -> Vec<usize> {
    let mut by_strength = admitted.to_vec();
    by_strength.sort_by(|a, b| strength[*b].total_cmp(&strength[*a]).then(a.cmp(b)));
    let mut front = Vec::new();
    let mut back = Vec::new();
    for (j, i) in by_strength.into_iter().enumerate() {
        if j % 2 == 0 {
            front.push(i);
        } else {
            back.push(i);
        }
    }
    back.reverse();
    front.extend(back);
    front
}

fn grade(scored: &Scored, i: usize) -> Option<f64> {
    scored.grades.as_ref().and_then(|g| g.get(i).copied())
}

fn probability(scored: &Scored, i: usize) -> Option<f64> {
    scored
        .probabilities
        .as_ref()
        .and_then(|p| p.get(i).copied())
        .filter(|p| !p.is_nan())
}

/// Strength of each chunk: what the budget admits first and what edge
/// placement puts at the edges.
fn strengths(strategy: &Strategy, scored: &Scored, n: usize, k: usize) -> Result<Vec<f64>> {
    let need = |what: &str| {
        Error::Input(format!(
            "{} needs {what} from score_for with the same strategy",
            strategy.name()
        ))
    };
    let probability = |i: usize| probability(scored, i).ok_or_else(|| need("probabilities"));
    match strategy {
        Strategy::Grade { .. } => (0..n)
            .map(|i| grade(scored, i).ok_or_else(|| need("grades")))
            .collect(),
        Strategy::Keep { .. } => (0..n).map(probability).collect(),
        Strategy::BudgetSelect { .. } => (0..n)
            .map(|i| {
                if i < k {
                    Ok(f64::INFINITY)
                } else {
                    probability(i)
                }
            })
            .collect(),
        Strategy::TopN { .. } => Ok((0..n).map(|i| (n - i) as f64).collect()),
    }
}

/// Whether each chunk passes the strategy's rule (before keep-top-k and the
/// budget).
fn passes(strategy: &Strategy, strength: &[f64], k: usize) -> Vec<bool> {
    let n = strength.len();
    match *strategy {
        Strategy::Grade { threshold } | Strategy::Keep { threshold } => {
            strength.iter().map(|s| *s >= threshold).collect()
        }
        Strategy::BudgetSelect { extra, threshold } => {
            let mut rest: Vec<usize> = (k..n).filter(|i| strength[*i] >= threshold).collect();
            rest.sort_by(|a, b| strength[*b].total_cmp(&strength[*a]).then(a.cmp(b)));
            rest.truncate(extra);
            (0..n).map(|i| rest.contains(&i)).collect()
        }
        Strategy::TopN { n: top } => (0..n).map(|i| i < top).collect(),
    }
}

//! The lexical judge: BM25 scores of each candidate against the query, turned
//! into probabilities relative to the other candidates of the same context.
//!
//! With [`CorpusStats`] (document frequencies of the whole corpus, passed in
//! as plain data) the IDF is the corpus's; without, it is computed over the
//! candidates of the context. Deterministic and offline: the default judge.

use crate::backend::op::{Op, OpKind, Raw, Values};
use crate::{expected_level, Candidate};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub use treenav_text::stats::CorpusStats;

/// The backend's profile: BM25-style scores relative to the context: in-process, no limits worth the name.
pub(crate) const PROFILE: super::Profile = super::Profile {
    kind: "lexical",
    about: "BM25-style, offline, deterministic",
    limits: super::LIMITS_IN_PROCESS,
    price_per_million: 0.0,
    in_process: true,
    pointwise: false,
};

/// BM25 score of each candidate against the query (k1, b as in BM25), with
/// the IDF of `stats` when given, else of the candidates themselves.
pub fn bm25_scores(
    query: &str,
    candidates: &[Candidate],
    k1: f64,
    b: f64,
    stats: Option<Arc<CorpusStats>>,
) -> Vec<f64> {
    let keys: Vec<u128> = candidates.iter().map(|c| text_key(&c.text)).collect();
    Lexical { k1, b, stats }.scores(query, candidates, &keys)
}

/// The key of a candidate text in the term cache (and in the dispatcher's).
pub(crate) fn text_key(text: &str) -> u128 {
    treenav_text::fingerprint(text.as_bytes())
}

fn k1() -> f64 {
    crate::defaults::K1
}
fn b() -> f64 {
    crate::defaults::B
}

/// Options of the lexical judge: BM25's two constants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LexicalOptions {
    /// BM25 k1. By default, 1.2.
    #[serde(default = "k1")]
    pub k1: f64,
    /// BM25 b. By default, 0.75.
    #[serde(default = "b")]
    pub b: f64,
}

impl Default for LexicalOptions {
    fn default() -> Self {
        LexicalOptions { k1: k1(), b: b() }
    }
}

pub(crate) fn build(o: &LexicalOptions, _client: &treenav_http::ClientConfig) -> super::Built {
    let lexical = Lexical::checked(o.k1, o.b)?;
    Ok((Box::new(lexical), format!("bm25(k1={}, b={})", o.k1, o.b)))
}

/// The lexical backend's scoring is CPU work on borrowed data: a large call
/// (over [`super::INLINE_TEXT_BYTES`] of candidate text, milliseconds of
/// work) runs with `block_in_place` on a multi-threaded runtime, so the
/// worker's other tasks move elsewhere; a small one runs inline (well under
/// a millisecond, where handing the worker off would cost more than it
/// saves: measured +0.3 ms p50 on the SciFact bench).
impl super::Backend for Lexical {
    fn profile(&self) -> super::Profile {
        PROFILE
    }

    fn call<'a>(&'a self, op: &'a Op<'a>) -> BoxFuture<'a, crate::Result<Raw>> {
        Box::pin(async move {
            let bytes: usize = op.candidates.iter().map(|c| c.text.len()).sum();
            Ok(if bytes > super::INLINE_TEXT_BYTES {
                super::off_the_runtime(|| self.answer(op))
            } else {
                self.answer(op)
            })
        })
    }

    fn uses_corpus_stats(&self) -> bool {
        true
    }

    fn with_corpus_stats(&self, stats: Arc<CorpusStats>) -> Option<Box<dyn super::Backend>> {
        Some(Box::new(self.with_stats(stats)))
    }
}

/// The lexical backend.
#[derive(Debug, Clone)]
pub(crate) struct Lexical {
    pub(crate) k1: f64,
    pub(crate) b: f64,
    pub(crate) stats: Option<Arc<CorpusStats>>,
}

impl Lexical {
    /// A lexical judge with BM25's `k1` and `b`, range-checked.
    pub(crate) fn checked(k1: f64, b: f64) -> crate::Result<Lexical> {
        let config = |e: crate::checked::OutOfRange| crate::Error::config(e.to_string());
        crate::checked::within("backend.k1", k1, 0.0..=1000.0).map_err(config)?;
        crate::checked::within("backend.b", b, 0.0..=1.0).map_err(config)?;
        Ok(Lexical { k1, b, stats: None })
    }

    /// The same judge with corpus statistics for its IDF.
    pub(crate) fn with_stats(&self, stats: Arc<CorpusStats>) -> Lexical {
        Lexical {
            stats: Some(stats),
            ..self.clone()
        }
    }

    /// BM25 score of each candidate against the query; `keys` are the
    /// candidates' [`text_key`]s.
    pub(crate) fn scores(&self, query: &str, candidates: &[Candidate], keys: &[u128]) -> Vec<f64> {
        let texts = candidates
            .iter()
            .map(|c| c.text.as_str())
            .zip(keys.iter().copied());
        match &self.stats {
            Some(s) => treenav_text::score::bm25(s, query, texts, self.k1, self.b),
            None => {
                let local = CorpusStats::from_texts(candidates.iter().map(|c| c.text.as_str()));
                treenav_text::score::bm25(&local, query, texts, self.k1, self.b)
            }
        }
    }

    fn answer(&self, op: &Op<'_>) -> Raw {
        let scores = self.scores(op.query, op.candidates, op.texts);
        let values = match op.kind {
            OpKind::Judge => Values::Probabilities(relative(&scores)),
            OpKind::Choose => Values::Choice(softmax(&scores)),
            OpKind::Grade(scale) => Values::Grades(
                relative(&scores)
                    .into_iter()
                    .map(|p| level_distribution(p, scale.levels.len()))
                    .collect(),
            ),
        };
        Raw {
            values,
            input_tokens: None,
            output_tokens: 0,
            cost_usd: Some(0.0),
            low_confidence: 0,
            cached_input_tokens: 0,
            vectors_scored: 0,
        }
    }
}

/// Added to every score in [`relative`], so a zero score keeps its context's scale.
const SMOOTHING: f64 = 0.01;

/// P(yes) relative to the context: (s + ε) / (s + mean score + 2ε).
///
/// Its logit is ln(s + ε) − ln(mean + ε): the context shifts every
/// candidate's logit by the same amount, so the navigator's calibration
/// references undo it exactly, even when a reference scores zero (ε keeps
/// a zero score from saturating at P = 0). A context with no evidence at
/// all (every score 0) counts its mean as 1, so P ≈ 0.01 there rather than
/// one half; its candidates then score what a zero scores elsewhere.
fn relative(scores: &[f64]) -> Vec<f64> {
    let mean = scores.iter().map(|s| s.max(0.0)).sum::<f64>() / scores.len().max(1) as f64;
    let mean = if mean > 0.0 { mean } else { 1.0 };
    scores
        .iter()
        .map(|s| {
            let s = s.max(0.0) + SMOOTHING;
            s / (s + mean + SMOOTHING)
        })
        .collect()
}

/// Softmax at a temperature of the scores' spread (at least 0.5).
fn softmax(scores: &[f64]) -> Vec<f64> {
    let n = scores.len().max(1) as f64;
    let mean = scores.iter().sum::<f64>() / n;
    let sd = (scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n).sqrt();
    crate::probability::softmax(scores, sd.max(0.5))
}

/// A distribution over `levels` levels whose expected index is p · (levels − 1),
/// split between the two nearest levels.
pub(crate) fn level_distribution(p: f64, levels: usize) -> Vec<f64> {
    let mut out = vec![0.0; levels.max(1)];
    let x = p.clamp(0.0, 1.0) * (levels.max(1) - 1) as f64;
    let lo = x.floor() as usize;
    let hi = (lo + 1).min(levels.max(1) - 1);
    let frac = x - lo as f64;
    out[lo] += 1.0 - frac;
    out[hi] += frac;
    debug_assert!((expected_level(&out) - x).abs() < 1e-9);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn scores(query: &str, c: &[Candidate]) -> Vec<f64> {
        bm25_scores(query, c, 1.2, 0.75, None)
    }

    #[test]
    fn relevant_candidate_scores_highest() {
        let c = [
            Candidate::new("a", "The striker scored a goal."),
            Candidate::new("b", "Insulin lowers blood glucose levels."),
            Candidate::new("c", "Glucose is a sugar."),
        ];
        let s = scores("what lowers blood glucose", &c);
        assert!(s[1] > s[2] && s[2] > s[0], "{s:?}");
        assert_eq!(s[0], 0.0);
    }

    #[test]
    fn corpus_stats_change_idf() {
        let stats = CorpusStats::from_texts(["glucose glucose", "glucose", "glucose", "insulin"]);
        assert_eq!(stats.documents, 4);
        // Terms as the statistics' analyzer gives them (stemmed).
        let idf = |word: &str| stats.idf(&stats.analyzer.terms(word)[0]);
        assert!(idf("insulin") > idf("glucose"));
        assert!(idf("unseen") > idf("insulin"));
    }

    proptest! {
        #[test]
        fn probabilities_are_in_range_and_deterministic(
            texts in proptest::collection::vec("[a-e ]{0,30}", 1..20),
            query in "[a-e ]{0,10}",
        ) {
            let c: Vec<Candidate> = texts.iter().enumerate().map(|(i, t)| Candidate::new(i.to_string(), t.clone())).collect();
            let s = scores(&query, &c);
            prop_assert_eq!(&s, &scores(&query, &c));
            for p in relative(&s) {
                prop_assert!((0.0..=1.0).contains(&p));
            }
            let sm = softmax(&s);
            prop_assert!((sm.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            for p in sm { prop_assert!((0.0..=1.0).contains(&p)); }
            for p in relative(&s) {
                let d = level_distribution(p, 5);
                prop_assert!((d.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            }
        }
    }
}

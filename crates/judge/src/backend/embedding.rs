//! The embedding judge: the tree's own embedder as a cheap, pointwise
//! decision model. The query is embedded once; each candidate is scored by
//! the cosine of its stored vector with the query's (read from a
//! [`VectorSource`] the caller attaches: the navigator's, over a tree's
//! stored vectors). Only candidates the search shows are read: no index,
//! no scan of every vector.
//!
//! P(relevant) is a Platt calibration of the cosine, `σ(a · cos + b)`,
//! fitted per embedder on labelled data that is no test split (SciFact's
//! train queries; [`crate::fitted`] holds it, `scripts/fit-calibration.py`
//! refits it, docs/calibration.md;
//! on a bge-small tree the navigator then fuses it with the search's
//! evidence by a fitted model), so a score means the same in every query
//! and context.

use crate::backend::op::{Op, OpKind, Raw, Values};
use crate::{Candidate, Error, ErrorKind, Result};
use futures::future::BoxFuture;
use std::sync::Arc;

/// The backend's profile: in-process, pointwise, free.
pub(crate) const PROFILE: super::Profile = super::Profile {
    kind: "embedding",
    about: "the tree's own embedder: cosine of stored passage vectors with the query, calibrated (the default over a tree)",
    limits: super::LIMITS_IN_PROCESS,
    price_per_million: 0.0,
    in_process: true,
    pointwise: true,
};

/// Cosines of a query with candidates, from stored vectors.
#[derive(Debug, Clone, PartialEq)]
pub struct Similarities {
    /// The cosine of each candidate with the query, in input order.
    pub cosines: Vec<f32>,
    /// Stored vectors read.
    pub vectors_read: u64,
}

/// Where the embedding judge reads vectors: the query embedded once, each
/// candidate's stored vector (a candidate without one is embedded from its
/// text). Implemented over a tree by the navigator; the judge never sees
/// the tree.
pub trait VectorSource: Send + Sync + std::fmt::Debug {
    /// The embedder that made the vectors, as the tree records it (e.g.
    /// `onnx(bge-small-en, cls)`): it picks the calibration.
    fn embedder(&self) -> String;

    /// The cosine of `query` with each candidate, in order.
    fn similarities<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
    ) -> BoxFuture<'a, Result<Similarities>>;
}

/// The softmax temperature of `choose` over cosines.
const CHOICE_TEMPERATURE: f64 = 0.02;

/// Options of the embedding judge: none (the tree names its embedder).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingOptions {}

pub(crate) fn build(_: &EmbeddingOptions, _client: &treenav_http::ClientConfig) -> super::Built {
    Ok((
        Box::new(Embedding::default()),
        "the tree's embedder".to_string(),
    ))
}

impl super::Backend for Embedding {
    fn profile(&self) -> super::Profile {
        PROFILE
    }

    fn call<'a>(&'a self, op: &'a Op<'a>) -> BoxFuture<'a, Result<Raw>> {
        Box::pin(self.answer(op))
    }

    fn uses_vectors(&self) -> bool {
        true
    }

    fn with_vectors(&self, source: Arc<dyn VectorSource>) -> Option<Box<dyn super::Backend>> {
        Some(Box::new(Embedding::with_source(source)))
    }
}

/// The embedding backend; it answers once a [`VectorSource`] is attached.
#[derive(Debug, Clone, Default)]
pub(crate) struct Embedding {
    pub(crate) source: Option<Arc<dyn VectorSource>>,
}

impl Embedding {
    pub(crate) fn with_source(source: Arc<dyn VectorSource>) -> Embedding {
        Embedding {
            source: Some(source),
        }
    }

    async fn answer(&self, op: &Op<'_>) -> Result<Raw> {
        let Some(source) = &self.source else {
            return Err(Error::new(
                ErrorKind::Config,
                PROFILE.kind,
                "the embedding judge scores candidates from a tree's stored vectors: use it through a navigator over a tree built with an embedder",
            ));
        };
        let sims = source.similarities(op.query, op.candidates).await?;
        if sims.cosines.len() != op.candidates.len() {
            return Err(Error::new(
                ErrorKind::MalformedResponse,
                PROFILE.kind,
                format!(
                    "{} similarities for {} candidates",
                    sims.cosines.len(),
                    op.candidates.len()
                ),
            ));
        }
        let platt = crate::fitted::calibration(&source.embedder());
        let cosines: Vec<f64> = sims
            .cosines
            .iter()
            .map(|c| f64::from(*c).clamp(-1.0, 1.0))
            .map(|c| if c.is_finite() { c } else { -1.0 })
            .collect();
        let probabilities = || cosines.iter().map(|c| platt.probability(*c)).collect();
        let values = match op.kind {
            OpKind::Judge => Values::Probabilities(probabilities()),
            OpKind::Choose => {
                Values::Choice(crate::probability::softmax(&cosines, CHOICE_TEMPERATURE))
            }
            OpKind::Grade(scale) => Values::Grades(
                probabilities()
                    .into_iter()
                    .map(|p: f64| super::lexical::level_distribution(p, scale.levels.len()))
                    .collect(),
            ),
        };
        Ok(Raw {
            values,
            input_tokens: Some(0),
            output_tokens: 0,
            cost_usd: Some(0.0),
            low_confidence: 0,
            cached_input_tokens: 0,
            vectors_scored: sims.vectors_read,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a tree's vectors the judge says what it needs.
    #[test]
    fn an_unattached_embedding_judge_says_it_needs_a_tree() {
        let judge = crate::Judge::new(&crate::JudgeOptions {
            backend: crate::BackendOptions::Embedding(EmbeddingOptions {}),
            ..crate::JudgeOptions::default()
        })
        .expect("judge");
        assert!(judge.pointwise() && judge.uses_vectors());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let err = runtime
            .block_on(judge.judge("q", &[Candidate::new("a", "x")]))
            .expect_err("no vectors");
        assert!(err.to_string().contains("stored vectors"), "{err}");
    }
}

//! What a backend is asked and what it answers: the dispatcher's one call
//! to one backend. The dispatcher builds [`Op`]s; every backend answers
//! them with a [`Raw`].

use crate::{Candidate, Scale};

/// Which question an operation asks.
#[derive(Debug, Clone, Copy)]
pub(crate) enum OpKind<'a> {
    Judge,
    Choose,
    Grade(&'a Scale),
}

/// One backend call: a shared context and the questions of one kind about it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Op<'a> {
    pub(crate) kind: OpKind<'a>,
    pub(crate) query: &'a str,
    pub(crate) candidates: &'a [Candidate],
    /// Each candidate's text key (`lexical::text_key`), computed once per request.
    pub(crate) texts: &'a [u128],
}

/// A backend's answers to one call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Values {
    /// P(yes) per candidate.
    Probabilities(Vec<f64>),
    /// One distribution over the candidates.
    Choice(Vec<f64>),
    /// A distribution over levels per candidate.
    Grades(Vec<Vec<f64>>),
}

/// A backend's reply to one call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Raw {
    pub(crate) values: Values,
    /// Reported input tokens (`None`: estimate).
    pub(crate) input_tokens: Option<u64>,
    pub(crate) output_tokens: u64,
    /// Reported cost (`None`: tokens × price).
    pub(crate) cost_usd: Option<f64>,
    pub(crate) low_confidence: u32,
    /// Input tokens the server reports served from its prefix cache.
    pub(crate) cached_input_tokens: u64,
    /// Stored vectors read to score the call (the embedding judge).
    pub(crate) vectors_scored: u64,
}

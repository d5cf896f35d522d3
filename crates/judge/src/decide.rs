//! [`Decide`]: the small interface the rest of the workspace depends on.
//!
//! A decider answers the three questions of a shared context (`judge`,
//! `choose`, `grade`) and says what one call may hold ([`Decide::limits`])
//! and whether it scores each candidate alone ([`Decide::pointwise`]). The
//! dispatcher ([`Judge`]) is the main implementation; [`WithFallback`] puts a
//! second decider behind a first (the fallback, written once); [`Scripted`]
//! answers from a function, in memory, for tests of everything above the
//! judge.
//!
//! The trait is object-safe (`Arc<dyn Decide>`): its methods return boxed
//! futures.

use crate::{Candidate, Choice, CorpusStats, Grades, Judge, Judgments, Limits, Result, Scale};
use futures::future::BoxFuture;
use std::sync::{Arc, Mutex};

/// A decision model: judge, choose and grade over a shared context.
pub trait Decide: Send + Sync + std::fmt::Debug {
    /// The backend kind (`lexical`, `systemone`, `cross-encoder`, …).
    fn kind(&self) -> &'static str;

    /// Which of treenav's backends decides, to branch on (`None` for a
    /// decider of another making, such as [`Scripted`]).
    fn backend(&self) -> Option<crate::BackendKind> {
        None
    }

    /// What one call may hold. Callers that need one call per list (the
    /// [`crate::Session`]) plan their batches within these.
    fn limits(&self) -> Limits;

    /// Whether each candidate is scored alone (a cross-encoder): its scores
    /// are then comparable across calls with no calibration references, and
    /// a multiple-choice question over its best would only repeat them.
    fn pointwise(&self) -> bool;

    /// P(relevant) for every candidate, in input order.
    fn judge<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
    ) -> BoxFuture<'a, Result<Judgments>>;

    /// One distribution over the candidates.
    fn choose<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
    ) -> BoxFuture<'a, Result<Choice>>;

    /// For every candidate, a distribution over the scale's levels.
    fn grade<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
        scale: &'a Scale,
    ) -> BoxFuture<'a, Result<Grades>>;

    /// Whether it scores candidates from stored vectors (the embedding
    /// judge): a navigator attaches a tree's, a pruner embeds the texts.
    fn uses_vectors(&self) -> bool {
        false
    }

    /// This decider with corpus statistics (plain data) for its IDF, when it
    /// uses any (the lexical judge); `None` when it has no use for them.
    fn with_corpus_stats(&self, _stats: Arc<CorpusStats>) -> Result<Option<Arc<dyn Decide>>> {
        Ok(None)
    }

    /// This decider reading stored vectors from `source`, when it scores
    /// from vectors (the embedding judge); `None` when it reads none.
    fn with_vectors(&self, _source: Arc<dyn crate::VectorSource>) -> Option<Arc<dyn Decide>> {
        None
    }
}

/// The three questions, each forwarded to `$recv` (whose method of the same
/// name answers: inherent methods come first in method resolution).
macro_rules! forward_questions {
    (|$s:ident| $recv:expr) => {
        fn judge<'a>(
            &'a $s,
            query: &'a str,
            candidates: &'a [Candidate],
        ) -> BoxFuture<'a, Result<Judgments>> {
            Box::pin($recv.judge(query, candidates))
        }
        fn choose<'a>(
            &'a $s,
            query: &'a str,
            candidates: &'a [Candidate],
        ) -> BoxFuture<'a, Result<Choice>> {
            Box::pin($recv.choose(query, candidates))
        }
        fn grade<'a>(
            &'a $s,
            query: &'a str,
            candidates: &'a [Candidate],
            scale: &'a Scale,
        ) -> BoxFuture<'a, Result<Grades>> {
            Box::pin($recv.grade(query, candidates, scale))
        }
    };
}

impl Decide for Judge {
    fn kind(&self) -> &'static str {
        Judge::kind(self)
    }
    fn backend(&self) -> Option<crate::BackendKind> {
        Some(self.backend_kind())
    }
    fn limits(&self) -> Limits {
        Judge::limits(self)
    }
    fn pointwise(&self) -> bool {
        Judge::pointwise(self)
    }
    fn uses_vectors(&self) -> bool {
        Judge::uses_vectors(self)
    }
    forward_questions!(|self| self);
    fn with_corpus_stats(&self, stats: Arc<CorpusStats>) -> Result<Option<Arc<dyn Decide>>> {
        if !self.uses_corpus_stats() {
            return Ok(None);
        }
        Ok(Some(Arc::new(Judge::with_corpus_stats(self, stats)?)))
    }
    fn with_vectors(&self, source: Arc<dyn crate::VectorSource>) -> Option<Arc<dyn Decide>> {
        Judge::with_vectors(self, source).map(|j| Arc::new(j) as Arc<dyn Decide>)
    }
}

impl From<Judge> for Arc<dyn Decide> {
    fn from(judge: Judge) -> Self {
        Arc::new(judge)
    }
}

impl<D: Decide + ?Sized> Decide for Arc<D> {
    fn kind(&self) -> &'static str {
        (**self).kind()
    }
    fn backend(&self) -> Option<crate::BackendKind> {
        (**self).backend()
    }
    fn limits(&self) -> Limits {
        (**self).limits()
    }
    fn pointwise(&self) -> bool {
        (**self).pointwise()
    }
    fn uses_vectors(&self) -> bool {
        (**self).uses_vectors()
    }
    forward_questions!(|self| (**self));
    fn with_corpus_stats(&self, stats: Arc<CorpusStats>) -> Result<Option<Arc<dyn Decide>>> {
        (**self).with_corpus_stats(stats)
    }
    fn with_vectors(&self, source: Arc<dyn crate::VectorSource>) -> Option<Arc<dyn Decide>> {
        (**self).with_vectors(source)
    }
}

/// `primary`, and `fallback` for any call of it that fails. An answer the
/// fallback gave counts one in its usage's `fallbacks`, so whoever reads the
/// usage (the session, a trace) knows which call fell back. The pair has the
/// primary's kind and limits, and is pointwise only when both are.
#[derive(Debug, Clone)]
pub struct WithFallback<A, B> {
    primary: A,
    fallback: B,
}

impl<A: Decide, B: Decide> WithFallback<A, B> {
    /// `primary` backed by `fallback`.
    pub fn new(primary: A, fallback: B) -> WithFallback<A, B> {
        WithFallback { primary, fallback }
    }
}

/// Runs `first`; on failure logs it and runs `second`, marking its usage.
macro_rules! or_fallback {
    ($self:ident, $op:literal, $call:ident ( $($arg:expr),* )) => {
        Box::pin(async move {
            match $self.primary.$call($($arg),*).await {
                Ok(answer) => Ok(answer),
                Err(error) => {
                    tracing::warn!(backend = $self.primary.kind(), op = $op, %error, "decider failed; fallback");
                    let mut answer = $self.fallback.$call($($arg),*).await?;
                    answer.usage.fallbacks = answer.usage.fallbacks.saturating_add(1);
                    Ok(answer)
                }
            }
        })
    };
}

impl<A: Decide, B: Decide> Decide for WithFallback<A, B> {
    fn kind(&self) -> &'static str {
        self.primary.kind()
    }
    fn backend(&self) -> Option<crate::BackendKind> {
        self.primary.backend()
    }
    fn limits(&self) -> Limits {
        self.primary.limits()
    }
    fn pointwise(&self) -> bool {
        self.primary.pointwise() && self.fallback.pointwise()
    }
    fn judge<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
    ) -> BoxFuture<'a, Result<Judgments>> {
        or_fallback!(self, "judge", judge(query, candidates))
    }
    fn choose<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
    ) -> BoxFuture<'a, Result<Choice>> {
        or_fallback!(self, "choose", choose(query, candidates))
    }
    fn grade<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
        scale: &'a Scale,
    ) -> BoxFuture<'a, Result<Grades>> {
        or_fallback!(self, "grade", grade(query, candidates, scale))
    }
}

/// The answer function of a [`Scripted`] decider: P(yes) of one candidate
/// given the query and the whole call (so a script can depend on context).
pub type Script = dyn Fn(&str, &Candidate, &[Candidate]) -> f64 + Send + Sync;

/// When a [`Scripted`] call fails: a test on the candidates shown.
pub type FailWhen = dyn Fn(&[Candidate]) -> bool + Send + Sync;

/// An in-memory decider for tests: P(yes) of each candidate comes from a
/// function; `choose` is the softmax of those, `grade` puts P(yes) on the
/// top level and the rest on the bottom one. Every call is recorded (the
/// ids it was shown), and a call can be made to fail.
pub struct Scripted {
    script: Box<Script>,
    limits: Limits,
    pointwise: bool,
    calls: Mutex<Vec<Vec<String>>>,
    fail_when: Option<Box<FailWhen>>,
}

impl std::fmt::Debug for Scripted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripted")
            .field("limits", &self.limits)
            .field("pointwise", &self.pointwise)
            .finish_non_exhaustive()
    }
}

impl Scripted {
    /// A decider answering `script`, with room for 10,000 questions a call.
    pub fn new(
        script: impl Fn(&str, &Candidate, &[Candidate]) -> f64 + Send + Sync + 'static,
    ) -> Scripted {
        Scripted {
            script: Box::new(script),
            limits: Limits {
                max_questions: 10_000,
                max_options: 10_000,
                max_state_tokens: u64::MAX / 4,
            },
            pointwise: false,
            calls: Mutex::new(Vec::new()),
            fail_when: None,
        }
    }

    /// The same with other limits.
    pub fn limits(mut self, limits: Limits) -> Scripted {
        self.limits = limits;
        self
    }

    /// Marks it pointwise (its script must then ignore the call's context).
    pub fn pointwise(mut self, pointwise: bool) -> Scripted {
        self.pointwise = pointwise;
        self
    }

    /// Fails (a retryable server error) every call for which `when` holds.
    pub fn fail_when(
        mut self,
        when: impl Fn(&[Candidate]) -> bool + Send + Sync + 'static,
    ) -> Scripted {
        self.fail_when = Some(Box::new(when));
        self
    }

    /// The ids shown in each call so far, in the order the calls were made.
    pub fn calls(&self) -> Vec<Vec<String>> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    fn answer(&self, query: &str, candidates: &[Candidate], limit: usize) -> Result<Vec<f64>> {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(candidates.iter().map(|c| c.id.clone()).collect());
        }
        if candidates.len() > limit {
            return Err(crate::Error::new(
                crate::ErrorKind::InvalidRequest,
                "scripted",
                format!("{} items over the limit of {limit}", candidates.len()),
            ));
        }
        if self.fail_when.as_ref().is_some_and(|f| f(candidates)) {
            return Err(crate::Error::new(
                crate::ErrorKind::Server,
                "scripted",
                "scripted failure",
            ));
        }
        Ok(candidates
            .iter()
            .map(|c| (self.script)(query, c, candidates).clamp(0.0, 1.0))
            .collect())
    }

    fn usage() -> crate::Usage {
        crate::Usage {
            calls: 1,
            ..crate::Usage::default()
        }
    }
}

impl Decide for Scripted {
    fn kind(&self) -> &'static str {
        "scripted"
    }
    fn limits(&self) -> Limits {
        self.limits
    }
    fn pointwise(&self) -> bool {
        self.pointwise
    }
    fn judge<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
    ) -> BoxFuture<'a, Result<Judgments>> {
        Box::pin(async move {
            Ok(Judgments {
                probabilities: self.answer(query, candidates, self.limits.max_questions)?,
                usage: Scripted::usage(),
            })
        })
    }
    fn choose<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
    ) -> BoxFuture<'a, Result<Choice>> {
        Box::pin(async move {
            let p = self.answer(query, candidates, self.limits.max_options)?;
            let weights: Vec<f64> = p.iter().map(|x| (4.0 * x).exp()).collect();
            let probabilities = crate::normalize(&weights);
            let best = crate::dispatch::argmax(&probabilities);
            Ok(Choice {
                confidence: crate::confidence(&probabilities),
                probabilities,
                best,
                usage: Scripted::usage(),
            })
        })
    }
    fn grade<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
        scale: &'a Scale,
    ) -> BoxFuture<'a, Result<Grades>> {
        Box::pin(async move {
            scale.check()?;
            let n = scale.levels.len();
            let grades = self
                .answer(query, candidates, self.limits.max_questions)?
                .into_iter()
                .map(|p| {
                    let mut probabilities = vec![0.0; n];
                    probabilities[0] = 1.0 - p;
                    probabilities[n - 1] += p;
                    crate::Grade {
                        expected: crate::expected_level(&probabilities),
                        probabilities,
                    }
                })
                .collect();
            Ok(Grades {
                grades,
                usage: Scripted::usage(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn the_fallback_answers_a_failed_call_and_is_counted() {
        let primary = Scripted::new(|_, _, _| 0.9).fail_when(|c| c.len() > 1);
        let fallback = Scripted::new(|_, _, _| 0.2);
        let pair = WithFallback::new(primary, fallback);
        let one = [Candidate::new("a", "x")];
        let two = [Candidate::new("a", "x"), Candidate::new("b", "y")];
        let ok = run(pair.judge("q", &one)).expect("primary");
        assert_eq!((ok.probabilities, ok.usage.fallbacks), (vec![0.9], 0));
        let fell = run(pair.judge("q", &two)).expect("fallback");
        assert_eq!(fell.probabilities, vec![0.2, 0.2]);
        assert_eq!(fell.usage.fallbacks, 1);
        let choice = run(pair.choose("q", &two)).expect("fallback choose");
        assert_eq!(choice.usage.fallbacks, 1);
    }

    #[test]
    fn arcs_and_judges_are_deciders() {
        let judge = Judge::new(&crate::JudgeOptions::default()).expect("judge");
        let shared: Arc<dyn Decide> = judge.into();
        let twice: Arc<Arc<dyn Decide>> = Arc::new(shared.clone());
        assert_eq!(twice.kind(), "lexical");
        assert!(!twice.pointwise());
        let c = [
            Candidate::new("a", "insulin lowers glucose"),
            Candidate::new("b", "football"),
        ];
        let j = run(twice.judge("insulin", &c)).expect("judge");
        assert!(j.probabilities[0] > j.probabilities[1]);
        let stats = Arc::new(CorpusStats::from_texts(["insulin lowers glucose"]));
        assert!(shared.with_corpus_stats(stats).expect("stats").is_some());
    }

    #[test]
    fn scripted_records_calls_and_refuses_over_its_limit() {
        let s = Scripted::new(|_, c, _| if c.id == "a" { 1.0 } else { 0.0 }).limits(Limits {
            max_questions: 1,
            max_options: 2,
            max_state_tokens: 100,
        });
        let c = [Candidate::new("a", "x"), Candidate::new("b", "y")];
        assert!(run(s.judge("q", &c)).is_err());
        assert_eq!(
            run(s.judge("q", &c[..1])).expect("one").probabilities,
            [1.0]
        );
        assert_eq!(s.calls(), vec![vec!["a", "b"], vec!["a"]]);
    }
}

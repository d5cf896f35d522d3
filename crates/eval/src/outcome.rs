//! One query's result from one system, and what each step of it cost.

use serde::Serialize;
use std::collections::HashSet;
use treenav_judge::Usage;

/// One step of a navigated query, as per-query means.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StepCost {
    /// `1 cluster`, `2 document`, `3 passage`, `rounds` or `rerank`.
    pub step: String,
    /// Candidates shown to the judge.
    pub candidates: f64,
    /// Input tokens (as the judge reports them, else estimated).
    pub input_tokens: f64,
    /// Wall time of the step's judge calls, ms.
    pub judge_ms: f64,
    /// Share of the mean query latency.
    pub share: f64,
}

/// One query's result from one system.
pub(crate) struct Outcome {
    pub(crate) ranking: Vec<usize>,
    /// The score of each ranked passage, as the system gives it
    /// (P(relevant) for the judged systems); empty for systems without one.
    pub(crate) scores: Vec<f64>,
    pub(crate) candidates_judged: usize,
    pub(crate) usage: Usage,
    pub(crate) titles_read: f64,
    pub(crate) latency_ms: f64,
    /// Tree (levels): whether the gold's ancestor was kept at each level.
    pub(crate) kept: Option<Vec<bool>>,
    /// Sequential judge rounds (calls that wait on one another).
    pub(crate) rounds: usize,
    /// Documents (indices) with anything shown to the judge.
    pub(crate) judged_documents: HashSet<usize>,
    /// What each step of a navigated query cost.
    pub(crate) steps: Vec<StepCost>,
    /// The passages (indices) the exploration judged, with their evidence,
    /// when the navigator kept it.
    pub(crate) evidence: Vec<(usize, treenav_navigator::fusion::Evidence)>,
}

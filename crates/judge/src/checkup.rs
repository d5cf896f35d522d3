//! A checkup: one tiny known decision of each kind (judge, choose, grade)
//! through a judge, to tell whether it is reachable and answers sensibly.
//! `treenav doctor` prints it; a service's readiness probe caches it.

use crate::{Candidate, Judge, Result, Scale, Usage};
use serde::Serialize;

/// The question the checkup asks.
pub const CHECKUP_QUERY: &str = "What gas do plants release during photosynthesis?";

/// What the checkup found. A judge that could not be asked is an error
/// of [`checkup`]; answers that look wrong are `warnings`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checkup {
    /// The backend's kind.
    pub backend: String,
    /// The model asked.
    pub model: String,
    /// The question.
    pub query: &'static str,
    /// The two candidates: a relevant one, then an irrelevant one.
    pub candidates: Vec<Candidate>,
    /// P(yes) of each candidate.
    pub judge: Vec<f64>,
    /// The multiple-choice probabilities.
    pub choose: Vec<f64>,
    /// Expected grade of each candidate, 1–5.
    pub grade_expected: Vec<f64>,
    /// What the three calls cost.
    pub usage: Usage,
    /// Answers that look wrong (empty when all is well).
    pub warnings: Vec<String>,
}

/// Asks the three known questions.
pub async fn checkup(judge: &Judge) -> Result<Checkup> {
    let candidates = vec![
        Candidate::new(
            "relevant",
            "Plants release oxygen as a by-product of photosynthesis in their leaves.",
        ),
        Candidate::new(
            "irrelevant",
            "The Eiffel Tower was completed in Paris in 1889.",
        ),
    ];
    let j = judge.judge(CHECKUP_QUERY, &candidates).await?;
    let c = judge.choose(CHECKUP_QUERY, &candidates).await?;
    let g = judge
        .grade(CHECKUP_QUERY, &candidates, &Scale::pruning())
        .await?;
    let mut usage = j.usage.clone();
    usage.add(&c.usage);
    usage.add(&g.usage);
    let mut warnings = Vec::new();
    if j.probabilities[0] <= j.probabilities[1] {
        warnings.push(format!(
            "judge: the relevant candidate got P(yes) {:.2}, not above the irrelevant one's {:.2}",
            j.probabilities[0], j.probabilities[1]
        ));
    }
    if c.best != 0 {
        warnings.push("choose: picked the irrelevant candidate".into());
    }
    if g.grades[0].expected <= g.grades[1].expected {
        warnings
            .push("grade: the relevant candidate is not graded above the irrelevant one".into());
    }
    if usage.low_confidence > 0 {
        warnings.push(format!(
            "{} answers had low label mass (unreliable)",
            usage.low_confidence
        ));
    }
    Ok(Checkup {
        backend: judge.kind().to_string(),
        model: judge.model().to_string(),
        query: CHECKUP_QUERY,
        candidates,
        judge: j.probabilities,
        choose: c.probabilities,
        grade_expected: g.grades.iter().map(|g| g.expected + 1.0).collect(),
        usage,
        warnings,
    })
}

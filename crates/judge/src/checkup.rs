//! A checkup: one tiny known decision of each kind (judge, choose, grade)
//! through a judge, to tell whether it is reachable and answers sensibly.
//! `treenav doctor` prints it; a service's readiness probe caches it.

use crate::{Candidate, Judge, LlmProbe, Result, Scale, Usage};
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
    /// For an LLM behind the logprobs protocol: what its endpoint returns
    /// (log-probabilities, the yes/no tokens' spelling, what comes before
    /// an answer, prefix caching).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmProbe>,
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
    // The LLM probe first: an endpoint without log-probabilities is then
    // explained before the decisions below fail on it.
    let llm = judge
        .probe_llm(CHECKUP_QUERY, &candidates)
        .await
        .transpose()?;
    if let Some(p) = llm.as_ref().filter(|p| !p.logprobs) {
        return Err(crate::Error::malformed(
            "openai-logprobs",
            format!(
                "the endpoint returned no log-probabilities on the `{}` route; this judge needs the top log-probabilities of the first generated token (llama.cpp returns them on every route; try another route with --llm-api)",
                p.api
            ),
        ));
    }
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
    if let Some(p) = &llm {
        warnings.extend(llm_warnings(p));
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
        llm,
        warnings,
    })
}

/// What in an LLM probe makes its answers doubtful.
fn llm_warnings(p: &LlmProbe) -> Vec<String> {
    let mut w = Vec::new();
    if p.yes_no_tokens.is_empty() {
        w.push(format!(
            "llm: no yes/no token among the first token's top {} (likeliest: {:?}); the model does not answer in the first token",
            p.top_tokens.len(),
            p.top_tokens.first().map(|t| t.0.as_str()).unwrap_or("")
        ));
    }
    if let Some(before) = &p.before_answer {
        if before.contains("<think>") || before.contains("<|think") {
            w.push("llm: the model thinks before answering (`<think>`): use a non-thinking model or turn thinking off in its chat template (e.g. llama.cpp --reasoning-budget 0, Qwen3 `/no_think`)".into());
        } else {
            // `before_answer` is never white space alone.
            w.push(format!(
                "llm: the model writes {before:?} before its answer; the first-token probabilities then measure that, not the answer"
            ));
        }
    }
    if p.label_mass < crate::backend::MIN_LABEL_MASS && !p.yes_no_tokens.is_empty() {
        w.push(format!(
            "llm: yes/no hold only {:.0}% of the first token's probability",
            100.0 * p.label_mass
        ));
    }
    w
}

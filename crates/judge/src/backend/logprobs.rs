//! Decision emulation over an ordinary chat model that returns next-token
//! log-probabilities: one completion of one token per question (the shared
//! context is the same prompt prefix, which servers with prefix caching reuse),
//! `temperature: 0`, `top_logprobs: 20`. A label's probability is the mass of
//! all its token variants (`Yes`, ` yes`, `YES`…); the answer is renormalised
//! over the labels, and flagged when the labels hold less than half the mass.

use crate::backend::op::{Op, OpKind, Raw, Values};
use crate::backend::remote::Remote;
use crate::error::{Error, Result};
use crate::render::{choose_question, grade_question, judge_question, render_state};
use serde::Deserialize;
use serde_json::json;

const NAME: &str = "openai-logprobs";

/// The backend's profile: One completion per question; top-20 log-probabilities cap the options.
pub(crate) const PROFILE: super::Profile = super::Profile {
    kind: NAME,
    limits: crate::Limits {
        max_questions: 64,
        max_options: 20,
        max_state_tokens: 6_000,
    },
    price_per_million: 0.0,
    in_process: false,
    pointwise: false,
};

/// Where chat completions live below the base URL.
pub(crate) const PATH: &str = "/v1/chat/completions";
/// Below this label mass an answer is flagged as unreliable.
pub(crate) const MIN_LABEL_MASS: f64 = 0.5;

#[derive(Debug)]
pub(crate) struct Logprobs(pub(crate) Remote);

#[derive(Deserialize)]
struct Reply {
    choices: Vec<ChoiceItem>,
    #[serde(default)]
    usage: Option<ReplyUsage>,
}

#[derive(Deserialize)]
struct ReplyUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

#[derive(Deserialize)]
struct ChoiceItem {
    logprobs: Option<LogprobBlock>,
}

#[derive(Deserialize)]
struct LogprobBlock {
    content: Vec<TokenLogprob>,
}

#[derive(Deserialize)]
struct TokenLogprob {
    #[serde(default)]
    top_logprobs: Vec<TopLogprob>,
}

#[derive(Deserialize)]
struct TopLogprob {
    token: String,
    logprob: f64,
}

/// One answer: the label distribution, whether it is flagged, and tokens used.
struct Answer {
    probabilities: Vec<f64>,
    flagged: bool,
    input_tokens: u64,
    output_tokens: u64,
}

impl Logprobs {
    async fn ask(
        &self,
        state: &str,
        question: &str,
        labels: &[String],
        instruction: &str,
    ) -> Result<Answer> {
        let body = json!({
            "model": self.0.model,
            "messages": [
                {"role": "system", "content": "You judge candidates listed in a context. Reply with exactly one of the allowed answers and nothing else."},
                {"role": "user", "content": format!("{state}\nQuestion: {question}\n{instruction}")},
            ],
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": true,
            "top_logprobs": 20,
        });
        let reply = self.0.post::<Reply>(NAME, &body).await?;
        let top = reply
            .choices
            .first()
            .and_then(|c| c.logprobs.as_ref())
            .and_then(|l| l.content.first())
            .map(|t| &t.top_logprobs)
            .ok_or_else(|| {
                Error::malformed(
                    NAME,
                    "the reply holds no log-probabilities (does the server support `logprobs`?)",
                )
            })?;
        let mut mass = vec![0.0; labels.len()];
        for t in top {
            if !t.logprob.is_finite() || t.logprob > 1e-9 {
                return Err(Error::malformed(
                    NAME,
                    format!(
                        "log-probability {} of token {:?} is not ≤ 0",
                        t.logprob, t.token
                    ),
                ));
            }
            let token = t.token.trim().to_lowercase();
            if let Some(i) = labels.iter().position(|l| *l == token) {
                mass[i] += t.logprob.exp();
            }
        }
        let total: f64 = mass.iter().sum();
        if total <= 0.0 {
            return Err(Error::malformed(
                NAME,
                format!("none of the answers {labels:?} is among the top log-probabilities of `{question}`"),
            ));
        }
        let usage = reply.usage.unwrap_or(ReplyUsage {
            prompt_tokens: 0,
            completion_tokens: 0,
        });
        Ok(Answer {
            probabilities: mass.iter().map(|m| m / total).collect(),
            flagged: total < MIN_LABEL_MASS,
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
        })
    }

    pub(crate) async fn call(&self, op: &Op<'_>) -> Result<Raw> {
        let state = render_state(op.query, op.candidates);
        let yes_no = vec!["yes".to_string(), "no".to_string()];
        let answers: Vec<Answer> = match op.kind {
            OpKind::Judge => {
                futures::future::try_join_all(op.candidates.iter().enumerate().map(|(i, c)| {
                    let q = judge_question(i, c);
                    let labels = yes_no.clone();
                    let state = &state;
                    async move { self.ask(state, &q, &labels, "Answer yes or no.").await }
                }))
                .await?
            }
            OpKind::Choose => {
                let labels: Vec<String> =
                    (1..=op.candidates.len()).map(|i| i.to_string()).collect();
                let instruction = format!(
                    "Answer with the number of one candidate, 1 to {}.",
                    op.candidates.len()
                );
                vec![
                    self.ask(&state, choose_question(), &labels, &instruction)
                        .await?,
                ]
            }
            OpKind::Grade(scale) => {
                let labels: Vec<String> = (1..=scale.levels.len()).map(|i| i.to_string()).collect();
                let legend: Vec<String> = scale
                    .levels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| format!("{} = {l}", i + 1))
                    .collect();
                let instruction = format!("Answer with one number: {}.", legend.join("; "));
                futures::future::try_join_all(op.candidates.iter().enumerate().map(|(i, c)| {
                    let q = grade_question(i, c, scale);
                    let (labels, instruction, state) = (&labels, &instruction, &state);
                    async move { self.ask(state, &q, labels, instruction).await }
                }))
                .await?
            }
        };
        // Saturating: the counts are the server's, checked by the dispatcher
        // only after this sum (a wrapped sum could slip under its check).
        let input_tokens = answers
            .iter()
            .fold(0u64, |sum, a| sum.saturating_add(a.input_tokens));
        let output_tokens = answers
            .iter()
            .fold(0u64, |sum, a| sum.saturating_add(a.output_tokens));
        let low_confidence = answers.iter().filter(|a| a.flagged).count() as u32;
        let values = match op.kind {
            OpKind::Judge => {
                Values::Probabilities(answers.iter().map(|a| a.probabilities[0]).collect())
            }
            OpKind::Choose => Values::Choice(
                answers
                    .into_iter()
                    .next()
                    .map(|a| a.probabilities)
                    .unwrap_or_default(),
            ),
            OpKind::Grade(_) => {
                Values::Grades(answers.into_iter().map(|a| a.probabilities).collect())
            }
        };
        Ok(Raw {
            values,
            input_tokens: (input_tokens > 0).then_some(input_tokens),
            output_tokens,
            cost_usd: None,
            low_confidence,
        })
    }
}

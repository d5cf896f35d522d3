//! OpenAI's decisions shape: `POST {base}/v1/decisions` with `input` and an
//! array of typed questions; answers come back as an array in question
//! order, any of which may be a `refusal`.

use crate::backend::op::{Op, OpKind, Raw, Values};
use crate::backend::remote::{offered_choice, typed_answer, Remote, ReplyUsage};
use crate::error::{probability, Error, Result};
use crate::render::{
    choice_description, choice_label, choose_question, grade_question, judge_question, render_state,
};
use serde::Deserialize;
use serde_json::{json, Value};

const NAME: &str = "openai-decisions";

/// The backend's profile: OpenAI decisions: 2–255 choices; $0.10 per million input tokens.
pub(crate) const PROFILE: super::Profile = super::Profile {
    kind: NAME,
    about: "OpenAI's /v1/decisions",
    limits: crate::Limits {
        max_questions: 64,
        max_options: 255,
        max_state_tokens: 30_000,
    },
    price_per_million: 0.10,
    in_process: false,
    pointwise: false,
};

/// Where the decisions API lives below the base URL.
pub(crate) const PATH: &str = "/v1/decisions";

/// Options of an OpenAI decisions judge (`POST {endpoint}/v1/decisions`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenaiDecisionsOptions {
    /// Base URL, e.g. `https://api.openai.com`.
    pub endpoint: String,
    /// Model id.
    pub model: String,
    /// Environment variable holding the key (e.g. `OPENAI_API_KEY`); none sent when unset.
    #[serde(default)]
    pub api_key_env: Option<String>,
}

pub(crate) fn build(
    o: &OpenaiDecisionsOptions,
    client: &treenav_http::ClientConfig,
) -> super::Built {
    let remote = Remote::new(NAME, &o.endpoint, &o.model, &o.api_key_env, PATH, client)?;
    Ok((Box::new(Decisions(remote)), o.model.clone()))
}

impl super::Backend for Decisions {
    fn profile(&self) -> super::Profile {
        PROFILE
    }

    fn call<'a>(&'a self, op: &'a Op<'a>) -> futures::future::BoxFuture<'a, Result<Raw>> {
        Box::pin(self.answer(op))
    }
}

#[derive(Debug)]
pub(crate) struct Decisions(pub(crate) Remote);

#[derive(Deserialize)]
struct Reply {
    answers: Vec<Value>,
    #[serde(default)]
    usage: Option<ReplyUsage>,
}

/// The answer named `name` at position `i`, of type `ty`.
fn answer<'a>(answers: &'a [Value], i: usize, name: &str, ty: &str) -> Result<&'a Value> {
    let a = answers.get(i).ok_or_else(|| {
        Error::malformed(
            NAME,
            format!(
                "no answer for question `{name}` (got {} answers)",
                answers.len()
            ),
        )
    })?;
    if a.get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| n != name)
    {
        return Err(Error::malformed(
            NAME,
            format!("answer {i} is not for question `{name}`"),
        ));
    }
    typed_answer(NAME, a, name, ty)
}

/// Reads `[{key: label, probability: p}, …]` into a vector over `labels`.
fn distribution(
    what: &str,
    list: Option<&Value>,
    key: &str,
    labels: &[String],
) -> Result<Vec<f64>> {
    let Some(items) = list.and_then(Value::as_array) else {
        return Err(Error::malformed(
            NAME,
            format!("{what}: `probabilities` is not an array"),
        ));
    };
    let mut out = vec![0.0; labels.len()];
    for item in items {
        let label = item.get(key).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        let Some(i) = label
            .as_ref()
            .and_then(|l| labels.iter().position(|x| x == l))
        else {
            return Err(Error::malformed(
                NAME,
                format!("{what}: label {label:?} was not offered"),
            ));
        };
        out[i] = probability(NAME, what, item.get("probability").and_then(Value::as_f64))?;
    }
    Ok(out)
}

/// The typed questions of `op`, in order (`q{i}`, `choice`, `g{i}`).
fn questions(op: &Op<'_>) -> Vec<Value> {
    let each = op.candidates.iter().enumerate();
    match op.kind {
        OpKind::Judge => each
            .map(|(i, c)| json!({"type": "predicate", "name": format!("q{i}"), "instructions": judge_question(i, c)}))
            .collect(),
        OpKind::Choose => vec![json!({
            "type": "choice", "name": "choice", "instructions": choose_question(),
            "choices": each
                .map(|(i, c)| json!({"value": choice_label(i), "description": choice_description(i, c)}))
                .collect::<Vec<_>>(),
        })],
        OpKind::Grade(scale) => each
            .map(|(i, c)| {
                json!({
                    "type": "score", "name": format!("g{i}"), "instructions": grade_question(i, c, scale),
                    "levels": scale.levels.iter().map(|l| json!({"label": l})).collect::<Vec<_>>(),
                })
            })
            .collect(),
    }
}

/// The values the answers give for `op`'s questions.
fn values(op: &Op<'_>, a: &[Value]) -> Result<Values> {
    let n = op.candidates.len();
    Ok(match op.kind {
        OpKind::Judge => Values::Probabilities(
            (0..n)
                .map(|i| {
                    let name = format!("q{i}");
                    let p = answer(a, i, &name, "predicate")?.get("probability");
                    probability(NAME, &name, p.and_then(Value::as_f64))
                })
                .collect::<Result<_>>()?,
        ),
        OpKind::Choose => {
            let labels: Vec<String> = (0..n).map(choice_label).collect();
            let ans = answer(a, 0, "choice", "choice")?;
            offered_choice(NAME, ans, &labels)?;
            Values::Choice(distribution(
                "choice",
                ans.get("probabilities"),
                "value",
                &labels,
            )?)
        }
        OpKind::Grade(scale) => Values::Grades(
            (0..n)
                .map(|i| {
                    let name = format!("g{i}");
                    let ans = answer(a, i, &name, "score")?;
                    distribution(&name, ans.get("probabilities"), "label", &scale.levels)
                })
                .collect::<Result<_>>()?,
        ),
    })
}

impl Decisions {
    async fn answer(&self, op: &Op<'_>) -> Result<Raw> {
        let input = render_state(op.query, op.candidates);
        let body = json!({"model": self.0.model, "input": input, "questions": questions(op)});
        let reply = self.0.post::<Reply>(NAME, &body).await?;
        let values = values(op, &reply.answers)?;
        let mut raw = reply.usage.unwrap_or_default().into_raw(values);
        raw.cost_usd = None; // the decisions API reports tokens, never a cost
        Ok(raw)
    }
}

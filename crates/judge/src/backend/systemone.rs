//! The System One format: `POST {base}/v1/systemone` with a state and a map of
//! typed questions; answers come back keyed by question id.

use crate::backend::op::{Op, OpKind, Raw, Values};
use crate::backend::remote::{offered_choice, typed_answer, Remote, ReplyUsage};
use crate::error::{probability, Error, Result};
use crate::render::{
    choice_description, choice_label, choose_question, grade_question, judge_question, render_state,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

const NAME: &str = "systemone";

/// The backend's profile: dev-double and laya cap at 64 questions and 26 options; Jev at ≈ 33k
/// tokens of state plus question; Jev's list price is $0.042 per million input tokens.
pub(crate) const PROFILE: super::Profile = super::Profile {
    kind: NAME,
    about: "System One format: TypeSafe Jev, OpenRouter, llama.cpp, Ollama, laya-serve",
    limits: crate::Limits {
        max_questions: 64,
        max_options: 26,
        max_state_tokens: 30_000,
    },
    price_per_million: 0.042,
    in_process: false,
    pointwise: false,
};

fn systemone_path() -> String {
    crate::defaults::SYSTEMONE_PATH.into()
}

/// Options of a System One judge (`POST {endpoint}/v1/systemone`):
/// TypeSafe Jev, llama.cpp server, Ollama, laya-serve; OpenRouter with
/// `path = "/api/alpha/decisions"`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemoneOptions {
    /// Base URL, e.g. `https://api.typesafe.ai` or `http://127.0.0.1:8080`.
    pub endpoint: String,
    /// Model id; pin a version (`jev-1.13.0`).
    pub model: String,
    /// Environment variable holding the key (e.g. `TYPESAFE_API_KEY`); none sent when unset.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Path appended to the endpoint. By default, `/v1/systemone`.
    #[serde(default = "systemone_path")]
    pub path: String,
}

pub(crate) fn build(o: &SystemoneOptions, client: &treenav_http::ClientConfig) -> super::Built {
    let remote = Remote::new(NAME, &o.endpoint, &o.model, &o.api_key_env, &o.path, client)?;
    Ok((Box::new(SystemOne(remote)), o.model.clone()))
}

impl super::Backend for SystemOne {
    fn profile(&self) -> super::Profile {
        PROFILE
    }

    fn call<'a>(&'a self, op: &'a Op<'a>) -> futures::future::BoxFuture<'a, Result<Raw>> {
        Box::pin(self.answer(op))
    }
}

#[derive(Debug)]
pub(crate) struct SystemOne(pub(crate) Remote);

#[derive(Deserialize)]
struct Reply {
    answers: Map<String, Value>,
    #[serde(default)]
    usage: Option<ReplyUsage>,
}

/// Reads `{"label": p, …}` into a vector over `labels`; a label not offered is an error.
pub(crate) fn label_map(what: &str, map: &Value, labels: &[String]) -> Result<Vec<f64>> {
    let Some(obj) = map.as_object() else {
        return Err(Error::malformed(
            NAME,
            format!("{what}: `probabilities` is not an object"),
        ));
    };
    let index: HashMap<&str, usize> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.as_str(), i))
        .collect();
    let mut out = vec![0.0; labels.len()];
    for (label, p) in obj {
        let Some(&i) = index.get(label.as_str()) else {
            return Err(Error::malformed(
                NAME,
                format!("{what}: label `{label}` was not offered"),
            ));
        };
        out[i] = probability(NAME, what, p.as_f64())?;
    }
    Ok(out)
}

/// The answer to question `id`, of type `ty`.
fn answer<'a>(answers: &'a Map<String, Value>, id: &str, ty: &str) -> Result<&'a Value> {
    let a = answers
        .get(id)
        .ok_or_else(|| Error::malformed(NAME, format!("no answer to question `{id}`")))?;
    typed_answer(NAME, a, id, ty)
}

/// The typed questions of `op`, keyed by id (`q{i}`, `choice`, `g{i}`).
fn questions(op: &Op<'_>) -> Map<String, Value> {
    let mut questions = Map::new();
    match op.kind {
        OpKind::Judge => {
            for (i, c) in op.candidates.iter().enumerate() {
                questions.insert(
                    format!("q{i}"),
                    json!({"type": "noul", "instructions": judge_question(i, c)}),
                );
            }
        }
        OpKind::Choose => {
            let criteria: Map<String, Value> = op
                .candidates
                .iter()
                .enumerate()
                .map(|(i, c)| (choice_label(i), Value::String(choice_description(i, c))))
                .collect();
            questions.insert(
                "choice".into(),
                json!({"type": "choice", "instructions": choose_question(), "criteria": criteria}),
            );
        }
        OpKind::Grade(scale) => {
            for (i, c) in op.candidates.iter().enumerate() {
                questions.insert(
                    format!("g{i}"),
                    json!({"type": "score", "instructions": grade_question(i, c, scale), "criteria": scale.levels}),
                );
            }
        }
    }
    questions
}

/// The values the answers give for `op`'s questions.
fn values(op: &Op<'_>, a: &Map<String, Value>) -> Result<Values> {
    let n = op.candidates.len();
    Ok(match op.kind {
        OpKind::Judge => Values::Probabilities(
            (0..n)
                .map(|i| {
                    let id = format!("q{i}");
                    let p = answer(a, &id, "noul")?.get("noul").and_then(Value::as_f64);
                    probability(NAME, &id, p)
                })
                .collect::<Result<_>>()?,
        ),
        OpKind::Choose => {
            let labels: Vec<String> = (0..n).map(choice_label).collect();
            let ans = answer(a, "choice", "choice")?;
            offered_choice(NAME, ans, &labels)?;
            let p = ans.get("probabilities").unwrap_or(&Value::Null);
            Values::Choice(label_map("choice", p, &labels)?)
        }
        OpKind::Grade(scale) => {
            let labels: Vec<String> = (0..scale.levels.len()).map(|i| i.to_string()).collect();
            Values::Grades(
                (0..n)
                    .map(|i| {
                        let id = format!("g{i}");
                        let p = answer(a, &id, "score")?.get("probabilities");
                        label_map(&id, p.unwrap_or(&Value::Null), &labels)
                    })
                    .collect::<Result<_>>()?,
            )
        }
    })
}

impl SystemOne {
    async fn answer(&self, op: &Op<'_>) -> Result<Raw> {
        let state = render_state(op.query, op.candidates);
        let body = json!({"model": self.0.model, "state": state, "questions": questions(op)});
        let reply = self.0.post::<Reply>(NAME, &body).await?;
        let values = values(op, &reply.answers)?;
        Ok(reply.usage.unwrap_or_default().into_raw(values))
    }
}

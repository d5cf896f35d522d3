//! OpenAI's decisions shape: `POST {base}/v1/decisions` with `input` and an
//! array of typed questions; answers come back as an array in question
//! order, any of which may be a `refusal`.

use crate::dispatch::{Op, OpKind, Raw, Values};
use crate::error::{probability, Error, ErrorKind, Result};
use crate::remote::Remote;
use crate::render::{
    choice_description, choice_label, choose_question, grade_question, judge_question, render_state,
};
use serde::Deserialize;
use serde_json::{json, Value};

const NAME: &str = "openai-decisions";

#[derive(Debug)]
pub(crate) struct Decisions(pub(crate) Remote);

#[derive(Deserialize)]
struct Reply {
    answers: Vec<Value>,
    #[serde(default)]
    usage: Option<ReplyUsage>,
}

#[derive(Deserialize)]
struct ReplyUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
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
    match a.get("type").and_then(Value::as_str) {
        Some(t) if t == ty => Ok(a),
        Some("refusal") => Err(Error::new(
            ErrorKind::Refused,
            NAME,
            format!("the model refused question `{name}`"),
        )),
        other => Err(Error::malformed(
            NAME,
            format!("answer `{name}` has type {other:?}, expected `{ty}`"),
        )),
    }
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

impl Decisions {
    pub(crate) async fn call(&self, op: &Op<'_>) -> Result<Raw> {
        let questions: Vec<Value> = match op.kind {
            OpKind::Judge => op
                .candidates
                .iter()
                .enumerate()
                .map(|(i, c)| json!({"type": "predicate", "name": format!("q{i}"), "instructions": judge_question(i, c)}))
                .collect(),
            OpKind::Choose => vec![json!({
                "type": "choice", "name": "choice", "instructions": choose_question(),
                "choices": op.candidates.iter().enumerate()
                    .map(|(i, c)| json!({"value": choice_label(i), "description": choice_description(i, c)}))
                    .collect::<Vec<_>>(),
            })],
            OpKind::Grade(scale) => op
                .candidates
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    json!({
                        "type": "score", "name": format!("g{i}"), "instructions": grade_question(i, c, scale),
                        "levels": scale.levels.iter().map(|l| json!({"label": l})).collect::<Vec<_>>(),
                    })
                })
                .collect(),
        };
        let body = json!({"model": self.0.model, "input": render_state(op.query, op.candidates), "questions": questions});
        let reply = self.0.post::<Reply>(NAME, &body).await?;
        let a = &reply.answers;
        let values = match op.kind {
            OpKind::Judge => Values::Probabilities(
                (0..op.candidates.len())
                    .map(|i| {
                        let name = format!("q{i}");
                        probability(
                            NAME,
                            &name,
                            answer(a, i, &name, "predicate")?
                                .get("probability")
                                .and_then(Value::as_f64),
                        )
                    })
                    .collect::<Result<_>>()?,
            ),
            OpKind::Choose => {
                let labels: Vec<String> = (0..op.candidates.len()).map(choice_label).collect();
                let ans = answer(a, 0, "choice", "choice")?;
                let chosen = ans
                    .get("choice")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !labels.iter().any(|l| l == chosen) {
                    return Err(Error::malformed(
                        NAME,
                        format!("choice `{chosen}` was not offered"),
                    ));
                }
                Values::Choice(distribution(
                    "choice",
                    ans.get("probabilities"),
                    "value",
                    &labels,
                )?)
            }
            OpKind::Grade(scale) => Values::Grades(
                (0..op.candidates.len())
                    .map(|i| {
                        let name = format!("g{i}");
                        let ans = answer(a, i, &name, "score")?;
                        distribution(&name, ans.get("probabilities"), "label", &scale.levels)
                    })
                    .collect::<Result<_>>()?,
            ),
        };
        let usage = reply.usage.unwrap_or(ReplyUsage {
            input_tokens: None,
            output_tokens: None,
        });
        Ok(Raw {
            values,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens.unwrap_or(0),
            cost_usd: None,
            low_confidence: 0,
        })
    }
}

//! The System One format: `POST {base}/v1/systemone` with a state and a map of
//! typed questions; answers come back keyed by question id.

use crate::dispatch::{Op, OpKind, Raw, Values};
use crate::error::{probability, Error, Result};
use crate::remote::Remote;
use crate::render::{
    choice_description, choice_label, choose_question, grade_question, judge_question, render_state,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

const NAME: &str = "systemone";

#[derive(Debug)]
pub(crate) struct SystemOne(pub(crate) Remote);

#[derive(Deserialize)]
struct Reply {
    answers: Map<String, Value>,
    #[serde(default)]
    usage: Option<ReplyUsage>,
}

#[derive(Deserialize)]
struct ReplyUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cost: Option<f64>,
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

fn answer<'a>(answers: &'a Map<String, Value>, id: &str, ty: &str) -> Result<&'a Value> {
    let a = answers
        .get(id)
        .ok_or_else(|| Error::malformed(NAME, format!("no answer to question `{id}`")))?;
    match a.get("type").and_then(Value::as_str) {
        Some(t) if t == ty => Ok(a),
        Some("refusal") => Err(Error::new(
            crate::ErrorKind::Refused,
            NAME,
            format!("the model refused question `{id}`"),
        )),
        other => Err(Error::malformed(
            NAME,
            format!("answer `{id}` has type {other:?}, expected `{ty}`"),
        )),
    }
}

impl SystemOne {
    pub(crate) async fn call(&self, op: &Op<'_>) -> Result<Raw> {
        let state = render_state(op.query, op.candidates);
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
        let body = json!({"model": self.0.model, "state": state, "questions": questions});
        let reply = self.0.post::<Reply>(NAME, &body).await?;
        let a = &reply.answers;
        let values = match op.kind {
            OpKind::Judge => Values::Probabilities(
                (0..op.candidates.len())
                    .map(|i| {
                        let id = format!("q{i}");
                        probability(
                            NAME,
                            &id,
                            answer(a, &id, "noul")?.get("noul").and_then(Value::as_f64),
                        )
                    })
                    .collect::<Result<_>>()?,
            ),
            OpKind::Choose => {
                let labels: Vec<String> = (0..op.candidates.len()).map(choice_label).collect();
                let ans = answer(a, "choice", "choice")?;
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
                Values::Choice(label_map(
                    "choice",
                    ans.get("probabilities").unwrap_or(&Value::Null),
                    &labels,
                )?)
            }
            OpKind::Grade(scale) => {
                let labels: Vec<String> = (0..scale.levels.len()).map(|i| i.to_string()).collect();
                Values::Grades(
                    (0..op.candidates.len())
                        .map(|i| {
                            let id = format!("g{i}");
                            let ans = answer(a, &id, "score")?;
                            label_map(
                                &id,
                                ans.get("probabilities").unwrap_or(&Value::Null),
                                &labels,
                            )
                        })
                        .collect::<Result<_>>()?,
                )
            }
        };
        let usage = reply.usage.unwrap_or(ReplyUsage {
            input_tokens: None,
            output_tokens: None,
            cost: None,
        });
        Ok(Raw {
            values,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens.unwrap_or(0),
            cost_usd: usage.cost,
            low_confidence: 0,
        })
    }
}

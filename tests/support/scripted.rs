//! The one scripted judge server of our own: System One, OpenAI
//! decisions and chat-completions shapes on 127.0.0.1, for what no real
//! server can be made to do (answer after a fixed delay, fail on cue,
//! count requests in flight). A mock by nature: the real peers (`sparrow-decider`,
//! `dev-double`) are tested in `judge_servers.rs`.
//!
//! * `/v1/systemone`: after the delay, `noul` falls with the candidate's
//!   number, `choice` picks the last option; load is counted.
//! * `/{scenario}/v1/systemone`: scripted faults (`flaky429`, `flaky500`,
//!   `always529`, `auth`, `big`, `badjson`, `missing`, `outofrange`,
//!   `badlabel`, `slow` = 5 s); anything else answers `noul` 0.5.
//! * `/v1/decisions`, `/v1/chat/completions`: the OpenAI shapes; a
//!   candidate is relevant when its line mentions insulin.
//! * `/v1/completions`, `/completion`: the plain-text routes in the shapes
//!   llama.cpp's server really answers (tests/llama_server.rs runs the real
//!   one): chat-style `logprobs.content` on `/v1/completions`,
//!   `completion_probabilities` and `timings` on `/completion`, tokens with
//!   their leading space (` Yes`), cached prompt tokens reported.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Requests a scripted server has seen, and the most in flight at once.
#[derive(Debug, Default)]
pub struct Load {
    pub requests: std::sync::atomic::AtomicUsize,
    pub in_flight: std::sync::atomic::AtomicUsize,
    pub peak: std::sync::atomic::AtomicUsize,
    /// Every request body, as JSON text, in arrival order.
    pub bodies: std::sync::Mutex<Vec<String>>,
}

impl Load {
    /// Whether a request body containing `text` has arrived.
    pub fn seen(&self, text: &str) -> bool {
        self.bodies
            .lock()
            .map(|b| b.iter().any(|body| body.contains(text)))
            .unwrap_or(false)
    }
}

/// A running scripted server.
pub struct Scripted {
    /// Its base URL.
    pub base: String,
    /// Load on `/v1/systemone`.
    pub load: Arc<Load>,
    /// Calls to the fault routes (a scenario fails its first call only).
    pub fault_calls: Arc<AtomicU32>,
}

/// Starts the server; `delay` applies to `/v1/systemone`.
pub async fn start(delay: Duration) -> Scripted {
    let load = Arc::new(Load::default());
    let fault_calls = Arc::new(AtomicU32::new(0));
    let counted = load.clone();
    let calls = fault_calls.clone();
    let app = Router::new()
        .route(
            "/v1/systemone",
            post(move |Json(b): Json<Value>| {
                let load = counted.clone();
                async move {
                    load.requests.fetch_add(1, Ordering::SeqCst);
                    if let Ok(mut bodies) = load.bodies.lock() {
                        bodies.push(b.to_string());
                    }
                    let now = load.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    load.peak.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(delay).await;
                    load.in_flight.fetch_sub(1, Ordering::SeqCst);
                    Json(systemone_answer(b))
                }
            }),
        )
        .route(
            "/{scenario}/v1/systemone",
            post(
                move |axum::extract::Path(scenario): axum::extract::Path<String>,
                      Json(b): Json<Value>| {
                    let calls = calls.clone();
                    async move { fault(calls, scenario, b).await }
                },
            ),
        )
        .route("/v1/decisions", post(decisions))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/completion", post(completions));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    Scripted {
        base: format!("http://{addr}"),
        load,
        fault_calls,
    }
}

/// The scripted System One answers: `noul` falls with the candidate's
/// number; `choice` always picks the last option.
fn systemone_answer(body: Value) -> Value {
    let answers: serde_json::Map<String, Value> = body["questions"]
        .as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|(id, q)| {
            let a = if q["type"] == "choice" {
                let labels: Vec<String> = q["criteria"]
                    .as_object()
                    .map(|m| m.keys().cloned().collect())
                    .unwrap_or_default();
                let last = labels
                    .iter()
                    .max_by_key(|l| l.parse::<usize>().unwrap_or(0))
                    .cloned()
                    .unwrap_or_default();
                let probs: serde_json::Map<String, Value> = labels
                    .iter()
                    .map(|l| {
                        (
                            l.clone(),
                            json!(if *l == last {
                                0.9
                            } else {
                                0.1 / (labels.len() - 1) as f64
                            }),
                        )
                    })
                    .collect();
                json!({"type": "choice", "choice": last, "probabilities": probs, "confidence": 0.5})
            } else {
                let n: f64 = id.trim_start_matches('q').parse().unwrap_or(0.0);
                json!({"type": "noul", "noul": (0.99 - n * 0.01).max(0.0)})
            };
            (id, a)
        })
        .collect();
    json!({"answers": answers, "usage": {"input_tokens": 100, "output_tokens": 0}})
}

/// The text of candidate `[n]` (1-based) in a rendered state.
fn candidate_line(state: &str, n: usize) -> String {
    let tag = format!("[{n}] ");
    state
        .lines()
        .find(|l| l.starts_with(&tag))
        .unwrap_or("")
        .to_lowercase()
}

fn number_after(text: &str, marker: &str) -> usize {
    text.split(marker)
        .nth(1)
        .and_then(|r| r.split(']').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn relevant(state: &str, n: usize) -> bool {
    candidate_line(state, n).contains("insulin")
}

async fn decisions(Json(body): Json<Value>) -> Json<Value> {
    let state = body["input"].as_str().unwrap_or("").to_string();
    let answers: Vec<Value> = body["questions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|q| {
            let name = q["name"].clone();
            let n = number_after(q["instructions"].as_str().unwrap_or(""), "candidate [");
            match q["type"].as_str() {
                Some("predicate") if candidate_line(&state, n).contains("refuse") => json!({"type": "refusal", "name": name}),
                Some("predicate") => json!({"type": "predicate", "name": name, "probability": if relevant(&state, n) { 0.93 } else { 0.07 }}),
                Some("choice") => {
                    let choices = q["choices"].as_array().cloned().unwrap_or_default();
                    let best = (1..=choices.len()).find(|i| relevant(&state, *i)).unwrap_or(1);
                    let probs: Vec<Value> = (1..=choices.len())
                        .map(|i| json!({"value": i.to_string(), "probability": if i == best { 0.8 } else { 0.2 / (choices.len() - 1).max(1) as f64 }}))
                        .collect();
                    json!({"type": "choice", "name": name, "choice": best.to_string(), "confidence": 0.5, "probabilities": probs})
                }
                _ => {
                    let levels = q["levels"].as_array().cloned().unwrap_or_default();
                    let top = if relevant(&state, n) { levels.len() - 1 } else { 0 };
                    let probs: Vec<Value> = levels.iter().enumerate()
                        .map(|(i, l)| json!({"label": l["label"], "value": i, "probability": if i == top { 1.0 } else { 0.0 }}))
                        .collect();
                    json!({"type": "score", "name": name, "score": top, "confidence": 1.0, "probabilities": probs})
                }
            }
        })
        .collect();
    Json(
        json!({"answers": answers, "usage": {"input_tokens": 123, "output_tokens": 0, "total_tokens": 123}}),
    )
}

/// The top tokens a scripted model puts first after `prompt` (a rendered
/// state, `\nQuestion: `, the question), each token prefixed by `space`.
fn top_tokens(prompt: &str, space: &str) -> Vec<Value> {
    let state = prompt.split("\nQuestion: ").next().unwrap_or("");
    let question = prompt.split("\nQuestion: ").nth(1).unwrap_or("");
    let t =
        |token: &str, logprob: f64| json!({"token": format!("{space}{token}"), "logprob": logprob});
    if question.starts_with("Which candidate") {
        let n = (1..30).find(|i| relevant(state, *i)).unwrap_or(1);
        vec![t(&n.to_string(), -0.1), t("1", -3.0), t("The", -4.0)]
    } else if question.starts_with("How much") {
        let n = number_after(question, "candidate [");
        let best = if relevant(state, n) { "5" } else { "1" };
        vec![t(best, -0.05), t("3", -3.5)]
    } else {
        let n = number_after(question, "candidate [");
        if candidate_line(state, n).contains("mumble") {
            // Label mass below one half: must be flagged.
            vec![t("Maybe", -0.2), t("Yes", -2.0), t("No", -2.5)]
        } else if candidate_line(state, n).contains("silence") {
            // No label at all among the top tokens.
            vec![t("Hmm", -0.1), t("The", -2.5)]
        } else if relevant(state, n) {
            vec![
                t("Yes", -0.1),
                json!({"token": " yes", "logprob": -3.0}),
                t("No", -2.6),
            ]
        } else {
            vec![t("No", -0.05), t("Yes", -3.2)]
        }
    }
}

async fn chat(Json(body): Json<Value>) -> Json<Value> {
    let prompt = body["messages"][1]["content"].as_str().unwrap_or("");
    let top = top_tokens(prompt, "");
    Json(json!({
        "choices": [{"message": {"role": "assistant", "content": top[0]["token"]}, "logprobs": {"content": [{"token": top[0]["token"], "logprob": top[0]["logprob"], "top_logprobs": top}]}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 1}
    }))
}

/// `/v1/completions` and `/completion` as llama.cpp answers them: the
/// prompt ends in `Answer:` (tokens then start with a space) or `Answer: [`
/// (a number follows the bracket); 40 of 50 prompt tokens cached.
async fn completions(uri: axum::http::Uri, Json(body): Json<Value>) -> Json<Value> {
    let prompt = body["prompt"].as_str().unwrap_or("");
    let space = if prompt.ends_with('[') { "" } else { " " };
    let top = top_tokens(prompt, space);
    let timings = json!({"cache_n": 40, "prompt_n": 10, "predicted_n": 1});
    if uri.path() == "/completion" {
        assert!(
            body["n_probs"].as_u64().is_some_and(|n| n >= 2),
            "n_probs asked"
        );
        return Json(json!({
            "content": top[0]["token"],
            "completion_probabilities": [{"token": top[0]["token"], "logprob": top[0]["logprob"], "top_logprobs": top}],
            "tokens_evaluated": 50,
            "tokens_cached": 51,
            "timings": timings,
        }));
    }
    Json(json!({
        "choices": [{"text": top[0]["token"], "logprobs": {"content": [{"token": top[0]["token"], "logprob": top[0]["logprob"], "top_logprobs": top}]}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 40}},
        "timings": timings,
    }))
}

fn systemone_ok(body: &Value) -> Value {
    let answers: serde_json::Map<String, Value> = body["questions"]
        .as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|(id, _)| (id, json!({"type": "noul", "noul": 0.5})))
        .collect();
    json!({"answers": answers, "usage": {"input_tokens": 10, "output_tokens": 0}})
}

async fn fault(calls: Arc<AtomicU32>, scenario: String, body: Value) -> Response {
    let n = calls.fetch_add(1, Ordering::SeqCst);
    match scenario.as_str() {
        "flaky429" if n == 0 => {
            let mut h = HeaderMap::new();
            h.insert("retry-after-ms", "300".parse().expect("header"));
            (StatusCode::TOO_MANY_REQUESTS, h, "{}").into_response()
        }
        "flaky500" if n == 0 => (StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response(),
        "always529" => (StatusCode::from_u16(529).expect("status"), "overloaded").into_response(),
        "auth" => (StatusCode::UNAUTHORIZED, r#"{"detail":"bad key"}"#).into_response(),
        "big" => (StatusCode::PAYLOAD_TOO_LARGE, "").into_response(),
        "badjson" => (StatusCode::OK, "{\"answers\": ").into_response(),
        "missing" => Json(json!({"answers": {}})).into_response(),
        "outofrange" => {
            let mut v = systemone_ok(&body);
            if let Some(a) = v["answers"].as_object_mut().and_then(|m| m.values_mut().next()) {
                a["noul"] = json!(1.7);
            }
            Json(v).into_response()
        }
        "badlabel" => Json(json!({"answers": {"choice": {"type": "choice", "choice": "99", "probabilities": {"99": 1.0}}}})).into_response(),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Json(systemone_ok(&body)).into_response()
        }
        _ => Json(systemone_ok(&body)).into_response(),
    }
}

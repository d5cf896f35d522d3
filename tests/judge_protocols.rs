//! `openai-decisions` and `openai-logprobs` against a test server of our own
//! that follows the documented shapes (no offline server speaks them: OpenAI's
//! decisions API is hosted only, and no package ships a chat model capable of
//! yes/no judging), plus fault handling of the dispatcher against scripted
//! faults (429 with Retry-After, 500, 401, 413, malformed replies, slow
//! replies, refused connections) — these need a scripted server by nature.

mod support;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use treenav::judge::{
    BackendOptions, Candidate, DispatchOptions, ErrorKind, Judge, JudgeOptions, Scale,
};

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

async fn chat(Json(body): Json<Value>) -> Json<Value> {
    let prompt = body["messages"][1]["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let state = prompt
        .split("\nQuestion: ")
        .next()
        .unwrap_or("")
        .to_string();
    let question = prompt
        .split("\nQuestion: ")
        .nth(1)
        .unwrap_or("")
        .to_string();
    let top: Vec<Value> = if question.starts_with("Which candidate") {
        let n = (1..30).find(|i| relevant(&state, *i)).unwrap_or(1);
        vec![
            json!({"token": n.to_string(), "logprob": -0.1}),
            json!({"token": "1", "logprob": -3.0}),
            json!({"token": "The", "logprob": -4.0}),
        ]
    } else if question.starts_with("How much") {
        let n = number_after(&question, "candidate [");
        let best = if relevant(&state, n) { "5" } else { "1" };
        vec![
            json!({"token": best, "logprob": -0.05}),
            json!({"token": "3", "logprob": -3.5}),
        ]
    } else {
        let n = number_after(&question, "candidate [");
        if candidate_line(&state, n).contains("mumble") {
            // Label mass below one half: must be flagged.
            vec![
                json!({"token": "Maybe", "logprob": -0.2}),
                json!({"token": "Yes", "logprob": -2.0}),
                json!({"token": "No", "logprob": -2.5}),
            ]
        } else if relevant(&state, n) {
            vec![
                json!({"token": "Yes", "logprob": -0.1}),
                json!({"token": " yes", "logprob": -3.0}),
                json!({"token": "No", "logprob": -2.6}),
            ]
        } else {
            vec![
                json!({"token": "No", "logprob": -0.05}),
                json!({"token": "Yes", "logprob": -3.2}),
            ]
        }
    };
    Json(json!({
        "choices": [{"message": {"role": "assistant", "content": top[0]["token"]}, "logprobs": {"content": [{"token": top[0]["token"], "logprob": top[0]["logprob"], "top_logprobs": top}]}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 1}
    }))
}

#[derive(Clone, Default)]
struct Faults {
    calls: Arc<AtomicU32>,
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

async fn fault(
    State(f): State<Faults>,
    axum::extract::Path(scenario): axum::extract::Path<String>,
    Json(body): Json<Value>,
) -> Response {
    let n = f.calls.fetch_add(1, Ordering::SeqCst);
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

async fn serve() -> (String, Faults) {
    let faults = Faults::default();
    let app = Router::new()
        .route("/v1/decisions", post(decisions))
        .route("/v1/chat/completions", post(chat))
        .route("/{scenario}/v1/systemone", post(fault))
        .with_state(faults.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), faults)
}

fn cands() -> Vec<Candidate> {
    vec![
        Candidate::new("a", "The striker scored a late goal."),
        Candidate::new("b", "Insulin lowers blood glucose."),
        Candidate::new("c", "Rain is expected tomorrow."),
    ]
}

fn judge(backend: BackendOptions, dispatch: DispatchOptions) -> Judge {
    Judge::new(&JudgeOptions { backend, dispatch }).expect("judge")
}

#[tokio::test]
async fn openai_decisions_shape() {
    let (base, _) = serve().await;
    let j = judge(
        BackendOptions::OpenaiDecisions {
            endpoint: base,
            model: "m".into(),
            api_key_env: None,
        },
        DispatchOptions::default(),
    );
    let q = "what lowers glucose";
    let p = j.judge(q, &cands()).await.expect("judge");
    assert_eq!(p.probabilities, vec![0.07, 0.93, 0.07]);
    assert_eq!(p.usage.input_tokens, 123);
    assert!((p.usage.cost_usd - 123.0 * 0.10 / 1e6).abs() < 1e-12);
    let c = j.choose(q, &cands()).await.expect("choose");
    assert_eq!(c.best, 1);
    let g = j
        .grade(q, &cands(), &Scale::pruning())
        .await
        .expect("grade");
    assert_eq!(g.grades[1].expected, 4.0);
    assert_eq!(g.grades[0].expected, 0.0);
    let mut refusing = cands();
    refusing.push(Candidate::new("d", "I refuse to be judged."));
    let e = j.judge(q, &refusing).await.expect_err("refusal");
    assert_eq!(e.kind, ErrorKind::Refused);
    assert!(!e.retryable());
}

#[tokio::test]
async fn openai_logprobs_emulation() {
    let (base, _) = serve().await;
    let j = judge(
        BackendOptions::OpenaiLogprobs {
            endpoint: base,
            model: "m".into(),
            api_key_env: None,
        },
        DispatchOptions::default(),
    );
    let q = "what lowers glucose";
    let p = j.judge(q, &cands()).await.expect("judge");
    assert!(
        p.probabilities[1] > 0.85 && p.probabilities[0] < 0.1,
        "{:?}",
        p.probabilities
    );
    // "Yes" and " yes" are summed: P = (e^-0.1 + e^-3) / (e^-0.1 + e^-3 + e^-2.6).
    let (y, n) = ((-0.1f64).exp() + (-3.0f64).exp(), (-2.6f64).exp());
    assert!((p.probabilities[1] - y / (y + n)).abs() < 1e-9);
    assert_eq!(p.usage.low_confidence, 0);
    assert_eq!(p.usage.input_tokens, 150, "one completion per question");
    let c = j.choose(q, &cands()).await.expect("choose");
    assert_eq!(c.best, 1);
    let g = j
        .grade(q, &cands(), &Scale::pruning())
        .await
        .expect("grade");
    assert!(g.grades[1].expected > 3.9 && g.grades[0].expected < 0.1);
    let mut vague = cands();
    vague.push(Candidate::new("m", "mumble mumble"));
    let v = j.judge(q, &vague).await.expect("judge vague");
    assert_eq!(v.usage.low_confidence, 1, "label mass below 0.5 is flagged");
}

fn faulty(base: &str, scenario: &str, dispatch: DispatchOptions) -> Judge {
    judge(
        BackendOptions::Systemone {
            endpoint: format!("{base}/{scenario}"),
            model: "m".into(),
            api_key_env: None,
            path: "/v1/systemone".into(),
        },
        dispatch,
    )
}

fn fast() -> DispatchOptions {
    DispatchOptions {
        timeout_secs: 1.0,
        max_retries: 2,
        cache_capacity: 0,
        ..DispatchOptions::default()
    }
}

#[tokio::test]
async fn retries_429_and_500_then_succeeds() {
    for scenario in ["flaky429", "flaky500"] {
        let (base, f) = serve().await;
        let start = Instant::now();
        let p = faulty(&base, scenario, fast())
            .judge("q", &cands())
            .await
            .expect(scenario);
        assert_eq!(p.probabilities.len(), 3);
        assert_eq!(f.calls.load(Ordering::SeqCst), 2, "{scenario}: one retry");
        if scenario == "flaky429" {
            assert!(
                start.elapsed() >= Duration::from_millis(290),
                "retry-after-ms honoured"
            );
        }
    }
}

#[tokio::test]
async fn typed_errors_without_pointless_retries() {
    let cases = [
        ("auth", ErrorKind::Authentication, 1),
        ("big", ErrorKind::TooLarge, 1),
        ("badjson", ErrorKind::MalformedResponse, 1),
        ("missing", ErrorKind::MalformedResponse, 1),
        ("outofrange", ErrorKind::MalformedResponse, 1),
        ("always529", ErrorKind::Overloaded, 3),
        ("slow", ErrorKind::Timeout, 3),
    ];
    for (scenario, kind, calls) in cases {
        let (base, f) = serve().await;
        let e = faulty(
            &base,
            scenario,
            DispatchOptions {
                max_retries: 2,
                timeout_secs: 0.3,
                cache_capacity: 0,
                ..DispatchOptions::default()
            },
        )
        .judge("q", &cands())
        .await
        .err()
        .unwrap_or_else(|| panic!("{scenario} should fail"));
        assert_eq!(e.kind, kind, "{scenario}: {e}");
        assert_eq!(e.retryable(), kind.retryable());
        assert_eq!(f.calls.load(Ordering::SeqCst), calls, "{scenario}: calls");
    }
    let (base, _) = serve().await;
    let e = faulty(&base, "badlabel", fast())
        .choose("q", &cands())
        .await
        .expect_err("bad label");
    assert!(
        e.kind == ErrorKind::MalformedResponse && e.message.contains("not offered"),
        "{e}"
    );
}

#[tokio::test]
async fn refused_connection_and_deadline() {
    let port = support::free_port();
    let e = judge(
        BackendOptions::Systemone {
            endpoint: format!("http://127.0.0.1:{port}"),
            model: "m".into(),
            api_key_env: None,
            path: "/v1/systemone".into(),
        },
        DispatchOptions {
            max_retries: 1,
            ..fast()
        },
    )
    .judge("q", &cands())
    .await
    .expect_err("refused");
    assert_eq!(e.kind, ErrorKind::Network);
    assert!(e.retryable());

    let (base, _) = serve().await;
    let start = Instant::now();
    let e = faulty(
        &base,
        "slow",
        DispatchOptions {
            deadline_secs: Some(0.5),
            timeout_secs: 10.0,
            ..fast()
        },
    )
    .judge("q", &cands())
    .await
    .expect_err("deadline");
    assert_eq!(e.kind, ErrorKind::Deadline);
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[test]
fn construction_fails_with_what_to_set() {
    let e = Judge::new(&JudgeOptions {
        backend: BackendOptions::Systemone {
            endpoint: "http://127.0.0.1:1".into(),
            model: "m".into(),
            api_key_env: Some("TREENAV_TEST_UNSET_JUDGE_KEY".into()),
            path: "/v1/systemone".into(),
        },
        dispatch: DispatchOptions::default(),
    })
    .expect_err("missing key");
    assert!(
        e.to_string().contains("TREENAV_TEST_UNSET_JUDGE_KEY"),
        "{e}"
    );
    let e = Judge::new(&JudgeOptions {
        backend: BackendOptions::OpenaiDecisions {
            endpoint: "localhost:80".into(),
            model: "m".into(),
            api_key_env: None,
        },
        dispatch: DispatchOptions::default(),
    })
    .expect_err("bad endpoint");
    assert!(e.to_string().contains("--endpoint"), "{e}");
}

//! Property tests of every HTTP judge backend's reply handling against a
//! hostile server: a loopback server of our own (no real server answers
//! with chosen garbage, so this one is scripted: it returns whatever body
//! and status the test case sets) serves valid replies with one part
//! replaced by arbitrary JSON, a key removed, the body cut short, or random
//! bytes. Through the public `Judge` API (HTTP client, body cap, JSON
//! decoding, the backend's parser, the dispatcher's checks), every call
//! ends in values that keep their invariants or in a typed error; none
//! panics or hangs. `PROPTEST_CASES=5000 cargo test --release --test
//! fuzz_replies` runs longer.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, OnceLock};
use treenav::judge::{BackendOptions, Candidate, DispatchOptions, Judge, JudgeOptions, Scale};

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The status and body the server answers with next.
type Script = Arc<Mutex<(u16, Vec<u8>)>>;

async fn reply(State(script): State<Script>) -> Response {
    let (status, body) = script.lock().map(|s| s.clone()).unwrap_or_default();
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    (status, [("content-type", "application/json")], body).into_response()
}

struct Server {
    runtime: tokio::runtime::Runtime,
    base: String,
    script: Script,
    /// Held for a whole case: tests run in parallel and share the server.
    turn: Mutex<()>,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let script: Script = Arc::new(Mutex::new((200, Vec::new())));
        let app = Router::new()
            .route("/v1/systemone", post(reply))
            .route("/v1/decisions", post(reply))
            .route("/v1/chat/completions", post(reply))
            .with_state(script.clone());
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        runtime.spawn(async move { axum::serve(listener, app).await });
        Server {
            runtime,
            base,
            script,
            turn: Mutex::new(()),
        }
    })
}

impl Server {
    /// The server for one case: tests run in parallel and share it.
    fn turn(&self) -> std::sync::MutexGuard<'_, ()> {
        self.turn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What the server answers next.
    fn answer_with(&self, status: u16, body: Vec<u8>) {
        *self.script.lock().expect("script") = (status, body);
    }
}

#[derive(Debug, Clone, Copy)]
enum Backend {
    SystemOne,
    Decisions,
    Logprobs,
}

#[derive(Debug, Clone, Copy)]
enum Ask {
    Judge,
    Choose,
    Grade,
}

fn judge(backend: Backend) -> Judge {
    judge_with(backend, DispatchOptions::default().max_reply_bytes)
}

fn judge_with(backend: Backend, max_reply_bytes: u64) -> Judge {
    let endpoint = server().base.clone();
    let backend = match backend {
        Backend::SystemOne => BackendOptions::Systemone(treenav::judge::SystemoneOptions {
            endpoint,
            model: "m".into(),
            api_key_env: None,
            path: "/v1/systemone".into(),
        }),
        Backend::Decisions => {
            BackendOptions::OpenaiDecisions(treenav::judge::OpenaiDecisionsOptions {
                endpoint,
                model: "m".into(),
                api_key_env: None,
            })
        }
        Backend::Logprobs => {
            BackendOptions::OpenaiLogprobs(treenav::judge::OpenaiLogprobsOptions {
                endpoint,
                model: "m".into(),
                api_key_env: None,
                api: Default::default(),
            })
        }
    };
    let dispatch = DispatchOptions {
        max_retries: 0,
        cache_capacity: 0,
        timeout_secs: 5.0,
        deadline_secs: Some(10.0),
        max_reply_bytes,
        ..DispatchOptions::default()
    };
    Judge::new(&JudgeOptions { backend, dispatch }).expect("judge")
}

/// A valid reply of `backend` to `ask` over `n` candidates.
fn valid_reply(backend: Backend, ask: Ask, n: usize) -> Value {
    let levels: Vec<String> = Scale::pruning().levels;
    let usage = json!({"input_tokens": 100, "output_tokens": 1, "cost": 0.001});
    match (backend, ask) {
        (Backend::SystemOne, Ask::Judge) => {
            let answers: serde_json::Map<String, Value> = (0..n)
                .map(|i| (format!("q{i}"), json!({"type": "noul", "noul": 0.25})))
                .collect();
            json!({"answers": answers, "usage": usage})
        }
        (Backend::SystemOne, Ask::Choose) => {
            let p: serde_json::Map<String, Value> = (1..=n)
                .map(|i| (i.to_string(), json!(1.0 / n as f64)))
                .collect();
            json!({"answers": {"choice": {"type": "choice", "choice": "1", "probabilities": p}}, "usage": usage})
        }
        (Backend::SystemOne, Ask::Grade) => {
            let p: serde_json::Map<String, Value> = (0..levels.len())
                .map(|i| (i.to_string(), json!(0.2)))
                .collect();
            let answers: serde_json::Map<String, Value> = (0..n)
                .map(|i| {
                    (
                        format!("g{i}"),
                        json!({"type": "score", "probabilities": p}),
                    )
                })
                .collect();
            json!({"answers": answers, "usage": usage})
        }
        (Backend::Decisions, Ask::Judge) => {
            let answers: Vec<Value> = (0..n)
                .map(|i| json!({"type": "predicate", "name": format!("q{i}"), "probability": 0.5}))
                .collect();
            json!({"answers": answers, "usage": usage})
        }
        (Backend::Decisions, Ask::Choose) => {
            let p: Vec<Value> = (1..=n)
                .map(|i| json!({"value": i.to_string(), "probability": 1.0 / n as f64}))
                .collect();
            json!({"answers": [{"type": "choice", "name": "choice", "choice": "1", "probabilities": p}], "usage": usage})
        }
        (Backend::Decisions, Ask::Grade) => {
            let p: Vec<Value> = levels
                .iter()
                .map(|l| json!({"label": l, "probability": 0.2}))
                .collect();
            let answers: Vec<Value> = (0..n)
                .map(|i| json!({"type": "score", "name": format!("g{i}"), "probabilities": p}))
                .collect();
            json!({"answers": answers, "usage": usage})
        }
        (Backend::Logprobs, ask) => {
            let tokens: Vec<String> = match ask {
                Ask::Judge => vec!["yes".into(), "no".into()],
                Ask::Choose => (1..=n).map(|i| i.to_string()).collect(),
                Ask::Grade => (1..=levels.len()).map(|i| i.to_string()).collect(),
            };
            let top: Vec<Value> = tokens
                .iter()
                .map(|t| json!({"token": t, "logprob": -1.0}))
                .collect();
            json!({
                "choices": [{"message": {"role": "assistant", "content": tokens[0]},
                    "logprobs": {"content": [{"token": tokens[0], "logprob": -1.0, "top_logprobs": top}]}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 1}
            })
        }
    }
}

/// Every value position of a JSON tree, as a path of keys and indices.
fn paths(v: &Value, at: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                at.push(json!(k));
                paths(child, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                at.push(json!(i));
                paths(child, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn at_path<'a>(v: &'a mut Value, path: &[Value]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, step| match step {
        Value::String(k) => v.get_mut(k.as_str()),
        Value::Number(i) => v.get_mut(i.as_u64()? as usize),
        _ => None,
    })
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop_oneof![
            any::<f64>(),
            Just(1e308),
            Just(-0.0),
            Just(-1.0),
            Just(2.0),
            Just(0.5)
        ]
        .prop_map(Value::from),
        "(yes|no|1|2|99|refusal|choice|score|noul|predicate|\\PC{0,8})".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            proptest::collection::btree_map(
                "(type|name|choice|probability|probabilities|1|q0|g0|token|logprob)",
                inner,
                0..3
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    Replace(usize, Value),
    Remove(usize),
    Cut(usize),
    Bytes(Vec<u8>),
    Status(u16),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), json_value()).prop_map(|(at, v)| Mutation::Replace(at, v)),
        2 => any::<usize>().prop_map(Mutation::Remove),
        1 => any::<usize>().prop_map(Mutation::Cut),
        1 => proptest::collection::vec(any::<u8>(), 0..64).prop_map(Mutation::Bytes),
        1 => prop_oneof![Just(400u16), Just(401), Just(413), Just(429), Just(500), Just(503), Just(204), Just(302)]
            .prop_map(Mutation::Status),
    ]
}

fn body(mut reply: Value, m: &Mutation) -> (u16, Vec<u8>) {
    let mut all = Vec::new();
    paths(&reply, &mut Vec::new(), &mut all);
    match m {
        Mutation::Replace(at, v) => {
            if let Some(slot) = at_path(&mut reply, &all[at % all.len()]) {
                *slot = v.clone();
            }
        }
        Mutation::Remove(at) => {
            let path = &all[at % all.len()];
            if let Some((Value::String(key), parent)) = path.split_last() {
                if let Some(Value::Object(m)) = at_path(&mut reply, parent) {
                    m.remove(key);
                }
            }
        }
        Mutation::Cut(at) => {
            let bytes = serde_json::to_vec(&reply).expect("encode");
            let at = at % bytes.len().max(1);
            return (200, bytes[..at].to_vec());
        }
        Mutation::Bytes(b) => return (200, b.clone()),
        Mutation::Status(s) => return (*s, serde_json::to_vec(&reply).expect("encode")),
    }
    (200, serde_json::to_vec(&reply).expect("encode"))
}

fn unit(p: f64) -> bool {
    p.is_finite() && (0.0..=1.0).contains(&p)
}

fn run_case(backend: Backend, ask: Ask, n: usize, m: &Mutation) -> Result<(), TestCaseError> {
    let s = server();
    let _turn = s.turn();
    let scripted = body(valid_reply(backend, ask, n), m);
    s.answer_with(scripted.0, scripted.1);
    let candidates: Vec<Candidate> = (0..n)
        .map(|i| Candidate::new(format!("c{i}"), format!("candidate text {i}")))
        .collect();
    let j = judge(backend);
    let outcome: Result<(), treenav::judge::Error> = s.runtime.block_on(async {
        match ask {
            Ask::Judge => {
                let r = j.judge("query", &candidates).await?;
                assert_eq!(r.probabilities.len(), n);
                assert!(r.probabilities.iter().all(|p| unit(*p)), "{r:?}");
                assert!(r.usage.cost_usd.is_finite() && r.usage.cost_usd >= 0.0);
            }
            Ask::Choose => {
                let r = j.choose("query", &candidates).await?;
                assert_eq!(r.probabilities.len(), n);
                assert!(r.best < n);
                assert!(r.probabilities.iter().all(|p| unit(*p)), "{r:?}");
                assert!(unit(r.confidence), "{r:?}");
            }
            Ask::Grade => {
                let r = j.grade("query", &candidates, &Scale::pruning()).await?;
                assert_eq!(r.grades.len(), n);
                for g in &r.grades {
                    assert!(g.probabilities.iter().all(|p| unit(*p)), "{g:?}");
                    assert!(g.expected.is_finite(), "{g:?}");
                }
            }
        }
        Ok(())
    });
    if let Err(e) = outcome {
        prop_assert!(!e.to_string().is_empty());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(150), .. ProptestConfig::default() })]

    #[test]
    fn hostile_replies_end_in_values_or_typed_errors(
        backend in prop_oneof![Just(Backend::SystemOne), Just(Backend::Decisions), Just(Backend::Logprobs)],
        ask in prop_oneof![Just(Ask::Judge), Just(Ask::Choose), Just(Ask::Grade)],
        n in 1usize..5,
        m in mutation(),
    ) {
        run_case(backend, ask, n, &m)?;
    }
}

/// Usage figures out of range (a token count near `u64::MAX` used to
/// overflow the sums; a negative cost undercut `--max-cost`) are malformed
/// replies.
#[test]
fn usage_out_of_range_is_malformed() {
    let s = server();
    let _turn = s.turn();
    let candidates = vec![Candidate::new("a", "text")];
    for usage in [
        json!({"input_tokens": u64::MAX, "output_tokens": 1}),
        json!({"input_tokens": 1, "output_tokens": u64::MAX}),
        json!({"input_tokens": 1, "cost": -5.0}),
        json!({"input_tokens": 1, "cost": 1e300}),
    ] {
        let mut reply = valid_reply(Backend::SystemOne, Ask::Judge, 1);
        reply["usage"] = usage.clone();
        s.answer_with(200, serde_json::to_vec(&reply).expect("encode"));
        let e = s
            .runtime
            .block_on(judge(Backend::SystemOne).judge("q", &candidates))
            .expect_err("out of range");
        assert_eq!(
            e.kind,
            treenav::judge::ErrorKind::MalformedResponse,
            "{usage}: {e}"
        );
        assert!(e.to_string().contains("out of range"), "{e}");
    }
}

/// The reply cap is a judge option: a reply over it fails the call as too
/// large; the cap itself is range-checked.
#[test]
fn reply_cap_is_a_judge_option() {
    let s = server();
    let _turn = s.turn();
    let candidates = vec![Candidate::new("a", "text")];
    let mut reply = valid_reply(Backend::SystemOne, Ask::Judge, 1);
    reply["padding"] = json!("x".repeat(4000));
    s.answer_with(200, serde_json::to_vec(&reply).expect("encode"));
    let small = judge_with(Backend::SystemOne, 2048);
    let e = s
        .runtime
        .block_on(small.judge("q", &candidates))
        .expect_err("over the cap");
    assert!(e.to_string().contains("2048"), "{e}");
    let roomy = judge_with(Backend::SystemOne, 8192);
    s.runtime
        .block_on(roomy.judge("q", &candidates))
        .expect("under the cap");
    let e = Judge::new(&JudgeOptions {
        backend: BackendOptions::default(),
        dispatch: DispatchOptions {
            max_reply_bytes: 10,
            ..DispatchOptions::default()
        },
    })
    .expect_err("too small a cap");
    assert!(
        e.to_string()
            .contains("dispatch.max_reply_bytes must be in"),
        "{e}"
    );
}

/// The unmutated replies are accepted, so the mutations start from replies
/// that reach every parser's far end.
#[test]
fn valid_replies_are_accepted() {
    for backend in [Backend::SystemOne, Backend::Decisions, Backend::Logprobs] {
        for ask in [Ask::Judge, Ask::Choose, Ask::Grade] {
            let s = server();
            let _turn = s.turn();
            s.answer_with(
                200,
                serde_json::to_vec(&valid_reply(backend, ask, 3)).expect("encode"),
            );
            let candidates: Vec<Candidate> = (0..3)
                .map(|i| Candidate::new(format!("c{i}"), "text"))
                .collect();
            let j = judge(backend);
            let ok = s.runtime.block_on(async {
                match ask {
                    Ask::Judge => j.judge("q", &candidates).await.map(|_| ()),
                    Ask::Choose => j.choose("q", &candidates).await.map(|_| ()),
                    Ask::Grade => j
                        .grade("q", &candidates, &Scale::pruning())
                        .await
                        .map(|_| ()),
                }
            });
            assert!(ok.is_ok(), "{backend:?} {ask:?}: {ok:?}");
        }
    }
}

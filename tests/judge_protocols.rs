//! `openai-decisions` and `openai-logprobs` against a test server of our own
//! that follows the documented shapes (no offline server speaks them: OpenAI's
//! decisions API is hosted only, and no package ships a chat model capable of
//! yes/no judging), plus fault handling of the dispatcher against scripted
//! faults (429 with Retry-After, 500, 401, 413, malformed replies, slow
//! replies, refused connections) — these need a scripted server by nature.

mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use treenav::judge::{
    BackendOptions, Candidate, DispatchOptions, ErrorKind, Judge, JudgeOptions, LogprobsApi, Scale,
};

/// The scripted server (tests/support/scripted.rs) and its fault counter.
async fn serve() -> (String, Arc<AtomicU32>) {
    let s = support::scripted::start(Duration::ZERO).await;
    (s.base, s.fault_calls)
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
        BackendOptions::OpenaiDecisions(treenav::judge::OpenaiDecisionsOptions {
            endpoint: base,
            model: "m".into(),
            api_key_env: None,
        }),
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
        BackendOptions::OpenaiLogprobs(treenav::judge::OpenaiLogprobsOptions {
            endpoint: base,
            model: "m".into(),
            api_key_env: None,
            api: Default::default(),
        }),
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
    vague.push(Candidate::new("s", "silence"));
    let v = j.judge(q, &vague).await.expect("judge vague");
    assert_eq!(v.usage.low_confidence, 2, "label mass below 0.5 is flagged");
    // No label among the top tokens: an even answer, flagged, not an error.
    assert_eq!(v.probabilities[4], 0.5);
}

/// The plain-text routes, in the shapes llama.cpp answers: the same
/// decisions, leading-space tokens read, cached prompt tokens counted.
#[tokio::test]
async fn openai_logprobs_text_routes() {
    let (base, _) = serve().await;
    for api in [LogprobsApi::Completions, LogprobsApi::Llama] {
        let j = judge(
            BackendOptions::OpenaiLogprobs(treenav::judge::OpenaiLogprobsOptions {
                endpoint: format!("{base}/v1"),
                model: "m".into(),
                api_key_env: None,
                api,
            }),
            DispatchOptions::default(),
        );
        let q = "what lowers glucose";
        let p = j.judge(q, &cands()).await.expect("judge");
        assert!(
            p.probabilities[1] > 0.85 && p.probabilities[0] < 0.1,
            "{api:?}"
        );
        assert_eq!(
            (p.usage.input_tokens, p.usage.cached_input_tokens),
            (150, 120),
            "{api:?}"
        );
        assert_eq!(j.choose(q, &cands()).await.expect("choose").best, 1);
        let g = j
            .grade(q, &cands(), &Scale::pruning())
            .await
            .expect("grade");
        assert!(g.grades[1].expected > 3.9 && g.grades[0].expected < 0.1);
    }
}

fn faulty(base: &str, scenario: &str, dispatch: DispatchOptions) -> Judge {
    judge(
        BackendOptions::Systemone(treenav::judge::SystemoneOptions {
            endpoint: format!("{base}/{scenario}"),
            model: "m".into(),
            api_key_env: None,
            path: "/v1/systemone".into(),
        }),
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
        assert_eq!(f.load(Ordering::SeqCst), 2, "{scenario}: one retry");
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
        assert_eq!(f.load(Ordering::SeqCst), calls, "{scenario}: calls");
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
        BackendOptions::Systemone(treenav::judge::SystemoneOptions {
            endpoint: format!("http://127.0.0.1:{port}"),
            model: "m".into(),
            api_key_env: None,
            path: "/v1/systemone".into(),
        }),
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
        backend: BackendOptions::Systemone(treenav::judge::SystemoneOptions {
            endpoint: "http://127.0.0.1:1".into(),
            model: "m".into(),
            api_key_env: Some("TREENAV_TEST_UNSET_JUDGE_KEY".into()),
            path: "/v1/systemone".into(),
        }),
        dispatch: DispatchOptions::default(),
    })
    .expect_err("missing key");
    assert!(
        e.to_string().contains("TREENAV_TEST_UNSET_JUDGE_KEY"),
        "{e}"
    );
    let e = Judge::new(&JudgeOptions {
        backend: BackendOptions::OpenaiDecisions(treenav::judge::OpenaiDecisionsOptions {
            endpoint: "localhost:80".into(),
            model: "m".into(),
            api_key_env: None,
        }),
        dispatch: DispatchOptions::default(),
    })
    .expect_err("bad endpoint");
    assert!(e.to_string().contains("--endpoint"), "{e}");
}

/// A hostile chat server (a mock by nature: no real server sends these):
/// each route answers one broken reply.
async fn broken_chat_server() -> String {
    use axum::routing::post;
    let reply = |body: &'static str| move || async move { body };
    let app = axum::Router::new()
        .route(
            "/nan/v1/chat/completions",
            post(reply(r#"{"choices":[{"message":{"content":"Yes"},"logprobs":{"content":[{"token":"Yes","logprob":NaN,"top_logprobs":[{"token":"Yes","logprob":NaN}]}]}}]}"#)),
        )
        .route(
            "/positive/v1/chat/completions",
            post(reply(r#"{"choices":[{"message":{"content":"Yes"},"logprobs":{"content":[{"token":"Yes","logprob":3.5,"top_logprobs":[{"token":"Yes","logprob":3.5}]}]}}]}"#)),
        )
        .route(
            "/cut/v1/chat/completions",
            post(reply(r#"{"choices":[{"message":{"content":"Yes"},"logprobs":{"content":[{"tok"#)),
        )
        .route(
            "/none/v1/chat/completions",
            post(reply(r#"{"choices":[{"message":{"content":"Yes"},"logprobs":null}]}"#)),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// `doctor`'s checkup names the real fault of a reply, as a query does;
/// only a reply without log-probabilities is reported as that.
#[tokio::test]
async fn the_checkup_names_the_real_fault_of_a_reply() {
    let base = broken_chat_server().await;
    let judge_at = |route: &str| {
        judge(
            BackendOptions::OpenaiLogprobs(treenav::judge::OpenaiLogprobsOptions {
                endpoint: format!("{base}/{route}"),
                model: "m".into(),
                api_key_env: None,
                api: LogprobsApi::Chat,
            }),
            fast(),
        )
    };
    for (route, says) in [
        ("nan", "malformed"),
        ("positive", "not ≤ 0"),
        ("cut", "malformed"),
        ("none", "no log-probabilities"),
    ] {
        let e = treenav::judge::checkup(&judge_at(route))
            .await
            .expect_err(route)
            .to_string();
        assert!(e.contains(says), "{route}: {e}");
        if route != "none" {
            assert!(!e.contains("no log-probabilities"), "{route}: {e}");
        }
    }
}

//! `treenav serve` as a library: a real server on 127.0.0.1, a real HTTP
//! client (reqwest). Every route, every error status with its JSON body,
//! auth on and off, limits, overload, reload under load and a graceful
//! shutdown with requests in flight. The slow and failing judges are the
//! scripted server of `support::scripted` (no real server can be made to
//! answer after a fixed delay or fail on cue); the process-level signals
//! (SIGTERM, SIGHUP) are tested on the binary in `corpus-tools/tests/serve.rs`.

mod support;

use reqwest::StatusCode;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;
use treenav::judge::{BackendOptions, JudgeOptions};
use treenav::serve::{ServeOptions, Server, Tokens, TreeSpec};

/// A running service; stopped (gracefully) when `stop` is called.
struct Running {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<Result<(), treenav::serve::Error>>,
    _dir: Arc<TempDir>,
}

impl Running {
    async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.done.await.expect("join").expect("served");
    }
}

/// The sample tree saved in a fresh folder, as `sample.tree`.
async fn sample_file() -> (Arc<TempDir>, std::path::PathBuf) {
    let dir = Arc::new(tempfile::tempdir().expect("tempdir"));
    let path = dir.path().join("sample.tree");
    treenav::tree::file::save(&*support::sample_tree().await, &path).expect("save");
    (dir, path)
}

async fn start_with(dir: Arc<TempDir>, options: ServeOptions) -> Running {
    let server = Server::bind("127.0.0.1:0".parse().expect("addr"), options)
        .await
        .expect("bind");
    let base = format!("http://{}", server.local_addr().expect("addr"));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let done = tokio::spawn(server.run(async {
        let _ = rx.await;
    }));
    Running {
        base,
        stop: Some(tx),
        done,
        _dir: dir,
    }
}

/// The sample tree as `sample`, with `judge` and `tune` applied.
async fn start(judge: JudgeOptions, tune: impl FnOnce(&mut ServeOptions)) -> Running {
    start_file(judge, tune).await.0
}

/// [`start`], also giving the served tree file's path and its folder
/// (which lives as long as the service).
async fn start_file(
    judge: JudgeOptions,
    tune: impl FnOnce(&mut ServeOptions),
) -> (Running, std::path::PathBuf, Arc<TempDir>) {
    let (dir, path) = sample_file().await;
    let spec = TreeSpec {
        name: "sample".into(),
        path: path.clone(),
    };
    let mut options = ServeOptions::new(vec![spec], judge);
    tune(&mut options);
    (start_with(dir.clone(), options).await, path, dir)
}

fn slow_judge(base: &str) -> JudgeOptions {
    JudgeOptions {
        backend: BackendOptions::Systemone(treenav::judge::SystemoneOptions {
            endpoint: base.to_string(),
            model: "scripted".into(),
            api_key_env: None,
            path: "/v1/systemone".into(),
        }),
        ..JudgeOptions::default()
    }
}

async fn post(base: &str, route: &str, body: Value) -> (StatusCode, Value) {
    let r = reqwest::Client::new()
        .post(format!("{base}{route}"))
        .json(&body)
        .send()
        .await
        .expect("send");
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn get(base: &str, route: &str) -> (StatusCode, String) {
    let r = reqwest::get(format!("{base}{route}")).await.expect("get");
    (r.status(), r.text().await.expect("body"))
}

fn question() -> Value {
    json!({"tree": "sample", "query": "Where did Tesla work after leaving Edison's company?"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_with_its_json() {
    let s = start(JudgeOptions::default(), |_| {}).await;
    assert_eq!(get(&s.base, "/healthz").await.0, StatusCode::OK);

    let (status, ready) = get(&s.base, "/readyz").await;
    assert_eq!(status, StatusCode::OK, "{ready}");
    let ready: Value = serde_json::from_str(&ready).expect("json");
    assert_eq!(
        (ready["ready"].clone(), ready["trees"].clone()),
        (json!(true), json!(1))
    );

    let (status, trees) = get(&s.base, "/v1/trees").await;
    assert_eq!(status, StatusCode::OK);
    let trees: Value = serde_json::from_str(&trees).expect("json");
    assert_eq!(trees["version"], 1);
    assert_eq!(trees["trees"][0]["name"], "sample");
    assert_eq!(trees["trees"][0]["documents"], 48);
    assert_eq!(trees["trees"][0]["passages"], 96);

    let (status, found) = post(&s.base, "/v1/retrieve", question()).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(found["version"], 1);
    assert_eq!(found["tree"], "sample");
    assert_eq!(found["passages"].as_array().map(Vec::len), Some(10));
    assert_eq!(found["passages"][0]["document_id"], "Nikola_Tesla");
    assert!(found.get("trace").is_none(), "no trace unless asked");
    assert!(found["usage"]["calls"].as_u64() > Some(0));

    let mut asked = question();
    asked["top"] = json!(3);
    asked["trace"] = json!(true);
    asked["strategy"] = json!("best-first");
    asked["judge_budget"] = json!(40);
    let (status, found) = post(&s.base, "/v1/retrieve", asked).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(found["passages"].as_array().map(Vec::len), Some(3));
    assert_eq!(found["trace"]["strategy"], "best-first");
    assert_eq!(found["trace"]["judge_budget"], 40);

    let prune = json!({"question": "Where did Tesla work?", "strategy": "top-n", "n": 1,
        "chunks": ["Tesla worked for Edison.", {"id": "b", "text": "Bananas are yellow."}]});
    let (status, pruned) = post(&s.base, "/v1/prune", prune).await;
    assert_eq!(status, StatusCode::OK, "{pruned}");
    assert_eq!(pruned["version"], 1);
    assert_eq!(pruned["strategy"], "top-n");
    assert_eq!(pruned["kept"][0]["text"], "Tesla worked for Edison.");

    let (status, metrics) = get(&s.base, "/metrics").await;
    assert_eq!(status, StatusCode::OK);
    for name in [
        "treenav_http_requests_total{route=\"/v1/retrieve\",method=\"POST\",status=\"200\"}",
        "treenav_http_request_duration_seconds_bucket",
        "treenav_judge_calls_total",
        "treenav_http_in_flight",
    ] {
        assert!(metrics.contains(name), "{name} missing from /metrics");
    }

    let (status, doc) = get(&s.base, "/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let doc: Value = serde_json::from_str(&doc).expect("json");
    for path in [
        "/v1/retrieve",
        "/v1/prune",
        "/v1/trees",
        "/v1/admin/reload",
        "/readyz",
    ] {
        assert!(
            doc["paths"].get(path).is_some(),
            "{path} not in the OpenAPI document"
        );
    }
    let passage = &doc["components"]["schemas"]["RankedPassage"]["properties"];
    assert!(passage.get("document_id").is_some(), "{passage}");
    assert!(passage.get("score").is_some(), "{passage}");
    // The request's ranges and choices as the server checks them.
    let request = &doc["components"]["schemas"]["RetrieveRequest"]["properties"];
    assert_eq!(request["top"]["minimum"], 1, "{request}");
    assert_eq!(request["top"]["maximum"], 1000, "{request}");
    let strategy = serde_json::to_string(&doc["components"]["schemas"]["Strategy"]).expect("json");
    assert!(
        strategy.contains("best-first") && strategy.contains("levels"),
        "{strategy}"
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_is_k_on_one_score_scale_with_collapse_and_exhaustion() {
    let s = start(JudgeOptions::default(), |_| {}).await;
    for strategy in ["levels", "best-first"] {
        let mut asked = question();
        asked["top"] = json!(30);
        asked["strategy"] = json!(strategy);
        let (status, found) = post(&s.base, "/v1/retrieve", asked.clone()).await;
        assert_eq!(status, StatusCode::OK, "{found}");
        let scores: Vec<f64> = found["passages"]
            .as_array()
            .expect("passages")
            .iter()
            .map(|p| p["score"].as_f64().expect("score"))
            .collect();
        assert_eq!(scores.len(), 30, "{strategy}");
        assert_eq!(found["exhausted"], false);
        assert!(
            scores.windows(2).all(|w| w[0] >= w[1]),
            "{strategy}: {scores:?}"
        );
        asked["per_document"] = json!(1);
        let (status, found) = post(&s.base, "/v1/retrieve", asked).await;
        assert_eq!(status, StatusCode::OK, "{found}");
        let docs: std::collections::HashSet<&str> = found["passages"]
            .as_array()
            .expect("passages")
            .iter()
            .filter_map(|p| p["document_id"].as_str())
            .collect();
        assert_eq!(docs.len(), 30, "{strategy}: one passage per document");
    }
    // More than the sample's 96 passages, with a shortlist of 100 under
    // `levels` (once refused by the best-first judge budget's check).
    let mut asked = question();
    asked["top"] = json!(200);
    asked["shortlist"] = json!(100);
    asked["strategy"] = json!("levels");
    let (status, found) = post(&s.base, "/v1/retrieve", asked).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(found["passages"].as_array().map(Vec::len), Some(96));
    assert_eq!(found["exhausted"], true);
    s.shutdown().await;
}

/// `/metrics` read by a Prometheus text parser: every family has `# HELP`,
/// counters end in `_total` and are counters (cost too), the build info and
/// the trees loaded are there, the latency histogram has the status, and a
/// made-up method is labelled `OTHER` (never a label per method).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_follow_the_prometheus_conventions() {
    let s = start(JudgeOptions::default(), |_| {}).await;
    assert_eq!(
        post(&s.base, "/v1/retrieve", question()).await.0,
        StatusCode::OK
    );
    let client = reqwest::Client::new();
    let odd = reqwest::Method::from_bytes(b"M0000001XYZ").expect("method");
    let _ = client.request(odd, format!("{}/nope", s.base)).send().await;
    let (status, text) = get(&s.base, "/metrics").await;
    assert_eq!(status, StatusCode::OK);
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("Prometheus text");
    let mut families: Vec<&str> = scrape.samples.iter().map(|x| x.metric.as_str()).collect();
    families.sort_unstable();
    families.dedup();
    for name in &families {
        // A histogram's `_count` and `_sum` belong to its family.
        let family = ["_count", "_sum", "_bucket"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| scrape.docs.contains_key(*f))
            })
            .unwrap_or(name);
        assert!(scrape.docs.contains_key(family), "{name} has no # HELP");
    }
    for sample in &scrape.samples {
        if sample
            .metric
            .starts_with("treenav_http_request_duration_seconds")
        {
            continue;
        }
        let counter = matches!(sample.value, prometheus_parse::Value::Counter(_));
        assert_eq!(
            counter,
            sample.metric.ends_with("_total"),
            "{}",
            sample.metric
        );
    }
    let value = |name: &str| {
        scrape
            .samples
            .iter()
            .find(|x| x.metric == name)
            .map(|x| match x.value {
                prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Counter(v) => v,
                _ => f64::NAN,
            })
    };
    assert_eq!(value("treenav_builder_info"), Some(1.0));
    assert_eq!(value("treenav_trees_loaded"), Some(1.0));
    assert!(text.contains("# TYPE treenav_judge_cost_usd_total counter"));
    let latency = scrape
        .samples
        .iter()
        .find(|x| x.metric == "treenav_http_request_duration_seconds")
        .expect("latency histogram");
    assert!(
        latency.labels.get("status").is_some(),
        "{:?}",
        latency.labels
    );
    assert!(
        !text.contains("M0000001XYZ"),
        "a made-up method became a label"
    );
    assert!(text.contains("method=\"OTHER\""));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_json_naming_the_field() {
    let s = start(JudgeOptions::default(), |o| {
        o.limits.max_body_bytes = 4096;
        o.limits.max_query_chars = 100;
        o.limits.max_chunks = 3;
    })
    .await;
    let long = "tesla ".repeat(30);
    let cases: Vec<(Value, StatusCode, &str)> = vec![
        (json!({"tree": "sample"}), StatusCode::BAD_REQUEST, "query"),
        (
            json!({"tree": "sample", "query": "x", "top": "ten"}),
            StatusCode::BAD_REQUEST,
            "top",
        ),
        (
            json!({"tree": "sample", "query": "x", "colour": 1}),
            StatusCode::BAD_REQUEST,
            "colour",
        ),
        (
            json!({"tree": "sample", "query": "  "}),
            StatusCode::BAD_REQUEST,
            "query",
        ),
        (
            json!({"tree": "sample", "query": long}),
            StatusCode::BAD_REQUEST,
            "query",
        ),
        (
            json!({"tree": "sample", "query": "x", "top": 0}),
            StatusCode::BAD_REQUEST,
            "top",
        ),
        (
            json!({"tree": "sample", "query": "x", "strategy": "dfs"}),
            StatusCode::BAD_REQUEST,
            "strategy",
        ),
        (
            json!({"tree": "sample", "query": "x", "budgets": [0]}),
            StatusCode::BAD_REQUEST,
            "budgets",
        ),
        (
            json!({"tree": "nope", "query": "x"}),
            StatusCode::NOT_FOUND,
            "tree",
        ),
        (
            json!({"tree": "sample", "query": "x".repeat(5000)}),
            StatusCode::PAYLOAD_TOO_LARGE,
            "body",
        ),
    ];
    for (body, want, field) in cases {
        let (status, err) = post(&s.base, "/v1/retrieve", body.clone()).await;
        assert_eq!(status, want, "{body}: {err}");
        assert_eq!(err["error"]["field"], field, "{body}: {err}");
        assert!(err["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
    }
    // Broken JSON names the body (not "?"); a second object after the
    // first is refused, not ignored.
    for raw in [
        r#"{"tree": "sample", "query": "#,
        r#"{"tree": "sample", "query": "x"}{"tree": "other", "query": "y"}"#,
        r#"{"tree": "sample", "query": "x"} trailing"#,
    ] {
        let reply = reqwest::Client::new()
            .post(format!("{}/v1/retrieve", s.base))
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .expect("send");
        assert_eq!(reply.status(), StatusCode::BAD_REQUEST, "{raw}");
        let err: Value = reply.json().await.expect("json error");
        assert_eq!(err["error"]["field"], "body", "{raw}: {err}");
    }
    let prunes: Vec<(Value, StatusCode, &str)> = vec![
        (
            json!({"question": "q", "chunks": ["a", "b", "c", "d"]}),
            StatusCode::PAYLOAD_TOO_LARGE,
            "chunks",
        ),
        (
            json!({"question": "q", "chunks": ["a", "   "]}),
            StatusCode::BAD_REQUEST,
            "chunks",
        ),
        (
            json!({"question": "q", "chunks": ["a"], "threshold": 9.0}),
            StatusCode::BAD_REQUEST,
            "threshold",
        ),
        (
            json!({"question": "q", "chunks": ["a"], "strategy": "all"}),
            StatusCode::BAD_REQUEST,
            "strategy",
        ),
        (
            json!({"chunks": ["a"]}),
            StatusCode::BAD_REQUEST,
            "question",
        ),
        // Counts past their range, and chunk objects with unknown fields.
        (
            json!({"question": "q", "chunks": ["a"], "keep_top_k": u64::MAX}),
            StatusCode::BAD_REQUEST,
            "keep_top_k",
        ),
        (
            json!({"question": "q", "chunks": ["a"], "strategy": "top-n", "n": u64::MAX}),
            StatusCode::BAD_REQUEST,
            "strategy",
        ),
        (
            json!({"question": "q", "chunks": ["a"], "strategy": "budget-select", "extra": u64::MAX}),
            StatusCode::BAD_REQUEST,
            "strategy",
        ),
        (
            json!({"question": "q", "chunks": [{"id": "a", "text": "t", "score": 1}]}),
            StatusCode::BAD_REQUEST,
            "chunks[0]",
        ),
    ];
    for (body, want, field) in prunes {
        let (status, err) = post(&s.base, "/v1/prune", body.clone()).await;
        assert_eq!(status, want, "{body}: {err}");
        assert_eq!(err["error"]["field"], field, "{body}: {err}");
    }
    // Not JSON at all, an unknown route, a wrong method.
    let r = reqwest::Client::new()
        .post(format!("{}/v1/retrieve", s.base))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let err: Value = r.json().await.expect("json error");
    assert_eq!(err["error"]["code"], "bad_request");
    let (status, body) = get(&s.base, "/v2/nothing").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("\"not_found\""), "{body}");
    let (status, body) = get(&s.base, "/v1/retrieve").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(body.contains("\"method_not_allowed\""), "{body}");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_judge_is_502_and_not_ready_and_a_slow_one_504() {
    // A port nothing listens on: the judge cannot be reached.
    let closed = format!("http://127.0.0.1:{}", support::free_port());
    let mut judge = slow_judge(&closed);
    judge.dispatch.max_retries = 0;
    judge.dispatch.timeout_secs = 2.0;
    let s = start(judge, |_| {}).await;
    let (status, err) = post(&s.base, "/v1/retrieve", question()).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{err}");
    assert_eq!(err["error"]["code"], "judge");
    let (status, ready) = get(&s.base, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{ready}");
    assert!(ready.contains("\"judge_ok\":false"), "{ready}");
    // Neither the 502 nor the open probe shows where the judge lives.
    let hostport = closed.trim_start_matches("http://");
    assert!(!err.to_string().contains(hostport), "{err}");
    assert!(!ready.contains(hostport), "{ready}");
    assert_eq!(
        get(&s.base, "/healthz").await.0,
        StatusCode::OK,
        "up all the same"
    );
    s.shutdown().await;

    let (base, _) = support::scripted_systemone(Duration::from_millis(400)).await;
    let s = start(slow_judge(&base), |o| {
        o.limits.deadline = Duration::from_millis(300);
    })
    .await;
    let (status, err) = post(&s.base, "/v1/retrieve", question()).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{err}");
    assert_eq!(err["error"]["code"], "deadline");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_auth_guards_the_api_but_not_the_probes() {
    let token = "s3cret-token-0123456789";
    let s = start(JudgeOptions::default(), |o| {
        o.auth = Some(Tokens::parse(token, "test").expect("tokens"));
    })
    .await;
    let client = reqwest::Client::new();
    let url = format!("{}/v1/retrieve", s.base);
    for auth in [None, Some("Bearer wrong-token-0123456789"), Some(token)] {
        let mut r = client.post(&url).json(&question());
        if let Some(a) = auth {
            r = r.header("authorization", a);
        }
        let r = r.send().await.expect("send");
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{auth:?}");
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
        let body = r.text().await.expect("body");
        assert_eq!(
            body,
            r#"{"error":{"code":"unauthorized","message":"unauthorized"}}"#
        );
    }
    let r = client
        .post(&url)
        .bearer_auth(token)
        .json(&question())
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::OK);
    // The scheme is case-insensitive; the token is not.
    for (header, want) in [
        (format!("bearer {token}"), StatusCode::OK),
        (format!("BEARER {token}"), StatusCode::OK),
        (
            format!("Bearer {}", token.to_uppercase()),
            StatusCode::UNAUTHORIZED,
        ),
    ] {
        let r = client
            .post(&url)
            .header("authorization", &header)
            .json(&question())
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), want, "{header}");
    }
    let (status, _) = get(&s.base, "/metrics").await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "metrics need the token too"
    );
    for open in ["/healthz", "/readyz", "/openapi.json"] {
        assert_eq!(get(&s.base, open).await.0, StatusCode::OK, "{open}");
    }
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_is_shed_with_503_and_retry_after_not_timeouts() {
    let (base, _) = support::scripted_systemone(Duration::from_millis(150)).await;
    let s = start(slow_judge(&base), |o| {
        o.limits.max_concurrent = 2;
        o.limits.queue = 2;
        o.limits.queue_wait = Duration::from_millis(100);
    })
    .await;
    let client = reqwest::Client::new();
    let started = std::time::Instant::now();
    let requests = (0..12).map(|_| {
        let client = client.clone();
        let url = format!("{}/v1/retrieve", s.base);
        async move {
            let r = client
                .post(url)
                .json(&question())
                .send()
                .await
                .expect("send");
            let retry = r.headers().get("retry-after").cloned();
            let status = r.status();
            let body: Value = r.json().await.expect("json");
            (status, retry, body)
        }
    });
    let answers = futures::future::join_all(requests).await;
    let shed: Vec<_> = answers
        .iter()
        .filter(|(s, _, _)| *s == StatusCode::SERVICE_UNAVAILABLE)
        .collect();
    let served = answers
        .iter()
        .filter(|(s, _, _)| *s == StatusCode::OK)
        .count();
    assert!(served >= 2, "the slots served: {answers:?}");
    assert!(
        !shed.is_empty(),
        "12 requests on 2 slots + 2 queued: some are shed"
    );
    assert_eq!(served + shed.len(), 12, "only 200 or 503: {answers:?}");
    for (_, retry, body) in shed {
        assert_eq!(retry.as_ref().map(|v| v.as_bytes()), Some(&b"1"[..]));
        assert_eq!(body["error"]["code"], "overloaded");
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "shedding is quick, not a pile-up"
    );
    let (_, metrics) = get(&s.base, "/metrics").await;
    assert!(metrics.contains("treenav_overloaded_total"));
    s.shutdown().await;
}

/// Runs `/v1/retrieve` in a loop from 4 clients until `stop`; returns the
/// statuses that were not 200 and how many were sent.
fn hammer(
    base: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<(Vec<String>, usize)> {
    tokio::spawn(async move {
        let sent = Arc::new(AtomicUsize::new(0));
        let clients = (0..4).map(|_| {
            let (base, stop, sent) = (base.clone(), stop.clone(), sent.clone());
            async move {
                let client = reqwest::Client::new();
                let mut failures = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    sent.fetch_add(1, Ordering::SeqCst);
                    match client
                        .post(format!("{base}/v1/retrieve"))
                        .json(&question())
                        .send()
                        .await
                    {
                        Ok(r) if r.status() == StatusCode::OK => {}
                        Ok(r) => failures.push(format!("{}", r.status())),
                        Err(e) => failures.push(e.to_string()),
                    }
                }
                failures
            }
        });
        let failures = futures::future::join_all(clients).await.concat();
        (failures, sent.load(Ordering::SeqCst))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_swaps_atomically_and_refuses_a_corrupt_file_under_load() {
    let (s, path, _) = start_file(JudgeOptions::default(), |_| {}).await;
    let clusters = |v: &str| -> Value {
        let v: Value = serde_json::from_str(v).expect("json");
        v["trees"][0]["clusters"].clone()
    };
    let before = clusters(&get(&s.base, "/v1/trees").await.1);

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = hammer(s.base.clone(), stop.clone());
    tokio::time::sleep(Duration::from_millis(200)).await;

    // A good new file (another branching, so other clusters), written the
    // way `treenav build` writes: beside it, then renamed over.
    let other = support::tree_of(support::sample_corpus(), Some(4)).await;
    treenav::tree::file::save(&other, &path).expect("save");
    let (status, outcome) = post(&s.base, "/v1/admin/reload", json!({"tree": "sample"})).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["trees"][0]["reloaded"], true);
    let after = clusters(&get(&s.base, "/v1/trees").await.1);
    assert_ne!(before, after, "the new tree serves");

    // A corrupt file is refused; the tree loaded before keeps serving.
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("truncate");
    let (status, outcome) = post(&s.base, "/v1/admin/reload", json!({})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{outcome}");
    assert_eq!(outcome["trees"][0]["reloaded"], false);
    assert!(outcome["trees"][0]["error"]
        .as_str()
        .is_some_and(|e| e.contains("sample")));
    assert_eq!(clusters(&get(&s.base, "/v1/trees").await.1), after);
    let (status, _) = post(&s.base, "/v1/admin/reload", json!({"tree": "other"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::SeqCst);
    let (failures, sent) = load.await.expect("join");
    assert!(sent > 20, "the load ran ({sent} requests)");
    assert!(
        failures.is_empty(),
        "no request failed across the reloads: {failures:?}"
    );
    let (_, metrics) = get(&s.base, "/metrics").await;
    assert!(metrics.contains("treenav_reloads_total{outcome=\"refused\"}"));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_requests_in_flight() {
    let (judge, load) = support::scripted_systemone(Duration::from_millis(300)).await;
    let s = start(slow_judge(&judge), |_| {}).await;
    let client = reqwest::Client::new();
    let url = format!("{}/v1/retrieve", s.base);
    // One request at a time until the judge has a call of it in hand (each
    // asks its own question, so the judge tells them apart; a count of calls
    // in flight could be reached before the last request was even read, and
    // a connection not yet read is an idle one that shutdown closes).
    let mut in_flight = Vec::new();
    for i in 0..6 {
        let marker = format!("request number {i}");
        let body = json!({"tree": "sample", "query": format!("Where did Tesla work after Edison, {marker}?")});
        let request = client.post(&url).json(&body).send();
        in_flight.push(tokio::spawn(async move {
            let r = request.await.map_err(|e| e.to_string())?;
            Ok::<_, String>((r.status(), r.text().await.map_err(|e| e.to_string())?))
        }));
        let waiting = std::time::Instant::now();
        while !load.seen(&marker) {
            assert!(
                waiting.elapsed() < Duration::from_secs(20),
                "{marker} never reached the judge"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    assert!(
        load.in_flight.load(Ordering::SeqCst) > 0,
        "calls in flight at shutdown"
    );
    let base = s.base.clone();
    s.shutdown().await;
    // `run` returned only once the judge had answered every call.
    assert_eq!(load.in_flight.load(Ordering::SeqCst), 0, "shutdown waited");
    for r in in_flight {
        let (status, body) = r.await.expect("join").expect("a complete response");
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    assert!(
        reqwest::get(format!("{base}/healthz")).await.is_err(),
        "no new connection after shutdown"
    );
}

/// Reads what the server sends on a raw socket until it closes (or 5 s
/// pass: `None`).
async fn read_until_closed(stream: &mut tokio::net::TcpStream) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut got)).await;
    match read {
        Ok(_) => Some(String::from_utf8_lossy(&got).into_owned()),
        Err(_) => None,
    }
}

/// Issue 27 row 2: idle, half-header and half-body connections are closed
/// after their timeouts, and a connection over the cap gets a 503 at once
/// instead of waiting behind idle sockets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_half_sent_connections_are_closed_and_capped() {
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpStream;
    let s = start(JudgeOptions::default(), |o| {
        o.limits.max_connections = 3;
        o.limits.header_timeout = Duration::from_millis(400);
        o.limits.body_timeout = Duration::from_millis(400);
    })
    .await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(TcpStream::connect(&addr).await.expect("connect"));
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    // The cap is reached: one more is told so and closed, not left waiting.
    let mut over = TcpStream::connect(&addr).await.expect("connect");
    over.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .expect("write");
    let answer = read_until_closed(&mut over)
        .await
        .expect("answered at once");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1"), "{answer}");
    // Idle sockets are closed after the header timeout.
    for mut socket in idle {
        assert!(
            read_until_closed(&mut socket).await.is_some(),
            "an idle connection stays open past the header timeout"
        );
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(get(&s.base, "/healthz").await.0, StatusCode::OK);
    // Half a header: closed.
    let mut half = TcpStream::connect(&addr).await.expect("connect");
    half.write_all(b"POST /v1/retrieve HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .expect("write");
    assert!(
        read_until_closed(&mut half).await.is_some(),
        "half a header stays open"
    );
    // Half a body: 408 naming the body, then closed.
    let mut half = TcpStream::connect(&addr).await.expect("connect");
    half.write_all(b"POST /v1/retrieve HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"tree\":")
        .await
        .expect("write");
    let answer = read_until_closed(&mut half)
        .await
        .expect("half a body is answered");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("body_timeout"), "{answer}");
    let (_, metrics) = get(&s.base, "/metrics").await;
    assert!(
        metrics.contains("treenav_connections_refused_total 1"),
        "{metrics}"
    );
    s.shutdown().await;
}

/// Issue 27 row 12: a side file written over in place (`cp` onto it) while
/// served is noticed: that tree answers 503 `tree_changed` (no server path,
/// no garbage with 200) and `/readyz` says so, until files written the
/// safe way (new files, renamed over) are reloaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_side_file_written_over_in_place_is_refused_until_reloaded() {
    let (s, path, dir) = start_file(JudgeOptions::default(), |_| {}).await;
    assert_eq!(
        post(&s.base, "/v1/retrieve", question()).await.0,
        StatusCode::OK
    );

    let other = support::tree_of(support::sample_corpus(), Some(4)).await;
    let other_path = dir.path().join("other.tree");
    treenav::tree::file::save(&other, &other_path).expect("save");
    let texts = |p: &std::path::Path| treenav::tree::store::side_path(p, "texts");
    tokio::time::sleep(Duration::from_millis(20)).await;
    std::fs::copy(texts(&other_path), texts(&path)).expect("cp in place");

    let (status, body) = post(&s.base, "/v1/retrieve", question()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "tree_changed", "{body}");
    let dir_text = dir.path().display().to_string();
    assert!(
        !body.to_string().contains(&dir_text),
        "no server path: {body}"
    );
    let (status, ready) = get(&s.base, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{ready}");
    assert!(ready.contains("written over in place"), "{ready}");

    // The safe way: new files renamed over the old, then a reload.
    treenav::tree::file::save(&other, &path).expect("save by rename");
    let (status, outcome) = post(&s.base, "/v1/admin/reload", json!({"tree": "sample"})).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(
        post(&s.base, "/v1/retrieve", question()).await.0,
        StatusCode::OK
    );
    assert_eq!(get(&s.base, "/readyz").await.0, StatusCode::OK);
    s.shutdown().await;
}

/// A FIFO planted as the tree's lock: an update is refused at once, the
/// service keeps answering (`/healthz`, queries), and the compact route
/// works once the lock is a file again.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_lock_hangs_neither_an_update_nor_the_service() {
    let (s, path, _) = start_file(JudgeOptions::default(), |_| {}).await;
    let lock = treenav::tree::generation::lock_path(&path);
    let _ = std::fs::remove_file(&lock);
    assert!(std::process::Command::new("mkfifo")
        .arg(&lock)
        .status()
        .expect("mkfifo")
        .success());
    let doc = json!([{"id": "fifo-doc", "title": "Pipes", "text": "A named pipe under the lock's name."}]);
    let update = tokio::time::timeout(
        Duration::from_secs(20),
        post(&s.base, "/v1/trees/sample/documents", doc.clone()),
    )
    .await
    .expect("the update hangs on a FIFO lock");
    assert!(
        update.0.is_server_error() || update.0.is_client_error(),
        "{update:?}"
    );
    assert_eq!(get(&s.base, "/healthz").await.0, StatusCode::OK);
    assert_eq!(
        post(&s.base, "/v1/retrieve", question()).await.0,
        StatusCode::OK
    );
    std::fs::remove_file(&lock).expect("remove the FIFO");
    let (status, added) = post(&s.base, "/v1/trees/sample/documents", doc).await;
    assert_eq!(status, StatusCode::OK, "{added}");
    let r = reqwest::Client::new()
        .post(format!("{}/v1/trees/sample/compact", s.base))
        .send()
        .await
        .expect("compact");
    let status = r.status();
    let compacted: Value = r.json().await.unwrap_or(Value::Null);
    assert_eq!(status, StatusCode::OK, "{compacted}");
    assert_eq!(compacted["generation"], 0, "{compacted}");
    let r = reqwest::Client::new()
        .delete(format!("{}/v1/trees/sample/documents", s.base))
        .json(&json!({"ids": ["fifo-doc"]}))
        .send()
        .await
        .expect("delete");
    assert_eq!(r.status(), StatusCode::OK);
    let gone: Value = r.json().await.expect("json");
    assert_eq!(
        gone["removed"], 1,
        "the posted id is the deleted id: {gone}"
    );
    s.shutdown().await;
}

/// Another writer holding the tree's lock: an update is answered 409
/// `conflict` (a typed error, not a message matched), and goes through
/// once the lock is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_while_another_writer_holds_the_lock_is_a_conflict() {
    let (s, path, _) = start_file(JudgeOptions::default(), |_| {}).await;
    let held = treenav::tree::generation::Lock::acquire(&path).expect("lock");
    let doc = json!([{"id": "locked-doc", "title": "Locks", "text": "One writer at a time."}]);
    let (status, body) = post(&s.base, "/v1/trees/sample/documents", doc.clone()).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "conflict", "{body}");
    drop(held);
    let (status, body) = post(&s.base, "/v1/trees/sample/documents", doc).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    s.shutdown().await;
}

/// A byte of the served tree's tantivy files damaged in place: each
/// request gets a JSON answer (an error, never a dropped connection), the
/// tree answers 503 once damage was read and `/readyz` says so, and no
/// request is left counted in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_index_fails_requests_cleanly_and_is_not_ready() {
    use std::io::{Seek, SeekFrom, Write};
    let (s, path, _) = start_file(JudgeOptions::default(), |_| {}).await;
    assert_eq!(
        post(&s.base, "/v1/retrieve", question()).await.0,
        StatusCode::OK
    );
    let folder = treenav::tree::file::index_folder(&path);
    let segment_files: Vec<std::path::PathBuf> = std::fs::read_dir(&folder)
        .expect("folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "idx"))
        .collect();
    let mut failed = 0;
    for file in &segment_files {
        // The posting data, in place and never truncated (the server has
        // the files mapped; their footers were read at open).
        let mut bytes = std::fs::read(file).expect("read");
        let body = bytes.len().saturating_sub(64);
        for b in &mut bytes[..body] {
            *b ^= 0x5a;
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(file)
            .expect("open");
        f.seek(SeekFrom::Start(0)).expect("seek");
        f.write_all(&bytes[..body]).expect("write");
        f.sync_all().expect("sync");
    }
    for q in [
        "Tesla alternating current",
        "Normans in France",
        "Tesla Edison",
        "oxygen",
    ] {
        let (status, body) = post(
            &s.base,
            "/v1/retrieve",
            json!({"tree": "sample", "query": q}),
        )
        .await;
        assert!(body.is_object(), "{status}: not a JSON answer");
        if status != StatusCode::OK {
            failed += 1;
        }
    }
    assert!(failed > 0, "the damage was never read");
    let (status, ready) = get(&s.base, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{ready}");
    assert!(ready.contains("found damaged"), "{ready}");
    // The service still answers (no worker lost to a panic). (The
    // in-flight gauge is process-wide, shared with the tests running
    // beside this one, so it is not read here.)
    assert_eq!(get(&s.base, "/healthz").await.0, StatusCode::OK);
    s.shutdown().await;
}

/// A tree of notes with metadata (tests/fixtures/notes-metadata.jsonl:
/// `tenant` a/b, `year` 2015–2024, `lang`, `tags`) served as `notes`: a
/// filter keeps every other document out of both strategies' answers, every
/// passage carries its metadata, a filter nothing passes is an empty 200,
/// and a bad filter is a 400 naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_keep_out_what_they_do_not_pass() {
    use treenav::corpus::{load, Format, LoadOptions};
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/notes-metadata.jsonl");
    let corpus = load(&fixture, Format::Beir, &LoadOptions::default()).expect("corpus");
    let dir = Arc::new(tempfile::tempdir().expect("tempdir"));
    let path = dir.path().join("notes.tree");
    treenav::tree::file::save(&*support::tree_of(corpus, Some(6)).await, &path).expect("save");
    let spec = TreeSpec {
        name: "notes".into(),
        path,
    };
    let s = start_with(dir, ServeOptions::new(vec![spec], JudgeOptions::default())).await;
    let ask = |strategy: &str, filter: Value| {
        json!({"tree": "notes", "query": "insulin glucose goal", "top": 8,
               "strategy": strategy, "filter": filter})
    };
    for strategy in ["levels", "best-first"] {
        let filter = json!({"tenant": "b", "year": {"gte": 2018}, "lang": {"ne": "de"}});
        let (status, found) = post(&s.base, "/v1/retrieve", ask(strategy, filter)).await;
        assert_eq!(status, StatusCode::OK, "{found}");
        let passages = found["passages"].as_array().expect("passages");
        assert!(!passages.is_empty(), "{strategy}: {found}");
        for p in passages {
            let m = &p["metadata"];
            assert_eq!(m["tenant"], "b", "{strategy}: {p}");
            assert!(
                m["year"].as_i64().is_some_and(|y| y >= 2018),
                "{strategy}: {p}"
            );
            assert_ne!(m["lang"], "de", "{strategy}: {p}");
        }
        let (status, found) = post(
            &s.base,
            "/v1/retrieve",
            ask(strategy, json!({"tags": {"in": ["x"]}})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{found}");
        for p in found["passages"].as_array().expect("passages") {
            assert!(p["metadata"]["tags"]
                .as_array()
                .is_some_and(|t| t.contains(&json!("x"))));
        }
        let (status, found) = post(
            &s.base,
            "/v1/retrieve",
            ask(strategy, json!({"tenant": "nobody"})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{found}");
        assert_eq!(found["passages"], json!([]));
        assert_eq!(found["exhausted"], true);
    }
    for bad in [
        json!({"year": {"like": 3}}),
        json!(["tenant"]),
        json!({"year": {"gte": "soon"}}),
        // A field no document carries (#66 row 10: an empty 200 before).
        json!({"yeer": {"gte": 2020}}),
        json!({"Year": {"gte": 2020}}),
    ] {
        let (status, body) = post(&s.base, "/v1/retrieve", ask("best-first", bad.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(body["error"]["field"], "filter", "{bad}: {body}");
    }
    let (_, body) = post(
        &s.base,
        "/v1/retrieve",
        ask("levels", json!({"yeer": 2020})),
    )
    .await;
    assert!(
        body["error"]["message"]
            .to_string()
            .contains("did you mean `year`?"),
        "{body}"
    );
    s.shutdown().await;
}

/// Document `i` of update batch `b`: one passage with a word of its own
/// per batch (`qb{b}`) and per document (`qd{i}`).
fn update_doc(b: usize, i: usize) -> Value {
    json!({"id": format!("u{i}"), "doc_id": format!("u{i}"), "title": format!("Update {i}"),
           "text": format!("Batch qb{b} brings document qd{i} about harbour cranes."), "batch": b})
}

/// 16 clients query while 10,000 documents arrive in 20 batches: no
/// request fails, and every answer comes from one generation (a batch's
/// word is found exactly when the answer's generation includes it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_added_and_removed_while_16_clients_query() {
    let s = start(JudgeOptions::default(), |_| {}).await;
    const BATCHES: usize = 20;
    const PER_BATCH: usize = 500;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..16)
        .map(|c| {
            let (base, stop) = (s.base.clone(), stop.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let (mut failures, mut answers) = (Vec::new(), 0usize);
                let mut n = c;
                while !stop.load(Ordering::SeqCst) {
                    n += 7;
                    let b = n % BATCHES;
                    let body = json!({"tree": "sample", "query": format!("qb{b} harbour cranes"), "top": 3});
                    let r = client.post(format!("{base}/v1/retrieve")).json(&body).send().await;
                    let v: Value = match r {
                        Ok(r) if r.status() == StatusCode::OK => r.json().await.expect("json"),
                        Ok(r) => {
                            failures.push(format!("{}", r.status()));
                            continue;
                        }
                        Err(e) => {
                            failures.push(e.to_string());
                            continue;
                        }
                    };
                    answers += 1;
                    let generation = v["generation"].as_u64().expect("generation") as usize;
                    let found = v["passages"].as_array().expect("passages").iter().any(|p| {
                        p["text"].as_str().is_some_and(|t| t.contains(&format!("qb{b} ")))
                    });
                    // Batch b is in generations b + 1 onwards.
                    if found != (generation > b) {
                        failures.push(format!("generation {generation}, batch {b}, found {found}"));
                    }
                }
                (failures, answers)
            })
        })
        .collect();
    let client = reqwest::Client::new();
    for b in 0..BATCHES {
        let docs: Vec<Value> = (b * PER_BATCH..(b + 1) * PER_BATCH)
            .map(|i| update_doc(b, i))
            .collect();
        let r = client
            .post(format!("{}/v1/trees/sample/documents", s.base))
            .json(&docs)
            .send()
            .await
            .expect("post");
        assert_eq!(r.status(), StatusCode::OK);
        let v: Value = r.json().await.expect("json");
        assert_eq!(
            (v["added"].as_u64(), v["generation"].as_u64()),
            (Some(PER_BATCH as u64), Some(b as u64 + 1))
        );
        // What the add embedded again, as `treenav add` reports it: nothing
        // on a tree whose every passage has its vector.
        assert_eq!(
            (
                v["embedded_again"].as_bool(),
                v["passages_embedded_again"].as_u64()
            ),
            (Some(false), Some(0)),
            "{v}"
        );
    }
    stop.store(true, Ordering::SeqCst);
    let mut answers = 0;
    for c in clients {
        let (failures, n) = c.await.expect("join");
        assert!(failures.is_empty(), "{failures:?}");
        answers += n;
    }
    assert!(answers > 100, "the clients ran ({answers} answers)");
    let (_, trees) = get(&s.base, "/v1/trees").await;
    let trees: Value = serde_json::from_str(&trees).expect("json");
    assert_eq!(trees["trees"][0]["documents"], 48 + BATCHES * PER_BATCH);
    assert_eq!(trees["trees"][0]["generation"], BATCHES);

    // Removal, replacement, and the errors.
    let del = |body: Value| {
        client
            .delete(format!("{}/v1/trees/sample/documents", s.base))
            .json(&body)
            .send()
    };
    let r = del(json!({"ids": ["u7", "nope"]})).await.expect("delete");
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.expect("json");
    assert_eq!(
        (v["removed"].as_u64(), v["not_found"].clone()),
        (Some(1), json!(["nope"]))
    );
    let (status, v) = post(
        &s.base,
        "/v1/retrieve",
        json!({"tree": "sample", "query": "qd7", "top": 5}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        v["passages"]
            .as_array()
            .expect("passages")
            .iter()
            .all(|p| p["document_id"] != "u7"),
        "{v}"
    );
    // The same document again is left alone; a changed one replaces it.
    let (status, v) = post(
        &s.base,
        "/v1/trees/sample/documents",
        json!([update_doc(0, 8)]),
    )
    .await;
    assert_eq!(
        (status, v["unchanged"].as_u64(), v["replaced"].as_u64()),
        (StatusCode::OK, Some(1), Some(0)),
        "{v}"
    );
    let mut changed = update_doc(0, 8);
    let revised = format!("{} Revised.", changed["text"].as_str().unwrap_or(""));
    changed["text"] = json!(revised);
    let (status, v) = post(&s.base, "/v1/trees/sample/documents", json!([changed])).await;
    assert_eq!(
        (status, v["replaced"].as_u64()),
        (StatusCode::OK, Some(1)),
        "{v}"
    );
    for (route, body, code, field) in [
        (
            "/v1/trees/sample/documents",
            json!([]),
            StatusCode::BAD_REQUEST,
            "body",
        ),
        (
            "/v1/trees/sample/documents",
            json!([{"id": "x"}]),
            StatusCode::BAD_REQUEST,
            "body",
        ),
        (
            "/v1/trees/other/documents",
            json!([update_doc(0, 1)]),
            StatusCode::NOT_FOUND,
            "",
        ),
    ] {
        let (status, v) = post(&s.base, route, body).await;
        assert_eq!(status, code, "{route}: {v}");
        if !field.is_empty() {
            assert_eq!(v["error"]["field"], field, "{v}");
        }
    }
    let r = del(json!({"ids": []})).await.expect("delete");
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    s.shutdown().await;
}

/// The document ids of a retrieve answer.
fn found_ids(found: &Value) -> Vec<String> {
    found["passages"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p["document_id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A tree another process updates (what `treenav add`, `remove` and
/// `compact` do to its files) is followed without a reload: the next
/// request answers from the new generation, `/v1/trees` lists it, and a
/// new generation that does not load leaves the old one answering with
/// `/readyz` saying so, until the files are good again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_made_by_another_process_are_served_at_the_next_request() {
    use treenav::build::update;
    let (s, path, dir) = start_file(JudgeOptions::default(), |_| {}).await;
    let ask =
        json!({"tree": "sample", "query": "quokka colony Rottnest island migration", "top": 3});
    let (status, before) = post(&s.base, "/v1/retrieve", ask.clone()).await;
    assert_eq!(status, StatusCode::OK, "{before}");
    assert!(!found_ids(&before).contains(&"quokka-note".to_string()));
    assert_eq!(before["generation"], 0);

    let (_, listed) = get(&s.base, "/v1/trees").await;
    let listed: Value = serde_json::from_str(&listed).expect("json");
    let recorded = listed["trees"][0]["embedder"].as_str().unwrap_or("");
    let embedder = update::embedder_for(recorded)
        .transpose()
        .expect("the tree's embedder");
    let corpus = treenav::corpus::load_str(
        r#"{"_id":"quokka-note","title":"Quokka migration","text":"The quokka colony on Rottnest island migrates each spring, a migration of quokkas."}"#,
        "new.jsonl",
        treenav::corpus::Format::Beir,
        &treenav::corpus::LoadOptions::default(),
    )
    .expect("corpus");
    let report = update::add(&path, corpus, embedder.as_ref(), &treenav::tree::NoProgress)
        .await
        .expect("add");
    assert_eq!((report.added, report.generation), (1, 1));
    let (status, after) = post(&s.base, "/v1/retrieve", ask.clone()).await;
    assert_eq!(status, StatusCode::OK, "{after}");
    assert_eq!(after["generation"], 1, "{after}");
    assert_eq!(
        found_ids(&after).first().map(String::as_str),
        Some("quokka-note")
    );
    let (_, listed) = get(&s.base, "/v1/trees").await;
    let listed: Value = serde_json::from_str(&listed).expect("json");
    assert_eq!(listed["trees"][0]["generation"], 1);

    update::remove(&path, &["quokka-note".to_string()], embedder.as_ref())
        .await
        .expect("remove");
    let (_, removed) = post(&s.base, "/v1/retrieve", ask.clone()).await;
    assert_eq!(removed["generation"], 2, "{removed}");
    assert!(!found_ids(&removed).contains(&"quokka-note".to_string()));

    // A new tree file that does not load, renamed in: the old generation
    // answers, /readyz says why it is not ready; good files again, ready.
    let good = std::fs::read(&path).expect("read");
    let staged = dir.path().join("broken.tmp");
    std::fs::write(&staged, b"TRNVTREE not a tree").expect("write");
    std::fs::rename(&staged, &path).expect("rename");
    let (status, old) = post(&s.base, "/v1/retrieve", ask.clone()).await;
    assert_eq!(status, StatusCode::OK, "{old}");
    assert_eq!(old["generation"], 2);
    let (status, ready) = get(&s.base, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{ready}");
    assert!(ready.contains("newer generation on disk"), "{ready}");
    std::fs::write(&staged, good).expect("write");
    std::fs::rename(&staged, &path).expect("rename");
    let (status, ready) = get(&s.base, "/readyz").await;
    assert_eq!(status, StatusCode::OK, "{ready}");
    s.shutdown().await;
}

/// `POST /v1/retrieve/batch` answers each request as `/v1/retrieve`
/// would, in order; a request that fails gets its own status and error
/// in its place; an empty or oversized batch is a 400 naming `requests`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_answers_each_request_in_order() {
    let s = start(JudgeOptions::default(), |_| {}).await;
    let batch = json!({"requests": [
        question(),
        {"tree": "nope", "query": "Who were the Normans?"},
        {"tree": "sample", "query": "Who were the Normans?", "top": 2},
    ]});
    let (status, body) = post(&s.base, "/v1/retrieve/batch", batch).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    let (_, alone) = post(&s.base, "/v1/retrieve", question()).await;
    assert_eq!(found_ids(&results[0]), found_ids(&alone));
    assert_eq!(results[0]["passages"][0]["document_id"], "Nikola_Tesla");
    assert_eq!(results[1]["status"], 404, "{}", results[1]);
    assert_eq!(results[1]["error"]["code"], "not_found");
    assert_eq!(found_ids(&results[2]).len(), 2);
    assert_eq!(results[2]["passages"][0]["document_id"], "Normans");
    for requests in [json!([]), json!(vec![question(); 65])] {
        let (status, body) = post(
            &s.base,
            "/v1/retrieve/batch",
            json!({ "requests": requests }),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["field"], "requests", "{body}");
    }
    s.shutdown().await;
}

/// Every answer carries `X-Request-Id`: the client's when it is a short
/// token, else one made by the service (also for a token that could forge
/// a log line), different per request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_carries_a_request_id() {
    let s = start(JudgeOptions::default(), |_| {}).await;
    let client = reqwest::Client::new();
    let id_of = |r: &reqwest::Response| {
        r.headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let r = client
        .post(format!("{}/v1/retrieve", s.base))
        .header("x-request-id", "client-7.a_b")
        .json(&question())
        .send()
        .await
        .expect("send");
    assert_eq!(id_of(&r).as_deref(), Some("client-7.a_b"));
    let mut made = Vec::new();
    for given in ["has space", "x".repeat(65).as_str()] {
        let r = client
            .get(format!("{}/healthz", s.base))
            .header("x-request-id", given)
            .send()
            .await
            .expect("send");
        made.push(id_of(&r).expect("an id"));
    }
    assert!(made.iter().all(|id| id.starts_with("tn-")), "{made:?}");
    assert_ne!(made[0], made[1]);
    s.shutdown().await;
}

/// Debian's Chromium, headless, with the flags this closed network needs
/// (no background connections), loading `url` with `extra` arguments; its
/// stdout. `None` (skipped, said) without Chromium outside CI.
async fn chromium(url: &str, extra: &[String]) -> Option<String> {
    let profile = tempfile::tempdir().expect("profile");
    let mut command = tokio::process::Command::new("chromium");
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=15000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .kill_on_drop(true);
    let out = match tokio::time::timeout(Duration::from_secs(120), command.output()).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) if !support::in_ci() => {
            eprintln!("SKIPPED: chromium is not installed ({e}); apt-get install chromium");
            return None;
        }
        Ok(Err(e)) => panic!("chromium is required in CI: {e}"),
        Err(_) => panic!("chromium did not finish within 120 s"),
    };
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The page at `/`, in a real browser: it lists the trees, runs the query
/// in its URL through `/v1/retrieve`, shows the passages with their scores
/// and draws the navigation (one dot per judged candidate, one row per
/// round). The screenshot is kept for a person to look at
/// (`target/artifacts/page.png`, CI keeps it) and checked to be a picture
/// with something on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_runs_a_query_and_draws_its_navigation_in_chromium() {
    let s = start(JudgeOptions::default(), |_| {}).await;
    let (status, html) = get(&s.base, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("<title>treenav</title>"));
    let url = format!(
        "{}/?tree=sample&top=3&q=Where%20did%20Tesla%20work%20after%20leaving%20Edison%27s%20company%3F",
        s.base
    );
    let Some(dom) = chromium(&url, &["--dump-dom".into()]).await else {
        return;
    };
    assert_eq!(dom.matches(r#"class="passage""#).count(), 3, "{dom}");
    assert!(dom.contains("Nikola Tesla"), "{dom}");
    assert!(dom.contains("3 passages ·"), "{dom}");
    let dots = dom.matches(r#"class="candidate""#).count();
    let rounds = dom.matches(r#"class="round""#).count();
    assert!(dots >= 10 && rounds >= 1, "{dots} dots, {rounds} rounds");
    assert!(
        ["tree", "lexical", "both", "neighbour"]
            .iter()
            .any(|r| dom.contains(&format!(r#"data-route="{r}""#))),
        "the routes drawn"
    );
    assert_plot_is_readable(&dom);

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/artifacts");
    std::fs::create_dir_all(&dir).expect("artifacts folder");
    let png = dir.join("page.png");
    let _ = std::fs::remove_file(&png);
    let shot = [
        "--window-size=1280,900".to_string(),
        "--hide-scrollbars".to_string(),
        format!("--screenshot={}", png.display()),
    ];
    chromium(&url, &shot).await.expect("chromium ran above");
    let bytes = std::fs::read(&png).expect("the screenshot");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    // A blank 1280×900 page compresses to a few KB; text and a drawing
    // take far more.
    assert!(
        bytes.len() > 40_000,
        "{} bytes: nothing drawn?",
        bytes.len()
    );
    s.shutdown().await;
}

/// The navigation plot reads at a glance (#67 row 7): both axes named,
/// marks at least 4 px in radius (they were 2.5 px on a 560-px plot) and a
/// legend that says what a large mark means beside the routes' names.
fn assert_plot_is_readable(dom: &str) {
    let labels: Vec<&str> = dom
        .split(r#"class="axis-label""#)
        .skip(1)
        .filter_map(|rest| rest.split_once('>')?.1.split_once('<').map(|t| t.0))
        .collect();
    assert_eq!(labels, ["judge P(yes)", "round"], "axis labels");
    let radii: Vec<f64> = dom
        .split(r#"<circle "#)
        .skip(1)
        .filter_map(|c| c.split_once(r#" r=""#)?.1.split_once('"')?.0.parse().ok())
        .collect();
    assert!(!radii.is_empty(), "no marks");
    assert!(
        radii.iter().all(|&r| r >= 4.0),
        "marks too small: {radii:?}"
    );
    assert!(
        dom.contains("large, outlined: kept"),
        "the legend names kept marks"
    );
}

/// `/v1/prune` on a service with the default judge (the embedding judge,
/// which reads a tree's vectors) answers (#68: it was 502, "use it
/// through a navigator"), judged as `treenav prune` judges (lexical). With
/// a saved config
/// (`--prune-config`), a request that names no strategy gets its
/// strategy, threshold and judge; one that names a strategy gets that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_answers_on_a_default_service_and_takes_a_saved_config() {
    let chunks = json!([
        "Tesla worked for Edison in New York.",
        "Bananas are yellow.",
        "Paris is in France."
    ]);
    let ask = json!({"question": "Where did Tesla work?", "chunks": chunks});
    let s = start(JudgeOptions::for_tree(), |_| {}).await;
    let (status, pruned) = post(&s.base, "/v1/prune", ask.clone()).await;
    assert_eq!(status, StatusCode::OK, "{pruned}");
    assert_eq!(pruned["strategy"], "grade");
    assert_eq!(
        pruned["kept"][0]["text"],
        "Tesla worked for Edison in New York."
    );
    s.shutdown().await;

    let saved = treenav::prune::PruneConfig {
        strategy: treenav::prune::Strategy::Keep { threshold: 0.99 },
        keep_top_k: 0,
        token_budget: None,
        judge: JudgeOptions::default(),
        fitted: None,
    };
    let s = start(JudgeOptions::for_tree(), |o| o.prune = Some(saved)).await;
    let (status, pruned) = post(&s.base, "/v1/prune", ask.clone()).await;
    assert_eq!(status, StatusCode::OK, "{pruned}");
    assert_eq!(pruned["strategy"], "keep");
    assert!(
        pruned["kept"].as_array().is_some_and(|k| k.len() < 3),
        "{pruned}"
    );
    let mut top = ask;
    top["strategy"] = json!("top-n");
    top["n"] = json!(2);
    let (status, pruned) = post(&s.base, "/v1/prune", top).await;
    assert_eq!(status, StatusCode::OK, "{pruned}");
    assert_eq!(pruned["kept"].as_array().map(Vec::len), Some(2), "{pruned}");
    s.shutdown().await;
}

/// The top passage ids for a Tesla question and the tree's document count:
/// what a refused write must leave as it was.
async fn tesla_state(base: &str) -> (Vec<String>, Value) {
    let (status, found) = post(
        base,
        "/v1/retrieve",
        json!({"tree": "sample", "query": "Did Tesla work for Edison?", "top": 5}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let (_, trees) = get(base, "/v1/trees").await;
    let trees: Value = serde_json::from_str(&trees).expect("json");
    let passages: Vec<String> = found["passages"]
        .as_array()
        .expect("passages")
        .iter()
        .map(|p| format!("{} {}", p["id"], p["text"]))
        .collect();
    (passages, trees["trees"][0]["documents"].clone())
}

/// A write needs intent (#66 row 1): a foreign `Host` (DNS rebinding), a
/// foreign `Origin` (CSRF) or a form's content type is refused with 403
/// naming the header, and the tree answers as before; the server's own
/// names and a same-origin JSON write still work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_from_another_site_is_refused_and_changes_nothing() {
    let s = start(JudgeOptions::default(), |_| {}).await;
    let before = tesla_state(&s.base).await;
    let port = s.base.rsplit(':').next().expect("port").to_string();
    let poison = r#"[{"id":"Nikola_Tesla#0","doc_id":"Nikola_Tesla","text":"Tesla never worked for Edison."}]"#;
    let client = reqwest::Client::new();
    let documents = format!("{}/v1/trees/sample/documents", s.base);
    let cases: [(&str, Vec<(&str, String)>); 4] = [
        (
            "Host",
            vec![
                ("host", format!("evil.example:{port}")),
                ("origin", "https://evil.example".into()),
                ("content-type", "text/plain".into()),
            ],
        ),
        (
            "Host",
            vec![
                ("host", format!("evil.example:{port}")),
                ("content-type", "application/json".into()),
            ],
        ),
        (
            "Origin",
            vec![
                ("origin", "https://evil.example".into()),
                ("content-type", "application/json".into()),
            ],
        ),
        ("Content-Type", vec![("content-type", "text/plain".into())]),
    ];
    for (field, headers) in cases {
        let mut request = client.post(&documents).body(poison);
        for (k, v) in &headers {
            request = request.header(*k, v);
        }
        let r = request.send().await.expect("send");
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{headers:?}");
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["error"]["field"], field, "{body}");
    }
    let compact = client
        .post(format!("{}/v1/trees/sample/compact", s.base))
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("send");
    assert_eq!(compact.status(), StatusCode::FORBIDDEN);
    let rebound = client
        .get(format!("{}/v1/trees", s.base))
        .header("host", format!("evil.example:{port}"))
        .send()
        .await
        .expect("send");
    assert_eq!(rebound.status(), StatusCode::FORBIDDEN, "a rebound read");
    assert_eq!(
        tesla_state(&s.base).await,
        before,
        "a refused write changed the tree"
    );

    // A headless browser on another origin (another port) tries the same.
    let evil = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let evil_url = format!("http://{}/", evil.local_addr().expect("addr"));
    let page = format!(
        r#"<!doctype html><title>waiting</title><script>
Promise.allSettled([
  fetch("{documents}", {{method: "POST", mode: "no-cors", headers: {{"content-type": "text/plain"}}, body: '{poison}'}}),
  fetch("{base}/v1/trees/sample/compact", {{method: "POST", mode: "no-cors"}}),
  fetch("{documents}", {{method: "POST", headers: {{"content-type": "application/json"}}, body: '{poison}'}}),
]).then(() => {{ document.title = "sent"; }});
</script>"#,
        base = s.base
    );
    let serving = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut stream, _)) = evil.accept().await {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf).await;
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        }
    });
    if let Some(dom) = chromium(&evil_url, &["--dump-dom".into()]).await {
        assert!(
            dom.contains("<title>sent</title>"),
            "the page's requests never settled: {dom}"
        );
    }
    serving.abort();
    assert_eq!(
        tesla_state(&s.base).await,
        before,
        "a page on another origin changed the tree"
    );

    // The server's own names still write, as the Python client does.
    let (status, added) = post(
        &s.base,
        "/v1/trees/sample/documents",
        json!([update_doc(0, 1)]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{added}");
    let local = client
        .post(format!("http://localhost:{port}/v1/trees/sample/documents"))
        .header("origin", format!("http://localhost:{port}"))
        .json(&json!([update_doc(0, 2)]))
        .send()
        .await
        .expect("send");
    assert_eq!(local.status(), StatusCode::OK, "a same-origin write");
    s.shutdown().await;
}

/// Read your writes (#66 row 5): while 3 clients query without pause,
/// another process adds and removes a document 8 times; the request made
/// right after each update completed answers from that generation, never
/// the one before (a request that found a reload under way answered from
/// the old copy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_after_an_update_completed_sees_it_while_others_query() {
    use treenav::build::update;
    let (s, path, _dir) = start_file(JudgeOptions::default(), |_| {}).await;
    let (_, listed) = get(&s.base, "/v1/trees").await;
    let listed: Value = serde_json::from_str(&listed).expect("json");
    let recorded = listed["trees"][0]["embedder"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let embedder = update::embedder_for(&recorded)
        .transpose()
        .expect("the tree's embedder");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let noise: Vec<_> = (0..3)
        .map(|_| {
            let (base, stop) = (s.base.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let _ = post(&base, "/v1/retrieve", question()).await;
                }
            })
        })
        .collect();
    let mut stale = Vec::new();
    for round in 0..8u64 {
        let corpus = treenav::corpus::load_str(
            &format!(r#"{{"_id":"wombat-{round}","title":"Wombat burrow","text":"The wombat digs a burrow of cube droppings, round {round}."}}"#),
            "new.jsonl",
            treenav::corpus::Format::Beir,
            &treenav::corpus::LoadOptions::default(),
        )
        .expect("corpus");
        let added = update::add(&path, corpus, embedder.as_ref(), &treenav::tree::NoProgress)
            .await
            .expect("add");
        let (status, after) = post(
            &s.base,
            "/v1/retrieve",
            json!({"tree": "sample", "query": "wombat burrow cube droppings", "top": 3}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{after}");
        if after["generation"] != json!(added.generation) {
            stale.push((added.generation, after["generation"].clone()));
        }
        let removed = update::remove(&path, &[format!("wombat-{round}")], embedder.as_ref())
            .await
            .expect("remove");
        let (_, after) = post(&s.base, "/v1/retrieve", question()).await;
        if after["generation"] != json!(removed.generation) {
            stale.push((removed.generation, after["generation"].clone()));
        }
    }
    stop.store(true, Ordering::SeqCst);
    for n in noise {
        n.await.expect("join");
    }
    assert!(
        stale.is_empty(),
        "answers from an older generation (wanted, got): {stale:?}"
    );
    s.shutdown().await;
}

/// A tree whose side files are not its own or are damaged (#66 rows 6
/// and 7): an old generation's passage vectors copied in, or a tantivy
/// term dictionary with its first byte flipped. The service starts, the
/// healthy tree beside it answers, the broken one answers 503 naming why
/// and `/readyz` is not ready; restored and reloaded, it serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_with_foreign_or_damaged_files_is_not_ready_while_the_others_serve() {
    let (dir, good) = sample_file().await;
    type Spoil = fn(&std::path::Path) -> std::path::PathBuf;
    let spoilers: [(Spoil, &str); 2] = [
        (
            |tree| {
                // The base id (byte 40: the tree payload's length) of
                // another generation.
                let path = treenav::tree::vectors::passage_vectors_path(tree);
                let mut bytes = std::fs::read(&path).expect("read");
                bytes[40] ^= 0x01;
                std::fs::write(&path, bytes).expect("write");
                path
            },
            "another tree file",
        ),
        (
            |tree| {
                let folder = treenav::tree::file::index_folder(tree);
                let term = std::fs::read_dir(&folder)
                    .expect("folder")
                    .flatten()
                    .map(|e| e.path())
                    .find(|p| p.extension().is_some_and(|x| x == "term"))
                    .expect("a term file");
                let mut bytes = std::fs::read(&term).expect("read");
                bytes[0] ^= 0xff;
                std::fs::write(&term, bytes).expect("write");
                term
            },
            "damaged",
        ),
    ];
    for (n, (spoil, why)) in spoilers.into_iter().enumerate() {
        let bad = dir.path().join(format!("bad{n}.tree"));
        treenav::tree::file::save(&*support::sample_tree().await, &bad).expect("save");
        let spoiled = spoil(&bad);
        let kept = dir.path().join("kept");
        std::fs::copy(&spoiled, &kept).expect("copy");
        let e = treenav::tree::file::load(&bad).expect_err("a spoiled tree loads");
        assert!(e.to_string().contains(why), "{e}");
        let specs = vec![
            TreeSpec {
                name: "sample".into(),
                path: good.clone(),
            },
            TreeSpec {
                name: "bad".into(),
                path: bad.clone(),
            },
        ];
        let s = start_with(
            dir.clone(),
            ServeOptions::new(specs, JudgeOptions::default()),
        )
        .await;
        let (status, found) = post(&s.base, "/v1/retrieve", question()).await;
        assert_eq!(status, StatusCode::OK, "the healthy tree: {found}");
        let ask_bad = json!({"tree": "bad", "query": "Tesla"});
        let (status, refused) = post(&s.base, "/v1/retrieve", ask_bad.clone()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{refused}");
        assert_eq!(refused["error"]["code"], "tree_not_loaded", "{refused}");
        let message = refused["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(why), "{message}");
        let (status, ready) = get(&s.base, "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{ready}");
        assert!(ready.contains("tree `bad` is not loaded"), "{ready}");
        // Restored from the spoiled file's bytes, then reloaded: served.
        let mut bytes = std::fs::read(&kept).expect("read");
        if n == 0 {
            bytes[40] ^= 0x01;
        } else {
            bytes[0] ^= 0xff;
        }
        std::fs::write(&spoiled, bytes).expect("restore");
        let (status, reloaded) = post(&s.base, "/v1/admin/reload", json!({"tree": "bad"})).await;
        assert_eq!(status, StatusCode::OK, "{reloaded}");
        assert_eq!(
            post(&s.base, "/v1/retrieve", ask_bad).await.0,
            StatusCode::OK
        );
        assert_eq!(get(&s.base, "/readyz").await.0, StatusCode::OK);
        s.shutdown().await;
    }
}

/// The page on a token-protected server (#66 row 11): it said "cannot list
/// the trees: unauthorized" and then searched tree "". Now it asks for the
/// token, opens its field, and searches nothing until the trees load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_asks_for_the_token_on_a_guarded_server_in_chromium() {
    let s = start(JudgeOptions::default(), |o| {
        o.auth = Some(Tokens::parse("s3cret-token-0123456789", "test").expect("tokens"));
    })
    .await;
    let url = format!("{}/?tree=sample&q=Tesla", s.base);
    let Some(dom) = chromium(&url, &["--dump-dom".into()]).await else {
        return;
    };
    assert!(dom.contains("asks for a bearer token"), "{dom}");
    assert!(
        dom.contains("<details open"),
        "the token field is not shown: {dom}"
    );
    assert_eq!(dom.matches(r#"class="passage""#).count(), 0, "{dom}");
    s.shutdown().await;
}

//! Helpers shared by the integration tests: real servers on 127.0.0.1.
#![allow(dead_code)]

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed when dropped.
pub struct Server {
    child: Child,
    pub base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().expect("local addr").port()
}

/// Whether this run is CI, where every peer must be present.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Starts `program args…` (with `{port}` replaced) and waits until the port
/// accepts connections. `None` (test skipped, with a message) when the program
/// is not installed outside CI; a panic in CI, where it must be installed.
pub fn start(program: &str, args: &[&str], install_hint: &str) -> Option<Server> {
    let port = free_port();
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{port}", &port.to_string()))
        .collect();
    let child = match Command::new(program)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            if in_ci() {
                panic!("{program} is required in CI but cannot start ({e}); {install_hint}");
            }
            eprintln!("SKIPPED: {program} is not installed ({e}); {install_hint}");
            return None;
        }
    };
    let server = Server {
        child,
        base: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(server);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{program} did not listen on port {port} within 60 s");
}

/// The shared benchmark data folder, when present (it is absent on a user's fresh clone).
pub fn shared_data(rel: &str) -> Option<std::path::PathBuf> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED: {} is absent (the shared benchmark data is not on this machine)",
            p.display()
        );
        None
    }
}

/// Requests a scripted server has seen, and the most in flight at once.
#[derive(Debug, Default)]
pub struct Load {
    pub requests: std::sync::atomic::AtomicUsize,
    pub in_flight: std::sync::atomic::AtomicUsize,
    pub peak: std::sync::atomic::AtomicUsize,
}

/// A System One server of our own, for what no real server can be made to
/// do: answers after a fixed `delay`; `noul` falls with the candidate's
/// number, `choice` always picks the last option; `/slow/…` answers after
/// 2 s. Returns its base URL and its load counters.
pub async fn scripted_systemone(delay: Duration) -> (String, std::sync::Arc<Load>) {
    use axum::routing::post;
    use axum::{Json, Router};
    use serde_json::{json, Value};
    use std::sync::atomic::Ordering;
    fn answer(body: Value) -> Value {
        let answers: serde_json::Map<String, Value> = body["questions"]
            .as_object()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|(id, q)| {
                let a = if q["type"] == "choice" {
                    let labels: Vec<String> = q["criteria"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
                    let last = labels.iter().max_by_key(|l| l.parse::<usize>().unwrap_or(0)).cloned().unwrap_or_default();
                    let probs: serde_json::Map<String, Value> = labels.iter().map(|l| (l.clone(), json!(if *l == last { 0.9 } else { 0.1 / (labels.len() - 1) as f64 }))).collect();
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
    let load = std::sync::Arc::new(Load::default());
    let counted = load.clone();
    let app = Router::new()
        .route(
            "/v1/systemone",
            post(move |Json(b): Json<Value>| {
                let load = counted.clone();
                async move {
                    load.requests.fetch_add(1, Ordering::SeqCst);
                    let now = load.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    load.peak.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(delay).await;
                    load.in_flight.fetch_sub(1, Ordering::SeqCst);
                    Json(answer(b))
                }
            }),
        )
        .route(
            "/slow/v1/systemone",
            post(|Json(b): Json<Value>| async move {
                tokio::time::sleep(Duration::from_secs(2)).await;
                Json(answer(b))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), load)
}

/// A bench report without timing and cache counts (two queries in flight may
/// both miss one cache entry): what must not change with concurrency.
pub fn bench_figures(report: &treenav::eval::bench::Report) -> serde_json::Value {
    let mut json = serde_json::to_value(report).expect("report as JSON");
    let strip = |s: &mut serde_json::Value| {
        if let Some(m) = s.as_object_mut() {
            for key in [
                "seconds_per_query",
                "latency_p50_ms",
                "latency_p95_ms",
                "queries_per_second",
                "judge_calls",
                "cache_hits",
                "input_tokens",
                "cost_usd",
                "time_by_step",
            ] {
                m.remove(key);
            }
        }
    };
    for (_, s) in json["systems"].as_object_mut().into_iter().flatten() {
        strip(s);
    }
    for b in json["judge_budgets"].as_array_mut().into_iter().flatten() {
        for (_, s) in b["systems"].as_object_mut().into_iter().flatten() {
            strip(s);
        }
    }
    json
}

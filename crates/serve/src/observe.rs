//! Metrics (Prometheus text at `/metrics`) and the access log.
//!
//! Every request is counted by route, method and status and timed into a
//! histogram (route and status); in-flight requests are a gauge; retrievals
//! add the judge's calls, cache hits, tokens and cost (a counter in USD);
//! `treenav_builder_info` and `treenav_trees_loaded` say what runs. Every
//! metric has `# HELP`. A method outside the HTTP standard's is labelled
//! and logged `OTHER`, so no client can grow the label set or the log.
//! The access log (target `treenav_serve::access`) has the request id
//! (the client's `X-Request-Id` when it is a short token, else one made
//! here; echoed in the response), method, route, the tree, status and
//! latency — never a token, and query text only when the service was
//! asked to log it.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;
use treenav_judge::Usage;

/// Latency buckets, seconds.
const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The process's Prometheus recorder: installed once (metrics are
/// process-wide); when another recorder was installed first, ours renders
/// only what reaches it.
pub(crate) fn prometheus() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let builder = || {
            PrometheusBuilder::new()
                .set_buckets(&BUCKETS)
                .unwrap_or_else(|_| PrometheusBuilder::new())
        };
        let handle = match builder().install_recorder() {
            Ok(handle) => handle,
            Err(e) => {
                tracing::warn!(error = %e, "another metrics recorder is installed; /metrics shows only treenav's own");
                builder().build_recorder().handle()
            }
        };
        describe();
        metrics::gauge!("treenav_builder_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
        keep_drained(handle.clone());
        handle
    })
}

/// How often the histograms' raw samples are folded into their buckets.
const UPKEEP: std::time::Duration = std::time::Duration::from_secs(1);

/// Folds the histograms' raw samples into their buckets every [`UPKEEP`].
/// The recorder keeps every sample until a scrape or an upkeep drains it,
/// and `install_recorder` runs no upkeep of its own: without this thread a
/// service nobody scrapes grows by 8 bytes per sample for ever (the soak's
/// +45% in 20 minutes, docs/serve.md).
fn keep_drained(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("treenav-metrics".into())
        .spawn(move || loop {
            std::thread::sleep(UPKEEP);
            handle.run_upkeep();
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "no thread for the metrics upkeep: histograms are drained only by scrapes");
    }
}

/// `# HELP` for every metric.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(
        "treenav_http_requests_total",
        "HTTP requests answered, by route, method and status."
    );
    describe_histogram!(
        "treenav_http_request_duration_seconds",
        Unit::Seconds,
        "Time to answer an HTTP request, by route and status."
    );
    describe_gauge!(
        "treenav_http_in_flight",
        "HTTP requests being answered now."
    );
    describe_counter!(
        "treenav_judge_calls_total",
        "Judge calls made (cache hits excluded), by route."
    );
    describe_counter!(
        "treenav_judge_cache_hits_total",
        "Judge calls answered from the cache, by route."
    );
    describe_counter!(
        "treenav_judge_input_tokens_total",
        "Input tokens sent to the judge, by route."
    );
    describe_counter!(
        "treenav_judge_output_tokens_total",
        "Output tokens the judge produced, by route."
    );
    describe_gauge!(
        "treenav_builder_info",
        "Always 1; the labels say which treenav runs."
    );
    describe_gauge!("treenav_trees_loaded", "Trees being served.");
    describe_counter!(
        "treenav_reloads_total",
        "Tree reloads, by outcome (ok, refused)."
    );
    describe_counter!(
        "treenav_updates_total",
        "Updates of a served tree's documents (POST or DELETE /v1/trees/{name}/documents) that landed."
    );
    describe_counter!(
        "treenav_overloaded_total",
        "Requests shed with 503 because the queue was full."
    );
    describe_gauge!("treenav_connections_open", "HTTP connections open.");
    describe_counter!(
        "treenav_connections_refused_total",
        "Connections answered 503 and closed because --max-connections were open."
    );
    describe_counter!(
        "treenav_tree_changed_total",
        "Requests refused because a served side file was written over in place."
    );
}

/// The judge's estimated cost per route, USD (the `metrics` crate's
/// counters are integers, so this counter is kept and rendered here).
fn cost() -> &'static Mutex<BTreeMap<&'static str, f64>> {
    static COST: OnceLock<Mutex<BTreeMap<&'static str, f64>>> = OnceLock::new();
    COST.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// The Prometheus text of `/metrics`: the recorder's families and the cost
/// counter.
pub(crate) fn render() -> String {
    let mut text = prometheus().render();
    text.push_str("# HELP treenav_judge_cost_usd_total Estimated judge cost in USD (list prices), by route.\n");
    text.push_str("# TYPE treenav_judge_cost_usd_total counter\n");
    if let Ok(cost) = cost().lock() {
        for (route, usd) in cost.iter() {
            text.push_str(&format!(
                "treenav_judge_cost_usd_total{{route=\"{route}\"}} {usd}\n"
            ));
        }
    }
    text
}

/// The method as labelled and logged: one of the standard's, else `OTHER`.
fn method_label(method: &axum::http::Method) -> &'static str {
    const KNOWN: [&str; 9] = [
        "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE",
    ];
    KNOWN
        .into_iter()
        .find(|m| *m == method.as_str())
        .unwrap_or("OTHER")
}

/// What a handler notes for the access log: the tree it answered from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Noted(std::sync::Arc<Mutex<Option<String>>>);

impl Noted {
    /// Notes the tree a request used.
    pub(crate) fn tree(&self, name: &str) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(name.to_string());
        }
    }

    fn noted_tree(&self) -> Option<String> {
        self.0.lock().ok().and_then(|slot| slot.clone())
    }
}

/// The request's id: the client's `X-Request-Id` when it is 1–64 letters,
/// digits, `.`, `_` or `-` (anything else could forge a log line), else one
/// made here, unique in this process.
fn request_id(headers: &axum::http::HeaderMap) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let given = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            (1..=64).contains(&v.len())
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        });
    match given {
        Some(id) => id.to_string(),
        None => format!(
            "tn-{:x}-{}",
            started(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ),
    }
}

/// This process's start, in seconds since 1970 (made ids differ across
/// restarts).
fn started() -> u64 {
    static AT: OnceLock<u64> = OnceLock::new();
    *AT.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    })
}

/// The `{name}` of a `/v1/trees/{name}/…` path.
fn tree_in_path(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/v1/trees/")?;
    rest.split('/').next().filter(|n| !n.is_empty())
}

/// Middleware: counts, times and logs each request.
pub(crate) async fn track(mut request: Request, next: Next) -> Response {
    let start = Instant::now();
    let id = request_id(request.headers());
    let noted = Noted::default();
    request.extensions_mut().insert(noted.clone());
    let path_tree = tree_in_path(request.uri().path()).map(str::to_string);
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let in_flight = metrics::gauge!("treenav_http_in_flight");
    in_flight.increment(1.0);
    let mut response = next.run(request).await;
    in_flight.decrement(1.0);
    if let Ok(value) = axum::http::HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", value);
    }
    let tree = noted.noted_tree().or(path_tree).unwrap_or_default();
    let status = response.status().as_u16();
    let secs = start.elapsed().as_secs_f64();
    let labels = [
        ("route", route.clone()),
        ("method", method.to_string()),
        ("status", status.to_string()),
    ];
    metrics::counter!("treenav_http_requests_total", &labels).increment(1);
    metrics::histogram!("treenav_http_request_duration_seconds",
        "route" => route.clone(), "status" => status.to_string())
    .record(secs);
    // Debug formatting of the tree: quoted and escaped, so a name from a
    // path cannot forge a log line.
    tracing::info!(target: "treenav_serve::access", request_id = %id, method, route,
        tree = ?tree, status, latency_ms = secs * 1000.0, "request");
    response
}

/// Adds a query's judge usage to the counters.
pub(crate) fn judge_usage(route: &'static str, usage: &Usage) {
    metrics::counter!("treenav_judge_calls_total", "route" => route).increment(usage.calls.into());
    metrics::counter!("treenav_judge_cache_hits_total", "route" => route)
        .increment(usage.cache_hits.into());
    metrics::counter!("treenav_judge_input_tokens_total", "route" => route)
        .increment(usage.input_tokens);
    metrics::counter!("treenav_judge_output_tokens_total", "route" => route)
        .increment(usage.output_tokens);
    if usage.cost_usd.is_finite() && usage.cost_usd > 0.0 {
        if let Ok(mut cost) = cost().lock() {
            *cost.entry(route).or_insert(0.0) += usage.cost_usd;
        }
    }
}

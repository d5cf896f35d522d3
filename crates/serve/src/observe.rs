//! Metrics (Prometheus text at `/metrics`) and the access log.
//!
//! Every request is counted by route, method and status and timed into a
//! histogram; in-flight requests are a gauge; retrievals add the judge's
//! calls, cache hits, tokens and cost. The access log (target
//! `treenav_serve::access`) has method, route, status and latency — never
//! a token, and query text only when the service was asked to log it.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
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
        match builder().install_recorder() {
            Ok(handle) => handle,
            Err(e) => {
                tracing::warn!(error = %e, "another metrics recorder is installed; /metrics shows only treenav's own");
                builder().build_recorder().handle()
            }
        }
    })
}

/// Middleware: counts, times and logs each request.
pub(crate) async fn track(request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let in_flight = metrics::gauge!("treenav_http_in_flight");
    in_flight.increment(1.0);
    let response = next.run(request).await;
    in_flight.decrement(1.0);
    let status = response.status().as_u16();
    let secs = start.elapsed().as_secs_f64();
    let labels = [
        ("route", route.clone()),
        ("method", method.to_string()),
        ("status", status.to_string()),
    ];
    metrics::counter!("treenav_http_requests_total", &labels).increment(1);
    metrics::histogram!("treenav_http_request_duration_seconds", "route" => route.clone())
        .record(secs);
    tracing::info!(target: "treenav_serve::access", %method, route, status,
        latency_ms = secs * 1000.0, "request");
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
        metrics::gauge!("treenav_judge_cost_usd_total", "route" => route).increment(usage.cost_usd);
    }
}

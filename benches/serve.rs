//! Load benchmark of `treenav serve`: `cargo bench --bench serve`.
//!
//! The service runs in this process on its own 2-worker runtime (the
//! machine's 2 cores); the clients run on a third thread with keep-alive
//! connections, all on loopback. Queries are SciFact's test queries over
//! the SciFact tree (the bundled sample when `../shared/data/scifact` is
//! absent), cycled.
//!
//! 1. Lexical judge: throughput, p50/p99 latency and errors at 1, 32 and
//!    64 concurrent clients sending back to back (closed loop), then 32
//!    clients offering 300 and 600 requests/s on a schedule (open loop;
//!    target: p99 < 50 ms at 300/s); then the process's RSS before and
//!    after 10,000 more requests.
//! 2. A judge server answering every call after 50 ms (the scripted
//!    System One server of the tests): p50 at 1 and 64 clients against
//!    the critical path (judge rounds on the longest chain × 50 ms; target
//!    p50 within 1.2× of it at 64 clients).
//!
//! 3. Soak (only when asked, `TREENAV_BENCH_SECTIONS=3`): one server for
//!    `TREENAV_SOAK_SECS` (default 600) under mixed traffic — valid
//!    retrievals back to back; invalid ones (broken and trailing JSON,
//!    unknown trees, over-long queries, made-up HTTP methods); 2 MiB bodies;
//!    sockets that idle, send half a header or half a body — with the RSS
//!    sampled every 10 s. Target: RSS growth after the first minute ≤ 5%,
//!    no valid request failed.
//!
//! `TREENAV_BENCH_SECS` sets each run's length (default 8 s);
//! `TREENAV_BENCH_SECTIONS=2` runs section 2 only.

#[path = "../tests/support/mod.rs"]
mod support;

/// The allocator the `treenav` binary ships with, so the RSS figures are
/// the served process's.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use treenav::corpus::{load, Format, LoadOptions};
use treenav::judge::{BackendOptions, JudgeOptions};
use treenav::navigator::{NavigatorConfig, Strategy};
use treenav::serve::{ServeOptions, Server, TreeSpec};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The tree file and the queries to send.
async fn workload(dir: &Path) -> (PathBuf, Vec<String>, &'static str) {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/scifact");
    let path = dir.join("bench.tree");
    if !data.exists() {
        let tree = support::sample_tree().await;
        treenav::tree::file::save(&tree, &path).expect("save");
        let queries = ["Where did Tesla work?", "What is the capital of Victoria?"];
        return (
            path,
            queries.iter().map(|q| q.to_string()).collect(),
            "sample",
        );
    }
    let corpus = load(&data, Format::Beir, &LoadOptions::default()).expect("scifact");
    let tree = support::tree_of(corpus, None).await;
    treenav::tree::file::save(&tree, &path).expect("save");
    let queries = std::fs::read_to_string(data.join("queries.jsonl"))
        .expect("queries")
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| Some(v["text"].as_str()?.to_string()))
        .collect();
    (path, queries, "SciFact")
}

/// A service on its own runtime; returns its base URL.
fn start(
    rt: &tokio::runtime::Runtime,
    tree: &Path,
    judge: JudgeOptions,
    concurrent: usize,
    navigator: NavigatorConfig,
) -> String {
    let spec = TreeSpec {
        name: "bench".into(),
        path: tree.to_path_buf(),
    };
    let mut options = ServeOptions::new(vec![spec], judge);
    options.limits.max_concurrent = concurrent;
    options.navigator = navigator;
    let server = rt
        .block_on(Server::bind("127.0.0.1:0".parse().expect("addr"), options))
        .expect("bind");
    let base = format!("http://{}", server.local_addr().expect("addr"));
    rt.spawn(server.run(std::future::pending()));
    base
}

struct Run {
    requests: usize,
    errors: usize,
    secs: f64,
    p50_ms: f64,
    p99_ms: f64,
}

impl Run {
    fn print(&self, label: &str) {
        println!(
            "  {label:<28} {:>6} requests in {:>5.1} s = {:>7.1}/s   p50 {:>7.2} ms   p99 {:>7.2} ms   errors {}",
            self.requests,
            self.secs,
            self.requests as f64 / self.secs,
            self.p50_ms,
            self.p99_ms,
            self.errors
        );
    }
}

/// `clients` loops, each sending retrievals until `limit` requests or
/// `secs` have gone: back to back (closed loop), or, with `rate`, each on
/// a schedule so that all together offer `rate` requests/s (open loop;
/// latency counts from the scheduled time, so a slow server cannot hide
/// its queue).
async fn drive(
    base: &str,
    queries: &[String],
    clients: usize,
    limit: usize,
    secs: f64,
    rate: Option<f64>,
) -> Run {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()
        .expect("client");
    let next = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let interval = rate.map(|r| Duration::from_secs_f64(clients as f64 / r));
    let loops = (0..clients).map(|c| {
        let (client, next, errors) = (client.clone(), next.clone(), errors.clone());
        let url = format!("{base}/v1/retrieve");
        async move {
            let mut latencies = Vec::new();
            // Open loop: client c starts at its offset within the interval.
            let mut scheduled =
                start + interval.map_or(Duration::ZERO, |i| i.mul_f64(c as f64 / clients as f64));
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= limit || Instant::now() >= deadline {
                    return latencies;
                }
                let body =
                    serde_json::json!({"tree": "bench", "query": queries[i % queries.len()]});
                let sent = match interval {
                    Some(every) => {
                        tokio::time::sleep_until(scheduled.into()).await;
                        let at = scheduled;
                        scheduled += every;
                        at
                    }
                    None => Instant::now(),
                };
                let ok = match client.post(&url).json(&body).send().await {
                    Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                    Err(_) => false,
                };
                if ok {
                    latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
                } else {
                    errors.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    });
    let mut latencies: Vec<f64> = futures::future::join_all(loops).await.concat();
    let secs = start.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    Run {
        requests: latencies.len(),
        errors: errors.load(Ordering::SeqCst),
        secs,
        p50_ms: percentile(&latencies, 0.5),
        p99_ms: percentile(&latencies, 0.99),
    }
}

/// This process's resident set, MiB (Linux).
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// A retrieval's judge rounds on its longest chain (one per level walked,
/// or per best-first round, plus the shortlist rerank), its judge calls
/// and the candidates it showed.
fn critical_path(base: &str, rt: &tokio::runtime::Runtime, query: &str) -> (usize, u64, u64) {
    let found: serde_json::Value = rt.block_on(async {
        reqwest::Client::new()
            .post(format!("{base}/v1/retrieve"))
            .json(&serde_json::json!({"tree": "bench", "query": query, "trace": true}))
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json")
    });
    let trace = &found["trace"];
    let steps = trace["levels"].as_array().map_or(0, Vec::len)
        + trace["rounds"].as_array().map_or(0, Vec::len);
    let rounds = steps + usize::from(!trace["rerank"].is_null());
    let calls = trace["usage"]["calls"].as_u64().unwrap_or(0);
    (
        rounds,
        calls,
        trace["candidates_judged"].as_u64().unwrap_or(0),
    )
}

fn main() {
    let secs: f64 = std::env::var("TREENAV_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8.0);
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("server runtime");
    let clients_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let (tree, queries, name) = server_rt.block_on(workload(dir.path()));
    println!(
        "treenav serve under load: {name} tree, {} queries cycled, runs of {secs} s\n",
        queries.len()
    );

    let sections = std::env::var("TREENAV_BENCH_SECTIONS").unwrap_or_else(|_| "12".into());
    if sections.contains('1') {
        lexical(&server_rt, &clients_rt, &tree, &queries, secs);
    }
    if sections.contains('2') {
        slow_judge(&server_rt, &clients_rt, &tree, &queries, secs);
    }
    if sections.contains('3') {
        soak::run(&server_rt, &clients_rt, &tree, &queries);
    }
}

/// Section 3: the soak.
mod soak {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Valid retrievals back to back until `until`; returns (sent, failed).
    async fn valid(base: String, queries: Vec<String>, until: Instant) -> (usize, usize) {
        let client = reqwest::Client::new();
        let (mut sent, mut failed) = (0, 0);
        while Instant::now() < until {
            let body = serde_json::json!({"tree": "bench", "query": queries[sent % queries.len()]});
            let ok = match client
                .post(format!("{base}/v1/retrieve"))
                .json(&body)
                .send()
                .await
            {
                Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                Err(_) => false,
            };
            sent += 1;
            failed += usize::from(!ok);
        }
        (sent, failed)
    }

    /// One raw request; reads until the server closes or 15 s pass.
    async fn raw(addr: &str, bytes: &[u8]) {
        let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
            return;
        };
        let _ = s.write_all(bytes).await;
        let mut sink = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(15), s.read_to_end(&mut sink)).await;
    }

    /// Invalid, oversized and made-up-method requests in turn until `until`.
    async fn invalid(base: String, until: Instant, seed: usize) -> usize {
        let client = reqwest::Client::new();
        let addr = base.trim_start_matches("http://").to_string();
        let url = format!("{base}/v1/retrieve");
        let mut n = seed;
        while Instant::now() < until {
            n += 1;
            let body: Vec<u8> = match n % 6 {
                0 => b"{\"tree\": \"bench\", \"query\": ".to_vec(),
                1 => br#"{"tree":"bench","query":"x"}{"tree":"other"}"#.to_vec(),
                2 => format!(r#"{{"tree":"no-such-tree-{n}","query":"x"}}"#).into_bytes(),
                3 => format!(r#"{{"tree":"bench","query":"{}"}}"#, "q".repeat(5000)).into_bytes(),
                4 => vec![b' '; 2 << 20],
                _ => {
                    let method = format!("M{n:08}{}", "X".repeat(n % 2000));
                    raw(
                        &addr,
                        format!("{method} /nope HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes(),
                    )
                    .await;
                    continue;
                }
            };
            if let Ok(r) = client.post(&url).body(body).send().await {
                let _ = r.bytes().await;
            }
        }
        n
    }

    /// Sockets that idle, or stop halfway through a header or a body,
    /// 12 at a time, until `until`.
    async fn slow(base: String, until: Instant) {
        let addr = base.trim_start_matches("http://").to_string();
        let half_body =
            b"POST /v1/retrieve HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\n{\"tree\":";
        while Instant::now() < until {
            let batch = (0..12).map(|i| {
                let addr = addr.clone();
                async move {
                    let bytes: &[u8] = match i % 3 {
                        0 => b"",
                        1 => b"POST /v1/retrieve HTTP/1.1\r\nhost:",
                        _ => half_body,
                    };
                    raw(&addr, bytes).await;
                }
            });
            futures::future::join_all(batch).await;
        }
    }

    pub(super) fn run(
        server_rt: &tokio::runtime::Runtime,
        clients_rt: &tokio::runtime::Runtime,
        tree: &Path,
        queries: &[String],
    ) {
        let secs: f64 = std::env::var("TREENAV_SOAK_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(600.0);
        println!(
            "3. soak: {secs} s of mixed valid, invalid, oversized and slow traffic, RSS every 10 s"
        );
        let base = start(
            server_rt,
            tree,
            JudgeOptions::default(),
            64,
            NavigatorConfig::default().strategy(Strategy::BestFirst),
        );
        let until = Instant::now() + Duration::from_secs_f64(secs);
        let samples = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sampler = {
            let samples = samples.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                while Instant::now() < until {
                    if let Ok(mut s) = samples.lock() {
                        s.push((started.elapsed().as_secs_f64(), rss_mib()));
                    }
                    std::thread::sleep(Duration::from_secs(10));
                }
            })
        };
        // `TREENAV_SOAK_MIX` (default `valid,invalid,slow`) picks the kinds
        // of traffic, to tell which one grows the RSS.
        let mix = std::env::var("TREENAV_SOAK_MIX").unwrap_or_else(|_| "valid,invalid,slow".into());
        let kinds: Vec<&str> = mix.split(',').map(str::trim).collect();
        let valid_clients = if kinds.contains(&"valid") { 8 } else { 0 };
        let invalid_clients = if kinds.contains(&"invalid") { 4 } else { 0 };
        let slow_on = kinds.contains(&"slow");
        println!("  traffic: {valid_clients} valid clients, {invalid_clients} invalid, slow sockets {slow_on}");
        let (valid_runs, invalid_sent) = clients_rt.block_on(async {
            let valid = (0..valid_clients).map(|_| valid(base.clone(), queries.to_vec(), until));
            let invalid = (0..invalid_clients).map(|i| invalid(base.clone(), until, i * 1000));
            let slow = async {
                if slow_on {
                    slow(base.clone(), until).await;
                }
            };
            let (v, i, ()) = tokio::join!(
                futures::future::join_all(valid),
                futures::future::join_all(invalid),
                slow
            );
            (v, i)
        });
        let _ = sampler.join();
        let (sent, failed) = valid_runs
            .iter()
            .fold((0, 0), |(s, f), (a, b)| (s + a, f + b));
        let samples = samples.lock().map(|s| s.clone()).unwrap_or_default();
        for (t, rss) in &samples {
            println!("  {t:>6.0} s  RSS {rss:>7.1} MiB");
        }
        let warm = samples.iter().find(|(t, _)| *t >= 60.0).or(samples.first());
        if let (Some((_, warm)), Some((_, last))) = (warm, samples.last()) {
            let growth = (last / warm - 1.0) * 100.0;
            println!(
                "  valid requests {sent}, failed {failed}; invalid and oversized sent ≈ {}; RSS after warm-up {warm:.1} MiB, at the end {last:.1} MiB: growth {growth:+.1}% (target ≤ 5%)",
                invalid_sent.iter().sum::<usize>()
            );
        }
    }
}

fn lexical(
    server_rt: &tokio::runtime::Runtime,
    clients_rt: &tokio::runtime::Runtime,
    tree: &Path,
    queries: &[String],
    secs: f64,
) {
    let limit: usize = std::env::var("TREENAV_BENCH_CONCURRENT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64);
    println!("1. lexical judge (in process), concurrency limit {limit}");
    let base = start(
        server_rt,
        tree,
        JudgeOptions::default(),
        limit,
        NavigatorConfig::default().strategy(Strategy::Levels),
    );
    clients_rt.block_on(drive(&base, queries, 32, 1000, 60.0, None));
    for clients in [1, 32, 64] {
        let run = clients_rt.block_on(drive(&base, queries, clients, usize::MAX, secs, None));
        run.print(&format!("{clients} clients, back to back"));
    }
    for rate in [300.0, 600.0] {
        let run = clients_rt.block_on(drive(&base, queries, 32, usize::MAX, secs, Some(rate)));
        run.print(&format!("32 clients offering {rate}/s"));
    }
    let before = rss_mib();
    let run = clients_rt.block_on(drive(&base, queries, 64, 10_000, 600.0, None));
    let after = rss_mib();
    run.print("10,000 more at 64 clients");
    println!(
        "  RSS {before:.1} MiB before, {after:.1} MiB after ({:+.1} MiB)\n",
        after - before
    );
}

fn slow_judge(
    server_rt: &tokio::runtime::Runtime,
    clients_rt: &tokio::runtime::Runtime,
    tree: &Path,
    queries: &[String],
    secs: f64,
) {
    println!("2. judge server answering after 50 ms (System One, on the same 2 cores), judge concurrency 1024");
    let (judge_base, load) =
        server_rt.block_on(support::scripted_systemone(Duration::from_millis(50)));
    let mut judge = JudgeOptions {
        backend: BackendOptions::Systemone(treenav::judge::SystemoneOptions {
            endpoint: judge_base,
            model: "scripted".into(),
            api_key_env: None,
            path: "/v1/systemone".into(),
        }),
        ..JudgeOptions::default()
    };
    judge.dispatch.concurrency = 1024;
    let strategies = [
        (
            "levels",
            NavigatorConfig::default().strategy(Strategy::Levels),
        ),
        (
            "best-first, judge budget 100",
            NavigatorConfig::default().strategy(Strategy::BestFirst),
        ),
    ];
    for (label, navigator) in strategies {
        let base = start(server_rt, tree, judge.clone(), 256, navigator);
        let (rounds, calls, judged) = critical_path(&base, clients_rt, &queries[0]);
        let critical_ms = rounds as f64 * 50.0;
        println!(
            "  {label}: {calls} judge calls and {judged} candidates per retrieval; critical path {rounds} rounds × 50 ms = {critical_ms:.0} ms"
        );
        for clients in [1, 64] {
            let run = clients_rt.block_on(drive(&base, queries, clients, usize::MAX, secs, None));
            run.print(&format!("{clients} clients"));
            println!(
                "  {:<28} p50 / critical path = {:.2}; judge calls in flight at most {}",
                "",
                run.p50_ms / critical_ms,
                load.peak.swap(0, Ordering::SeqCst)
            );
        }
    }
}

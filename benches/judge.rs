//! Decision-model benchmark: `cargo bench --bench judge [--features cross-encoder]`.
//!
//! 1. Dispatcher overhead per call against the in-process lexical backend:
//!    the backend alone, a judge call that misses the cache, one that hits it.
//! 2. Cross-encoder pairs per second at 64 and 128 tokens, batch 1 and 32
//!    (with the `cross-encoder` feature and fetched weights).
//! 3. `systemone` calls per second against a local `sparrow-decider`
//!    (pip install sparrow-decider==0.2.0) with 1, 4 and 16 calls in flight.

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};
use treenav::judge::{
    bm25_scores, BackendOptions, Candidate, DispatchOptions, Judge, JudgeOptions,
};

fn candidates(n: usize, words: usize, salt: usize) -> Vec<Candidate> {
    let vocab = [
        "insulin", "glucose", "cell", "protein", "gene", "tumor", "blood", "patients", "risk",
        "study", "mouse", "brain",
    ];
    (0..n)
        .map(|i| {
            let text: Vec<&str> = (0..words)
                .map(|w| vocab[(i * 7 + w * 3 + salt) % vocab.len()])
                .collect();
            Candidate::new(format!("c{i}"), text.join(" "))
        })
        .collect()
}

fn per_call_us(total: Duration, calls: usize) -> f64 {
    total.as_secs_f64() * 1e6 / calls as f64
}

async fn dispatcher_overhead() {
    let query = "insulin glucose blood";
    let n_calls = 2000;
    let sets: Vec<Vec<Candidate>> = (0..n_calls).map(|i| candidates(50, 30, i)).collect();
    let t = Instant::now();
    for c in &sets {
        std::hint::black_box(bm25_scores(query, c, 1.2, 0.75, None));
    }
    let raw = per_call_us(t.elapsed(), n_calls);
    let no_cache = Judge::new(&JudgeOptions {
        dispatch: DispatchOptions {
            cache_capacity: 0,
            ..DispatchOptions::default()
        },
        ..JudgeOptions::default()
    })
    .expect("judge");
    let t = Instant::now();
    for c in &sets {
        std::hint::black_box(no_cache.judge(query, c).await.expect("judge"));
    }
    let miss = per_call_us(t.elapsed(), n_calls);
    let cached = Judge::new(&JudgeOptions::default()).expect("judge");
    for c in &sets {
        cached.judge(query, c).await.expect("warm");
    }
    let t = Instant::now();
    for c in &sets {
        std::hint::black_box(cached.judge(query, c).await.expect("judge"));
    }
    let hit = per_call_us(t.elapsed(), n_calls);
    println!(
        "## Dispatcher overhead (lexical backend, 50 candidates × 30 words, {n_calls} calls)\n"
    );
    println!("| path | µs per call | vs backend alone |\n|---|---|---|");
    println!("| backend alone (bm25_scores) | {raw:.1} | 1.00× |");
    println!(
        "| judge, cache miss (cache off) | {miss:.1} | {:.2}× (overhead {:.1} µs) |",
        miss / raw,
        miss - raw
    );
    println!("| judge, cache hit | {hit:.1} | {:.2}× |\n", hit / raw);
}

#[cfg(feature = "cross-encoder")]
async fn cross_encoder() {
    let dir = treenav::judge::default_model_dir();
    if !dir.join("model.onnx").is_file() || !treenav::judge::default_ort_library().is_file() {
        println!("cross-encoder: SKIPPED (run scripts/fetch-models.sh)\n");
        return;
    }
    println!(
        "## Cross-encoder pairs per second (ms-marco MiniLM-L-12 int8, ONNX Runtime, 2 threads)\n"
    );
    println!("| tokens per pair | batch | pairs/s |\n|---|---|---|");
    for tokens in [64usize, 128] {
        for batch in [1usize, 32] {
            let judge = Judge::new(&JudgeOptions {
                backend: BackendOptions::CrossEncoder {
                    model_dir: None,
                    ort_library: None,
                    threads: 2,
                    batch_size: batch,
                    max_tokens: tokens,
                },
                dispatch: DispatchOptions {
                    cache_capacity: 0,
                    ..DispatchOptions::default()
                },
            })
            .expect("cross-encoder");
            // Texts long enough to be truncated to exactly `tokens` per pair.
            let c = candidates(64, tokens, batch + tokens);
            judge
                .judge("insulin glucose", &c[..4])
                .await
                .expect("warm-up");
            let t = Instant::now();
            let mut pairs = 0;
            while t.elapsed() < Duration::from_secs(6) {
                judge.judge("insulin glucose", &c).await.expect("judge");
                pairs += c.len();
            }
            println!(
                "| {tokens} | {batch} | {:.0} |",
                pairs as f64 / t.elapsed().as_secs_f64()
            );
        }
    }
    println!();
}

#[cfg(not(feature = "cross-encoder"))]
async fn cross_encoder() {
    println!("cross-encoder: SKIPPED (build with --features cross-encoder)\n");
}

async fn systemone_throughput() {
    let Some(server) = support::start(
        "sparrow-decider",
        &["serve", "--port", "{port}"],
        "pip install sparrow-decider==0.2.0",
    ) else {
        println!("systemone: SKIPPED (sparrow-decider not installed)");
        return;
    };
    println!("## systemone calls per second (local sparrow-decider, 20 candidates per call)\n");
    println!("| in flight | calls/s | ms per call |\n|---|---|---|");
    for in_flight in [1usize, 4, 16] {
        let judge = Arc::new(
            Judge::new(&JudgeOptions {
                backend: BackendOptions::Systemone {
                    endpoint: server.base.clone(),
                    model: "sparrow-nano-general-v1.1".into(),
                    api_key_env: None,
                    path: "/v1/systemone".into(),
                },
                dispatch: DispatchOptions {
                    concurrency: in_flight,
                    cache_capacity: 0,
                    ..DispatchOptions::default()
                },
            })
            .expect("judge"),
        );
        let total = 160;
        let t = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..total {
            let judge = judge.clone();
            tasks.spawn(async move {
                judge
                    .judge("insulin glucose", &candidates(20, 20, i))
                    .await
                    .map(|_| ())
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.expect("task").expect("call");
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "| {in_flight} | {:.0} | {:.1} |",
            total as f64 / secs,
            secs * 1000.0 / total as f64 * in_flight as f64
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        dispatcher_overhead().await;
        cross_encoder().await;
        systemone_throughput().await;
    });
}

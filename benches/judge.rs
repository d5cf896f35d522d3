//! Decision-model benchmark: `cargo bench --bench judge [--features cross-encoder]`.
//!
//! 1. Dispatcher overhead per call against the in-process lexical backend:
//!    the backend alone, a judge call that misses the cache, one that hits it.
//! 2. Cross-encoder pairs per second at 64, 128 and 256 tokens (real
//!    tokenized lengths reported), batch 1 and 32, beside a Python ONNX
//!    Runtime reference on the same model file, tokenizer and pairs (with the
//!    `cross-encoder` feature, `scripts/fetch-models.sh`, and for the
//!    reference `scripts/fetch-models.sh --reference`; skipped with a message
//!    otherwise).
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
/// A query and 64 real texts: SciFact's first abstracts (long enough to be
/// truncated at 256 tokens), else generated sentences.
fn real_pairs() -> (String, Vec<String>) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/scifact");
    let texts: Vec<String> = std::fs::read_to_string(dir.join("corpus.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_string))
        .filter(|t| t.split_whitespace().count() >= 220)
        .take(64)
        .collect();
    if texts.len() == 64 {
        let query = "Insulin resistance increases the risk of type 2 diabetes.".to_string();
        return (query, texts);
    }
    let texts = candidates(64, 300, 1).into_iter().map(|c| c.text).collect();
    ("insulin glucose blood".to_string(), texts)
}

#[cfg(feature = "cross-encoder")]
/// The texts as a bench shape: `uniform`, every text long enough to be
/// truncated at the limit; `mixed`, texts cut to word counts spread from
/// about a fifth of the limit to past it, as retrieved passages are.
fn shaped(texts: &[String], limit: usize, mixed: bool) -> Vec<String> {
    if !mixed {
        return texts.to_vec();
    }
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            // ≈ 1.4 tokens a word in scientific English; fractions 0.2 … 1.1.
            let fraction = 0.2 + 0.9 * ((i * 37) % 64) as f64 / 63.0;
            let words = ((limit as f64 / 1.4) * fraction).round().max(1.0) as usize;
            t.split_whitespace()
                .take(words)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Our cross-encoder judge at one setting, with cache off.
#[cfg(feature = "cross-encoder")]
fn our_judge(tokens: usize, batch: usize) -> Judge {
    Judge::new(&JudgeOptions {
        backend: BackendOptions::CrossEncoder(treenav::judge::CrossEncoderOptions {
            model_dir: None,
            ort_library: None,
            threads: 2,
            batch_size: batch,
            max_tokens: tokens,
        }),
        dispatch: DispatchOptions {
            cache_capacity: 0,
            ..DispatchOptions::default()
        },
    })
    .expect("cross-encoder")
}

/// pairs/s of `judge` over `pairs` for about `secs` seconds, and the mean
/// tokens per pair it reports (after truncation, before padding).
#[cfg(feature = "cross-encoder")]
async fn ours(judge: &Judge, query: &str, pairs: &[Candidate], secs: f64) -> (f64, f64) {
    let warm = judge.judge(query, pairs).await.expect("warm-up");
    let real = warm.usage.input_tokens as f64 / pairs.len() as f64;
    let t = Instant::now();
    let mut done = 0;
    while t.elapsed().as_secs_f64() < secs {
        judge.judge(query, pairs).await.expect("judge");
        done += pairs.len();
    }
    (done as f64 / t.elapsed().as_secs_f64(), real)
}

/// The Python reference (`scripts/ort_reference.py`): one process with the
/// session loaded, measuring one spec per line.
#[cfg(feature = "cross-encoder")]
struct Reference {
    child: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
    version: String,
}

#[cfg(feature = "cross-encoder")]
impl Reference {
    /// Starts it, or says why it cannot run.
    fn start() -> Result<Reference, String> {
        use std::process::{Command, Stdio};
        let cache = std::env::var_os("TREENAV_CACHE_DIR")
            .map(std::path::PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cache/treenav"))
            })
            .ok_or("no HOME")?;
        let python = cache.join("pyref/bin/python");
        if !python.is_file() {
            return Err("run bash scripts/fetch-models.sh --reference".into());
        }
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ort_reference.py");
        let mut child = Command::new(&python)
            .arg(&script)
            .arg(treenav::judge::default_model_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", python.display()))?;
        let out = std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Reference {
            child,
            out,
            version: String::new(),
        })
    }

    /// pairs/s and mean tokens per pair of the reference on these pairs.
    fn measure(
        &mut self,
        query: &str,
        texts: &[String],
        tokens: usize,
        batch: usize,
        secs: f64,
    ) -> Result<(f64, f64), String> {
        use std::io::{BufRead, Write};
        let spec = serde_json::json!({
            "max_tokens": tokens, "batch": batch, "seconds": secs, "query": query, "texts": texts,
        });
        let stdin = self.child.stdin.as_mut().ok_or("no stdin")?;
        writeln!(stdin, "{spec}").map_err(|e| e.to_string())?;
        stdin.flush().map_err(|e| e.to_string())?;
        let mut line = String::new();
        self.out.read_line(&mut line).map_err(|e| e.to_string())?;
        let v: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| format!("reference output: {e}"))?;
        self.version = v["ort_version"].as_str().unwrap_or("?").to_string();
        Ok((
            v["pairs_per_s"].as_f64().unwrap_or(0.0),
            v["mean_tokens"].as_f64().unwrap_or(0.0),
        ))
    }
}

#[cfg(feature = "cross-encoder")]
impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(feature = "cross-encoder")]
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// One row: ours and the reference alternating, three 2-second windows each.
#[cfg(feature = "cross-encoder")]
async fn row(
    reference: &mut Result<Reference, String>,
    query: &str,
    texts: &[String],
    tokens: usize,
    batch: usize,
    shape: &str,
) {
    let pairs: Vec<Candidate> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| Candidate::new(format!("c{i}"), t.clone()))
        .collect();
    let judge = our_judge(tokens, batch);
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    let (mut real, mut py_real) = (0.0, 0.0);
    let mut failed = None;
    for _ in 0..3 {
        let (rate, r) = ours(&judge, query, &pairs, 2.0).await;
        mine.push(rate);
        real = r;
        if let Ok(reference) = reference.as_mut() {
            match reference.measure(query, texts, tokens, batch, 2.0) {
                Ok((rate, r)) => {
                    theirs.push(rate);
                    py_real = r;
                }
                Err(e) => failed = Some(e),
            }
        }
    }
    let rate = median(mine);
    if theirs.is_empty() {
        let why = failed
            .or_else(|| reference.as_ref().err().cloned())
            .unwrap_or_default();
        println!(
            "| {tokens} | {shape} | {real:.0} / — | {batch} | {rate:.1} | SKIPPED ({why}) | — |"
        );
    } else {
        let py = median(theirs);
        println!(
            "| {tokens} | {shape} | {real:.0} / {py_real:.0} | {batch} | {rate:.1} | {py:.1} | {:.2}× |",
            rate / py.max(1e-9)
        );
    }
}

#[cfg(feature = "cross-encoder")]
async fn cross_encoder() {
    let dir = treenav::judge::default_model_dir();
    if !dir.join("model.onnx").is_file() || !treenav::judge::default_ort_library().is_file() {
        println!("cross-encoder: SKIPPED (run scripts/fetch-models.sh)\n");
        return;
    }
    let (query, texts) = real_pairs();
    println!(
        "## Cross-encoder pairs per second (ms-marco MiniLM-L-12 int8, 2 threads), beside a Python ONNX Runtime reference\n"
    );
    println!("Pairs: a query and {} texts; `uniform`: every pair truncated at the token limit; `mixed`: texts cut to lengths spread up to the limit, as retrieved passages are. Reference: a plain `onnxruntime` session (default options) on the same model file, tokenizer and pairs, the tokenizer padding each batch (in input order) to its longest pair (scripts/ort_reference.py). Each figure is the median of three 2-second windows, treenav's and the reference's alternating. Batch 16 is the CLI's.\n", texts.len());
    println!("| token limit | pairs | real tokens/pair (ours / Python) | batch | treenav pairs/s | Python pairs/s | ratio |\n|---|---|---|---|---|---|---|");
    let mut reference = Reference::start();
    for mixed in [false, true] {
        let shape = if mixed { "mixed" } else { "uniform" };
        for tokens in [64usize, 128, 256] {
            let texts = shaped(&texts, tokens, mixed);
            for batch in [1usize, 16, 32] {
                row(&mut reference, &query, &texts, tokens, batch, shape).await;
            }
        }
    }
    println!(
        "\nONNX Runtime loaded by treenav: {}",
        treenav::judge::onnx_runtime_build().unwrap_or("unknown")
    );
    if let Ok(r) = &reference {
        println!("Python onnxruntime: {}", r.version);
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
                backend: BackendOptions::Systemone(treenav::judge::SystemoneOptions {
                    endpoint: server.base.clone(),
                    model: "sparrow-nano-general-v1.1".into(),
                    api_key_env: None,
                    path: "/v1/systemone".into(),
                }),
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

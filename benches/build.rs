//! Build-time benchmark: `cargo bench --bench build`.
//!
//! Builds the tree (default tfidf embedder, extractive summaries) for SciFact
//! (when `../shared/data/scifact` is present) and for generated corpora of
//! 10,000 and 100,000 documents, each in a fresh child process so that peak
//! memory (VmHWM) belongs to that build alone. Prints a table, the growth of
//! time between sizes and the exponent b of time ≈ N^b.
//! `TREENAV_BENCH_SIZES=10000,100000` changes the generated sizes;
//! `TREENAV_BENCH_CLUSTERING=flat` builds with the original construction.
//!
//! Each saved tree is then opened by another fresh process, as `treenav
//! query` opens it: load, navigator with the lexical judge, first query
//! (the cold-start figure), then the p50 of 50 further queries (document
//! titles) and that process's peak memory; three times, the table showing
//! the medians. The same 50 queries then run the default query's path, the
//! embedding judge exploring the stored vectors (a generated tree's TF-IDF
//! vectors stand in for bge-small's: the search reads as many rows), with
//! the vectors read per query; with `--features onnx` and the model files,
//! bge-small's query embedding is timed apart (add the two p50s for the
//! default query's). The bench uses the `treenav` binary's allocator (jemalloc).

/// The allocator of the `treenav` binary, so that builds and opens cost
/// here what they cost there.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[path = "support/synthetic.rs"]
mod synthetic;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use synthetic::generate;
use treenav::build::{build_tree, TreeParams};
use treenav::build::{Summarizer, SummarizerOptions};
use treenav::corpus::{load, Format, LoadOptions};
use treenav::tree::{Embedder, EmbedderOptions, NoProgress};

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|kb| kb.parse::<f64>().ok())
            })
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

/// Child mode: one build, one JSON line on stdout.
fn child(path: &Path) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let format = Format::detect(path)?;
    let corpus = load(path, format, &LoadOptions::default())?;
    let docs = corpus.documents.len();
    let passages = corpus.passage_count();
    let load_s = t0.elapsed().as_secs_f64();
    // TREENAV_BENCH_CLUSTERING=flat measures the original construction.
    let clustering =
        std::env::var("TREENAV_BENCH_CLUSTERING").unwrap_or_else(|_| "top-down".into());
    let params = TreeParams::default()
        .clustering(clustering.parse()?)
        .check()?;
    let embedder = Embedder::new(&EmbedderOptions::default(), params.seed())?;
    let summarizer = Summarizer::new(&SummarizerOptions::Extractive)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let t1 = Instant::now();
    let tree = rt.block_on(build_tree(
        corpus,
        "bench",
        &params,
        &embedder,
        &summarizer,
        &NoProgress,
    ))?;
    let build_s = t1.elapsed().as_secs_f64();
    let out = PathBuf::from(std::env::var_os("TREENAV_BENCH_OUT").unwrap_or_default());
    let t2 = Instant::now();
    treenav::tree::file::save(&tree, &out)?;
    let save_s = t2.elapsed().as_secs_f64();
    drop(tree);
    let t3 = Instant::now();
    let loaded = treenav::tree::file::load(&out)?;
    let load_tree_s = t3.elapsed().as_secs_f64();
    let clusters = loaded
        .level_stats()
        .iter()
        .filter(|l| l.kind == "cluster")
        .map(|l| l.nodes)
        .sum::<usize>();
    println!(
        "{}",
        serde_json::json!({
            "documents": docs, "passages": passages, "clusters": clusters,
            "ingest_s": load_s, "build_s": build_s, "save_s": save_s, "load_tree_s": load_tree_s,
            "total_s": load_s + build_s + save_s, "peak_rss_mib": peak_rss_mib(),
            "file_mib": mib(&out),
            "texts_mib": mib(&treenav::tree::file::side_files(&out)[0]),
            "lexical_mib": mib(&treenav::tree::file::side_files(&out)[1]),
        })
    );
    Ok(())
}

/// Cold opens per tree; the table shows their medians.
const OPENS: usize = 3;

fn mib(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(0.0, |m| m.len() as f64 / 1_048_576.0)
}

/// Open mode: a cold process opens a tree and queries it with the lexical
/// judge, as `treenav query` does; one JSON line on stdout.
fn open(path: &Path) -> anyhow::Result<()> {
    use std::sync::Arc;
    use treenav::judge::{Judge, JudgeOptions};
    use treenav::navigator::{Navigator, NavigatorConfig};
    use treenav::tree::NodeKind;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // TREENAV_BENCH_FIRST=embedding: the first query is the default's
    // search (the embedding judge), else the lexical judge's.
    let first_embedding = std::env::var("TREENAV_BENCH_FIRST").is_ok_and(|v| v == "embedding");
    let t0 = Instant::now();
    let tree = Arc::new(treenav::tree::file::load(path)?);
    let load_s = t0.elapsed().as_secs_f64();
    let navigator = if first_embedding {
        embedding_navigator(&tree)?
    } else {
        let judge = Judge::new(&JudgeOptions::default())?;
        let config = NavigatorConfig::default()
            .strategy(treenav::navigator::Strategy::Levels)
            .check()?;
        Navigator::new(tree.clone(), judge, config)?
    };
    let ready_s = t0.elapsed().as_secs_f64();
    let title = |doc: treenav::tree::NodeId| match tree.get(doc).map(|n| &n.kind) {
        Some(NodeKind::Document { title, .. }) => title.clone(),
        _ => String::new(),
    };
    let documents: Vec<_> = tree.documents().collect();
    let first = title(documents[0]);
    rt.block_on(navigator.retrieve(&first))?;
    let first_query_s = t0.elapsed().as_secs_f64();
    let step = (documents.len() / 50).max(1);
    let mut times: Vec<f64> = Vec::new();
    for doc in documents.iter().step_by(step).take(50) {
        let t = Instant::now();
        rt.block_on(navigator.retrieve(&title(*doc)))?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let queries: Vec<String> = documents
        .iter()
        .step_by(step)
        .take(50)
        .map(|d| title(*d))
        .collect();
    let (embedding_p50_ms, embedding_p95_ms, vectors_per_query) =
        rt.block_on(embedding_path(&tree, &queries))?;
    println!(
        "{}",
        serde_json::json!({
            "first": if first_embedding { "embedding" } else { "lexical" },
            "load_s": load_s, "ready_s": ready_s, "open_first_query_s": first_query_s,
            "p50_ms": median(&mut times),
            "p95_ms": percentile(&mut times, 0.95),
            "embedding_p50_ms": embedding_p50_ms,
            "embedding_p95_ms": embedding_p95_ms,
            "vectors_per_query": vectors_per_query,
            "query_embed_p50_ms": rt.block_on(query_embed_p50_ms(&queries)),
            "open_rss_mib": peak_rss_mib(),
        })
    );
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The value at fraction `q` of the sorted values (nearest rank).
fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = ((v.len() as f64 * q).ceil() as usize).saturating_sub(1);
    v.get(rank).copied().unwrap_or(f64::NAN)
}

/// The default query's path, the embedding judge exploring the tree's
/// stored vectors (the explore budget's default): p50 and p95 ms and
/// vectors read per query. A generated tree has TF-IDF vectors, which stand in for
/// bge-small's (`tfidf_vectors`): the search reads and scores the same
/// number of rows whatever the model; the query's own embedding is timed
/// apart ([`query_embed_p50_ms`]).
/// A navigator searching as the default does, by the embedding judge
/// (TF-IDF rows standing in for bge-small's on a TF-IDF tree).
fn embedding_navigator(
    tree: &std::sync::Arc<treenav::tree::Tree>,
) -> anyhow::Result<treenav::navigator::Navigator> {
    use treenav::judge::{BackendOptions, Judge, JudgeOptions};
    use treenav::navigator::{BestFirstConfig, Navigator, NavigatorConfig, Strategy};
    let judge = Judge::new(&JudgeOptions {
        backend: BackendOptions::Embedding(treenav::judge::EmbeddingOptions {}),
        ..JudgeOptions::default()
    })?;
    let config = NavigatorConfig::default()
        .strategy(Strategy::BestFirst)
        .best_first(BestFirstConfig {
            tfidf_vectors: true,
            ..BestFirstConfig::default()
        })
        .check()?;
    Ok(Navigator::new(tree.clone(), judge, config)?)
}

async fn embedding_path(
    tree: &std::sync::Arc<treenav::tree::Tree>,
    queries: &[String],
) -> anyhow::Result<(f64, f64, f64)> {
    let navigator = embedding_navigator(tree)?;
    if !navigator.embeds_queries() {
        return Ok((f64::NAN, f64::NAN, f64::NAN));
    }
    let (mut times, mut vectors) = (Vec::new(), 0u64);
    for q in queries {
        let t = Instant::now();
        let found = navigator.retrieve(q).await?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        vectors += found.trace.usage.vectors_scored;
    }
    Ok((
        median(&mut times),
        percentile(&mut times, 0.95),
        vectors as f64 / queries.len().max(1) as f64,
    ))
}

/// bge-small's in-process query embedding, p50 ms over `queries` (NaN
/// without `--features onnx` or the model files).
async fn query_embed_p50_ms(queries: &[String]) -> f64 {
    #[cfg(feature = "onnx")]
    {
        use treenav::tree::{default_bge_dir, Embedder, EmbedderOptions, NoProgress};
        if !default_bge_dir().join("model.onnx").is_file() {
            return f64::NAN;
        }
        let options = EmbedderOptions::BgeSmall {
            model_dir: None,
            ort_library: None,
            batch_size: 1,
            max_tokens: 256,
            threads: 2,
        };
        let Ok(embedder) = Embedder::new(&options, 42) else {
            return f64::NAN;
        };
        let mut times = Vec::new();
        for q in queries {
            let t = Instant::now();
            if embedder.embed(vec![q.clone()], &NoProgress).await.is_err() {
                return f64::NAN;
            }
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        median(&mut times)
    }
    #[cfg(not(feature = "onnx"))]
    {
        let _ = queries;
        f64::NAN
    }
}

/// Runs this benchmark again as a child with `env` set; its last stdout
/// line, as JSON.
fn run_child(path: &Path, env: &[(&str, &Path)]) -> anyhow::Result<serde_json::Value> {
    let exe = std::env::current_exe()?;
    let mut command = Command::new(exe);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output()?;
    if !out.status.success() {
        anyhow::bail!(
            "build of {} failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let line = String::from_utf8_lossy(&out.stdout);
    let last = line.lines().last().unwrap_or("{}");
    Ok(serde_json::from_str(last)?)
}

fn main() -> anyhow::Result<()> {
    if let Some(path) = std::env::var_os("TREENAV_BENCH_CHILD") {
        return child(Path::new(&path));
    }
    if let Some(path) = std::env::var_os("TREENAV_BENCH_OPEN") {
        return open(Path::new(&path));
    }
    if std::env::args().any(|a| a == "--list") {
        return Ok(()); // `cargo test --benches` asks for a list
    }
    // TREENAV_BENCH_GENERATE=N only writes the generated corpus of N
    // documents, `gen{N}.jsonl` in TREENAV_BENCH_KEEP (else the current
    // folder): the input of docs/scale.md's split builds.
    if let Ok(n) = std::env::var("TREENAV_BENCH_GENERATE") {
        let n: usize = n.trim().parse()?;
        let dir = std::env::var_os("TREENAV_BENCH_KEEP")
            .map_or_else(|| PathBuf::from("."), PathBuf::from);
        std::fs::create_dir_all(&dir)?;
        let p = dir.join(format!("gen{n}.jsonl"));
        generate(n, &p)?;
        println!("{}", p.display());
        return Ok(());
    }
    let sizes: Vec<usize> = std::env::var("TREENAV_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000]);
    let dir = tempfile::tempdir()?;
    // TREENAV_BENCH_KEEP=DIR keeps the generated corpora there.
    let keep = std::env::var_os("TREENAV_BENCH_KEEP").map(PathBuf::from);
    let gen_dir = keep.clone().unwrap_or_else(|| dir.path().to_path_buf());
    std::fs::create_dir_all(&gen_dir)?;
    let mut runs: Vec<(String, PathBuf)> = Vec::new();
    let scifact = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/scifact");
    if scifact.exists() {
        runs.push(("scifact".into(), scifact));
    } else {
        eprintln!("SKIPPED scifact: {} is absent", scifact.display());
    }
    for n in &sizes {
        let p = gen_dir.join(format!("gen{n}.jsonl"));
        eprintln!("generating {n} documents …");
        generate(*n, &p)?;
        runs.push((format!("generated-{n}"), p));
    }
    println!("| corpus | documents | passages | clusters | ingest s | build s | save s | peak RSS MiB | tree / texts / lexical MiB | open + first query s | open RSS MiB | p50 query ms (lexical) | p50 ms (embedding judge) | vectors/q | bge-small query embed p50 ms |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut points: Vec<(f64, f64)> = Vec::new();
    let mut p50s: Vec<(f64, f64)> = Vec::new();
    for (name, path) in &runs {
        eprintln!("building {name} …");
        let out = gen_dir.join(format!("{name}.tree"));
        let r = run_child(
            path,
            &[("TREENAV_BENCH_CHILD", path), ("TREENAV_BENCH_OUT", &out)],
        )?;
        eprintln!("opening {name} …");
        // Three cold opens, each figure their median: one open on a shared
        // 2-core machine varies by ±20%.
        let opens: Vec<serde_json::Value> = (0..OPENS)
            .map(|_| run_child(&out, &[("TREENAV_BENCH_OPEN", &out)]))
            .collect::<anyhow::Result<_>>()?;
        let median = |k: &str| {
            let mut v: Vec<f64> = opens.iter().filter_map(|o| o[k].as_f64()).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied()
        };
        let f = |k: &str| r[k].as_f64().or_else(|| median(k)).unwrap_or(f64::NAN);
        println!(
            "| {name} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.0} | {:.1} / {:.1} / {:.1} | {:.3} | {:.0} | {:.1} | {:.1} | {:.0} | {:.1} |",
            r["documents"],
            r["passages"],
            r["clusters"],
            f("ingest_s"),
            f("build_s"),
            f("save_s"),
            f("peak_rss_mib"),
            f("file_mib"),
            f("texts_mib"),
            f("lexical_mib"),
            f("open_first_query_s"),
            f("open_rss_mib"),
            f("p50_ms"),
            f("embedding_p50_ms"),
            f("vectors_per_query"),
            f("query_embed_p50_ms"),
        );
        points.push((f("documents"), f("total_s")));
        p50s.push((f("documents"), f("p50_ms")));
    }
    for w in p50s.windows(2) {
        let ((n0, q0), (n1, q1)) = (w[0], w[1]);
        if n1 > n0 {
            println!("p50 query {n0:.0} → {n1:.0} documents: ×{:.2}", q1 / q0);
        }
    }
    for w in points.windows(2) {
        let ((n0, t0), (n1, t1)) = (w[0], w[1]);
        if n1 > n0 {
            println!(
                "growth {n0:.0} → {n1:.0} documents: time ×{:.1} for ×{:.1} documents (time ≈ N^{:.2})",
                t1 / t0,
                n1 / n0,
                (t1 / t0).ln() / (n1 / n0).ln()
            );
        }
    }
    Ok(())
}

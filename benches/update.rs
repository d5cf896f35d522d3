//! Updates without a rebuild, measured against the build in the same
//! process: adding 1% of a tree, removing 1,000 documents, and opening a
//! tree with its delta pending against opening it compacted.
//!
//! `cargo bench --bench update` (100,000 synthetic documents, tfidf);
//! `TREENAV_BENCH_SIZES=10000` changes the size. Prints one table row per
//! size and the ratios the targets are stated in.

#[path = "support/synthetic.rs"]
mod synthetic;

use std::path::Path;
use std::time::Instant;
use treenav::build::{build_tree, update, TreeParams};
use treenav::build::{Summarizer, SummarizerOptions};
use treenav::corpus::{load_str, Format, LoadOptions};
use treenav::tree::{file, Embedder, EmbedderOptions, NoProgress};

/// Opens per measurement; the median is reported.
const OPENS: usize = 5;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn open_s(path: &Path) -> anyhow::Result<f64> {
    let mut times = Vec::new();
    for _ in 0..OPENS {
        let t = Instant::now();
        let tree = file::load(path)?;
        times.push(t.elapsed().as_secs_f64());
        drop(tree);
    }
    Ok(median(times))
}

fn run(n: usize, dir: &Path, rt: &tokio::runtime::Runtime) -> anyhow::Result<()> {
    let added = n / 100;
    let all = dir.join(format!("all-{n}.jsonl"));
    synthetic::generate(n + added, &all)?;
    let text = std::fs::read_to_string(&all)?;
    let lines: Vec<&str> = text.lines().collect();
    let base = load_str(
        &lines[..n].join("\n"),
        "base.jsonl",
        Format::Beir,
        &LoadOptions::default(),
    )?;
    let more = load_str(
        &lines[n..].join("\n"),
        "more.jsonl",
        Format::Beir,
        &LoadOptions::default(),
    )?;
    let path = dir.join(format!("t{n}.tree"));
    let params = TreeParams::default().check()?;
    let embedder = Embedder::new(&EmbedderOptions::default(), params.seed())?;
    let summarizer = Summarizer::new(&SummarizerOptions::Extractive)?;
    let t = Instant::now();
    let tree = rt.block_on(build_tree(
        base,
        "bench",
        &params,
        &embedder,
        &summarizer,
        &NoProgress,
    ))?;
    file::save(&tree, &path)?;
    let build_save = t.elapsed().as_secs_f64();
    drop(tree);
    let open_built = open_s(&path)?;

    let t = Instant::now();
    rt.block_on(update::add(&path, more, None, &NoProgress))?;
    let add_s = t.elapsed().as_secs_f64();
    let ids: Vec<String> = (0..1000.min(n / 2))
        .map(|i| format!("g{}", i * 2))
        .collect();
    let t = Instant::now();
    rt.block_on(update::remove(&path, &ids, None))?;
    let remove_s = t.elapsed().as_secs_f64();
    let open_delta = open_s(&path)?;
    let delta_mib = std::fs::metadata(update::delta_path(&path))?.len() as f64 / 1_048_576.0;
    let t = Instant::now();
    update::compact(&path)?;
    let compact_s = t.elapsed().as_secs_f64();
    let open_compacted = open_s(&path)?;
    println!(
        "| {n} | {build_save:.2} | {added} in {add_s:.2} ({:.1}%) | {} in {remove_s:.2} | {delta_mib:.1} | {open_built:.3} | {open_delta:.3} | {open_compacted:.3} (×{:.2}) | {compact_s:.2} |",
        100.0 * add_s / build_save,
        ids.len(),
        open_delta / open_compacted,
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let sizes: Vec<usize> = std::env::var("TREENAV_BENCH_SIZES")
        .unwrap_or_else(|_| "100000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let dir = tempfile::tempdir()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    println!("| documents | build + save s | added in s (% of build + save) | removed in s | delta MiB | open as built s | open with delta s | open compacted s (delta / compacted) | compact s |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for n in sizes {
        run(n, dir.path(), &rt)?;
    }
    Ok(())
}

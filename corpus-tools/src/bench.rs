//! `treenav bench`: the tree and the baselines over a benchmark's queries.

use crate::judge_args::JudgeArgs;
use crate::query::NavArgs;
use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use treenav::build::TreeParams;
use treenav::eval::bench::{self, BenchSetup, SystemKind};
use treenav::eval::dataset::{self, DatasetOptions};
use treenav::tree::{self, EmbedderOptions, SummarizerOptions};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DenseEmbedder {
    /// all-MiniLM-L6-v2 in-process (build with --features minilm).
    Minilm,
    /// bge-small-en in-process with ONNX Runtime (build with --features onnx).
    BgeSmall,
    /// An OpenAI-compatible POST /v1/embeddings server (--embed-endpoint, --embed-model).
    Openai,
}

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// The benchmark: SQuAD v1.1 JSON (gold = the question's paragraph) or a
    /// BEIR folder with corpus.jsonl, queries.jsonl and qrels/{split}.tsv.
    #[arg(long)]
    pub dataset: PathBuf,
    /// BEIR split (qrels/{split}.tsv).
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Systems to run, comma-separated: tree, bm25, dense, hybrid, rerank, flat.
    #[arg(long, value_delimiter = ',', default_value = "tree,bm25,rerank")]
    pub systems: Vec<String>,
    /// A tree file built from the same dataset (`treenav build DATASET -o
    /// T`). Without the flag, one is built in memory with the defaults.
    #[arg(long)]
    pub tree: Option<PathBuf>,
    /// Run a seeded random sample of N queries.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Seed of the sample (and of the tree built in memory).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// BM25 candidates the rerank system judges.
    #[arg(long, default_value_t = 100)]
    pub rerank_n: usize,
    /// Skip flat above this many passages.
    #[arg(long, default_value_t = 20_000)]
    pub flat_max_passages: usize,
    /// Skip bad corpus records (duplicate ids, malformed lines), listing
    /// them, instead of stopping at the first (as `treenav build --skip-bad`).
    #[arg(long)]
    pub skip_bad: bool,
    /// Leave out the queries whose ids FILE lists (one per line), before
    /// `--limit` samples: the queries a fit was made on, or another run's.
    #[arg(long, value_name = "FILE")]
    pub exclude_queries: Option<PathBuf>,
    /// Word budget of a passage when chunking BEIR documents.
    #[arg(long, default_value_t = treenav::corpus::chunk::DEFAULT_PASSAGE_WORDS)]
    pub passage_words: usize,
    /// Embedder of dense and hybrid.
    #[arg(long, value_enum)]
    pub embedder: Option<DenseEmbedder>,
    /// Embeddings server base URL (openai embedder).
    #[arg(long)]
    pub embed_endpoint: Option<String>,
    /// Embedding model name (openai embedder).
    #[arg(long)]
    pub embed_model: Option<String>,
    /// Model folder of the minilm embedder (default ~/.cache/treenav/models/all-MiniLM-L6-v2).
    #[arg(long)]
    pub embed_model_dir: Option<PathBuf>,
    /// Write every figure as JSON (schema treenav-bench/2) to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a TREC run per system (and per system and budget), the qrels
    /// and each query's metrics (JSONL) into this folder (made if missing),
    /// for trec_eval, ir_measures or ranx.
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Write every passage the tree system's exploration judged, with its
    /// evidence (the embedding judge's logit, BM25's ranks, the graph's
    /// support) and whether it is gold, as JSON lines: the input of
    /// `scripts/fit-fusion.py` (docs/calibration.md).
    #[arg(long, value_name = "FILE")]
    pub evidence: Option<PathBuf>,
    /// The sweep's `tree+fused` and `rerank+fused` rows at each of these
    /// fusion weights (default: --fusion, when above 0). They reorder the
    /// base rows' judgments, so a grid costs no judge call.
    #[arg(long, value_delimiter = ',')]
    pub fusion_weights: Vec<f64>,
    /// With --judge-budgets and the cross-encoder: score each (query,
    /// passage) pair once for all systems and budgets: a faster sweep whose
    /// figures agree with one without it up to the int8 model's padding
    /// noise; each system's seconds then count only the pairs no system
    /// before it scored.
    #[arg(long)]
    pub share_scores: bool,
    /// Keep the cross-encoder's scores in FILE between runs (implies
    /// --share-scores): read at the start when it exists, written after
    /// each system and budget. A pair scored before is not run again, and
    /// keeps its score from run to run. Refused if written for another
    /// model file or --max-tokens.
    #[arg(long, value_name = "FILE")]
    pub score_file: Option<PathBuf>,
    /// The analyzer of the bm25 baseline (and of hybrid and rerank, built
    /// on it): en-stem, simple or words (no stemming, as before tantivy).
    #[arg(long, default_value = "en-stem", value_parser = ["en-stem", "simple", "words"])]
    pub analyzer: String,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// Measure the pruner instead: retrieve --prune-depth chunks per
    /// question, sweep every strategy's knob, report recall retention
    /// against compression.
    #[arg(long)]
    pub prune: bool,
    /// Where the pruner's chunks come from.
    #[arg(long, value_enum, default_value_t = PruneRetriever::Bm25)]
    pub prune_retriever: PruneRetriever,
    /// Chunks retrieved per question for the pruner.
    #[arg(long, default_value_t = 15)]
    pub prune_depth: usize,
    /// The first k chunks always pass the pruner.
    #[arg(long, default_value_t = 1)]
    pub keep_top_k: usize,
    /// Write the pruner's curve as CSV here.
    #[arg(long)]
    pub curve_csv: Option<PathBuf>,
    /// Draw the curve as an SVG here: the pruner's (with --prune) or the
    /// judgment-budget sweep's (with --judge-budgets).
    #[arg(long)]
    pub curve_svg: Option<PathBuf>,
    /// Run tree (best-first), rerank (BM25 top N + rerank) and gar at each
    /// of these judgment budgets, e.g. 20,50,100,200: candidates shown to
    /// the judge per query, references and the shortlist rerank included.
    #[arg(long, value_delimiter = ',')]
    pub judge_budgets: Vec<usize>,
    /// Run the cascade's cheap stage alone (the embedding judge over the
    /// tree's vectors) at each of these exploration budgets, e.g.
    /// 50,100,300,1000: nDCG@10 and the vectors read per query, beside
    /// `dense` (every passage) when it runs. Needs a tree with vectors of
    /// an embedder available here.
    #[arg(long, value_delimiter = ',')]
    pub explore_budgets: Vec<usize>,
    /// Queries run at once (default: the cores for an in-process judge,
    /// the judge's concurrency for a remote one). Metric values do not
    /// depend on it; throughput (queries/s) does.
    #[arg(long)]
    pub concurrency: Option<usize>,
    #[command(flatten)]
    pub judge: JudgeArgs,
    #[command(flatten)]
    pub nav: NavArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PruneRetriever {
    /// Flat BM25.
    Bm25,
    /// The navigator over the tree (--tree, or built in memory).
    Tree,
}

fn embedder_options(args: &BenchArgs) -> Result<Option<EmbedderOptions>> {
    Ok(match args.embedder {
        None => None,
        Some(DenseEmbedder::Minilm) => Some(EmbedderOptions::Minilm {
            model_dir: args.embed_model_dir.clone(),
            batch_size: 32,
            max_tokens: 128,
        }),
        Some(DenseEmbedder::BgeSmall) => {
            Some(crate::build::bge_small(args.embed_model_dir.clone(), 32))
        }
        Some(DenseEmbedder::Openai) => Some(EmbedderOptions::Openai {
            endpoint: args
                .embed_endpoint
                .clone()
                .context("--embedder openai needs --embed-endpoint URL")?,
            model: args
                .embed_model
                .clone()
                .context("--embedder openai needs --embed-model NAME")?,
            api_key_env: None,
            batch_size: 32,
            timeout_secs: 120,
            concurrency: 4,
            cache_dir: None,
        }),
    })
}

/// Writes `text` to `path` through a temporary file in the same folder.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    treenav::files::atomic::write(path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

pub async fn run(args: &BenchArgs) -> Result<()> {
    // Check every setting before any work.
    let systems = systems_of(args)?;
    let navigator = navigator_of(args)?;
    if args.prune && !(args.judge_budgets.is_empty() && args.explore_budgets.is_empty()) {
        bail!("--prune and --judge-budgets or --explore-budgets measure different things: run them separately");
    }
    let judge = judge_of(args, &systems)?;
    // Ranges are checked once, by `BenchSetup::check`.
    let concurrency = args
        .concurrency
        .unwrap_or_else(|| default_concurrency(&judge));
    let embedder_opts = embedder_options(args)?;
    check_outputs(args)?;
    let data = load_data(args)?;
    let bars = crate::progress::Bars::new(args.quiet);
    let (tree, tree_source) =
        bench_tree(args, &systems, &data, embedder_opts.as_ref(), &bars).await?;
    if args.prune {
        return run_prune(args, data, tree, navigator, judge, &bars).await;
    }
    let embedder = match &embedder_opts {
        Some(o) => Some(tree::Embedder::new(o, args.seed)?),
        None => None,
    };
    let config = serde_json::json!({
        "judge": judge,
        "navigator": navigator,
        "tree": tree_source,
        "rerank_n": args.rerank_n,
        "rrf_k": 60.0,
        "flat_max_passages": args.flat_max_passages,
        "embedder": embedder.as_ref().map(|e| e.describe()),
        "passage_words": args.passage_words,
        "judge_budgets": args.judge_budgets,
        "explore_budgets": args.explore_budgets,
        "concurrency": concurrency,
        "share_scores": args.share_scores || args.score_file.is_some(),
    });
    let setup = BenchSetup {
        systems,
        judge,
        navigator,
        tree,
        embedder,
        rerank_n: args.rerank_n,
        flat_max_passages: args.flat_max_passages,
        rrf_k: 60.0,
        seed: args.seed,
        limit: args.limit,
        config,
        judge_budgets: args.judge_budgets.clone(),
        explore_budgets: args.explore_budgets.clone(),
        concurrency,
        run_dir: args.run_dir.clone(),
        evidence: args.evidence.clone(),
        fusion_weights: args.fusion_weights.clone(),
        share_scores: args.share_scores || args.score_file.is_some(),
        score_file: args.score_file.clone(),
        analyzer: args.analyzer.parse().map_err(anyhow::Error::msg)?,
    };
    let report = bench::run(&data, &setup, &bars).await?;
    bars.finish();
    if let Some(path) = &args.json {
        write_atomic(path, &crate::json_text(&report)?)?;
        if !args.quiet {
            eprintln!("wrote {}", path.display());
        }
    }
    say_if_no_evidence(args);
    if let Some(path) = &args.curve_svg {
        let title = format!("{} ({} judge)", data.name, setup.judge.backend.kind());
        crate::plot::sweep_svg(&report.judge_budgets, &title, path)?;
    }
    crate::emit(&report.markdown())
}

/// The navigator's settings; with `--evidence`, keeping each explored
/// passage's evidence.
fn navigator_of(args: &BenchArgs) -> Result<treenav::navigator::ValidConfig> {
    let mut navigator = args.nav.config()?;
    if args.evidence.is_some() {
        let mut best_first = navigator.best_first_settings().clone();
        best_first.keep_evidence = true;
        navigator = navigator.best_first(best_first);
    }
    Ok(navigator.check()?)
}

/// The systems named by `--systems`, each once, in the order given.
fn systems_of(args: &BenchArgs) -> Result<Vec<SystemKind>> {
    let mut systems: Vec<SystemKind> = Vec::new();
    for s in &args.systems {
        let kind: SystemKind = s.parse()?;
        if !systems.contains(&kind) {
            systems.push(kind);
        }
    }
    if args.evidence.is_some() && !systems.contains(&SystemKind::Tree) {
        bail!("--evidence writes what the tree system explored: add tree to --systems");
    }
    Ok(systems)
}

/// Says so when `--evidence` wrote no line (the tree system did not
/// explore with the embedding judge).
fn say_if_no_evidence(args: &BenchArgs) {
    let Some(path) = &args.evidence else { return };
    let empty = std::fs::metadata(path).map_or(true, |m| m.len() == 0);
    if empty && !args.quiet {
        eprintln!(
            "--evidence: {} has no line: the tree system did not explore with the embedding judge (a TF-IDF tree, or its model files are missing)",
            path.display()
        );
    }
}

/// The judge's options. Judged lists (rerank, flat, the budget sweep, the
/// pruning curve) have no tree for the embedding judge: they default to
/// lexical.
fn judge_of(args: &BenchArgs, systems: &[SystemKind]) -> Result<treenav::judge::JudgeOptions> {
    let lists = args.prune
        || !args.judge_budgets.is_empty()
        || systems
            .iter()
            .any(|s| matches!(s, SystemKind::Rerank | SystemKind::Flat));
    let judge_args = match lists {
        true => args
            .judge
            .for_lists("this bench (rerank, flat, --judge-budgets or --prune)")?,
        false => args.judge.clone(),
    };
    judge_args.options()
}

/// The output paths' folders exist (and `--run-dir` is made), before any work.
fn check_outputs(args: &BenchArgs) -> Result<()> {
    if args.curve_svg.is_some() && !args.prune && args.judge_budgets.is_empty() {
        bail!("--curve-svg needs --prune or --judge-budgets");
    }
    for path in [&args.curve_csv, &args.curve_svg, &args.evidence]
        .into_iter()
        .flatten()
    {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() && !dir.is_dir() {
                bail!("folder {} does not exist", dir.display());
            }
        }
    }
    if let Some(dir) = args.json.as_deref().and_then(Path::parent) {
        if !dir.as_os_str().is_empty() && !dir.is_dir() {
            bail!("--json: folder {} does not exist", dir.display());
        }
    }
    let outputs = [
        ("--json", &args.json),
        ("--curve-csv", &args.curve_csv),
        ("--curve-svg", &args.curve_svg),
        ("--run-dir", &args.run_dir),
        ("--score-file", &args.score_file),
        ("--evidence", &args.evidence),
    ];
    for (flag, output) in outputs {
        let Some(output) = output else { continue };
        crate::outputs::refuse_over(flag, output, "the dataset", &args.dataset)?;
        if let Some(tree) = &args.tree {
            crate::outputs::refuse_over(flag, output, "the tree", tree)?;
        }
    }
    if let Some(dir) = &args.run_dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--run-dir: cannot make {}", dir.display()))?;
    }
    Ok(())
}

/// The dataset, with what was skipped and its size said on stderr.
fn load_data(args: &BenchArgs) -> Result<dataset::Dataset> {
    let mut data = dataset::load(
        &args.dataset,
        &DatasetOptions {
            split: args.split.clone(),
            passage_words: args.passage_words,
            skip_bad: args.skip_bad,
        },
    )?;
    if !args.quiet && !data.corpus.skipped.is_empty() {
        eprintln!("skipped {} bad corpus records:", data.corpus.skipped.len());
        for s in data.corpus.skipped.iter().take(20) {
            eprintln!("  {}", crate::printable(&s.to_string()));
        }
    }
    if let Some(file) = &args.exclude_queries {
        exclude_queries(&mut data, file, args.quiet)?;
    }
    if !args.quiet {
        eprintln!(
            "{}: {} documents, {} passages, {} queries{}",
            data.name,
            data.corpus.documents.len(),
            data.corpus.passage_count(),
            data.queries.len(),
            if data.dangling_qrels > 0 {
                format!(
                    " ({} qrels lines name a missing query or document)",
                    data.dangling_qrels
                )
            } else {
                String::new()
            }
        );
    }
    Ok(data)
}

/// `--exclude-queries FILE`: leaves out the queries it lists, saying how
/// many (and how many of its ids name no query of the set).
fn exclude_queries(data: &mut dataset::Dataset, file: &Path, quiet: bool) -> Result<()> {
    let ids: std::collections::HashSet<String> = crate::read_id_file(file, "--exclude-queries")?
        .into_iter()
        .collect();
    let left_out = data.exclude(&ids);
    if data.queries.is_empty() {
        bail!(
            "--exclude-queries {}: it lists every query of the set",
            file.display()
        );
    }
    if !quiet {
        eprintln!(
            "left out {left_out} queries listed in {} ({} of its ids name no query of the set)",
            file.display(),
            ids.len() - left_out
        );
    }
    Ok(())
}

/// The tree the systems need: `--tree`, or one built in memory with the
/// defaults; none when no system navigates. Also how it was got, for the
/// report's config.
async fn bench_tree(
    args: &BenchArgs,
    systems: &[SystemKind],
    data: &dataset::Dataset,
    embedder: Option<&EmbedderOptions>,
    bars: &crate::progress::Bars,
) -> Result<(Option<Arc<tree::Tree>>, String)> {
    let params = TreeParams::default().seed(args.seed).check()?;
    let needs_tree = if args.prune {
        args.prune_retriever == PruneRetriever::Tree
    } else {
        systems.contains(&SystemKind::Tree)
            || systems.contains(&SystemKind::Gar)
            || !args.judge_budgets.is_empty()
            || !args.explore_budgets.is_empty()
    };
    Ok(if needs_tree {
        match &args.tree {
            Some(path) if !path.exists() => anyhow::bail!(
                "--tree {}: no such file; build it first (`treenav build {} -o {}{}`), or leave out --tree to build one in memory",
                path.display(),
                args.dataset.display(),
                path.display(),
                match args.embedder.and_then(|e| e.to_possible_value()) {
                    Some(v) => format!(" --embedder {}", v.get_name()),
                    None => String::new(),
                }
            ),
            Some(path) => (
                Some(Arc::new(tree::file::load(path)?)),
                path.display().to_string(),
            ),
            None => {
                // The tree is embedded as `dense` is (`--embedder`), so the
                // embedding judge and `dense` compare the same model.
                let options = embedder.cloned().unwrap_or_default();
                let embedder = tree::Embedder::new(&options, params.seed())?;
                let summarizer = tree::Summarizer::new(&SummarizerOptions::Extractive)?;
                let built = treenav::build::build_tree(
                    data.corpus.clone(),
                    &data.name,
                    &params,
                    &embedder,
                    &summarizer,
                    bars,
                )
                .await?;
                bars.finish();
                (
                    Some(Arc::new(built)),
                    format!(
                        "built in memory ({}, extractive, seed {})",
                        embedder.describe(),
                        args.seed
                    ),
                )
            }
        }
    } else {
        (None, String::new())
    })
}

/// Queries at once by default: the cores for a judge that runs in this
/// process, the judge's calls in flight for one behind a server.
fn default_concurrency(judge: &treenav::judge::JudgeOptions) -> usize {
    if judge.backend.profile().in_process {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        judge.dispatch.concurrency.max(1)
    }
}

async fn run_prune(
    args: &BenchArgs,
    mut data: treenav::eval::dataset::Dataset,
    tree: Option<Arc<treenav::tree::Tree>>,
    navigator: treenav::navigator::ValidConfig,
    judge: treenav::judge::JudgeOptions,
    bars: &crate::progress::Bars,
) -> Result<()> {
    use treenav::eval::prune_curve::{self, Retriever};
    if let Some(n) = args.limit {
        if n == 0 {
            bail!("--limit must be at least 1");
        }
        data.sample(n, args.seed);
    }
    let retriever = match tree {
        Some(tree) => Retriever::Tree {
            tree,
            config: navigator,
        },
        None => Retriever::Bm25,
    };
    let curve = prune_curve::run(
        &data,
        &retriever,
        &judge,
        args.prune_depth,
        args.keep_top_k,
        bars,
    )
    .await?;
    bars.finish();
    let title = format!(
        "{}: pruning top {} ({} judge, {} questions)",
        data.name,
        curve.depth,
        format!("{:?}", judge.backend.kind()).to_lowercase(),
        curve.questions
    );
    if let Some(path) = &args.curve_csv {
        write_atomic(path, &curve.csv())?;
    }
    if let Some(path) = &args.curve_svg {
        crate::plot::curve_svg(&curve, &title, path)?;
    }
    if let Some(path) = &args.json {
        write_atomic(path, &crate::json_text(&curve)?)?;
    }
    crate::emit(&prune_tables(&curve, &title))
}

/// The pruning curve's two tables: every point, then each strategy's
/// compression at 95% and 99% retention with its cost.
fn prune_tables(curve: &treenav::eval::prune_curve::Curve, title: &str) -> String {
    let mut o = String::new();
    out!(o, "{title}");
    out!(
        o,
        "gold among the retrieved chunks for {} of {} questions\n",
        curve.gold_retrieved,
        curve.questions
    );
    out!(
        o,
        "| strategy | knob | value | recall retention | compression | token compression |"
    );
    out!(o, "|---|---|---|---|---|---|");
    for p in &curve.points {
        out!(
            o,
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} |",
            p.strategy,
            p.knob,
            p.value,
            p.recall_retention,
            p.compression,
            p.token_compression
        );
    }
    out!(
        o,
        "\n| strategy | compression at ≥95% retention | at ≥99% | judge calls/q | added ms/q |"
    );
    out!(o, "|---|---|---|---|---|");
    for ((name, ms), (_, calls)) in curve.latency_ms.iter().zip(&curve.judge_calls) {
        let at = |r| {
            curve
                .compression_at(name, r)
                .map_or("—".to_string(), |c| format!("{c:.3}"))
        };
        out!(
            o,
            "| {name} | {} | {} | {calls:.1} | {ms:.1} |",
            at(0.95),
            at(0.99)
        );
    }
    o
}

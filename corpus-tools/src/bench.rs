//! `treenav bench`: the tree and the baselines over a benchmark's queries.

pub use crate::bench_args::{BenchArgs, DenseEmbedder, PruneRetriever};
use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use std::path::Path;
use std::sync::Arc;
use treenav::build::TreeParams;
use treenav::build::{Summarizer, SummarizerOptions};
use treenav::eval::bench::{self, BenchSetup, SystemKind};
use treenav::eval::dataset::{self, DatasetOptions};
use treenav::tree::{self, EmbedderOptions};

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
        return crate::prune_bench::run(args, data, tree, navigator, judge, &bars).await;
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
    write_outputs(args, &report, &data.name, &setup)
}

/// The report's JSON and curve files, as asked, then its tables.
fn write_outputs(
    args: &BenchArgs,
    report: &bench::Report,
    name: &str,
    setup: &BenchSetup,
) -> Result<()> {
    if let Some(path) = &args.json {
        crate::outputs::write_atomic(path, &crate::json_text(report)?)?;
        if !args.quiet {
            eprintln!("wrote {}", path.display());
        }
    }
    say_if_no_evidence(args);
    if let Some(path) = &args.curve_svg {
        let title = format!("{name} ({} judge)", setup.judge.backend.kind());
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
    let judge_args = match (args.prune, lists) {
        (true, _) => args.judge.for_pruning(),
        (false, true) => args
            .judge
            .for_lists("this bench (rerank, flat or --judge-budgets)")?,
        (false, false) => args.judge.clone(),
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
                let summarizer = Summarizer::new(&SummarizerOptions::Extractive)?;
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

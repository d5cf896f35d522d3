//! `treenav bench`'s flags: the benchmark, the systems, the sweeps and
//! the pruner's measures.

use crate::judge_args::JudgeArgs;
use crate::nav_args::NavArgs;
use clap::ValueEnum;
use std::path::PathBuf;

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
    /// Write every figure as JSON (schema treenav-bench/3) to this file.
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
    /// With --prune: pick, per strategy, the loosest knob that keeps at
    /// least this share of the needed chunks on this dataset and split,
    /// and write the one that drops the most to --save-config.
    #[arg(long, value_name = "R", requires = "prune")]
    pub target_recall: Option<f64>,
    /// Where --target-recall writes its config (strategy, threshold,
    /// judge, the data and command it came from).
    #[arg(
        long,
        value_name = "FILE",
        default_value = "prune.json",
        requires = "target_recall"
    )]
    pub save_config: PathBuf,
    /// With --prune: measure this saved config (`prune.json`) here, beside
    /// what it kept where it was fitted (held out: fit on train, measure on
    /// test). Its judge is used unless --judge names the same kind.
    #[arg(long, value_name = "FILE", requires = "prune")]
    pub prune_config: Option<PathBuf>,
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

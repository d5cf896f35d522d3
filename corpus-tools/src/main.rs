//! `treenav`: build a corpus tree, look inside it, query it, check a judge.

/// Appends a line to a String buffer (writing to a String cannot fail).
macro_rules! out {
    ($o:expr) => {{ $o.push('\n'); }};
    ($o:expr, $($t:tt)*) => {{ use std::fmt::Write as _; let _ = writeln!($o, $($t)*); }};
}

mod bench;
mod doctor;
mod inspect;
mod judge_args;
mod plot;
mod progress;
mod prune;
mod query;
mod serve;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use treenav::corpus::{self, Format, LoadOptions};
use treenav::tree::{self, EmbedderOptions, SummarizerOptions, TreeParams};

/// treenav: retrieval for RAG without a vector index at query time.
#[derive(Parser, Debug)]
#[command(name = "treenav", version, about)]
struct Cli {
    /// Print the full error chain and debug logs.
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Build a corpus tree (clusters → documents → passages) and save it.
    Build(Box<BuildArgs>),
    /// Show a tree file's levels, counts and sample nodes.
    Inspect(InspectArgs),
    /// Retrieve the passages that answer a question by navigating a tree.
    Query(Box<query::QueryArgs>),
    /// Send a tiny known decision to a judge and check its answers.
    Doctor(DoctorArgs),
    /// Measure the tree against BM25, dense, hybrid, rerank and flat on a
    /// benchmark (or, with --prune, the pruner's retention against compression).
    Bench(Box<bench::BenchArgs>),
    /// Keep only the retrieved chunks the answer needs, within a token budget.
    Prune(Box<prune::PruneArgs>),
    /// Serve trees over HTTP: retrieve, prune, metrics, reload (see README).
    Serve(Box<serve::ServeArgs>),
}

#[derive(clap::Args, Debug)]
struct DoctorArgs {
    #[command(flatten)]
    judge: judge_args::JudgeArgs,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum EmbedderKind {
    /// TF-IDF with a seeded random projection (pure Rust, no model).
    Tfidf,
    /// An OpenAI-compatible POST /v1/embeddings server (--endpoint, --model).
    Openai,
    /// all-MiniLM-L6-v2 in-process (build with --features minilm; --model-dir).
    Minilm,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum SummarizerKind {
    /// Distinctive terms plus the most central titles (offline).
    Extractive,
    /// One sentence per cluster from an OpenAI-compatible chat endpoint.
    Llm,
}

#[derive(clap::Args, Debug)]
struct BuildArgs {
    /// The corpus: a BEIR folder or corpus.jsonl, SQuAD JSON, passages
    /// (.jsonl/.tsv) or a folder of .md/.txt files. Without it, the bundled
    /// sample corpus (48 Wikipedia articles from XQuAD) is used.
    input: Option<PathBuf>,
    /// Where to write the tree file.
    #[arg(short, long)]
    output: PathBuf,
    /// Force the input format instead of detecting it
    /// (beir, squad, passages-jsonl, passages-tsv, files).
    #[arg(long)]
    format: Option<String>,
    /// Word budget of a passage when chunking documents that are not pre-chunked.
    #[arg(long, default_value_t = corpus::chunk::DEFAULT_PASSAGE_WORDS)]
    passage_words: usize,
    /// Most children any node may have.
    #[arg(long, default_value_t = 100)]
    branching: usize,
    /// How documents are split into clusters: `top-down` (from the root,
    /// k ≤ branching per node, trained on --sample-rows; the default) or
    /// `flat` (all documents at once into --clusters, then upward).
    #[arg(long)]
    clustering: Option<String>,
    /// Rows k-means is trained on at each node of the top-down build.
    #[arg(long, default_value_t = tree::DEFAULT_SAMPLE)]
    sample_rows: usize,
    /// Number of k-means clusters over documents for the flat clustering
    /// (default: max(√N, N/branching)); implies --clustering flat.
    #[arg(long)]
    clusters: Option<usize>,
    /// Seed of k-means and the TF-IDF projection.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Sentences of each document embedded with its title for clustering.
    #[arg(long, default_value_t = 1)]
    embed_sentences: usize,
    /// Nearest documents stored per document for best-first navigation
    /// (searched in its leaf cluster and the sibling clusters; 0: none).
    #[arg(long, default_value_t = treenav::tree::neighbours::DEFAULT_NEIGHBOURS)]
    neighbours: usize,
    /// Embedder used for clustering.
    #[arg(long, value_enum, default_value_t = EmbedderKind::Tfidf)]
    embedder: EmbedderKind,
    /// Precomputed document vectors instead of an embedder: a .npy file
    /// (float32 or float16, documents × dimensions), row i = document i in
    /// corpus order.
    #[arg(long, conflicts_with = "embedder")]
    embeddings: Option<PathBuf>,
    /// Dimensions of the TF-IDF projection.
    #[arg(long, default_value_t = 128)]
    dims: usize,
    /// Embeddings server base URL (openai embedder), e.g. http://127.0.0.1:8080.
    #[arg(long)]
    endpoint: Option<String>,
    /// Embedding model name (openai embedder).
    #[arg(long)]
    model: Option<String>,
    /// Model folder of the minilm embedder (default ~/.cache/treenav/models/all-MiniLM-L6-v2).
    #[arg(long)]
    model_dir: Option<PathBuf>,
    /// Environment variable holding the embeddings API key (none sent if not given).
    #[arg(long)]
    api_key_env: Option<String>,
    /// Texts per embeddings request.
    #[arg(long, default_value_t = 32)]
    batch_size: usize,
    /// Embeddings requests in flight at once (openai embedder, 1–256).
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Folder where finished embedding batches are kept by content hash, so
    /// a stopped build resumes without re-embedding (openai embedder).
    /// Default: ~/.cache/treenav/embeddings.
    #[arg(long)]
    embed_cache: Option<PathBuf>,
    /// Keep no embedding batches on disk.
    #[arg(long, conflicts_with = "embed_cache")]
    no_embed_cache: bool,
    /// How clusters are summarised.
    #[arg(long, value_enum, default_value_t = SummarizerKind::Extractive)]
    summarizer: SummarizerKind,
    /// Chat endpoint base URL (llm summarizer).
    #[arg(long)]
    summary_endpoint: Option<String>,
    /// Chat model name (llm summarizer).
    #[arg(long)]
    summary_model: Option<String>,
    /// Environment variable holding the chat API key (llm summarizer).
    #[arg(long)]
    summary_api_key_env: Option<String>,
    /// Skip bad records (listing them) instead of stopping at the first.
    #[arg(long)]
    skip_bad: bool,
    /// Print the build report as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
struct InspectArgs {
    /// The tree file.
    tree: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Sample nodes to show per kind.
    #[arg(long, default_value_t = 3)]
    samples: usize,
}

/// Colour in logs only on a terminal, and never with `NO_COLOR` set
/// (<https://no-color.org>): a log file or a pipe gets plain text.
fn colour_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = match (&cli.command, cli.verbose) {
        (_, true) => "debug",
        // The service logs its start, reloads and access lines.
        (Command::Serve(_), false) => "warn,treenav_serve=info",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TREENAV_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(colour_on_stderr())
        .init();
    let result = match cli.command {
        Command::Build(args) => run_build(*args),
        Command::Inspect(args) => inspect::run(&args.tree, args.json, args.samples),
        Command::Query(args) => runtime().and_then(|rt| rt.block_on(query::run(&args))),
        Command::Bench(args) => runtime().and_then(|rt| rt.block_on(bench::run(&args))),
        Command::Prune(args) => runtime().and_then(|rt| rt.block_on(prune::run(&args))),
        Command::Serve(args) => runtime().and_then(|rt| rt.block_on(serve::run(&args))),
        Command::Doctor(args) => {
            runtime().and_then(|rt| rt.block_on(doctor::run(&args.judge, args.json)))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The cause chain by default (`navigation failed: judging level
            // 2 …: rate limited …`); with -v, anyhow's full report.
            if cli.verbose {
                eprintln!("error: {}", printable(&format!("{e:?}")));
            } else {
                eprintln!("error: {}", printable(&cause_chain(&e)));
            }
            ExitCode::FAILURE
        }
    }
}

/// The error and each cause not already quoted in the text before it (our
/// error types quote their source), joined by `: `.
fn cause_chain(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn embedder_options(args: &BuildArgs) -> Result<EmbedderOptions> {
    if let Some(path) = &args.embeddings {
        return Ok(EmbedderOptions::Vectors { path: path.clone() });
    }
    Ok(match args.embedder {
        EmbedderKind::Tfidf => EmbedderOptions::Tfidf { dims: args.dims },
        EmbedderKind::Openai => EmbedderOptions::Openai {
            endpoint: args
                .endpoint
                .clone()
                .context("--embedder openai needs --endpoint URL (e.g. http://127.0.0.1:8080)")?,
            model: args
                .model
                .clone()
                .context("--embedder openai needs --model NAME")?,
            api_key_env: args.api_key_env.clone(),
            batch_size: args.batch_size,
            timeout_secs: 120,
            concurrency: args.concurrency,
            cache_dir: match (&args.embed_cache, args.no_embed_cache) {
                (_, true) => None,
                (Some(dir), false) => Some(dir.clone()),
                (None, false) => {
                    Some(treenav::tree::summary::default_cache_dir().join("embeddings"))
                }
            },
        },
        EmbedderKind::Minilm => EmbedderOptions::Minilm {
            model_dir: args.model_dir.clone(),
            batch_size: args.batch_size,
            max_tokens: 128,
        },
    })
}

fn summarizer_options(args: &BuildArgs) -> Result<SummarizerOptions> {
    Ok(match args.summarizer {
        SummarizerKind::Extractive => SummarizerOptions::Extractive,
        SummarizerKind::Llm => SummarizerOptions::Llm {
            endpoint: args
                .summary_endpoint
                .clone()
                .context("--summarizer llm needs --summary-endpoint URL")?,
            model: args
                .summary_model
                .clone()
                .context("--summarizer llm needs --summary-model NAME")?,
            api_key_env: args.summary_api_key_env.clone(),
            cache_dir: None,
            concurrency: 4,
            timeout_secs: 120,
        },
    })
}

#[derive(serde::Serialize)]
struct BuildReport {
    output: PathBuf,
    source: String,
    format: String,
    documents: usize,
    passages: usize,
    clusters: usize,
    cluster_levels: usize,
    bytes: u64,
    /// The side files beside the tree file (passage texts, lexical index).
    side_files: Vec<SideFileReport>,
    seconds: f64,
    skipped: Vec<String>,
}

#[derive(serde::Serialize)]
struct SideFileReport {
    path: PathBuf,
    bytes: u64,
}

/// Refuses an output that is the input, or inside an input folder: the tree
/// would replace the user's corpus. Paths are compared resolved (symlinks,
/// `..`), the output by its folder since it may not exist yet.
fn refuse_output_over_input(input: &std::path::Path, output: &std::path::Path) -> Result<()> {
    let Ok(input) = input.canonicalize() else {
        return Ok(()); // a missing input fails later, naming the path
    };
    let folder = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let (Ok(folder), Some(name)) = (folder.canonicalize(), output.file_name()) else {
        return Ok(());
    };
    let output = folder.join(name);
    let output = output.canonicalize().unwrap_or(output);
    if output == input || output.starts_with(&input) {
        let how = if output == input { "is" } else { "is inside" };
        bail!(
            "-o {} {how} the input {}: the tree would replace your data; write it elsewhere",
            output.display(),
            input.display()
        );
    }
    Ok(())
}

fn run_build(args: BuildArgs) -> Result<()> {
    let start = Instant::now();
    // Check everything before any work.
    let params = TreeParams::default()
        .branching(args.branching)
        .clusters(args.clusters)
        .clustering(match (&args.clustering, args.clusters) {
            (Some(name), _) => name.parse()?,
            (None, Some(_)) => tree::Clustering::Flat,
            (None, None) => tree::Clustering::TopDown,
        })
        .sample(args.sample_rows)
        .seed(args.seed)
        .embed_sentences(args.embed_sentences)
        .neighbours(args.neighbours)
        .check()?;
    let embedder = tree::Embedder::new(&embedder_options(&args)?, params.seed())?;
    let summarizer = tree::Summarizer::new(&summarizer_options(&args)?)?;
    if let Some(dir) = args.output.parent() {
        if !dir.as_os_str().is_empty() && !dir.exists() {
            bail!("output folder {} does not exist", dir.display());
        }
    }
    if let Some(input) = &args.input {
        refuse_output_over_input(input, &args.output)?;
    }
    let forced: Option<Format> = args.format.as_deref().map(str::parse).transpose()?;
    let options = LoadOptions {
        skip_bad: args.skip_bad,
        passage_words: args.passage_words,
    };

    let (corpus, source, format) = match &args.input {
        Some(path) => {
            let format = match forced {
                Some(f) => f,
                None => Format::detect(path)?,
            };
            let corpus = corpus::load(path, format, &options)?;
            (corpus, path.display().to_string(), format)
        }
        None => {
            if !args.json {
                eprintln!(
                    "no input given: building the bundled sample corpus ({})",
                    treenav::SAMPLE_NAME
                );
            }
            let format = forced.unwrap_or(Format::Squad);
            let corpus = corpus::load_str(
                treenav::SAMPLE_CORPUS,
                "xquad-sample.json",
                format,
                &options,
            )?;
            (corpus, treenav::SAMPLE_NAME.to_string(), format)
        }
    };
    let skipped: Vec<String> = corpus.skipped.iter().map(ToString::to_string).collect();
    let documents = corpus.documents.len();
    let passages = corpus.passage_count();
    if !args.json {
        eprintln!("loaded {documents} documents, {passages} passages ({format}) from {source}");
        if !skipped.is_empty() {
            eprintln!("skipped {} bad records:", skipped.len());
            for s in skipped.iter().take(20) {
                eprintln!("  {}", printable(s));
            }
            if skipped.len() > 20 {
                eprintln!("  … and {} more (see --json)", skipped.len() - 20);
            }
        }
    }

    let runtime = runtime()?;
    let bars = progress::Bars::new(args.json);
    let tree = runtime.block_on(tree::build_tree(
        corpus,
        &source,
        &params,
        &embedder,
        &summarizer,
        &bars,
    ))?;
    bars.finish();
    tree::file::save(&tree, &args.output)?;
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let bytes = size(&args.output);
    let side_files: Vec<SideFileReport> = tree::file::side_files(&args.output)
        .into_iter()
        .map(|path| SideFileReport {
            bytes: size(&path),
            path,
        })
        .collect();
    let stats = tree.level_stats();
    let clusters: usize = stats
        .iter()
        .filter(|s| s.kind == "cluster")
        .map(|s| s.nodes)
        .sum();
    let cluster_levels = stats.iter().filter(|s| s.kind == "cluster").count();
    let report = BuildReport {
        output: args.output.clone(),
        source,
        format: format.to_string(),
        documents,
        passages,
        clusters,
        cluster_levels,
        bytes,
        side_files,
        seconds: start.elapsed().as_secs_f64(),
        skipped,
    };
    if args.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    } else {
        let sides: Vec<String> = report
            .side_files
            .iter()
            .map(|f| format!("{} ({})", display(&f.path), inspect::human_bytes(f.bytes)))
            .collect();
        emit(&format!(
            "wrote {} ({}) and beside it {}: {} documents, {} passages, {} clusters in {} level(s), {:.1} s\n",
            display(&report.output),
            inspect::human_bytes(bytes),
            sides.join(", "),
            documents,
            passages,
            clusters,
            cluster_levels,
            report.seconds
        ))?;
    }
    Ok(())
}

/// Writes text to stdout; a closed pipe (`treenav … | head`) is not an error.
pub fn emit(text: &str) -> Result<()> {
    use std::io::Write;
    let text = printable(text);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// Text safe to print: control characters from the data (ANSI escapes,
/// bells, carriage returns), Unicode line separators and bidi overrides are
/// shown escaped (`\x1b`, `\u{202e}`), never interpreted by a terminal;
/// newlines and tabs stay. JSON output has none (serde escapes them).
pub(crate) fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let hostile = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(hostile) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !hostile(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    std::borrow::Cow::Owned(out)
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

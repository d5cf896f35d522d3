//! `treenav build` (one process, or split: --plan, --shard) and `treenav merge`.

use crate::{emit, inspect, printable, progress, runtime};
use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use std::path::{Path, PathBuf};
use std::time::Instant;
use treenav::build::TreeParams;
use treenav::build::{Summarizer, SummarizerOptions};
use treenav::corpus::{self, Format, LoadOptions};
use treenav::tree::{self, EmbedderOptions};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum EmbedderKind {
    /// TF-IDF with a seeded random projection (pure Rust, no model).
    Tfidf,
    /// An OpenAI-compatible POST /v1/embeddings server (--endpoint, --model).
    Openai,
    /// all-MiniLM-L6-v2 in-process (build with --features minilm; --model-dir).
    Minilm,
    /// bge-small-en in-process with ONNX Runtime (build with --features onnx; --model-dir).
    BgeSmall,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum SummarizerKind {
    /// Distinctive terms plus the most central titles (offline).
    Extractive,
    /// One sentence per cluster from an OpenAI-compatible chat endpoint.
    Llm,
}

#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// The corpus: a BEIR folder or corpus.jsonl, SQuAD JSON, passages
    /// (.jsonl/.tsv) or a folder of .md/.txt files. Without it, the bundled
    /// sample corpus (48 Wikipedia articles from XQuAD) is used.
    input: Option<PathBuf>,
    /// Where to write the tree file (`T`; the passage texts and the
    /// lexical side go beside it, in `T.texts`, `T.lexical` and `T.tantivy/`).
    #[arg(short, long, required_unless_present = "plan")]
    output: Option<PathBuf>,
    /// Split the build across processes: with no --shard, embed the
    /// corpus, split the root and save the plan in this folder; with
    /// --shard I/N, build shard I's subtrees from the plan. Join the
    /// shards with `treenav merge --plan DIR -o TREE`.
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    plan: Option<PathBuf>,
    /// Build shard I of N (I counts from 0) of the plan in --plan DIR; the
    /// corpus and every setting come from the plan.
    #[arg(long, value_name = "I/N", requires = "plan")]
    shard: Option<String>,
    /// Build part I of N (I counts from 0): a complete tree over the
    /// documents whose id hashes to I (xxh3-64 of the id, mod N), for a
    /// corpus served in parts (`treenav-ray serve`, docs/scale.md).
    #[arg(long, value_name = "I/N", conflicts_with = "plan")]
    part: Option<String>,
    /// Force the input format instead of detecting it.
    #[arg(long, value_parser = ["beir", "squad", "passages-jsonl", "passages-tsv", "files"])]
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
    #[arg(long, value_parser = ["top-down", "flat"])]
    clustering: Option<String>,
    /// Rows k-means is trained on at each node of the top-down build.
    #[arg(long, default_value_t = treenav::build::DEFAULT_SAMPLE)]
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
    /// (searched in its leaf cluster and the leaf clusters sharing its parent; 0: none).
    #[arg(long, default_value_t = treenav::build::cluster::neighbours::DEFAULT_NEIGHBOURS)]
    neighbours: usize,
    /// Embedder used for clustering and the neighbour lists. By default,
    /// bge-small when this build has the onnx feature and its files are in
    /// the cache (scripts/fetch-models.sh), else tfidf; the build says which.
    #[arg(long, value_enum)]
    embedder: Option<EmbedderKind>,
    /// Precomputed document vectors instead of embedding: a .npy file
    /// (float32 or float16), row i = document i in corpus order (or
    /// document node i, as `treenav texts` lists them). With --embedder
    /// bge-small|minilm, the vectors were made by that model: the tree
    /// records it and embeds queries with it.
    #[arg(long)]
    embeddings: Option<PathBuf>,
    /// Precomputed passage vectors with --embeddings: a .npy file, row i =
    /// passage i in corpus order (as `treenav texts` lists them).
    #[arg(long, requires = "embeddings")]
    passage_embeddings: Option<PathBuf>,
    /// Keep no vector per passage (`T.passage-vectors`): a smaller, faster
    /// build whose embedding judge scores a passage by its document's
    /// vector (a TF-IDF tree, judged lexically, never reads them).
    #[arg(long, conflicts_with = "passage_embeddings")]
    no_passage_vectors: bool,
    /// Dimensions of the TF-IDF projection.
    #[arg(long, default_value_t = 128)]
    dims: usize,
    /// Embeddings server base URL (openai embedder), e.g. http://127.0.0.1:8080.
    #[arg(long)]
    endpoint: Option<String>,
    /// Embedding model name (openai embedder).
    #[arg(long)]
    model: Option<String>,
    /// Model folder of the minilm or bge-small embedder (default
    /// ~/.cache/treenav/models/all-MiniLM-L6-v2 or …/bge-small-en).
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
    /// How text becomes terms for the lexical index, its statistics and the
    /// lexical judge: en-stem (English stemming, stopwords dropped), simple
    /// (lower-cased words) or words (trees before tantivy: no stemming).
    #[arg(long, default_value = "en-stem", value_parser = ["en-stem", "simple", "words"])]
    analyzer: String,
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

fn embedder_options(args: &BuildArgs) -> Result<EmbedderOptions> {
    if let Some(path) = &args.embeddings {
        return precomputed_options(args, path);
    }
    model_options(args, resolve_embedder(args.embedder, args.json))
}

/// `--embeddings FILE [--passage-embeddings FILE] [--embedder MODEL]`,
/// the paths resolved (a plan's merge may run elsewhere).
fn precomputed_options(args: &BuildArgs, path: &Path) -> Result<EmbedderOptions> {
    let resolve = |p: &Path| {
        p.canonicalize()
            .with_context(|| format!("cannot read {}", p.display()))
    };
    let made_by = match args.embedder {
        None => None,
        Some(kind @ (EmbedderKind::BgeSmall | EmbedderKind::Minilm)) => {
            Some(Box::new(model_options(args, kind)?))
        }
        Some(_) => bail!(
            "--embeddings with --embedder: the vectors' model must be bge-small or minilm (in-process, so queries embed the same way)"
        ),
    };
    Ok(EmbedderOptions::Vectors {
        path: resolve(path)?,
        passages: args
            .passage_embeddings
            .as_deref()
            .map(resolve)
            .transpose()?,
        made_by,
    })
}

/// The options of an embedding model.
fn model_options(args: &BuildArgs, kind: EmbedderKind) -> Result<EmbedderOptions> {
    Ok(match kind {
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
                    Some(treenav::build::summary::default_cache_dir().join("embeddings"))
                }
            },
        },
        EmbedderKind::Minilm => EmbedderOptions::Minilm {
            model_dir: args.model_dir.clone(),
            batch_size: args.batch_size,
            max_tokens: 128,
        },
        EmbedderKind::BgeSmall => bge_small(args.model_dir.clone(), args.batch_size),
    })
}

/// The embedder asked for, or the default (the library's
/// [`EmbedderOptions::preferred`]): the semantic bge-small when it can run
/// here, else tfidf, saying which in one line (never a silent switch; the
/// choice is also in the tree, `inspect` and `--json`).
fn resolve_embedder(asked: Option<EmbedderKind>, json: bool) -> EmbedderKind {
    if let Some(kind) = asked {
        return kind;
    }
    let (kind, line) = match EmbedderOptions::preferred() {
        (_, None) => (
            EmbedderKind::BgeSmall,
            "embedder: bge-small-en (semantic; --embedder tfidf for the lexical one)".to_string(),
        ),
        (_, Some(why)) => (
            EmbedderKind::Tfidf,
            format!("embedder: tfidf, the semantic bge-small-en is unavailable: {why}"),
        ),
    };
    if !json {
        eprintln!("{line}");
    }
    kind
}

/// bge-small-en with the library's defaults but the model folder and
/// batch asked for.
pub fn bge_small(model_dir: Option<PathBuf>, batch_size: usize) -> EmbedderOptions {
    let mut options = EmbedderOptions::bge_small();
    if let EmbedderOptions::BgeSmall {
        model_dir: dir,
        batch_size: batch,
        ..
    } = &mut options
    {
        (*dir, *batch) = (model_dir, batch_size);
    }
    options
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
    /// The embedder the tree was built with, e.g. `onnx(bge-small-en, cls)`.
    embedder: String,
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
/// would replace the user's corpus.
fn refuse_output_over_input(input: &std::path::Path, output: &std::path::Path) -> Result<()> {
    crate::outputs::refuse_over("-o", output, "the input", input)
}

/// How the plan's corpus is loaded again by `treenav merge`, and how its
/// clusters are summarised: kept in the plan.
#[derive(serde::Serialize, serde::Deserialize)]
struct Recipe {
    /// The corpus path, resolved (`None`: the bundled sample).
    input: Option<PathBuf>,
    /// The source as named at build time (kept in the tree).
    source: String,
    format: String,
    passage_words: usize,
    skip_bad: bool,
    summarizer: SummarizerOptions,
    /// The lexical analyzer's name (`en-stem` when a plan does not say).
    #[serde(default = "default_analyzer")]
    analyzer: String,
    /// The plan's embedder, which embeds the passages at the merge.
    embedder: EmbedderOptions,
}

fn default_analyzer() -> String {
    "en-stem".into()
}

/// `treenav merge`: join the shards of a plan into one tree.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// The plan folder given to `treenav build --plan`.
    #[arg(long, value_name = "DIR")]
    plan: PathBuf,
    /// Where to write the tree file.
    #[arg(short, long)]
    output: PathBuf,
    /// The corpus, if it is no longer at the path the plan recorded (e.g.
    /// mounted elsewhere); it must be the same corpus.
    #[arg(long)]
    corpus: Option<PathBuf>,
    /// Print the build report as JSON on stdout.
    #[arg(long)]
    json: bool,
}

fn tree_params(args: &BuildArgs) -> Result<treenav::build::ValidTreeParams> {
    Ok(TreeParams::default()
        .branching(args.branching)
        .clusters(args.clusters)
        .clustering(match (&args.clustering, args.clusters) {
            (Some(name), _) => name.parse()?,
            (None, Some(_)) => treenav::build::Clustering::Flat,
            (None, None) => treenav::build::Clustering::TopDown,
        })
        .sample(args.sample_rows)
        .seed(args.seed)
        .embed_sentences(args.embed_sentences)
        .neighbours(args.neighbours)
        .passage_vectors(!args.no_passage_vectors)
        .check()?)
}

/// A loaded corpus, what it was called and its format.
pub(crate) struct Loaded {
    pub(crate) corpus: corpus::Corpus,
    pub(crate) source: String,
    pub(crate) format: Format,
}

impl Loaded {
    /// Where the corpus came from.
    fn origin(&self) -> Origin {
        Origin {
            source: self.source.clone(),
            format: self.format,
        }
    }
}

/// Where a corpus came from: what it was called and its format (what a
/// plan's recipe keeps).
struct Origin {
    source: String,
    format: Format,
}

/// Loads the corpus at `input` (the bundled sample without one), printing
/// what was loaded and the records skipped unless `quiet`.
pub(crate) fn load_corpus(
    input: Option<&Path>,
    forced: Option<Format>,
    options: &LoadOptions,
    quiet: bool,
) -> Result<Loaded> {
    let loaded = match input {
        Some(path) => {
            let format = format_of(path, forced)?;
            let corpus = corpus::load(path, format, options)?;
            Loaded {
                corpus,
                source: path.display().to_string(),
                format,
            }
        }
        None => {
            if !quiet {
                eprintln!(
                    "no input given: building the bundled sample corpus ({})",
                    treenav::SAMPLE_NAME
                );
            }
            let format = forced.unwrap_or(Format::Squad);
            let corpus =
                corpus::load_str(treenav::SAMPLE_CORPUS, "xquad-sample.json", format, options)?;
            Loaded {
                corpus,
                source: treenav::SAMPLE_NAME.to_string(),
                format,
            }
        }
    };
    if !quiet {
        let c = &loaded.corpus;
        let counts = (c.documents.len(), c.passage_count());
        report_loaded(counts, &loaded.origin(), &c.skipped);
    }
    Ok(loaded)
}

/// The format given, else the one detected at `path`.
fn format_of(path: &Path, forced: Option<Format>) -> Result<Format> {
    Ok(match forced {
        Some(f) => f,
        None => Format::detect(path)?,
    })
}

/// Prints what was loaded (`counts`: documents, passages) and the records
/// skipped.
fn report_loaded(counts: (usize, usize), from: &Origin, skipped: &[corpus::Skipped]) {
    let (documents, passages) = counts;
    eprintln!(
        "loaded {documents} documents, {passages} passages ({}) from {}",
        from.format, from.source
    );
    if !skipped.is_empty() {
        eprintln!("skipped {} bad records:", skipped.len());
        for s in skipped.iter().take(20) {
            eprintln!("  {}", printable(&s.to_string()));
        }
        if skipped.len() > 20 {
            eprintln!("  … and {} more (see --json)", skipped.len() - 20);
        }
    }
}

/// `treenav build CORPUS --plan DIR`: the corpus is read a document at a
/// time into its outline (a BEIR file is never held whole), then embedded
/// and split.
fn run_plan(
    args: &BuildArgs,
    dir: &Path,
    forced: Option<Format>,
    options: &LoadOptions,
    made: (
        treenav::build::ValidTreeParams,
        tree::Embedder,
        SummarizerOptions,
    ),
    start: Instant,
) -> Result<()> {
    let (params, embedder, summarizer) = made;
    let (outline, from) =
        outline_corpus(args.input.as_deref(), forced, options, &params, args.json)?;
    let recipe = recipe(args, &from, summarizer, embedder_options(args)?)?;
    let documents = outline.documents();
    let bars = progress::Bars::new(args.json);
    let plan = runtime()?.block_on(treenav::build::Plan::make(
        outline, &params, &embedder, &recipe, dir, &bars,
    ))?;
    bars.finish();
    report_plan(dir, &plan, documents, start, args.json)
}

/// The outline of the corpus at `input` (the bundled sample without one),
/// read a document at a time, and where it came from.
fn outline_corpus(
    input: Option<&Path>,
    forced: Option<Format>,
    options: &LoadOptions,
    params: &treenav::build::ValidTreeParams,
    quiet: bool,
) -> Result<(treenav::build::Outline, Origin)> {
    let (branching, sentences) = (params.branching(), params.embed_sentences());
    let Some(path) = input else {
        let loaded = load_corpus(None, forced, options, quiet)?;
        let outline = treenav::build::Outline::of(&loaded.corpus, branching, sentences);
        return Ok((outline, loaded.origin()));
    };
    let format = format_of(path, forced)?;
    let mut outliner = treenav::build::Outliner::new(branching, sentences);
    let skipped = corpus::for_each_document(path, format, options, |d| {
        outliner.add(&d);
        Ok(())
    })?;
    let outline = outliner.finish();
    let from = Origin {
        source: path.display().to_string(),
        format,
    };
    if !quiet {
        let f = outline.fingerprint();
        report_loaded((f.documents as usize, f.passages as usize), &from, &skipped);
    }
    Ok((outline, from))
}

fn check_output_folder(output: &Path) -> Result<()> {
    if let Some(dir) = output.parent() {
        if !dir.as_os_str().is_empty() && !dir.exists() {
            bail!("output folder {} does not exist", dir.display());
        }
    }
    Ok(())
}

pub fn run_build(args: BuildArgs) -> Result<()> {
    let start = Instant::now();
    if let Some(shard) = &args.shard {
        return run_shard(&args, shard);
    }
    // Check everything before any work.
    let part: Option<corpus::Part> = args.part.as_deref().map(str::parse).transpose()?;
    let params = tree_params(&args)?;
    let embedder = tree::Embedder::new(&embedder_options(&args)?, params.seed())?;
    let summarizer_options = summarizer_options(&args)?;
    let summarizer = Summarizer::new(&summarizer_options)?;
    if let Some(output) = &args.output {
        check_output_folder(output)?;
        if let Some(input) = &args.input {
            refuse_output_over_input(input, output)?;
        }
    }
    let forced: Option<Format> = args.format.as_deref().map(str::parse).transpose()?;
    let options = LoadOptions {
        skip_bad: args.skip_bad,
        passage_words: args.passage_words,
    };
    if let Some(dir) = &args.plan {
        let made = (params, embedder, summarizer_options);
        return run_plan(&args, dir, forced, &options, made, start);
    }
    let mut loaded = load_corpus(args.input.as_deref(), forced, &options, args.json)?;
    if let Some(part) = part {
        loaded.corpus = loaded.corpus.into_part(part)?;
        if !args.json {
            eprintln!(
                "part {part}: {} documents, {} passages",
                loaded.corpus.documents.len(),
                loaded.corpus.passage_count()
            );
        }
    }
    let runtime = runtime()?;
    let bars = progress::Bars::new(args.json);
    let output = args.output.clone().context("-o TREE is needed")?;
    let made = Made::of(&loaded);
    let mut tree = runtime.block_on(treenav::build::build_tree(
        loaded.corpus,
        &loaded.source,
        &params,
        &embedder,
        &summarizer,
        &bars,
    ))?;
    tree.set_analyzer(args.analyzer.parse().map_err(anyhow::Error::msg)?);
    bars.finish();
    save_and_report(&tree, &output, made, start, args.json)
}

/// The recipe kept in a plan: how `treenav merge` loads the corpus again
/// and summarises its clusters.
fn recipe(
    args: &BuildArgs,
    from: &Origin,
    summarizer: SummarizerOptions,
    embedder: EmbedderOptions,
) -> Result<String> {
    let input = match &args.input {
        Some(path) => Some(
            path.canonicalize()
                .with_context(|| format!("cannot resolve {}", path.display()))?,
        ),
        None => None,
    };
    Ok(serde_json::to_string(&Recipe {
        input,
        source: from.source.clone(),
        format: from.format.to_string(),
        passage_words: args.passage_words,
        skip_bad: args.skip_bad,
        summarizer,
        analyzer: args.analyzer.clone(),
        embedder,
    })?)
}

fn report_plan(
    dir: &Path,
    plan: &treenav::build::Plan,
    documents: usize,
    start: Instant,
    json: bool,
) -> Result<()> {
    let seconds = start.elapsed().as_secs_f64();
    if json {
        let report = serde_json::json!({
            "plan": dir, "top_clusters": plan.tops(), "documents": documents, "seconds": seconds,
        });
        return emit(&crate::json_text(&report)?);
    }
    let dir = dir.display();
    emit(&format!(
        "wrote the plan in {dir}: {} top clusters over {documents} documents, {seconds:.1} s; next, for I in 0..N: `treenav build --plan {dir} --shard I/N`, then `treenav merge --plan {dir} -o TREE`\n",
        plan.tops(),
    ))
}

/// `treenav build --plan DIR --shard I/N`.
fn run_shard(args: &BuildArgs, shard: &str) -> Result<()> {
    let start = Instant::now();
    let dir = args.plan.as_deref().context("--shard needs --plan DIR")?;
    if args.input.is_some() {
        bail!(
            "--shard reads everything it needs from the plan in {}: drop the corpus argument",
            dir.display()
        );
    }
    let spec: treenav::build::ShardSpec = shard.parse()?;
    let plan = treenav::build::Plan::open(dir)?;
    if plan.shard_done(spec) {
        let path = dir.join(treenav::build::shard_file(spec.index(), spec.count()));
        if args.json {
            let report = serde_json::json!({ "shard": path, "kept": true });
            return emit(&crate::json_text(&report)?);
        }
        return emit(&format!(
            "{} is already built from this plan: kept\n",
            path.display()
        ));
    }
    let bars = progress::Bars::new(args.json);
    let path =
        runtime()?.block_on(async { treenav::build::Plan::build_shard(&plan, spec, &bars) })?;
    bars.finish();
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let seconds = start.elapsed().as_secs_f64();
    if args.json {
        let report = serde_json::json!({ "shard": path, "bytes": bytes, "seconds": seconds });
        return emit(&crate::json_text(&report)?);
    }
    emit(&format!(
        "wrote {} ({}) in {seconds:.1} s\n",
        path.display(),
        inspect::human_bytes(bytes),
    ))
}

/// `treenav merge --plan DIR -o TREE`.
pub fn run_merge(args: &MergeArgs) -> Result<()> {
    let start = Instant::now();
    let plan = treenav::build::Plan::open(&args.plan)?;
    let recipe: Recipe = serde_json::from_str(plan.recipe()).with_context(|| {
        format!(
            "the plan in {} was not made by `treenav build --plan`",
            args.plan.display()
        )
    })?;
    check_output_folder(&args.output)?;
    crate::outputs::refuse_over("-o", &args.output, "the plan", &args.plan)?;
    let input = args.corpus.clone().or(recipe.input.clone());
    if let Some(input) = &input {
        refuse_output_over_input(input, &args.output)?;
    }
    // Every shard present before the corpus is loaded.
    plan.check_shards()?;
    let summarizer = Summarizer::new(&recipe.summarizer)?;
    let options = LoadOptions {
        skip_bad: recipe.skip_bad,
        passage_words: recipe.passage_words,
    };
    let format: Format = recipe.format.parse()?;
    let loaded = load_corpus(input.as_deref(), Some(format), &options, args.json)?;
    let made = Made {
        source: recipe.source.clone(),
        ..Made::of(&loaded)
    };
    let embedder = tree::Embedder::new(&recipe.embedder, plan.seed())?;
    let bars = progress::Bars::new(args.json);
    let merged = plan.merge(loaded.corpus, &recipe.source, &summarizer, &embedder, &bars);
    let mut tree = runtime()?.block_on(merged)?;
    tree.set_analyzer(recipe.analyzer.parse().map_err(anyhow::Error::msg)?);
    bars.finish();
    save_and_report(&tree, &args.output, made, start, args.json)
}

/// What a build was made from, for its report.
struct Made {
    source: String,
    format: String,
    documents: usize,
    passages: usize,
    skipped: Vec<String>,
}

impl Made {
    fn of(loaded: &Loaded) -> Made {
        Made {
            source: loaded.source.clone(),
            format: loaded.format.to_string(),
            documents: loaded.corpus.documents.len(),
            passages: loaded.corpus.passage_count(),
            skipped: loaded
                .corpus
                .skipped
                .iter()
                .map(ToString::to_string)
                .collect(),
        }
    }
}

/// The files a saved tree has beside it, with their sizes: its side
/// files, its index folder and, when the build kept them, its vectors.
fn side_file_reports(output: &Path) -> Vec<SideFileReport> {
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let folder_size = |p: &std::path::Path| -> u64 {
        std::fs::read_dir(p)
            .map(|entries| entries.flatten().map(|e| size(&e.path())).sum())
            .unwrap_or(0)
    };
    let mut side_files: Vec<SideFileReport> = tree::file::side_files(output)
        .into_iter()
        .map(|path| SideFileReport {
            bytes: size(&path),
            path,
        })
        .collect();
    let folder = tree::file::index_folder(output);
    side_files.push(SideFileReport {
        bytes: folder_size(&folder),
        path: folder,
    });
    // The build's vectors, kept for `treenav add` and the embedding judge.
    for vectors in [
        treenav::build::update::vectors_path(output),
        tree::vectors::passage_vectors_path(output),
    ] {
        if vectors.exists() {
            side_files.push(SideFileReport {
                bytes: size(&vectors),
                path: vectors,
            });
        }
    }
    side_files
}

/// Saves the tree and its side files, and reports them.
fn save_and_report(
    tree: &tree::Tree,
    output: &Path,
    made: Made,
    start: Instant,
    json: bool,
) -> Result<()> {
    tree::file::save(tree, output)?;
    let bytes = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    let side_files = side_file_reports(output);
    let stats = tree.level_stats();
    let clusters: usize = stats
        .iter()
        .filter(|s| s.kind == "cluster")
        .map(|s| s.nodes)
        .sum();
    let cluster_levels = stats.iter().filter(|s| s.kind == "cluster").count();
    let report = BuildReport {
        output: output.to_path_buf(),
        source: made.source,
        format: made.format,
        documents: made.documents,
        passages: made.passages,
        clusters,
        cluster_levels,
        embedder: tree.meta().embedder.clone(),
        bytes,
        side_files,
        seconds: start.elapsed().as_secs_f64(),
        skipped: made.skipped,
    };
    if json {
        return emit(&crate::json_text(&report)?);
    }
    let sides: Vec<String> = report
        .side_files
        .iter()
        .map(|f| format!("{} ({})", f.path.display(), inspect::human_bytes(f.bytes)))
        .collect();
    emit(&format!(
        "wrote {} ({}) and beside it {}: {} documents, {} passages, {} clusters in {} level(s), embedder {}, {:.1} s\n",
        report.output.display(),
        inspect::human_bytes(bytes),
        sides.join(", "),
        report.documents,
        report.passages,
        clusters,
        cluster_levels,
        report.embedder,
        report.seconds
    ))
}

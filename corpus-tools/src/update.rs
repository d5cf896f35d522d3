//! `treenav add`, `treenav remove` and `treenav compact`: change a saved
//! tree without a rebuild.

use crate::build::load_corpus;
use crate::{emit, json_text, progress, runtime};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;
use treenav::build::update;
use treenav::corpus::{Format, LoadOptions};
use treenav::tree::{self, EmbedderOptions};

/// The tree's own embedder, when it is not TF-IDF (whose fitted model is
/// kept beside the tree).
#[derive(clap::Args, Debug)]
pub struct TreeEmbedderArgs {
    /// Precomputed vectors of the new documents (a tree built with
    /// --embeddings): a .npy file, row i = document i of the input.
    #[arg(long)]
    embeddings: Option<PathBuf>,
    /// Embeddings server base URL (a tree built with --embedder openai).
    #[arg(long)]
    endpoint: Option<String>,
    /// Embedding model name (a tree built with --embedder openai).
    #[arg(long)]
    model: Option<String>,
    /// Environment variable holding the embeddings API key.
    #[arg(long)]
    api_key_env: Option<String>,
    /// Model folder of a minilm or bge-small tree's embedder.
    #[arg(long)]
    model_dir: Option<PathBuf>,
}

/// `treenav add TREE INPUT`.
#[derive(clap::Args, Debug)]
pub struct AddArgs {
    /// The tree file.
    tree: PathBuf,
    /// The documents, in any input format `treenav build` reads; a
    /// document whose id the tree has replaces it.
    input: PathBuf,
    /// Force the input format instead of detecting it.
    #[arg(long, value_parser = ["beir", "squad", "passages-jsonl", "passages-tsv", "files"])]
    format: Option<String>,
    /// Word budget of a passage when chunking documents that are not pre-chunked.
    #[arg(long, default_value_t = treenav::corpus::chunk::DEFAULT_PASSAGE_WORDS)]
    passage_words: usize,
    /// Skip bad records (listing them) instead of stopping at the first.
    #[arg(long)]
    skip_bad: bool,
    #[command(flatten)]
    embedder: TreeEmbedderArgs,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// `treenav remove TREE ID… | --ids FILE`.
#[derive(clap::Args, Debug)]
pub struct RemoveArgs {
    /// The tree file.
    tree: PathBuf,
    /// Document ids to remove.
    ids: Vec<String>,
    /// A file of document ids to remove, one per line.
    #[arg(long, value_name = "FILE")]
    ids_file: Option<PathBuf>,
    #[command(flatten)]
    embedder: TreeEmbedderArgs,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// `treenav compact TREE`.
#[derive(clap::Args, Debug)]
pub struct CompactArgs {
    /// The tree file.
    tree: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// The embedder of the tree's new documents: from the flags, else the
/// tree's own when it can be made here (`None` for TF-IDF, whose model is
/// beside the tree, or when the tree needs none).
fn tree_embedder(tree: &Path, args: &TreeEmbedderArgs) -> Result<Option<tree::Embedder>> {
    let options = if let Some(path) = &args.embeddings {
        Some(EmbedderOptions::Vectors {
            path: path.clone(),
            passages: None,
            made_by: None,
        })
    } else if let Some(endpoint) = &args.endpoint {
        Some(EmbedderOptions::Openai {
            endpoint: endpoint.clone(),
            model: args
                .model
                .clone()
                .context("--endpoint needs --model NAME")?,
            api_key_env: args.api_key_env.clone(),
            batch_size: 32,
            timeout_secs: 120,
            concurrency: 4,
            cache_dir: None,
        })
    } else {
        None
    };
    if let Some(options) = options {
        return Ok(Some(tree::Embedder::new(&options, 0)?));
    }
    // The tree's record names its embedder; read the header only.
    let recorded = tree::file::load_meta(tree)?.embedder;
    if let Some(dir) = &args.model_dir {
        let options = if recorded.starts_with("minilm(") {
            EmbedderOptions::Minilm {
                model_dir: Some(dir.clone()),
                batch_size: 32,
                max_tokens: 128,
            }
        } else {
            crate::build::bge_small(Some(dir.clone()), 32)
        };
        return Ok(Some(tree::Embedder::new(&options, 0)?));
    }
    update::embedder_for(&recorded)
        .transpose()
        .map_err(Into::into)
}

pub fn run_add(args: &AddArgs) -> Result<()> {
    let start = Instant::now();
    let embedder = tree_embedder(&args.tree, &args.embedder)?;
    let forced: Option<Format> = args.format.as_deref().map(str::parse).transpose()?;
    let options = LoadOptions {
        skip_bad: args.skip_bad,
        passage_words: args.passage_words,
    };
    let loaded = load_corpus(Some(&args.input), forced, &options, args.json)?;
    let bars = progress::Bars::new(args.json);
    let report = runtime()?.block_on(update::add(
        &args.tree,
        loaded.corpus,
        embedder.as_ref(),
        &bars,
    ))?;
    bars.finish();
    print_report(&args.tree, &report, start, args.json)
}

pub fn run_remove(args: &RemoveArgs) -> Result<()> {
    let start = Instant::now();
    let mut ids = args.ids.clone();
    if let Some(file) = &args.ids_file {
        ids.extend(crate::read_id_file(file, "--ids-file")?);
    }
    if ids.is_empty() {
        bail!("no document ids: give them as arguments or with --ids-file FILE");
    }
    let embedder = tree_embedder(&args.tree, &args.embedder)?;
    let report = runtime()?.block_on(update::remove(&args.tree, &ids, embedder.as_ref()))?;
    print_report(&args.tree, &report, start, args.json)
}

pub fn run_compact(args: &CompactArgs) -> Result<()> {
    let start = Instant::now();
    let done = update::compact(&args.tree)?;
    if args.json {
        return emit_json(&args.tree, &done, start);
    }
    let folded = done.updates.as_ref().map_or(0, |u| u.updates);
    emit(&format!(
        "compacted {}: {folded} updates folded in, {} → {} nodes, in {:.1} s\n",
        args.tree.display(),
        done.nodes_before,
        done.nodes_after,
        start.elapsed().as_secs_f64()
    ))
}

/// `--json`: the tree, what was done, and the seconds it took.
fn emit_json(tree: &Path, done: &impl serde::Serialize, start: Instant) -> Result<()> {
    #[derive(serde::Serialize)]
    struct Out<'a, T> {
        tree: &'a Path,
        #[serde(flatten)]
        done: &'a T,
        seconds: f64,
    }
    emit(&json_text(&Out {
        tree,
        done,
        seconds: start.elapsed().as_secs_f64(),
    })?)
}

fn print_report(tree: &Path, report: &update::Report, start: Instant, json: bool) -> Result<()> {
    let seconds = start.elapsed().as_secs_f64();
    if json {
        return emit_json(tree, report, start);
    }
    let mut o = String::new();
    out!(
        o,
        "{}: generation {}: {} added, {} replaced, {} removed, {} unchanged in {seconds:.2} s",
        tree.display(),
        report.generation,
        report.added,
        report.replaced,
        report.removed,
        report.unchanged
    );
    out!(
        o,
        "  {} leaf splits, {} merges, {} clusters relabelled; delta {} bytes",
        report.splits,
        report.merges,
        report.relabelled,
        report.delta_bytes
    );
    if report.embedded_again {
        out!(
            o,
            "  the tree had no vectors file: its documents were embedded again once (kept now)"
        );
    }
    if report.passages_embedded_again > 0 {
        out!(
            o,
            "  {} passages the tree held without a vector of their own were embedded, once (kept now)",
            report.passages_embedded_again
        );
    }
    if !report.not_found.is_empty() {
        let shown: Vec<std::borrow::Cow<'_, str>> = report
            .not_found
            .iter()
            .take(10)
            .map(|id| crate::one_line(id))
            .collect();
        out!(
            o,
            "  not in the tree ({}): {}",
            report.not_found.len(),
            shown.join(", ")
        );
    }
    emit(&o)
}

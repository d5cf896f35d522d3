//! `treenav query`: navigate a tree for one question and print what was found.

use crate::judge_args::JudgeArgs;
use crate::nav_args::NavArgs;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use treenav::navigator::{Navigator, Retrieval};

/// A query with a word in it: an empty one is a usage error (exit 2).
fn non_empty(s: &str) -> std::result::Result<String, String> {
    if s.trim().is_empty() {
        Err("the query is empty: give a question or keywords".into())
    } else {
        Ok(s.to_string())
    }
}

#[derive(clap::Args, Debug)]
pub struct QueryArgs {
    /// The tree file (from `treenav build`).
    pub tree: PathBuf,
    /// The question (not empty); `-` reads queries from stdin, one per line
    /// (as `--queries -`).
    #[arg(value_parser = non_empty, required_unless_present = "queries")]
    pub query: Option<String>,
    /// Run every query of FILE (`-`: stdin) and write one JSON line per
    /// query, in input order: a line is a query, or a JSON object with
    /// `query` (or BEIR's `text`), optional `id` (or `_id`) and `filter`
    /// (the JSON form, joined to --filter).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "query",
        help_heading = "Batch"
    )]
    pub queries: Option<PathBuf>,
    /// Queries run at once in a batch (1–64); the judge's own limit on
    /// concurrent calls still holds.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64), help_heading = "Batch")]
    pub concurrency: u64,
    #[command(flatten)]
    pub judge: JudgeArgs,
    #[command(flatten)]
    pub nav: NavArgs,
    /// Only documents whose metadata passes: `key=value`, `key!=value`,
    /// `key in [a, b]`, `key>=v`, `key>v`, `key<=v`, `key<v` (numbers or
    /// ISO dates); repeat for more, all must hold.
    #[arg(long = "filter", value_name = "CLAUSE", help_heading = "Navigation")]
    pub filters: Vec<String>,
    /// Print the whole retrieval, trace included, as JSON.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Print the level-by-level trace.
    #[arg(long, help_heading = "Output")]
    pub trace: bool,
}

/// Text on one line, cut at `max` characters.
fn snippet(text: &str, max: usize) -> String {
    treenav::tree::text::one_line(text, max)
}

pub async fn run(args: &QueryArgs) -> Result<()> {
    let config = args.nav.config()?;
    // The trace shows what made each explored passage's score.
    let mut settings = config.best_first_settings().clone();
    settings.keep_evidence = args.trace;
    let config = config.best_first(settings).check()?;
    let filter = treenav::tree::filter::Filter::parse_clauses(&args.filters).context("--filter")?;
    let source = match (&args.queries, args.query.as_deref()) {
        (Some(file), _) => Some(file.clone()),
        (None, Some("-")) => Some(PathBuf::from("-")),
        _ => None,
    };
    // A batch's queries are read (and checked) before the tree is loaded.
    let batch = match &source {
        Some(file) => Some(crate::batch::read_queries(file)?),
        None => None,
    };
    let judge = args.judge.judge()?;
    let tree = treenav::tree::file::load(&args.tree)?;
    let generation = tree.updates().map_or(0, |u| u.updates);
    let navigator = Navigator::new(Arc::new(tree), judge, config)?;
    let name = args
        .tree
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(queries) = batch {
        let run = crate::batch::Batch {
            navigator: &navigator,
            filter: &filter,
            concurrency: usize::try_from(args.concurrency).unwrap_or(1),
            tree: &name,
            generation,
            trace: args.trace,
        };
        return run.run(queries).await;
    }
    let query = args.query.as_deref().unwrap_or_default();
    let found = navigator
        .retrieve_filtered(query, &filter)
        .await
        .context("navigation failed")?;
    if args.json {
        // The service's response type: `treenav serve` answers the same JSON.
        let response = treenav::serve::api::RetrieveResponse::new(&name, found, true, generation);
        return crate::emit(&crate::json_text(&response)?);
    }
    let fitted = treenav::navigator::fusion::fitted_for(&navigator.tree().meta().embedder);
    crate::emit(&print_text(
        &found,
        args.trace.then_some((navigator.tree(), fitted)),
    ))
}

/// The answer in text; with `trace` (the tree's fitted fusion, if any),
/// how it was found.
fn print_text(
    found: &Retrieval,
    trace: Option<(
        &treenav::tree::Tree,
        Option<treenav::navigator::fusion::FittedFusion>,
    )>,
) -> String {
    let mut o = String::new();
    use crate::one_line;
    out!(o, "query: {}\n", one_line(&found.query));
    for (i, p) in found.passages.iter().enumerate() {
        let (title, id) = (one_line(&p.title), one_line(&p.id));
        out!(o, "{:>2}. [{:.3}] {title} — {id}", i + 1, p.score);
        out!(o, "    {}", snippet(&p.text, 220));
        if !p.metadata.is_empty() {
            let metadata = serde_json::Value::Object(p.metadata.clone()).to_string();
            out!(o, "    metadata: {}", snippet(&metadata, 220));
        }
    }
    if found.exhausted {
        out!(o, "(only {} passages within reach)", found.passages.len());
    }
    let t = &found.trace;
    out!(o,
        "\nscore: the calibrated relevance probability, one scale down the list (--json also gives the judge's P(yes) and the shortlist's choice probability)\n{} candidates judged in {} calls ({} from cache), {} input tokens, ${:.6}, {:.1} ms; {:.1}% of document titles read",
        t.candidates_judged,
        t.usage.calls,
        t.usage.cache_hits,
        t.usage.input_tokens,
        t.usage.cost_usd,
        t.latency_ms,
        t.titles_read * 100.0
    );
    match (t.explore_budget, t.judge_budget, t.judge_skipped) {
        (Some(e), _, Some(lead)) => out!(o,
            "cascade: the embedding judge explored ({e} budget, {} vectors scored) and was sure (its best leads by {lead:.1} logits, --skip-judge-gap): the judge was not called",
            t.usage.vectors_scored
        ),
        (Some(e), Some(j), None) => out!(o,
            "cascade: the embedding judge explored ({e} budget, {} vectors scored), the judge spent {j}{}",
            t.usage.vectors_scored,
            t.judge_weight.map_or(String::new(), |w| format!(
                " and reordered what it read, one of its logits worth {w:.2} of the exploration's (more on a question, most over sentence-sized passages)"
            ))
        ),
        (Some(e), None, None) => out!(o,
            "the embedding judge: {} vectors scored (budget {e}), the query embedded once",
            t.usage.vectors_scored
        ),
        _ => {}
    }
    if let Some((tree, fitted)) = trace {
        crate::trace::explain(&mut o, found, tree, fitted);
    }
    o
}

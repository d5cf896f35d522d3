//! `treenav query`: navigate a tree for one question and print what was found.

use crate::judge_args::JudgeArgs;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use treenav::navigator::{
    defaults, BestFirstConfig, Navigator, NavigatorConfig, OnJudgeError, Retrieval, Strategy,
};

/// A query with a word in it: an empty one is a usage error (exit 2).
fn non_empty(s: &str) -> std::result::Result<String, String> {
    if s.trim().is_empty() {
        Err("the query is empty: give a question or keywords".into())
    } else {
        Ok(s.to_string())
    }
}

/// `--strategy`'s values: every registered strategy, with its profile's line.
fn strategies() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        Strategy::ALL
            .iter()
            .map(|s| clap::builder::PossibleValue::new(s.name()).help(s.profile().about)),
    )
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

/// The navigator's flags, shared by `query` and `bench`.
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Navigation")]
pub struct NavArgs {
    /// Passages returned (r).
    #[arg(long, default_value_t = defaults::RETURNED_PASSAGES)]
    pub top: usize,
    /// At most N passages of one document in the result (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub per_document: usize,
    /// Passages reranked by one multiple-choice question (m ≤ r; 0 turns it off).
    #[arg(long, default_value_t = defaults::SHORTLIST)]
    pub shortlist: usize,
    /// Candidates kept per level, top level first, e.g. 20,10 (missing levels keep 10).
    #[arg(long, value_delimiter = ',')]
    pub budgets: Vec<usize>,
    /// Candidates per judge call (1–200).
    #[arg(long, default_value_t = defaults::BATCH_SIZE)]
    pub batch_size: usize,
    /// Member titles on a cluster's card.
    #[arg(long, default_value_t = defaults::CARD_TITLES)]
    pub card_titles: usize,
    /// Sentences shown after a document's title.
    #[arg(long, default_value_t = defaults::LEAD_SENTENCES)]
    pub lead_sentences: usize,
    /// Turn off calibration across the batches of a level (shared references).
    #[arg(long)]
    pub no_calibration: bool,
    /// Add the top N BM25 documents to the document level, always expanded (0: off).
    #[arg(long, default_value_t = defaults::LEXICAL_ENTRY)]
    pub lexical_entry: usize,
    /// Score a batch whose judge call fails with the lexical judge instead of failing.
    #[arg(long)]
    pub fallback: bool,
    /// Time limit of the query in seconds.
    #[arg(long)]
    pub deadline: Option<f64>,
    /// Cost limit of the query in USD.
    #[arg(long)]
    pub max_cost: Option<f64>,
    /// How judgments are spent: `best-first` spends --judge-budget;
    /// `levels` keeps --budgets per level (≈ 8× the judgments for the same
    /// quality on SciFact).
    #[arg(long, default_value = Strategy::default().name(), value_parser = strategies())]
    pub strategy: String,
    /// best-first: candidates shown to the judge per query, calibration
    /// references and the shortlist rerank included.
    #[arg(long, default_value_t = BestFirstConfig::default().judge_budget)]
    pub judge_budget: usize,
    /// best-first: candidates per judge call.
    #[arg(long, default_value_t = BestFirstConfig::default().slate_size)]
    pub slate_size: usize,
    /// best-first: sequential rounds the budget is spread over.
    #[arg(long, default_value_t = BestFirstConfig::default().rounds)]
    pub rounds: usize,
    /// best-first: do not follow the tree's neighbour lists.
    #[arg(long)]
    pub no_neighbours: bool,
    /// best-first: use the clusters too (evidence up, cluster siblings);
    /// off by default, measured to add nothing over the neighbour lists.
    #[arg(long)]
    pub clusters: bool,
    /// best-first: do not use the clusters (the default; kept for scripts).
    #[arg(long)]
    #[arg(hide = true)]
    pub no_clusters: bool,
    /// best-first: judge cluster cards too.
    #[arg(long)]
    pub cards: bool,
    /// best-first: path relevance weight α (own score vs the parent's path score).
    #[arg(long, default_value_t = BestFirstConfig::default().path_weight)]
    pub path_weight: f64,
    /// best-first: a neighbour's priority is this times its source's score.
    #[arg(long, default_value_t = BestFirstConfig::default().neighbour_weight)]
    pub neighbour_weight: f64,
    /// best-first: a judged document's other passages get at least this
    /// times its score as priority (0: only the path score, α times it).
    #[arg(long, default_value_t = BestFirstConfig::default().sibling_weight)]
    pub sibling_weight: f64,
    /// best-first: alternate the lexical list (passages by BM25) and the
    /// graph one for one (as GAR does) instead of splitting each round by
    /// how well each route's picks scored in the last round (the default,
    /// within 20–80%, the lexical list's passage and document orders too).
    #[arg(long)]
    pub alternate: bool,
    /// The default now (kept so scripts that pass it still run).
    #[arg(long, hide = true, conflicts_with = "alternate")]
    pub adaptive_split: bool,
    /// best-first: order the judged passages by the judge's score fused with
    /// the search's evidence (BM25 rank, judged neighbours), weight W on the
    /// logit scale (0: the judge's score alone).
    #[arg(long, default_value_t = BestFirstConfig::default().fusion)]
    pub fusion: f64,
    /// best-first: the cascade's first stage, vectors the embedding judge
    /// scores per query (the tree's own embedder: the query embedded once,
    /// stored passage vectors read; BM25's list, a descent of the clusters
    /// by centroid and the neighbour lists). With --judge embedding (the
    /// default) the only stage; with another judge, that judge then spends
    /// --judge-budget on what it ranked best. 0 turns it off.
    #[arg(long, default_value_t = BestFirstConfig::default().explore_budget)]
    pub explore_budget: usize,
    /// best-first: the exploration's final order, the embedding judge's
    /// score fused with BM25's rank and the judged neighbours (weight on the
    /// logit scale; 0: the embedding alone).
    #[arg(long, default_value_t = BestFirstConfig::default().explore_fusion)]
    pub explore_fusion: f64,
    /// best-first, cascade: how much the exploration's score counts beside
    /// the judge's in the final order (weight on the logit scale).
    #[arg(long, default_value_t = BestFirstConfig::default().explore_weight)]
    pub explore_weight: f64,
    /// best-first: the exploration's centred fusion leaves out each judged
    /// passage's own BM25 rank among the judged (counted by default; a
    /// fitted fusion always counts it).
    #[arg(long)]
    pub no_passage_evidence: bool,
    /// best-first: the exploration's final order by the centred fusion
    /// (--explore-fusion) even where a fusion fitted for the tree's
    /// embedder exists (docs/calibration.md).
    #[arg(long)]
    pub no_fitted_fusion: bool,
    /// best-first, cascade: do not call the judge when the exploration is
    /// sure, its best passage leading the second best by G logits or more
    /// (the fitted fusion's calibrated P; docs/calibration.md).
    #[arg(long, value_name = "G", default_value_t = BestFirstConfig::default().skip_judge_gap)]
    pub skip_judge_gap: f64,
    /// best-first, cascade: call the judge on every query, however sure the
    /// exploration is (--skip-judge-gap off).
    #[arg(long)]
    pub always_judge: bool,
    /// best-first: never judge past --judge-budget, even when it leaves
    /// fewer than --top passages (by default the search widens until it has
    /// --top).
    #[arg(long)]
    pub no_widen: bool,
}

impl NavArgs {
    pub fn config(&self) -> Result<NavigatorConfig> {
        let best_first = BestFirstConfig {
            judge_budget: self.judge_budget,
            slate_size: self.slate_size,
            rounds: self.rounds,
            neighbours: !self.no_neighbours,
            clusters: self.clusters && !self.no_clusters,
            cards: self.cards,
            path_weight: self.path_weight,
            neighbour_weight: self.neighbour_weight,
            sibling_weight: self.sibling_weight,
            adaptive_split: !self.alternate,
            fusion: self.fusion,
            explore_budget: self.explore_budget,
            explore_fusion: self.explore_fusion,
            explore_weight: self.explore_weight,
            passage_evidence: !self.no_passage_evidence,
            fitted_fusion: !self.no_fitted_fusion,
            skip_judge_gap: match self.always_judge {
                true => f64::INFINITY,
                false => self.skip_judge_gap,
            },
            keep_evidence: false,
            tfidf_vectors: false,
            widen: !self.no_widen,
        };
        let config = NavigatorConfig::default()
            .strategy(self.strategy.parse::<Strategy>()?)
            .best_first(best_first)
            .returned_passages(self.top)
            .per_document(self.per_document)
            .shortlist(self.shortlist.min(self.top))
            .retention_budgets(self.budgets.iter().copied())
            .batch_size(self.batch_size)
            .card_titles(self.card_titles)
            .lead_sentences(self.lead_sentences)
            .calibration(!self.no_calibration)
            .lexical_entry(self.lexical_entry)
            .on_judge_error(if self.fallback {
                OnJudgeError::Fallback
            } else {
                OnJudgeError::Fail
            })
            .deadline_secs(self.deadline)
            .max_cost_usd(self.max_cost);
        // Checked here so an error names the flag typed, not the field.
        if let Err(e) = config.clone().check() {
            anyhow::bail!("{}", as_flags(&e.to_string()));
        }
        Ok(config)
    }
}

/// A navigator error's field names as the flags that set them.
fn as_flags(message: &str) -> String {
    const FLAGS: [(&str, &str); 18] = [
        ("explore_budget", "--explore-budget"),
        ("explore_fusion", "--explore-fusion"),
        ("explore_weight", "--explore-weight"),
        ("skip_judge_gap", "--skip-judge-gap"),
        ("returned_passages", "--top"),
        ("judge_budget", "--judge-budget"),
        ("batch_size", "--batch-size"),
        ("slate_size", "--slate-size"),
        ("rounds", "--rounds"),
        ("path_weight", "--path-weight"),
        ("neighbour_weight", "--neighbour-weight"),
        ("sibling_weight", "--sibling-weight"),
        ("fusion", "--fusion"),
        ("lead_sentences", "--lead-sentences"),
        ("per_document", "--per-document"),
        ("max_cost_usd", "--max-cost"),
        ("deadline_secs", "--deadline"),
        ("shortlist", "--shortlist"),
    ];
    let mut out = String::with_capacity(message.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let flag = FLAGS
            .iter()
            .find(|(field, _)| field == word)
            .map(|(_, f)| *f);
        out.push_str(flag.unwrap_or(word));
        word.clear();
    };
    for c in message.chars() {
        if c.is_ascii_lowercase() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
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
            "cascade: the embedding judge explored ({e} budget, {} vectors scored), the judge spent {j}",
            t.usage.vectors_scored
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

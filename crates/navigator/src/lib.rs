//! The navigator: retrieval without a vector index at query time.
//!
//! A [`Navigator`] searches a [`Tree`](treenav_tree::Tree) for the passages
//! that answer a question. By default ([`Navigator::builder`], the engine
//! `treenav query` and `serve` run) the strategy is best-first: the tree's
//! own embedder judges first (the query embedded once, stored vectors read
//! for the passages the search reaches, fused with BM25's list by a fitted
//! model), then slates of the most promising candidates are judged round by
//! round under a judgment budget; a judge named instead (a cross-encoder,
//! an LLM) reads the exploration's best. `Strategy::Levels` is the paper's
//! walk: at each level the candidates (cluster cards, then documents as
//! title + lead, then passages) are shown to a decision model
//! **together**, in batches of up to `batch_size` per call; the top `k_l`
//! are expanded. The best `m` passages are reranked with one
//! multiple-choice question. Every step is recorded in a [`Trace`].
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use treenav_navigator::Navigator;
//! let tree = treenav_tree::file::load("notes.tree".as_ref())?;
//! let navigator = Navigator::builder(Arc::new(tree)).build()?;
//! for p in navigator.retrieve("how do I rotate the keys?").await?.passages {
//!     println!("{:.3} {}", p.score, p.text);
//! }
//! # Ok(()) }
//! ```
//!
//! Any judge and settings, here the lexical judge on the level walk:
//!
//! ```
//! use std::sync::Arc;
//! use treenav_corpus::{load_str, Format, LoadOptions};
//! use treenav_judge::{Judge, JudgeOptions};
//! use treenav_navigator::{Navigator, NavigatorConfig, Strategy};
//! use treenav_builder::{build_tree, Embedder, EmbedderOptions, NoProgress, Summarizer, SummarizerOptions, TreeParams};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let topics = ["Insulin lowers blood glucose.", "The striker scored a goal.", "Lava flows from volcanoes."];
//! let jsonl: Vec<String> = (0..30)
//!     .map(|i| format!(r#"{{"_id":"d{i}","title":"Note {i}","text":"{} Item {i}."}}"#, topics[i % 3]))
//!     .collect();
//! let corpus = load_str(&jsonl.join("\n"), "corpus.jsonl", Format::Beir, &LoadOptions::default())?;
//! let params = TreeParams::default().branching(10).check()?;
//! let embedder = Embedder::new(&EmbedderOptions::default(), params.seed())?;
//! let summarizer = Summarizer::new(&SummarizerOptions::Extractive)?;
//! let tree = build_tree(corpus, "notes", &params, &embedder, &summarizer, &NoProgress).await?;
//!
//! let judge = Judge::new(&JudgeOptions::default())?;
//! // The paper's level-by-level walk (the default is best-first).
//! let config = NavigatorConfig::default()
//!     .strategy(Strategy::Levels)
//!     .retention_budgets([3, 5])
//!     .lexical_entry(0)
//!     .check()?;
//! let navigator = Navigator::new(Arc::new(tree), judge, config)?;
//! let found = navigator.retrieve("what lowers blood glucose").await?;
//! assert!(found.passages[0].text.contains("Insulin"));
//! for level in &found.trace.levels {
//!     println!("level {} ({}): {} shown, {} kept", level.depth, level.kind, level.candidates.len(), level.kept);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
//! ```
#![warn(missing_docs)]

mod builder;
#[cfg(test)]
mod cascade_tests;
mod config;
#[cfg(test)]
mod filter_tests;
pub mod fusion;
mod labels;
mod navigate;
pub mod query_form;
mod scope;
mod semantic;
pub mod settings;
#[macro_use]
mod strategy;
#[cfg(test)]
mod tests;
mod texts;
mod view;

pub use best_first::settings::BestFirstConfig;
pub use builder::NavigatorBuilder;
pub use config::{defaults, NavigatorConfig, OnJudgeError, ValidConfig, DEFAULT_BUDGET};
pub use navigate::Navigator;
pub use strategy::Profile as StrategyProfile;
pub use texts::{list_judge, TextVectors};

strategies! {
    /// One global frontier under a hard judgment budget (the default
    /// everywhere: the library, the CLI, `serve` and the bench): the
    /// embedding judge explores first where the tree has vectors, then
    /// slates of the most promising candidates (BM25's list sharing the
    /// slots with neighbours, a judged document's other passages and, when
    /// on, cluster cards, by path relevance) are judged round by round
    /// until the budget is spent.
    #[default]
    BestFirst in best_first,
    /// The paper's walk: every level judged in full, the top k_l expanded.
    Levels in levels,
}

use serde::Serialize;
use treenav_judge::Usage;
use treenav_tree::{LevelKind, NodeId};

/// Result of the navigator crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of navigation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting is not valid.
    #[error("invalid navigator setting: {0}")]
    Config(String),
    /// A setting, named as flags and requests name it, is out of its
    /// kind or range (see [`settings`]).
    #[error("invalid navigator setting: {name} {problem}")]
    Setting {
        /// The setting's name (`judge_budget`).
        name: String,
        /// What is wrong (`must be in 1..=200, got 0`).
        problem: String,
    },
    /// A judge call failed after retries (and no fallback was allowed).
    #[error("judging level {level} ({kind}), batch {batch} failed: {source}")]
    Judge {
        /// Depth of the level (1 = the root's children), or the round.
        level: usize,
        /// What was being judged.
        kind: Judging,
        /// Batch index within the level.
        batch: usize,
        /// The judge's error (see `retryable()`).
        source: treenav_judge::Error,
    },
    /// The judge could not be set up for this tree (its corpus statistics).
    #[error("cannot set up the judge for this tree: {0}")]
    JudgeSetup(#[source] treenav_judge::Error),
    /// The shortlist rerank failed.
    #[error("the shortlist rerank failed: {0}")]
    Rerank(#[source] treenav_judge::Error),
    /// The query's deadline passed.
    #[error("the query's deadline of {0:.1} s passed before navigation finished")]
    Deadline(f64),
    /// The query's cost cap was reached.
    #[error("the query's cost cap of ${cap:.4} was reached (spent ${spent:.4}) at level {level}")]
    CostCap {
        /// The cap.
        cap: f64,
        /// What was spent.
        spent: f64,
        /// The level reached.
        level: usize,
    },
    /// The tree cannot be navigated (e.g. it has no passage).
    #[error("cannot navigate this tree: {0}")]
    Tree(String),
    /// Reading the tree's texts, statistics or lexical index failed.
    #[error("cannot read this tree: {0}")]
    TreeData(#[from] treenav_tree::Error),
    /// The query has no word to look for (empty or whitespace only).
    #[error("the query is empty: give a question or keywords")]
    EmptyQuery,
    /// The filter names a field no document of the tree carries.
    #[error("{0}")]
    Filter(#[source] treenav_tree::filter::FilterError),
}

/// A setting out of its range is a [`Error::Config`] naming it.
impl From<treenav_judge::checked::OutOfRange> for Error {
    fn from(e: treenav_judge::checked::OutOfRange) -> Error {
        Error::Config(e.to_string())
    }
}

/// One returned passage.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RankedPassage {
    /// The passage id.
    pub id: String,
    /// Its document's id.
    pub document_id: String,
    /// Its document's title.
    pub title: String,
    /// The passage text.
    pub text: String,
    /// Its node.
    #[cfg_attr(feature = "openapi", schema(value_type = u32))]
    pub node: NodeId,
    /// The path from the root to it.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<u32>))]
    pub path: Vec<NodeId>,
    /// P(yes) of each node on the path below the root, top first (the
    /// probabilities that brought it here).
    pub path_probabilities: Vec<f64>,
    /// P(yes) at the passage level.
    pub probability: f64,
    /// The passage's relevance score, one probability scale for every rank
    /// and query, non-increasing down the list: the judge's calibrated
    /// P(yes) (fused with the search's evidence under best-first with
    /// `fusion` above 0, [`crate::fusion`]); within the shortlist, the
    /// shortlist's scores dealt out again in the order its multiple-choice
    /// answer gave. Filter on this one.
    pub score: f64,
    /// Its probability in the shortlist rerank, if it was in the shortlist.
    pub rerank_probability: Option<f64>,
    /// Its document's metadata (the extra fields of its source record;
    /// empty when there were none).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// Why a candidate was shown at a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// Reached by expanding a kept parent.
    Tree,
    /// Added by the lexical entry (BM25 over documents; best-first: the
    /// passages of the top BM25 documents, by their own BM25 score).
    Lexical,
    /// Best-first: a top BM25 document's best passage, in the documents'
    /// BM25 order (the lexical list's second order).
    LexicalDocument,
    /// Best-first, the cascade's judge stage: picked from the exploration's
    /// ranking (passages in its order, or each document's best), which
    /// takes the lexical list's place there.
    Explored,
    /// Both.
    Both,
    /// Shown in every batch as a calibration reference.
    Reference,
    /// Best-first: a neighbour of a judged document (`via` names it).
    Neighbour,
    /// Best-first: evidence from below — another passage of a judged
    /// document, or an unjudged member of a cluster a judged member raised
    /// (`via` names the node whose score brought it).
    Evidence,
}

impl Route {
    /// Its name as the JSON trace spells it (`lexical_document`, …).
    pub fn name(self) -> &'static str {
        match self {
            Route::Tree => "tree",
            Route::Lexical => "lexical",
            Route::LexicalDocument => "lexical_document",
            Route::Explored => "explored",
            Route::Both => "both",
            Route::Reference => "reference",
            Route::Neighbour => "neighbour",
            Route::Evidence => "evidence",
        }
    }

    /// How a candidate got here, in words (`--trace`); `via`, when the
    /// route has one, follows it.
    pub fn words(self) -> &'static str {
        match self {
            Route::Tree => "a child of a kept node",
            Route::Lexical => "BM25's list of passages",
            Route::LexicalDocument => "the best passage of a document in BM25's list",
            Route::Explored => "the exploration's ranking",
            Route::Both => "the tree and BM25's list",
            Route::Reference => "a calibration reference",
            Route::Neighbour => "a neighbour of",
            Route::Evidence => "raised by its document or cluster, judged in",
        }
    }
}

impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One candidate shown at a level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceCandidate {
    /// The node.
    pub node: NodeId,
    /// What the judge saw (possibly cut).
    pub label: String,
    /// P(yes) as judged (after calibration, when on).
    pub probability: f64,
    /// Whether it was kept (expanded, or returned at the leaves).
    pub kept: bool,
    /// How it got here.
    pub route: Route,
    /// Its batch within the level.
    pub batch: usize,
    /// Whether its batch was scored by the lexical fallback.
    pub fallback: bool,
    /// Best-first: the judged node whose score brought it onto the frontier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<NodeId>,
    /// Best-first: its priority on the frontier when it was picked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
}

/// One round of best-first navigation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundTrace {
    /// 1-based round.
    pub round: usize,
    /// The cascade's stage: `explore` (the embedding judge) or `judge`.
    pub stage: &'static str,
    /// Judge calls (slates) of the round, run concurrently.
    pub slates: usize,
    /// Every candidate shown, references included, in the order shown;
    /// `batch` is its slate.
    pub candidates: Vec<TraceCandidate>,
    /// Judgments left after this round (before the shortlist rerank's).
    pub budget_left: usize,
    /// What the round cost.
    pub usage: Usage,
    /// Wall time of the round's judge calls (run concurrently), ms.
    pub judge_ms: f64,
}

/// What a failed judge call was judging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judging {
    /// A level of the `levels` walk.
    Level(LevelKind),
    /// A round of `best-first`.
    BestFirstRound,
}

impl std::fmt::Display for Judging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Judging::Level(kind) => kind.fmt(f),
            Judging::BestFirstRound => f.write_str("best-first round"),
        }
    }
}

/// One decider call of a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CallTrace {
    /// Candidates the call scored for the level.
    pub candidates: usize,
    /// Calibration references shown beside them (the level's first
    /// candidates, in every call but the one holding them).
    pub references: usize,
    /// Whether the lexical fallback answered it.
    pub fallback: bool,
}

/// One level of the walk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelTrace {
    /// Depth (1 = the root's children).
    pub depth: usize,
    /// Node kind at this level (serialised as its name).
    pub kind: LevelKind,
    /// The budget that applied (k_l, or r at the leaves), plus the documents
    /// the lexical entry added, which are always kept.
    pub budget: usize,
    /// Candidates kept.
    pub kept: usize,
    /// Decider calls (planned within the decider's limits: never split again).
    pub batches: usize,
    /// Each call: candidates it scored and calibration references beside them.
    pub calls: Vec<CallTrace>,
    /// Every candidate scored, in the order shown.
    pub candidates: Vec<TraceCandidate>,
    /// What judging this level cost (`usage.latency_ms` adds up the
    /// batches' times; `judge_ms` is the wall time).
    pub usage: Usage,
    /// Wall time of judging this level (its batches run concurrently), ms.
    pub judge_ms: f64,
}

/// The record of one retrieval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trace {
    /// The strategy that ran (`levels` or `best-first` in JSON).
    pub strategy: Strategy,
    /// The judge this query was set up with (`embedding`, `lexical`,
    /// `cross-encoder`, …; `lexical` where the embedding judge was asked on
    /// a tree without usable vectors). In a cascade it is the second stage:
    /// `judge_skipped` says when it was not asked.
    pub judge: &'static str,
    /// Best-first: the judge's budget (`None` when the embedding judge
    /// explored alone).
    pub judge_budget: Option<usize>,
    /// Best-first: the exploration's budget (vectors), when the embedding
    /// judge explored first.
    pub explore_budget: Option<usize>,
    /// Best-first, cascade: the judge was not asked because the
    /// exploration was sure: its best passage led the second best by this
    /// many logits (at least `skip_judge_gap`). `None` when the judge ran,
    /// or there was no second stage.
    pub judge_skipped: Option<f64>,
    /// Best-first, cascade with a fitted model: how much one logit of the
    /// judge counted against one of the exploration's in this query (by
    /// the judge's gap, the query's form and its passages' size,
    /// [`fusion::FittedCascade::judge_weight`]). `None` otherwise.
    pub judge_weight: Option<f64>,
    /// Best-first: whether the tree's neighbour lists were followed (off
    /// for trees built without them).
    pub neighbourhoods: bool,
    /// The levels walked, top first (`levels`).
    pub levels: Vec<LevelTrace>,
    /// The rounds judged (`best-first`).
    pub rounds: Vec<RoundTrace>,
    /// The shortlist rerank's cost, if it ran.
    pub rerank: Option<Usage>,
    /// Everything the query cost.
    pub usage: Usage,
    /// Document nodes shown to the judge, over all document nodes (the paper read 16%).
    pub titles_read: f64,
    /// Candidates shown to the judge in all: calibration references and the
    /// shortlist rerank included.
    pub candidates_judged: usize,
    /// Wall time of the query in milliseconds.
    pub latency_ms: f64,
}

/// Ranked passages and the trace that produced them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Retrieval {
    /// The query.
    pub query: String,
    /// Passages, best first: the reranked shortlist, then the rest.
    pub passages: Vec<RankedPassage>,
    /// Fewer passages than `returned_passages` were asked for: the search
    /// widened (past the level budgets, or the judge budget) until nothing
    /// was left to reach.
    pub exhausted: bool,
    /// How they were found.
    pub trace: Trace,
    /// Each passage the exploration judged, with its evidence, when the
    /// configuration keeps it (`keep_evidence`); empty otherwise.
    #[serde(skip)]
    pub evidence: Vec<(NodeId, fusion::Evidence)>,
}

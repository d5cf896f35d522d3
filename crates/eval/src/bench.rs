//! The bench runner: systems over a dataset's queries, scored the same way.
//!
//! # The report's JSON schema (`treenav-bench/2`)
//!
//! ```text
//! {
//!   "schema": "treenav-bench/2",
//!   "dataset": { "path", "name", "format": "squad"|"beir", "split", "gold": "passage"|"document",
//!                "documents", "passages", "queries", "queries_total" },
//!   "seed": u64, "limit": u64|null,
//!   "config": { ... the settings used: judge, navigator, rerank_n, rrf_k, embedder ... },
//!   "order": ["tree", "bm25", ...],            // systems in the order run
//!   "systems": {
//!     "<name>": {
//!       "passage":  { "hit_at_1", "hit_at_5", "recall_at_10", "mrr_at_10", "ndcg_at_10" },
//!       "document": { same keys },             // gold documents (SQuAD: the gold paragraph's article)
//!       "candidates_judged", "judge_calls", "cache_hits", "titles_read",
//!       "input_tokens", "cost_usd", "seconds_per_query",   // per-query means
//!       "latency_p50_ms", "latency_p95_ms",
//!       "queries_per_second",                  // throughput at the run's concurrency
//!       "time_by_step": [ { "step": "1 cluster"|…|"rounds"|"rerank", "candidates",
//!                           "input_tokens", "judge_ms", "share" } ],   // navigated systems
//!       "navigation": null | {                 // tree only
//!         "reached_leaves": share of queries whose gold document was expanded,
//!         "returned": share with a gold passage among the returned passages,
//!         "levels": [ { "depth", "kind",
//!                       "kept": share whose gold ancestor was kept at this level,
//!                       "lost": share lost here for good (kept by no level below) } ]
//!       }
//!     }
//!   },
//!   "skipped": { "<name>": "why" }
//! }
//! ```
//!
//! Passage-level relevance: SQuAD, the gold paragraph; BEIR, any passage of
//! a gold document (Recall@10 counts gold documents covered). Document
//! level ranks documents by their first passage in the passage ranking.

use crate::baselines::{judge_rank, rrf, Bm25, Collection, Dense};
use crate::dataset::{Dataset, DatasetFormat, GoldLevel, Query};
use crate::metrics::{quantile, score, Mean, Metrics};
use crate::{Error, Result};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;
use treenav_judge::{Judge, JudgeOptions, Usage};
use treenav_navigator::{Navigator, Retrieval, ValidConfig};
use treenav_tree::{Embedder, NodeId, Progress, Tree};

/// The schema tag written in every report.
pub const SCHEMA: &str = "treenav-bench/2";

/// A retrieval system the bench can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemKind {
    /// The navigator over the tree.
    Tree,
    /// Flat BM25 over all passages.
    Bm25,
    /// Brute-force cosine over passage embeddings.
    Dense,
    /// BM25 and dense fused by Reciprocal Rank Fusion.
    Hybrid,
    /// BM25 top N judged by the judge, then the shortlist rerank.
    Rerank,
    /// The judge over every passage, then the shortlist rerank.
    Flat,
    /// Best-first over the BM25 list and the tree's neighbour lists, without
    /// the clusters (the ablation that shows what the tree adds).
    Gar,
}

impl SystemKind {
    /// Every system, in the order they are run.
    pub const ALL: [SystemKind; 7] = [
        SystemKind::Tree,
        SystemKind::Bm25,
        SystemKind::Dense,
        SystemKind::Hybrid,
        SystemKind::Rerank,
        SystemKind::Flat,
        SystemKind::Gar,
    ];

    /// Its name in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SystemKind::Tree => "tree",
            SystemKind::Bm25 => "bm25",
            SystemKind::Dense => "dense",
            SystemKind::Hybrid => "hybrid",
            SystemKind::Rerank => "rerank",
            SystemKind::Flat => "flat",
            SystemKind::Gar => "gar",
        }
    }

    /// Whether it asks the judge.
    pub fn uses_judge(self) -> bool {
        matches!(
            self,
            SystemKind::Tree | SystemKind::Rerank | SystemKind::Flat | SystemKind::Gar
        )
    }

    /// Whether it needs an embedder.
    pub fn uses_embedder(self) -> bool {
        matches!(self, SystemKind::Dense | SystemKind::Hybrid)
    }
}

impl std::str::FromStr for SystemKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<SystemKind> {
        SystemKind::ALL
            .into_iter()
            .find(|k| k.name() == s.trim())
            .ok_or_else(|| {
                Error::Config(format!(
                    "unknown system `{s}` (systems: tree, bm25, dense, hybrid, rerank, flat, gar)"
                ))
            })
    }
}

/// What the bench runs with.
#[derive(Debug, Clone)]
pub struct BenchSetup {
    /// Systems to run, in order.
    pub systems: Vec<SystemKind>,
    /// The judge (a fresh one is built per system, so no system reads
    /// another's cache).
    pub judge: JudgeOptions,
    /// The navigator's settings; `rerank` and `flat` use its batch size,
    /// calibration and shortlist too.
    pub navigator: ValidConfig,
    /// The tree, for `tree`.
    pub tree: Option<Arc<Tree>>,
    /// The embedder, for `dense` and `hybrid`.
    pub embedder: Option<Embedder>,
    /// BM25 candidates `rerank` judges. By default, 100.
    pub rerank_n: usize,
    /// `flat` is skipped above this many passages. By default, 20,000.
    pub flat_max_passages: usize,
    /// RRF's k. By default, 60.
    pub rrf_k: f64,
    /// Seed of the query sample.
    pub seed: u64,
    /// Query sample size, if any.
    pub limit: Option<usize>,
    /// Settings recorded in the report's `config` as given.
    pub config: serde_json::Value,
    /// Judgment budgets to sweep `tree`, `rerank` and `gar` over (empty: no sweep).
    pub judge_budgets: Vec<usize>,
    /// Queries run at once (at least 1). Metric values do not depend on it.
    pub concurrency: usize,
}

/// One system's figures.
#[derive(Debug, Clone, Serialize)]
pub struct SystemReport {
    /// Passage-level means.
    pub passage: Metrics,
    /// Document-level means.
    pub document: Metrics,
    /// Candidates shown to the judge per query: calibration references and
    /// the shortlist rerank included.
    pub candidates_judged: f64,
    /// Sequential judge rounds per query (calls that wait on one another;
    /// the shortlist rerank is one).
    pub rounds: f64,
    /// Judge calls per query (cache hits excluded).
    pub judge_calls: f64,
    /// Judge calls answered from the cache per query.
    pub cache_hits: f64,
    /// Share of all documents whose title (or passage) the judge read.
    pub titles_read: f64,
    /// Input tokens per query.
    pub input_tokens: f64,
    /// Estimated cost per query in USD.
    pub cost_usd: f64,
    /// Mean wall time per query in seconds.
    pub seconds_per_query: f64,
    /// Median latency per query.
    pub latency_p50_ms: f64,
    /// 95th percentile latency per query.
    pub latency_p95_ms: f64,
    /// Throughput: queries answered per second of the system's wall time,
    /// with `concurrency` queries at once.
    pub queries_per_second: f64,
    /// Where the gold was lost on the way down (tree only).
    pub navigation: Option<NavigationLoss>,
    /// Where a query's time goes, step by step (tree and gar: each level or
    /// the best-first rounds, then the shortlist rerank); empty for systems
    /// that do not navigate.
    pub time_by_step: Vec<StepCost>,
}

/// One step of a navigated query, as per-query means.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StepCost {
    /// `1 cluster`, `2 document`, `3 passage`, `rounds` or `rerank`.
    pub step: String,
    /// Candidates shown to the judge.
    pub candidates: f64,
    /// Input tokens (as the judge reports them, else estimated).
    pub input_tokens: f64,
    /// Wall time of the step's judge calls, ms.
    pub judge_ms: f64,
    /// Share of the mean query latency.
    pub share: f64,
}

/// Navigation loss by level.
#[derive(Debug, Clone, Serialize)]
pub struct NavigationLoss {
    /// Share of queries whose gold reached the passage level: a gold
    /// passage's parent document was expanded (through the tree or the
    /// lexical entry).
    pub reached_leaves: f64,
    /// Share of queries with a gold passage among the returned passages.
    pub returned: f64,
    /// Share of queries lost at each level.
    pub levels: Vec<LevelLoss>,
}

/// Queries lost at one level.
#[derive(Debug, Clone, Serialize)]
pub struct LevelLoss {
    /// Depth (1 = the root's children).
    pub depth: usize,
    /// Node kind at that depth.
    pub kind: String,
    /// Share of queries whose gold ancestor was kept at this level.
    pub kept: f64,
    /// Share of queries lost here for good: kept at the level above (or
    /// this is the first level) and at no level below.
    pub lost: f64,
}

/// Facts about the dataset run.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetInfo {
    /// Path given.
    pub path: String,
    /// Short name.
    pub name: String,
    /// Format.
    pub format: DatasetFormat,
    /// BEIR split.
    pub split: Option<String>,
    /// What the gold names.
    pub gold: GoldLevel,
    /// Documents in the corpus.
    pub documents: usize,
    /// Passages in the corpus.
    pub passages: usize,
    /// Queries run.
    pub queries: usize,
    /// Queries in the split before sampling.
    pub queries_total: usize,
}

/// A bench run's report (see the module docs for the schema).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The dataset.
    pub dataset: DatasetInfo,
    /// Seed of the sample.
    pub seed: u64,
    /// Sample size asked for.
    pub limit: Option<usize>,
    /// Settings used.
    pub config: serde_json::Value,
    /// Systems in the order run.
    pub order: Vec<String>,
    /// Figures per system.
    pub systems: BTreeMap<String, SystemReport>,
    /// Systems not run, and why.
    pub skipped: BTreeMap<String, String>,
    /// The judgment-budget sweep (empty without `--judge-budgets`).
    pub judge_budgets: Vec<crate::sweep::BudgetReport>,
}

/// One query's result from one system.
pub(crate) struct Outcome {
    ranking: Vec<usize>,
    candidates_judged: usize,
    usage: Usage,
    titles_read: f64,
    latency_ms: f64,
    /// Tree (levels): whether the gold's ancestor was kept at each level.
    kept: Option<Vec<bool>>,
    /// Sequential judge rounds (calls that wait on one another).
    rounds: usize,
    /// Documents (indices) with anything shown to the judge.
    judged_documents: HashSet<usize>,
    /// What each step of a navigated query cost.
    steps: Vec<StepCost>,
}

/// Gold of one query resolved to passage and document indices.
pub(crate) struct Gold {
    /// Passage gold unit of each passage (by index), for passage metrics.
    passage_unit: HashMap<usize, usize>,
    passage_units: usize,
    passage_relevant: usize,
    /// Gold documents (indices), ordered.
    documents: Vec<usize>,
}

pub(crate) fn resolve(query: &Query, level: GoldLevel, c: &Collection) -> Result<Gold> {
    match level {
        GoldLevel::Passage => {
            let mut passage_unit = HashMap::new();
            let mut documents = Vec::new();
            for (u, id) in query.gold.iter().enumerate() {
                let i = *c.index.get(id).ok_or_else(|| {
                    Error::Config(format!(
                        "query `{}`: gold passage `{id}` is not in the corpus",
                        query.id
                    ))
                })?;
                passage_unit.insert(i, u);
                if !documents.contains(&c.document_of[i]) {
                    documents.push(c.document_of[i]);
                }
            }
            Ok(Gold {
                passage_units: query.gold.len(),
                passage_relevant: query.gold.len(),
                passage_unit,
                documents,
            })
        }
        GoldLevel::Document => {
            let mut passage_unit = HashMap::new();
            let mut documents = Vec::new();
            for (u, id) in query.gold.iter().enumerate() {
                let d = c.documents.iter().position(|x| x == id).ok_or_else(|| {
                    Error::Config(format!(
                        "query `{}`: gold document `{id}` is not in the corpus",
                        query.id
                    ))
                })?;
                documents.push(d);
                for p in &c.passages_of[d] {
                    passage_unit.insert(*p, u);
                }
            }
            Ok(Gold {
                passage_units: documents.len(),
                passage_relevant: passage_unit.len(),
                passage_unit,
                documents,
            })
        }
    }
}

fn metrics(ranking: &[usize], gold: &Gold, c: &Collection) -> (Metrics, Metrics) {
    let passage: Vec<Option<usize>> = ranking
        .iter()
        .take(10)
        .map(|i| gold.passage_unit.get(i).copied())
        .collect();
    let mut seen = HashSet::new();
    let documents: Vec<Option<usize>> = ranking
        .iter()
        .map(|i| c.document_of[*i])
        .filter(|d| seen.insert(*d))
        .take(10)
        .map(|d| gold.documents.iter().position(|g| *g == d))
        .collect();
    (
        score(&passage, gold.passage_units, gold.passage_relevant),
        score(&documents, gold.documents.len(), gold.documents.len()),
    )
}

/// Everything a run needs, built once: the sampled queries, their gold,
/// the flattened collection and the first-stage indexes.
pub(crate) struct Context {
    pub(crate) setup: BenchSetup,
    pub(crate) queries: Vec<Query>,
    pub(crate) golds: Vec<Gold>,
    pub(crate) collection: Collection,
    bm25: Option<Bm25>,
    dense: Option<Dense>,
    stats: Arc<treenav_judge::CorpusStats>,
    /// Document id → document index.
    document_index: HashMap<String, usize>,
}

/// A system ready to run over the queries.
pub(crate) enum Runner {
    Bm25,
    Dense,
    Hybrid,
    /// A list judged by the judge: BM25's top `n` passages, or every passage.
    Judged {
        judge: Judge,
        pool: Option<usize>,
        how: treenav_judge::RankOptions,
    },
    /// The navigator over the tree.
    Tree(Box<Navigator>),
}

impl Context {
    /// Samples the queries, resolves their gold and builds the indexes the
    /// systems (and the budget sweep) need.
    pub(crate) async fn new(
        dataset: &Dataset,
        setup: &BenchSetup,
        progress: &dyn Progress,
    ) -> Result<Context> {
        let mut sampled = dataset.clone();
        if let Some(n) = setup.limit {
            if n == 0 {
                return Err(Error::Config("--limit must be at least 1".into()));
            }
            sampled.sample(n, setup.seed);
        }
        if let Some(tree) = &setup.tree {
            check_tree_corpus(tree, &dataset.corpus)?;
        }
        let collection = Collection::new(&dataset.corpus);
        let golds: Vec<Gold> = sampled
            .queries
            .iter()
            .map(|q| resolve(q, dataset.gold_level, &collection))
            .collect::<Result<_>>()?;
        let sweep = !setup.judge_budgets.is_empty();
        let bm25 = (sweep
            || setup.systems.iter().any(|s| {
                matches!(
                    s,
                    SystemKind::Bm25 | SystemKind::Hybrid | SystemKind::Rerank
                )
            }))
        .then(|| Bm25::new(&collection));
        let dense = match (
            setup.systems.iter().any(|s| s.uses_embedder()),
            &setup.embedder,
        ) {
            (true, Some(embedder)) => {
                Some(Dense::new(embedder.clone(), &collection, progress).await?)
            }
            (true, None) => {
                return Err(Error::Config(
                    "dense and hybrid need an embedder (minilm or openai)".into(),
                ))
            }
            _ => None,
        };
        let document_index = collection
            .documents
            .iter()
            .enumerate()
            .map(|(i, d)| (d.clone(), i))
            .collect();
        Ok(Context {
            setup: setup.clone(),
            queries: sampled.queries,
            golds,
            collection,
            bm25,
            dense,
            stats: dataset.corpus_stats(),
            document_index,
        })
    }

    /// A fresh judge (no system reads another's cache).
    pub(crate) fn judge(&self, system: &str) -> Result<Judge> {
        Judge::new(&self.setup.judge)
            .and_then(|j| j.with_corpus_stats(self.stats.clone()))
            .map_err(|source| Error::Judge {
                system: system.into(),
                query: "-".into(),
                source,
            })
    }

    /// How judged lists are ranked: the navigator's batch size, calibration
    /// and shortlist.
    pub(crate) fn rank_options(&self) -> treenav_judge::RankOptions {
        treenav_judge::RankOptions {
            batch_size: self.setup.navigator.batch_size(),
            calibration: self.setup.navigator.calibration(),
            shortlist: self.setup.navigator.shortlist(),
        }
    }

    /// A navigator over the bench's tree with `config`.
    pub(crate) fn navigator(&self, system: &str, config: ValidConfig) -> Result<Runner> {
        let Some(tree) = &self.setup.tree else {
            return Err(Error::Config(format!("the {system} system needs a tree")));
        };
        let judge = self.judge(system)?;
        let navigator =
            Navigator::new(tree.clone(), judge, config).map_err(|source| Error::Navigate {
                query: "-".into(),
                source,
            })?;
        Ok(Runner::Tree(Box::new(navigator)))
    }

    fn runner(&self, system: SystemKind) -> Result<Runner> {
        let judged = |pool: Option<usize>| -> Result<Runner> {
            Ok(Runner::Judged {
                judge: self.judge(system.name())?,
                pool,
                how: self.rank_options(),
            })
        };
        match system {
            SystemKind::Bm25 => Ok(Runner::Bm25),
            SystemKind::Dense => Ok(Runner::Dense),
            SystemKind::Hybrid => Ok(Runner::Hybrid),
            SystemKind::Rerank => judged(Some(self.setup.rerank_n)),
            SystemKind::Flat => judged(None),
            SystemKind::Tree => self.navigator("tree", self.setup.navigator.clone()),
            SystemKind::Gar => {
                let config = gar_config(
                    &self.setup.navigator,
                    self.setup.navigator.best_first().judge_budget,
                )?;
                self.navigator("gar", config)
            }
        }
    }

    /// Runs one system over every query, `setup.concurrency` queries at
    /// once (each on its own task, so in-process judges use every core).
    /// Returns the outcomes in query order and the wall time in seconds.
    pub(crate) async fn outcomes(
        self: &Arc<Self>,
        name: &str,
        runner: Runner,
        progress: &dyn Progress,
    ) -> Result<(Vec<Outcome>, f64)> {
        progress.stage(name, self.queries.len() as u64);
        let tree_index = match (&runner, &self.setup.tree) {
            (Runner::Tree(_), Some(tree)) => Some(Arc::new(TreeIndex::new(tree.clone()))),
            _ => None,
        };
        let runner = Arc::new(runner);
        let started = Instant::now();
        let mut slots: Vec<Option<Outcome>> = self.queries.iter().map(|_| None).collect();
        let mut tasks = tokio::task::JoinSet::new();
        let mut next = 0;
        while next < slots.len() || !tasks.is_empty() {
            while next < slots.len() && tasks.len() < self.setup.concurrency.max(1) {
                let (ctx, runner, index, name) = (
                    self.clone(),
                    runner.clone(),
                    tree_index.clone(),
                    name.to_string(),
                );
                let i = next;
                tasks.spawn(async move {
                    let start = Instant::now();
                    let outcome = ctx.one(&name, &runner, index.as_deref(), i).await;
                    let latency_ms = start.elapsed().as_secs_f64() * 1000.0;
                    (i, outcome.map(|o| Outcome { latency_ms, ..o }))
                });
                next += 1;
            }
            let Some(joined) = tasks.join_next().await else {
                break;
            };
            let (i, outcome) =
                joined.map_err(|e| Error::Config(format!("a {name} query task failed: {e}")))?;
            slots[i] = Some(outcome?);
            progress.inc(1);
        }
        let seconds = started.elapsed().as_secs_f64();
        Ok((slots.into_iter().flatten().collect(), seconds))
    }

    async fn one(
        &self,
        name: &str,
        runner: &Runner,
        tree_index: Option<&TreeIndex>,
        i: usize,
    ) -> Result<Outcome> {
        let c = &self.collection;
        let (q, gold) = (&self.queries[i], &self.golds[i]);
        Ok(match runner {
            Runner::Bm25 => plain(bm25_top(&self.bm25, &q.text, 100)),
            Runner::Dense => plain(dense_top(&self.dense, &q.text, 100).await?),
            Runner::Hybrid => {
                let lists = vec![
                    bm25_top(&self.bm25, &q.text, 100),
                    dense_top(&self.dense, &q.text, 100).await?,
                ];
                plain(rrf(&lists, self.setup.rrf_k, 100))
            }
            Runner::Judged { judge, pool, how } => {
                let pool: Vec<usize> = match pool {
                    Some(n) => bm25_top(&self.bm25, &q.text, *n),
                    None => (0..c.len()).collect(),
                };
                let judged =
                    judge_rank(judge, &q.text, c, &pool, *how)
                        .await
                        .map_err(|source| Error::Judge {
                            system: name.into(),
                            query: q.id.clone(),
                            source,
                        })?;
                let docs: HashSet<usize> = pool.iter().map(|i| c.document_of[*i]).collect();
                Outcome {
                    ranking: judged.ranking,
                    candidates_judged: judged.candidates_judged,
                    usage: judged.usage,
                    titles_read: docs.len() as f64 / c.documents.len().max(1) as f64,
                    latency_ms: 0.0,
                    kept: None,
                    rounds: if how.shortlist >= 2 && pool.len() >= 2 {
                        2
                    } else {
                        1
                    },
                    judged_documents: docs,
                    steps: Vec::new(),
                }
            }
            Runner::Tree(navigator) => self.navigate(navigator, tree_index, q, gold).await?,
        })
    }

    /// One query through the navigator, with what the trace says was judged.
    async fn navigate(
        &self,
        navigator: &Navigator,
        tree_index: Option<&TreeIndex>,
        q: &Query,
        gold: &Gold,
    ) -> Result<Outcome> {
        let c = &self.collection;
        let found = navigator
            .retrieve(&q.text)
            .await
            .map_err(|source| Error::Navigate {
                query: q.id.clone(),
                source,
            })?;
        let ranking = found
            .passages
            .iter()
            .map(|p| {
                c.index.get(&p.id).copied().ok_or_else(|| {
                    Error::Config(format!(
                        "the tree returned passage `{}`, which the dataset lacks: build the tree from this dataset",
                        p.id
                    ))
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        let kept = tree_index.map(|index| index.kept_by_level(&found, gold, c));
        let judged_documents = tree_index
            .map(|index| index.judged_documents(&found, c, &self.document_index))
            .unwrap_or_default();
        let t = &found.trace;
        Ok(Outcome {
            ranking,
            candidates_judged: t.candidates_judged,
            usage: t.usage.clone(),
            titles_read: t.titles_read,
            latency_ms: 0.0,
            kept: kept.filter(|k| !k.is_empty()),
            rounds: t.levels.len() + t.rounds.len() + usize::from(t.rerank.is_some()),
            judged_documents,
            steps: steps_of(t),
        })
    }
}

/// A navigated query's steps: each level, or all best-first rounds as one,
/// then the shortlist rerank.
fn steps_of(t: &treenav_navigator::Trace) -> Vec<StepCost> {
    let step = |name: String, candidates: usize, usage: &Usage, judge_ms: f64| StepCost {
        step: name,
        candidates: candidates as f64,
        input_tokens: usage.input_tokens as f64,
        judge_ms,
        share: 0.0,
    };
    let mut steps: Vec<StepCost> = t
        .levels
        .iter()
        .map(|l| {
            step(
                format!("{} {}", l.depth, l.kind),
                l.candidates.len(),
                &l.usage,
                l.judge_ms,
            )
        })
        .collect();
    if !t.rounds.is_empty() {
        let mut usage = Usage::default();
        for r in &t.rounds {
            usage.add(&r.usage);
        }
        let shown = t.rounds.iter().map(|r| r.candidates.len()).sum();
        let ms = t.rounds.iter().map(|r| r.judge_ms).sum();
        steps.push(step("rounds".into(), shown, &usage, ms));
    }
    if let Some(u) = &t.rerank {
        let before: usize = steps.iter().map(|s| s.candidates as usize).sum();
        let shown = t.candidates_judged.saturating_sub(before);
        steps.push(step("rerank".into(), shown, u, u.latency_ms));
    }
    steps
}

/// The `gar` ablation's settings: best-first over the BM25 list and the
/// stored neighbour lists only (no clusters, no cards), at `budget`.
pub(crate) fn gar_config(base: &ValidConfig, budget: usize) -> Result<ValidConfig> {
    let bf = treenav_navigator::BestFirstConfig {
        judge_budget: budget,
        clusters: false,
        cards: false,
        neighbours: true,
        ..base.best_first().clone()
    };
    base.settings()
        .clone()
        .strategy(treenav_navigator::Strategy::BestFirst)
        .best_first(bf)
        .check()
        .map_err(|e| Error::Config(e.to_string()))
}

/// Refuses a tree built from another corpus than the dataset's: its
/// passages would not be the dataset's and every figure would be wrong.
/// Trees older than format version 3 carry no fingerprint: a warning.
fn check_tree_corpus(tree: &Tree, corpus: &treenav_corpus::Corpus) -> Result<()> {
    let meta = tree.meta();
    let Some(built_from) = &meta.corpus else {
        tracing::warn!(
            "the tree records no corpus fingerprint (built before format version 3): \
             cannot check that it was built from this dataset"
        );
        return Ok(());
    };
    let dataset = corpus.fingerprint();
    if *built_from != dataset {
        return Err(Error::TreeMismatch {
            source_path: meta.source.clone(),
            tree: built_from.clone(),
            dataset,
        });
    }
    Ok(())
}

/// The `tree` system's settings in the budget sweep: best-first at `budget`.
pub(crate) fn tree_config(base: &ValidConfig, budget: usize) -> Result<ValidConfig> {
    base.settings()
        .clone()
        .strategy(treenav_navigator::Strategy::BestFirst)
        .judge_budget(budget)
        .check()
        .map_err(|e| Error::Config(e.to_string()))
}

/// Runs the systems over the dataset's queries (sampled by `setup.limit`),
/// then the judgment-budget sweep when `setup.judge_budgets` is set.
/// `progress` gets one stage per system with one unit per query.
pub async fn run(dataset: &Dataset, setup: &BenchSetup, progress: &dyn Progress) -> Result<Report> {
    if setup.concurrency == 0 {
        return Err(Error::Config("--concurrency must be at least 1".into()));
    }
    let ctx = Arc::new(Context::new(dataset, setup, progress).await?);
    let collection = &ctx.collection;
    let mut report = Report {
        schema: SCHEMA,
        dataset: DatasetInfo {
            path: dataset.path.display().to_string(),
            name: dataset.name.clone(),
            format: dataset.format,
            split: dataset.split.clone(),
            gold: dataset.gold_level,
            documents: collection.documents.len(),
            passages: collection.len(),
            queries: ctx.queries.len(),
            queries_total: dataset.queries_total,
        },
        seed: setup.seed,
        limit: setup.limit,
        config: setup.config.clone(),
        order: Vec::new(),
        systems: BTreeMap::new(),
        skipped: BTreeMap::new(),
        judge_budgets: Vec::new(),
    };
    for &system in &setup.systems {
        if system == SystemKind::Flat && collection.len() > setup.flat_max_passages {
            report.skipped.insert(
                system.name().into(),
                format!(
                    "{} passages is over the flat limit of {} (--flat-max-passages)",
                    collection.len(),
                    setup.flat_max_passages
                ),
            );
            continue;
        }
        let runner = ctx.runner(system)?;
        let tree = matches!(runner, Runner::Tree(_))
            .then(|| setup.tree.clone())
            .flatten();
        let (outcomes, seconds) = ctx.outcomes(system.name(), runner, progress).await?;
        report.order.push(system.name().into());
        let mut summary = summarize(
            &outcomes,
            &ctx.golds,
            collection,
            tree.as_deref(),
            system.uses_judge(),
        );
        summary.queries_per_second = outcomes.len() as f64 / seconds.max(1e-9);
        report.systems.insert(system.name().into(), summary);
    }
    report.judge_budgets = crate::sweep::run(&ctx, progress).await?;
    Ok(report)
}

fn plain(ranking: Vec<usize>) -> Outcome {
    Outcome {
        ranking,
        candidates_judged: 0,
        usage: Usage::default(),
        titles_read: 0.0,
        latency_ms: 0.0,
        kept: None,
        rounds: 0,
        judged_documents: HashSet::new(),
        steps: Vec::new(),
    }
}

fn bm25_top(bm25: &Option<Bm25>, query: &str, n: usize) -> Vec<usize> {
    bm25.as_ref()
        .map(|b| b.search(query, n))
        .unwrap_or_default()
}

async fn dense_top(dense: &Option<Dense>, query: &str, n: usize) -> Result<Vec<usize>> {
    let Some(dense) = dense else {
        return Ok(Vec::new());
    };
    let q = dense.embed_queries(vec![query.to_string()]).await?;
    Ok(dense.search(q.row(0), n))
}

pub(crate) fn summarize(
    outcomes: &[Outcome],
    golds: &[Gold],
    c: &Collection,
    tree: Option<&Tree>,
    judged: bool,
) -> SystemReport {
    let (mut passage, mut document) = (Mean::default(), Mean::default());
    let mut judged_recall = 0.0;
    for (o, g) in outcomes.iter().zip(golds) {
        let (p, d) = metrics(&o.ranking, g, c);
        passage.add(&p);
        document.add(&d);
        let found = g
            .documents
            .iter()
            .filter(|d| o.judged_documents.contains(d))
            .count();
        judged_recall += found as f64 / g.documents.len().max(1) as f64;
    }
    let n = outcomes.len().max(1) as f64;
    let mut document = document.get();
    if judged {
        document.judged_recall = Some(judged_recall / n);
    }
    let mean = |f: &dyn Fn(&Outcome) -> f64| outcomes.iter().map(f).sum::<f64>() / n;
    let latencies: Vec<f64> = outcomes.iter().map(|o| o.latency_ms).collect();
    let navigation = tree
        .filter(|_| outcomes.iter().any(|o| o.kept.is_some()))
        .map(|tree| navigation_loss(outcomes, tree));
    SystemReport {
        passage: passage.get(),
        document,
        candidates_judged: mean(&|o| o.candidates_judged as f64),
        rounds: mean(&|o| o.rounds as f64),
        judge_calls: mean(&|o| f64::from(o.usage.calls)),
        cache_hits: mean(&|o| f64::from(o.usage.cache_hits)),
        titles_read: mean(&|o| o.titles_read),
        input_tokens: mean(&|o| o.usage.input_tokens as f64),
        cost_usd: mean(&|o| o.usage.cost_usd),
        seconds_per_query: mean(&|o| o.latency_ms) / 1000.0,
        latency_p50_ms: quantile(&latencies, 0.5),
        latency_p95_ms: quantile(&latencies, 0.95),
        queries_per_second: 0.0,
        navigation,
        time_by_step: time_by_step(outcomes),
    }
}

/// Where the gold was lost on the way down, over the outcomes that walked
/// the tree level by level.
fn navigation_loss(outcomes: &[Outcome], tree: &Tree) -> NavigationLoss {
    let n = outcomes.len().max(1) as f64;
    let kinds = level_kinds(tree);
    let mut lost = vec![0usize; kinds.len() + 1];
    let mut kept = vec![0usize; kinds.len()];
    let mut reached = 0;
    for o in outcomes {
        let Some(k) = &o.kept else { continue };
        for (i, was) in k.iter().enumerate() {
            if *was && i < kept.len() {
                kept[i] += 1;
            }
        }
        match lost_at(k) {
            Some(depth) if depth <= kinds.len() => lost[depth] += 1,
            Some(_) => {}
            None => {}
        }
        // Reached the leaves: kept at the last level above them.
        if k.len() >= 2 && k[k.len() - 2] {
            reached += 1;
        }
    }
    NavigationLoss {
        reached_leaves: reached as f64 / n,
        returned: kept.last().copied().unwrap_or(0) as f64 / n,
        levels: kinds
            .iter()
            .enumerate()
            .map(|(i, kind)| LevelLoss {
                depth: i + 1,
                kind: kind.clone(),
                kept: kept[i] as f64 / n,
                lost: lost[i + 1] as f64 / n,
            })
            .collect(),
    }
}

/// Per-query means of each step's candidates, tokens and judge time, in
/// the order the steps first appear; `share` is of the mean query latency.
fn time_by_step(outcomes: &[Outcome]) -> Vec<StepCost> {
    let n = outcomes.len().max(1) as f64;
    let latency: f64 = outcomes.iter().map(|o| o.latency_ms).sum::<f64>() / n;
    let mut steps: Vec<StepCost> = Vec::new();
    for step in outcomes.iter().flat_map(|o| &o.steps) {
        let i = match steps.iter().position(|s| s.step == step.step) {
            Some(i) => i,
            None => {
                steps.push(StepCost {
                    step: step.step.clone(),
                    ..StepCost::default()
                });
                steps.len() - 1
            }
        };
        let s = &mut steps[i];
        s.candidates += step.candidates / n;
        s.input_tokens += step.input_tokens / n;
        s.judge_ms += step.judge_ms / n;
    }
    for s in &mut steps {
        s.share = if latency > 0.0 {
            s.judge_ms / latency
        } else {
            0.0
        };
    }
    steps
}

/// The kind of each depth below the root (a depth mixes kinds only in
/// unusual trees; the first node's kind names it).
fn level_kinds(tree: &Tree) -> Vec<String> {
    let mut kinds = Vec::new();
    let mut frontier = vec![tree.root()];
    loop {
        let next: Vec<NodeId> = frontier
            .iter()
            .flat_map(|id| tree.children(*id).to_vec())
            .collect();
        let Some(kind) = next
            .first()
            .and_then(|id| tree.get(*id))
            .map(|n| n.kind.name())
        else {
            break;
        };
        kinds.push(kind.to_string());
        frontier = next;
    }
    kinds
}

/// Passage id → node, for tracing the gold through a tree.
pub(crate) struct TreeIndex {
    tree: Arc<Tree>,
    passage_node: HashMap<String, NodeId>,
}

impl TreeIndex {
    fn new(tree: Arc<Tree>) -> TreeIndex {
        let passage_node = tree
            .passages()
            .filter_map(|id| match tree.get(id).map(|n| &n.kind) {
                Some(treenav_tree::NodeKind::Passage { id: pid, .. }) => Some((pid.clone(), id)),
                _ => None,
            })
            .collect();
        TreeIndex { tree, passage_node }
    }

    /// Documents (indices) of every node shown to the judge (references and
    /// cards aside).
    fn judged_documents(
        &self,
        found: &Retrieval,
        c: &Collection,
        document_index: &HashMap<String, usize>,
    ) -> HashSet<usize> {
        let t = &found.trace;
        t.levels
            .iter()
            .flat_map(|l| l.candidates.iter())
            .chain(t.rounds.iter().flat_map(|r| r.candidates.iter()))
            .filter(|cand| cand.route != treenav_navigator::Route::Reference)
            .filter_map(|cand| match self.tree.get(cand.node).map(|n| &n.kind) {
                Some(treenav_tree::NodeKind::Passage { id, .. }) => {
                    c.index.get(id).map(|i| c.document_of[*i])
                }
                Some(treenav_tree::NodeKind::Document { id, .. }) => {
                    document_index.get(id).copied()
                }
                _ => None,
            })
            .collect()
    }

    /// Whether a gold ancestor (or gold passage) was kept at each level walked.
    fn kept_by_level(&self, found: &Retrieval, gold: &Gold, c: &Collection) -> Vec<bool> {
        let ancestors: HashSet<NodeId> = gold
            .passage_unit
            .keys()
            .filter_map(|i| self.passage_node.get(&c.ids[*i]))
            .flat_map(|node| self.tree.path(*node))
            .collect();
        found
            .trace
            .levels
            .iter()
            .map(|level| {
                level
                    .candidates
                    .iter()
                    .any(|cand| cand.kept && ancestors.contains(&cand.node))
            })
            .collect()
    }
}

/// A rate with three significant digits or one decimal (a cross-encoder
/// bench runs well under one query a second).
fn rate(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 1.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

/// Where the gold was lost, given whether it was kept at each level: after
/// the last level that kept it (a document can come back through the
/// lexical entry after its cluster was dropped). `None` when the last
/// level kept it.
fn lost_at(kept: &[bool]) -> Option<usize> {
    match kept.iter().rposition(|k| *k) {
        Some(last) if last + 1 == kept.len() => None,
        Some(last) => Some(last + 2),
        None => Some(1),
    }
}

impl Report {
    /// One line per navigated system: its judge time by step.
    fn time_lines(&self) -> String {
        let mut o = String::new();
        for name in &self.order {
            let Some(steps) = self.systems.get(name).map(|s| &s.time_by_step) else {
                continue;
            };
            if steps.iter().any(|s| s.judge_ms > 0.0) {
                let parts: Vec<String> = steps
                    .iter()
                    .map(|s| {
                        format!(
                            "{} {:.0}% ({:.0} candidates, {:.0} tokens, {:.1} ms)",
                            s.step,
                            s.share * 100.0,
                            s.candidates,
                            s.input_tokens,
                            s.judge_ms
                        )
                    })
                    .collect();
                o.push_str(&format!(
                    "\n{name}: judge time by step: {}\n",
                    parts.join(" · ")
                ));
            }
        }
        o
    }

    /// The report as a Markdown table (plus navigation loss for `tree`).
    pub fn markdown(&self) -> String {
        use std::fmt::Write as _;
        let d = &self.dataset;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{}{} · {} queries{} · {} documents · {} passages · gold: {:?}\n",
            d.name,
            d.split
                .as_deref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default(),
            d.queries,
            if d.queries < d.queries_total {
                format!(" of {} (seed {})", d.queries_total, self.seed)
            } else {
                String::new()
            },
            d.documents,
            d.passages,
            d.gold
        );
        o.push_str("| system | P@1 | P@5 | P R@10 | P MRR@10 | P nDCG@10 | D@1 | D R@10 | D nDCG@10 | judged/q | D judged recall | calls/q | titles read | q/s | p50 ms | p95 ms |\n");
        o.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for name in &self.order {
            let Some(s) = self.systems.get(name) else {
                continue;
            };
            let _ = writeln!(
                o,
                "| {name} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.0} | {} | {:.1} | {:.1}% | {} | {:.1} | {:.1} |",
                s.passage.hit_at_1,
                s.passage.hit_at_5,
                s.passage.recall_at_10,
                s.passage.mrr_at_10,
                s.passage.ndcg_at_10,
                s.document.hit_at_1,
                s.document.recall_at_10,
                s.document.ndcg_at_10,
                s.candidates_judged,
                s.document
                    .judged_recall
                    .map_or("—".to_string(), |r| format!("{r:.3}")),
                s.judge_calls,
                s.titles_read * 100.0,
                rate(s.queries_per_second),
                s.latency_p50_ms,
                s.latency_p95_ms
            );
        }
        o.push_str(&self.time_lines());
        for name in &self.order {
            if let Some(nav) = self.systems.get(name).and_then(|s| s.navigation.as_ref()) {
                let levels: Vec<String> = nav
                    .levels
                    .iter()
                    .map(|l| {
                        format!(
                            "{} {}: kept {:.1}%, lost {:.1}%",
                            l.depth,
                            l.kind,
                            l.kept * 100.0,
                            l.lost * 100.0
                        )
                    })
                    .collect();
                let _ = writeln!(
                    o,
                    "\n{name}: gold reached the passage level for {:.1}% of queries and was returned for {:.1}%; by level: {}",
                    nav.reached_leaves * 100.0,
                    nav.returned * 100.0,
                    levels.join(" · ")
                );
            }
        }
        for (name, why) in &self.skipped {
            let _ = writeln!(o, "\n{name} skipped: {why}");
        }
        o.push_str(&crate::sweep::markdown(&self.judge_budgets));
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_is_where_the_gold_left_for_good() {
        assert_eq!(lost_at(&[true, true, true]), None);
        assert_eq!(lost_at(&[true, false, false]), Some(2));
        assert_eq!(lost_at(&[true, true, false]), Some(3));
        // Cluster dropped, document brought back by the lexical entry.
        assert_eq!(lost_at(&[false, true, true]), None);
        assert_eq!(lost_at(&[false, true, false]), Some(3));
        assert_eq!(lost_at(&[false, false, false]), Some(1));
    }

    #[test]
    fn system_names_round_trip() {
        for kind in SystemKind::ALL {
            assert_eq!(kind.name().parse::<SystemKind>().ok(), Some(kind));
        }
        assert!("vector".parse::<SystemKind>().is_err());
    }
}

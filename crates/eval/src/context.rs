//! Everything a run needs, built once (queries, gold, collection,
//! first-stage indexes), and the systems run over it.

use crate::baselines::{judge_rank, rrf, Bm25, Collection, Dense};
use crate::dataset::{Dataset, Query};
use crate::gold::{resolve, Gold};
use crate::outcome::{Outcome, StepCost};
use crate::setup::{BenchSetup, SystemKind};
use crate::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;
use treenav_judge::{Judge, Usage};
use treenav_navigator::{Navigator, Retrieval, ValidConfig};
use treenav_tree::lexical::DocumentIndex;
use treenav_tree::{NodeId, Progress, Tree};

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
    /// The tree's statistics, computed once for every navigator built.
    tree_stats: std::sync::OnceLock<Arc<treenav_judge::CorpusStats>>,
    /// Document id → document index.
    document_index: HashMap<String, usize>,
    /// The tree's passage nodes and BM25 over its documents, for fusing a
    /// judged list's order with the tree's evidence (built when first asked).
    fusion_index: std::sync::OnceLock<(Arc<TreeIndex>, Option<Arc<DocumentIndex>>)>,
    /// With `share_scores`, the judge every system's judge shares scored
    /// pairs with.
    shared_judge: Option<Judge>,
}

/// The first stage of a judged list: what a user would deploy before a reranker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Flat BM25.
    Bm25,
    /// Brute-force cosine over the passages embedded with `--embedder`.
    Dense,
    /// BM25 and dense fused by Reciprocal Rank Fusion.
    Hybrid,
}

/// A system ready to run over the queries.
pub(crate) enum Runner {
    Bm25,
    Dense,
    Hybrid,
    /// A list judged by the judge: the top `n` passages of a first stage,
    /// or every passage.
    Judged {
        judge: Judge,
        pool: Option<(Stage, usize)>,
        how: treenav_judge::SessionOptions,
        /// The final order's fusion weight ([`treenav_navigator::fusion`],
        /// over the bench's tree); 0: the judge's score alone.
        fusion: f64,
    },
    /// The navigator over the tree.
    Tree(Box<Navigator>),
}

/// The dense index, when a system (or the budget sweep) needs one.
async fn dense_index(
    setup: &BenchSetup,
    sweep: bool,
    collection: &Collection,
    progress: &dyn Progress,
) -> Result<Option<Dense>> {
    // `BenchSetup::check` made sure the systems that embed have an embedder.
    let dense = match &setup.embedder {
        Some(embedder) if sweep || setup.systems.iter().any(|s| s.uses_embedder()) => {
            // The tree's own passage vectors when it was embedded the
            // same way: the corpus is not embedded twice.
            let stored = setup
                .tree
                .as_ref()
                .and_then(|t| Dense::from_tree(embedder.clone(), collection, t));
            match stored {
                Some(dense) => Some(dense),
                None => Some(Dense::new(embedder.clone(), collection, progress).await?),
            }
        }
        _ => None,
    };
    Ok(dense)
}

/// The judge whose scores every system shares, with the score file's
/// pairs read in, when the run shares scores.
fn shared_judge(setup: &BenchSetup) -> Result<Option<Judge>> {
    let shared_judge = match setup.share_scores {
        true => Judge::new(&setup.judge)
            .map_err(|source| Error::Judge {
                system: "-".into(),
                query: "-".into(),
                source,
            })?
            .sharing_scores(),
        false => None,
    };
    if let (Some(path), Some(judge)) = (&setup.score_file, &shared_judge) {
        let n = crate::score_file::load(path, judge)?;
        tracing::info!(pairs = n, file = %path.display(), "read scored pairs");
    }
    Ok(shared_judge)
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
        .then(|| Bm25::new(&collection, setup.analyzer))
        .transpose()?;
        let dense = dense_index(setup, sweep, &collection, progress).await?;
        let document_index = collection
            .documents
            .iter()
            .enumerate()
            .map(|(i, d)| (d.clone(), i))
            .collect();
        let shared_judge = shared_judge(setup)?;
        Ok(Context {
            setup: setup.clone(),
            queries: sampled.queries,
            golds,
            collection,
            bm25,
            dense,
            stats: dataset.corpus_stats(),
            tree_stats: std::sync::OnceLock::new(),
            document_index,
            fusion_index: std::sync::OnceLock::new(),
            shared_judge,
        })
    }

    /// Writes the shared scores to the score file, if the run keeps one.
    pub(crate) fn save_scores(&self) -> Result<()> {
        if let (Some(path), Some(judge)) = (&self.setup.score_file, &self.shared_judge) {
            crate::score_file::save(path, judge)?;
        }
        Ok(())
    }

    /// A fresh judge (no system reads another's cache).
    pub(crate) fn judge(&self, system: &str) -> Result<Judge> {
        let shared = self.shared_judge.as_ref().and_then(Judge::sharing_scores);
        shared
            .map_or_else(|| Judge::new(&self.setup.judge), Ok)
            .and_then(|j| j.with_corpus_stats(self.stats.clone()))
            .map_err(|source| Error::Judge {
                system: system.into(),
                query: "-".into(),
                source,
            })
    }

    /// How judged lists are ranked: the navigator's batch size, calibration
    /// and shortlist.
    pub(crate) fn session_options(&self) -> treenav_judge::SessionOptions {
        treenav_judge::SessionOptions {
            batch_size: self.setup.navigator.batch_size(),
            calibration: self.setup.navigator.calibration(),
            shortlist: self.setup.navigator.shortlist(),
            max_cost_usd: None,
        }
    }

    /// A navigator over the bench's tree with `config` and a fresh judge.
    pub(crate) fn navigator(&self, system: &str, config: ValidConfig) -> Result<Runner> {
        self.navigator_with(system, self.judge(system)?, config)
    }

    /// A navigator over the bench's tree with `config` and `judge`.
    pub(crate) fn navigator_with(
        &self,
        system: &str,
        judge: Judge,
        config: ValidConfig,
    ) -> Result<Runner> {
        let Some(tree) = &self.setup.tree else {
            return Err(Error::Config(format!("the {system} system needs a tree")));
        };
        let navigate_error = |source| Error::Navigate {
            query: "-".into(),
            source,
        };
        let stats = match self.tree_stats.get() {
            Some(stats) => stats.clone(),
            None => {
                let stats = Navigator::corpus_stats(tree).map_err(navigate_error)?;
                self.tree_stats.get_or_init(|| stats).clone()
            }
        };
        let navigator =
            Navigator::with_stats(tree.clone(), judge, config, stats).map_err(|source| {
                Error::Navigate {
                    query: "-".into(),
                    source,
                }
            })?;
        Ok(Runner::Tree(Box::new(navigator)))
    }

    pub(crate) fn runner(&self, system: SystemKind) -> Result<Runner> {
        let judged = |pool: Option<(Stage, usize)>| -> Result<Runner> {
            Ok(Runner::Judged {
                judge: self.judge(system.name())?,
                pool,
                how: self.session_options(),
                fusion: 0.0,
            })
        };
        match system {
            SystemKind::Bm25 => Ok(Runner::Bm25),
            SystemKind::Dense => Ok(Runner::Dense),
            SystemKind::Hybrid => Ok(Runner::Hybrid),
            SystemKind::Rerank => judged(Some((Stage::Bm25, self.setup.rerank_n))),
            SystemKind::Flat => judged(None),
            SystemKind::Tree => self.navigator("tree", self.setup.navigator.clone()),
            SystemKind::Gar => {
                let config = gar_config(
                    &self.setup.navigator,
                    self.setup.navigator.best_first().judge_budget,
                    self.setup.navigator.best_first().fusion,
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
            let (i, outcome) = joined.map_err(|e| Error::Task {
                system: name.to_string(),
                message: e.to_string(),
            })?;
            slots[i] = Some(outcome?);
            progress.inc(1);
        }
        let seconds = started.elapsed().as_secs_f64();
        Ok((slots.into_iter().flatten().collect(), seconds))
    }

    pub(crate) async fn one(
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
            Runner::Judged {
                judge,
                pool,
                how,
                fusion,
            } => {
                let pool: Vec<usize> = match pool {
                    Some((stage, n)) => self.first_stage(*stage, &q.text, *n).await?,
                    None => (0..c.len()).collect(),
                };
                let fuse = |scores: &[f64]| self.fused(&q.text, &pool, scores, *fusion);
                let judged = judge_rank(judge, &q.text, c, &pool, *how, fuse)
                    .await
                    .map_err(|source| Error::Judge {
                        system: name.into(),
                        query: q.id.clone(),
                        source,
                    })?;
                let docs: HashSet<usize> = pool.iter().map(|i| c.document_of[*i]).collect();
                Outcome {
                    ranking: judged.ranking,
                    scores: judged.scores,
                    candidates_judged: judged.candidates_judged,
                    usage: judged.usage,
                    titles_read: docs.len() as f64 / c.documents.len().max(1) as f64,
                    latency_ms: 0.0,
                    kept: None,
                    rounds: judged.rounds,
                    judged_documents: docs,
                    steps: Vec::new(),
                    evidence: Vec::new(),
                }
            }
            Runner::Tree(navigator) => self.navigate(navigator, tree_index, q, gold).await?,
        })
    }

    /// One query through the navigator, with what the trace says was judged.
    pub(crate) async fn navigate(
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
                c.index
                    .get(&p.id)
                    .copied()
                    .ok_or_else(|| Error::UnknownPassage(p.id.clone()))
            })
            .collect::<Result<Vec<usize>>>()?;
        let kept = tree_index.map(|index| index.kept_by_level(&found, gold, c));
        let judged_documents = tree_index
            .map(|index| index.judged_documents(&found, c, &self.document_index))
            .unwrap_or_default();
        let t = &found.trace;
        Ok(Outcome {
            ranking,
            scores: found.passages.iter().map(|p| p.score).collect(),
            candidates_judged: t.candidates_judged,
            usage: t.usage.clone(),
            titles_read: t.titles_read,
            latency_ms: 0.0,
            kept: kept.filter(|k| !k.is_empty()),
            rounds: t.levels.len() + t.rounds.len() + usize::from(t.rerank.is_some()),
            judged_documents,
            steps: steps_of(t),
            evidence: found
                .evidence
                .iter()
                .filter_map(|(node, e)| Some((*c.index.get(navigator.passage_id(*node)?)?, *e)))
                .collect(),
        })
    }
}

/// A navigated query's steps: each level, or all best-first rounds as one,
/// then the shortlist rerank.
pub(crate) fn steps_of(t: &treenav_navigator::Trace) -> Vec<StepCost> {
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
pub(crate) fn gar_config(base: &ValidConfig, budget: usize, fusion: f64) -> Result<ValidConfig> {
    let bf = treenav_navigator::BestFirstConfig {
        clusters: false,
        cards: false,
        neighbours: true,
        ..base.best_first().clone()
    };
    best_first_at("gar", base, bf, budget, fusion)
}

/// The `tree+clusters` ablation: the bench's best-first with the cluster
/// route on, at `budget`.
pub(crate) fn clusters_config(
    base: &ValidConfig,
    budget: usize,
    fusion: f64,
) -> Result<ValidConfig> {
    let bf = treenav_navigator::BestFirstConfig {
        clusters: true,
        ..base.best_first().clone()
    };
    best_first_at("tree+clusters", base, bf, budget, fusion)
}

/// `base` as best-first with `bf` at `budget` judgments (a hard cap: no
/// widening, so systems compare at equal judgments) and `fusion`.
fn best_first_at(
    system: &str,
    base: &ValidConfig,
    bf: treenav_navigator::BestFirstConfig,
    budget: usize,
    fusion: f64,
) -> Result<ValidConfig> {
    let bf = treenav_navigator::BestFirstConfig {
        judge_budget: budget,
        fusion,
        widen: false,
        ..bf
    };
    base.settings()
        .clone()
        .strategy(treenav_navigator::Strategy::BestFirst)
        .best_first(bf)
        .check()
        .map_err(|source| Error::Navigator {
            system: system.into(),
            source,
        })
}

/// Refuses a tree built from another corpus than the dataset's: its
/// passages would not be the dataset's and every figure would be wrong.
/// Trees older than format version 3 carry no fingerprint: a warning.
pub(crate) fn check_tree_corpus(tree: &Tree, corpus: &treenav_corpus::Corpus) -> Result<()> {
    let meta = tree.meta();
    let Some(built_from) = &meta.corpus else {
        tracing::warn!(
            "the tree records no corpus fingerprint (built before format version 3): \
             cannot check that it was built from this dataset"
        );
        return Ok(());
    };
    let dataset = corpus.fingerprint();
    // Updated since its build: the documents it holds now, in any order.
    if tree.updates().is_some() {
        let now = tree.content_digest()?;
        if now == corpus.content_digest() {
            return Ok(());
        }
        return Err(Error::TreeMismatch {
            source_path: format!("{} and its updates", meta.source),
            tree: treenav_corpus::Fingerprint {
                documents: now.documents,
                passages: now.passages,
                xxh3_128: format!("{:032x} (sum over documents)", now.sum),
            },
            dataset,
        });
    }
    if *built_from == dataset {
        return Ok(());
    }
    // A compaction of updates records what the tree held then, in tree
    // order: the same documents in another order are the same corpus.
    let same_counts =
        (built_from.documents, built_from.passages) == (dataset.documents, dataset.passages);
    if same_counts && tree.content_digest()? == corpus.content_digest() {
        return Ok(());
    }
    Err(Error::TreeMismatch {
        source_path: meta.source.clone(),
        tree: built_from.clone(),
        dataset,
    })
}

/// The `tree` system's settings in the budget sweep: best-first at `budget`.
pub(crate) fn tree_config(base: &ValidConfig, budget: usize, fusion: f64) -> Result<ValidConfig> {
    best_first_at("tree", base, base.best_first().clone(), budget, fusion)
}

pub(crate) fn plain(ranking: Vec<usize>) -> Outcome {
    Outcome {
        ranking,
        scores: Vec::new(),
        candidates_judged: 0,
        usage: Usage::default(),
        titles_read: 0.0,
        latency_ms: 0.0,
        kept: None,
        rounds: 0,
        judged_documents: HashSet::new(),
        steps: Vec::new(),
        evidence: Vec::new(),
    }
}

impl Context {
    /// Runs `runner` over every query and sums it up as one system's
    /// figures (judged recall when `judged`, navigation loss for a tree,
    /// throughput), writing its runs when `--run-dir` asks.
    pub(crate) async fn measure(
        self: &Arc<Self>,
        name: &str,
        runner: Runner,
        judged: bool,
        progress: &dyn Progress,
    ) -> Result<crate::report::SystemReport> {
        let tree = matches!(runner, Runner::Tree(_))
            .then(|| self.setup.tree.clone())
            .flatten();
        let (outcomes, seconds) = self.outcomes(name, runner, progress).await?;
        let mut summary = crate::report::summarize(
            &outcomes,
            &self.golds,
            &self.collection,
            tree.as_deref(),
            judged,
        );
        self.write_runs(name, &outcomes, &summary)?;
        if let (Some(path), true) = (&self.setup.evidence, tree.is_some()) {
            crate::evidence::write(path, &self.queries, &self.golds, &outcomes)?;
        }
        summary.queries_per_second = outcomes.len() as f64 / seconds.max(1e-9);
        Ok(summary)
    }

    /// Writes a system's runs and per-query metrics when `--run-dir` asks.
    fn write_runs(
        &self,
        name: &str,
        outcomes: &[Outcome],
        summary: &crate::report::SystemReport,
    ) -> Result<()> {
        match &self.setup.run_dir {
            Some(dir) => crate::runs::write_system(
                dir,
                name,
                &self.queries,
                outcomes,
                &summary.per_query,
                &self.collection,
            ),
            None => Ok(()),
        }
    }

    /// A judged list's scores fused with the tree's evidence at `weight`
    /// (the navigator's own [`treenav_navigator::fusion::fused_scores`]);
    /// the scores unchanged at weight 0, without a tree, or for a passage
    /// the tree does not hold.
    fn fused(&self, query: &str, pool: &[usize], scores: &[f64], weight: f64) -> Vec<f64> {
        let Some(tree) = self.setup.tree.as_ref().filter(|_| weight > 0.0) else {
            return scores.to_vec();
        };
        let (nodes, index) = self.fusion_index.get_or_init(|| {
            let index = match tree.lexical() {
                Some(lexical) => Some(lexical.index.clone()),
                None => tree.document_index().ok().map(Arc::new),
            };
            (Arc::new(TreeIndex::new(tree.clone())), index)
        });
        let judged: Option<Vec<(NodeId, f64)>> = pool
            .iter()
            .zip(scores)
            .map(|(i, p)| Some((*nodes.passage_node.get(&self.collection.ids[*i])?, *p)))
            .collect();
        let ranks = index
            .as_ref()
            .and_then(|index| treenav_navigator::fusion::lexical_ranks(index, query).ok());
        match (judged, ranks) {
            (Some(judged), Some(ranks)) => {
                treenav_navigator::fusion::fused_scores(tree, &ranks, &judged, weight)
            }
            _ => scores.to_vec(),
        }
    }

    /// Whether the dense first stages can run (an embedder was given).
    pub(crate) fn has_dense(&self) -> bool {
        self.dense.is_some()
    }

    /// The top `n` passages of a first stage.
    async fn first_stage(&self, stage: Stage, query: &str, n: usize) -> Result<Vec<usize>> {
        Ok(match stage {
            Stage::Bm25 => bm25_top(&self.bm25, query, n),
            Stage::Dense => dense_top(&self.dense, query, n).await?,
            Stage::Hybrid => {
                // Each list deep enough that fusion can fill n.
                let depth = n.max(100);
                let lists = vec![
                    bm25_top(&self.bm25, query, depth),
                    dense_top(&self.dense, query, depth).await?,
                ];
                rrf(&lists, self.setup.rrf_k, n)
            }
        })
    }
}

pub(crate) fn bm25_top(bm25: &Option<Bm25>, query: &str, n: usize) -> Vec<usize> {
    bm25.as_ref()
        .map(|b| b.search(query, n))
        .unwrap_or_default()
}

pub(crate) async fn dense_top(dense: &Option<Dense>, query: &str, n: usize) -> Result<Vec<usize>> {
    let Some(dense) = dense else {
        return Ok(Vec::new());
    };
    let q = dense.embed_queries(vec![query.to_string()]).await?;
    Ok(dense.search(q.row(0), n))
}

/// Passage id → node, for tracing the gold through a tree.
pub(crate) struct TreeIndex {
    tree: Arc<Tree>,
    passage_node: HashMap<String, NodeId>,
}

impl TreeIndex {
    pub(crate) fn new(tree: Arc<Tree>) -> TreeIndex {
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
    pub(crate) fn judged_documents(
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
    pub(crate) fn kept_by_level(
        &self,
        found: &Retrieval,
        gold: &Gold,
        c: &Collection,
    ) -> Vec<bool> {
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

//! The pruner's evaluation: recall retention against compression.
//!
//! For each question, the top `depth` passages (15 by default) are
//! retrieved; the gold chunk is the question's paragraph (SQuAD) or any
//! passage of a gold document (BEIR). Each strategy asks the model once per
//! question ([`Pruner::score_for`]) and its knob is swept over those scores:
//!
//! * **recall retention**: among questions whose gold was retrieved, the
//!   share that still has a gold chunk after pruning;
//! * **compression**: the share of retrieved chunks dropped (over all questions).

use crate::baselines::{Bm25, Collection};
use crate::dataset::Dataset;
use crate::{Error, Result};
use serde::Serialize;
use std::sync::Arc;
use treenav_judge::{Judge, JudgeOptions};
use treenav_navigator::{Navigator, ValidConfig};
use treenav_prune::{Chunk, PruneOptions, Pruner, Scored, Strategy};
use treenav_tree::{Progress, Tree};

/// Where the chunks come from.
// One value per run: the navigator settings' size costs nothing here.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Retriever {
    /// Flat BM25.
    Bm25,
    /// The navigator over a tree (its judge is the same as the pruner's).
    Tree {
        /// The tree.
        tree: Arc<Tree>,
        /// Its settings (`returned_passages` is raised to the depth).
        config: ValidConfig,
    },
}

/// One point of a strategy's curve.
#[derive(Debug, Clone, Serialize)]
pub struct CurvePoint {
    /// Strategy name.
    pub strategy: &'static str,
    /// The knob's name (threshold, extra, n).
    pub knob: &'static str,
    /// The knob's value.
    pub value: f64,
    /// Share of gold-retrieved questions whose gold survived pruning.
    pub recall_retention: f64,
    /// Share of retrieved chunks dropped.
    pub compression: f64,
    /// Share of retrieved tokens dropped (characters / 4).
    pub token_compression: f64,
}

/// The evaluation's result.
#[derive(Debug, Clone, Serialize)]
pub struct Curve {
    /// Questions run.
    pub questions: usize,
    /// Questions whose gold was among the retrieved chunks.
    pub gold_retrieved: usize,
    /// Chunks retrieved per question.
    pub depth: usize,
    /// Every point, strategy by strategy.
    pub points: Vec<CurvePoint>,
    /// Mean added latency of scoring per question, by strategy (ms).
    pub latency_ms: Vec<(String, f64)>,
    /// Judge calls per question, by strategy.
    pub judge_calls: Vec<(String, f64)>,
    /// The strategies measured beside the sweep (a saved config's), in
    /// the order asked.
    pub measured: Vec<CurvePoint>,
}

impl Curve {
    /// The highest compression a strategy reaches at `retention` or more.
    pub fn compression_at(&self, strategy: &str, retention: f64) -> Option<f64> {
        self.points
            .iter()
            .filter(|p| p.strategy == strategy && p.recall_retention >= retention - 1e-12)
            .map(|p| p.compression)
            .max_by(f64::total_cmp)
    }

    /// The loosest knob of `strategy` that keeps at least `target` of the
    /// needed chunks: its point with the highest compression there (the
    /// higher retention on a tie); `None` when no knob keeps that much.
    pub fn fit(&self, strategy: &str, target: f64) -> Option<&CurvePoint> {
        self.points
            .iter()
            .filter(|p| p.strategy == strategy && p.recall_retention >= target - 1e-12)
            .max_by(|a, b| {
                a.compression
                    .total_cmp(&b.compression)
                    .then(a.recall_retention.total_cmp(&b.recall_retention))
            })
    }

    /// The curve as CSV (header, then one line per point).
    pub fn csv(&self) -> String {
        let mut out =
            String::from("strategy,knob,value,recall_retention,compression,token_compression\n");
        for p in &self.points {
            out.push_str(&format!(
                "{},{},{},{:.4},{:.4},{:.4}\n",
                p.strategy, p.knob, p.value, p.recall_retention, p.compression, p.token_compression
            ));
        }
        out
    }
}

/// The knob values swept per strategy: fine enough that a threshold for a
/// target recall is found to within a few hundredths (selection is cheap:
/// the model is asked once per question and kind).
pub fn sweep(depth: usize) -> Vec<Strategy> {
    let mut out = Vec::new();
    for t in (20..=100).map(|i| f64::from(i) / 20.0) {
        out.push(Strategy::Grade { threshold: t });
    }
    let small = [
        0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04,
    ];
    let rest = (5..=95).map(|i| f64::from(i) / 100.0);
    for t in small.into_iter().chain(rest) {
        out.push(Strategy::Keep { threshold: t });
    }
    for extra in 0..depth {
        out.push(Strategy::BudgetSelect {
            extra,
            threshold: 0.5,
        });
    }
    for n in 1..=depth {
        out.push(Strategy::TopN { n });
    }
    out
}

fn knob(s: &Strategy) -> (&'static str, f64) {
    match *s {
        Strategy::Grade { threshold } | Strategy::Keep { threshold } => ("threshold", threshold),
        Strategy::BudgetSelect { extra, .. } => ("extra", extra as f64),
        Strategy::TopN { n } => ("n", n as f64),
    }
}

/// The strategy kinds the model is asked once per question: each sweep
/// point reuses its kind's scores.
fn kinds(depth: usize) -> [Strategy; 4] {
    [
        Strategy::Grade { threshold: 4.0 },
        Strategy::Keep { threshold: 0.5 },
        Strategy::BudgetSelect {
            extra: 0,
            threshold: 0.5,
        },
        Strategy::TopN { n: depth },
    ]
}

/// The first stage: BM25 or the navigator, `depth` passages deep.
struct FirstStage {
    bm25: Option<Bm25>,
    navigator: Option<Navigator>,
    depth: usize,
}

impl FirstStage {
    fn new(retriever: &Retriever, judge: &Judge, c: &Collection, depth: usize) -> Result<Self> {
        let bm25 = matches!(retriever, Retriever::Bm25)
            .then(|| Bm25::new(c, Default::default()))
            .transpose()?;
        let navigator = match retriever {
            Retriever::Tree { tree, config } => {
                let config = config
                    .settings()
                    .clone()
                    .returned_passages(depth)
                    .check()
                    .map_err(|source| Error::Navigator {
                        system: "prune".into(),
                        source,
                    })?;
                let navigator =
                    Navigator::new(tree.clone(), judge.clone(), config).map_err(|source| {
                        Error::Navigate {
                            query: "-".into(),
                            source,
                        }
                    })?;
                Some(navigator)
            }
            Retriever::Bm25 => None,
        };
        Ok(FirstStage {
            bm25,
            navigator,
            depth,
        })
    }

    /// The passages (indices) retrieved for `q`.
    async fn retrieve(&self, q: &crate::dataset::Query, c: &Collection) -> Result<Vec<usize>> {
        Ok(match (&self.bm25, &self.navigator) {
            (Some(b), _) => b.search(&q.text, self.depth),
            (None, Some(n)) => n
                .retrieve(&q.text)
                .await
                .map_err(|source| Error::Navigate {
                    query: q.id.clone(),
                    source,
                })?
                .passages
                .iter()
                .filter_map(|p| c.index.get(&p.id).copied())
                .take(self.depth)
                .collect(),
            (None, None) => Vec::new(),
        })
    }
}

/// Sums over the questions, per sweep point and per kind.
struct Tally {
    retained: Vec<usize>,
    dropped: Vec<usize>,
    dropped_tokens: Vec<usize>,
    total_chunks: usize,
    total_tokens: usize,
    gold_retrieved: usize,
    latency: Vec<f64>,
    calls: Vec<f64>,
}

impl Tally {
    fn new(points: usize, kinds: usize) -> Tally {
        Tally {
            retained: vec![0; points],
            dropped: vec![0; points],
            dropped_tokens: vec![0; points],
            total_chunks: 0,
            total_tokens: 0,
            gold_retrieved: 0,
            latency: vec![0.0; kinds],
            calls: vec![0.0; kinds],
        }
    }

    /// The curve: each point's rates over all questions.
    fn curve(
        self,
        strategies: &[Strategy],
        kinds: &[Strategy],
        questions: usize,
        depth: usize,
    ) -> Curve {
        let n = questions.max(1) as f64;
        let points = strategies
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (knob, value) = knob(s);
                CurvePoint {
                    strategy: s.name(),
                    knob,
                    value,
                    recall_retention: self.retained[i] as f64 / self.gold_retrieved.max(1) as f64,
                    compression: self.dropped[i] as f64 / self.total_chunks.max(1) as f64,
                    token_compression: self.dropped_tokens[i] as f64
                        / self.total_tokens.max(1) as f64,
                }
            })
            .collect();
        let per_kind = |values: &[f64]| {
            kinds
                .iter()
                .zip(values)
                .map(|(k, v)| (k.name().to_string(), v / n))
                .collect()
        };
        Curve {
            questions,
            gold_retrieved: self.gold_retrieved,
            depth,
            points,
            latency_ms: per_kind(&self.latency),
            judge_calls: per_kind(&self.calls),
            measured: Vec::new(),
        }
    }
}

/// Scores the chunks once per strategy kind, adding latency and calls to the tally.
async fn score_kinds(
    pruner: &Pruner,
    question: &str,
    query_id: &str,
    chunks: &[Chunk],
    kinds: &[Strategy],
    tally: &mut Tally,
) -> Result<Vec<Scored>> {
    let mut scored = Vec::with_capacity(kinds.len());
    for (k, kind) in kinds.iter().enumerate() {
        let s = pruner
            .score_for(question, chunks, kind)
            .await
            .map_err(|e| match e {
                treenav_prune::Error::Judge(source) => Error::Judge {
                    system: "prune".into(),
                    query: query_id.to_string(),
                    source,
                },
                other => Error::Prune(other),
            })?;
        tally.latency[k] += s.latency_ms;
        tally.calls[k] += f64::from(s.usage.calls);
        scored.push(s);
    }
    Ok(scored)
}

/// The list judge over the dataset's statistics, and the pruner on it.
fn pruner_for(
    dataset: &Dataset,
    judge_options: &JudgeOptions,
    keep_top_k: usize,
) -> Result<(Judge, Pruner)> {
    let judge = treenav_navigator::list_judge(judge_options)
        .and_then(|j| j.with_corpus_stats(dataset.corpus_stats()))
        .map_err(|source| Error::Judge {
            system: "prune".into(),
            query: "-".into(),
            source,
        })?;
    let options = PruneOptions {
        keep_top_k,
        ..PruneOptions::default()
    };
    let pruner = Pruner::new(judge.clone(), options)?;
    Ok((judge, pruner))
}

/// Runs the evaluation: retrieve `depth` chunks per question, score them
/// once per strategy kind, sweep every knob of [`sweep`] and measure the
/// `measured` strategies (a saved config's) on the same scores.
pub async fn run(
    dataset: &Dataset,
    retriever: &Retriever,
    judge_options: &JudgeOptions,
    depth: usize,
    keep_top_k: usize,
    measured: &[Strategy],
    progress: &dyn Progress,
) -> Result<Curve> {
    if depth == 0 {
        return Err(Error::Config(
            "the retrieval depth must be at least 1".into(),
        ));
    }
    if let Retriever::Tree { tree, .. } = retriever {
        crate::context::check_tree_corpus(tree, &dataset.corpus)?;
    }
    let collection = Collection::new(&dataset.corpus);
    let (judge, pruner) = pruner_for(dataset, judge_options, keep_top_k)?;
    let first = FirstStage::new(retriever, &judge, &collection, depth)?;
    let mut strategies = sweep(depth);
    let swept = strategies.len();
    strategies.extend_from_slice(measured);
    let kinds = kinds(depth);
    let mut tally = Tally::new(strategies.len(), kinds.len());
    progress.stage("prune", dataset.queries.len() as u64);
    for q in &dataset.queries {
        let gold = crate::gold::resolve(q, dataset.gold_level, &collection)?.passages();
        let retrieved = first.retrieve(q, &collection).await?;
        progress.inc(1);
        if retrieved.is_empty() {
            continue;
        }
        let chunks: Vec<Chunk> = retrieved
            .iter()
            .map(|i| Chunk::new(collection.ids[*i].clone(), collection.labels[*i].clone()))
            .collect();
        let is_gold = |id: &str| collection.index.get(id).is_some_and(|i| gold.contains(i));
        let retrieved_gold = chunks.iter().any(|c| is_gold(&c.id));
        tally.gold_retrieved += usize::from(retrieved_gold);
        let scored = score_kinds(&pruner, &q.text, &q.id, &chunks, &kinds, &mut tally).await?;
        let tokens: usize = scored[0].tokens.iter().sum();
        tally.total_chunks += chunks.len();
        tally.total_tokens += tokens;
        for (i, strategy) in strategies.iter().enumerate() {
            let k = kinds
                .iter()
                .position(|x| x.name() == strategy.name())
                .unwrap_or(0);
            let pruned = pruner.select(&chunks, &scored[k], strategy)?;
            tally.dropped[i] += chunks.len() - pruned.kept.len();
            tally.dropped_tokens[i] += tokens - pruned.stats.tokens_out;
            if retrieved_gold && pruned.kept.iter().any(|c| is_gold(&c.id)) {
                tally.retained[i] += 1;
            }
        }
    }
    let mut curve = tally.curve(&strategies, &kinds, dataset.queries.len(), depth);
    curve.measured = curve.points.split_off(swept);
    Ok(curve)
}

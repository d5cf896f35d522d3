//! The bench report: figures per system, navigation loss, time by step,
//! the budget sweep, and their Markdown.

use crate::baselines::Collection;
use crate::calibration::{calibration, Calibration, TOP};
use crate::dataset::{DatasetFormat, GoldLevel};
use crate::gold::{metrics, Gold};
use crate::metrics::{quantile, Mean, Metrics};
use crate::outcome::{Outcome, StepCost};
use serde::Serialize;
use std::collections::BTreeMap;
use treenav_tree::{NodeId, Tree};

/// The schema tag written in every report.
pub const SCHEMA: &str = "treenav-bench/3";

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
    /// Stored vectors the embedding judge read per query (0 without it).
    pub vectors_scored: f64,
    /// Judge calls answered from the cache per query.
    pub cache_hits: f64,
    /// Share of all documents whose title (or passage) the judge read.
    pub titles_read: f64,
    /// Input tokens per query.
    pub input_tokens: f64,
    /// Of those, tokens the judge's server served from its prefix cache
    /// (as it reports them; 0 when it reports none).
    pub cached_input_tokens: f64,
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
    /// Whether the scores are probabilities: ECE and the reliability table
    /// over each query's top 10 (systems that give P(relevant) only).
    pub calibration: Option<Calibration>,
    /// Paired tests against other systems (the sweep's rows; empty
    /// elsewhere).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub significance: Vec<Significance>,
    /// Where the gold was lost on the way down (tree only).
    pub navigation: Option<NavigationLoss>,
    /// Where a query's time goes, step by step (tree and gar: each level or
    /// the best-first rounds, then the shortlist rerank); empty for systems
    /// that do not navigate.
    pub time_by_step: Vec<StepCost>,
    /// Each query's metrics, in query order (for `--run-dir` and the
    /// paired tests; not in the JSON report).
    #[serde(skip)]
    pub per_query: Vec<crate::runs::QueryMetrics>,
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
    pub judge_budgets: Vec<BudgetReport>,
    /// The exploration sweep (empty without `--explore-budgets`).
    pub explore_budgets: Vec<ExploreReport>,
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
        vectors_scored: mean(&|o| o.usage.vectors_scored as f64),
        cache_hits: mean(&|o| f64::from(o.usage.cache_hits)),
        titles_read: mean(&|o| o.titles_read),
        input_tokens: mean(&|o| o.usage.input_tokens as f64),
        cached_input_tokens: mean(&|o| o.usage.cached_input_tokens as f64),
        cost_usd: mean(&|o| o.usage.cost_usd),
        seconds_per_query: mean(&|o| o.latency_ms) / 1000.0,
        latency_p50_ms: quantile(&latencies, 0.5),
        latency_p95_ms: quantile(&latencies, 0.95),
        queries_per_second: 0.0,
        calibration: scored(outcomes, golds),
        significance: Vec::new(),
        navigation,
        time_by_step: time_by_step(outcomes),
        per_query: crate::runs::per_query(outcomes, golds, c),
    }
}

/// The calibration of the systems' scores over each query's top [`TOP`]
/// (none when a system gives no scores).
fn scored(outcomes: &[Outcome], golds: &[Gold]) -> Option<Calibration> {
    if outcomes.iter().any(|o| o.scores.len() != o.ranking.len()) {
        return None;
    }
    let pairs = outcomes.iter().zip(golds).flat_map(|(o, g)| {
        let gold = g.passages();
        o.ranking
            .iter()
            .zip(&o.scores)
            .take(TOP)
            .map(move |(p, s)| (*s, gold.contains(p)))
    });
    calibration(pairs)
}

/// Where the gold was lost on the way down, over the outcomes that walked
/// the tree level by level.
pub(crate) fn navigation_loss(outcomes: &[Outcome], tree: &Tree) -> NavigationLoss {
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
pub(crate) fn time_by_step(outcomes: &[Outcome]) -> Vec<StepCost> {
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
pub(crate) fn level_kinds(tree: &Tree) -> Vec<String> {
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

/// A rate with three significant digits or one decimal (a cross-encoder
/// bench runs well under one query a second).
pub(crate) fn rate(x: f64) -> String {
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
pub(crate) fn lost_at(kept: &[bool]) -> Option<usize> {
    match kept.iter().rposition(|k| *k) {
        Some(last) if last + 1 == kept.len() => None,
        Some(last) => Some(last + 2),
        None => Some(1),
    }
}

impl Report {
    /// The dataset line above the table.
    fn heading(&self) -> String {
        let d = &self.dataset;
        let split = d
            .split
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        let sampled = if d.queries < d.queries_total {
            format!(" of {} (seed {})", d.queries_total, self.seed)
        } else {
            String::new()
        };
        format!(
            "{}{split} · {} queries{sampled} · {} documents · {} passages · gold: {:?}\n\n",
            d.name, d.queries, d.documents, d.passages, d.gold
        )
    }

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

    /// For each system that navigates: where its gold was lost, by level.
    fn navigation_lines(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
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
        o
    }

    /// The report as a Markdown table (plus navigation loss for `tree`).
    pub fn markdown(&self) -> String {
        use std::fmt::Write as _;
        let mut o = self.heading();
        o.push_str("| system | P@1 | P@5 | P R@10 | P MRR@10 | P nDCG@10 | D@1 | D R@10 | D nDCG@10 | judged/q | D judged recall | calls/q | vectors/q | titles read | q/s | p50 ms | p95 ms |\n");
        o.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for name in &self.order {
            let Some(s) = self.systems.get(name) else {
                continue;
            };
            let _ = writeln!(
                o,
                "| {name} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.0} | {} | {:.1} | {:.0} | {:.1}% | {} | {:.1} | {:.1} |",
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
                s.vectors_scored,
                s.titles_read * 100.0,
                rate(s.queries_per_second),
                s.latency_p50_ms,
                s.latency_p95_ms
            );
        }
        o.push_str(&self.time_lines());
        for name in &self.order {
            if let Some(c) = self.systems.get(name).and_then(|s| s.calibration.as_ref()) {
                let _ = writeln!(o, "\n{name}: score {}", c.line());
            }
        }
        o.push_str(&self.navigation_lines());
        for (name, why) in &self.skipped {
            let _ = writeln!(o, "\n{name} skipped: {why}");
        }
        o.push_str(&markdown(&self.judge_budgets));
        o.push_str(&explore_markdown(
            &self.explore_budgets,
            self.systems.get("dense"),
            self.dataset.passages,
        ));
        o
    }
}

/// The figures of one budget.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetReport {
    /// The judgment budget B.
    pub budget: usize,
    /// `tree`, `rerank` and `gar` at B.
    pub systems: BTreeMap<String, SystemReport>,
}

/// The cheap stage at one exploration budget (`--explore-budgets`).
#[derive(Debug, Clone, Serialize)]
pub struct ExploreReport {
    /// Vectors the exploration may score per query (`--explore-budget`).
    pub budget: usize,
    /// Stored vectors read per query over the passages in the corpus
    /// (centroids of the descent included).
    pub corpus_share: f64,
    /// The figures.
    pub system: SystemReport,
}

/// The sweep as a Markdown table, with `dense` (exhaustive) as the
/// reference when it ran.
pub fn explore_markdown(
    rows: &[ExploreReport],
    dense: Option<&SystemReport>,
    passages: usize,
) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    if rows.is_empty() {
        return o;
    }
    o.push_str("\n| explore budget | D nDCG@10 | D@1 | P@1 | P nDCG@10 | vectors/q | of the corpus | p50 ms |\n");
    o.push_str("|---|---|---|---|---|---|---|---|\n");
    let mut line = |label: &str, s: &SystemReport, vectors: f64, share: f64| {
        let _ = writeln!(
            o,
            "| {label} | {:.3} | {:.3} | {:.3} | {:.3} | {vectors:.0} | {:.1}% | {:.1} |",
            s.document.ndcg_at_10,
            s.document.hit_at_1,
            s.passage.hit_at_1,
            s.passage.ndcg_at_10,
            share * 100.0,
            s.latency_p50_ms
        );
    };
    for r in rows {
        let vectors = r.system.vectors_scored;
        line(&r.budget.to_string(), &r.system, vectors, r.corpus_share);
    }
    if let Some(d) = dense {
        line("dense (every passage)", d, passages as f64, 1.0);
    }
    o
}

/// The metric the sweep's paired tests compare.
pub const TEST_METRIC: &str = "document nDCG@10";
/// The sweep's paired test ([`crate::runs::paired_p`]).
pub const TEST: &str = "paired randomisation test, two-sided, 10,000 sign flips, seed fixed";

/// A paired test of one system against another on the same queries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Significance {
    /// The other system (`bm25`, or `rerank` at the same budget).
    pub against: String,
    /// [`TEST_METRIC`].
    pub metric: &'static str,
    /// [`TEST`].
    pub test: &'static str,
    /// The p-value.
    pub p: f64,
}

/// Tests each sweep row against flat BM25 (when `bm25` ran) and the tree
/// rows also against `rerank` at the same budget, on [`TEST_METRIC`].
pub(crate) fn add_significance(budgets: &mut [BudgetReport], bm25: Option<&SystemReport>) {
    let ndcg = |s: &SystemReport| -> Vec<f64> {
        s.per_query.iter().map(|q| q.document.ndcg_at_10).collect()
    };
    let test = |a: &[f64], against: &str, b: &Option<Vec<f64>>| {
        let p = crate::runs::paired_p(a, b.as_deref()?)?;
        Some(Significance {
            against: against.into(),
            metric: TEST_METRIC,
            test: TEST,
            p,
        })
    };
    let bm25 = bm25.map(ndcg);
    for b in budgets {
        let rerank = b.systems.get("rerank").map(ndcg);
        for (name, s) in b.systems.iter_mut() {
            let tree_like = matches!(
                name.split(':').next().unwrap_or_default(),
                "tree" | "tree+judge" | "tree+fused" | "gar" | "tree+clusters"
            );
            let own = ndcg(s);
            let mut tests: Vec<Significance> = test(&own, "bm25", &bm25).into_iter().collect();
            if tree_like {
                tests.extend(test(&own, "rerank", &rerank));
            }
            s.significance = tests;
        }
    }
}

/// The sweep as a Markdown table (empty without a sweep), with the p-values
/// [`add_significance`] found.
pub fn markdown(budgets: &[BudgetReport]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    if budgets.is_empty() {
        return o;
    }
    o.push_str("\n| budget | system | judged/q | judged recall (D) | D@1 | D nDCG@10 | D MRR@10 | P@1 | P nDCG@10 | ECE | calls/q | rounds | s/q | p vs bm25 | p vs rerank |\n");
    o.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let p = |s: &SystemReport, against: &str| -> String {
        s.significance
            .iter()
            .find(|t| t.against == against)
            .map_or_else(String::new, |t| format!("{:.3}", t.p))
    };
    for b in budgets {
        let named = SYSTEMS.iter().flat_map(|name| {
            b.systems
                .iter()
                .filter(move |(k, _)| k.as_str() == *name || k.starts_with(&format!("{name}:")))
        });
        for (name, s) in named {
            let ece = s
                .calibration
                .as_ref()
                .map_or_else(|| "—".to_string(), |c| format!("{:.3}", c.ece));
            let _ = writeln!(
                o,
                "| {} | {name} | {:.1} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {ece} | {:.1} | {:.1} | {:.3} | {} | {} |",
                b.budget,
                s.candidates_judged,
                s.document.judged_recall.unwrap_or(0.0),
                s.document.hit_at_1,
                s.document.ndcg_at_10,
                s.document.mrr_at_10,
                s.passage.hit_at_1,
                s.passage.ndcg_at_10,
                s.judge_calls,
                s.rounds,
                s.seconds_per_query,
                p(s, "bm25"),
                p(s, "rerank"),
            );
        }
    }
    let _ = writeln!(
        o,
        "\np: {TEST} on {TEST_METRIC}, per query; ECE: expected calibration error of the score over each query's top 10 (10 bins)."
    );
    o
}

/// The systems of the sweep, in the order run (the last two only with a
/// dense embedder).
pub const SYSTEMS: [&str; 11] = [
    "tree",
    "tree+judge",
    "tree+fused",
    "rerank",
    "rerank+fused",
    "gar",
    "tree+clusters",
    "dense-rerank",
    "dense-rerank+fused",
    "hybrid-rerank",
    "hybrid-rerank+fused",
];

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
}

//! The exploration sweep (`--explore-budgets`): the cascade's cheap stage
//! alone — the embedding judge over the tree's stored vectors, as the
//! default query runs it — at several exploration budgets, with the
//! vectors it read per query and the share of the corpus that is. Beside
//! `dense` (every passage scored), it says what the search saves and what
//! it costs in quality.

use crate::context::{Context, Runner};
use crate::report::{summarize, SystemReport};
use crate::{Error, Result};
use serde::Serialize;
use std::sync::Arc;
use treenav_judge::{BackendOptions, Judge, JudgeOptions};
use treenav_navigator::{BestFirstConfig, Strategy, ValidConfig};
use treenav_tree::Progress;

/// The cheap stage at one exploration budget.
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

/// Runs the embedding judge alone at each of `ctx.setup.explore_budgets`.
pub(crate) async fn run(ctx: &Arc<Context>, progress: &dyn Progress) -> Result<Vec<ExploreReport>> {
    let mut out = Vec::new();
    for &budget in &ctx.setup.explore_budgets {
        let name = format!("explore@{budget}");
        let options = JudgeOptions {
            backend: BackendOptions::Embedding {},
            ..ctx.setup.judge.clone()
        };
        let judge = Judge::new(&options).map_err(|source| Error::Judge {
            system: name.clone(),
            query: "-".into(),
            source,
        })?;
        let runner = ctx.navigator_with(&name, judge, config(&ctx.setup.navigator, budget)?)?;
        if let Runner::Tree(navigator) = &runner {
            if !navigator.embeds_queries() {
                return Err(Error::Config(
                    "--explore-budgets needs a tree with stored vectors of an embedder available here (built with bge-small, minilm or openai; not tfidf)".into(),
                ));
            }
        }
        let (outcomes, seconds) = ctx.outcomes(&name, runner, progress).await?;
        let tree = ctx.setup.tree.as_deref();
        let mut system = summarize(&outcomes, &ctx.golds, &ctx.collection, tree, true);
        ctx.write_runs(&name, &outcomes, &system)?;
        system.queries_per_second = outcomes.len() as f64 / seconds.max(1e-9);
        out.push(ExploreReport {
            budget,
            corpus_share: system.vectors_scored / ctx.collection.len().max(1) as f64,
            system,
        });
    }
    Ok(out)
}

/// The bench's navigator settings, best-first, exploring `budget` vectors.
fn config(base: &ValidConfig, budget: usize) -> Result<ValidConfig> {
    let bf = BestFirstConfig {
        explore_budget: budget,
        ..base.best_first().clone()
    };
    base.settings()
        .clone()
        .strategy(Strategy::BestFirst)
        .best_first(bf)
        .check()
        .map_err(|source| Error::Navigator {
            system: format!("explore@{budget}"),
            source,
        })
}

/// The sweep as a Markdown table, with `dense` (exhaustive) as the
/// reference when it ran.
pub fn markdown(rows: &[ExploreReport], dense: Option<&SystemReport>, passages: usize) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    if rows.is_empty() {
        return o;
    }
    o.push_str("\n| explore budget | D nDCG@10 | D@1 | P@1 | P nDCG@10 | vectors/q | of the corpus | p50 ms |\n");
    o.push_str("|---|---|---|---|---|---|---|---|\n");
    let mut line = |label: &str, s: &SystemReport, vectors: f64| {
        let _ = writeln!(
            o,
            "| {label} | {:.3} | {:.3} | {:.3} | {:.3} | {vectors:.0} | {:.1}% | {:.1} |",
            s.document.ndcg_at_10,
            s.document.hit_at_1,
            s.passage.hit_at_1,
            s.passage.ndcg_at_10,
            vectors / passages.max(1) as f64 * 100.0,
            s.latency_p50_ms
        );
    };
    for r in rows {
        line(&r.budget.to_string(), &r.system, r.system.vectors_scored);
    }
    if let Some(d) = dense {
        line("dense (every passage)", d, passages as f64);
    }
    o
}

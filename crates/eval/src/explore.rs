//! The exploration sweep (`--explore-budgets`): the cascade's cheap stage
//! alone — the embedding judge over the tree's stored vectors, as the
//! default query runs it — at several exploration budgets, with the
//! vectors it read per query and the share of the corpus that is. Beside
//! `dense` (every passage scored), it says what the search saves and what
//! it costs in quality.

use crate::context::{Context, Runner};
use crate::report::ExploreReport;
use crate::{Error, Result};
use std::sync::Arc;
use treenav_judge::{BackendOptions, Judge, JudgeOptions};
use treenav_navigator::{BestFirstConfig, Strategy, ValidConfig};
use treenav_tree::Progress;

/// Runs the embedding judge alone at each of `ctx.setup.explore_budgets`.
pub(crate) async fn run(ctx: &Arc<Context>, progress: &dyn Progress) -> Result<Vec<ExploreReport>> {
    let mut out = Vec::new();
    for &budget in &ctx.setup.explore_budgets {
        let name = format!("explore@{budget}");
        let options = JudgeOptions {
            backend: BackendOptions::Embedding(treenav_judge::EmbeddingOptions {}),
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
        let system = ctx.measure(&name, runner, true, progress).await?;
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

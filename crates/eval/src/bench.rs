//! The bench runner: systems over a dataset's queries, scored the same way.
//!
//! # The report's JSON schema (`treenav-bench/3`)
//!
//! ```text
//! {
//!   "schema": "treenav-bench/3",
//!   "dataset": { "path", "name", "format": "squad"|"beir", "split", "gold": "passage"|"document",
//!                "documents", "passages", "queries", "queries_total" },
//!   "seed": u64, "limit": u64|null,
//!   "config": { ... the settings used: judge, navigator, rerank_n, rrf_k, embedder ... },
//!                                              // navigator: one field per setting, named as the
//!                                              // flags are (`top`, `judge_budget`, …); /3 made it
//!                                              // flat (/2 nested `best_first`, `returned_passages`)
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

use crate::context::Context;
use crate::dataset::Dataset;
use crate::Result;
use std::collections::BTreeMap;
use std::sync::Arc;
use treenav_tree::Progress;

pub use crate::outcome::StepCost;
pub use crate::report::{
    DatasetInfo, ExploreReport, LevelLoss, NavigationLoss, Report, SystemReport, SCHEMA,
};
pub use crate::setup::{BenchSetup, SystemKind};

/// Runs the systems over the dataset's queries (sampled by `setup.limit`),
/// then the judgment-budget sweep when `setup.judge_budgets` is set.
/// `progress` gets one stage per system with one unit per query.
pub async fn run(dataset: &Dataset, setup: &BenchSetup, progress: &dyn Progress) -> Result<Report> {
    setup.check()?;
    let ctx = Arc::new(Context::new(dataset, setup, progress).await?);
    let collection = &ctx.collection;
    if let Some(dir) = &setup.run_dir {
        crate::runs::write_qrels(dir, &ctx.queries, &ctx.golds, collection)?;
    }
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
        explore_budgets: Vec::new(),
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
        let summary = ctx
            .measure(system.name(), runner, system.uses_judge(), progress)
            .await?;
        report.order.push(system.name().into());
        report.systems.insert(system.name().into(), summary);
        ctx.save_scores()?;
    }
    report.judge_budgets = crate::sweep::run(&ctx, progress).await?;
    crate::report::add_significance(&mut report.judge_budgets, report.systems.get("bm25"));
    report.explore_budgets = crate::explore::run(&ctx, progress).await?;
    Ok(report)
}

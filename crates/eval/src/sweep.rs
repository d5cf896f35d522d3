//! The judgment-budget sweep: at each budget B, three systems show the judge
//! at most B candidates per query (calibration references and the shortlist
//! rerank included), on the same queries:
//!
//! * `tree`: best-first navigation at B (the bench's navigator settings),
//!   the judged passages in the judge's order;
//! * `tree+fused` (with the navigator's `fusion` above 0): the same search
//!   (its judge and cache, so no new calls and no meaningful speed) in the
//!   fused final order ([`treenav_navigator::fusion`]);
//! * `rerank`: BM25's top N passages judged, then the shortlist of m, N as
//!   large as fits B with the calibration references counted (a pointwise
//!   judge takes neither: N = B);
//! * `rerank+fused`: likewise rerank's own judgments in the same fused
//!   order — the row that tells a gain of navigation from one of fusion;
//! * `gar`: best-first over the BM25 list and the stored neighbour lists,
//!   without the clusters — the ablation that shows what the clusters add;
//!   when the bench's best-first runs without them (the default),
//!   `tree+clusters` instead: the same with the cluster route on;
//! * with a dense embedder (`--embedder`, the tree's own for a fair
//!   comparison), `dense-rerank` (brute-force cosine top N, judged, the
//!   shortlist) and `hybrid-rerank` (BM25 and dense fused by RRF, top N,
//!   judged): the vector-index pipelines a user would deploy instead, and
//!   their `+fused` rows (the same fusion as `tree+fused`), so each
//!   pipeline is compared at its best.
//!
//! Each row is tested against flat BM25 (and the tree rows against
//! `rerank`) by [`crate::runs::paired_p`] on document nDCG@10; the p-values
//! are in the table and in the JSON (`significance`).
//!
//! Each system but the `+fused` rows gets a fresh judge at each budget, so
//! none reads another's cache.

use crate::context::{clusters_config, gar_config, tree_config, Context, Runner, Stage};
pub use crate::report::{markdown, BudgetReport, SYSTEMS};
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::sync::Arc;
use treenav_judge::{Judge, Session};
use treenav_tree::Progress;

/// Runs the sweep over `ctx.setup.judge_budgets` (none: an empty list).
pub(crate) async fn run(ctx: &Arc<Context>, progress: &dyn Progress) -> Result<Vec<BudgetReport>> {
    let mut out = Vec::new();
    let nav = &ctx.setup.navigator;
    let m = if nav.shortlist() >= 2 {
        nav.shortlist()
    } else {
        0
    };
    for &budget in &ctx.setup.judge_budgets {
        if budget <= m.max(1) {
            return Err(Error::Config(format!(
                "judge budget {budget} leaves nothing to judge beside the shortlist of {m}"
            )));
        }
        let mut systems = BTreeMap::new();
        // The judge of `tree` and of `rerank`, which their `+fused` rows reuse.
        let mut judges: BTreeMap<&str, Judge> = BTreeMap::new();
        for (name, base, weight) in rows(ctx) {
            let stage = match base {
                "dense-rerank" => Stage::Dense,
                "hybrid-rerank" => Stage::Hybrid,
                _ => Stage::Bm25,
            };
            if stage != Stage::Bm25 && !ctx.has_dense() {
                continue;
            }
            // A `+fused` row reorders its base row's judgments (same judge,
            // so its cache): only the final order differs.
            let judge = match judges.get(base).filter(|_| weight > 0.0) {
                Some(judge) => judge.clone(),
                None => ctx.judge(&name)?,
            };
            judges.entry(base).or_insert_with(|| judge.clone());
            let runner = match base {
                "tree" => ctx.navigator_with(&name, judge, tree_config(nav, budget, weight)?)?,
                "gar" => ctx.navigator_with(&name, judge, gar_config(nav, budget, weight)?)?,
                "tree+clusters" => {
                    ctx.navigator_with(&name, judge, clusters_config(nav, budget, weight)?)?
                }
                _ => {
                    let how = ctx.session_options();
                    // As many as fit B: references and the shortlist
                    // counted, none for a pointwise judge.
                    let n = Session::new(&judge, how).fit(budget);
                    Runner::Judged {
                        judge,
                        pool: Some((stage, n)),
                        how,
                        fusion: weight,
                    }
                }
            };
            let label = format!("{name}@{budget}");
            let summary = ctx.measure(&label, runner, true, progress).await?;
            systems.insert(name.to_string(), summary);
            ctx.save_scores()?;
        }
        out.push(BudgetReport { budget, systems });
    }
    Ok(out)
}

/// The sweep's rows: (name, base system, fusion weight). Each `+fused`
/// system once per fusion weight (the bench's `fusion_weights`, else the
/// navigator's `fusion` when above 0), named `tree+fused` for one weight
/// and `tree+fused:W` for several.
fn rows(ctx: &Context) -> Vec<(String, &'static str, f64)> {
    let mut weights = ctx.setup.fusion_weights.clone();
    let configured = ctx.setup.navigator.best_first().fusion;
    if weights.is_empty() && configured > 0.0 {
        weights.push(configured);
    }
    let mut out = Vec::new();
    // The cluster ablation: `gar` (clusters off) when the bench's tree uses
    // them, else `tree+clusters` (clusters on).
    let clusters = ctx.setup.navigator.best_first().clusters;
    for name in SYSTEMS {
        if (name == "gar" && !clusters) || (name == "tree+clusters" && clusters) {
            continue;
        }
        match name.strip_suffix("+fused") {
            Some(base) => {
                for w in &weights {
                    let label = match weights.len() {
                        1 => name.to_string(),
                        _ => format!("{name}:{w}"),
                    };
                    out.push((label, base, *w));
                }
            }
            None => out.push((name.to_string(), name, 0.0)),
        }
    }
    out
}

//! The judgment-budget sweep: at each budget B, three systems show the judge
//! at most B candidates per query (calibration references and the shortlist
//! rerank included), on the same queries:
//!
//! * `tree`: best-first navigation at B with the bench's navigator settings,
//!   fusion included — what `treenav query --judge-budget B --no-widen`
//!   returns with the same flags;
//! * `tree+judge` (with the navigator's `fusion` above 0): the same search
//!   (its judge and cache, so no new calls and no meaningful speed) with
//!   the judged passages in the judge's own order;
//! * `tree+fused:W` for each `--fusion-weights` W other than the
//!   navigator's: the same search in the order fused at W
//!   ([`treenav_navigator::fusion`]);
//! * `rerank`: BM25's top N passages judged, then the shortlist of m, N as
//!   large as fits B with the calibration references counted (a pointwise
//!   judge takes neither: N = B);
//! * `rerank+fused`: likewise rerank's own judgments in the fused order (at
//!   the navigator's fusion, or `rerank+fused:W` at each of several
//!   weights) — the row that tells a gain of navigation from one of fusion;
//! * `gar`: best-first over the BM25 list and the stored neighbour lists,
//!   without the clusters — the ablation that shows what the clusters add;
//!   when the bench's best-first runs without them (the default),
//!   `tree+clusters` instead: the same with the cluster route on; both at
//!   the navigator's fusion, as `tree`;
//! * with a dense embedder (`--embedder`, the tree's own for a fair
//!   comparison), `dense-rerank` (brute-force cosine top N, judged, the
//!   shortlist) and `hybrid-rerank` (BM25 and dense fused by RRF, top N,
//!   judged): the vector-index pipelines a user would deploy instead, and
//!   their `+fused` rows (the same fusion as `tree`), so each pipeline is
//!   compared at its best.
//!
//! Each row is tested against flat BM25 (and the tree rows against
//! `rerank`) by [`crate::runs::paired_p`] on document nDCG@10; the p-values
//! are in the table and in the JSON (`significance`).
//!
//! Each base system gets a fresh judge at each budget, so none reads
//! another's cache; its variants (`tree+judge`, the `+fused` rows) reuse it.

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
        // The judge of each base system, which its variants reuse.
        let mut judges: BTreeMap<&str, Judge> = BTreeMap::new();
        for Row { name, base, weight } in rows(ctx) {
            let stage = match base {
                "dense-rerank" => Stage::Dense,
                "hybrid-rerank" => Stage::Hybrid,
                _ => Stage::Bm25,
            };
            if stage != Stage::Bm25 && !ctx.has_dense() {
                continue;
            }
            // A variant reorders its base row's judgments (same judge, so
            // its cache): only the final order differs.
            let judge = match judges.get(base).filter(|_| name != base) {
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

/// One row of the sweep: its name, the system it runs, at which fusion.
#[derive(Debug, PartialEq)]
struct Row {
    name: String,
    base: &'static str,
    weight: f64,
}

/// The sweep's rows. The tree rows (`tree`, `gar`, `tree+clusters`) run at
/// the navigator's `fusion`, as `treenav query` does; `tree+judge` is
/// `tree` in the judge's order. Each `+fused` row once per fusion weight
/// (the bench's `fusion_weights`, else the navigator's `fusion` when above
/// 0), named `X+fused` for one weight and `X+fused:W` for several; the tree
/// leaves out the navigator's own weight, which is `tree` itself.
fn rows(ctx: &Context) -> Vec<Row> {
    let nav = ctx.setup.navigator.best_first();
    sweep_rows(&ctx.setup.fusion_weights, nav.fusion, nav.clusters)
}

fn sweep_rows(weights: &[f64], configured: f64, clusters: bool) -> Vec<Row> {
    let mut weights = weights.to_vec();
    if weights.is_empty() && configured > 0.0 {
        weights.push(configured);
    }
    let row = |name: String, base, weight| Row { name, base, weight };
    let mut out = Vec::new();
    for name in SYSTEMS {
        match name {
            // The cluster ablation: `gar` (clusters off) when the bench's
            // tree uses them, else `tree+clusters` (clusters on).
            "gar" if !clusters => {}
            "tree+clusters" if clusters => {}
            "tree" | "gar" | "tree+clusters" => out.push(row(name.into(), name, configured)),
            "tree+judge" if configured > 0.0 => out.push(row(name.into(), "tree", 0.0)),
            "tree+judge" => {}
            "tree+fused" => {
                for w in weights.iter().filter(|w| **w != configured) {
                    out.push(row(format!("{name}:{w}"), "tree", *w));
                }
            }
            _ => match name.strip_suffix("+fused") {
                Some(base) => {
                    for w in &weights {
                        let label = match weights.len() {
                            1 => name.to_string(),
                            _ => format!("{name}:{w}"),
                        };
                        out.push(row(label, base, *w));
                    }
                }
                None => out.push(row(name.into(), name, 0.0)),
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(rows: &[Row]) -> Vec<(&str, &str, f64)> {
        rows.iter()
            .map(|r| (r.name.as_str(), r.base, r.weight))
            .collect()
    }

    /// `tree` is what `treenav query` returns (the navigator's fusion), the
    /// judge's order and other weights are named variants of it.
    #[test]
    fn the_tree_row_runs_at_the_navigators_fusion() {
        let rows = sweep_rows(&[1.0, 4.0], 4.0, false);
        let rows = names(&rows);
        assert!(rows.contains(&("tree", "tree", 4.0)), "{rows:?}");
        assert!(rows.contains(&("tree+judge", "tree", 0.0)), "{rows:?}");
        assert!(rows.contains(&("tree+fused:1", "tree", 1.0)), "{rows:?}");
        assert!(!rows.iter().any(|r| r.0 == "tree+fused:4"), "{rows:?}");
        assert!(rows.contains(&("tree+clusters", "tree+clusters", 4.0)));
        assert!(rows.contains(&("rerank", "rerank", 0.0)));
        assert!(rows.contains(&("rerank+fused:4", "rerank", 4.0)));
        assert!(!rows.iter().any(|r| r.0 == "gar"), "{rows:?}");
        // Without fusion there is no judge's-order variant: `tree` is it.
        let plain = sweep_rows(&[], 0.0, true);
        let plain = names(&plain);
        assert!(plain.contains(&("tree", "tree", 0.0)));
        assert!(plain.contains(&("gar", "gar", 0.0)));
        assert!(!plain.iter().any(|r| r.0.starts_with("tree+")), "{plain:?}");
        // One weight, the navigator's: `rerank+fused` without a suffix.
        let one = sweep_rows(&[], 4.0, false);
        assert!(names(&one).contains(&("rerank+fused", "rerank", 4.0)));
    }
}

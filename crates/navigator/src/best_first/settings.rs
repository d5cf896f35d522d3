//! The `best-first` strategy's settings, listed with their help and
//! ranges (see [`crate::settings`]), and the rule between them and the
//! navigator's.

use crate::settings::{infinity_as_null, Kind, Setting};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use treenav_judge::checked;

/// The settings of `best-first`, as flags and requests name them.
pub(crate) const SETTINGS: &[Setting] = &[
    Setting::count("judge_budget", "Candidates shown to the judge per query, calibration references and the shortlist rerank included.", 1, 100_000),
    Setting::count("slate_size", "Candidates per judge call.", 2, 200),
    Setting::count("rounds", "Sequential rounds the budget is spread over.", 1, 100),
    Setting::switch("neighbours", "Follow the tree's neighbour lists."),
    Setting::switch("clusters", "Use the clusters too (evidence up, cluster siblings); measured to add nothing over the neighbour lists."),
    Setting::switch("cards", "Judge cluster cards too."),
    Setting::number("path_weight", "Path relevance weight α (own score vs the parent's path score).", 0.0, 1.0),
    Setting::number("neighbour_weight", "A neighbour's priority is this times its source's score.", 0.0, 1.0),
    Setting::number("sibling_weight", "A judged document's other passages get at least this times its score as priority.", 0.0, 1.0),
    Setting::switch("adaptive_split", "Split each round between the lexical list and the graph by how well each scored in the last round (off: alternate one for one, as GAR does)."),
    Setting::number("fusion", "Order the judged passages by the judge's score fused with the search's evidence (BM25 rank, judged neighbours), weight on the logit scale (0: the judge's score alone).", 0.0, 20.0),
    Setting::count("explore_budget", "The cascade's first stage: vectors the embedding judge scores per query (BM25's list, a descent of the clusters by centroid, the neighbour lists); with the embedding judge the only stage; 0 turns it off.", 0, 100_000),
    Setting::number("explore_fusion", "The exploration's final order: the embedding judge's score fused with BM25's rank and the judged neighbours (weight on the logit scale; 0: the embedding alone).", 0.0, 20.0),
    Setting::number("explore_weight", "Cascade: how much the exploration's score counts beside the judge's in the final order (weight on the logit scale).", 0.0, 20.0),
    Setting::switch("passage_evidence", "The exploration's centred fusion counts each judged passage's own BM25 rank among the judged (a fitted fusion always does)."),
    Setting::switch("fitted_fusion", "The exploration's final order from the fusion fitted for the tree's embedder, where there is one (docs/calibration.md); off: the centred fusion with explore_fusion."),
    Setting::of("skip_judge_gap", "Cascade: do not call the judge when the exploration is sure, its best passage leading the second best by this many logits or more (the fitted fusion's calibrated P; times the judge's say in a fitted cascade where that is above 1: over sentence-sized passages).", Kind::Gap { max: 100.0 }),
    Setting::switch("always_judge", "Cascade: call the judge on every query, however sure the exploration is (skip_judge_gap off)."),
    Setting::switch("keep_evidence", "Keep each explored passage's evidence in the retrieval.").library_only(),
    Setting::switch("tfidf_vectors", "Let the embedding judge use a TF-IDF tree's vectors.").library_only(),
    Setting::switch("widen", "Judge past judge_budget when it leaves fewer than top passages, until there are top."),
];

/// Settings of the `best-first` strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BestFirstConfig {
    /// Candidates shown to the judge per query, counting calibration
    /// references and the final shortlist rerank.
    pub judge_budget: usize,
    /// Candidates per judge call (a slate).
    pub slate_size: usize,
    /// Sequential rounds the budget is spread over (the shortlist rerank
    /// adds one more call after them).
    pub rounds: usize,
    /// Follow the tree's neighbour lists (GAR).
    pub neighbours: bool,
    /// Use the clusters: evidence flows up to them and down to their
    /// unjudged members. Off by default (measured to add nothing over the
    /// neighbour lists).
    pub clusters: bool,
    /// Judge cluster cards too (the root's children, then the children of
    /// cards judged promising).
    pub cards: bool,
    /// Path relevance weight α: a node's path score is α · its own score
    /// (judged, or the best judged beneath it) + (1 − α) · its parent's.
    pub path_weight: f64,
    /// A neighbour enters the frontier at γ · its source document's score.
    pub neighbour_weight: f64,
    /// A judged document's other passages enter the frontier at no less
    /// than this times its score (β), so a document that scored well is read
    /// on before its neighbours are tried; its path score (α · own, plus the
    /// clusters' share with `clusters` on) counts when higher.
    pub sibling_weight: f64,
    /// Split each round's slots between the lexical list and the graph,
    /// and the lexical slots between its passage and document orders, by
    /// how well each scored in the last round that tried it (within 20–80%;
    /// the default); off, the graph and the passage order alternate one for
    /// one (GAR).
    pub adaptive_split: bool,
    /// The final order's fusion weight `w`: judged passages are ordered by
    /// `σ(logit(P) + w · evidence)`, the evidence being the document's BM25
    /// rank and its neighbours' judged scores ([`crate::fusion`]). 0: the
    /// judge's score alone. By default, 4 (measured on SciFact and XQuAD).
    pub fusion: f64,
    /// The cascade's first stage: vectors the embedding judge scores per
    /// query when the tree's embedder is available (stored passage
    /// vectors, the query embedded once), in rounds of 25 over BM25's list,
    /// the documents a descent of the clusters by centroid reaches, and
    /// the neighbour lists. 0 turns the stage off. With the embedding judge
    /// as `--judge`, the only stage. By default, 300 (the library, the CLI,
    /// `serve` and the bench alike): on SciFact it scores 2.7% of the
    /// passages per query and reaches exhaustive dense's nDCG@10.
    pub explore_budget: usize,
    /// The exploration's final order: the embedding judge's score fused
    /// with the search's evidence (as `fusion`). By default, 2 (chosen on
    /// SciFact's train queries, bge-small tree, document nDCG@10 at 0 / 1.5
    /// / 2: 0.746 / 0.768 / 0.769 with the shipped calibration; 0.757 at
    /// the equivalent of 6).
    pub explore_fusion: f64,
    /// The cascade's final order adds this times the exploration's logit
    /// (centred) to the judge's fused logit: how much the embedding's
    /// opinion counts beside the judge's. By default, 1.
    pub explore_weight: f64,
    /// The exploration's final order also counts each judged passage's
    /// own BM25 rank among the judged in its evidence
    /// ([`crate::fusion::fused_with_passages`]; the centred fusion only: a
    /// fitted fusion always counts it). By default, on: SQuAD dev
    /// (500 queries) passage P@1 0.686 → 0.758, SciFact train document
    /// nDCG@10 0.769 → 0.766.
    pub passage_evidence: bool,
    /// The exploration's final order and score from the logistic model
    /// fitted for the tree's embedder ([`crate::fusion::FittedFusion`]),
    /// where there is one; otherwise (and off) the centred fusion with
    /// `explore_fusion`. By default, on.
    pub fitted_fusion: bool,
    /// The cascade asks its judge only where the exploration is unsure:
    /// when the exploration's best passage leads its second best by this
    /// many logits or more (its fitted fusion's calibrated P), the judge is
    /// not called and the exploration's order is the answer
    /// ([`crate::Trace::judge_skipped`]). `f64::INFINITY`: always judge;
    /// without a fitted fusion the judge always runs. By default, 2: held
    /// out (cross-encoder at budget 20, the judged passages' nDCG@10) the
    /// sentence-split XQuAD 0.919 → 0.917 with 63% of its queries not
    /// judged, SciFact test 0.688 → 0.690 (6%), SQuAD dev 0.898 → 0.898
    /// (32%) (docs/calibration.md).
    #[serde(with = "infinity_as_null")]
    pub skip_judge_gap: f64,
    /// The cascade asks its judge on every query, however sure the
    /// exploration is (as `skip_judge_gap` at infinity). Off by default.
    pub always_judge: bool,
    /// Keep each explored passage's [`crate::fusion::Evidence`] in
    /// [`crate::Retrieval::evidence`] (what `treenav bench --evidence`
    /// writes to fit the fusion). Off by default.
    pub keep_evidence: bool,
    /// Let the embedding judge use a TF-IDF tree's vectors. Off by
    /// default: their vocabulary is fitted on titles and leads, and on
    /// XQuAD (300 queries) the embedding judge over them reached passage
    /// P@1 0.157 against BM25's 0.943, so a TF-IDF tree is judged by the
    /// lexical judge instead. For tests and comparisons.
    pub tfidf_vectors: bool,
    /// `top` is k: when the budget judged fewer passages than
    /// `returned_passages`, judge more (past the budget) until there are
    /// enough or nothing is left. Off, the budget is a hard cap (the bench's
    /// sweep, which compares systems at equal judgments).
    pub widen: bool,
}

impl Default for BestFirstConfig {
    fn default() -> Self {
        BestFirstConfig {
            judge_budget: 100,
            slate_size: 10,
            rounds: 5,
            neighbours: true,
            // Off by default: in every sweep (SciFact, XQuAD; tfidf, MiniLM
            // and bge-small trees) the cluster route added nothing over the
            // neighbour lists, and cost 1-2 points at budget 20 on SciFact.
            clusters: false,
            cards: false,
            path_weight: 0.5,
            neighbour_weight: 0.6,
            // β = γ: a document's own passages tie with its nearest
            // neighbour (BM25 breaks the tie). With β = 0 (only α · own =
            // 0.5 · own, the earlier default) the budget went to neighbours
            // and the gold document's other passages went unjudged. At
            // budget 20, cross-encoder, passage nDCG@10 from β 0 to 0.6:
            // SciFact 0.441 → 0.596, SQuAD dev 0.795 → 0.875, XQuAD 0.970
            // → 0.991; judged recall unchanged (SciFact 0.855).
            sibling_weight: 0.6,
            // Measured (cross-encoder, `treenav bench --score-file`, so
            // both runs read the same scores; fused order): at budget 20
            // SciFact judged recall 0.849 → 0.857, document nDCG@10 0.679
            // → 0.683, SQuAD dev (500) P@1 0.808 → 0.810; at 50 and 100
            // within 0.2 points on both, XQuAD unchanged. The lexical
            // list's two orders (same scores): at 50 SciFact judged recall
            // 0.892 → 0.902, document nDCG@10 0.674 → 0.682, SQuAD dev P@1
            // 0.808 → 0.812; at 20 recall −0.5, at 100 nDCG −0.3.
            adaptive_split: true,
            // Measured (cross-encoder, 100 queries each): SciFact document
            // nDCG@10 +0.7 / +1.7 / +2.1 at budgets 20 / 50 / 100, XQuAD
            // within 0.6 points; 8 gained more on SciFact but is that set's
            // last point.
            fusion: 4.0,
            explore_budget: 300,
            explore_fusion: 2.0,
            explore_weight: 1.0,
            passage_evidence: true,
            fitted_fusion: true,
            skip_judge_gap: 2.0,
            always_judge: false,
            keep_evidence: false,
            tfidf_vectors: false,
            widen: true,
        }
    }
}

impl BestFirstConfig {
    /// Checks the rule between these settings and the navigator's (each
    /// setting's own range is checked from the list): the judge budget
    /// must exceed the shortlist when the strategy spends the budget,
    /// which pays for the shortlist's rerank.
    pub(crate) fn check(&self, shortlist: usize, spends_budget: bool) -> Result<()> {
        // JSON has no NaN or −∞: they would read as ∞ (never skip).
        if self.skip_judge_gap.is_nan() || self.skip_judge_gap == f64::NEG_INFINITY {
            return Err(Error::Setting {
                name: "skip_judge_gap".into(),
                problem: format!("must be a number in [0, 100] or infinity, got {}", self.skip_judge_gap),
            });
        }
        // A levels walk with a large shortlist is not refused over it.
        if !spends_budget {
            return Ok(());
        }
        checked::count("judge_budget", self.judge_budget, shortlist.max(1) + 1..=100_000)
            .map(drop)
            .map_err(|e| Error::Setting {
                name: "judge_budget".into(),
                // The floor follows the shortlist (the CLI's default 5, a
                // server's own --shortlist): the message says which.
                problem: format!("(above the shortlist, {shortlist}) must be {}, got {}", e.range, e.value),
            })
    }

    /// The lead at which the cascade skips its judge (infinity: never).
    pub(crate) fn skip_gap(&self) -> f64 {
        match self.always_judge {
            true => f64::INFINITY,
            false => self.skip_judge_gap,
        }
    }
}

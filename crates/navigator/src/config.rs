//! The navigator's configuration, checked once before any query.

use crate::{Error, Result, Strategy};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use treenav_judge::checked;

/// What to do when a judge call still fails after the dispatcher's retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnJudgeError {
    /// Fail the query with an error naming the level and batch.
    Fail,
    /// Score that batch with the lexical judge instead, and record it in the trace.
    Fallback,
}

/// The navigator's defaults that the CLI's flags and `serve` show too
/// (the library's [`NavigatorConfig::default`] reads them).
pub mod defaults {
    /// Passages returned (r).
    pub const RETURNED_PASSAGES: usize = 10;
    /// Passages reranked by one multiple-choice question (m).
    pub const SHORTLIST: usize = 5;
    /// Candidates per judge call of a levels walk.
    pub const BATCH_SIZE: usize = 100;
    /// Member titles on a cluster's card.
    pub const CARD_TITLES: usize = 30;
    /// Sentences shown after a document's title.
    pub const LEAD_SENTENCES: usize = 1;
    /// BM25 documents added to the document level.
    pub const LEXICAL_ENTRY: usize = 20;
}

/// Settings of the `best-first` strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
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
            keep_evidence: false,
            tfidf_vectors: false,
            widen: true,
        }
    }
}

/// Navigator settings (linfa style: set, then [`NavigatorConfig::check`]).
///
/// ```
/// use treenav_navigator::NavigatorConfig;
/// let config = NavigatorConfig::default().batch_size(100).retention_budgets([20, 10]).check()?;
/// assert_eq!(config.budget(0), 20);
/// assert_eq!(config.budget(5), 10);
/// # Ok::<(), treenav_navigator::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NavigatorConfig {
    pub(crate) batch_size: usize,
    pub(crate) retention_budgets: Vec<usize>,
    pub(crate) returned_passages: usize,
    pub(crate) per_document: usize,
    pub(crate) shortlist: usize,
    pub(crate) card_titles: usize,
    pub(crate) lead_sentences: usize,
    pub(crate) calibration: bool,
    pub(crate) lexical_entry: usize,
    pub(crate) on_judge_error: OnJudgeError,
    pub(crate) deadline_secs: Option<f64>,
    pub(crate) max_cost_usd: Option<f64>,
    pub(crate) strategy: Strategy,
    pub(crate) best_first: BestFirstConfig,
}

/// The budget of a level with none configured.
pub const DEFAULT_BUDGET: usize = 10;

impl Default for NavigatorConfig {
    fn default() -> Self {
        NavigatorConfig {
            batch_size: defaults::BATCH_SIZE,
            retention_budgets: Vec::new(),
            returned_passages: defaults::RETURNED_PASSAGES,
            per_document: 0,
            shortlist: defaults::SHORTLIST,
            card_titles: defaults::CARD_TITLES,
            lead_sentences: defaults::LEAD_SENTENCES,
            calibration: true,
            lexical_entry: defaults::LEXICAL_ENTRY,
            on_judge_error: OnJudgeError::Fail,
            deadline_secs: None,
            max_cost_usd: None,
            strategy: Strategy::default(),
            best_first: BestFirstConfig::default(),
        }
    }
}

impl NavigatorConfig {
    /// Candidates per judge call (1–200). By default, 100.
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n;
        self
    }

    /// Candidates kept per level, top level first (k_1, k_2, …); levels
    /// beyond the list keep 10. By default, 10 at every level.
    pub fn retention_budgets(mut self, budgets: impl IntoIterator<Item = usize>) -> Self {
        self.retention_budgets = budgets.into_iter().collect();
        self
    }

    /// Passages returned (r). By default, 10.
    pub fn returned_passages(mut self, r: usize) -> Self {
        self.returned_passages = r;
        self
    }

    /// At most `n` passages of one document in the result (0: no limit, the
    /// default). The search still returns `returned_passages` when enough
    /// documents are within reach.
    pub fn per_document(mut self, n: usize) -> Self {
        self.per_document = n;
        self
    }

    /// Passages reranked by one multiple-choice question (m ≤ r; 0 or 1 turns
    /// the rerank off). By default, 5.
    pub fn shortlist(mut self, m: usize) -> Self {
        self.shortlist = m;
        self
    }

    /// Member titles shown on a cluster's card after its summary, most
    /// central first. By default, 30 (on SciFact with the lexical judge, the
    /// gold's cluster survived for 0.35 of queries with 8 titles, 0.44 with 30).
    pub fn card_titles(mut self, n: usize) -> Self {
        self.card_titles = n;
        self
    }

    /// Sentences of a document shown after its title. By default, 1 (as the paper).
    pub fn lead_sentences(mut self, n: usize) -> Self {
        self.lead_sentences = n;
        self
    }

    /// Show the same reference candidates in every batch of a level and shift
    /// each batch's scores so the references agree across batches. By default,
    /// on (SciFact, lexical judge: gold document kept 0.18 → 0.28).
    pub fn calibration(mut self, on: bool) -> Self {
        self.calibration = on;
        self
    }

    /// Add the top `n` documents of a BM25 index over the corpus to the
    /// document level's candidates and always expand them (on top of the
    /// level's budget), so navigation can only add recall to flat lexical
    /// retrieval (0 turns it off). By default, 20 (SciFact, lexical judge:
    /// document Hit@1 0.16 → 0.51).
    pub fn lexical_entry(mut self, n: usize) -> Self {
        self.lexical_entry = n;
        self
    }

    /// What a judge failure does. By default, [`OnJudgeError::Fail`].
    pub fn on_judge_error(mut self, on: OnJudgeError) -> Self {
        self.on_judge_error = on;
        self
    }

    /// Overall time limit of one query, in seconds. By default, none.
    pub fn deadline_secs(mut self, secs: Option<f64>) -> Self {
        self.deadline_secs = secs;
        self
    }

    /// Cost limit of one query in USD; navigation stops with an error once
    /// passed. By default, none.
    pub fn max_cost_usd(mut self, usd: Option<f64>) -> Self {
        self.max_cost_usd = usd;
        self
    }

    /// The strategy. By default, [`Strategy::BestFirst`].
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Candidates shown to the judge per query under `best-first`,
    /// references and the shortlist rerank included (at least the
    /// shortlist + 1, at most 100,000). By default, 100.
    pub fn judge_budget(mut self, budget: usize) -> Self {
        self.best_first.judge_budget = budget;
        self
    }

    /// Every `best-first` setting at once.
    pub fn best_first(mut self, settings: BestFirstConfig) -> Self {
        self.best_first = settings;
        self
    }

    /// The best-first settings as set so far.
    pub fn best_first_settings(&self) -> &BestFirstConfig {
        &self.best_first
    }

    /// Checks every setting.
    pub fn check(self) -> Result<ValidConfig> {
        let bad = |m: String| Err(Error::Config(m));
        let bf = &self.best_first;
        // The judge budget is a best-first setting: a levels walk with a
        // large shortlist is not refused over it.
        let budgets = match self.strategy.profile().spends_judge_budget {
            true => self.shortlist.max(1) + 1..=100_000,
            false => 1..=100_000,
        };
        // The floor follows the shortlist (the CLI's default 5, a
        // server's own --shortlist): the message says which.
        let name = format!("judge_budget (above the shortlist, {})", self.shortlist);
        checked::count(&name, bf.judge_budget, budgets).map_err(out_of_range)?;
        checked::count("slate_size", bf.slate_size, 2..=200).map_err(out_of_range)?;
        checked::count("rounds", bf.rounds, 1..=100).map_err(out_of_range)?;
        for (name, w) in [
            ("path_weight", bf.path_weight),
            ("neighbour_weight", bf.neighbour_weight),
            ("sibling_weight", bf.sibling_weight),
        ] {
            checked::within(name, w, 0.0..=1.0).map_err(out_of_range)?;
        }
        checked::within("fusion", bf.fusion, 0.0..=20.0).map_err(out_of_range)?;
        checked::within("explore_fusion", bf.explore_fusion, 0.0..=20.0).map_err(out_of_range)?;
        checked::within("explore_weight", bf.explore_weight, 0.0..=20.0).map_err(out_of_range)?;
        checked::count("explore_budget", bf.explore_budget, 0..=100_000).map_err(out_of_range)?;
        checked::count("batch_size", self.batch_size, 1..=200).map_err(out_of_range)?;
        for &k in &self.retention_budgets {
            checked::at_least("a retention budget", k, 1).map_err(out_of_range)?;
        }
        checked::at_least("returned_passages", self.returned_passages, 1).map_err(out_of_range)?;
        if self.shortlist > self.returned_passages {
            return bad(format!(
                "shortlist ({}) must not exceed returned_passages ({})",
                self.shortlist, self.returned_passages
            ));
        }
        checked::at_least("lead_sentences", self.lead_sentences, 1).map_err(out_of_range)?;
        if let Some(s) = self.deadline_secs {
            checked::seconds("deadline_secs", s).map_err(out_of_range)?;
        }
        if let Some(cost) = self.max_cost_usd {
            checked::usd("max_cost_usd", cost).map_err(out_of_range)?;
        }
        Ok(ValidConfig(self))
    }
}

fn out_of_range(e: checked::OutOfRange) -> Error {
    Error::Config(e.to_string())
}

/// A checked [`NavigatorConfig`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidConfig(pub(crate) NavigatorConfig);

impl ValidConfig {
    /// The budget of level `i` (0 = the root's children).
    pub fn budget(&self, level: usize) -> usize {
        self.0
            .retention_budgets
            .get(level)
            .copied()
            .unwrap_or(DEFAULT_BUDGET)
    }

    /// The settings.
    pub fn settings(&self) -> &NavigatorConfig {
        &self.0
    }

    /// Candidates per judge call.
    pub fn batch_size(&self) -> usize {
        self.0.batch_size
    }

    /// Whether batches of a level are calibrated against shared references.
    pub fn calibration(&self) -> bool {
        self.0.calibration
    }

    /// Passages reranked by one multiple-choice question (m).
    pub fn shortlist(&self) -> usize {
        self.0.shortlist
    }

    /// Passages returned (r).
    pub fn returned_passages(&self) -> usize {
        self.0.returned_passages
    }

    /// At most this many passages of one document (`usize::MAX`: no limit).
    pub fn per_document(&self) -> usize {
        match self.0.per_document {
            0 => usize::MAX,
            n => n,
        }
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        self.0.strategy
    }

    /// The `best-first` settings.
    pub fn best_first(&self) -> &BestFirstConfig {
        &self.0.best_first
    }

    pub(crate) fn deadline(&self) -> Option<Duration> {
        // Checked in `check`: the conversion succeeds.
        self.0
            .deadline_secs
            .and_then(|s| checked::seconds("deadline_secs", s).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every count is checked through one function per kind, naming the
    /// field and its range.
    #[test]
    fn counts_name_field_and_range() {
        let says = |config: NavigatorConfig| match config.check() {
            Err(e) => e.to_string(),
            Ok(_) => String::new(),
        };
        assert!(says(NavigatorConfig::default().batch_size(0))
            .contains("batch_size must be in 1..=200, got 0"));
        assert!(says(NavigatorConfig::default().returned_passages(0))
            .contains("returned_passages must be at least 1, got 0"));
        let best_first = || NavigatorConfig::default().strategy(Strategy::BestFirst);
        assert!(says(best_first().judge_budget(1))
            .contains("judge_budget (above the shortlist, 5) must be in"));
        // A levels walk does not spend the judge budget: a shortlist above it
        // is no error there.
        let levels = NavigatorConfig::default()
            .strategy(Strategy::Levels)
            .returned_passages(100)
            .shortlist(100);
        assert!(levels.clone().check().is_ok());
        assert!(says(levels.strategy(Strategy::BestFirst)).contains("judge_budget"));
        assert!(says(best_first().best_first(BestFirstConfig {
            fusion: -1.0,
            ..BestFirstConfig::default()
        }))
        .contains("fusion"));
        assert!(NavigatorConfig::default().check().is_ok());
        assert_eq!(
            NavigatorConfig::default()
                .check()
                .map(|c| c.strategy())
                .ok(),
            Some(Strategy::BestFirst),
            "one default strategy everywhere"
        );
        assert_eq!("levels".parse::<Strategy>().ok(), Some(Strategy::Levels));
        assert!("bfs"
            .parse::<Strategy>()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
            .contains("best-first, levels"));
    }
}

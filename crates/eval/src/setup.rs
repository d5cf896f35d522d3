//! What a bench run is asked to do: the systems and their settings.

use crate::{Error, Result};
use serde::Serialize;
use std::sync::Arc;
use treenav_judge::{BackendOptions, JudgeOptions};
use treenav_navigator::ValidConfig;
use treenav_tree::{Embedder, Tree};

/// A retrieval system the bench can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemKind {
    /// The navigator over the tree.
    Tree,
    /// Flat BM25 over all passages.
    Bm25,
    /// Brute-force cosine over passage embeddings.
    Dense,
    /// BM25 and dense fused by Reciprocal Rank Fusion.
    Hybrid,
    /// BM25 top N judged by the judge, then the shortlist rerank.
    Rerank,
    /// The judge over every passage, then the shortlist rerank.
    Flat,
    /// Best-first over the BM25 list and the tree's neighbour lists, without
    /// the clusters (the ablation that shows what the tree adds).
    Gar,
}

impl SystemKind {
    /// Every system, in the order they are run.
    pub const ALL: [SystemKind; 7] = [
        SystemKind::Tree,
        SystemKind::Bm25,
        SystemKind::Dense,
        SystemKind::Hybrid,
        SystemKind::Rerank,
        SystemKind::Flat,
        SystemKind::Gar,
    ];

    /// Its name in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SystemKind::Tree => "tree",
            SystemKind::Bm25 => "bm25",
            SystemKind::Dense => "dense",
            SystemKind::Hybrid => "hybrid",
            SystemKind::Rerank => "rerank",
            SystemKind::Flat => "flat",
            SystemKind::Gar => "gar",
        }
    }

    /// Whether it asks the judge.
    pub fn uses_judge(self) -> bool {
        matches!(
            self,
            SystemKind::Tree | SystemKind::Rerank | SystemKind::Flat | SystemKind::Gar
        )
    }

    /// Whether it needs an embedder.
    pub fn uses_embedder(self) -> bool {
        matches!(self, SystemKind::Dense | SystemKind::Hybrid)
    }
}

impl std::str::FromStr for SystemKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<SystemKind> {
        SystemKind::ALL
            .into_iter()
            .find(|k| k.name() == s.trim())
            .ok_or_else(|| {
                Error::Config(format!(
                    "unknown system `{s}` (systems: tree, bm25, dense, hybrid, rerank, flat, gar)"
                ))
            })
    }
}

/// What the bench runs with.
#[derive(Debug, Clone)]
pub struct BenchSetup {
    /// Systems to run, in order.
    pub systems: Vec<SystemKind>,
    /// The judge (a fresh one is built per system, so no system reads
    /// another's cache).
    pub judge: JudgeOptions,
    /// The navigator's settings; `rerank` and `flat` use its batch size,
    /// calibration and shortlist too.
    pub navigator: ValidConfig,
    /// The tree, for `tree`.
    pub tree: Option<Arc<Tree>>,
    /// The embedder, for `dense` and `hybrid`.
    pub embedder: Option<Embedder>,
    /// BM25 candidates `rerank` judges. By default, 100.
    pub rerank_n: usize,
    /// `flat` is skipped above this many passages. By default, 20,000.
    pub flat_max_passages: usize,
    /// RRF's k. By default, 60.
    pub rrf_k: f64,
    /// Seed of the query sample.
    pub seed: u64,
    /// Query sample size, if any.
    pub limit: Option<usize>,
    /// Settings recorded in the report's `config` as given.
    pub config: serde_json::Value,
    /// Judgment budgets to sweep `tree`, `rerank` and `gar` over (empty: no sweep).
    pub judge_budgets: Vec<usize>,
    /// The exploration sweep's budgets (the embedding judge alone over
    /// the tree's vectors at each); empty: none.
    pub explore_budgets: Vec<usize>,
    /// Queries run at once (at least 1). Metric values do not depend on it.
    pub concurrency: usize,
    /// Where to write TREC runs and per-query metrics ([`crate::runs`]);
    /// none: nothing written.
    pub run_dir: Option<std::path::PathBuf>,
    /// Write the tree system's explored passages with their evidence and
    /// gold labels here (JSONL, [`crate::evidence`]); the navigator must
    /// keep them (`keep_evidence`).
    pub evidence: Option<std::path::PathBuf>,
    /// Fusion weights the sweep's `+fused` rows are run at (empty: the
    /// navigator's `fusion`, when above 0); each reuses its base row's
    /// judgments, so a grid costs no judge call.
    pub fusion_weights: Vec<f64>,
    /// Score each (query, passage) pair once for all the sweep's systems
    /// and budgets ([`treenav_judge::Judge::sharing_scores`]; the
    /// cross-encoder only). The figures agree with a run without it up to
    /// the int8 model's padding noise (a pair keeps the score of the first
    /// batch that ran it); each system's usage still counts its own
    /// judgments, but its seconds only the pairs no system before it scored.
    pub share_scores: bool,
    /// With `share_scores`: the score file the shared scores are read from
    /// at the start (when it exists) and written to after each system and
    /// each budget ([`crate::score_file`]).
    pub score_file: Option<std::path::PathBuf>,
    /// The analyzer of the `bm25` baseline's index (and of the stages built
    /// on it: hybrid, rerank).
    pub analyzer: treenav_text::analyzer::Analyzer,
}

impl BenchSetup {
    /// `systems` with `navigator` and the defaults of `treenav bench`
    /// otherwise: the lexical judge, no tree and no embedder, BM25's top 20
    /// for `rerank`, `flat` up to 20,000 passages, RRF's k = 60, seed 42,
    /// every query, one at a time, no sweep, no files written.
    pub fn new(systems: Vec<SystemKind>, navigator: ValidConfig) -> BenchSetup {
        BenchSetup {
            systems,
            judge: JudgeOptions::default(),
            navigator,
            tree: None,
            embedder: None,
            rerank_n: 20,
            flat_max_passages: 20_000,
            rrf_k: 60.0,
            seed: 42,
            limit: None,
            config: serde_json::json!({}),
            judge_budgets: Vec::new(),
            explore_budgets: Vec::new(),
            concurrency: 1,
            run_dir: None,
            evidence: None,
            fusion_weights: Vec::new(),
            share_scores: false,
            score_file: None,
            analyzer: Default::default(),
        }
    }

    /// Checks the settings, once, before anything runs; every number is
    /// range-checked here (the CLI passes its flags through unchanged).
    pub fn check(&self) -> Result<()> {
        use treenav_judge::checked;
        let config = |e: checked::OutOfRange| Error::Config(e.to_string());
        if self.systems.is_empty() {
            return Err(Error::Config(
                "no system to run (--systems is empty)".into(),
            ));
        }
        checked::count("concurrency (--concurrency)", self.concurrency, 1..=1024)
            .map_err(config)?;
        checked::count("rerank_n (--rerank-n)", self.rerank_n, 1..=100_000).map_err(config)?;
        if let Some(n) = self.limit {
            checked::at_least("limit (--limit)", n, 1).map_err(config)?;
        }
        checked::within("rrf_k", self.rrf_k, 0.0..=1e9).map_err(config)?;
        for w in &self.fusion_weights {
            checked::within("a fusion weight (--fusion-weights)", *w, 0.0..=20.0)
                .map_err(config)?;
        }
        if self.fusion_weights.len() > 16 {
            return Err(Error::Config(
                "at most 16 fusion weights (--fusion-weights)".into(),
            ));
        }
        let shortlist = match self.navigator.shortlist() {
            m if m >= 2 => m,
            _ => 0,
        };
        for &budget in &self.judge_budgets {
            checked::count(
                "a judge budget (--judge-budgets)",
                budget,
                shortlist.max(1) + 1..=100_000,
            )
            .map_err(config)?;
        }
        for &budget in &self.explore_budgets {
            checked::count("an explore budget (--explore-budgets)", budget, 1..=100_000)
                .map_err(config)?;
        }
        if self.explore_budgets.len() > 16 || self.judge_budgets.len() > 16 {
            return Err(Error::Config(
                "at most 16 budgets in a sweep (--judge-budgets, --explore-budgets)".into(),
            ));
        }
        if self.share_scores && !matches!(self.judge.backend, BackendOptions::CrossEncoder(_)) {
            return Err(Error::Config(format!(
                "--share-scores needs the cross-encoder judge (a pair's score must depend on that pair alone), not {}",
                self.judge.backend.kind()
            )));
        }
        if self.score_file.is_some() && !self.share_scores {
            return Err(Error::Config(
                "--score-file keeps shared scores: it needs --share-scores".into(),
            ));
        }
        if self.embedder.is_none() && self.systems.iter().any(|s| s.uses_embedder()) {
            return Err(Error::Config(
                "dense and hybrid need an embedder (--embedder bge-small, minilm built with --features minilm, or openai)".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> BenchSetup {
        let navigator = treenav_navigator::NavigatorConfig::default()
            .check()
            .expect("defaults");
        BenchSetup {
            seed: 1,
            ..BenchSetup::new(vec![SystemKind::Bm25], navigator)
        }
    }

    /// Every setting is checked in one place, naming the field.
    #[test]
    fn check_names_the_bad_setting() {
        assert!(setup().check().is_ok());
        type Spoil = fn(&mut BenchSetup);
        let bad: [(Spoil, &str); 9] = [
            (|s| s.systems.clear(), "no system"),
            (
                |s| s.concurrency = 0,
                "concurrency (--concurrency) must be in 1..=1024",
            ),
            (|s| s.rerank_n = 0, "rerank_n (--rerank-n) must be in"),
            (|s| s.limit = Some(0), "limit (--limit) must be at least 1"),
            (|s| s.rrf_k = f64::NAN, "rrf_k must be in"),
            (
                |s| s.judge_budgets = vec![1],
                "(--judge-budgets) must be in",
            ),
            (|s| s.systems = vec![SystemKind::Dense], "need an embedder"),
            (
                |s| s.share_scores = true,
                "--share-scores needs the cross-encoder judge",
            ),
            (
                |s| s.score_file = Some("s.scores".into()),
                "it needs --share-scores",
            ),
        ];
        for (spoil, says) in bad {
            let mut s = setup();
            spoil(&mut s);
            let e = s.check().expect_err(says);
            assert!(e.to_string().contains(says), "{e}");
        }
    }

    #[test]
    fn system_names_round_trip() {
        for kind in SystemKind::ALL {
            assert_eq!(kind.name().parse::<SystemKind>().ok(), Some(kind));
        }
        assert!("vector".parse::<SystemKind>().is_err());
    }
}

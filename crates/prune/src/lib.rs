//! The context pruner: between retrieval and the generator, drop the chunks
//! the answer does not need, keep the ones it does, and fit a token budget.
//!
//! A [`Pruner`] works in two steps, so an evaluation can sweep a knob
//! without asking the model again:
//!
//! 1. [`Pruner::score`] asks the judge once, all chunks in one shared context:
//!    * `grade`: each chunk on the 5-level scale (5 Essential, 4 Important,
//!      3 Helpful, 2 Tangential, 1 Unrelated); its score is the expected grade;
//!    * `keep` and `budget-select`: one yes/no question per chunk; its score
//!      is P(yes);
//!    * `top-n`: no model; the score falls with the position.
//! 2. [`Pruner::select`] applies the rule:
//!    * `grade`: keep chunks whose expected grade is at least `threshold` (default 4);
//!    * `keep`: keep the yes answers (P ≥ `threshold`, default 0.5);
//!    * `budget-select`: keep the first `keep_top_k`, let the model add at most
//!      `extra` more of its yes answers (best first);
//!    * `top-n`: keep the first `n`.
//!
//! Every strategy keeps the first `keep_top_k` chunks of the incoming ranking
//! (default 1). With a token budget, chunks are admitted best first (the
//! forced ones, then by score) until the next one would exceed it. With edge
//! placement, the kept chunks are ordered strongest at the start and the end
//! of the context; otherwise they keep the incoming order.
//!
//! ```
//! use treenav_judge::{Judge, JudgeOptions};
//! use treenav_prune::{Chunk, PruneOptions, Pruner, Strategy};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let options = PruneOptions { strategy: Strategy::Keep { threshold: 0.5 }, ..PruneOptions::default() };
//! let pruner = Pruner::new(Judge::new(&JudgeOptions::default())?, options)?;
//! let chunks = vec![
//!     Chunk::new("a", "Insulin lowers blood glucose."),
//!     Chunk::new("b", "The striker scored twice."),
//! ];
//! let pruned = pruner.prune("what lowers blood glucose", &chunks).await?;
//! assert_eq!(pruned.kept.len(), 1);
//! assert_eq!(pruned.kept[0].id, "a");
//! # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
//! ```
#![warn(missing_docs)]

pub mod config;
pub mod input;
mod select;
mod strategy;
mod tokens;

pub use config::{Fitted, PruneConfig};
pub use strategy::{Strategy, STRATEGY_NAMES};
pub use tokens::TokenCounter;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use treenav_judge::{Candidate, Decide, Scale, Session, SessionOptions, Usage};

/// Result of the prune crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of pruning.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input is not usable (no question, no chunk, an empty chunk, a
    /// chunk over the whole budget).
    #[error("bad prune input: {0}")]
    Input(String),
    /// A setting is not valid.
    #[error("invalid prune setting: {0}")]
    Config(String),
    /// The tokenizer file could not be loaded.
    #[error("cannot load tokenizer {}: {message}", path.display())]
    Tokenizer {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The judge failed (see `retryable()` on the source).
    #[error("judge failed: {0}")]
    Judge(#[from] treenav_judge::Error),
}

/// One retrieved chunk, in the incoming ranking's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Its id.
    pub id: String,
    /// Its text.
    pub text: String,
}

impl Chunk {
    /// A chunk from an id and a text.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Chunk {
        Chunk {
            id: id.into(),
            text: text.into(),
        }
    }
}

/// Options of a [`Pruner`].
#[derive(Debug, Clone)]
pub struct PruneOptions {
    /// The strategy. By default, grade with threshold 4.
    pub strategy: Strategy,
    /// The first k chunks of the incoming ranking always pass. By default, 1.
    pub keep_top_k: usize,
    /// Tokens the kept chunks may use at most. By default, none.
    pub token_budget: Option<usize>,
    /// How tokens are counted. By default, characters / 4.
    pub counter: TokenCounter,
    /// Order kept chunks strongest at the start and end. By default, off.
    pub edge_placement: bool,
}

impl Default for PruneOptions {
    fn default() -> Self {
        PruneOptions {
            strategy: Strategy::default(),
            keep_top_k: 1,
            token_budget: None,
            counter: TokenCounter::default(),
            edge_placement: false,
        }
    }
}

/// The model's view of the chunks, from [`Pruner::score`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scored {
    /// Expected grade (1–5) per chunk, for `grade`.
    pub grades: Option<Vec<f64>>,
    /// P(yes) per chunk, for `keep` and `budget-select` (the forced first
    /// `keep_top_k` are not asked for `budget-select`: NaN).
    pub probabilities: Option<Vec<f64>>,
    /// Tokens per chunk.
    pub tokens: Vec<usize>,
    /// What asking cost.
    pub usage: Usage,
    /// Wall time of scoring in milliseconds.
    pub latency_ms: f64,
}

/// One kept chunk.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KeptChunk {
    /// Its id.
    pub id: String,
    /// Its text.
    pub text: String,
    /// Its position in the incoming ranking (0 = first).
    pub rank: usize,
    /// Expected grade (1–5), for `grade`.
    pub grade: Option<f64>,
    /// P(yes), for `keep` and `budget-select`.
    pub probability: Option<f64>,
    /// Whether it passed as one of the first `keep_top_k`.
    pub forced: bool,
    /// Its tokens.
    pub tokens: usize,
}

/// Figures of one pruning.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Stats {
    /// Chunks given.
    pub chunks_in: usize,
    /// Chunks kept.
    pub chunks_out: usize,
    /// Tokens given.
    pub tokens_in: usize,
    /// Tokens kept.
    pub tokens_out: usize,
    /// Share of tokens dropped (0 = none, 1 = all).
    pub compression: f64,
    /// How tokens were counted: `tokenizer` or `chars/4`.
    pub token_counter: &'static str,
    /// Judge calls (cache hits excluded).
    pub judge_calls: u32,
    /// Judge input tokens.
    pub input_tokens: u64,
    /// Estimated cost in USD.
    pub cost_usd: f64,
    /// Wall time in milliseconds.
    pub latency_ms: f64,
}

/// What pruning kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Pruned {
    /// The strategy's name.
    pub strategy: &'static str,
    /// Kept chunks in context order.
    pub kept: Vec<KeptChunk>,
    /// Figures.
    pub stats: Stats,
}

/// A ready pruner. Cheap to share (the judge is).
#[derive(Debug, Clone)]
pub struct Pruner {
    judge: Arc<dyn Decide>,
    options: PruneOptions,
}

fn check_input(question: &str, chunks: &[Chunk]) -> Result<()> {
    if question.trim().is_empty() {
        return Err(Error::Input("the question is empty".into()));
    }
    if chunks.is_empty() {
        return Err(Error::Input("the chunk list is empty".into()));
    }
    if let Some(i) = chunks.iter().position(|c| c.text.trim().is_empty()) {
        return Err(Error::Input(format!(
            "chunk {i} (`{}`) has no text",
            chunks[i].id
        )));
    }
    Ok(())
}

impl Pruner {
    /// A pruner with a judge (a `Judge`, or any [`Decide`]); checks the options.
    pub fn new(judge: impl Into<Arc<dyn Decide>>, options: PruneOptions) -> Result<Pruner> {
        options.strategy.check()?;
        if options.token_budget == Some(0) {
            return Err(Error::Config("the token budget must be at least 1".into()));
        }
        Ok(Pruner {
            judge: judge.into(),
            options,
        })
    }

    /// P(relevant) of every chunk through one calibrated session: one call
    /// when the chunks fit the judge's limits, else calls that each carry
    /// the same references, on one scale.
    async fn judge_all(
        &self,
        question: &str,
        candidates: &[Candidate],
    ) -> Result<(Vec<f64>, Usage)> {
        let mut session = Session::new(
            self.judge.as_ref(),
            SessionOptions {
                batch_size: usize::MAX,
                calibration: true,
                shortlist: 0,
                max_cost_usd: None,
            },
        );
        let scored = session
            .judge_list(question, candidates)
            .await
            .map_err(|e| Error::Judge(e.source))?;
        Ok((scored.scores, scored.usage))
    }

    /// The options.
    pub fn options(&self) -> &PruneOptions {
        &self.options
    }

    /// Prunes `chunks` (best first, as retrieved) for `question`.
    pub async fn prune(&self, question: &str, chunks: &[Chunk]) -> Result<Pruned> {
        let scored = self.score(question, chunks).await?;
        self.select(chunks, &scored, &self.options.strategy)
    }

    /// Asks the model once for the configured strategy (see the crate docs).
    pub async fn score(&self, question: &str, chunks: &[Chunk]) -> Result<Scored> {
        self.score_for(question, chunks, &self.options.strategy)
            .await
    }

    /// Each chunk's tokens; a chunk over the whole token budget alone is
    /// an error naming it.
    fn count_tokens(&self, chunks: &[Chunk]) -> Result<Vec<usize>> {
        let tokens = chunks
            .iter()
            .map(|c| self.options.counter.count(&c.text))
            .collect::<Result<Vec<usize>>>()?;
        if let Some(budget) = self.options.token_budget {
            if let Some(i) = tokens.iter().position(|t| *t > budget) {
                return Err(Error::Input(format!(
                    "chunk {i} (`{}`) has {} tokens, over the whole budget of {budget}",
                    chunks[i].id, tokens[i]
                )));
            }
        }
        Ok(tokens)
    }

    /// Asks the model once, as `strategy` needs.
    pub async fn score_for(
        &self,
        question: &str,
        chunks: &[Chunk],
        strategy: &Strategy,
    ) -> Result<Scored> {
        check_input(question, chunks)?;
        let start = Instant::now();
        let tokens = self.count_tokens(chunks)?;
        let candidates = |from: usize| -> Vec<Candidate> {
            chunks[from..]
                .iter()
                .map(|c| Candidate::new(c.id.clone(), c.text.clone()))
                .collect()
        };
        let mut usage = Usage::default();
        let (grades, probabilities) = match strategy {
            Strategy::Grade { .. } => {
                let g = self
                    .judge
                    .grade(question, &candidates(0), &Scale::pruning())
                    .await?;
                usage.add(&g.usage);
                (
                    Some(g.grades.iter().map(|x| x.expected + 1.0).collect()),
                    None,
                )
            }
            Strategy::Keep { .. } => {
                let (p, u) = self.judge_all(question, &candidates(0)).await?;
                usage.add(&u);
                (None, Some(p))
            }
            Strategy::BudgetSelect { .. } => {
                let k = self.options.keep_top_k.min(chunks.len());
                let mut p = vec![f64::NAN; k];
                if k < chunks.len() {
                    let (judged, u) = self.judge_all(question, &candidates(k)).await?;
                    usage.add(&u);
                    p.extend(judged);
                }
                (None, Some(p))
            }
            Strategy::TopN { .. } => (None, None),
        };
        for v in [&grades, &probabilities].into_iter().flatten() {
            if v.len() != chunks.len() {
                return Err(Error::Judge(treenav_judge::Error::config(format!(
                    "{} answers for {} chunks",
                    v.len(),
                    chunks.len()
                ))));
            }
        }
        Ok(Scored {
            grades,
            probabilities,
            tokens,
            usage,
            latency_ms: start.elapsed().as_secs_f64() * 1000.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::edge_order;
    use treenav_judge::{Judge, JudgeOptions};

    fn chunks(n: usize) -> Vec<Chunk> {
        (0..n)
            .map(|i| Chunk::new(format!("c{i}"), format!("chunk number {i} text")))
            .collect()
    }

    fn pruner(options: PruneOptions) -> Pruner {
        let judge = Judge::new(&JudgeOptions::default()).expect("lexical judge");
        Pruner::new(judge, options).expect("valid options")
    }

    fn scored(
        grades: Option<Vec<f64>>,
        probabilities: Option<Vec<f64>>,
        tokens: Vec<usize>,
    ) -> Scored {
        Scored {
            grades,
            probabilities,
            tokens,
            usage: Usage::default(),
            latency_ms: 0.0,
        }
    }

    fn ids(p: &Pruned) -> Vec<&str> {
        p.kept.iter().map(|c| c.id.as_str()).collect()
    }

    #[test]
    fn grade_keeps_at_or_above_threshold_plus_top_k() -> Result<()> {
        let p = pruner(PruneOptions::default());
        let s = scored(Some(vec![1.2, 4.0, 3.9, 5.0]), None, vec![10; 4]);
        let out = p.select(&chunks(4), &s, &Strategy::Grade { threshold: 4.0 })?;
        // c0 is forced (keep_top_k 1) despite grade 1.2; context order kept.
        assert_eq!(ids(&out), ["c0", "c1", "c3"]);
        assert!(out.kept[0].forced && !out.kept[1].forced);
        assert_eq!(out.kept[1].grade, Some(4.0));
        assert_eq!(out.stats.chunks_out, 3);
        assert!((out.stats.compression - 0.25).abs() < 1e-9);
        Ok(())
    }

    #[test]
    fn keep_takes_the_yes_answers() -> Result<()> {
        let p = pruner(PruneOptions {
            keep_top_k: 0,
            ..PruneOptions::default()
        });
        let s = scored(None, Some(vec![0.2, 0.7, 0.5, 0.1]), vec![10; 4]);
        let out = p.select(&chunks(4), &s, &Strategy::Keep { threshold: 0.5 })?;
        assert_eq!(ids(&out), ["c1", "c2"]);
        Ok(())
    }

    #[test]
    fn empty_answer_only_without_keep_top_k() -> Result<()> {
        let s = scored(None, Some(vec![0.1, 0.2]), vec![10; 2]);
        let none = pruner(PruneOptions {
            keep_top_k: 0,
            ..PruneOptions::default()
        });
        assert!(none
            .select(&chunks(2), &s, &Strategy::Keep { threshold: 0.5 })?
            .kept
            .is_empty());
        let one = pruner(PruneOptions::default());
        assert_eq!(
            ids(&one.select(&chunks(2), &s, &Strategy::Keep { threshold: 0.5 })?),
            ["c0"]
        );
        Ok(())
    }

    #[test]
    fn budget_select_adds_at_most_extra_best_first() -> Result<()> {
        let p = pruner(PruneOptions {
            keep_top_k: 2,
            ..PruneOptions::default()
        });
        let s = scored(
            None,
            Some(vec![f64::NAN, f64::NAN, 0.6, 0.9, 0.3, 0.8]),
            vec![10; 6],
        );
        let out = p.select(
            &chunks(6),
            &s,
            &Strategy::BudgetSelect {
                extra: 2,
                threshold: 0.5,
            },
        )?;
        assert_eq!(ids(&out), ["c0", "c1", "c3", "c5"]);
        let out = p.select(
            &chunks(6),
            &s,
            &Strategy::BudgetSelect {
                extra: 0,
                threshold: 0.5,
            },
        )?;
        assert_eq!(ids(&out), ["c0", "c1"]);
        Ok(())
    }

    #[test]
    fn top_n_is_positional() -> Result<()> {
        let p = pruner(PruneOptions::default());
        let s = scored(None, None, vec![10; 5]);
        let out = p.select(&chunks(5), &s, &Strategy::TopN { n: 3 })?;
        assert_eq!(ids(&out), ["c0", "c1", "c2"]);
        Ok(())
    }

    #[test]
    fn token_budget_admits_best_first_and_stops_at_the_first_misfit() -> Result<()> {
        let p = pruner(PruneOptions {
            token_budget: Some(25),
            ..PruneOptions::default()
        });
        // Forced c0 (10), then c3 (grade 5, 10) = 20; c1 (8 tokens) would make 28.
        let s = scored(Some(vec![1.0, 4.5, 4.2, 5.0]), None, vec![10, 8, 2, 10]);
        let out = p.select(&chunks(4), &s, &Strategy::Grade { threshold: 4.0 })?;
        assert_eq!(ids(&out), ["c0", "c3"]);
        assert_eq!(out.stats.tokens_out, 20);
        assert_eq!(out.stats.tokens_in, 30);
        Ok(())
    }

    #[test]
    fn edge_placement_puts_the_strongest_at_both_ends() -> Result<()> {
        let p = pruner(PruneOptions {
            keep_top_k: 0,
            edge_placement: true,
            ..PruneOptions::default()
        });
        let s = scored(None, Some(vec![0.6, 0.9, 0.7, 0.8, 0.55]), vec![10; 5]);
        let out = p.select(&chunks(5), &s, &Strategy::Keep { threshold: 0.5 })?;
        // Strength order c1 .9, c3 .8, c2 .7, c0 .6, c4 .55 → c1 c2 c4 … c0 c3.
        assert_eq!(ids(&out), ["c1", "c2", "c4", "c0", "c3"]);
        assert_eq!(edge_order(&[], &[]), Vec::<usize>::new());
        Ok(())
    }

    #[tokio::test]
    async fn bad_input_is_refused_clearly() {
        let p = pruner(PruneOptions {
            token_budget: Some(3),
            ..PruneOptions::default()
        });
        let err = |r: Result<Pruned>| r.expect_err("bad input").to_string();
        assert!(err(p.prune(" ", &chunks(2)).await).contains("question is empty"));
        assert!(err(p.prune("q", &[]).await).contains("chunk list is empty"));
        let blank = vec![Chunk::new("x", "  ")];
        assert!(err(p.prune("q", &blank).await).contains("chunk 0 (`x`) has no text"));
        let e = err(p.prune("q", &chunks(1)).await);
        assert!(e.contains("over the whole budget of 3"), "{e}");
        assert!(Pruner::new(
            Judge::new(&JudgeOptions::default()).expect("judge"),
            PruneOptions {
                strategy: Strategy::Grade { threshold: 7.0 },
                ..PruneOptions::default()
            }
        )
        .is_err());
    }

    #[tokio::test]
    async fn every_strategy_runs_with_the_lexical_judge() -> Result<()> {
        let chunks = vec![
            Chunk::new(
                "a",
                "Tesla worked for Edison in New York before founding his own company.",
            ),
            Chunk::new(
                "b",
                "The Rhine flows through Switzerland, Germany and the Netherlands.",
            ),
            Chunk::new(
                "c",
                "After leaving Edison, Tesla worked digging ditches and then at Westinghouse.",
            ),
        ];
        let q = "Where did Tesla work after leaving Edison's company?";
        for strategy in [
            Strategy::Grade { threshold: 3.0 },
            Strategy::Keep { threshold: 0.5 },
            Strategy::BudgetSelect {
                extra: 1,
                threshold: 0.5,
            },
            Strategy::TopN { n: 2 },
        ] {
            let p = pruner(PruneOptions {
                strategy,
                ..PruneOptions::default()
            });
            let out = p.prune(q, &chunks).await?;
            let kept = ids(&out);
            assert_eq!(kept[0], "a", "{}: keep_top_k", strategy.name());
            if strategy.name() != "top-n" {
                assert!(
                    kept.contains(&"c") && !kept.contains(&"b"),
                    "{}: {kept:?}",
                    strategy.name()
                );
                assert!(out.stats.judge_calls >= 1);
            }
        }
        Ok(())
    }

    #[test]
    fn chars_over_4_rounds_up() -> Result<()> {
        assert_eq!(TokenCounter::CharsOver4.count("abcde")?, 2);
        assert_eq!(TokenCounter::CharsOver4.count("")?, 0);
        Ok(())
    }
}

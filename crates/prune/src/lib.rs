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

pub mod input;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;
use treenav_judge::{Candidate, Judge, Scale, Usage};

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

/// How chunks are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Strategy {
    /// Grade every chunk 1–5 in one shared context; keep expected grade ≥ threshold.
    Grade {
        /// Lowest expected grade kept (1–5). By default, 4.
        threshold: f64,
    },
    /// Ask per chunk whether it is needed; keep P(yes) ≥ threshold.
    Keep {
        /// Lowest P(yes) kept (0–1). By default, 0.5.
        threshold: f64,
    },
    /// Keep the first `keep_top_k`; the model adds at most `extra` of its yes answers.
    BudgetSelect {
        /// Chunks the model may add.
        extra: usize,
        /// Lowest P(yes) the model's additions need. By default, 0.5.
        threshold: f64,
    },
    /// Positional truncation: keep the first `n` (the baseline).
    TopN {
        /// Chunks kept.
        n: usize,
    },
}

impl Strategy {
    /// Its name: grade, keep, budget-select or top-n.
    pub fn name(&self) -> &'static str {
        match self {
            Strategy::Grade { .. } => "grade",
            Strategy::Keep { .. } => "keep",
            Strategy::BudgetSelect { .. } => "budget-select",
            Strategy::TopN { .. } => "top-n",
        }
    }

    fn check(&self) -> Result<()> {
        match *self {
            Strategy::Grade { threshold } if !(1.0..=5.0).contains(&threshold) => Err(
                Error::Config(format!("grade threshold must be in 1..=5, got {threshold}")),
            ),
            Strategy::Keep { threshold } | Strategy::BudgetSelect { threshold, .. }
                if !(0.0..=1.0).contains(&threshold) =>
            {
                Err(Error::Config(format!(
                    "probability threshold must be in 0..=1, got {threshold}"
                )))
            }
            _ => Ok(()),
        }
    }
}

impl Default for Strategy {
    fn default() -> Self {
        Strategy::Grade { threshold: 4.0 }
    }
}

/// How tokens are counted for the budget.
#[derive(Debug, Clone, Default)]
pub enum TokenCounter {
    /// Characters / 4, rounded up: a stated fallback when no tokenizer is given.
    #[default]
    CharsOver4,
    /// A real tokenizer (`tokenizer.json`).
    Tokenizer(Box<tokenizers::Tokenizer>),
}

impl TokenCounter {
    /// Loads a `tokenizer.json`.
    pub fn from_file(path: &Path) -> Result<TokenCounter> {
        tokenizers::Tokenizer::from_file(path)
            .map(|t| TokenCounter::Tokenizer(Box::new(t)))
            .map_err(|e| Error::Tokenizer {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
    }

    /// Tokens of a text (no special tokens).
    pub fn count(&self, text: &str) -> Result<usize> {
        match self {
            TokenCounter::CharsOver4 => {
                Ok(usize::try_from(treenav_judge::estimate_tokens(text)).unwrap_or(usize::MAX))
            }
            TokenCounter::Tokenizer(t) => t
                .encode(text, false)
                .map(|e| e.len())
                .map_err(|e| Error::Input(format!("cannot tokenize a chunk: {e}"))),
        }
    }

    /// `tokenizer` or `chars/4`.
    pub fn name(&self) -> &'static str {
        match self {
            TokenCounter::CharsOver4 => "chars/4",
            TokenCounter::Tokenizer(_) => "tokenizer",
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
    judge: Judge,
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
    /// A pruner with a judge; checks the options.
    pub fn new(judge: Judge, options: PruneOptions) -> Result<Pruner> {
        options.strategy.check()?;
        if options.token_budget == Some(0) {
            return Err(Error::Config("the token budget must be at least 1".into()));
        }
        Ok(Pruner { judge, options })
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

    /// Asks the model once, as `strategy` needs.
    pub async fn score_for(
        &self,
        question: &str,
        chunks: &[Chunk],
        strategy: &Strategy,
    ) -> Result<Scored> {
        check_input(question, chunks)?;
        let start = Instant::now();
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
                let j = self.judge.judge(question, &candidates(0)).await?;
                usage.add(&j.usage);
                (None, Some(j.probabilities))
            }
            Strategy::BudgetSelect { .. } => {
                let k = self.options.keep_top_k.min(chunks.len());
                let mut p = vec![f64::NAN; k];
                if k < chunks.len() {
                    let j = self.judge.judge(question, &candidates(k)).await?;
                    usage.add(&j.usage);
                    p.extend(j.probabilities);
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

    /// Applies `strategy`'s rule (and keep-top-k, the budget, the placement)
    /// to scores from [`Pruner::score_for`] with the same strategy kind.
    pub fn select(&self, chunks: &[Chunk], scored: &Scored, strategy: &Strategy) -> Result<Pruned> {
        strategy.check()?;
        if scored.tokens.len() != chunks.len() {
            return Err(Error::Input(format!(
                "{} scores for {} chunks",
                scored.tokens.len(),
                chunks.len()
            )));
        }
        let n = chunks.len();
        let k = self.options.keep_top_k.min(n);
        let grade = |i: usize| scored.grades.as_ref().and_then(|g| g.get(i).copied());
        let prob = |i: usize| {
            scored
                .probabilities
                .as_ref()
                .and_then(|p| p.get(i).copied())
                .filter(|p| !p.is_nan())
        };
        let need = |what: &str| {
            Error::Input(format!(
                "{} needs {what} from score_for with the same strategy",
                strategy.name()
            ))
        };
        // Strength of each chunk: what the budget admits first and what
        // edge placement puts at the edges.
        let strength: Vec<f64> = match strategy {
            Strategy::Grade { .. } => (0..n)
                .map(|i| grade(i).ok_or_else(|| need("grades")))
                .collect::<Result<_>>()?,
            Strategy::Keep { .. } => (0..n)
                .map(|i| prob(i).ok_or_else(|| need("probabilities")))
                .collect::<Result<_>>()?,
            Strategy::BudgetSelect { .. } => (0..n)
                .map(|i| {
                    if i < k {
                        Ok(f64::INFINITY)
                    } else {
                        prob(i).ok_or_else(|| need("probabilities"))
                    }
                })
                .collect::<Result<_>>()?,
            Strategy::TopN { .. } => (0..n).map(|i| (n - i) as f64).collect(),
        };
        let passes: Vec<bool> = match *strategy {
            Strategy::Grade { threshold } | Strategy::Keep { threshold } => {
                strength.iter().map(|s| *s >= threshold).collect()
            }
            Strategy::BudgetSelect { extra, threshold } => {
                let mut rest: Vec<usize> = (k..n).filter(|i| strength[*i] >= threshold).collect();
                rest.sort_by(|a, b| strength[*b].total_cmp(&strength[*a]).then(a.cmp(b)));
                rest.truncate(extra);
                (0..n).map(|i| rest.contains(&i)).collect()
            }
            Strategy::TopN { n: top } => (0..n).map(|i| i < top).collect(),
        };
        // Candidates best first: the forced ones in rank order, then the
        // passing ones by strength.
        let mut admitted: Vec<usize> = (0..k).collect();
        let mut passing: Vec<usize> = (k..n).filter(|i| passes[*i]).collect();
        passing.sort_by(|a, b| strength[*b].total_cmp(&strength[*a]).then(a.cmp(b)));
        admitted.extend(passing);
        if let Some(budget) = self.options.token_budget {
            let mut used = 0;
            let fits = admitted
                .iter()
                .take_while(|i| {
                    used += scored.tokens[**i];
                    used <= budget
                })
                .count();
            admitted.truncate(fits);
        }
        let order = if self.options.edge_placement {
            edge_order(&admitted, &strength)
        } else {
            let mut a = admitted.clone();
            a.sort_unstable();
            a
        };
        let kept: Vec<KeptChunk> = order
            .iter()
            .map(|&i| KeptChunk {
                id: chunks[i].id.clone(),
                text: chunks[i].text.clone(),
                rank: i,
                grade: grade(i),
                probability: prob(i),
                forced: i < k,
                tokens: scored.tokens[i],
            })
            .collect();
        let tokens_in: usize = scored.tokens.iter().sum();
        let tokens_out: usize = kept.iter().map(|c| c.tokens).sum();
        Ok(Pruned {
            strategy: strategy.name(),
            stats: Stats {
                chunks_in: n,
                chunks_out: kept.len(),
                tokens_in,
                tokens_out,
                compression: if tokens_in == 0 {
                    0.0
                } else {
                    1.0 - tokens_out as f64 / tokens_in as f64
                },
                token_counter: self.options.counter.name(),
                judge_calls: scored.usage.calls,
                input_tokens: scored.usage.input_tokens,
                cost_usd: scored.usage.cost_usd,
                latency_ms: scored.latency_ms,
            },
            kept,
        })
    }
}

/// Edge placement: the strongest first, the second strongest last, the
/// third second, the fourth second to last, … (forced chunks count as
/// strongest, in rank order).
fn edge_order(admitted: &[usize], strength: &[f64]) -> Vec<usize> {
    let mut by_strength = admitted.to_vec();
    by_strength.sort_by(|a, b| strength[*b].total_cmp(&strength[*a]).then(a.cmp(b)));
    let mut front = Vec::new();
    let mut back = Vec::new();
    for (j, i) in by_strength.into_iter().enumerate() {
        if j % 2 == 0 {
            front.push(i);
        } else {
            back.push(i);
        }
    }
    back.reverse();
    front.extend(back);
    front
}

#[cfg(test)]
mod tests {
    use super::*;
    use treenav_judge::JudgeOptions;

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

//! Decision models for treenav: one interface, several backends, one dispatcher.
//!
//! A decision model reads a **shared context** — a query and a numbered list
//! of candidates — and answers typed questions about it in one forward pass,
//! with probabilities, generating no text. Three operations cover retrieval:
//!
//! * [`Judge::judge`]: P(relevant) for every candidate (one yes/no question each);
//! * [`Judge::choose`]: one distribution over the candidates (which best answers);
//! * [`Judge::grade`]: for every candidate, a distribution over an ordered
//!   [`Scale`] (the pruner's five levels by default).
//!
//! Backends ([`BackendOptions`], picked by `kind`): `lexical` (BM25-style,
//! offline, deterministic — the default), `systemone` (TypeSafe Jev,
//! OpenRouter decisions, llama.cpp, Ollama, laya-serve…), `openai-decisions`
//! and `openai-logprobs` (yes/no emulation over any chat endpoint with
//! log-probabilities), and `cross-encoder` (ms-marco MiniLM in-process via
//! ONNX Runtime, behind the `cross-encoder` cargo feature; pointwise). The dispatcher ([`Judge`]) wraps every backend the same
//! way: it splits work to the backend's limits (a tournament for `choose`),
//! bounds concurrency, enforces an overall deadline, caches answers (moka)
//! and accounts usage and cost. HTTP retries with backoff and `Retry-After`
//! live in `treenav-http`, shared by all remote backends.
//!
//! ```
//! use treenav_judge::{Candidate, Judge, JudgeOptions};
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let judge = Judge::new(&JudgeOptions::default())?;
//! let candidates = [
//!     Candidate::new("a", "Insulin lowers blood glucose."),
//!     Candidate::new("b", "The striker scored a late goal."),
//! ];
//! let judged = judge.judge("what lowers blood glucose", &candidates).await?;
//! assert!(judged.probabilities[0] > judged.probabilities[1]);
//! let choice = judge.choose("what lowers blood glucose", &candidates).await?;
//! assert_eq!(choice.best, 0);
//! # Ok::<(), treenav_judge::Error>(()) }).unwrap();
//! ```
#![warn(missing_docs)]

mod backend;
pub mod checked;
mod checkup;
mod decide;
mod dispatch;
mod error;
pub mod fitted;
mod options;
pub mod probability;
mod render;
pub mod session;

pub use backend::{
    bm25_scores, cross_encoder_cancelled_calls, default_model_dir, default_ort_library,
    onnx_runtime_build, BackendKind, BackendOptions, CorpusStats, CrossEncoderOptions,
    EmbeddingOptions, LexicalOptions, Limits, LlmProbe, LogprobsApi, OpenaiDecisionsOptions,
    OpenaiLogprobsOptions, Profile, ScoredPair, Similarities, SystemoneOptions, VectorSource,
    PROFILES,
};
pub use checkup::{checkup, Checkup, CHECKUP_QUERY};
pub use decide::{Decide, Script, Scripted, WithFallback};
pub use dispatch::Judge;
pub use error::{Error, ErrorKind, Result};
pub use fitted::Platt;
pub use options::{defaults, DispatchOptions, JudgeOptions};
pub use probability::{confidence, expected_level, normalize};
pub use render::{estimate_tokens, render_state};
pub use session::{Ranking, Scored, Session, SessionOptions};

use serde::{Deserialize, Serialize};

/// One candidate in a shared context.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Candidate {
    /// Its id (shown to the model as `ID: …`).
    pub id: String,
    /// Its text (shown as `Info: …`).
    pub text: String,
}

impl Candidate {
    /// A candidate from an id and a text.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Candidate {
        Candidate {
            id: id.into(),
            text: text.into(),
        }
    }
}

/// An ordered scale for [`Judge::grade`], lowest level first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scale {
    /// Level descriptions, lowest first (2–10 levels).
    pub levels: Vec<String>,
}

impl Scale {
    /// The pruner's five levels: 1 Unrelated … 5 Essential.
    pub fn pruning() -> Scale {
        Scale {
            levels: [
                "Unrelated: has nothing to do with the question",
                "Tangential: on the topic but does not help answer",
                "Helpful: supporting context for the answer",
                "Important: completes the answer together with other chunks",
                "Essential: the answer needs it",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        }
    }

    /// Checks the level count (2–10) and that no level is empty.
    pub fn check(&self) -> Result<()> {
        if !(2..=10).contains(&self.levels.len()) {
            return Err(Error::config(format!(
                "a scale needs 2 to 10 levels, got {}",
                self.levels.len()
            )));
        }
        if self.levels.iter().any(|l| l.trim().is_empty()) {
            return Err(Error::config("a scale level is empty"));
        }
        Ok(())
    }
}

/// What answering cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Usage {
    /// Backend calls made (cache hits excluded).
    pub calls: u32,
    /// Calls answered from the cache.
    pub cache_hits: u32,
    /// Input tokens (as reported by the server, else estimated as characters / 4).
    pub input_tokens: u64,
    /// Output tokens reported.
    pub output_tokens: u64,
    /// Of the input tokens, those the server reports it served from its
    /// prefix cache (llama.cpp's `cache_n`, OpenAI's and vLLM's
    /// `cached_tokens`): prefill the shared context saved.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub cached_input_tokens: u64,
    /// Wall time of the operation in milliseconds.
    pub latency_ms: f64,
    /// Cost in USD (reported by the server, else tokens × configured price).
    pub cost_usd: f64,
    /// Answers the backend flagged as unreliable (e.g. low label mass in logprob emulation).
    pub low_confidence: u32,
    /// Calls answered by a fallback decider after the primary failed
    /// ([`WithFallback`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub fallbacks: u32,
    /// Stored vectors the embedding judge read to score candidates (one
    /// per candidate scored; the query is embedded once).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub vectors_scored: u64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Adds another operation's usage to this one (latencies add up).
    pub fn add(&mut self, other: &Usage) {
        self.calls = self.calls.saturating_add(other.calls);
        self.cache_hits = self.cache_hits.saturating_add(other.cache_hits);
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(other.cached_input_tokens);
        self.latency_ms += other.latency_ms;
        self.cost_usd += other.cost_usd;
        self.low_confidence = self.low_confidence.saturating_add(other.low_confidence);
        self.fallbacks = self.fallbacks.saturating_add(other.fallbacks);
        self.vectors_scored = self.vectors_scored.saturating_add(other.vectors_scored);
    }
}

/// Answers of [`Judge::judge`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgments {
    /// P(relevant) per candidate, in input order, each in [0, 1].
    pub probabilities: Vec<f64>,
    /// What it cost.
    pub usage: Usage,
}

/// Answer of [`Judge::choose`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    /// Probability per candidate, in input order; sums to 1.
    pub probabilities: Vec<f64>,
    /// Index of the chosen candidate.
    pub best: usize,
    /// 1 − H(p)/ln(n): 1 when certain, 0 when uniform.
    pub confidence: f64,
    /// What it cost.
    pub usage: Usage,
}

/// One candidate's grade.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grade {
    /// Probability per level, lowest first; sums to 1.
    pub probabilities: Vec<f64>,
    /// Expected level index (0 = lowest), may fall between levels.
    pub expected: f64,
}

/// Answers of [`Judge::grade`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grades {
    /// One grade per candidate, in input order.
    pub grades: Vec<Grade>,
    /// What it cost.
    pub usage: Usage,
}

//! Configuration of a judge: which backend, and how the dispatcher drives it.

use crate::backend::{BackendOptions, Limits};
use serde::{Deserialize, Serialize};

/// The one set of defaults that serde (config files) and the CLI's flags read.
pub mod defaults {
    /// The judge of a query over a tree (the library's
    /// `Navigator::builder`, `treenav query`, `serve`): the tree's own
    /// embedder, which falls back to `lexical` on a tree without usable
    /// vectors.
    pub const TREE_JUDGE: &str = "embedding";
    /// The judge of lists with no tree (`prune`, a bench's rerank
    /// pipelines): [`crate::JudgeOptions::default`].
    pub const LIST_JUDGE: &str = "lexical";
    /// BM25 k1 of the lexical judge.
    pub const K1: f64 = treenav_text::score::K1;
    /// BM25 b of the lexical judge.
    pub const B: f64 = treenav_text::score::B;
    /// Cross-encoder: threads of one inference.
    pub const CROSS_ENCODER_THREADS: usize = 2;
    /// Cross-encoder: pairs per inference batch.
    pub const CROSS_ENCODER_BATCH: usize = 16;
    /// Cross-encoder: tokens of a (query, candidate) pair at most.
    pub const CROSS_ENCODER_MAX_TOKENS: usize = 256;
    /// System One path.
    pub const SYSTEMONE_PATH: &str = "/v1/systemone";
    /// Backend calls in flight at most.
    pub const CONCURRENCY: usize = 8;
    /// Timeout of one HTTP call, seconds.
    pub const TIMEOUT_SECS: f64 = 30.0;
    /// Retries of a retryable failure.
    pub const RETRIES: u32 = 3;
    /// Answers kept in the cache.
    pub const CACHE_CAPACITY: u64 = 10_000;
    /// Largest reply body, MiB.
    pub const MAX_REPLY_MIB: u64 = 32;
}

fn concurrency() -> usize {
    defaults::CONCURRENCY
}
fn timeout_secs() -> f64 {
    defaults::TIMEOUT_SECS
}
fn retries() -> u32 {
    defaults::RETRIES
}
fn cache_capacity() -> u64 {
    defaults::CACHE_CAPACITY
}
fn max_reply_bytes() -> u64 {
    defaults::MAX_REPLY_MIB << 20
}

/// How the dispatcher drives the backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DispatchOptions {
    /// Backend calls in flight at most. By default, 8.
    #[serde(default = "concurrency")]
    pub concurrency: usize,
    /// Timeout of one HTTP call in seconds. By default, 30.
    #[serde(default = "timeout_secs")]
    pub timeout_secs: f64,
    /// Overall deadline of one operation in seconds (all calls and retries). By default, none.
    #[serde(default)]
    pub deadline_secs: Option<f64>,
    /// Retries of a retryable HTTP failure. By default, 3.
    #[serde(default = "retries")]
    pub max_retries: u32,
    /// Price per million input tokens in USD. By default, the backend's list price.
    #[serde(default)]
    pub price_per_million_input: Option<f64>,
    /// Price per million output tokens in USD. By default, 0.
    #[serde(default)]
    pub price_per_million_output: f64,
    /// Answers kept in the cache (0 turns it off). By default, 10,000.
    #[serde(default = "cache_capacity")]
    pub cache_capacity: u64,
    /// Override of the backend's limits. By default, none.
    #[serde(default)]
    pub limits: Option<Limits>,
    /// Largest reply body read from a server, bytes; a longer one fails the
    /// call (a server streaming without end cannot fill memory). By
    /// default, 32 MiB.
    #[serde(default = "max_reply_bytes")]
    pub max_reply_bytes: u64,
}

impl Default for DispatchOptions {
    fn default() -> Self {
        DispatchOptions {
            concurrency: concurrency(),
            timeout_secs: timeout_secs(),
            deadline_secs: None,
            max_retries: retries(),
            price_per_million_input: None,
            price_per_million_output: 0.0,
            cache_capacity: cache_capacity(),
            limits: None,
            max_reply_bytes: max_reply_bytes(),
        }
    }
}

/// A judge's whole configuration, e.g. in JSON:
/// `{"backend": {"kind": "systemone", "endpoint": "http://127.0.0.1:8080", "model": "jev-1.13.0"}, "dispatch": {"concurrency": 4}}`.
///
/// Its default is the judge of lists with no tree ([`defaults::LIST_JUDGE`]);
/// a query over a tree is judged by [`JudgeOptions::for_tree`] unless told
/// otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct JudgeOptions {
    /// The backend.
    #[serde(default)]
    pub backend: BackendOptions,
    /// The dispatcher.
    #[serde(default)]
    pub dispatch: DispatchOptions,
}

impl JudgeOptions {
    /// The default judge of a query over a tree ([`defaults::TREE_JUDGE`]:
    /// the embedding judge), with the dispatcher's defaults.
    pub fn for_tree() -> JudgeOptions {
        JudgeOptions {
            backend: BackendOptions::Embedding(crate::EmbeddingOptions {}),
            dispatch: DispatchOptions::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_judges_are_the_named_ones() {
        assert_eq!(JudgeOptions::default().backend.kind(), defaults::LIST_JUDGE);
        assert_eq!(
            JudgeOptions::for_tree().backend.kind(),
            defaults::TREE_JUDGE
        );
    }

    #[test]
    fn unknown_options_are_rejected() {
        let bad = r#"{"backend": {"kind": "systemone", "endpoint": "http://x", "model": "m", "modle": 1}}"#;
        let err = serde_json::from_str::<JudgeOptions>(bad)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("modle"), "{err}");
        let bad_kind = r#"{"backend": {"kind": "magic"}}"#;
        assert!(serde_json::from_str::<JudgeOptions>(bad_kind).is_err());
        let ok: JudgeOptions =
            serde_json::from_str(r#"{"backend": {"kind": "lexical"}}"#).expect("parse");
        assert_eq!(ok, JudgeOptions::default());
    }
}

//! Configuration of a judge: which backend, and how the dispatcher drives it.

use serde::{Deserialize, Serialize};

/// The one set of defaults that serde (config files) and the CLI's flags read.
pub mod defaults {
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

fn k1() -> f64 {
    defaults::K1
}
fn b() -> f64 {
    defaults::B
}
fn threads() -> usize {
    defaults::CROSS_ENCODER_THREADS
}
fn pair_batch() -> usize {
    defaults::CROSS_ENCODER_BATCH
}
fn max_tokens() -> usize {
    defaults::CROSS_ENCODER_MAX_TOKENS
}
fn systemone_path() -> String {
    defaults::SYSTEMONE_PATH.into()
}

/// The backend, picked by `kind` (`--judge` on the CLI).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum BackendOptions {
    /// BM25-style scores turned into probabilities relative to the other
    /// candidates of the same context. Offline, deterministic.
    Lexical {
        /// BM25 k1. By default, 1.2.
        #[serde(default = "k1")]
        k1: f64,
        /// BM25 b. By default, 0.75.
        #[serde(default = "b")]
        b: f64,
    },
    /// The tree's own embedder: the query embedded once, each candidate
    /// scored by the cosine of its stored vector (calibrated to a
    /// probability). In-process, pointwise, the cheap stage of the
    /// cascade; it needs a navigator over a tree built with an embedder.
    Embedding {},
    /// The System One format (`POST {endpoint}/v1/systemone`): TypeSafe Jev,
    /// llama.cpp server, Ollama, laya-serve; OpenRouter with
    /// `path = "/api/alpha/decisions"`.
    Systemone {
        /// Base URL, e.g. `https://api.typesafe.ai` or `http://127.0.0.1:8080`.
        endpoint: String,
        /// Model id; pin a version (`jev-1.13.0`).
        model: String,
        /// Environment variable holding the key (e.g. `TYPESAFE_API_KEY`); none sent when unset.
        #[serde(default)]
        api_key_env: Option<String>,
        /// Path appended to the endpoint. By default, `/v1/systemone`.
        #[serde(default = "systemone_path")]
        path: String,
    },
    /// OpenAI's decisions shape (`POST {endpoint}/v1/decisions`).
    OpenaiDecisions {
        /// Base URL, e.g. `https://api.openai.com`.
        endpoint: String,
        /// Model id.
        model: String,
        /// Environment variable holding the key (e.g. `OPENAI_API_KEY`); none sent when unset.
        #[serde(default)]
        api_key_env: Option<String>,
    },
    /// ms-marco-MiniLM-L-12-v2 cross-encoder in-process (ONNX Runtime);
    /// needs the `cross-encoder` cargo feature and `scripts/fetch-models.sh`.
    /// Pointwise: it scores (query, candidate) pairs, not the shared context.
    CrossEncoder {
        /// Folder with `model.onnx` and `tokenizer.json`. By default,
        /// `~/.cache/treenav/models/reranker_en`.
        #[serde(default)]
        model_dir: Option<std::path::PathBuf>,
        /// The ONNX Runtime library. By default, `$ORT_DYLIB_PATH`, else
        /// `~/.cache/treenav/onnxruntime/libonnxruntime.so.1.32.0`.
        #[serde(default)]
        ort_library: Option<std::path::PathBuf>,
        /// Threads of one inference. By default, 2.
        #[serde(default = "threads")]
        threads: usize,
        /// Pairs per inference batch. By default, 16.
        #[serde(default = "pair_batch")]
        batch_size: usize,
        /// Tokens of a (query, candidate) pair at most. By default, 256.
        #[serde(default = "max_tokens")]
        max_tokens: usize,
    },
    /// Yes/no and label emulation over any OpenAI-compatible chat endpoint
    /// with log-probabilities (vLLM, llama.cpp, Ollama, hosted APIs).
    OpenaiLogprobs {
        /// Base URL, e.g. `http://127.0.0.1:8000`.
        endpoint: String,
        /// Model id (use a non-thinking instruct model).
        model: String,
        /// Environment variable holding the key; none sent when unset.
        #[serde(default)]
        api_key_env: Option<String>,
        /// Which of the server's routes to ask. By default, `chat`.
        #[serde(default)]
        api: LogprobsApi,
    },
}

/// The route an `openai-logprobs` judge asks: the three ways servers expose
/// next-token log-probabilities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogprobsApi {
    /// `POST /v1/chat/completions` with `logprobs: true, top_logprobs: 20`:
    /// the model's chat template wraps the prompt (OpenAI, vLLM, llama.cpp,
    /// Ollama).
    #[default]
    Chat,
    /// `POST /v1/completions` with `logprobs: 20` on a plain-text prompt
    /// that ends in `Answer:` (no chat template; vLLM, llama.cpp).
    Completions,
    /// llama.cpp's native `POST /completion` with `n_probs: 20` and
    /// `cache_prompt: true` on the same plain-text prompt: the leanest
    /// request on llama.cpp.
    Llama,
}

impl LogprobsApi {
    /// The path below the endpoint.
    pub fn path(self) -> &'static str {
        match self {
            LogprobsApi::Chat => "/v1/chat/completions",
            LogprobsApi::Completions => "/v1/completions",
            LogprobsApi::Llama => "/completion",
        }
    }

    /// The name used in config and on the CLI.
    pub fn name(self) -> &'static str {
        match self {
            LogprobsApi::Chat => "chat",
            LogprobsApi::Completions => "completions",
            LogprobsApi::Llama => "llama",
        }
    }
}

impl Default for BackendOptions {
    fn default() -> Self {
        BackendOptions::Lexical { k1: k1(), b: b() }
    }
}

/// What one backend call may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Questions per call.
    pub max_questions: usize,
    /// Options of one `choose` question.
    pub max_options: usize,
    /// Estimated tokens (characters / 4) of the state per call.
    pub max_state_tokens: u64,
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

#[cfg(test)]
mod tests {
    use super::*;

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

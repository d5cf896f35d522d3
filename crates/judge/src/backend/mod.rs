//! The backends: each one file that turns an [`Op`] into a [`Raw`], owns
//! its construction and its checks, and knows nothing of the dispatcher
//! above it. A new backend is one file here plus one arm of [`Backend`].

mod cross_encoder;
mod embedding;
mod lexical;
mod logprobs;
mod op;
mod openai_decisions;
mod remote;
mod systemone;

pub use cross_encoder::{
    cancelled_calls as cross_encoder_cancelled_calls, default_model_dir, default_ort_library,
    onnx_runtime_build, ScoredPair,
};
pub use embedding::{calibration_for, Platt, Similarities, VectorSource};
pub(crate) use lexical::text_key;
pub use lexical::{bm25_scores, CorpusStats};
pub use logprobs::LlmProbe;
pub(crate) use logprobs::MIN_LABEL_MASS;
pub(crate) use op::{Op, OpKind, Raw, Values};

use crate::error::Result;
use crate::options::{BackendOptions, Limits};
use std::sync::Arc;
use treenav_http::ClientConfig;

/// What a backend kind is before any configuration, declared in its own
/// file: its name, what one call may hold, its list price, whether it runs
/// in-process (CPU-bound: run as many queries at once as there are cores)
/// and whether it scores each candidate alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// The name used in config (`kind`), on the CLI (`--judge`) and in errors.
    pub kind: &'static str,
    /// What one call may hold, before `dispatch.limits` overrides.
    pub limits: Limits,
    /// List price per million input tokens, USD.
    pub price_per_million: f64,
    /// Runs in this process (no server).
    pub in_process: bool,
    /// Scores each candidate alone.
    pub pointwise: bool,
}

/// The limits of an in-process backend: none worth the name.
pub(crate) const LIMITS_IN_PROCESS: Limits = Limits {
    max_questions: 10_000,
    max_options: 10_000,
    max_state_tokens: u64::MAX / 4,
};

/// Every backend's profile, in the order `--judge` lists them.
pub const PROFILES: [Profile; 6] = [
    lexical::PROFILE,
    embedding::PROFILE,
    systemone::PROFILE,
    openai_decisions::PROFILE,
    logprobs::PROFILE,
    cross_encoder::PROFILE,
];

impl BackendOptions {
    /// The profile of the backend these options configure: name, default
    /// limits, list price (declared in the backend's own file; the one match
    /// over kinds).
    pub fn profile(&self) -> Profile {
        match self {
            BackendOptions::Lexical { .. } => lexical::PROFILE,
            BackendOptions::Embedding {} => embedding::PROFILE,
            BackendOptions::Systemone { .. } => systemone::PROFILE,
            BackendOptions::OpenaiDecisions { .. } => openai_decisions::PROFILE,
            BackendOptions::OpenaiLogprobs { .. } => logprobs::PROFILE,
            BackendOptions::CrossEncoder { .. } => cross_encoder::PROFILE,
        }
    }

    /// The backend's name as used in config and errors.
    pub fn kind(&self) -> &'static str {
        self.profile().kind
    }

    /// The limits a backend of this kind is assumed to have, before overrides.
    pub fn default_limits(&self) -> Limits {
        self.profile().limits
    }

    /// The default price per million input tokens in USD (Jev $0.042, OpenAI decisions $0.10).
    pub fn default_price_per_million(&self) -> f64 {
        self.profile().price_per_million
    }
}

/// One configured backend.
#[derive(Debug)]
pub(crate) enum Backend {
    Lexical(lexical::Lexical),
    Embedding(embedding::Embedding),
    SystemOne(systemone::SystemOne),
    Decisions(openai_decisions::Decisions),
    Logprobs(logprobs::Logprobs),
    CrossEncoder(cross_encoder::CrossEncoder),
}

impl Backend {
    /// Builds the backend `options` name, with its model's description; HTTP
    /// backends get a client set up by `client`.
    pub(crate) fn new(
        options: &BackendOptions,
        client: &ClientConfig,
    ) -> Result<(Backend, String)> {
        let kind = options.kind();
        let remote = |endpoint: &str, model: &str, key: &Option<String>, path: &str| {
            remote::Remote::new(kind, endpoint, model, key, path, client)
        };
        Ok(match options {
            BackendOptions::Lexical { k1, b } => {
                let lexical = lexical::Lexical::checked(*k1, *b)?;
                (Backend::Lexical(lexical), format!("bm25(k1={k1}, b={b})"))
            }
            BackendOptions::Embedding {} => (
                Backend::Embedding(embedding::Embedding::default()),
                "the tree's embedder".to_string(),
            ),
            BackendOptions::Systemone {
                endpoint,
                model,
                api_key_env,
                path,
            } => {
                let remote = remote(endpoint, model, api_key_env, path)?;
                (
                    Backend::SystemOne(systemone::SystemOne(remote)),
                    model.clone(),
                )
            }
            BackendOptions::OpenaiDecisions {
                endpoint,
                model,
                api_key_env,
            } => {
                let remote = remote(endpoint, model, api_key_env, openai_decisions::PATH)?;
                (
                    Backend::Decisions(openai_decisions::Decisions(remote)),
                    model.clone(),
                )
            }
            BackendOptions::OpenaiLogprobs {
                endpoint,
                model,
                api_key_env,
                api,
            } => {
                // llama.cpp's native route has no `/v1`: a base given with
                // one (as the OpenAI routes want) still finds it.
                let base = match api {
                    crate::LogprobsApi::Llama => endpoint
                        .trim_end_matches('/')
                        .strip_suffix("/v1")
                        .unwrap_or(endpoint),
                    _ => endpoint,
                };
                let remote = remote(base, model, api_key_env, api.path())?;
                (
                    Backend::Logprobs(logprobs::Logprobs { remote, api: *api }),
                    model.clone(),
                )
            }
            BackendOptions::CrossEncoder {
                model_dir,
                ort_library,
                threads,
                batch_size,
                max_tokens,
            } => (
                Backend::CrossEncoder(cross_encoder::CrossEncoder::from_options(
                    model_dir.as_deref(),
                    ort_library.as_deref(),
                    *threads,
                    *batch_size,
                    *max_tokens,
                )?),
                cross_encoder::MODEL.to_string(),
            ),
        })
    }

    /// Answers one call. The lexical backend's scoring is CPU work on
    /// borrowed data: a large call (over [`INLINE_TEXT_BYTES`] of candidate
    /// text, milliseconds of work) runs with `block_in_place` on a
    /// multi-threaded runtime, so the worker's other tasks move elsewhere; a
    /// small one runs inline (well under a millisecond, where handing the
    /// worker off would cost more than it saves: measured +0.3 ms p50 on the
    /// SciFact bench). The cross-encoder runs on the blocking pool itself.
    pub(crate) async fn call(&self, op: &Op<'_>) -> Result<Raw> {
        match self {
            Backend::Lexical(b) => {
                let bytes: usize = op.candidates.iter().map(|c| c.text.len()).sum();
                if bytes > INLINE_TEXT_BYTES {
                    Ok(off_the_runtime(|| b.call(op)))
                } else {
                    Ok(b.call(op))
                }
            }
            Backend::Embedding(b) => b.call(op).await,
            Backend::SystemOne(b) => b.call(op).await,
            Backend::Decisions(b) => b.call(op).await,
            Backend::Logprobs(b) => b.call(op).await,
            Backend::CrossEncoder(b) => b.call(op).await,
        }
    }

    /// What an LLM endpoint returns ([`LlmProbe`]); `None` for backends
    /// that are not language models behind the logprobs protocol.
    pub(crate) async fn probe_llm(&self, state: &str, question: &str) -> Option<Result<LlmProbe>> {
        match self {
            Backend::Logprobs(b) => Some(b.probe(state, question).await),
            _ => None,
        }
    }

    /// Whether the backend reads corpus statistics (the lexical one).
    pub(crate) fn uses_corpus_stats(&self) -> bool {
        matches!(self, Backend::Lexical(_))
    }

    /// This backend with corpus statistics for its IDF, when it uses any
    /// (the lexical one); `None` for the others.
    pub(crate) fn with_corpus_stats(&self, stats: Arc<CorpusStats>) -> Option<Backend> {
        match self {
            Backend::Lexical(l) => Some(Backend::Lexical(l.with_stats(stats))),
            _ => None,
        }
    }

    /// Whether the backend scores from stored vectors (the embedding one).
    pub(crate) fn uses_vectors(&self) -> bool {
        matches!(self, Backend::Embedding(_))
    }

    /// This backend reading vectors from `source`, when it reads any (the
    /// embedding one); `None` for the others.
    pub(crate) fn with_vectors(&self, source: Arc<dyn VectorSource>) -> Option<Backend> {
        match self {
            Backend::Embedding(_) => Some(Backend::Embedding(embedding::Embedding::with_source(
                source,
            ))),
            _ => None,
        }
    }

    /// This backend sharing its scored pairs with the backends made from
    /// it the same way, when a pair's score depends on that pair alone and
    /// costs a model run (the cross-encoder); `None` for the others.
    pub(crate) fn sharing_scores(&self) -> Option<Backend> {
        match self {
            Backend::CrossEncoder(c) => Some(Backend::CrossEncoder(c.sharing_scores())),
            _ => None,
        }
    }

    /// The cross-encoder, for its shared scores; `None` for the others.
    pub(crate) fn cross_encoder(&self) -> Option<&cross_encoder::CrossEncoder> {
        match self {
            Backend::CrossEncoder(c) => Some(c),
            _ => None,
        }
    }
}

/// Candidate text a lexical call scores on the async worker itself.
const INLINE_TEXT_BYTES: usize = 256 << 10;

/// Runs CPU-bound `work` where it does not stall the async runtime's
/// worker: through `block_in_place` on a multi-threaded runtime (a
/// current-thread runtime has no other worker to hand tasks to).
fn off_the_runtime<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Large lexical calls go through `block_in_place` on a multi-threaded
    /// runtime and inline elsewhere; both answer the same.
    #[test]
    fn large_lexical_calls_answer_on_either_runtime() {
        let backend = Backend::Lexical(lexical::Lexical::checked(1.2, 0.75).expect("lexical"));
        let long = "insulin glucose ".repeat(INLINE_TEXT_BYTES / 16 + 1);
        let candidates = vec![
            crate::Candidate::new("a", long),
            crate::Candidate::new("b", "football"),
        ];
        let texts: Vec<u128> = candidates.iter().map(|c| text_key(&c.text)).collect();
        let op = Op {
            kind: OpKind::Judge,
            query: "insulin",
            candidates: &candidates,
            texts: &texts,
        };
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("runtime");
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let a = multi.block_on(backend.call(&op)).expect("multi");
        let b = current.block_on(backend.call(&op)).expect("current");
        assert_eq!(a, b);
        let Values::Probabilities(p) = a.values else {
            panic!("judge answers probabilities")
        };
        assert!(p[0] > p[1]);
    }
}

//! The backends: each one file that owns its options (a config's
//! `backend` object), its [`Profile`], its construction and its checks, and
//! turns an [`Op`] into a [`Raw`] through the [`Backend`] trait, knowing
//! nothing of the dispatcher above it. A new backend is one file here plus
//! one line in [`backends!`]: the line names the file, the variant of
//! [`BackendOptions`] (its `kind` in config, kebab-case) and its options
//! type; `PROFILES`, `--judge` and the construction follow from it.

mod op;
mod remote;

pub use cross_encoder::{
    cancelled_calls as cross_encoder_cancelled_calls, default_model_dir, default_ort_library,
    onnx_runtime_build, ScoredPair,
};
pub use embedding::{Similarities, VectorSource};
pub(crate) use lexical::text_key;
pub use lexical::{bm25_scores, CorpusStats};
pub(crate) use logprobs::MIN_LABEL_MASS;
pub use logprobs::{LlmProbe, LogprobsApi};
pub(crate) use op::{Op, OpKind, Raw, Values};

use crate::error::Result;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
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
    /// One line saying what it is, for `--judge`'s help.
    pub about: &'static str,
    /// What one call may hold, before `dispatch.limits` overrides.
    pub limits: Limits,
    /// List price per million input tokens, USD.
    pub price_per_million: f64,
    /// Runs in this process (no server).
    pub in_process: bool,
    /// Scores each candidate alone.
    pub pointwise: bool,
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

/// The limits of an in-process backend: none worth the name.
pub(crate) const LIMITS_IN_PROCESS: Limits = Limits {
    max_questions: 10_000,
    max_options: 10_000,
    max_state_tokens: u64::MAX / 4,
};

/// One configured backend. `profile` and `call` are all a backend must
/// say; the rest are capabilities a few have, answered `None`/`false` by
/// default.
pub(crate) trait Backend: Send + Sync + std::fmt::Debug {
    /// The backend's kind, limits and price.
    fn profile(&self) -> Profile;

    /// Answers one call.
    fn call<'a>(&'a self, op: &'a Op<'a>) -> BoxFuture<'a, Result<Raw>>;

    /// What an LLM endpoint returns to one question ([`LlmProbe`]); `None`
    /// for backends that are not language models behind a logprobs route.
    fn probe_llm<'a>(
        &'a self,
        _state: &'a str,
        _question: &'a str,
    ) -> Option<BoxFuture<'a, Result<LlmProbe>>> {
        None
    }

    /// Whether the backend reads corpus statistics.
    fn uses_corpus_stats(&self) -> bool {
        false
    }

    /// This backend with corpus statistics for its IDF, when it reads any.
    fn with_corpus_stats(&self, _stats: Arc<CorpusStats>) -> Option<Box<dyn Backend>> {
        None
    }

    /// Whether the backend scores from stored vectors.
    fn uses_vectors(&self) -> bool {
        false
    }

    /// This backend reading vectors from `source`, when it reads any.
    fn with_vectors(&self, _source: Arc<dyn VectorSource>) -> Option<Box<dyn Backend>> {
        None
    }

    /// This backend sharing its scored pairs with the backends made from
    /// it the same way, when a pair's score depends on that pair alone and
    /// costs a model run; `None` for the others.
    fn sharing_scores(&self) -> Option<Box<dyn Backend>> {
        None
    }

    /// What the shared scores depend on beside the pair (a tag) and the
    /// pairs scored; `None` unless the backend shares scores.
    fn scored_pairs(&self) -> Option<(String, Vec<ScoredPair>)> {
        None
    }

    /// Adds pairs scored before under `tag` to the shared scores; `None`
    /// when this kind of backend cannot reuse scores.
    fn add_scored_pairs(&self, _tag: &str, _pairs: &[ScoredPair]) -> Option<Result<()>> {
        None
    }
}

/// What a backend file's `build` returns: the backend and its model's
/// description.
pub(crate) type Built = Result<(Box<dyn Backend>, String)>;

/// The registry: one line per backend file, `Variant(OptionsType) in
/// module`. It declares the module, re-exports its options type, and makes
/// [`BackendOptions`] (serde: `kind` in kebab-case), [`PROFILES`] and the
/// one match that builds a backend from its options. Each module provides
/// `PROFILE` and `fn build(&Options, &ClientConfig) -> Built`.
macro_rules! backends {
    ($( $(#[$doc:meta])* $variant:ident($options:ident) in $module:ident, )*) => {
        $( mod $module; pub use $module::$options; )*

        /// The backend, picked by `kind` (`--judge` on the CLI), with its
        /// options.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "kebab-case")]
        pub enum BackendOptions {
            $( $(#[$doc])* $variant($options), )*
        }

        /// Every backend's profile, in the order `--judge` lists them.
        pub const PROFILES: &[Profile] = &[$( $module::PROFILE, )*];

        /// Which backend a judge runs: the identity code branches on (its
        /// name is the `kind` of [`BackendOptions`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum BackendKind {
            $( $(#[$doc])* $variant, )*
        }

        impl BackendKind {
            /// Its name in config, `--judge` and traces.
            pub fn name(self) -> &'static str {
                match self {
                    $( BackendKind::$variant => $module::PROFILE.kind, )*
                }
            }
        }

        impl BackendOptions {
            /// Which backend these options configure.
            pub fn backend_kind(&self) -> BackendKind {
                match self {
                    $( BackendOptions::$variant(_) => BackendKind::$variant, )*
                }
            }

            /// The profile of the backend these options configure: name,
            /// default limits, list price (declared in the backend's file).
            pub fn profile(&self) -> Profile {
                match self {
                    $( BackendOptions::$variant(_) => $module::PROFILE, )*
                }
            }

            /// The fields a backend's options take in config (`endpoint`,
            /// `model`, …), read from its options type; `None` for a kind
            /// no backend has.
            pub fn fields(kind: &str) -> Option<&'static [&'static str]> {
                $( if kind == $module::PROFILE.kind {
                    return Some(serde_aux::serde_introspection::serde_introspect::<$options>());
                } )*
                None
            }

            /// Builds the backend, with its model's description; HTTP
            /// backends get a client set up by `client`.
            pub(crate) fn build(&self, client: &ClientConfig) -> Built {
                match self {
                    $( BackendOptions::$variant(o) => $module::build(o, client), )*
                }
            }
        }
    };
}

backends! {
    /// The tree's own embedder: the query embedded once, each candidate
    /// scored by the cosine of its stored vector (calibrated to a
    /// probability). In-process, pointwise, the cheap stage of the
    /// cascade; it needs a navigator over a tree built with an embedder.
    Embedding(EmbeddingOptions) in embedding,
    /// BM25-style scores turned into probabilities relative to the other
    /// candidates of the same context. Offline, deterministic.
    Lexical(LexicalOptions) in lexical,
    /// The System One format (`POST {endpoint}/v1/systemone`).
    Systemone(SystemoneOptions) in systemone,
    /// OpenAI's decisions shape (`POST {endpoint}/v1/decisions`).
    OpenaiDecisions(OpenaiDecisionsOptions) in openai_decisions,
    /// Yes/no and label emulation over an OpenAI-compatible endpoint with
    /// log-probabilities.
    OpenaiLogprobs(OpenaiLogprobsOptions) in logprobs,
    /// A cross-encoder in-process (ONNX Runtime); pointwise.
    CrossEncoder(CrossEncoderOptions) in cross_encoder,
}

impl BackendOptions {
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

impl Default for BackendOptions {
    /// The lexical judge with BM25's usual k1 and b.
    fn default() -> Self {
        BackendOptions::Lexical(LexicalOptions::default())
    }
}

/// Candidate text a lexical call scores on the async worker itself.
pub(crate) const INLINE_TEXT_BYTES: usize = 256 << 10;

/// Runs CPU-bound `work` where it does not stall the async runtime's
/// worker: through `block_in_place` on a multi-threaded runtime (a
/// current-thread runtime has no other worker to hand tasks to).
pub(crate) fn off_the_runtime<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every registered backend's profile names the `kind` its options
    /// go by in config, and each kind is there once.
    #[test]
    fn each_profile_is_the_kind_its_options_are_read_under() {
        let mut kinds: Vec<&str> = PROFILES.iter().map(|p| p.kind).collect();
        for profile in PROFILES {
            let fields = BackendOptions::fields(profile.kind).expect("a registered kind");
            // The required fields of remote backends, so only the kind decides.
            let mut config = serde_json::json!({"kind": profile.kind});
            for field in ["endpoint", "model"] {
                if fields.contains(&field) {
                    config[field] = "http://127.0.0.1:9".into();
                }
            }
            let options: BackendOptions = serde_json::from_value(config).expect("options");
            assert_eq!(options.profile(), *profile);
            assert!(!profile.about.is_empty());
        }
        kinds.sort_unstable();
        kinds.dedup();
        assert_eq!(kinds.len(), PROFILES.len());
        assert_eq!(BackendOptions::fields("magic"), None);
        assert_eq!(BackendOptions::fields("lexical"), Some(&["k1", "b"][..]));
    }

    /// Large lexical calls go through `block_in_place` on a multi-threaded
    /// runtime and inline elsewhere; both answer the same.
    #[test]
    fn large_lexical_calls_answer_on_either_runtime() {
        let backend = lexical::Lexical::checked(1.2, 0.75).expect("lexical");
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

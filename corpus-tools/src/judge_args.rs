//! The judge options shared by the subcommands that ask a decision model.

use anyhow::{Context, Result};
use clap::ValueEnum;
use std::path::PathBuf;
use treenav::judge::{defaults, BackendOptions, DispatchOptions, JudgeOptions, LogprobsApi};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum JudgeKind {
    /// The tree's own embedder: cosine of stored passage vectors with the
    /// query, calibrated (the default; falls back to lexical on a tree
    /// without vectors or whose embedder is not here).
    Embedding,
    /// BM25-style, offline, deterministic.
    Lexical,
    /// System One format: TypeSafe Jev, OpenRouter, llama.cpp, Ollama, laya-serve.
    Systemone,
    /// OpenAI's /v1/decisions.
    OpenaiDecisions,
    /// Yes/no emulation over an OpenAI-compatible chat endpoint with logprobs.
    OpenaiLogprobs,
    /// ms-marco MiniLM cross-encoder in-process (build with --features cross-encoder).
    CrossEncoder,
}

/// `--llm-api`: [`LogprobsApi`] on the command line.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlmApi {
    /// POST /v1/chat/completions (logprobs, top_logprobs).
    Chat,
    /// POST /v1/completions (logprobs) on a plain-text prompt.
    Completions,
    /// llama.cpp's native POST /completion (n_probs) on a plain-text prompt.
    Llama,
}

impl From<LlmApi> for LogprobsApi {
    fn from(a: LlmApi) -> LogprobsApi {
        match a {
            LlmApi::Chat => LogprobsApi::Chat,
            LlmApi::Completions => LogprobsApi::Completions,
            LlmApi::Llama => LogprobsApi::Llama,
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Judge")]
pub struct JudgeArgs {
    /// The decision model backend. By default, `embedding` for a query
    /// over a tree (`query`, `serve`, a bench of navigators and flat
    /// systems); `lexical` where lists are judged with no tree (`prune`, the
    /// bench's `rerank`, `flat`, `--judge-budgets` and `--prune`).
    #[arg(long = "judge", value_enum)]
    pub kind: Option<JudgeKind>,
    /// A JSON file with the whole judge configuration
    /// ({"backend": {"kind": …}, "dispatch": {…}}); overrides --judge.
    #[arg(long)]
    pub judge_config: Option<PathBuf>,
    /// Server base URL, e.g. http://127.0.0.1:8080.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Model id (pin a version, e.g. jev-1.13.0).
    #[arg(long)]
    pub model: Option<String>,
    /// openai-logprobs: the route asked: chat (/v1/chat/completions, the
    /// model's chat template), completions (/v1/completions) or llama
    /// (llama.cpp's native /completion with n_probs).
    #[arg(long, value_enum, default_value_t = LlmApi::Chat)]
    pub llm_api: LlmApi,
    /// Environment variable holding the API key (none sent when not given).
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Cross-encoder model folder (default ~/.cache/treenav/models/reranker_en).
    #[arg(long)]
    pub model_dir: Option<PathBuf>,
    /// ONNX Runtime library (default $ORT_DYLIB_PATH, else ~/.cache/treenav/onnxruntime/…).
    #[arg(long)]
    pub ort_library: Option<PathBuf>,
    /// Cross-encoder: tokens of a (query, candidate) pair at most; longer
    /// pairs are truncated (cost grows with it).
    #[arg(long, default_value_t = defaults::CROSS_ENCODER_MAX_TOKENS)]
    pub max_tokens: usize,
    /// System One path (OpenRouter: /api/alpha/decisions).
    #[arg(long, default_value = defaults::SYSTEMONE_PATH)]
    pub systemone_path: String,
    /// Judge calls in flight at most (per process; shared by every query).
    #[arg(long, default_value_t = defaults::CONCURRENCY)]
    pub judge_concurrency: usize,
    /// Timeout of one call, seconds.
    #[arg(long, default_value_t = defaults::TIMEOUT_SECS)]
    pub timeout: f64,
    /// Price per million input tokens in USD (default: the backend's list price).
    #[arg(long)]
    pub price: Option<f64>,
    /// Largest reply a judge server may send, MiB; a longer one fails the call.
    #[arg(long, default_value_t = defaults::MAX_REPLY_MIB)]
    pub max_reply_mib: u64,
}

impl JudgeArgs {
    /// The backend named, or the default for a query over a tree.
    pub fn kind(&self) -> JudgeKind {
        self.kind.unwrap_or(JudgeKind::Embedding)
    }

    /// These flags for judging lists with no tree: `lexical` unless a
    /// judge was named; the embedding judge named is an error saying why.
    pub fn for_lists(&self, what: &str) -> Result<JudgeArgs> {
        match self.kind {
            Some(JudgeKind::Embedding) => anyhow::bail!(
                "{what} judges lists of passages with no tree, and the embedding judge reads a tree's stored vectors: give --judge cross-encoder, lexical or an LLM"
            ),
            Some(_) => Ok(self.clone()),
            None => Ok(JudgeArgs {
                kind: Some(JudgeKind::Lexical),
                ..self.clone()
            }),
        }
    }

    /// The judge these flags describe; an out-of-range setting is named by
    /// its flag (`--timeout`), not by the library's field.
    pub fn judge(&self) -> Result<treenav::judge::Judge> {
        treenav::judge::Judge::new(&self.options()?).map_err(|e| {
            let mut message = e.to_string();
            for (field, flag) in [
                ("dispatch.concurrency", "--judge-concurrency"),
                ("dispatch.timeout_secs", "--timeout"),
                ("dispatch.price_per_million_input", "--price"),
            ] {
                message = message.replace(field, flag);
            }
            anyhow::anyhow!(message)
        })
    }

    pub fn options(&self) -> Result<JudgeOptions> {
        if let Some(path) = &self.judge_config {
            let bytes = crate::read_input_file(path, "--judge-config", 1 << 20)?;
            let text = String::from_utf8(bytes)
                .with_context(|| format!("{}: not UTF-8", path.display()))?;
            return serde_json::from_str(&text)
                .with_context(|| format!("{}: not a valid judge configuration", path.display()));
        }
        let need = |v: &Option<String>, flag: &str| -> Result<String> {
            v.clone().with_context(|| {
                format!(
                    "--judge {} needs {flag}",
                    self.kind()
                        .to_possible_value()
                        .map(|p| p.get_name().to_string())
                        .unwrap_or_default()
                )
            })
        };
        let backend = match self.kind() {
            JudgeKind::Lexical => BackendOptions::default(),
            JudgeKind::Embedding => BackendOptions::Embedding {},
            JudgeKind::Systemone => BackendOptions::Systemone {
                endpoint: need(&self.endpoint, "--endpoint URL")?,
                model: need(&self.model, "--model NAME")?,
                api_key_env: self.api_key_env.clone(),
                path: self.systemone_path.clone(),
            },
            JudgeKind::OpenaiDecisions => BackendOptions::OpenaiDecisions {
                endpoint: need(&self.endpoint, "--endpoint URL")?,
                model: need(&self.model, "--model NAME")?,
                api_key_env: self.api_key_env.clone(),
            },
            JudgeKind::OpenaiLogprobs => BackendOptions::OpenaiLogprobs {
                endpoint: need(&self.endpoint, "--endpoint URL")?,
                model: need(&self.model, "--model NAME")?,
                api_key_env: self.api_key_env.clone(),
                api: self.llm_api.into(),
            },
            JudgeKind::CrossEncoder => BackendOptions::CrossEncoder {
                model_dir: self.model_dir.clone(),
                ort_library: self.ort_library.clone(),
                threads: defaults::CROSS_ENCODER_THREADS,
                batch_size: defaults::CROSS_ENCODER_BATCH,
                max_tokens: self.max_tokens,
            },
        };
        Ok(JudgeOptions {
            backend,
            dispatch: DispatchOptions {
                concurrency: self.judge_concurrency,
                timeout_secs: self.timeout,
                price_per_million_input: self.price,
                max_reply_bytes: self.max_reply_mib.saturating_mul(1 << 20),
                ..DispatchOptions::default()
            },
        })
    }
}

//! The judge options shared by the subcommands that ask a decision model.

use anyhow::{Context, Result};
use clap::builder::{PossibleValue, PossibleValuesParser};
use std::path::PathBuf;
use treenav::judge::{
    defaults, BackendOptions, DispatchOptions, JudgeOptions, LogprobsApi, PROFILES,
};

/// `--judge`'s values: every registered backend, with its profile's line.
fn judge_kinds() -> PossibleValuesParser {
    PossibleValuesParser::new(
        PROFILES
            .iter()
            .map(|p| PossibleValue::new(p.kind).help(p.about)),
    )
}

/// `--llm-api`'s values: the logprobs routes.
fn llm_apis() -> PossibleValuesParser {
    PossibleValuesParser::new(LogprobsApi::ALL.map(LogprobsApi::name))
}

/// The judge for a query over a tree when none is named: the library's
/// (`Navigator::builder`).
const TREE_JUDGE: &str = defaults::TREE_JUDGE;
/// The judge for lists with no tree when none is named.
const LIST_JUDGE: &str = defaults::LIST_JUDGE;

#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Judge")]
pub struct JudgeArgs {
    /// The decision model backend. By default, `embedding` for a query
    /// over a tree (`query`, `serve`, a bench of navigators and flat
    /// systems); `lexical` where lists are judged with no tree (`prune`, the
    /// bench's `rerank`, `flat`, `--judge-budgets` and `--prune`).
    #[arg(long = "judge", value_parser = judge_kinds())]
    pub kind: Option<String>,
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
    #[arg(long, value_parser = llm_apis(), default_value = "chat")]
    pub llm_api: String,
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
    pub fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or(TREE_JUDGE)
    }

    /// These flags for judging lists with no tree: `lexical` unless a
    /// judge was named; the embedding judge named is an error saying why.
    pub fn for_lists(&self, what: &str) -> Result<JudgeArgs> {
        match self.kind.as_deref() {
            Some(TREE_JUDGE) => anyhow::bail!(
                "{what} judges lists of passages with no tree, and the embedding judge reads a tree's stored vectors: give --judge cross-encoder, lexical or an LLM"
            ),
            Some(_) => Ok(self.clone()),
            None => Ok(JudgeArgs {
                kind: Some(LIST_JUDGE.to_string()),
                ..self.clone()
            }),
        }
    }

    /// These flags for the pruner, which judges lists with no tree:
    /// `lexical` unless a judge was named; the embedding judge embeds the
    /// chunks (`treenav::navigator::list_judge`).
    pub fn for_pruning(&self) -> JudgeArgs {
        JudgeArgs {
            kind: Some(self.kind.clone().unwrap_or_else(|| LIST_JUDGE.to_string())),
            ..self.clone()
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
        let backend = self.backend()?;
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

impl JudgeArgs {
    /// The backend's options from the flags: each flag the backend's
    /// options take (its fields, read from the registry) goes in; a
    /// required one missing is named by its flag.
    fn backend(&self) -> Result<BackendOptions> {
        let kind = self.kind();
        let fields = BackendOptions::fields(kind)
            .with_context(|| format!("--judge {kind}: no such backend"))?;
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string().into());
        let flags: [(&str, &str, Option<serde_json::Value>); 8] = [
            (
                "endpoint",
                "--endpoint URL",
                self.endpoint.clone().map(Into::into),
            ),
            ("model", "--model NAME", self.model.clone().map(Into::into)),
            (
                "api_key_env",
                "--api-key-env",
                self.api_key_env.clone().map(Into::into),
            ),
            (
                "path",
                "--systemone-path",
                Some(self.systemone_path.clone().into()),
            ),
            ("api", "--llm-api", Some(self.llm_api.clone().into())),
            ("model_dir", "--model-dir", path(&self.model_dir)),
            ("ort_library", "--ort-library", path(&self.ort_library)),
            ("max_tokens", "--max-tokens", Some(self.max_tokens.into())),
        ];
        let mut config = serde_json::Map::new();
        config.insert("kind".into(), kind.into());
        for (field, _, value) in &flags {
            if let (true, Some(v)) = (fields.contains(field), value) {
                config.insert(field.to_string(), v.clone());
            }
        }
        serde_json::from_value(config.into()).map_err(|e| {
            let message = e.to_string();
            let missing = flags
                .iter()
                .find(|(field, ..)| message.contains(&format!("missing field `{field}`")));
            match missing {
                Some((_, flag, _)) => anyhow::anyhow!("--judge {kind} needs {flag}"),
                None => anyhow::anyhow!("--judge {kind}: {message}"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        judge: JudgeArgs,
    }

    fn backend(args: &[&str]) -> Result<BackendOptions> {
        let cli = Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied()))?;
        cli.judge.backend()
    }

    #[test]
    fn every_registered_backend_is_a_judge_value_and_the_flags_reach_its_options() {
        for profile in PROFILES {
            let parsed = Cli::try_parse_from(["t", "--judge", profile.kind]);
            assert!(parsed.is_ok(), "--judge {}", profile.kind);
        }
        assert!(Cli::try_parse_from(["t", "--judge", "magic"]).is_err());
        let remote = backend(&[
            "--judge",
            "openai-logprobs",
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--llm-api",
            "llama",
            "--max-tokens",
            "64",
        ])
        .expect("options");
        let BackendOptions::OpenaiLogprobs(o) = remote else {
            panic!("{remote:?}")
        };
        assert_eq!((o.model.as_str(), o.api), ("m", LogprobsApi::Llama));
        let missing = backend(&["--judge", "systemone", "--model", "m"]).expect_err("refused");
        assert_eq!(
            missing.to_string(),
            "--judge systemone needs --endpoint URL"
        );
        // Flags another backend takes are left out, not refused: one set
        // of flags serves the bench's several judges.
        let lexical = backend(&["--judge", "lexical", "--endpoint", "http://x"]).expect("ok");
        assert_eq!(lexical, BackendOptions::default());
        assert_eq!(
            backend(&[]).expect("default"),
            BackendOptions::Embedding(treenav::judge::EmbeddingOptions {})
        );
    }
}

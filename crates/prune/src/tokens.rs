//! How tokens are counted for the budget.

use crate::{Error, Result};
use std::path::Path;

/// How tokens are counted for the budget.
#[derive(Debug, Clone, Default)]
pub enum TokenCounter {
    /// Characters / 4, rounded up: a stated fallback when no tokenizer is given.
    #[default]
    CharsOver4,
    /// A real tokenizer (`tokenizer.json`), shared: clones are cheap.
    Tokenizer(std::sync::Arc<tokenizers::Tokenizer>),
}

impl TokenCounter {
    /// Loads a `tokenizer.json`.
    pub fn from_file(path: &Path) -> Result<TokenCounter> {
        let bytes = treenav_files::read(path, &treenav_files::Kind::new("--tokenizer", 256 << 20))
            .map_err(|e| Error::Tokenizer {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        tokenizers::Tokenizer::from_bytes(bytes)
            .map(|t| TokenCounter::Tokenizer(std::sync::Arc::new(t)))
            .map_err(|e| Error::Tokenizer {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
    }

    /// The tokenizer at `path` (the embedder's, `tokenizer.json`) when it
    /// loads, else characters / 4 and why, for the caller to say.
    pub fn preferred(path: &Path) -> (TokenCounter, Option<String>) {
        if !path.is_file() {
            let why = format!(
                "{} is absent (bash scripts/fetch-models.sh fetches it)",
                path.display()
            );
            return (TokenCounter::CharsOver4, Some(why));
        }
        match TokenCounter::from_file(path) {
            Ok(counter) => (counter, None),
            Err(e) => (TokenCounter::CharsOver4, Some(e.to_string())),
        }
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

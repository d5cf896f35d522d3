//! ONNX Runtime for treenav's in-process models (the cross-encoder judge,
//! the sentence embedders): the runtime is loaded once per process from a
//! library file (`scripts/fetch-models.sh` takes it from the `onnxruntime`
//! PyPI wheel), a model is an [`Encoder`] (an ONNX BERT-style graph and its
//! `tokenizer.json`), and inputs run in batches sorted by length, each
//! padded to its longest row (a multiple of 8), so a batch of short texts
//! never pays for a long one.

//!
//! Without the `runtime` feature the crate holds only where the files are
//! looked for ([`cache_dir`], [`default_library`]).

use std::path::PathBuf;

mod known;
pub use known::KnownEmbedder;

#[cfg(feature = "runtime")]
mod runtime;
#[cfg(feature = "runtime")]
pub use runtime::{runtime_build, BatchOutput, Encoder};

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file is missing or unreadable, or the runtime cannot start: the
    /// message says what to fetch or set.
    #[error("{0}")]
    Setup(String),
    /// Tokenising or running a batch failed.
    #[error("{0}")]
    Inference(String),
}

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// treenav's cache: `$TREENAV_CACHE_DIR`, else `~/.cache/treenav`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TREENAV_CACHE_DIR") {
        return PathBuf::from(d);
    }
    std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache").join("treenav"))
        .unwrap_or_else(|| PathBuf::from(".treenav-cache"))
}

/// The default ONNX Runtime library: `$ORT_DYLIB_PATH`, else
/// `$TREENAV_CACHE_DIR/onnxruntime/libonnxruntime.so.1.32.0`.
pub fn default_library() -> PathBuf {
    std::env::var_os("ORT_DYLIB_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            cache_dir()
                .join("onnxruntime")
                .join("libonnxruntime.so.1.32.0")
        })
}

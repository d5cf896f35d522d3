//! The embedders of treenav: text to unit vectors. The build embeds
//! documents (to cluster them) and passages; a query is embedded once at
//! query time for the embedding judge (the tree crate's `QueryEmbedder`
//! pairs a tree with the embedder it was built with).
//!
//! TF-IDF with a seeded projection (pure Rust), bge-small on the ONNX
//! runtime (`onnx`), all-MiniLM-L6-v2 (`minilm`), any OpenAI-compatible
//! embeddings server, or precomputed vectors from a `.npy` file. This crate
//! knows nothing of trees.
#![warn(missing_docs)]

mod minilm;
mod npy;
mod onnx;
mod openai;
pub mod tfidf;

pub use minilm::{default_model_dir as default_minilm_dir, MiniLm};
pub use onnx::{bge_small_available, default_bge_dir, OnnxEmbedder, Pooling};
pub use openai::embeddings_url;
pub use treenav_onnx::KnownEmbedder;

use ndarray::Array2;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use treenav_http::{ApiKey, ClientConfig, Endpoint, HttpClient};

/// Result of the embedders.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of embedding.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An option is not valid; the message says which and why.
    #[error("invalid parameter: {0}")]
    Param(String),
    /// A remote embedder failed (see `retryable()` on the cause).
    #[error(transparent)]
    Http(#[from] treenav_http::HttpError),
    /// A file could not be read or written.
    #[error("cannot access {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A model file refused before reading (not a regular file, over its cap).
    #[error(transparent)]
    File(#[from] treenav_files::Error),
    /// A background task failed.
    #[error("background task failed: {0}")]
    Task(String),
}

/// Progress of a long job, reported to the caller (the CLI draws bars).
pub trait Progress: Send + Sync {
    /// A new stage starts with `total` units of work.
    fn stage(&self, _name: &str, _total: u64) {}
    /// `n` units of the current stage are done.
    fn inc(&self, _n: u64) {}
}

/// Progress that reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}

/// Where treenav caches models, embeddings and summaries:
/// `$TREENAV_CACHE_DIR`, else `$XDG_CACHE_HOME/treenav`, else
/// `~/.cache/treenav`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TREENAV_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("treenav");
    }
    std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache").join("treenav"))
        .unwrap_or_else(|| PathBuf::from(".treenav-cache"))
}

fn default_dims() -> usize {
    128
}
fn default_batch() -> usize {
    32
}
fn default_timeout() -> u64 {
    120
}
fn default_concurrency() -> usize {
    4
}
fn default_minilm_tokens() -> usize {
    128
}
fn default_onnx_tokens() -> usize {
    256
}
fn default_threads() -> usize {
    2
}

/// Which embedder to use, as it appears in a config file or on the CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum EmbedderOptions {
    /// TF-IDF with a seeded random projection: pure Rust, no model, deterministic.
    Tfidf {
        /// Output dimensions. By default, 128.
        #[serde(default = "default_dims")]
        dims: usize,
    },
    /// Any OpenAI-compatible `POST /v1/embeddings` server.
    Openai {
        /// Base URL (`http://127.0.0.1:8080`) or the full embeddings URL.
        endpoint: String,
        /// The model name sent with each request.
        model: String,
        /// Environment variable holding the API key; none is sent when unset.
        /// By default, none.
        #[serde(default)]
        api_key_env: Option<String>,
        /// Texts per request. By default, 32.
        #[serde(default = "default_batch")]
        batch_size: usize,
        /// Timeout of one request in seconds. By default, 120.
        #[serde(default = "default_timeout")]
        timeout_secs: u64,
        /// Requests in flight at once (1–256). By default, 4.
        #[serde(default = "default_concurrency")]
        concurrency: usize,
        /// Folder where finished batches are kept by content hash, so a
        /// build that stopped resumes without re-embedding. By default,
        /// none (the CLI uses `~/.cache/treenav/embeddings`).
        #[serde(default)]
        cache_dir: Option<std::path::PathBuf>,
    },
    /// Precomputed vectors: a `.npy` file (float32 or float16), row i =
    /// document i in corpus order, or one row per document node when a
    /// long document is split into parts; optionally a second file with
    /// one row per passage, and the model that made them.
    Vectors {
        /// The `.npy` file of documents (or document parts).
        path: std::path::PathBuf,
        /// A `.npy` file with one row per passage, in corpus order
        /// (documents in order, each document's passages in order). By
        /// default, none: the tree then holds no passage vectors.
        #[serde(default)]
        passages: Option<std::path::PathBuf>,
        /// The in-process model the vectors were made with (bge-small or
        /// MiniLM, the same files and pooling): the tree records it, so its
        /// queries and later documents are embedded with it. By default,
        /// none: an unknown model, no query embedding.
        #[serde(default)]
        made_by: Option<Box<EmbedderOptions>>,
    },
    /// BAAI bge-small-en in-process with ONNX Runtime (cargo feature
    /// `onnx`): 384 dimensions, CLS pooling.
    BgeSmall {
        /// Folder with `model.onnx` and `tokenizer.json`. By default,
        /// `~/.cache/treenav/models/bge-small-en`.
        #[serde(default)]
        model_dir: Option<std::path::PathBuf>,
        /// The ONNX Runtime library. By default, `$ORT_DYLIB_PATH`, else
        /// `~/.cache/treenav/onnxruntime/libonnxruntime.so.1.32.0`.
        #[serde(default)]
        ort_library: Option<std::path::PathBuf>,
        /// Texts per forward pass (sorted by length). By default, 32.
        #[serde(default = "default_batch")]
        batch_size: usize,
        /// Tokens per text at most. By default, 256.
        #[serde(default = "default_onnx_tokens")]
        max_tokens: usize,
        /// Threads of one inference. By default, 2.
        #[serde(default = "default_threads")]
        threads: usize,
    },
    /// all-MiniLM-L6-v2 in-process with candle (cargo feature `minilm`).
    Minilm {
        /// Folder with `model.onnx` (int8) and `tokenizer.json`.
        /// By default, `~/.cache/treenav/models/all-MiniLM-L6-v2`.
        #[serde(default)]
        model_dir: Option<std::path::PathBuf>,
        /// Texts per forward pass. By default, 32.
        #[serde(default = "default_batch")]
        batch_size: usize,
        /// Tokens per text at most. By default, 128.
        #[serde(default = "default_minilm_tokens")]
        max_tokens: usize,
    },
}

impl Default for EmbedderOptions {
    /// TF-IDF, which needs no model files. `treenav build` prefers
    /// bge-small when it can run: [`EmbedderOptions::preferred`].
    fn default() -> Self {
        EmbedderOptions::Tfidf {
            dims: default_dims(),
        }
    }
}

impl EmbedderOptions {
    /// bge-small-en with its defaults (model and runtime from the cache).
    pub fn bge_small() -> EmbedderOptions {
        EmbedderOptions::BgeSmall {
            model_dir: None,
            ort_library: None,
            batch_size: default_batch(),
            max_tokens: default_onnx_tokens(),
            threads: default_threads(),
        }
    }

    /// The embedder `treenav build` uses when none is named: bge-small when
    /// it can run here ([`bge_small_available`]), else TF-IDF with why not,
    /// for the caller to say (never a silent switch).
    pub fn preferred() -> (EmbedderOptions, Option<String>) {
        match bge_small_available() {
            Ok(()) => (EmbedderOptions::bge_small(), None),
            Err(why) => (EmbedderOptions::default(), Some(why)),
        }
    }
}

/// A ready embedder.
#[derive(Debug, Clone)]
pub enum Embedder {
    /// See [`EmbedderOptions::Tfidf`].
    Tfidf {
        /// Output dimensions.
        dims: usize,
        /// Projection seed.
        seed: u64,
    },
    /// See [`EmbedderOptions::Openai`].
    Openai {
        /// The HTTP client.
        client: HttpClient,
        /// The embeddings URL.
        url: String,
        /// The model name.
        model: String,
        /// The key, if one was configured.
        key: Option<ApiKey>,
        /// Texts per request.
        batch_size: usize,
        /// Requests in flight at once.
        concurrency: usize,
        /// Folder of finished batches.
        cache_dir: Option<std::path::PathBuf>,
    },
    /// See [`EmbedderOptions::Vectors`].
    Vectors {
        /// The file read.
        path: std::path::PathBuf,
        /// Its rows, L2-normalised: one per document (or document part).
        matrix: std::sync::Arc<Array2<f32>>,
        /// The passages' file and rows, L2-normalised, if given.
        passages: Option<(std::path::PathBuf, std::sync::Arc<Array2<f32>>)>,
        /// The model that made them, if declared.
        made_by: Option<Box<Embedder>>,
    },
    /// See [`EmbedderOptions::Minilm`].
    Minilm {
        /// The loaded model.
        model: MiniLm,
        /// Texts per forward pass.
        batch_size: usize,
    },
    /// See [`EmbedderOptions::BgeSmall`].
    Onnx {
        /// The loaded model.
        model: OnnxEmbedder,
        /// Texts per forward pass.
        batch_size: usize,
    },
}

impl Embedder {
    /// Checks the options and builds the embedder; a configured key variable
    /// that is unset is an error saying what to set.
    pub fn new(options: &EmbedderOptions, seed: u64) -> Result<Embedder> {
        match options {
            EmbedderOptions::Tfidf { dims } => {
                if *dims == 0 || *dims > tfidf::MAX_DIMS {
                    return Err(Error::Param(format!(
                        "tfidf dims must be in 1..={}, got {dims}",
                        tfidf::MAX_DIMS
                    )));
                }
                Ok(Embedder::Tfidf { dims: *dims, seed })
            }
            EmbedderOptions::Openai { .. } => openai(options),
            EmbedderOptions::Vectors {
                path,
                passages,
                made_by,
            } => precomputed(path, passages.as_deref(), made_by.as_deref(), seed),
            EmbedderOptions::BgeSmall { .. } => bge_small(options),
            EmbedderOptions::Minilm {
                model_dir,
                batch_size,
                max_tokens,
            } => {
                if *batch_size == 0 || !(8..=512).contains(max_tokens) {
                    return Err(Error::Param(
                        "minilm needs batch_size ≥ 1 and max_tokens in 8..=512".into(),
                    ));
                }
                let dir = model_dir.clone().unwrap_or_else(default_minilm_dir);
                Ok(Embedder::Minilm {
                    model: MiniLm::load(&dir, *max_tokens)?,
                    batch_size: *batch_size,
                })
            }
        }
    }

    /// A short description for the tree's metadata, e.g. `tfidf(dims=128)`.
    pub fn describe(&self) -> String {
        match self {
            Embedder::Tfidf { dims, .. } => format!("tfidf(dims={dims})"),
            Embedder::Openai { url, model, .. } => format!("openai(model={model}, url={url})"),
            Embedder::Vectors {
                made_by: Some(model),
                ..
            } => model.describe(),
            Embedder::Vectors { path, matrix, .. } => format!(
                "vectors(file={}, dims={})",
                path.file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default(),
                matrix.ncols()
            ),
            Embedder::Minilm { .. } => "minilm(all-MiniLM-L6-v2)".to_string(),
            Embedder::Onnx { model, .. } => format!("onnx({}, cls)", model.name()),
        }
    }

    /// For precomputed vectors: the rows of the given documents (indices in
    /// corpus order), after checking the file has one row per document.
    /// When `rows` are every document in order, the matrix itself, shared,
    /// not a copy. `None` for the embedders that embed text.
    pub fn document_vectors(
        &self,
        documents: usize,
        rows: &[usize],
    ) -> Option<Result<std::sync::Arc<Array2<f32>>>> {
        let Embedder::Vectors { path, matrix, .. } = self else {
            return None;
        };
        // One row per document node (a split document's parts each have
        // their own): the matrix as it is.
        if matrix.nrows() == rows.len() && matrix.nrows() != documents {
            return Some(Ok(matrix.clone()));
        }
        if matrix.nrows() != documents {
            return Some(Err(Error::Param(format!(
                "{}: {} rows for {documents} documents and {} document nodes (row i must be document i in corpus order, or document node i when long documents are split into parts)",
                path.display(),
                matrix.nrows(),
                rows.len()
            ))));
        }
        let every = rows.len() == documents && rows.iter().enumerate().all(|(i, r)| i == *r);
        Some(Ok(if every {
            matrix.clone()
        } else {
            std::sync::Arc::new(matrix.select(ndarray::Axis(0), rows))
        }))
    }

    /// For precomputed vectors with a passages file: its rows, after
    /// checking there is one per passage. `None` otherwise.
    pub fn passage_vectors(&self, passages: usize) -> Option<Result<std::sync::Arc<Array2<f32>>>> {
        let Embedder::Vectors {
            passages: Some((path, rows)),
            matrix,
            ..
        } = self
        else {
            return None;
        };
        Some(if rows.nrows() != passages {
            Err(Error::Param(format!(
                "{}: {} rows for {passages} passages (row i must be passage i in corpus order)",
                path.display(),
                rows.nrows()
            )))
        } else if rows.ncols() != matrix.ncols() {
            Err(Error::Param(format!(
                "{}: {} dimensions, the document vectors have {}",
                path.display(),
                rows.ncols(),
                matrix.ncols()
            )))
        } else {
            Ok(rows.clone())
        })
    }

    /// Whether texts can be embedded (every embedder but precomputed
    /// vectors without a declared model).
    pub fn embeds_text(&self) -> bool {
        !matches!(self, Embedder::Vectors { made_by: None, .. })
    }

    /// Embeds texts into L2-normalised rows, one per text, in order.
    pub async fn embed(&self, texts: Vec<String>, progress: &dyn Progress) -> Result<Array2<f32>> {
        match self {
            Embedder::Tfidf { dims, seed } => {
                let (dims, seed, n) = (*dims, *seed, texts.len() as u64);
                let out = tokio::task::spawn_blocking(move || tfidf::embed(&texts, dims, seed))
                    .await
                    .map_err(|e| Error::Task(e.to_string()))?;
                progress.inc(n);
                Ok(out)
            }
            Embedder::Openai {
                client,
                url,
                model,
                key,
                batch_size,
                concurrency,
                cache_dir,
            } => {
                let remote = openai::Remote {
                    client,
                    url,
                    model,
                    key: key.as_ref(),
                    batch_size: *batch_size,
                    concurrency: *concurrency,
                    cache: cache_dir.as_deref(),
                };
                openai::embed(&remote, &texts, progress).await
            }
            Embedder::Vectors {
                made_by: Some(model),
                ..
            } => Box::pin(model.embed(texts, progress)).await,
            Embedder::Vectors { .. } => Err(Error::Param(
                "precomputed vectors belong to documents, not texts: use `document_vectors`".into(),
            )),
            Embedder::Minilm { model, batch_size } => {
                let (model, batch) = (model.clone(), *batch_size);
                let f = move |chunk: &[String], done: &AtomicU64| {
                    model.embed_counted(chunk, batch, done)
                };
                embed_in_chunks(texts, progress, f).await
            }
            Embedder::Onnx { model, batch_size } => {
                let (model, batch) = (model.clone(), *batch_size);
                let f = move |chunk: &[String], done: &AtomicU64| {
                    model.embed_counted(chunk, batch, done)
                };
                embed_in_chunks(texts, progress, f).await
            }
        }
    }
}

/// Reads [`EmbedderOptions::Vectors`]: the files, and the declared model,
/// which must be an in-process one giving rows of the same width.
fn precomputed(
    path: &std::path::Path,
    passages: Option<&std::path::Path>,
    made_by: Option<&EmbedderOptions>,
    seed: u64,
) -> Result<Embedder> {
    let matrix = std::sync::Arc::new(npy::read(path)?);
    let passages = match passages {
        Some(p) => Some((p.to_path_buf(), std::sync::Arc::new(npy::read(p)?))),
        None => None,
    };
    let made_by = match made_by {
        None => None,
        Some(options) => {
            let model = Embedder::new(options, seed)?;
            let width = match &model {
                Embedder::Onnx { model, .. } => model.embed(&["width".to_string()], 1)?.ncols(),
                Embedder::Minilm { model, .. } => model.embed(&["width".to_string()], 1)?.ncols(),
                _ => {
                    return Err(Error::Param(format!(
                    "precomputed vectors can be declared as made by bge-small or minilm, not {}",
                    model.describe()
                )))
                }
            };
            if width != matrix.ncols() {
                return Err(Error::Param(format!(
                    "{}: {} dimensions, but {} gives {width}",
                    path.display(),
                    matrix.ncols(),
                    model.describe()
                )));
            }
            Some(Box::new(model))
        }
    };
    Ok(Embedder::Vectors {
        path: path.to_path_buf(),
        matrix,
        passages,
        made_by,
    })
}

/// An OpenAI-compatible `/v1/embeddings` endpoint, its options checked.
fn openai(options: &EmbedderOptions) -> Result<Embedder> {
    let EmbedderOptions::Openai {
        endpoint,
        model,
        api_key_env,
        batch_size,
        timeout_secs,
        concurrency,
        cache_dir,
    } = options
    else {
        return Err(Error::Param("not openai options".into()));
    };
    if *batch_size == 0 {
        return Err(Error::Param(
            "embedding batch size must be at least 1".into(),
        ));
    }
    if !(1..=256).contains(concurrency) {
        return Err(Error::Param(format!(
            "embedding concurrency must be in 1..=256, got {concurrency}"
        )));
    }
    let endpoint = Endpoint::new(
        "--embed-endpoint",
        endpoint,
        "/v1/embeddings",
        model,
        api_key_env.as_deref(),
        ClientConfig {
            timeout: Duration::from_secs((*timeout_secs).max(1)),
            ..ClientConfig::default()
        },
    )
    .map_err(Error::Http)?;
    Ok(Embedder::Openai {
        client: endpoint.client,
        url: endpoint.url,
        model: endpoint.model,
        key: endpoint.key,
        batch_size: *batch_size,
        concurrency: *concurrency,
        cache_dir: cache_dir.clone(),
    })
}

/// Checks and loads [`EmbedderOptions::BgeSmall`].
fn bge_small(options: &EmbedderOptions) -> Result<Embedder> {
    let EmbedderOptions::BgeSmall {
        model_dir,
        ort_library,
        batch_size,
        max_tokens,
        threads,
    } = options
    else {
        return Err(Error::Param("not bge-small options".into()));
    };
    if *batch_size == 0 || !(8..=512).contains(max_tokens) || !(1..=64).contains(threads) {
        return Err(Error::Param(
            "bge-small needs batch_size ≥ 1, max_tokens in 8..=512 and threads in 1..=64".into(),
        ));
    }
    let dir = model_dir.clone().unwrap_or_else(default_bge_dir);
    Ok(Embedder::Onnx {
        model: OnnxEmbedder::load(
            "bge-small-en",
            &dir,
            ort_library.as_deref(),
            Pooling::Cls,
            *threads,
            *max_tokens,
        )?,
        batch_size: *batch_size,
    })
}

/// How often a running embedding reports the rows it finished.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Runs a CPU-bound embedder on the blocking pool, 4,096 texts at a time
/// (its batches sorted by length within each), rows in order. `f` counts
/// the rows it finishes; they reach `progress` every quarter second, so a
/// bar moves from the first batch, not the first 4,096 texts.
async fn embed_in_chunks<F>(
    texts: Vec<String>,
    progress: &dyn Progress,
    f: F,
) -> Result<Array2<f32>>
where
    F: Fn(&[String], &AtomicU64) -> Result<Array2<f32>> + Clone + Send + 'static,
{
    let mut parts: Vec<Array2<f32>> = Vec::new();
    for chunk in texts.chunks(4096) {
        let (f, chunk) = (f.clone(), chunk.to_vec());
        let n = chunk.len() as u64;
        let done = Arc::new(AtomicU64::new(0));
        let counter = done.clone();
        let mut task = tokio::task::spawn_blocking(move || f(&chunk, &counter));
        let mut tick = tokio::time::interval(PROGRESS_EVERY);
        let mut told = 0;
        let part = loop {
            tokio::select! {
                joined = &mut task => break joined.map_err(|e| Error::Task(e.to_string()))??,
                _ = tick.tick() => {
                    let now = done.load(Ordering::Relaxed).min(n);
                    progress.inc(now - told);
                    told = now;
                }
            }
        };
        progress.inc(n - told);
        parts.push(part);
    }
    if parts.is_empty() {
        return Ok(Array2::zeros((0, 0)));
    }
    let views: Vec<_> = parts.iter().map(|p| p.view()).collect();
    ndarray::concatenate(ndarray::Axis(0), &views).map_err(|e| Error::Task(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Progress that keeps each `inc`.
    #[derive(Default)]
    struct Incs(std::sync::Mutex<Vec<u64>>);

    impl Progress for Incs {
        fn inc(&self, n: u64) {
            self.0.lock().expect("incs").push(n);
        }
    }

    /// A long chunk reports its rows while it runs, not once at its end:
    /// a bar moves from the first batch (issue #67: the first line came
    /// after 4,096 texts, two minutes on a loaded machine).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_embedding_reports_its_rows_as_its_batches_finish() {
        let texts: Vec<String> = (0..100).map(|i| format!("text {i}")).collect();
        let slow = |chunk: &[String], done: &AtomicU64| {
            for _ in 0..4 {
                std::thread::sleep(Duration::from_millis(300));
                done.fetch_add(chunk.len() as u64 / 4, Ordering::Relaxed);
            }
            Ok(Array2::zeros((chunk.len(), 2)))
        };
        let incs = Incs::default();
        let rows = embed_in_chunks(texts, &incs, slow).await.expect("rows");
        assert_eq!(rows.nrows(), 100);
        let incs = incs.0.into_inner().expect("incs");
        assert_eq!(incs.iter().sum::<u64>(), 100, "{incs:?}");
        let moving = incs.iter().filter(|n| **n > 0).count();
        assert!(moving >= 3, "the rows came in {moving} steps: {incs:?}");
    }

    #[test]
    fn precomputed_vectors_are_shared_not_copied_when_every_document_is_one_row() {
        let matrix = std::sync::Arc::new(ndarray::arr2(&[[1.0f32, 0.0], [0.0, 1.0]]));
        let embedder = Embedder::Vectors {
            path: "v.npy".into(),
            matrix: matrix.clone(),
            passages: None,
            made_by: None,
        };
        let all = embedder
            .document_vectors(2, &[0, 1])
            .expect("vectors")
            .expect("rows");
        assert!(
            std::sync::Arc::ptr_eq(&all, &matrix),
            "one copy of the matrix"
        );
        // A document split into parts repeats its row: a new matrix.
        let parts = embedder
            .document_vectors(2, &[0, 0, 1])
            .expect("vectors")
            .expect("rows");
        assert_eq!(parts.nrows(), 3);
        assert_eq!(parts.row(1), matrix.row(0));
        let wrong = embedder.document_vectors(3, &[0, 1, 2]).expect("vectors");
        assert!(wrong.is_err(), "a row count that is not the document count");
    }
}

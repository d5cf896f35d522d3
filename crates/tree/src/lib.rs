//! The corpus tree of treenav and its builder.
//!
//! A [`Tree`] has passages as leaves, documents (title + first sentence)
//! above them and one or more levels of topic clusters above those, each
//! labelled by a one-line summary. It is built once ([`build_tree`]): each
//! document's title and lead are embedded ([`Embedder`]: TF-IDF by default,
//! or any OpenAI-compatible embeddings server, or precomputed vectors), and
//! split by k-means (k-means++ init, fixed seed) from the root down, each
//! split within the branching limit. Clusters are summarised
//! ([`Summarizer`]: extractive by default, or an LLM). The same build can
//! run across machines ([`Plan`]: the root's split, shards, a merge).
//! Embeddings are a build-time tool only: the saved tree holds no vectors,
//! and the query side navigates it with a decision model.
//!
//! The tree is an arena of [`Node`]s ([`Tree::graph`] gives a petgraph view)
//! saved in one versioned, checksummed file ([`file`]).
//!
//! ```
//! use treenav_corpus::{load_str, Format, LoadOptions};
//! use treenav_tree::{build_tree, Embedder, EmbedderOptions, NoProgress, Summarizer, SummarizerOptions, TreeParams};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let jsonl = (0..30)
//!     .map(|i| format!(r#"{{"_id":"d{i}","title":"Doc {i}","text":"Topic {} text. More words here."}}"#, i % 3))
//!     .collect::<Vec<_>>()
//!     .join("\n");
//! let corpus = load_str(&jsonl, "corpus.jsonl", Format::Beir, &LoadOptions::default())?;
//! let params = TreeParams::default().branching(10).check()?;
//! let embedder = Embedder::new(&EmbedderOptions::default(), params.seed())?;
//! let summarizer = Summarizer::new(&SummarizerOptions::Extractive)?;
//! let tree = build_tree(corpus, "example", &params, &embedder, &summarizer, &NoProgress).await?;
//! assert_eq!(tree.passages().count(), 30);
//! let bytes = treenav_tree::file::to_bytes(&tree)?;
//! let again = treenav_tree::file::from_bytes(&bytes, "mem.tree".as_ref())?;
//! assert_eq!(again, tree);
//! # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
//! ```
#![warn(missing_docs)]

mod build;
pub mod delta;
mod disk;
mod fault;
pub mod file;
pub mod filter;
pub mod generation;
mod grow;
mod id;
pub mod lexical;
mod model;
mod query;
pub mod shard;
pub mod store;
pub mod update;
pub mod vectors;

pub use build::{
    build_tree, default_clusters, embedding_texts, passage_label, Clustering, EmbeddingTexts,
    TreeParams, ValidTreeParams, DEFAULT_SAMPLE,
};
pub use embed::{
    bge_small_available, default_bge_dir, Embedder, EmbedderOptions, OnnxEmbedder, Pooling,
};
pub use query::QueryEmbedder;
pub use treenav_cluster as cluster;
pub use treenav_cluster::neighbours;
pub use treenav_embed::{NoProgress, Progress};

/// The embedders (the `treenav-embed` crate) and the query embedder that
/// pairs a tree with the embedder it was built with.
pub mod embed {
    pub use crate::query::QueryEmbedder;
    pub use treenav_embed::*;
}
pub use id::NodeId;
pub use model::{LevelKind, LevelStats, Node, NodeKind, Tree, TreeMeta};
pub use petgraph;
pub use shard::{shard_file, Plan, ShardSpec};
pub use summary::{Summarizer, SummarizerOptions};
pub use treenav_corpus as corpus;
pub use treenav_summary as summary;
pub use treenav_text as text;

use std::path::PathBuf;

/// Result of the tree crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of building, saving and loading trees.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A parameter or option is not valid; the message says which and why.
    #[error("invalid parameter: {0}")]
    Param(String),
    /// A remote embedder or summariser failed (see `retryable()` on the cause).
    #[error(transparent)]
    Http(#[from] treenav_http::HttpError),
    /// Clustering failed.
    #[error("clustering failed: {0}")]
    Cluster(String),
    /// A file could not be read or written.
    #[error("cannot access {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A tree file is truncated, corrupted, foreign or of another version.
    #[error("{}: {problem}", path.display())]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A tree's structure is inconsistent.
    #[error("invalid tree: {0}")]
    InvalidTree(String),
    /// The tree could not be encoded.
    #[error("cannot encode the tree: {0}")]
    Encode(String),
    /// A background task failed.
    #[error("background task failed: {0}")]
    Task(String),
}

/// The embedders' errors keep their meaning: a bad option is a
/// [`Error::Param`], a failed server an [`Error::Http`].
impl From<treenav_embed::Error> for Error {
    fn from(e: treenav_embed::Error) -> Error {
        use treenav_embed::Error as E;
        match e {
            E::Param(m) => Error::Param(m),
            E::Http(e) => Error::Http(e),
            E::Io { path, source } => Error::Io { path, source },
            E::File(e) => Error::from(e),
            E::Task(m) => Error::Task(m),
        }
    }
}

/// The summariser's errors keep their meaning: a failed server is an
/// [`Error::Http`], the cache's file an [`Error::Io`].
impl From<treenav_summary::Error> for Error {
    fn from(e: treenav_summary::Error) -> Error {
        use treenav_summary::Error as S;
        match e {
            S::Http(e) => Error::Http(e),
            S::Io { path, source } => Error::Io { path, source },
            S::Task(m) => Error::Task(m),
        }
    }
}

/// An input file refused before reading (not a regular file, over its
/// cap, foreign) is a [`Error::BadFile`] naming it; a failed open or read
/// is an [`Error::Io`].
impl From<treenav_files::Error> for Error {
    fn from(e: treenav_files::Error) -> Error {
        use treenav_files::Error as F;
        let (path, problem) = match e {
            F::Io { path, source, .. } => return Error::Io { path, source },
            F::NotRegular { what, path, found } => {
                (path, format!("{what}: {found}, not a regular file"))
            }
            F::TooLarge {
                what,
                path,
                bytes,
                max,
            } => (
                path,
                format!("{what}: {bytes} bytes, over the limit of {max}"),
            ),
            F::BadMagic { what, path } => (path, format!("{what}: wrong magic bytes")),
        };
        Error::BadFile { path, problem }
    }
}

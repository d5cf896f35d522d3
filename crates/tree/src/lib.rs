//! The corpus tree of treenav: the model, its files and the read side.
//!
//! A [`Tree`] has passages as leaves, documents (title + first sentence)
//! above them and one or more levels of topic clusters above those, each
//! labelled by a one-line summary. The tree is an arena of [`Node`]s
//! ([`Tree::graph`] gives a petgraph view) saved in one versioned,
//! checksummed file ([`file`](mod@file)) with side files beside it: the passages'
//! texts ([`store`]), the BM25 index ([`lexical`]), the stored vectors
//! ([`vectors`]), the pending updates ([`delta`]), all saved as one
//! [`generation`]. Metadata filters ([`filter`]) and the query embedder
//! ([`QueryEmbedder`]) are the read side the navigator uses.
//!
//! The `treenav-builder` crate builds and updates trees; this crate loads,
//! checks and saves them.
#![warn(missing_docs)]

pub mod delta;
pub mod fault;
pub mod file;
pub mod filter;
pub mod format;
pub mod generation;
mod id;
pub mod lexical;
mod mapped;
mod model;
mod node;
mod nodes;
mod query;
pub mod store;
pub mod vectors;

pub use embed::{
    bge_small_available, default_bge_dir, Embedder, EmbedderOptions, OnnxEmbedder, Pooling,
};
pub use query::{embedder_for, QueryEmbedder};
pub use treenav_embed::{NoProgress, Progress};

/// The embedders (the `treenav-embed` crate) and the query embedder that
/// pairs a tree with the embedder it was built with.
pub mod embed {
    pub use crate::query::QueryEmbedder;
    pub use treenav_embed::*;
}
pub use id::NodeId;
pub use model::{LevelStats, Tree, UpdateLog};
pub use node::{LevelKind, Node, NodeKind, TreeMeta};
pub use petgraph;
pub use treenav_corpus as corpus;
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
    /// A remote server failed (see `retryable()` on the cause).
    #[error(transparent)]
    Http(#[from] treenav_http::HttpError),
    /// The embedder refused its options or failed.
    #[error(transparent)]
    Embed(#[from] treenav_embed::Error),
    /// Another writer holds the tree's lock; the message names the lock
    /// file.
    #[error("{0}")]
    Locked(String),
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
    Encode(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The lexical index could not be built, updated, written or searched.
    #[error(transparent)]
    Lexical(#[from] treenav_text::index::IndexError),
    /// A background task failed.
    #[error("background task failed: {0}")]
    Task(String),
}

impl Error {
    /// A failed encoding, its cause kept.
    pub fn encode(e: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::Encode(Box::new(e))
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

//! A build's errors: its own (a bad parameter, a clustering that cannot
//! go on), and those of the crates it drives, each kept whole with its
//! cause: the tree's files and embedder, the summariser.

/// Why a build, a shard or an update stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter or option is not valid; the message says which and why.
    #[error("invalid parameter: {0}")]
    Param(String),
    /// Clustering failed.
    #[error("clustering failed: {0}")]
    Cluster(String),
    /// A state the build cannot go on from (the message says which).
    #[error("background task failed: {0}")]
    Task(String),
    /// A background task panicked or was cancelled.
    #[error("background task failed: {0}")]
    Join(#[from] tokio::task::JoinError),
    /// The tree's files or structure (among them [`TreeError::Locked`]:
    /// another writer holds the tree).
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// The summariser failed.
    #[error(transparent)]
    Summary(#[from] treenav_summary::Error),
}

pub use treenav_tree::Error as TreeError;

/// A build's result.
pub type Result<T> = std::result::Result<T, Error>;

/// An input file refused before reading, or a failed read, is the tree's
/// file error naming it.
impl From<treenav_files::Error> for Error {
    fn from(e: treenav_files::Error) -> Error {
        Error::Tree(e.into())
    }
}

/// The embedder's errors are the tree's `Embed` (the tree's own embedder
/// fails the same way): one place to match them.
impl From<treenav_embed::Error> for Error {
    fn from(e: treenav_embed::Error) -> Error {
        Error::Tree(e.into())
    }
}

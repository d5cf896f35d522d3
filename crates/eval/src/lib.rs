//! Evaluation for treenav: the numbers users choose a retriever by.
//!
//! * [`dataset`] loads a benchmark (SQuAD v1.1 JSON, or a BEIR folder) into a
//!   corpus, queries and gold, with file-and-line errors.
//! * [`metrics`] scores a ranking: Hit@1, Hit@5, Recall@10, MRR@10, nDCG@10.
//! * [`baselines`] holds what users would pick instead of the tree: flat
//!   BM25, brute-force dense, hybrid (RRF), BM25 + judge rerank, and the
//!   judge over every passage (`flat`).
//! * [`bench`] runs systems over the queries and gathers a [`bench::Report`],
//!   whose JSON schema is documented on the type.
//! * [`explore`] runs the cascade's cheap stage alone at several budgets.
//! * [`sweep`] runs `tree`, `rerank` and `gar` at equal judgment budgets.
//! * [`calibration`] says whether a system's scores are probabilities (ECE).
//! * [`score_file`] keeps the cross-encoder's scores between runs.
//! * [`prune_curve`] measures the pruner: recall retention against compression.
#![warn(missing_docs)]

pub mod baselines;
pub mod bench;
pub mod calibration;
mod context;
pub mod dataset;
mod evidence;
pub mod explore;
mod gold;
pub mod metrics;
mod outcome;
pub mod prune_curve;
mod report;
pub mod runs;
pub mod score_file;
mod setup;
pub mod sweep;

use std::path::PathBuf;

/// Result of the eval crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of evaluation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A dataset file or folder is unusable as a whole.
    #[error("{}: {problem}", path.display())]
    Dataset {
        /// The file or folder.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The corpus, or a file of the dataset, could not be read (a
    /// record's error names its file, line and field).
    #[error(transparent)]
    Corpus(#[from] treenav_corpus::Error),
    /// A score file (`--score-file`) is unusable.
    #[error("score file {}: {problem}", path.display())]
    ScoreFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A setting is not valid.
    #[error("invalid bench setting: {0}")]
    Config(String),
    /// A judge call failed.
    #[error("{system}: query `{query}`: {source}")]
    Judge {
        /// The system that was running.
        system: String,
        /// The query id.
        query: String,
        /// The judge's error.
        source: treenav_judge::Error,
    },
    /// Navigation failed.
    #[error("tree: query `{query}`: {source}")]
    Navigate {
        /// The query id.
        query: String,
        /// The navigator's error.
        source: treenav_navigator::Error,
    },
    /// Building the tree or embedding failed.
    #[error(transparent)]
    Tree(#[from] treenav_tree::Error),
    /// The BM25 baseline's index could not be built.
    #[error(transparent)]
    Lexical(#[from] treenav_text::index::IndexError),
    /// The navigator's settings for a system are not valid.
    #[error("{system}: {source}")]
    Navigator {
        /// The system.
        system: String,
        /// The navigator's error.
        source: treenav_navigator::Error,
    },
    /// The pruner failed or refused its input.
    #[error("prune: {0}")]
    Prune(#[from] treenav_prune::Error),
    /// A query's gold names a passage or document the corpus lacks.
    #[error("query `{query}`: gold {level} `{id}` is not in the corpus")]
    MissingGold {
        /// The query id.
        query: String,
        /// `passage` or `document`.
        level: &'static str,
        /// The gold id.
        id: String,
    },
    /// The tree returned a passage the dataset lacks.
    #[error("the tree returned passage `{0}`, which the dataset lacks: build the tree from this dataset")]
    UnknownPassage(String),
    /// A query task panicked or was cancelled.
    #[error("a {system} query task failed: {message}")]
    Task {
        /// The system.
        system: String,
        /// What the runtime said.
        message: String,
    },
    /// The tree was built from another corpus than the dataset's.
    #[error(
        "the tree was built from a different corpus than this dataset's \
         (tree, built from `{source_path}`: {tree}; dataset: {dataset}): \
         build the tree from this dataset (same --passage-words and --skip-bad)"
    )]
    TreeMismatch {
        /// The corpus source the tree records.
        source_path: String,
        /// The fingerprint stored in the tree.
        tree: treenav_corpus::Fingerprint,
        /// The fingerprint of the dataset's corpus.
        dataset: treenav_corpus::Fingerprint,
    },
}

/// Embedding fails as the tree crate reports it.
impl From<treenav_tree::embed::Error> for Error {
    fn from(e: treenav_tree::embed::Error) -> Error {
        Error::Tree(e.into())
    }
}

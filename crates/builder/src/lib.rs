//! Building treenav's corpus trees: the full build, the same build across
//! machines, and updates without a rebuild.
//!
//! A corpus becomes a [`Tree`] ([`build_tree`]): each document's title and
//! lead are embedded ([`Embedder`]: TF-IDF by default, or any
//! OpenAI-compatible embeddings server, or precomputed vectors), and split
//! by k-means (k-means++ init, fixed seed) from the root down, each split
//! within the branching limit. Clusters are summarised ([`Summarizer`]:
//! extractive by default, or an LLM). The same build can run across
//! machines ([`Plan`]: the root's split, shards, a merge), and a saved tree
//! takes new, changed and removed documents without a rebuild
//! ([`update`]). The tree itself, its files and the read side the
//! navigator uses are the `treenav-tree` crate's.
//!
//! ```
//! use treenav_builder::{build_tree, Embedder, EmbedderOptions, NoProgress, Summarizer, SummarizerOptions, TreeParams};
//! use treenav_corpus::{load_str, Format, LoadOptions};
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

mod error;
mod full;
mod grow;
pub mod shard;
pub mod update;

pub use error::{Error, Result, TreeError};
pub use full::{
    build_extractive, build_tree, default_clusters, embedding_texts, passage_label, Clustering,
    EmbeddingTexts, Outline, Outliner, TreeParams, ValidTreeParams, DEFAULT_SAMPLE,
};
pub use shard::{shard_file, Plan, ShardSpec};
/// The clustering a build runs (k-means levels, near-duplicate lists).
pub use treenav_cluster as cluster;
pub use treenav_embed::{NoProgress, Progress};
/// The summariser that labels clusters.
pub use treenav_summary as summary;
pub use treenav_summary::{Summarizer, SummarizerOptions};
pub use treenav_tree::embed::{Embedder, EmbedderOptions};
pub use treenav_tree::Tree;

use treenav_tree::NodeId;

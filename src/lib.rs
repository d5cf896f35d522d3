//! treenav: decision-model hierarchical tree navigation for RAG — retrieval
//! without a vector index at query time.
//!
//! This facade re-exports the crates of the workspace so that applications
//! (and the top-level integration tests and benches) depend on one crate:
//!
//! * [`corpus`]: documents, passages, loaders and the chunker;
//! * [`tree`]: the tree, its files, metadata filters and the embedders;
//! * [`build`]: the build (k-means levels, summaries), shards and updates;
//! * [`http`]: the one HTTP client setup (timeouts, retries, keys);
//! * [`judge`]: decision models (judge, choose, grade), backends and the dispatcher;
//! * [`navigator`]: retrieval over a tree (best-first by default, or level by level), `Navigator::builder`;
//! * [`eval`]: benchmark datasets, metrics, baselines and the bench runner;
//! * [`prune`]: the context pruner.
#![warn(missing_docs)]

pub use treenav_builder as build;
pub use treenav_corpus as corpus;
pub use treenav_eval as eval;
pub use treenav_files as files;
pub use treenav_http as http;
pub use treenav_judge as judge;
pub use treenav_navigator as navigator;
pub use treenav_prune as prune;
pub use treenav_serve as serve;
pub use treenav_text as text;
pub use treenav_tree as tree;

/// The bundled sample corpus (a CC BY-SA 4.0 slice of XQuAD, SQuAD v1.1 JSON;
/// see `samples/README.md`).
pub const SAMPLE_CORPUS: &str = include_str!("../samples/xquad-sample.json");
/// The name the sample corpus goes by in messages and tree metadata.
pub const SAMPLE_NAME: &str = "samples/xquad-sample.json (bundled)";

//! The full build: documents → embeddings → k-means levels → summaries → tree.

mod finish;
mod passages;
pub use passages::passage_label;
pub(crate) use passages::{embed_into as embed_passages_into, PASSAGES_PER_CALL};
mod units;

pub(crate) use finish::{document_kind, finish};
pub use units::{embedding_texts, EmbeddingTexts, Outline, Outliner};
pub(crate) use units::{unit_texts, units, Unit};

use crate::{Error, NodeId, Progress, Result};
use ndarray::Array2;
pub use treenav_cluster::default_clusters;
use treenav_cluster::neighbours::Lists;
use treenav_cluster::{group_centroids, partition, Group};
use treenav_corpus::Corpus;
use treenav_summary::Summarizer;
use treenav_tree::embed::Embedder;
use treenav_tree::{Tree, TreeMeta};

/// Parameters of a build, checked by [`TreeParams::check`] before any work.
///
/// ```
/// let params = treenav_builder::TreeParams::default().branching(64).seed(7).check()?;
/// assert_eq!(params.branching(), 64);
/// # Ok::<(), treenav_builder::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TreeParams {
    branching: usize,
    clusters: Option<usize>,
    seed: u64,
    embed_sentences: usize,
    neighbours: usize,
    clustering: Clustering,
    sample: usize,
    passage_vectors: bool,
}

/// How the documents are split into clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clustering {
    /// From the root down: at each node k-means with k ≤ the branching
    /// limit, trained on a bounded sample, every member assigned to its
    /// nearest centroid; subtrees in parallel. Work grows as N·b·depth.
    #[default]
    TopDown,
    /// All documents at once into max(√N, N/b) clusters, oversized ones
    /// split again, then the clusters clustered upward the same way (the
    /// original construction; work grows as N·k with k ∝ N).
    Flat,
}

impl Clustering {
    /// Its name: `top-down` or `flat`.
    pub fn name(self) -> &'static str {
        match self {
            Clustering::TopDown => "top-down",
            Clustering::Flat => "flat",
        }
    }
}

impl std::str::FromStr for Clustering {
    type Err = Error;
    fn from_str(s: &str) -> Result<Clustering> {
        match s {
            "top-down" => Ok(Clustering::TopDown),
            "flat" => Ok(Clustering::Flat),
            other => Err(Error::Param(format!(
                "unknown clustering `{other}` (top-down or flat)"
            ))),
        }
    }
}

/// Rows k-means is trained on at each node of the top-down build, at most.
pub const DEFAULT_SAMPLE: usize = 50_000;

impl Default for TreeParams {
    fn default() -> Self {
        TreeParams {
            branching: 100,
            clusters: None,
            seed: 42,
            embed_sentences: 1,
            neighbours: treenav_cluster::neighbours::DEFAULT_NEIGHBOURS,
            clustering: Clustering::TopDown,
            sample: DEFAULT_SAMPLE,
            passage_vectors: true,
        }
    }
}

impl TreeParams {
    /// Most children any node may have (2–10,000). Documents with more
    /// passages are split into parts. By default, 100.
    pub fn branching(mut self, branching: usize) -> Self {
        self.branching = branching;
        self
    }

    /// Number of k-means clusters over documents (the paper's 1,000 for
    /// 108,626 pages); higher levels are added while a level has more nodes
    /// than the branching limit. By default, max(√N, N / branching).
    pub fn clusters(mut self, clusters: Option<usize>) -> Self {
        self.clusters = clusters;
        self
    }

    /// Seed of k-means and the TF-IDF projection. By default, 42.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sentences of each document's text embedded with its title for
    /// clustering (the paper used the first sentence). By default, 1.
    pub fn embed_sentences(mut self, n: usize) -> Self {
        self.embed_sentences = n;
        self
    }

    /// Nearest documents stored per document (searched in its leaf cluster
    /// and the leaf clusters sharing its parent; 0 stores none). By default, 16.
    pub fn neighbours(mut self, k: usize) -> Self {
        self.neighbours = k;
        self
    }

    /// How documents are split into clusters. By default, top-down; an
    /// explicit [`TreeParams::clusters`] count selects the flat one.
    pub fn clustering(mut self, clustering: Clustering) -> Self {
        self.clustering = clustering;
        self
    }

    /// Rows k-means is trained on at each node of the top-down build (at
    /// least 100). By default, 50,000.
    pub fn sample(mut self, rows: usize) -> Self {
        self.sample = rows;
        self
    }

    /// Embed every passage (its document's title and its own text) with
    /// the build's embedder and keep the vectors beside the tree, for the
    /// embedding judge at query time. By default, on (precomputed document
    /// vectors have none to give).
    pub fn passage_vectors(mut self, on: bool) -> Self {
        self.passage_vectors = on;
        self
    }

    /// Checks the parameters.
    pub fn check(mut self) -> Result<ValidTreeParams> {
        if self.sample < 100 {
            return Err(Error::Param(format!(
                "sample must be at least 100 rows, got {}",
                self.sample
            )));
        }
        // A cluster count is the flat construction's k.
        if self.clusters.is_some() {
            self.clustering = Clustering::Flat;
        }
        if !(2..=10_000).contains(&self.branching) {
            return Err(Error::Param(format!(
                "branching must be in 2..=10000, got {}",
                self.branching
            )));
        }
        if self.clusters == Some(0) {
            return Err(Error::Param("clusters must be at least 1".into()));
        }
        if self.embed_sentences == 0 {
            return Err(Error::Param("embed_sentences must be at least 1".into()));
        }
        if self.neighbours > 1_000 {
            return Err(Error::Param(format!(
                "neighbours must be at most 1000, got {}",
                self.neighbours
            )));
        }
        Ok(ValidTreeParams(self))
    }
}

/// Checked [`TreeParams`].
#[derive(Debug, Clone, PartialEq)]
pub struct ValidTreeParams(TreeParams);

impl ValidTreeParams {
    /// The branching limit.
    pub fn branching(&self) -> usize {
        self.0.branching
    }
    /// The cluster count over documents, if fixed.
    pub fn clusters(&self) -> Option<usize> {
        self.0.clusters
    }
    /// The seed.
    pub fn seed(&self) -> u64 {
        self.0.seed
    }
    /// Sentences embedded with each title.
    pub fn embed_sentences(&self) -> usize {
        self.0.embed_sentences
    }
    /// Whether the tree keeps a vector per passage.
    pub fn keeps_passage_vectors(&self) -> bool {
        self.0.passage_vectors
    }
    /// Nearest documents stored per document.
    pub fn neighbours(&self) -> usize {
        self.0.neighbours
    }
    /// How documents are split into clusters.
    pub fn clustering(&self) -> Clustering {
        self.0.clustering
    }
    /// Rows k-means is trained on per node (top-down).
    pub fn sample(&self) -> usize {
        self.0.sample
    }
}

/// The cluster levels of the flat construction: `levels[0]` groups
/// units, `levels[l]` groups the groups of `levels[l-1]`.
fn flat_levels(embeddings: &Array2<f32>, params: &ValidTreeParams) -> Result<Vec<Vec<Vec<usize>>>> {
    let b = params.branching();
    let n = embeddings.nrows();
    let k = params
        .clusters()
        .unwrap_or_else(|| default_clusters(n, b))
        .clamp(1, n.max(1));
    let first = partition(embeddings.view(), k, b, params.seed());
    let mut points = group_centroids(embeddings.view(), &first);
    let mut levels = vec![first];
    while levels.last().map_or(0, Vec::len) > b {
        let count = points.nrows();
        let seed = params.seed().wrapping_add(levels.len() as u64 * 7919);
        let groups = partition(points.view(), default_clusters(count, b), b, seed);
        if groups.len() >= count {
            return Err(Error::Cluster(format!(
                "level {} did not shrink ({count} nodes)",
                levels.len() + 1
            )));
        }
        points = group_centroids(points.view(), &groups);
        levels.push(groups);
    }
    Ok(levels)
}

/// The flat construction's levels as a cluster tree (the top level's
/// clusters are the root's children).
fn levels_to_tree(levels: &[Vec<Vec<usize>>]) -> Group {
    fn node(levels: &[Vec<Vec<usize>>], level: usize, index: usize) -> Group {
        let members = levels[level].get(index).cloned().unwrap_or_default();
        if level == 0 {
            Group::Leaf(members)
        } else {
            Group::Inner(
                members
                    .into_iter()
                    .map(|c| node(levels, level - 1, c))
                    .collect(),
            )
        }
    }
    let top = levels.len().saturating_sub(1);
    Group::Inner(
        (0..levels.get(top).map_or(0, Vec::len))
            .map(|c| node(levels, top, c))
            .collect(),
    )
}

/// The flat construction's cluster tree and neighbour lists.
fn flat_tree(
    embeddings: &Array2<f32>,
    params: &ValidTreeParams,
    progress: &dyn Progress,
) -> Result<(Group, Lists)> {
    let levels = flat_levels(embeddings, params)?;
    progress.inc(embeddings.nrows() as u64);
    let root = levels_to_tree(&levels);
    let near = treenav_cluster::neighbours::nearest(
        embeddings.view(),
        &root.families(),
        params.neighbours(),
    );
    Ok((root, near))
}

/// [`build_tree`] with extractive summaries (offline) and the embedder
/// `embedder` describes, quietly: the small trees of examples and tests.
pub async fn build_extractive(
    corpus: Corpus,
    source: &str,
    params: &ValidTreeParams,
    embedder: &treenav_tree::embed::EmbedderOptions,
) -> Result<Tree> {
    let embedder = Embedder::new(embedder, params.seed())?;
    let summarizer = Summarizer::new(&treenav_summary::SummarizerOptions::Extractive)?;
    let progress = treenav_embed::NoProgress;
    build_tree(corpus, source, params, &embedder, &summarizer, &progress).await
}

/// Builds a tree from a corpus: embeds each document's title and lead,
/// clusters with k-means into levels that respect the branching limit,
/// summarises each cluster and assembles the arena.
///
/// The top-down build runs in one process what a sharded build (see
/// `Plan`) runs across many: the root's split, the subtree of every top
/// cluster, then the join; the result is the same tree.
///
/// The corpus is consumed: its passage texts move into the tree.
pub async fn build_tree(
    corpus: Corpus,
    source: &str,
    params: &ValidTreeParams,
    embedder: &Embedder,
    summarizer: &Summarizer,
    progress: &dyn Progress,
) -> Result<Tree> {
    if corpus.documents.is_empty() {
        return Err(Error::Param(format!(
            "{source}: the corpus has no document"
        )));
    }
    let units = units(&corpus, params.branching());
    let texts = || unit_texts(&corpus, &units, params.embed_sentences());
    let (embeddings, tfidf) =
        embed_units_fitted(corpus.documents.len(), &units, texts, embedder, progress).await?;
    progress.stage("clustering", units.len() as u64);
    let (root, near) = blocking(|| match params.clustering() {
        Clustering::Flat => flat_tree(&embeddings, params, progress),
        Clustering::TopDown => {
            let split = crate::grow::RootSplit::new(
                embeddings.view(),
                params.branching(),
                params.sample(),
                params.seed(),
            );
            let tops = split.grow_all(embeddings.view(), params.neighbours(), progress);
            split.join(embeddings.view(), tops, params.neighbours())
        }
    })?;
    let meta = TreeMeta {
        source: source.to_string(),
        embedder: embedder.describe(),
        summarizer: summarizer.describe(),
        branching: params.branching() as u32,
        seed: params.seed(),
        built_by: concat!("treenav ", env!("CARGO_PKG_VERSION")).to_string(),
        corpus: Some(corpus.fingerprint()),
    };
    let near = near_by_unit(units.len(), near);
    let embedding = treenav_tree::vectors::Embedding {
        embedder: meta.embedder.clone(),
        tfidf,
        sentences: params.embed_sentences(),
    };
    let (mut tree, node_of_unit) =
        finish::finish(corpus, units, root, near, meta, summarizer, progress).await?;
    let documents = blocking(|| {
        treenav_tree::vectors::UnitVectors::from_rows(embedding, &node_of_unit, embeddings.view())
    });
    drop(embeddings);
    let vectors = Vectors {
        documents,
        embedder,
    };
    let with_passages = params.keeps_passage_vectors();
    attach_vectors(&mut tree, &node_of_unit, vectors, with_passages, progress).await?;
    Ok(tree)
}

/// The vectors a built tree keeps beside it: its document rows (the ones
/// it was clustered by, quantised) and the embedder of its passages.
pub(crate) struct Vectors<'a> {
    /// One row per document node, with what embedded them.
    pub(crate) documents: treenav_tree::vectors::UnitVectors,
    /// The build's embedder, for the passages.
    pub(crate) embedder: &'a Embedder,
}

/// Sets the document vectors of a built tree (8 bits a dimension, kept
/// for updates and the embedding judge) and, `with_passages`, its passage
/// vectors: what a one-process build and a merge of shards both keep.
pub(crate) async fn attach_vectors(
    tree: &mut Tree,
    node_of_unit: &[NodeId],
    vectors: Vectors<'_>,
    with_passages: bool,
    progress: &dyn Progress,
) -> Result<()> {
    if with_passages {
        let order = passages::in_corpus_order(tree, node_of_unit);
        let (documents, embedder) = (&vectors.documents, vectors.embedder);
        let passages = passages::embed(tree, &order, documents, embedder, progress).await?;
        tree.set_passage_vectors(passages.map(std::sync::Arc::new));
    }
    tree.set_vectors(Some(std::sync::Arc::new(vectors.documents)));
    Ok(())
}

/// [`embed_units`], and for TF-IDF the model fitted on the units (kept so
/// that documents added later are embedded in the same space).
pub(crate) async fn embed_units_fitted(
    documents: usize,
    units: &[Unit],
    texts: impl FnOnce() -> Vec<String>,
    embedder: &Embedder,
    progress: &dyn Progress,
) -> Result<(
    std::sync::Arc<Array2<f32>>,
    Option<treenav_tree::embed::tfidf::TfidfModel>,
)> {
    let Embedder::Tfidf { dims, seed } = embedder else {
        let rows = embed_units(documents, units, texts, embedder, progress).await?;
        return Ok((rows, None));
    };
    progress.stage("embedding", units.len() as u64);
    let texts = texts();
    let (dims, seed) = (*dims, *seed);
    let (model, rows) = tokio::task::spawn_blocking(move || {
        treenav_tree::embed::tfidf::fit_embed(&texts, dims, seed)
    })
    .await?;
    progress.inc(units.len() as u64);
    Ok((std::sync::Arc::new(rows), Some(model)))
}

/// Neighbour lists indexed by unit.
pub(crate) fn near_by_unit(units: usize, pairs: Lists) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); units];
    for (u, list) in pairs {
        if let Some(slot) = out.get_mut(u) {
            *slot = list;
        }
    }
    out
}

/// The embedding of every unit (its title and lead: `texts`, asked for only
/// when the embedder embeds), from the embedder or
/// the precomputed vectors (shared with the embedder when every document is
/// one unit: the matrix is never held twice): L2-normalised rows, one per
/// unit.
pub(crate) async fn embed_units(
    documents: usize,
    units: &[Unit],
    texts: impl FnOnce() -> Vec<String>,
    embedder: &Embedder,
    progress: &dyn Progress,
) -> Result<std::sync::Arc<Array2<f32>>> {
    progress.stage("embedding", units.len() as u64);
    let doc_rows: Vec<usize> = units.iter().map(|u| u.doc).collect();
    let embeddings = match embedder.document_vectors(documents, &doc_rows) {
        Some(vectors) => {
            progress.inc(units.len() as u64);
            vectors?
        }
        None => std::sync::Arc::new(embedder.embed(texts(), progress).await?),
    };
    if embeddings.nrows() != units.len() {
        return Err(Error::Cluster(format!(
            "the embedder returned {} vectors for {} documents",
            embeddings.nrows(),
            units.len()
        )));
    }
    Ok(embeddings)
}

/// Runs CPU-bound work from async code: on a multi-threaded runtime through
/// `block_in_place` (the other workers go on), else in place.
pub(crate) fn blocking<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_cluster_counts() {
        assert_eq!(default_clusters(5183, 100), 72);
        assert_eq!(default_clusters(100_000, 100), 1000);
        assert_eq!(default_clusters(1, 100), 1);
        assert_eq!(default_clusters(48, 100), 7);
    }

    #[test]
    fn params_are_checked() {
        assert!(TreeParams::default().branching(1).check().is_err());
        assert!(TreeParams::default().clusters(Some(0)).check().is_err());
        assert!(TreeParams::default().embed_sentences(0).check().is_err());
        assert!(TreeParams::default().check().is_ok());
    }
}

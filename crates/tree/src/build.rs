//! The build: documents → embeddings → k-means levels → summaries → tree.

use crate::cluster::{group_centroids, partition, partition_top_down, TopDown};
use crate::embed::Embedder;
use crate::id::NodeId;
use crate::model::{Node, NodeKind, Tree, TreeMeta};
use crate::summary::{class_tfidf, count_terms, ClusterFacts, Summarizer, SUMMARY_TERMS};
use crate::{Error, Progress, Result};
use ndarray::Array2;
use treenav_corpus::{chunk, Corpus, Document};

/// Parameters of a build, checked by [`TreeParams::check`] before any work.
///
/// ```
/// let params = treenav_tree::TreeParams::default().branching(64).seed(7).check()?;
/// assert_eq!(params.branching(), 64);
/// # Ok::<(), treenav_tree::Error>(())
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
            neighbours: crate::neighbours::DEFAULT_NEIGHBOURS,
            clustering: Clustering::TopDown,
            sample: DEFAULT_SAMPLE,
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
    /// and the sibling clusters; 0 stores none). By default, 16.
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

/// The default cluster count for `n` items under a branching limit:
/// max(round(√n), ⌈n / branching⌉), at most n.
pub fn default_clusters(n: usize, branching: usize) -> usize {
    let sqrt = (n as f64).sqrt().round() as usize;
    sqrt.max(n.div_ceil(branching.max(1))).clamp(1, n.max(1))
}

/// A document node to be: a whole document, or a part of one.
#[derive(Debug, Clone)]
struct Unit {
    doc: usize,
    part: Option<(u32, u32)>,
    passages: std::ops::Range<usize>,
}

fn units(corpus: &Corpus, branching: usize) -> Vec<Unit> {
    let mut out = Vec::new();
    for (doc, d) in corpus.documents.iter().enumerate() {
        let n = d.passages.len();
        if n <= branching {
            out.push(Unit {
                doc,
                part: None,
                passages: 0..n,
            });
            continue;
        }
        let parts = n.div_ceil(branching);
        let size = n.div_ceil(parts);
        for p in 0..parts {
            let start = p * size;
            out.push(Unit {
                doc,
                part: Some((p as u32 + 1, parts as u32)),
                passages: start..(start + size).min(n),
            });
        }
    }
    out
}

fn unit_doc<'c>(corpus: &'c Corpus, u: &Unit) -> Option<&'c Document> {
    corpus.documents.get(u.doc)
}

fn unit_lead(corpus: &Corpus, u: &Unit, sentences: usize) -> String {
    unit_doc(corpus, u)
        .and_then(|d| d.passages.get(u.passages.start))
        .map(|p| chunk::first_sentences(&p.text, sentences))
        .unwrap_or_default()
}

fn unit_title(corpus: &Corpus, u: &Unit) -> String {
    unit_doc(corpus, u)
        .map(|d| d.title.clone())
        .unwrap_or_default()
}

/// Cluster levels: `levels[0]` groups units, `levels[l]` groups the groups of `levels[l-1]`.
type Levels = Vec<Vec<Vec<usize>>>;

/// The cluster levels: `levels[0]` groups units, `levels[l]` groups the groups of `levels[l-1]`.
fn cluster_levels(
    embeddings: &Array2<f32>,
    params: &ValidTreeParams,
    progress: &dyn Progress,
) -> Result<Levels> {
    let b = params.branching();
    let n = embeddings.nrows();
    let split =
        |points: ndarray::ArrayView2<'_, f32>, k: usize, seed: u64, report: bool| match params
            .clustering()
        {
            Clustering::Flat => partition(points, k, b, seed),
            Clustering::TopDown => {
                // Leaves as large as the flat construction's clusters on
                // average: N / max(√N, N/b).
                let settings = TopDown {
                    branching: b,
                    leaf: points.nrows().div_ceil(k.max(1)),
                    sample: params.sample(),
                    seed,
                };
                let placed = |m: usize| {
                    if report {
                        progress.inc(m as u64);
                    }
                };
                partition_top_down(points, settings, &placed)
            }
        };
    let k = params
        .clusters()
        .unwrap_or_else(|| default_clusters(n, b))
        .clamp(1, n.max(1));
    let first = split(embeddings.view(), k, params.seed(), true)?;
    let mut points = group_centroids(embeddings.view(), &first);
    let mut levels = vec![first];
    while levels.last().map_or(0, Vec::len) > b {
        let count = points.nrows();
        let seed = params.seed().wrapping_add(levels.len() as u64 * 7919);
        let groups = split(points.view(), default_clusters(count, b), seed, false)?;
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

/// For every cluster of every level: the units beneath it, most central first.
fn members_by_level(levels: &[Vec<Vec<usize>>]) -> Vec<Vec<Vec<usize>>> {
    let mut out: Vec<Vec<Vec<usize>>> = Vec::with_capacity(levels.len());
    for (l, groups) in levels.iter().enumerate() {
        let level_members = if l == 0 {
            groups.clone()
        } else {
            let below = &out[l - 1];
            groups
                .iter()
                .map(|g| g.iter().flat_map(|c| below[*c].iter().copied()).collect())
                .collect()
        };
        out.push(level_members);
    }
    out
}

/// Builds a tree from a corpus: embeds each document's title and lead,
/// clusters with k-means into levels that respect the branching limit,
/// summarises each cluster and assembles the arena.
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
    let fingerprint = corpus.fingerprint();
    let b = params.branching();
    let units = units(&corpus, b);
    let texts: Vec<String> = units
        .iter()
        .map(|u| {
            let title = unit_title(&corpus, u);
            let lead = unit_lead(&corpus, u, params.embed_sentences());
            format!("{title}. {lead}")
        })
        .collect();

    progress.stage("embedding", texts.len() as u64);
    let doc_rows: Vec<usize> = units.iter().map(|u| u.doc).collect();
    let embeddings = match embedder.document_vectors(corpus.documents.len(), &doc_rows) {
        Some(vectors) => {
            progress.inc(texts.len() as u64);
            vectors?
        }
        None => embedder.embed(texts, progress).await?,
    };
    if embeddings.nrows() != units.len() {
        return Err(Error::Cluster(format!(
            "the embedder returned {} vectors for {} documents",
            embeddings.nrows(),
            units.len()
        )));
    }

    progress.stage("clustering", units.len() as u64);
    let corpus = std::sync::Arc::new(corpus);
    let (levels, facts, near) = blocking(|| plan(&corpus, &units, &embeddings, params, progress))?;

    progress.stage("summarising", facts.len() as u64);
    let terms: Vec<Vec<String>> = facts.iter().map(|f| f.terms.clone()).collect();
    let doc_counts: Vec<u32> = facts.iter().map(|f| f.member_ids.len() as u32).collect();
    let summaries = summarizer.summarize(facts, progress).await?;

    progress.stage("assembling", 1);
    let corpus = std::sync::Arc::try_unwrap(corpus).unwrap_or_else(|arc| (*arc).clone());
    let meta = TreeMeta {
        source: source.to_string(),
        embedder: embedder.describe(),
        summarizer: summarizer.describe(),
        branching: b as u32,
        seed: params.seed(),
        built_by: concat!("treenav ", env!("CARGO_PKG_VERSION")).to_string(),
        corpus: Some(fingerprint),
    };
    let tree = tokio::task::spawn_blocking(move || {
        let clusters = Clusters {
            levels: &levels,
            summaries,
            terms,
            doc_counts,
        };
        assemble(corpus, &units, clusters, &near, meta)
    })
    .await
    .map_err(|e| Error::Task(e.to_string()))??;
    progress.inc(1);
    Ok(tree)
}

/// Runs CPU-bound work from async code: on a multi-threaded runtime through
/// `block_in_place` (the other workers go on), else in place.
fn blocking<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// Clusters and gathers what the summariser needs, level by level (bottom
/// level first, clusters in order within a level).
fn plan(
    corpus: &Corpus,
    units: &[Unit],
    embeddings: &Array2<f32>,
    params: &ValidTreeParams,
    progress: &dyn Progress,
) -> Result<(Levels, Vec<ClusterFacts>, Vec<Vec<usize>>)> {
    let levels = cluster_levels(embeddings, params, progress)?;
    let near = crate::neighbours::nearest(
        embeddings,
        &levels[0],
        levels.get(1).map(Vec::as_slice),
        params.neighbours(),
    );
    // Each unit's title and passages, counted piece by piece (no copy of
    // the corpus's text).
    let (counts, vocab) = count_terms(units.iter().map(|u| {
        let passages = unit_doc(corpus, u)
            .map(|d| &d.passages[u.passages.clone()])
            .unwrap_or_default();
        std::iter::once(std::borrow::Cow::Owned(unit_title(corpus, u))).chain(
            passages
                .iter()
                .map(|p| std::borrow::Cow::Borrowed(p.text.as_str())),
        )
    }));
    let members = members_by_level(&levels);
    let mut facts = Vec::new();
    for (l, groups) in levels.iter().enumerate() {
        let terms = class_tfidf(&counts, &vocab, &members[l], SUMMARY_TERMS);
        for (c, group) in groups.iter().enumerate() {
            // Central titles: for the bottom level the most central members;
            // above, the most central document of each of the most central children.
            let central: Vec<usize> = if l == 0 {
                group.clone()
            } else {
                group
                    .iter()
                    .filter_map(|child| members[l - 1][*child].first().copied())
                    .collect()
            };
            facts.push(ClusterFacts {
                member_ids: members[l][c]
                    .iter()
                    .filter_map(|u| {
                        units
                            .get(*u)
                            .and_then(|u| unit_doc(corpus, u))
                            .map(|d| d.id.clone())
                    })
                    .collect(),
                central_titles: central
                    .iter()
                    .take(20)
                    .filter_map(|u| units.get(*u).map(|u| unit_title(corpus, u)))
                    .collect(),
                terms: terms.get(c).cloned().unwrap_or_default(),
            });
        }
    }
    Ok((levels, facts, near))
}

/// The cluster levels and what labels them.
struct Clusters<'a> {
    levels: &'a [Vec<Vec<usize>>],
    summaries: Vec<String>,
    terms: Vec<Vec<String>>,
    doc_counts: Vec<u32>,
}

/// The node arena being laid out.
struct Arena {
    nodes: Vec<Node>,
}

impl Arena {
    fn new() -> Arena {
        Arena {
            nodes: vec![Node {
                kind: NodeKind::Root,
                parent: None,
                children: Vec::new(),
            }],
        }
    }

    /// Adds a node under `parent` (listed last among its children).
    fn push(&mut self, kind: NodeKind, parent: NodeId) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(Node {
            kind,
            parent: Some(parent),
            children: Vec::new(),
        });
        self.nodes[parent.index()].children.push(id);
        id
    }
}

/// Lays out the arena top-down: root, clusters level by level, documents, passages.
fn assemble(
    mut corpus: Corpus,
    units: &[Unit],
    clusters: Clusters<'_>,
    near: &[Vec<usize>],
    meta: TreeMeta,
) -> Result<Tree> {
    let mut arena = Arena::new();
    let bottom = lay_clusters(&mut arena, &clusters)?;
    let mut unit_nodes: Vec<(usize, NodeId)> = Vec::with_capacity(units.len());
    for (g, group) in clusters.levels[0].iter().enumerate() {
        for &u in group {
            let kind = document_kind(&corpus, &units[u]);
            unit_nodes.push((u, arena.push(kind, bottom[g])));
        }
    }
    let mut node_of_unit = vec![NodeId(0); units.len()];
    for (u, node) in &unit_nodes {
        node_of_unit[*u] = *node;
    }
    for (u, node) in unit_nodes {
        let unit = &units[u];
        let passages = &mut corpus.documents[unit.doc].passages;
        for p in unit.passages.clone() {
            // Moved, not copied: the corpus is consumed.
            let passage = std::mem::replace(
                &mut passages[p],
                treenav_corpus::Passage {
                    id: String::new(),
                    text: String::new(),
                },
            );
            let kind = NodeKind::Passage {
                id: passage.id,
                text: passage.text,
            };
            arena.push(kind, node);
        }
    }
    let mut neighbours = Vec::new();
    if near.iter().any(|l| !l.is_empty()) {
        neighbours = vec![Vec::new(); arena.nodes.len()];
        for (u, list) in near.iter().enumerate() {
            neighbours[node_of_unit[u].index()] = list.iter().map(|v| node_of_unit[*v]).collect();
        }
    }
    Tree::with_neighbours(meta, arena.nodes, neighbours)
}

/// Lays out the cluster levels, top first, each cluster labelled with its
/// summary and terms; returns the nodes of the bottom level's clusters.
fn lay_clusters(arena: &mut Arena, clusters: &Clusters<'_>) -> Result<Vec<NodeId>> {
    let levels = clusters.levels;
    // Offsets of each level's clusters in the flat summaries list.
    let mut offsets = Vec::with_capacity(levels.len());
    let mut total = 0;
    for groups in levels {
        offsets.push(total);
        total += groups.len();
    }
    if clusters.summaries.len() != total || clusters.terms.len() != total {
        return Err(Error::Cluster(format!(
            "{} summaries for {total} clusters",
            clusters.summaries.len()
        )));
    }
    let cluster_kind = |flat: usize| NodeKind::Cluster {
        summary: clusters.summaries[flat].clone(),
        terms: clusters.terms[flat].clone(),
        documents: clusters.doc_counts[flat],
    };
    let top = levels.len() - 1;
    // ids[i] = node of item i of the level being laid out.
    let mut ids: Vec<NodeId> = (0..levels[top].len())
        .map(|c| arena.push(cluster_kind(offsets[top] + c), NodeId(0)))
        .collect();
    for l in (0..top).rev() {
        let mut next = vec![NodeId(0); levels[l].len()];
        for (g, group) in levels[l + 1].iter().enumerate() {
            for &child in group {
                next[child] = arena.push(cluster_kind(offsets[l] + child), ids[g]);
            }
        }
        ids = next;
    }
    Ok(ids)
}

/// The document node of a unit: its document's id, title, metadata and the
/// first sentence of the unit's first passage.
fn document_kind(corpus: &Corpus, unit: &Unit) -> NodeKind {
    let d = &corpus.documents[unit.doc];
    let lead = d
        .passages
        .get(unit.passages.start)
        .map(|p| chunk::first_sentences(&p.text, 1))
        .unwrap_or_default();
    NodeKind::Document {
        id: d.id.clone(),
        title: d.title.clone(),
        lead,
        part: unit.part,
        metadata: d.metadata.clone(),
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

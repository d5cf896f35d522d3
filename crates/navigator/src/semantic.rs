//! The tree's vectors at query time: what the embedding judge reads
//! ([`TreeVectors`] is its [`VectorSource`]) and the entry by meaning, a
//! descent of the cluster levels by centroid.
//!
//! Nothing here is an index: the query is embedded once, and only the
//! vectors of candidates the search shows are read (a passage's own
//! vector, else its document's), plus, for the descent, the centroids of
//! the clusters it passes and the documents of the leaves it reaches.

use crate::fusion::{FittedCascade, FittedFusion};
use crate::scope::Scope;
use futures::future::BoxFuture;
use std::sync::{Arc, OnceLock};
use treenav_judge::{Candidate, Similarities, VectorSource};
use treenav_tree::vectors::Centroids;
use treenav_tree::{LevelKind, NodeId, NodeKind, QueryEmbedder, Tree};

/// Query vectors kept (a query is judged in many calls).
const QUERIES_KEPT: usize = 64;

/// A query embedder with the last queries' vectors kept: a query is
/// judged in many calls, and embedded once.
pub(crate) struct Queries {
    embedder: QueryEmbedder,
    kept: quick_cache::sync::Cache<String, Arc<Vec<f32>>>,
}

impl Queries {
    pub(crate) fn new(embedder: QueryEmbedder) -> Queries {
        Queries {
            embedder,
            kept: quick_cache::sync::Cache::new(QUERIES_KEPT),
        }
    }

    /// The embedder as recorded, e.g. `onnx(bge-small-en, cls)`.
    pub(crate) fn describe(&self) -> &str {
        self.embedder.describe()
    }

    /// The query's unit vector (embedded once per query text).
    pub(crate) async fn vector(&self, query: &str) -> treenav_judge::Result<Arc<Vec<f32>>> {
        if let Some(v) = self.kept.get(query) {
            return Ok(v);
        }
        let rows = self.embed(vec![query.to_string()]).await?;
        let v: Vec<f32> = rows
            .rows()
            .into_iter()
            .next()
            .map_or_else(Vec::new, |r| r.to_vec());
        let v = Arc::new(v);
        self.kept.insert(query.to_string(), v.clone());
        Ok(v)
    }

    /// Unit rows for `texts`, in order.
    pub(crate) async fn embed(
        &self,
        texts: Vec<String>,
    ) -> treenav_judge::Result<ndarray::Array2<f32>> {
        self.embedder
            .embed(texts)
            .await
            .map_err(|e| embed_error(&e))
    }
}

/// The stored vectors of a tree, with its query embedder.
pub(crate) struct TreeVectors {
    tree: Arc<Tree>,
    queries: Queries,
    /// Fingerprint of each passage's and document's candidate id → node,
    /// sorted (built when a candidate was not made by the navigator).
    ids: OnceLock<Vec<(u64, NodeId)>>,
    /// Fingerprint of the candidate id → node of every candidate the
    /// navigator made ([`TreeVectors::remember`]): at most one entry a
    /// node. A tree read from a version-5 file then never reads every
    /// node's id to build `ids`.
    made: std::sync::RwLock<std::collections::HashMap<u64, NodeId>>,
    /// Each cluster's centroid (the normalised sum of its documents'
    /// vectors), summed at the first descent when the tree's vectors file
    /// did not bring them (an older file, or updates since the build).
    centroids: OnceLock<Centroids>,
    /// The fusion fitted for this embedder, if any (looked up once).
    fitted: Option<FittedFusion>,
}

impl std::fmt::Debug for TreeVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeVectors")
            .field("embedder", &self.queries.describe())
            .finish_non_exhaustive()
    }
}

/// The id a candidate node is shown under: a passage's id, a document's
/// (`#partI` for a part), `cluster-N` for a cluster.
pub(crate) fn candidate_id(tree: &Tree, id: NodeId) -> String {
    match tree.get(id).map(|n| &n.kind) {
        Some(NodeKind::Document { id: doc, part, .. }) => match part {
            Some((i, _)) => format!("{doc}#part{i}"),
            None => doc.clone(),
        },
        Some(NodeKind::Passage { id: p, .. }) => p.clone(),
        _ => format!("cluster-{}", id.0),
    }
}

fn key(id: &str) -> u64 {
    treenav_text::fingerprint(id.as_bytes()) as u64
}

impl TreeVectors {
    /// The vectors of `tree` read through `embedder` (its own).
    pub(crate) fn new(tree: Arc<Tree>, embedder: QueryEmbedder) -> TreeVectors {
        TreeVectors {
            fitted: crate::fusion::fitted_for(embedder.describe()),
            tree,
            queries: Queries::new(embedder),
            ids: OnceLock::new(),
            made: Default::default(),
            centroids: OnceLock::new(),
        }
    }

    /// The exploration's fusion fitted for this tree's embedder, if any.
    pub(crate) fn fitted_fusion(&self) -> Option<FittedFusion> {
        self.fitted
    }

    /// The cascade's model fitted for this tree's embedder and the judge
    /// of `kind`, if any.
    pub(crate) fn fitted_cascade(&self, kind: treenav_judge::BackendKind) -> Option<FittedCascade> {
        crate::fusion::fitted_cascade_for(self.queries.describe(), kind)
    }

    /// The query's unit vector (embedded once per query text).
    pub(crate) async fn query_vector(&self, query: &str) -> treenav_judge::Result<Arc<Vec<f32>>> {
        self.queries.vector(query).await
    }

    /// Notes that the candidate shown as `id` stands for `node`.
    pub(crate) fn remember(&self, id: &str, node: NodeId) {
        let k = key(id);
        let known = self.made.read().ok().and_then(|m| m.get(&k).copied());
        if known != Some(node) {
            if let Ok(mut made) = self.made.write() {
                made.insert(k, node);
            }
        }
    }

    /// The node a candidate stands for, by its id: one the navigator made
    /// and remembered, else looked up among every node's.
    fn node_of(&self, candidate: &Candidate) -> Option<NodeId> {
        let k = key(&candidate.id);
        let made = self.made.read().ok().and_then(|m| m.get(&k).copied());
        if let Some(n) = made.filter(|n| candidate_id(&self.tree, *n) == candidate.id) {
            return Some(n);
        }
        let ids = self.ids.get_or_init(|| {
            let mut ids: Vec<(u64, NodeId)> = self
                .tree
                .documents()
                .chain(self.tree.passages())
                .map(|n| (key(&candidate_id(&self.tree, n)), n))
                .collect();
            ids.sort_unstable();
            ids
        });
        let from = ids.partition_point(|(h, _)| *h < k);
        ids[from..]
            .iter()
            .take_while(|(h, _)| *h == k)
            .map(|(_, n)| *n)
            .find(|n| candidate_id(&self.tree, *n) == candidate.id)
    }

    /// The cosine of a node's stored vector with `q`: a passage's own,
    /// else its document's; a document's; a cluster's centroid. (Read from
    /// the tree's shape and vectors only: no node's labels are decoded.)
    pub(crate) fn cosine(&self, node: NodeId, q: &[f32]) -> Option<f32> {
        let passages = self.tree.passage_vectors();
        let documents = self.tree.document_vectors();
        match self.tree.level_of(node)? {
            LevelKind::Passage => passages.and_then(|v| v.dot_exact(node, q)).or_else(|| {
                let doc = self.tree.parent(node)?;
                documents?.dot_exact(doc, q)
            }),
            LevelKind::Document => documents?.dot_exact(node, q),
            LevelKind::Cluster => {
                let c = self.centroids()?.get(node)?;
                Some(c.iter().zip(q).map(|(a, b)| a * b).sum())
            }
        }
    }

    /// Every cluster's centroid: saved with the tree's vectors, else summed
    /// once from its documents' (`None`: the tree has no vectors).
    fn centroids(&self) -> Option<&Centroids> {
        let v = self.tree.document_vectors()?;
        match v.centroids() {
            Some(saved) => Some(saved),
            None => Some(self.centroids.get_or_init(|| Centroids::of(&self.tree, v))),
        }
    }

    /// The documents of the `beam` leaf clusters nearest `q` by a descent
    /// of the cluster levels (the best `beam` clusters kept at each level),
    /// in scope, the nearest leaf's first (each leaf's in tree order: their
    /// own vectors are read only when the search scores their passages);
    /// and the centroids read.
    pub(crate) fn descend(&self, q: &[f32], scope: &Scope, beam: usize) -> (Vec<NodeId>, u64) {
        let tree = &self.tree;
        let mut frontier = vec![tree.root()];
        let mut documents: Vec<NodeId> = Vec::new();
        let mut read = 0u64;
        while !frontier.is_empty() {
            let mut clusters: Vec<(NodeId, f32)> = Vec::new();
            for node in &frontier {
                for c in tree.children(*node) {
                    if !scope.allows(*c) {
                        continue;
                    }
                    match tree.level_of(*c) {
                        Some(LevelKind::Cluster) => {
                            let Some(cos) = self.cosine(*c, q) else {
                                continue;
                            };
                            read += 1;
                            clusters.push((*c, cos));
                        }
                        Some(LevelKind::Document) => documents.push(*c),
                        _ => {}
                    }
                }
            }
            clusters.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            clusters.truncate(beam);
            frontier = clusters.into_iter().map(|(c, _)| c).collect();
        }
        (documents, read)
    }

    /// The cosines of candidates with the query: stored vectors by node,
    /// the few without one (a passage an update added to a tree whose
    /// passages have vectors) embedded from their text.
    async fn score(
        &self,
        query: &str,
        candidates: &[Candidate],
    ) -> treenav_judge::Result<Similarities> {
        let q = self.query_vector(query).await?;
        let mut cosines = vec![0f32; candidates.len()];
        let mut missing: Vec<usize> = Vec::new();
        let mut read = 0u64;
        for (i, c) in candidates.iter().enumerate() {
            match self.node_of(c).and_then(|n| self.cosine(n, &q)) {
                Some(cos) => {
                    cosines[i] = cos;
                    read += 1;
                }
                None => missing.push(i),
            }
        }
        if !missing.is_empty() {
            let texts = missing
                .iter()
                .map(|i| candidates[*i].text.clone())
                .collect();
            let rows = self.queries.embed(texts).await?;
            for (i, row) in missing.iter().zip(rows.rows()) {
                cosines[*i] = row.iter().zip(q.iter()).map(|(a, b)| a * b).sum();
            }
        }
        Ok(Similarities {
            cosines,
            vectors_read: read,
        })
    }
}

impl VectorSource for TreeVectors {
    fn embedder(&self) -> String {
        self.queries.describe().to_string()
    }

    fn similarities<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
    ) -> BoxFuture<'a, treenav_judge::Result<Similarities>> {
        Box::pin(self.score(query, candidates))
    }
}

/// An embedder's failure as the judge's error.
fn embed_error(e: &treenav_tree::Error) -> treenav_judge::Error {
    treenav_judge::Error::config(format!("the embedding judge cannot embed: {e}"))
}

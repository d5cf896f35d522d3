//! Changing a loaded tree's arena in place: documents placed under their
//! nearest leaf cluster top-down by the clusters' centroids, leaves that
//! outgrow the branching limit split by 2-means, removed documents
//! detached, emptied leaves dropped, small leaves merged into their
//! nearest sibling, neighbour lists kept. Every node and list changed is
//! remembered, so that the delta holds what changed only.

use crate::{Error, Result};
use std::collections::{BTreeSet, HashMap, HashSet};
use treenav_tree::vectors::UnitVectors;
use treenav_tree::NodeId;
use treenav_tree::UpdateLog;
use treenav_tree::{Node, NodeKind};

/// A leaf smaller than its sibling leaves' mean size divided by this is
/// merged into its nearest sibling when both fit under the limit together
/// (the build's leaves vary in size; only one far below its family's goes).
const SMALL_LEAF: usize = 4;

/// The arena being changed and what changed.
pub(crate) struct Editor<'a> {
    pub(crate) nodes: &'a mut Vec<Node>,
    pub(crate) lists: &'a mut Vec<Vec<NodeId>>,
    pub(crate) vectors: &'a mut UnitVectors,
    /// Per cluster (and the root): the sum of its documents' vectors and
    /// their count.
    sums: HashMap<u32, (Vec<f32>, u32)>,
    /// Nodes changed or added.
    pub(crate) dirty: BTreeSet<u32>,
    /// Neighbour lists changed.
    pub(crate) dirty_lists: BTreeSet<u32>,
    /// Clusters made, split or merged: their labels are refreshed.
    touched: BTreeSet<u32>,
    /// Per leaf, the documents added to it or removed from it.
    moved: HashMap<u32, u32>,
    /// Documents removed in this update, with their neighbour lists.
    removed: HashMap<u32, Vec<NodeId>>,
    branching: usize,
    neighbours: usize,
    seed: u64,
    pub(crate) log: UpdateLog,
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

fn cosine_to_sum(v: &[f32], sum: &[f32]) -> f32 {
    let n = norm(sum);
    if n == 0.0 {
        return -1.0;
    }
    v.iter().zip(sum).map(|(a, b)| a * b).sum::<f32>() / n
}

impl<'a> Editor<'a> {
    pub(crate) fn new(
        nodes: &'a mut Vec<Node>,
        lists: &'a mut Vec<Vec<NodeId>>,
        vectors: &'a mut UnitVectors,
        branching: usize,
        neighbours: usize,
        seed: u64,
    ) -> Editor<'a> {
        let mut editor = Editor {
            nodes,
            lists,
            vectors,
            sums: HashMap::new(),
            dirty: BTreeSet::new(),
            dirty_lists: BTreeSet::new(),
            touched: BTreeSet::new(),
            moved: HashMap::new(),
            removed: HashMap::new(),
            branching,
            neighbours,
            seed,
            log: UpdateLog::default(),
        };
        editor.sum_below(NodeId(0));
        editor
    }

    /// Sums the document vectors under `id` (recording every cluster's).
    fn sum_below(&mut self, id: NodeId) -> (Vec<f32>, u32) {
        let dims = self.vectors.dims();
        let mut sum = vec![0f32; dims];
        let mut count = 0u32;
        let children = self.nodes[id.index()].children.clone();
        for c in children {
            match self.nodes[c.index()].kind {
                NodeKind::Document { .. } => {
                    if self.vectors.add_to(c, &mut sum) {
                        count += 1;
                    }
                }
                _ => {
                    let (s, n) = self.sum_below(c);
                    for (a, b) in sum.iter_mut().zip(&s) {
                        *a += b;
                    }
                    count += n;
                }
            }
        }
        self.sums.insert(id.0, (sum.clone(), count));
        (sum, count)
    }

    fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    fn is_doc(&self, id: NodeId) -> bool {
        matches!(self.node(id).kind, NodeKind::Document { .. })
    }

    /// Whether `id`'s children are documents (or it has none).
    fn holds_documents(&self, id: NodeId) -> bool {
        self.node(id)
            .children
            .first()
            .is_none_or(|c| self.is_doc(*c))
    }

    fn push(&mut self, node: Node) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(node);
        if !self.lists.is_empty() {
            self.lists.push(Vec::new());
        }
        self.dirty.insert(id.0);
        id
    }

    /// The leaf cluster a vector belongs under: from the root down, the
    /// child whose centroid is nearest, until the children are documents.
    pub(crate) fn place(&self, v: &[f32]) -> NodeId {
        let mut at = NodeId(0);
        while !self.holds_documents(at) {
            let best = self
                .node(at)
                .children
                .iter()
                .map(|c| {
                    let sim = self
                        .sums
                        .get(&c.0)
                        .map_or(-1.0, |(s, _)| cosine_to_sum(v, s));
                    (sim, *c)
                })
                .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1 .0.cmp(&a.1 .0)));
            match best {
                Some((_, c)) => at = c,
                None => break,
            }
        }
        at
    }

    /// Adds `delta` times `v` to the sums and counts of `id` and its
    /// ancestors, which are marked changed.
    fn add_along(&mut self, mut id: NodeId, v: &[f32], delta: f32) {
        loop {
            let entry = self
                .sums
                .entry(id.0)
                .or_insert_with(|| (vec![0f32; v.len()], 0));
            for (a, b) in entry.0.iter_mut().zip(v) {
                *a += delta * b;
            }
            entry.1 = (entry.1 as i64 + delta as i64).max(0) as u32;
            if let NodeKind::Cluster { documents, .. } = &mut self.nodes[id.index()].kind {
                *documents = (*documents as i64 + delta as i64).max(0) as u32;
                self.dirty.insert(id.0);
            }
            match self.node(id).parent {
                Some(p) => id = p,
                None => break,
            }
        }
    }

    /// Puts a new document node (with its passages) under its nearest
    /// leaf, splitting what outgrows the limit; returns its id (an error
    /// only when the tree's vectors no longer read from their file).
    pub(crate) fn insert(
        &mut self,
        kind: NodeKind,
        passages: Vec<NodeKind>,
        v: &[f32],
    ) -> treenav_tree::Result<NodeId> {
        let leaf = self.place(v);
        let doc = self.push(Node {
            kind,
            parent: Some(leaf),
            children: Vec::new(),
        });
        for p in passages {
            let id = self.push(Node {
                kind: p,
                parent: Some(doc),
                children: Vec::new(),
            });
            self.nodes[doc.index()].children.push(id);
        }
        self.vectors.set(doc, ndarray::ArrayView1::from(v))?;
        self.nodes[leaf.index()].children.push(doc);
        self.dirty.insert(leaf.0);
        *self.moved.entry(leaf.0).or_insert(0) += 1;
        self.add_along(leaf, v, 1.0);
        self.split_while_over(leaf);
        self.link(doc, v);
        Ok(doc)
    }

    /// Splits `id` while it has more children than the limit, then its
    /// parent, and so on up.
    fn split_while_over(&mut self, id: NodeId) {
        let mut pending = vec![id];
        while let Some(x) = pending.pop() {
            if self.node(x).children.len() <= self.branching {
                continue;
            }
            let (a, b) = self.split(x);
            pending.extend([a, b]);
            if let Some(p) = self.node(a).parent {
                pending.push(p);
            }
        }
    }

    /// The vector a child stands for when its parent is split: a
    /// document's own, a cluster's centroid.
    fn child_vector(&self, c: NodeId) -> Vec<f32> {
        if self.is_doc(c) {
            return self
                .vectors
                .get(c)
                .unwrap_or_else(|| vec![0.0; self.vectors.dims()]);
        }
        let (sum, _) = self
            .sums
            .get(&c.0)
            .cloned()
            .unwrap_or_else(|| (vec![0.0; self.vectors.dims()], 0));
        let n = norm(&sum).max(f32::MIN_POSITIVE);
        sum.iter().map(|x| x / n).collect()
    }

    /// Splits `x`'s children in two by 2-means (halves in order when
    /// k-means cannot part them). `x` keeps the first group; the second
    /// goes to a new sibling. The root is not split: its children move
    /// under two new clusters (every document one level deeper).
    fn split(&mut self, x: NodeId) -> (NodeId, NodeId) {
        self.log.splits += 1;
        let children = self.node(x).children.clone();
        let dims = self.vectors.dims();
        let mut points = ndarray::Array2::<f32>::zeros((children.len(), dims));
        for (i, c) in children.iter().enumerate() {
            points
                .row_mut(i)
                .assign(&ndarray::ArrayView1::from(&self.child_vector(*c)[..]));
        }
        let labels = treenav_cluster::kmeans(points.view(), 2, self.seed ^ u64::from(x.0));
        let mut groups: [Vec<NodeId>; 2] = [Vec::new(), Vec::new()];
        for (i, c) in children.iter().enumerate() {
            groups[labels.get(i).copied().unwrap_or(0).min(1)].push(*c);
        }
        if groups[0].is_empty() || groups[1].is_empty() {
            let half = children.len() / 2;
            groups = [children[..half].to_vec(), children[half..].to_vec()];
        }
        let [first, second] = groups;
        if x.0 == 0 {
            let a = self.new_cluster(x, first);
            let b = self.new_cluster(x, second);
            self.nodes[0].children = vec![a, b];
            self.dirty.insert(0);
            return (a, b);
        }
        let parent = self.node(x).parent.unwrap_or(NodeId(0));
        self.nodes[x.index()].children = first;
        let y = self.new_cluster(parent, second);
        let siblings = &mut self.nodes[parent.index()].children;
        siblings.retain(|c| *c != y);
        let at = siblings
            .iter()
            .position(|c| *c == x)
            .map_or(siblings.len(), |p| p + 1);
        siblings.insert(at, y);
        self.dirty.extend([x.0, parent.0]);
        self.resum(x);
        self.sort_by_centrality(x);
        if self.holds_documents(x) {
            self.touched.insert(x.0);
        }
        (x, y)
    }

    /// A new cluster under `parent` holding `children` (moved to it).
    fn new_cluster(&mut self, parent: NodeId, children: Vec<NodeId>) -> NodeId {
        let id = self.push(Node {
            kind: NodeKind::Cluster {
                summary: String::new(),
                terms: Vec::new(),
                documents: 0,
            },
            parent: Some(parent),
            children: Vec::new(),
        });
        for c in &children {
            self.nodes[c.index()].parent = Some(id);
            self.dirty.insert(c.0);
        }
        self.nodes[id.index()].children = children;
        self.nodes[parent.index()].children.push(id);
        self.resum(id);
        self.sort_by_centrality(id);
        self.touched.insert(id.0);
        id
    }

    /// Recomputes a cluster's sum and document count from its children.
    fn resum(&mut self, id: NodeId) {
        let dims = self.vectors.dims();
        let mut sum = vec![0f32; dims];
        let mut count = 0u32;
        for c in self.node(id).children.clone() {
            if self.is_doc(c) {
                if self.vectors.add_to(c, &mut sum) {
                    count += 1;
                }
            } else if let Some((s, n)) = self.sums.get(&c.0) {
                for (a, b) in sum.iter_mut().zip(s) {
                    *a += b;
                }
                count += n;
            }
        }
        let documents = self.documents_under(id);
        if let NodeKind::Cluster { documents: d, .. } = &mut self.nodes[id.index()].kind {
            *d = documents;
        }
        self.sums.insert(id.0, (sum, count));
        self.dirty.insert(id.0);
    }

    /// Document nodes beneath `id`.
    fn documents_under(&self, id: NodeId) -> u32 {
        self.node(id)
            .children
            .iter()
            .map(|c| match &self.node(*c).kind {
                NodeKind::Document { .. } => 1,
                NodeKind::Cluster { documents, .. } => *documents,
                _ => 0,
            })
            .sum()
    }

    /// Orders a leaf's documents most central first (as the build does).
    fn sort_by_centrality(&mut self, id: NodeId) {
        if !self.holds_documents(id) {
            return;
        }
        let Some((sum, _)) = self.sums.get(&id.0).cloned() else {
            return;
        };
        let n = norm(&sum).max(f32::MIN_POSITIVE);
        let centre: Vec<f32> = sum.iter().map(|x| x / n).collect();
        let probe = treenav_tree::vectors::Probe::new(&centre);
        let mut keyed: Vec<(f32, NodeId)> = self
            .node(id)
            .children
            .iter()
            .map(|c| (self.vectors.dot_probe(*c, &probe).unwrap_or(-1.0), *c))
            .collect();
        keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1 .0.cmp(&b.1 .0)));
        self.nodes[id.index()].children = keyed.into_iter().map(|(_, c)| c).collect();
    }

    /// The documents a document's neighbours are searched among: those of
    /// its leaf and of the leaves sharing its parent (as the build does).
    fn pool(&self, doc: NodeId) -> Vec<NodeId> {
        let Some(leaf) = self.node(doc).parent else {
            return Vec::new();
        };
        let family = match self.node(leaf).parent {
            Some(p) => self.node(p).children.clone(),
            None => vec![leaf],
        };
        family
            .iter()
            .flat_map(|l| {
                if self.is_doc(*l) {
                    vec![*l]
                } else {
                    self.node(*l).children.clone()
                }
            })
            .filter(|d| *d != doc && self.is_doc(*d))
            .collect()
    }

    /// Scores `candidates` against `v`, nearest first (ties: lower id).
    fn ranked(&self, v: &[f32], candidates: impl Iterator<Item = NodeId>) -> Vec<(f32, NodeId)> {
        let probe = treenav_tree::vectors::Probe::new(v);
        let mut scored: Vec<(f32, NodeId)> = candidates
            .filter_map(|c| Some((self.vectors.dot_probe(c, &probe)?, c)))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1 .0.cmp(&b.1 .0)));
        scored
    }

    /// Gives a new document its neighbour list, and puts it into the
    /// lists of the documents it is now among the nearest of.
    fn link(&mut self, doc: NodeId, v: &[f32]) {
        if self.lists.is_empty() || self.neighbours == 0 {
            return;
        }
        let pool = self.pool(doc);
        let ranked = self.ranked(v, pool.into_iter());
        self.lists[doc.index()] = ranked.iter().take(self.neighbours).map(|x| x.1).collect();
        self.dirty_lists.insert(doc.0);
        // Lists are near-symmetric: the documents nearest to the new one
        // are those whose lists it may enter.
        for &(sim, c) in ranked.iter().take(2 * self.neighbours) {
            let Some(cv) = self.vectors.get(c) else {
                continue;
            };
            let list = &self.lists[c.index()];
            let mut scored = self.ranked(&cv, list.iter().copied());
            if scored.len() >= self.neighbours && scored.last().is_some_and(|w| w.0 >= sim) {
                continue;
            }
            scored.push((sim, doc));
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1 .0.cmp(&b.1 .0)));
            scored.truncate(self.neighbours);
            self.lists[c.index()] = scored.into_iter().map(|x| x.1).collect();
            self.dirty_lists.insert(c.0);
        }
    }

    /// Detaches a document node and its passages, drops it from its leaf
    /// (an emptied leaf goes, a small one is merged into its nearest
    /// sibling). Neighbour lists are mended once for all removals by
    /// [`Editor::mend_lists`].
    pub(crate) fn remove(&mut self, doc: NodeId) -> Result<()> {
        let Some(leaf) = self.node(doc).parent else {
            return Ok(());
        };
        if self.documents_under(NodeId(0)) <= 1 {
            return Err(Error::Param(
                "removing the last document would leave an empty tree".into(),
            ));
        }
        let v = self
            .vectors
            .get(doc)
            .unwrap_or_else(|| vec![0.0; self.vectors.dims()]);
        self.add_along(leaf, &v, -1.0);
        self.nodes[leaf.index()].children.retain(|c| *c != doc);
        for p in std::mem::take(&mut self.nodes[doc.index()].children) {
            self.nodes[p.index()].parent = None;
            self.dirty.insert(p.0);
        }
        self.nodes[doc.index()].parent = None;
        self.dirty.extend([doc.0, leaf.0]);
        let list = match self.lists.get_mut(doc.index()) {
            Some(list) => {
                self.dirty_lists.insert(doc.0);
                std::mem::take(list)
            }
            None => Vec::new(),
        };
        self.removed.insert(doc.0, list);
        *self.moved.entry(leaf.0).or_insert(0) += 1;
        self.drop_if_empty(leaf);
        self.merge_if_small(leaf);
        Ok(())
    }

    /// Removes an emptied cluster from its parent, and so on up (never
    /// the root).
    fn drop_if_empty(&mut self, mut id: NodeId) {
        while id.0 != 0 && self.node(id).children.is_empty() {
            let Some(parent) = self.node(id).parent else {
                return;
            };
            self.nodes[parent.index()].children.retain(|c| *c != id);
            self.nodes[id.index()].parent = None;
            self.dirty.extend([id.0, parent.0]);
            self.touched.remove(&id.0);
            self.log.merges += 1;
            id = parent;
        }
    }

    /// Merges a leaf far below its sibling leaves (and the limit) into the
    /// nearest of them when both fit under the limit together. Far below
    /// its siblings, not only below the limit: a small corpus's build makes
    /// leaves of a few documents under a limit of 100, and one removal
    /// there must not fold its leaf away (6 clusters became 2 after six
    /// small updates of a 31-document tree).
    fn merge_if_small(&mut self, leaf: NodeId) {
        let size = self.node(leaf).children.len();
        let Some(parent) = self.node(leaf).parent else {
            return;
        };
        let siblings: Vec<usize> = self
            .node(parent)
            .children
            .iter()
            .filter(|s| **s != leaf && !self.is_doc(**s) && self.holds_documents(**s))
            .map(|s| self.node(*s).children.len())
            .collect();
        if siblings.is_empty() {
            return;
        }
        let typical = siblings.iter().sum::<usize>() as f64 / siblings.len() as f64;
        if leaf.0 == 0
            || size == 0
            || (size * SMALL_LEAF) as f64 >= typical.min(self.branching as f64)
        {
            return;
        }
        let centre = self.child_vector(leaf);
        let nearest = self
            .node(parent)
            .children
            .iter()
            .filter(|s| **s != leaf && !self.is_doc(**s) && self.holds_documents(**s))
            .filter(|s| self.node(**s).children.len() + size <= self.branching)
            .map(|s| (cosine_to_sum(&centre, &self.child_vector(*s)), *s))
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1 .0.cmp(&a.1 .0)));
        let Some((_, into)) = nearest else { return };
        let moved = std::mem::take(&mut self.nodes[leaf.index()].children);
        for d in &moved {
            self.nodes[d.index()].parent = Some(into);
            self.dirty.insert(d.0);
        }
        self.nodes[into.index()].children.extend(moved);
        self.resum(into);
        self.sort_by_centrality(into);
        self.touched.insert(into.0);
        self.drop_if_empty(leaf);
    }

    /// The clusters whose labels are to be refreshed: those made, split or
    /// merged, and the leaves where a tenth or more of the documents came
    /// or went in this update (a leaf that gains one document in fifty
    /// keeps its label: relabelling reads its whole family).
    pub(crate) fn to_relabel(&self) -> BTreeSet<u32> {
        let mut out = self.touched.clone();
        for (leaf, moved) in &self.moved {
            let size = self
                .nodes
                .get(*leaf as usize)
                .map_or(0, |n| n.children.len());
            if self
                .nodes
                .get(*leaf as usize)
                .is_some_and(|n| n.parent.is_some() || *leaf == 0)
                && (*moved as usize) * 10 >= size
            {
                out.insert(*leaf);
            }
        }
        out
    }

    /// Drops removed documents from every neighbour list; a list that lost
    /// some is refilled from the removed documents' own lists (their
    /// neighbours are the likeliest replacements, as in FreshDiskANN's
    /// delete repair).
    pub(crate) fn mend_lists(&mut self) {
        if self.removed.is_empty() || self.lists.is_empty() {
            return;
        }
        let removed = std::mem::take(&mut self.removed);
        let gone = |n: &NodeId| removed.contains_key(&n.0);
        let hit: Vec<usize> = (0..self.lists.len())
            .filter(|i| self.lists[*i].iter().any(gone))
            .collect();
        for i in hit {
            let me = NodeId(i as u32);
            let mut candidates: HashSet<NodeId> = HashSet::new();
            for n in &self.lists[i] {
                match removed.get(&n.0) {
                    Some(theirs) => candidates.extend(theirs.iter().copied()),
                    None => {
                        candidates.insert(*n);
                    }
                }
            }
            candidates.remove(&me);
            candidates.retain(|c| !gone(c) && self.node(*c).parent.is_some());
            self.dirty_lists.insert(me.0);
            let Some(v) = self.vectors.get(me) else {
                self.lists[i].retain(|n| !gone(n));
                continue;
            };
            let mut ranked = self.ranked(&v, candidates.into_iter());
            ranked.truncate(self.neighbours);
            self.lists[i] = ranked.into_iter().map(|x| x.1).collect();
        }
    }
}

//! The corpus tree: an arena of nodes (root → clusters → documents → passages)
//! that petgraph can view.

use crate::id::NodeId;
use crate::lexical::{DocumentIndex, Lexical};
use crate::node::Tag;
use crate::node::{LevelKind, Node, NodeKind, TreeMeta};
use crate::nodes::Nodes;
use crate::store::TextStore;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Arc;

/// What updates changed since the build (or the last compaction).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateLog {
    /// Updates applied.
    pub updates: u64,
    /// Documents added (a replaced document counts once here).
    pub added: u64,
    /// Documents removed (a replaced document counts once here too).
    pub removed: u64,
    /// Leaf clusters split because they outgrew the branching limit.
    pub splits: u64,
    /// Leaf clusters merged into a sibling, or removed when emptied.
    pub merges: u64,
}

/// A document as the tree holds it: id, title, its passages' (id, text).
type HeldDocument<'a> = (&'a str, &'a str, Vec<(&'a str, String)>);

/// The corpus tree.
///
/// Passage texts are held in the nodes (a built tree, or a file older than
/// format version 4) or in a text store beside the tree file, read one
/// passage at a time: ask [`Tree::passage_text`], not the node.
#[derive(Debug, Clone)]
pub struct Tree {
    meta: TreeMeta,
    /// The nodes and, per node (by index), for a document node its nearest
    /// documents in the build embedding, nearest first (empty for other
    /// nodes; none at all for trees built without neighbour lists, format
    /// version 1): in memory, or read from a version-5 file as asked for.
    nodes: Nodes,
    /// Where passage texts are when not in the nodes.
    texts: Option<Arc<Texts>>,
    /// The lexical index and statistics read from beside the tree file.
    lexical: Option<Lexical>,
    /// The analyzer a lexical side computed for this tree uses.
    analyzer: treenav_text::analyzer::Analyzer,
    /// The build embedding of every document node, kept for updates
    /// (written beside the tree when it is saved).
    vectors: Option<Arc<crate::vectors::UnitVectors>>,
    /// The build embedding of every passage node (its document's title and
    /// its own text), what the embedding judge scores at query time
    /// (written beside the tree when it is saved).
    passage_vectors: Option<Arc<crate::vectors::UnitVectors>>,
    /// What updates since the build changed (none for a tree as built).
    updates: Option<UpdateLog>,
}

/// A text store and each passage node's number in it.
#[derive(Debug)]
struct Texts {
    store: TextStore,
    /// Node index → passage number (`u32::MAX` for other nodes).
    ordinal: Vec<u32>,
}

/// Equal trees: the same metadata, neighbour lists and nodes, passage texts
/// compared as read (wherever they are held).
impl PartialEq for Tree {
    fn eq(&self, other: &Tree) -> bool {
        let n = self.len();
        if self.meta != other.meta
            || n != other.len()
            || self.nodes.lists() != other.nodes.lists()
            || (0..self.nodes.lists())
                .any(|i| self.nodes.neighbours(i) != other.nodes.neighbours(i))
        {
            return false;
        }
        (0..n).all(|i| match (self.nodes.get(i), other.nodes.get(i)) {
            (Some(a), Some(b)) => match (&a.kind, &b.kind) {
                (NodeKind::Passage { id: x, .. }, NodeKind::Passage { id: y, .. }) => {
                    let id = NodeId(i as u32);
                    x == y
                        && a.parent == b.parent
                        && a.children == b.children
                        && matches!(
                            (self.passage_text(id), other.passage_text(id)),
                            (Ok(s), Ok(t)) if s == t
                        )
                }
                _ => a == b,
            },
            _ => false,
        })
    }
}

/// Counts of one depth of the tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelStats {
    /// Depth below the root (root's children are depth 1).
    pub depth: usize,
    /// Node kind at this depth.
    pub kind: &'static str,
    /// Number of nodes.
    pub nodes: usize,
    /// Fewest children of a node at this depth (0 for leaves).
    pub min_children: usize,
    /// Mean children.
    pub mean_children: f64,
    /// Most children.
    pub max_children: usize,
}

impl Tree {
    /// Assembles a tree from an arena and checks it (see [`Tree::validate`]).
    pub fn from_parts(meta: TreeMeta, nodes: Vec<Node>) -> Result<Tree> {
        Tree::with_neighbours(meta, nodes, Vec::new())
    }

    /// Assembles a tree with neighbour lists (`neighbours[i]` for node `i`:
    /// documents nearest to document `i`, nearest first; empty for other
    /// nodes, or empty as a whole for none) and checks it.
    pub fn with_neighbours(
        meta: TreeMeta,
        nodes: Vec<Node>,
        neighbours: Vec<Vec<NodeId>>,
    ) -> Result<Tree> {
        Tree::of_nodes(meta, Nodes::Held { nodes, neighbours })
    }

    /// Assembles a tree whose nodes are read from a version-5 file as
    /// asked for, unchecked: the caller runs [`Tree::validate`] before any
    /// use beyond its shape's arrays.
    pub(crate) fn mapped_unchecked(meta: TreeMeta, file: crate::mapped::Mapped) -> Tree {
        let file = Arc::new(file);
        Tree::unchecked(meta, Nodes::Mapped { file, lists: true })
    }

    fn of_nodes(meta: TreeMeta, nodes: Nodes) -> Result<Tree> {
        let tree = Tree::unchecked(meta, nodes);
        tree.validate()?;
        Ok(tree)
    }

    fn unchecked(meta: TreeMeta, nodes: Nodes) -> Tree {
        Tree {
            meta,
            nodes,
            texts: None,
            lexical: None,
            analyzer: Default::default(),
            vectors: None,
            passage_vectors: None,
            updates: None,
        }
    }

    /// A passage's text: from its node, or read from the text store beside
    /// the tree file. An error for a node that is not a passage, or when
    /// the store cannot be read.
    pub fn passage_text(&self, id: NodeId) -> Result<Cow<'_, str>> {
        let not_passage = || Error::InvalidTree(format!("node {} is not a passage", id.0));
        if self.tag(id) != Some(Tag::Passage) {
            return Err(not_passage());
        }
        // Passages added since the store was written hold their text.
        match self.texts.as_ref().and_then(|t| {
            let i = t.ordinal.get(id.index()).copied()?;
            (i != u32::MAX).then_some((t, i))
        }) {
            Some((texts, i)) => texts.store.get(i as usize).map(Cow::Owned),
            None => match self.get(id).map(|n| &n.kind) {
                Some(NodeKind::Passage { text, .. }) => Ok(Cow::Borrowed(text)),
                _ => Err(not_passage()),
            },
        }
    }

    /// Where the passage texts are read from: `None` when they are held in
    /// the nodes.
    pub fn text_store(&self) -> Option<&TextStore> {
        self.texts.as_ref().map(|t| &t.store)
    }

    /// Passage texts are read from `store` from now on (the nodes' own
    /// texts are dropped). The store must hold one text per passage, in
    /// node order.
    pub(crate) fn attach_texts(&mut self, store: TextStore) -> Result<()> {
        let mut ordinal = vec![u32::MAX; self.len()];
        let mut next = 0u32;
        for (i, slot) in ordinal.iter_mut().enumerate() {
            if self.nodes.tag(i) == Some(Tag::Passage) {
                *slot = next;
                next += 1;
            }
        }
        // Held nodes drop their own texts (a version-5 file's are empty).
        if let Nodes::Held { nodes, .. } = &mut self.nodes {
            for node in nodes {
                if let NodeKind::Passage { text, .. } = &mut node.kind {
                    *text = String::new();
                }
            }
        }
        if next as usize != store.len() {
            return Err(Error::BadFile {
                path: store.path().to_path_buf(),
                problem: format!("holds {} passages, the tree has {next}", store.len()),
            });
        }
        self.texts = Some(Arc::new(Texts { store, ordinal }));
        Ok(())
    }

    /// A side file this tree reads from (its text store or lexical index)
    /// that was written over in place since it was loaded, or whose
    /// tantivy files a read found damaged: its data no longer match the
    /// tree. Replace trees by writing new files and renaming them over the
    /// old (as `treenav build` does), then reload.
    pub fn changed_on_disk(&self) -> Option<&std::path::Path> {
        let texts = self.texts.as_ref().and_then(|t| t.store.changed());
        let lexical = self.lexical.as_ref();
        texts
            .or_else(|| lexical?.file.as_ref()?.changed())
            .or_else(|| lexical.filter(|l| l.index.is_damaged())?.index.folder())
    }

    /// The lexical index and statistics stored beside the tree file, if it
    /// was loaded with them (format versions 4 and 5).
    pub fn lexical(&self) -> Option<&Lexical> {
        self.lexical.as_ref()
    }

    /// A BM25 index over the document nodes (title, then all passages):
    /// the navigator's lexical entry.
    pub fn document_index(&self) -> Result<DocumentIndex> {
        self.document_index_with(self.analyzer())
    }

    /// [`Tree::document_index`] with another analyzer.
    pub(crate) fn document_index_with(
        &self,
        analyzer: treenav_text::analyzer::Analyzer,
    ) -> Result<DocumentIndex> {
        let mut documents = Vec::new();
        for id in self.documents() {
            let Some(node) = self.get(id) else { continue };
            let NodeKind::Document { title, .. } = &node.kind else {
                continue;
            };
            let mut text = title.clone();
            for p in self.children(id) {
                text.push('\n');
                text.push_str(&self.passage_text(*p)?);
            }
            documents.push((id, text));
        }
        DocumentIndex::new(analyzer, documents)
    }

    /// The passage statistics (document frequencies over passages) the
    /// lexical judge computes its IDF with.
    pub fn passage_stats(&self) -> Result<treenav_text::stats::CorpusStats> {
        // Borrowed from the nodes when they hold the texts; read otherwise.
        let texts = self
            .passages()
            .map(|p| self.passage_text(p))
            .collect::<Result<Vec<Cow<'_, str>>>>()?;
        Ok(treenav_text::stats::CorpusStats::from_many(
            self.analyzer(),
            &texts,
        ))
    }

    /// The lexical index and statistics: as stored beside the tree file, or
    /// computed.
    pub fn lexical_or_computed(&self) -> Result<Lexical> {
        match &self.lexical {
            Some(l) => Ok(l.clone()),
            None => self.lexical_computed(),
        }
    }

    /// The lexical side computed from the tree with its analyzer.
    fn lexical_computed(&self) -> Result<Lexical> {
        Ok(Lexical {
            index: Arc::new(self.document_index()?),
            stats: Arc::new(self.passage_stats()?),
            path: None,
            file: None,
            layout_1: false,
        })
    }

    /// The lexical side to save: the stored one, or a new one for trees
    /// without one or with layout 1's (saving such a tree upgrades it to
    /// tantivy and the tree's analyzer).
    pub(crate) fn lexical_for_saving(&self) -> Result<Lexical> {
        match &self.lexical {
            Some(l) if !l.is_layout_1() => Ok(l.clone()),
            _ => self.lexical_computed(),
        }
    }

    /// The analyzer of the tree's lexical side: its stored statistics', or
    /// the one set for computing it (by default `en-stem`).
    pub fn analyzer(&self) -> treenav_text::analyzer::Analyzer {
        match &self.lexical {
            Some(l) if !l.is_layout_1() => l.stats.analyzer,
            _ => self.analyzer,
        }
    }

    /// Sets the analyzer a lexical side computed from now on uses (a stored
    /// one keeps its own).
    pub fn set_analyzer(&mut self, analyzer: treenav_text::analyzer::Analyzer) {
        self.analyzer = analyzer;
    }

    pub(crate) fn attach_lexical(&mut self, lexical: Lexical) {
        self.lexical = Some(lexical);
    }

    /// Whether the tree stores neighbour lists (trees of format version 1 do not).
    pub fn has_neighbours(&self) -> bool {
        self.nodes.lists() > 0
    }

    /// A document's nearest documents in the build embedding, nearest first
    /// (empty for other nodes and for trees without neighbour lists).
    pub fn neighbours(&self, id: NodeId) -> &[NodeId] {
        self.nodes.neighbours(id.index())
    }

    /// The tree without its neighbour lists (as a version-1 file holds it).
    pub fn without_neighbours(mut self) -> Tree {
        self.nodes.drop_lists();
        self
    }

    /// Its parts, passage texts in the nodes (read from the store if need be).
    pub(crate) fn into_parts(self) -> Result<(TreeMeta, Vec<Node>, Vec<Vec<NodeId>>)> {
        let (mut nodes, lists) = self.nodes.copied()?;
        if self.texts.is_some() {
            for (i, node) in nodes.iter_mut().enumerate() {
                if let NodeKind::Passage { text, .. } = &mut node.kind {
                    *text = self.passage_text(NodeId(i as u32))?.into_owned();
                }
            }
        }
        Ok((self.meta, nodes, lists))
    }

    /// How the tree was built.
    pub fn meta(&self) -> &TreeMeta {
        &self.meta
    }

    /// The root (always node 0).
    pub fn root(&self) -> NodeId {
        NodeId(0)
    }

    /// All nodes in arena order (the [`NodeId::index`] of each is its
    /// place). A tree read from a version-5 file decodes every node it has
    /// not yet read: an error when part of the file no longer reads.
    pub fn nodes(&self) -> Result<impl Iterator<Item = &Node> + '_> {
        self.nodes.all()
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree has no node (never true for a checked tree).
    pub fn is_empty(&self) -> bool {
        self.nodes.len() == 0
    }

    /// A node; `None` when the id is not in this tree (or, for a tree read
    /// from a version-5 file, when the part of the file that holds the
    /// node no longer reads: logged).
    pub fn get(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id.index())
    }

    /// A node's children (empty for an unknown id), without decoding it.
    pub fn children(&self, id: NodeId) -> &[NodeId] {
        self.nodes.children(id.index())
    }

    /// A node's parent (`None` for the root, a removed node or an unknown
    /// id), without decoding it.
    pub fn parent(&self, id: NodeId) -> Option<NodeId> {
        self.nodes.parent(id.index())
    }

    /// A node's level kind (`None` for the root or an unknown id), without
    /// decoding it.
    pub fn level_of(&self, id: NodeId) -> Option<LevelKind> {
        match self.tag(id)? {
            Tag::Root => None,
            Tag::Cluster => Some(LevelKind::Cluster),
            Tag::Document => Some(LevelKind::Document),
            Tag::Passage => Some(LevelKind::Passage),
        }
    }

    /// How many record chunks of a version-5 file were read so far
    /// (`None` for held nodes).
    #[cfg(test)]
    pub(crate) fn chunks_read(&self) -> Option<usize> {
        match &self.nodes {
            Nodes::Mapped { file, .. } => Some(file.chunks_read()),
            Nodes::Held { .. } => None,
        }
    }

    pub(crate) fn tag(&self, id: NodeId) -> Option<Tag> {
        self.nodes.tag(id.index())
    }

    /// Whether the nodes are read from the tree file as they are asked for
    /// (format version 5), rather than held in memory.
    pub fn reads_nodes_lazily(&self) -> bool {
        self.nodes.is_mapped()
    }

    /// The path from the root to `id`, both included.
    pub fn path(&self, id: NodeId) -> Vec<NodeId> {
        let mut path = vec![id];
        let mut current = id;
        while let Some(parent) = self.parent(current) {
            path.push(parent);
            current = parent;
        }
        path.reverse();
        path
    }

    /// Nodes grouped by depth: `levels()[0]` is the root, the last the passages.
    pub fn levels(&self) -> Vec<Vec<NodeId>> {
        let mut levels = vec![vec![self.root()]];
        loop {
            let next: Vec<NodeId> = levels
                .last()
                .map(|l| {
                    l.iter()
                        .flat_map(|id| self.children(*id).iter().copied())
                        .collect()
                })
                .unwrap_or_default();
            if next.is_empty() {
                return levels;
            }
            levels.push(next);
        }
    }

    /// Ids of the document nodes (parts count separately).
    pub fn documents(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.ids_of(LevelKind::Document)
    }

    /// Ids of the passage nodes.
    pub fn passages(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.ids_of(LevelKind::Passage)
    }

    /// Ids of the nodes of a level kind, in arena order, without those an
    /// update removed; none is decoded.
    pub fn ids_of(&self, kind: LevelKind) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.len())
            .map(|i| NodeId(i as u32))
            .filter(move |id| self.level_of(*id) == Some(kind) && self.parent(*id).is_some())
    }

    /// Whether node `i` was removed by an update: it is not the root and
    /// has no parent (it stays in the arena, unreachable, until the tree
    /// is compacted, so that node ids stay stable).
    pub fn is_removed(&self, id: NodeId) -> bool {
        id.index() != 0 && id.index() < self.len() && self.parent(id).is_none()
    }

    /// The arena and its neighbour lists, to be changed by an update
    /// (`treenav-builder`'s, which must [`Tree::validate`] the result before
    /// saving: nothing here keeps the tree's invariants).
    /// A tree read from a version-5 file decodes its nodes whole first:
    /// an error when part of the file no longer reads.
    pub fn parts_mut(&mut self) -> Result<(&mut Vec<Node>, &mut Vec<Vec<NodeId>>)> {
        self.nodes.held_mut()
    }

    /// The build embedding of the documents, when the tree was built or
    /// loaded with it.
    pub(crate) fn vectors(&self) -> Option<&Arc<crate::vectors::UnitVectors>> {
        self.vectors.as_ref()
    }

    /// Sets (or drops) the documents' build embedding.
    pub fn set_vectors(&mut self, vectors: Option<Arc<crate::vectors::UnitVectors>>) {
        self.vectors = vectors;
    }

    /// The build embedding of the documents (title and lead), when the
    /// tree was built or loaded with it.
    pub fn document_vectors(&self) -> Option<&Arc<crate::vectors::UnitVectors>> {
        self.vectors.as_ref()
    }

    /// The build embedding of the passages (title and text), when the tree
    /// was built or loaded with it: what the embedding judge scores.
    pub fn passage_vectors(&self) -> Option<&Arc<crate::vectors::UnitVectors>> {
        self.passage_vectors.as_ref()
    }

    /// Sets (or drops) the passages' build embedding.
    pub fn set_passage_vectors(&mut self, vectors: Option<Arc<crate::vectors::UnitVectors>>) {
        self.passage_vectors = vectors;
    }

    /// What updates since the build changed (`None` for a tree as built
    /// or compacted).
    pub fn updates(&self) -> Option<&UpdateLog> {
        self.updates.as_ref()
    }

    pub(crate) fn set_updates(&mut self, log: Option<UpdateLog>) {
        self.updates = log;
    }

    /// The tree with the nodes updates removed dropped and the others
    /// renumbered in arena order; passage texts held in the nodes, no
    /// lexical side (a save computes it), the vectors renumbered too.
    pub fn compacted(&self) -> Result<Tree> {
        let mut new_id = vec![u32::MAX; self.len()];
        let mut next = 0u32;
        for (i, slot) in new_id.iter_mut().enumerate() {
            if !self.is_removed(NodeId(i as u32)) {
                *slot = next;
                next += 1;
            }
        }
        let map = |id: NodeId| {
            new_id
                .get(id.index())
                .copied()
                .filter(|n| *n != u32::MAX)
                .map(NodeId)
        };
        let mut nodes = Vec::with_capacity(next as usize);
        for (i, node) in self.nodes()?.enumerate() {
            let id = NodeId(i as u32);
            if self.is_removed(id) {
                continue;
            }
            let mut node = node.clone();
            if let NodeKind::Passage { text, .. } = &mut node.kind {
                *text = self.passage_text(id)?.into_owned();
            }
            node.parent = node.parent.and_then(map);
            node.children = node.children.iter().filter_map(|c| map(*c)).collect();
            nodes.push(node);
        }
        let neighbours = (0..self.nodes.lists())
            .filter(|i| !self.is_removed(NodeId(*i as u32)))
            .map(|i| {
                let list = self.nodes.neighbours(i);
                list.iter().filter_map(|n| map(*n)).collect()
            })
            .collect();
        let mut tree = Tree::with_neighbours(self.meta.clone(), nodes, neighbours)?;
        tree.analyzer = self.analyzer();
        let renumbered = |v: &Option<Arc<crate::vectors::UnitVectors>>| -> Result<_> {
            v.as_ref()
                .map(|v| v.renumbered(map).map(Arc::new))
                .transpose()
        };
        tree.vectors = renumbered(&self.vectors)?;
        tree.passage_vectors = renumbered(&self.passage_vectors)?;
        // Updates changed what the tree holds since its build: it records
        // the fingerprint of what it holds now, not its build's.
        if self.updates.is_some() {
            tree.meta.corpus = Some(tree.held_fingerprint()?);
        }
        Ok(tree)
    }

    /// The [`treenav_corpus::Fingerprint`] of the documents the tree holds,
    /// in tree order.
    fn held_fingerprint(&self) -> Result<treenav_corpus::Fingerprint> {
        let held = self.held_documents()?;
        Ok(treenav_corpus::fingerprint_of(held.iter().map(
            |(id, title, passages)| {
                let refs = passages.iter().map(|(p, t)| (*p, t.as_str()));
                (*id, *title, refs.collect())
            },
        )))
    }

    /// The documents the tree holds in tree order, as (id, title, its
    /// passages' (id, text)), a document's parts joined in part order.
    fn held_documents(&self) -> Result<Vec<HeldDocument<'_>>> {
        let mut order: Vec<&str> = Vec::new();
        let mut parts: std::collections::HashMap<&str, Vec<(u32, NodeId)>> = Default::default();
        for d in self.documents() {
            if let Some(NodeKind::Document { id, part, .. }) = self.get(d).map(|n| &n.kind) {
                let nodes = parts.entry(id).or_default();
                if nodes.is_empty() {
                    order.push(id);
                }
                nodes.push((part.map_or(0, |p| p.0), d));
            }
        }
        let mut documents = Vec::with_capacity(order.len());
        for id in order {
            let mut nodes = parts.remove(id).unwrap_or_default();
            nodes.sort_unstable();
            let mut title = "";
            let mut passages: Vec<(&str, String)> = Vec::new();
            for (_, d) in &nodes {
                if let Some(NodeKind::Document { title: t, .. }) = self.get(*d).map(|n| &n.kind) {
                    title = t;
                }
                for p in self.children(*d) {
                    if let Some(NodeKind::Passage { id, .. }) = self.get(*p).map(|n| &n.kind) {
                        passages.push((id, self.passage_text(*p)?.into_owned()));
                    }
                }
            }
            documents.push((id, title, passages));
        }
        Ok(documents)
    }

    /// The [`treenav_corpus::ContentDigest`] of the documents the tree
    /// holds now (parts of a document joined in part order), to compare
    /// with a corpus's when the tree's recorded fingerprint is its build's
    /// and updates changed it since.
    pub fn content_digest(&self) -> Result<treenav_corpus::ContentDigest> {
        let mut out = treenav_corpus::ContentDigest {
            documents: 0,
            passages: 0,
            sum: 0,
        };
        for (id, title, passages) in self.held_documents()? {
            let refs = passages.iter().map(|(i, t)| (*i, t.as_str()));
            out.add(
                treenav_corpus::document_digest(id, title, refs),
                passages.len() as u64,
            );
        }
        Ok(out)
    }

    /// The lexical side, to be changed by an update (`treenav-builder`'s:
    /// its index commit names the update's generation).
    pub fn lexical_mut(&mut self) -> Option<&mut Lexical> {
        self.lexical.as_mut()
    }

    /// Per-depth counts, for `treenav inspect`.
    pub fn level_stats(&self) -> Vec<LevelStats> {
        self.levels()
            .into_iter()
            .enumerate()
            .skip(1)
            .map(|(depth, ids)| {
                let counts: Vec<usize> = ids.iter().map(|id| self.children(*id).len()).collect();
                let kind = ids
                    .first()
                    .and_then(|id| self.get(*id))
                    .map(|n| n.kind.name())
                    .unwrap_or("empty");
                LevelStats {
                    depth,
                    kind,
                    nodes: ids.len(),
                    min_children: counts.iter().copied().min().unwrap_or(0),
                    mean_children: counts.iter().sum::<usize>() as f64 / counts.len().max(1) as f64,
                    max_children: counts.iter().copied().max().unwrap_or(0),
                }
            })
            .collect()
    }

    /// A petgraph view of the tree (node weights are the arena ids; edges go parent → child).
    pub fn graph(&self) -> petgraph::graph::DiGraph<NodeId, ()> {
        let mut g = petgraph::graph::DiGraph::with_capacity(self.len(), self.len());
        for i in 0..self.len() {
            g.add_node(NodeId(i as u32));
        }
        for i in 0..self.len() {
            for c in self.nodes.children(i) {
                g.add_edge(
                    petgraph::graph::NodeIndex::new(i),
                    petgraph::graph::NodeIndex::new(c.index()),
                    (),
                );
            }
        }
        g
    }

    /// Checks the structure: one root at index 0; every other node has exactly
    /// one parent that lists it once; kinds nest root → cluster* → document →
    /// passage with all documents at one depth; every node is reachable from
    /// the root; no node has more children than the branching limit.
    pub fn validate(&self) -> Result<()> {
        let invalid = |msg: String| Err(Error::InvalidTree(msg));
        let n = self.len();
        let Some(root) = self.nodes.tag(0) else {
            return invalid("the tree has no node".into());
        };
        if root != Tag::Root || self.nodes.parent(0).is_some() {
            return invalid("node 0 is not a root without parent".into());
        }
        let mut seen = vec![false; n];
        seen[0] = true;
        let mut stack = vec![(NodeId(0), 0usize)];
        let mut doc_depth: Option<usize> = None;
        let mut visited = 1usize;
        while let Some((id, depth)) = stack.pop() {
            let (tag, children) = (self.tag(id), self.children(id));
            if children.len() > self.meta.branching as usize {
                return invalid(format!(
                    "node {} has {} children, over the branching limit {}",
                    id.0,
                    children.len(),
                    self.meta.branching
                ));
            }
            if tag == Some(Tag::Document) {
                match doc_depth {
                    None => doc_depth = Some(depth),
                    Some(d) if d != depth => {
                        return invalid(format!("documents at depths {d} and {depth}"))
                    }
                    Some(_) => {}
                }
            }
            let leaf = tag == Some(Tag::Passage);
            if leaf != children.is_empty() {
                return invalid(format!(
                    "node {} ({}) has {} children",
                    id.0,
                    tag.map_or("?", Tag::name),
                    children.len()
                ));
            }
            for &c in children {
                self.check_edge(id, c, &seen)?;
                seen[c.index()] = true;
                visited += 1;
                stack.push((c, depth + 1));
            }
        }
        // Nodes an update removed are unreachable, and empty.
        let removed = (1..n)
            .filter(|i| self.nodes.parent(*i).is_none() && self.nodes.children(*i).is_empty())
            .count();
        if visited + removed != n {
            return invalid(format!(
                "{} of {n} nodes are not reachable from the root",
                n - visited - removed
            ));
        }
        if doc_depth.is_none() {
            return invalid("the tree has no document".into());
        }
        self.validate_neighbours()
    }

    /// Checks the nodes an update changed, with their parents and children,
    /// and the neighbour lists it changed: what [`Tree::validate`] checks,
    /// around them only (the rest was checked when the tree file was
    /// read, and the update was validated whole before it was written).
    pub(crate) fn validate_around(&self, nodes: &[u32], lists: &[u32]) -> Result<()> {
        let invalid = |msg: String| Err(Error::InvalidTree(msg));
        let seen = vec![false; self.len()];
        for &i in nodes {
            let id = NodeId(i);
            let Some(node) = self.get(id) else {
                return invalid(format!("the update names a missing node {i}"));
            };
            if self.is_removed(id) {
                if !node.children.is_empty() {
                    return invalid(format!("removed node {i} still has children"));
                }
                continue;
            }
            if node.children.len() > self.meta.branching as usize {
                return invalid(format!(
                    "node {i} has {} children, over the branching limit {}",
                    node.children.len(),
                    self.meta.branching
                ));
            }
            if let Some(p) = node.parent {
                let listed = self
                    .get(p)
                    .map_or(0, |n| n.children.iter().filter(|c| **c == id).count());
                if listed != 1 {
                    return invalid(format!("node {i}'s parent {} lists it {listed} times", p.0));
                }
            }
            let leaf = matches!(node.kind, NodeKind::Passage { .. });
            if leaf != node.children.is_empty() {
                return invalid(format!(
                    "node {i} ({}) has {} children",
                    node.kind.name(),
                    node.children.len()
                ));
            }
            for &c in &node.children {
                self.check_edge(id, c, &seen)?;
            }
        }
        self.lists_sized()?;
        let is_doc = |n: NodeId| {
            self.get(n)
                .is_some_and(|x| matches!(x.kind, NodeKind::Document { .. }) && x.parent.is_some())
        };
        match lists
            .iter()
            .find_map(|&i| self.list_problem(i as usize, is_doc))
        {
            Some(message) => invalid(message),
            None => Ok(()),
        }
    }

    /// One parent → child edge: the child exists, is reached once, names the
    /// parent, and its kind may sit under the parent's.
    fn check_edge(&self, id: NodeId, c: NodeId, seen: &[bool]) -> Result<()> {
        let invalid = |msg: String| Err(Error::InvalidTree(msg));
        let (Some(node), Some(child)) = (self.tag(id), self.tag(c)) else {
            return invalid(format!("node {} lists a missing child {}", id.0, c.0));
        };
        if seen.get(c.index()).copied().unwrap_or(true) {
            return invalid(format!("node {} is reached twice", c.0));
        }
        if self.parent(c) != Some(id) {
            return invalid(format!("node {} does not name {} as its parent", c.0, id.0));
        }
        let ok = matches!(
            (node, child),
            (Tag::Root | Tag::Cluster, Tag::Cluster | Tag::Document)
                | (Tag::Document, Tag::Passage)
        );
        if !ok {
            return invalid(format!(
                "a {} (node {}) under a {} (node {})",
                child.name(),
                c.0,
                node.name(),
                id.0
            ));
        }
        Ok(())
    }

    /// Neighbour lists: none at all, or one per node, listing only other
    /// document nodes, and only for document nodes.
    fn validate_neighbours(&self) -> Result<()> {
        self.lists_sized()?;
        if self.nodes.is_mapped() {
            return Ok(()); // each list is checked as its chunk is read
        }
        // Which nodes are documents, in 1 byte each: the lists point all
        // over the arena, and this fits in cache where the nodes do not.
        let is_doc: Vec<bool> = (0..self.len())
            .map(|i| self.nodes.tag(i) == Some(Tag::Document) && self.nodes.parent(i).is_some())
            .collect();
        let is_doc = |n: NodeId| is_doc.get(n.index()).copied().unwrap_or(false);
        use rayon::prelude::*;
        // The first wrong list in node order, so the message is the same
        // whatever the thread count.
        match (0..self.nodes.lists())
            .into_par_iter()
            .find_map_first(|i| self.list_problem(i, is_doc))
        {
            Some(message) => Err(Error::InvalidTree(message)),
            None => Ok(()),
        }
    }

    /// Neighbour lists: none at all, or one per node.
    fn lists_sized(&self) -> Result<()> {
        let lists = self.nodes.lists();
        if lists != 0 && lists != self.len() {
            return Err(Error::InvalidTree(format!(
                "{lists} neighbour lists for {} nodes",
                self.len()
            )));
        }
        Ok(())
    }

    /// What is wrong with node `i`'s neighbour list, if anything (see
    /// [`crate::node::list_problem`]).
    fn list_problem(&self, i: usize, is_doc: impl Fn(NodeId) -> bool) -> Option<String> {
        if i >= self.nodes.lists() {
            return None;
        }
        crate::node::list_problem(i, self.nodes.neighbours(i), is_doc)
    }
}

//! A tree's nodes as the model holds them: what each stands for, its
//! parent and children, and the metadata of the tree they form. (The
//! tree's own type, [`crate::Tree`], is in `model`; the files' frozen
//! layouts convert to and from these in `format::layouts`.)

use crate::id::NodeId;
use serde::{Deserialize, Serialize};

/// What a node stands for. (Not serde: files hold nodes in the frozen
/// layouts of `format::layouts`, converted explicitly.)
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// The single root.
    Root,
    /// A topic cluster of documents (or of clusters).
    Cluster {
        /// Its one-line summary.
        summary: String,
        /// Its most distinctive terms, best first.
        terms: Vec<String>,
        /// Number of document nodes beneath it.
        documents: u32,
    },
    /// A document (or one part of a document with more passages than the
    /// branching limit allows under one node).
    Document {
        /// The source document id (shared by all parts of a document).
        id: String,
        /// The title (may be empty).
        title: String,
        /// The first sentence of the document (or part).
        lead: String,
        /// `(part, of)` when the document was split into parts, 1-based.
        part: Option<(u32, u32)>,
        /// Extra fields of the source record, as JSON object text.
        metadata: Option<String>,
    },
    /// A passage: a leaf.
    Passage {
        /// The passage id.
        id: String,
        /// The passage text; empty when the tree reads its texts from a
        /// text store beside the tree file (ask [`Tree::passage_text`]).
        text: String,
    },
}

/// The kind of a level of the tree below the root: what a walk judges at
/// that depth. Serialised as its name (`"cluster"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LevelKind {
    /// Topic clusters.
    Cluster,
    /// Documents (or document parts).
    Document,
    /// Passages, the leaves.
    Passage,
}

impl LevelKind {
    /// Its name: `cluster`, `document` or `passage`.
    pub fn name(self) -> &'static str {
        match self {
            LevelKind::Cluster => "cluster",
            LevelKind::Document => "document",
            LevelKind::Passage => "passage",
        }
    }
}

impl std::fmt::Display for LevelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl NodeKind {
    /// The level kind of nodes like this one (`None` for the root).
    pub fn level(&self) -> Option<LevelKind> {
        match self {
            NodeKind::Root => None,
            NodeKind::Cluster { .. } => Some(LevelKind::Cluster),
            NodeKind::Document { .. } => Some(LevelKind::Document),
            NodeKind::Passage { .. } => Some(LevelKind::Passage),
        }
    }

    /// A short name for the kind: `root`, `cluster`, `document` or `passage`.
    pub fn name(&self) -> &'static str {
        match self {
            NodeKind::Root => "root",
            NodeKind::Cluster { .. } => "cluster",
            NodeKind::Document { .. } => "document",
            NodeKind::Passage { .. } => "passage",
        }
    }
}

/// One node of the tree. (Not serde: see [`NodeKind`].)
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// What it is.
    pub kind: NodeKind,
    /// Its parent (`None` only for the root).
    pub parent: Option<NodeId>,
    /// Its children, most central first for clusters, reading order for documents.
    pub children: Vec<NodeId>,
}

impl Node {
    /// The text a judge sees for this node: a cluster's summary, a document's
    /// title and lead, a passage's text as held in the node (empty when the
    /// tree keeps texts in a text store: use [`Tree::passage_text`]).
    pub fn label(&self) -> String {
        match &self.kind {
            NodeKind::Root => String::new(),
            NodeKind::Cluster { summary, .. } => summary.clone(),
            NodeKind::Document {
                title, lead, part, ..
            } => {
                let title = match part {
                    Some((i, n)) => format!("{title} (part {i} of {n})"),
                    None => title.clone(),
                };
                match (title.is_empty(), lead.is_empty()) {
                    (true, _) => lead.clone(),
                    (false, true) => title,
                    (false, false) => format!("{title}: {lead}"),
                }
            }
            NodeKind::Passage { text, .. } => text.clone(),
        }
    }
}

/// How and from what a tree was built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeMeta {
    /// The corpus source as given to the build.
    pub source: String,
    /// The embedder used for clustering, e.g. `tfidf(dims=128)`.
    pub embedder: String,
    /// The summariser, e.g. `extractive`.
    pub summarizer: String,
    /// The branching limit the tree respects.
    pub branching: u32,
    /// The seed of k-means.
    pub seed: u64,
    /// The builder's version.
    pub built_by: String,
    /// The fingerprint of the corpus the tree was built from, or after a
    /// compaction of updates of the documents it held then, in tree order
    /// (`None` in files older than format version 3, which did not record
    /// it).
    pub corpus: Option<treenav_corpus::Fingerprint>,
}

/// A node's kind alone (what a tree's shape records of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Tag {
    Root,
    Cluster,
    Document,
    Passage,
}

impl Tag {
    /// The kind of `kind`.
    pub(crate) fn of(kind: &NodeKind) -> Tag {
        match kind {
            NodeKind::Root => Tag::Root,
            NodeKind::Cluster { .. } => Tag::Cluster,
            NodeKind::Document { .. } => Tag::Document,
            NodeKind::Passage { .. } => Tag::Passage,
        }
    }

    /// Its byte in a version-5 file.
    pub(crate) fn byte(self) -> u8 {
        match self {
            Tag::Root => 0,
            Tag::Cluster => 1,
            Tag::Document => 2,
            Tag::Passage => 3,
        }
    }

    /// The tag a byte of a version-5 file names, if any.
    pub(crate) fn from_byte(b: u8) -> Option<Tag> {
        [Tag::Root, Tag::Cluster, Tag::Document, Tag::Passage]
            .get(usize::from(b))
            .copied()
    }

    /// `root`, `cluster`, `document` or `passage` (as [`NodeKind::name`]).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tag::Root => "root",
            Tag::Cluster => "cluster",
            Tag::Document => "document",
            Tag::Passage => "passage",
        }
    }
}

/// What is wrong with node `i`'s neighbour list `list`, if anything: a
/// list on a node that is not a (live) document, or an entry that is not
/// another document.
pub(crate) fn list_problem(
    i: usize,
    list: &[NodeId],
    is_doc: impl Fn(NodeId) -> bool,
) -> Option<String> {
    if !list.is_empty() && !is_doc(NodeId(i as u32)) {
        return Some(format!("node {i} is not a document but has neighbours"));
    }
    list.iter()
        .find(|n| n.index() == i || !is_doc(**n))
        .map(|n| {
            format!(
                "document {i} lists node {} as a neighbour, which is not another document",
                n.0
            )
        })
}

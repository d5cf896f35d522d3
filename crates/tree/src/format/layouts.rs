//! The tree's nodes and metadata as files hold them: frozen layouts,
//! separate from the model, with explicit conversions.
//!
//! Postcard encodes by field order and variant index and writes no names,
//! so a file decodes only into the layout it was written with. The model
//! ([`Node`], [`NodeKind`], [`TreeMeta`]) may change; the types here may
//! not: each is the layout of the file versions its name gives, and a
//! change of layout is a new type here under a new format version (the
//! golden files in `tests/golden/` check the old ones still decode). A
//! field added to the model then fails to compile in the conversions
//! below instead of silently changing how old files read.

use crate::id::NodeId;
use crate::node::{Node, NodeKind, TreeMeta};
use crate::store::SideFile;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// A node's kind in tree files of versions 1 to 4 and in deltas of
/// version 1 (owned, as read).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum KindV1 {
    Root,
    Cluster {
        summary: String,
        terms: Vec<String>,
        documents: u32,
    },
    Document {
        id: String,
        title: String,
        lead: String,
        part: Option<(u32, u32)>,
        metadata: Option<String>,
    },
    Passage {
        id: String,
        text: String,
    },
}

/// A node in tree files of versions 1 to 4 and in deltas of version 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NodeV1 {
    kind: KindV1,
    parent: Option<NodeId>,
    children: Vec<NodeId>,
}

impl From<KindV1> for NodeKind {
    fn from(stored: KindV1) -> NodeKind {
        match stored {
            KindV1::Root => NodeKind::Root,
            KindV1::Cluster {
                summary,
                terms,
                documents,
            } => NodeKind::Cluster {
                summary,
                terms,
                documents,
            },
            KindV1::Document {
                id,
                title,
                lead,
                part,
                metadata,
            } => NodeKind::Document {
                id,
                title,
                lead,
                part,
                metadata,
            },
            KindV1::Passage { id, text } => NodeKind::Passage { id, text },
        }
    }
}

impl From<NodeV1> for Node {
    fn from(stored: NodeV1) -> Node {
        Node {
            kind: stored.kind.into(),
            parent: stored.parent,
            children: stored.children,
        }
    }
}

/// [`KindV1`] borrowed from the model, for writing: the same variants and
/// fields in the same order, so it encodes as `KindV1` does (a test checks).
#[derive(Serialize)]
pub(crate) enum KindV1Out<'a> {
    Root,
    Cluster {
        summary: &'a str,
        terms: &'a [String],
        documents: u32,
    },
    Document {
        id: &'a str,
        title: &'a str,
        lead: &'a str,
        part: Option<(u32, u32)>,
        metadata: Option<&'a str>,
    },
    Passage {
        id: &'a str,
        text: Cow<'a, str>,
    },
}

impl<'a> KindV1Out<'a> {
    /// `kind` as written, a passage's text given apart.
    pub(crate) fn of(kind: &'a NodeKind, passage_text: impl FnOnce() -> Cow<'a, str>) -> Self {
        match kind {
            NodeKind::Root => KindV1Out::Root,
            NodeKind::Cluster {
                summary,
                terms,
                documents,
            } => KindV1Out::Cluster {
                summary,
                terms,
                documents: *documents,
            },
            NodeKind::Document {
                id,
                title,
                lead,
                part,
                metadata,
            } => KindV1Out::Document {
                id,
                title,
                lead,
                part: *part,
                metadata: metadata.as_deref(),
            },
            NodeKind::Passage { id, .. } => KindV1Out::Passage {
                id,
                text: passage_text(),
            },
        }
    }
}

/// [`NodeV1`] borrowed from the model, for writing.
#[derive(Serialize)]
pub(crate) struct NodeV1Out<'a> {
    kind: KindV1Out<'a>,
    parent: Option<NodeId>,
    children: &'a [NodeId],
}

impl<'a> NodeV1Out<'a> {
    /// `node` as written, a passage's text given apart (the model may hold
    /// it in a text store rather than in the node).
    pub(crate) fn of(node: &'a Node, passage_text: impl FnOnce() -> Cow<'a, str>) -> Self {
        NodeV1Out {
            kind: KindV1Out::of(&node.kind, passage_text),
            parent: node.parent,
            children: &node.children,
        }
    }

    /// `node` as written with the text it holds.
    pub(crate) fn held(node: &'a Node) -> Self {
        let text = match &node.kind {
            NodeKind::Passage { text, .. } => text.as_str(),
            _ => "",
        };
        NodeV1Out::of(node, || Cow::Borrowed(text))
    }
}

/// The metadata of tree files of versions 1 and 2: no corpus fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MetaV1 {
    source: String,
    embedder: String,
    summarizer: String,
    branching: u32,
    seed: u64,
    built_by: String,
}

impl From<MetaV1> for TreeMeta {
    fn from(old: MetaV1) -> TreeMeta {
        TreeMeta {
            source: old.source,
            embedder: old.embedder,
            summarizer: old.summarizer,
            branching: old.branching,
            seed: old.seed,
            built_by: old.built_by,
            corpus: None,
        }
    }
}

impl From<&TreeMeta> for MetaV1 {
    fn from(meta: &TreeMeta) -> MetaV1 {
        MetaV1 {
            source: meta.source.clone(),
            embedder: meta.embedder.clone(),
            summarizer: meta.summarizer.clone(),
            branching: meta.branching,
            seed: meta.seed,
            built_by: meta.built_by.clone(),
        }
    }
}

/// The metadata of tree files of versions 3 and 4: version 1's fields, then
/// the corpus fingerprint (postcard writes a nested struct's fields in
/// place, so this is version 1's layout with one field added).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MetaV3 {
    v1: MetaV1,
    corpus: Option<treenav_corpus::Fingerprint>,
}

impl From<MetaV3> for TreeMeta {
    fn from(stored: MetaV3) -> TreeMeta {
        TreeMeta {
            corpus: stored.corpus,
            ..stored.v1.into()
        }
    }
}

impl From<&TreeMeta> for MetaV3 {
    fn from(meta: &TreeMeta) -> MetaV3 {
        MetaV3 {
            v1: meta.into(),
            corpus: meta.corpus.clone(),
        }
    }
}

/// A delta's `(id, node)` list through [`NodeV1`] (`#[serde(with)]`): the
/// model in memory, the frozen layout in the file.
pub(crate) mod nodes_by_id {
    use super::{NodeV1, NodeV1Out};
    use crate::node::Node;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        nodes: &[(u32, Node)],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(nodes.iter().map(|(id, n)| (*id, NodeV1Out::held(n))))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<(u32, Node)>, D::Error> {
        let stored: Vec<(u32, NodeV1)> = Vec::deserialize(deserializer)?;
        Ok(stored.into_iter().map(|(id, n)| (id, n.into())).collect())
    }
}

/// The tree file's payloads, one type a format version.
/// The payload of a version-1 file: no neighbour lists.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct TreeV1<N> {
    pub(crate) meta: MetaV1,
    pub(crate) nodes: Vec<N>,
}

/// The payload of a version-2 file.
#[derive(serde::Deserialize)]
pub(crate) struct TreeV2 {
    pub(crate) meta: MetaV1,
    pub(crate) nodes: Vec<NodeV1>,
    pub(crate) neighbours: Vec<Vec<NodeId>>,
}

/// The payload of a version-3 file.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct TreeV3<N> {
    pub(crate) meta: MetaV3,
    pub(crate) nodes: Vec<N>,
    pub(crate) neighbours: Vec<Vec<NodeId>>,
}

/// The payload of a version-4 file, as read: nodes and neighbour lists in
/// chunks of `file::NODE_CHUNK` nodes, each chunk postcard bytes of its own.
#[derive(serde::Deserialize)]
pub(crate) struct TreeV4<'a> {
    pub(crate) meta: MetaV3,
    /// Per chunk: the encoded `Vec<NodeV1>`.
    #[serde(borrow)]
    pub(crate) nodes: Vec<&'a [u8]>,
    /// Per chunk: the encoded `Vec<Vec<NodeId>>` (none without neighbour lists).
    #[serde(borrow)]
    pub(crate) neighbours: Vec<&'a [u8]>,
    /// The text store beside the file (`None`: texts are in the nodes).
    pub(crate) texts: Option<SideFile>,
    /// The lexical side file (`None`: computed when needed).
    pub(crate) lexical: Option<SideFile>,
}

/// The payload of a version-4 file, as written: nodes borrowed from the
/// tree, passage texts in them or not.
#[derive(serde::Serialize)]
pub(crate) struct TreeV4Out {
    pub(crate) meta: MetaV3,
    pub(crate) nodes: Vec<Chunk>,
    pub(crate) neighbours: Vec<Chunk>,
    pub(crate) texts: Option<SideFile>,
    pub(crate) lexical: Option<SideFile>,
}

/// The index of a version-5 file: what it holds and how many of each.
/// The tree's shape follows it as raw little-endian arrays whose lengths
/// these numbers give (`file::mapped`): per node its kind (one byte: 0
/// root, 1 cluster, 2 document, 3 passage), its parent (`u32`, `u32::MAX`
/// for none), where its children start (`u32`, one more at the end), the
/// children (`u32`); then per record chunk where it starts after the
/// arrays (`u64`, one more at the end), and its CRC-32 (`u32`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IndexV5 {
    pub(crate) meta: MetaV3,
    pub(crate) texts: Option<SideFile>,
    pub(crate) lexical: Option<SideFile>,
    /// Number of nodes.
    pub(crate) nodes: u32,
    /// Number of parent → child links.
    pub(crate) children: u32,
    /// Nodes per record chunk (the last may hold fewer).
    pub(crate) chunk_nodes: u32,
    /// Whether the records hold neighbour lists (else each is empty).
    pub(crate) lists: bool,
}

/// A record chunk of a version-5 file: per node its kind with its labels
/// (a passage's text empty when the tree keeps its texts in a text store)
/// and its neighbour list (parents and children are in the index).
pub(crate) type RecordsV5 = Vec<(KindV1, Vec<NodeId>)>;

/// Encoded bytes, written as one byte string.
pub(crate) struct Chunk(pub(crate) Vec<u8>);

impl serde::Serialize for Chunk {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<Node> {
        let node = |kind| Node {
            kind,
            parent: Some(NodeId(3)),
            children: vec![NodeId(1), NodeId(2)],
        };
        vec![
            Node {
                kind: NodeKind::Root,
                parent: None,
                children: vec![NodeId(1)],
            },
            node(NodeKind::Cluster {
                summary: "rivers".into(),
                terms: vec!["river".into(), "delta".into()],
                documents: 7,
            }),
            node(NodeKind::Document {
                id: "d1".into(),
                title: "The Nile".into(),
                lead: "It flows north.".into(),
                part: Some((1, 2)),
                metadata: Some(r#"{"year":2020}"#.into()),
            }),
            node(NodeKind::Passage {
                id: "d1#0".into(),
                text: "It flows north.".into(),
            }),
        ]
    }

    /// What the writer encodes (borrowed) is what the reader decodes
    /// (owned), and decodes to the model it was written from.
    #[test]
    fn the_borrowed_layout_encodes_as_the_owned_one_reads() {
        for node in every_kind() {
            let bytes = postcard::to_stdvec(&NodeV1Out::held(&node)).expect("encode");
            let stored: NodeV1 = postcard::from_bytes(&bytes).expect("decode");
            assert_eq!(Node::from(stored), node);
        }
        let meta = TreeMeta {
            source: "c.jsonl".into(),
            embedder: "tfidf".into(),
            summarizer: "extractive".into(),
            branching: 4,
            seed: 9,
            built_by: "treenav".into(),
            corpus: None,
        };
        let bytes = postcard::to_stdvec(&MetaV3::from(&meta)).expect("encode");
        let stored: MetaV3 = postcard::from_bytes(&bytes).expect("decode");
        assert_eq!(TreeMeta::from(stored), meta);
    }
}

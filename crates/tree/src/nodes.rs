//! Where a tree's nodes are: held in memory (a tree built or updated, or
//! read from a file of format versions 1 to 4), or read from the tree file
//! as they are asked for (version 5, [`crate::mapped`]). Either way the
//! tree's shape — each node's kind, parent, children and neighbour list —
//! answers without decoding a node, so walking, counting and checking a
//! tree never decodes its labels.

use crate::id::NodeId;
use crate::mapped::Mapped;
use crate::node::{Node, Tag};
use crate::Result;
use std::sync::Arc;

/// A tree's nodes and neighbour lists.
#[derive(Debug, Clone)]
pub(crate) enum Nodes {
    /// In memory, as built or decoded.
    Held {
        nodes: Vec<Node>,
        /// Per node; empty as a whole for a tree without neighbour lists.
        neighbours: Vec<Vec<NodeId>>,
    },
    /// Read from a version-5 tree file as asked for; `lists` false when
    /// the tree was asked to drop its neighbour lists.
    Mapped { file: Arc<Mapped>, lists: bool },
}

impl Nodes {
    /// Number of nodes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Nodes::Held { nodes, .. } => nodes.len(),
            Nodes::Mapped { file, .. } => file.len(),
        }
    }

    /// Node `i`, decoded if need be (`None` past the end, or for a node of
    /// a chunk of the file that does not decode: see [`Mapped::get`]).
    pub(crate) fn get(&self, i: usize) -> Option<&Node> {
        match self {
            Nodes::Held { nodes, .. } => nodes.get(i),
            Nodes::Mapped { file, .. } => file.get(i),
        }
    }

    /// Node `i`'s kind.
    pub(crate) fn tag(&self, i: usize) -> Option<Tag> {
        match self {
            Nodes::Held { nodes, .. } => nodes.get(i).map(|n| Tag::of(&n.kind)),
            Nodes::Mapped { file, .. } => file.shape().tag(i),
        }
    }

    /// Node `i`'s parent.
    pub(crate) fn parent(&self, i: usize) -> Option<NodeId> {
        match self {
            Nodes::Held { nodes, .. } => nodes.get(i).and_then(|n| n.parent),
            Nodes::Mapped { file, .. } => file.shape().parent(i),
        }
    }

    /// Node `i`'s children (empty past the end).
    pub(crate) fn children(&self, i: usize) -> &[NodeId] {
        match self {
            Nodes::Held { nodes, .. } => nodes.get(i).map_or(&[], |n| n.children.as_slice()),
            Nodes::Mapped { file, .. } => file.shape().children(i),
        }
    }

    /// Number of neighbour lists: none, or one per node.
    pub(crate) fn lists(&self) -> usize {
        match self {
            Nodes::Held { neighbours, .. } => neighbours.len(),
            Nodes::Mapped { file, lists } => match lists {
                true => file.lists(),
                false => 0,
            },
        }
    }

    /// Node `i`'s neighbour list (empty without lists).
    pub(crate) fn neighbours(&self, i: usize) -> &[NodeId] {
        match self {
            Nodes::Held { neighbours, .. } => neighbours.get(i).map_or(&[], Vec::as_slice),
            Nodes::Mapped { file, lists: true } => file.neighbours(i),
            Nodes::Mapped { lists: false, .. } => &[],
        }
    }

    /// The nodes without their neighbour lists.
    pub(crate) fn drop_lists(&mut self) {
        match self {
            Nodes::Held { neighbours, .. } => *neighbours = Vec::new(),
            Nodes::Mapped { lists, .. } => *lists = false,
        }
    }

    /// Every node, in arena order: an error when a chunk of a mapped file
    /// does not decode.
    pub(crate) fn all(&self) -> Result<impl Iterator<Item = &Node> + '_> {
        if let Nodes::Mapped { file, .. } = self {
            file.decode_all()?;
        }
        // Every chunk decoded: `get` answers for every index.
        Ok((0..self.len()).filter_map(|i| self.get(i)))
    }

    /// The arena and the neighbour lists in memory, to change them (a
    /// mapped file's nodes are decoded whole first).
    pub(crate) fn held_mut(&mut self) -> Result<(&mut Vec<Node>, &mut Vec<Vec<NodeId>>)> {
        if let Nodes::Mapped { .. } = self {
            let (nodes, neighbours) = self.copied()?;
            *self = Nodes::Held { nodes, neighbours };
        }
        match self {
            Nodes::Held { nodes, neighbours } => Ok((nodes, neighbours)),
            // Made held above.
            Nodes::Mapped { .. } => Err(crate::Error::InvalidTree(
                "the nodes could not be read into memory".into(),
            )),
        }
    }

    /// A copy of every node and neighbour list, in memory (a mapped
    /// file's chunks all read: an error when one does not).
    pub(crate) fn copied(&self) -> Result<(Vec<Node>, Vec<Vec<NodeId>>)> {
        let nodes = self.all()?.cloned().collect();
        let lists = (0..self.lists())
            .map(|i| self.neighbours(i).to_vec())
            .collect();
        Ok((nodes, lists))
    }

    /// Whether the nodes are read from a file as asked for.
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self, Nodes::Mapped { .. })
    }
}

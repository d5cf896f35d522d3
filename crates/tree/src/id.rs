//! Node ids: an index into a tree's node arena.

use serde::{Deserialize, Serialize};

/// Index of a node in its tree (`crate::Tree`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index into the node arena.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

//! The nodes one query may judge and return: what its metadata filter
//! lets through.

use crate::{Error, Result};
use std::sync::Arc;
use treenav_tree::filter::Allowed;
use treenav_tree::lexical::DocumentIndex;
use treenav_tree::NodeId;

/// The nodes one query may judge and return: all, or those a metadata
/// filter lets through.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope(pub(crate) Option<Arc<Allowed>>);

impl Scope {
    /// Whether the node may be judged or returned.
    pub(crate) fn allows(&self, id: NodeId) -> bool {
        self.0.as_ref().is_none_or(|a| a.contains(id))
    }

    /// Whether a filter narrows the scope.
    pub(crate) fn is_filtered(&self) -> bool {
        self.0.is_some()
    }

    /// Whether any passage is in scope.
    pub(crate) fn any(&self) -> bool {
        self.0.as_ref().is_none_or(|a| a.passages() > 0)
    }

    /// BM25's top `n` documents of the scope.
    pub(crate) fn search(
        &self,
        index: &DocumentIndex,
        query: &str,
        n: usize,
    ) -> Result<Vec<(NodeId, f64)>> {
        match &self.0 {
            None => index.search_scored(query, n),
            Some(allowed) => index.search_allowed(query, n, allowed),
        }
        .map_err(Error::TreeData)
    }
}

//! The delta: what updates changed since a tree file was written, kept
//! beside it as `T.delta` and applied when the tree is opened.
//!
//! It holds the nodes that changed (clusters whose children or labels
//! moved, removed nodes) and the nodes added (new documents and their
//! passages, with their texts), the neighbour lists that changed, the
//! change of the passage statistics, the vectors of the added documents
//! and a count of the updates. Its size follows what changed since the
//! tree file was written, never the tree's size.
//!
//! One update is one generation. The writer writes the new delta as
//! `T.delta.next`, commits the lexical index with the generation as its
//! commit payload, then renames `T.delta.next` over `T.delta`. A reader
//! takes the delta whose generation is the index's: a crash before the
//! index commit leaves the old generation (`T.delta`), a crash after it
//! the new one (`T.delta.next`), never a mix.

use crate::id::NodeId;
use crate::model::Tree;
use crate::model::UpdateLog;
use crate::node::Node;
use crate::store::{side_path, write_atomically, FileAt};
use crate::vectors::{BaseId, VectorRows};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The suffix of the delta: `T.tree` → `T.tree.delta`.
pub const DELTA_SUFFIX: &str = "delta";
use treenav_files::magic::DELTA as MAGIC;
/// Layout 2 adds the vectors of the passages added; layout 1 (without
/// them) is still read.
const VERSION: u32 = 2;
/// Magic, version, reserved, content hash, base (crc, reserved, len),
/// generation.
const HEADER: usize = 8 + 4 + 4 + 16 + 4 + 4 + 8 + 8;

/// The change of the passage statistics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatsChange {
    /// Passages added less passages removed.
    pub documents: i64,
    /// Terms added less terms removed.
    pub terms: i64,
    /// Each term's change of document frequency.
    pub df: Vec<(String, i64)>,
}

/// One generation's delta.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    /// Its generation (1 for the first update of a base).
    pub generation: u64,
    /// Nodes of the base tree file.
    pub base_nodes: u32,
    /// Changed and added nodes, by id, ascending (in the file as
    /// `format::layouts::NodeV1`).
    #[serde(with = "crate::format::layouts::nodes_by_id")]
    pub nodes: Vec<(u32, Node)>,
    /// Changed neighbour lists, by node id, ascending.
    pub neighbours: Vec<(u32, Vec<NodeId>)>,
    /// The change of the passage statistics.
    pub stats: StatsChange,
    /// Vectors of the documents added.
    pub vectors: VectorRows,
    /// Documents the lexical index holds at this generation.
    pub indexed: u64,
    /// The updates' log.
    pub log: UpdateLog,
    /// Vectors of the passages added (layout 2; none in layout 1, whose
    /// added passages the embedding judge scores by their document's).
    pub passage_vectors: VectorRows,
}

/// Layout 1 of a delta: [`Delta`] without the passages' vectors.
#[derive(Deserialize)]
struct DeltaV1 {
    generation: u64,
    base_nodes: u32,
    #[serde(with = "crate::format::layouts::nodes_by_id")]
    nodes: Vec<(u32, Node)>,
    neighbours: Vec<(u32, Vec<NodeId>)>,
    stats: StatsChange,
    vectors: VectorRows,
    indexed: u64,
    log: UpdateLog,
}

impl From<DeltaV1> for Delta {
    fn from(v1: DeltaV1) -> Delta {
        Delta {
            generation: v1.generation,
            base_nodes: v1.base_nodes,
            nodes: v1.nodes,
            neighbours: v1.neighbours,
            stats: v1.stats,
            vectors: v1.vectors,
            indexed: v1.indexed,
            log: v1.log,
            passage_vectors: VectorRows::default(),
        }
    }
}

/// The delta's path beside the tree file `tree`.
pub fn delta_path(tree: &Path) -> PathBuf {
    side_path(tree, DELTA_SUFFIX)
}

/// Where a writer puts the next generation before the index commit.
pub fn next_path(tree: &Path) -> PathBuf {
    side_path(tree, "delta.next")
}

/// A generation as the lexical index's commit names it: its number and
/// the content hash of its delta (absent in commits written before deltas
/// were named: those deltas are matched by number and base alone).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Generation {
    /// Its number (0: the base as built).
    pub number: u64,
    /// The content hash of its delta, when the commit names one.
    pub delta: Option<u128>,
}

/// The payload of the lexical index's commit for a generation whose delta
/// has the content hash `delta`.
pub fn payload(generation: u64, delta: u128) -> String {
    format!("treenav-generation {generation} {delta:032x}")
}

/// The generation a commit payload names (`None`: an index as built).
pub fn generation_of(payload: Option<&str>) -> Option<Generation> {
    let mut words = payload?.strip_prefix("treenav-generation ")?.split(' ');
    let number = words.next()?.parse().ok()?;
    let delta = match words.next() {
        None => None,
        Some(hash) => Some(u128::from_str_radix(hash, 16).ok()?),
    };
    Some(Generation { number, delta })
}

/// Writes `delta` to `path` atomically (temp file, fsync, rename); its
/// content hash, which the index's commit records.
pub fn write(delta: &Delta, path: &Path, base: BaseId) -> Result<u128> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = postcard::to_stdvec(delta).map_err(Error::encode)?;
    let header_of = |hash: u128, _len: u64| {
        crate::vectors::paired_header(MAGIC, VERSION, hash, base, &[delta.generation])
    };
    let body = |out: &mut dyn Write| out.write_all(&bytes).map_err(io);
    write_atomically(path, HEADER, body, header_of).map(|side| side.hash)
}

/// A delta file's base, generation and content hash, from its header
/// alone (`None`: no such file).
fn peek(path: &Path) -> Result<Option<(BaseId, u64, u128)>> {
    if !path.exists() {
        return Ok(None);
    }
    let (source, len) = FileAt::open(path, &crate::store::SIDE_FILE)?;
    let (head, base, _) = read_header(&source, len).map_err(|problem| Error::BadFile {
        path: path.to_path_buf(),
        problem,
    })?;
    Ok(Some((
        base,
        crate::format::word(&head, 2),
        crate::format::hash_of(&head),
    )))
}

/// A delta file's header, of either layout this build reads, with the
/// layout.
fn read_header(
    source: &FileAt,
    len: u64,
) -> std::result::Result<([u8; HEADER], BaseId, u32), String> {
    let read = |version| crate::vectors::read_paired_header(source, len, (MAGIC, version, "delta"));
    match read(VERSION) {
        Ok((head, base)) => Ok((head, base, VERSION)),
        // The error names today's layout.
        Err(problem) => read(1)
            .map(|(head, base)| (head, base, 1))
            .map_err(|_| problem),
    }
}

/// Reads and checks a whole delta file.
fn read(path: &Path) -> Result<Delta> {
    let bad = |problem: String| Error::BadFile {
        path: path.to_path_buf(),
        problem,
    };
    let (source, len) = FileAt::open(path, &crate::store::SIDE_FILE)?;
    let (head, _, version) = read_header(&source, len).map_err(&bad)?;
    let body = crate::vectors::read_checked_body(&source, &head, len).map_err(&bad)?;
    let decoded = match version {
        1 => postcard::from_bytes::<DeltaV1>(&body).map(Delta::from),
        _ => postcard::from_bytes::<Delta>(&body),
    };
    let delta = decoded.map_err(|e| bad(format!("cannot decode: {e}")))?;
    if delta.generation != crate::format::word(&head, 2) {
        return Err(bad("its header and body name different generations".into()));
    }
    Ok(delta)
}

/// The delta of generation `generation` for the tree file `tree` (payload
/// `base`): from `T.delta`, or from `T.delta.next` when a writer committed
/// the index but had not yet renamed it; only the delta the commit names
/// by its hash (a delta copied from a sibling tree of the same base and
/// generation is refused). `None` for generation 0 (no update since the
/// tree file was written).
pub fn current(tree: &Path, base: BaseId, generation: Generation) -> Result<Option<Delta>> {
    let Generation { number, delta } = generation;
    if number == 0 {
        return Ok(None);
    }
    let mut foreign = None;
    // A writer may rename `.next` over the delta between two looks: look
    // again.
    for _ in 0..3 {
        for path in [delta_path(tree), next_path(tree)] {
            match peek(&path) {
                Ok(Some((b, g, h))) if b == base && g == number => {
                    if delta.is_none_or(|d| d == h) {
                        return read(&path).map(Some);
                    }
                    foreign = Some(path);
                }
                Ok(_) => {}
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    if let Some(path) = foreign {
        return Err(Error::BadFile {
            path,
            problem: format!(
                "it is of update generation {number} of this tree file, but not the delta the lexical index was committed with (another tree's?): restore the tree's files together"
            ),
        });
    }
    Err(Error::BadFile {
        path: delta_path(tree),
        problem: format!(
            "the lexical index is at update generation {number}, and no delta of that generation for this tree file is beside it: restore the tree's files together"
        ),
    })
}

/// Which saved tree file bytes are: their payload's checksum and length.
pub fn base_of(bytes: &[u8]) -> BaseId {
    let mut len = [0u8; 8];
    let mut crc = [0u8; 4];
    if let (Some(l), Some(c)) = (bytes.get(16..24), bytes.get(24..28)) {
        len.copy_from_slice(l);
        crc.copy_from_slice(c);
    }
    BaseId {
        crc: u32::from_le_bytes(crc),
        len: u64::from_le_bytes(len),
    }
}

/// Applies a delta read beside a tree file to the tree loaded from it.
pub(crate) fn apply(tree: &mut Tree, delta: Delta) -> Result<()> {
    let changed: Vec<u32> = delta.nodes.iter().map(|(i, _)| *i).collect();
    let changed_lists: Vec<u32> = delta.neighbours.iter().map(|(i, _)| *i).collect();
    let (nodes, lists) = tree.parts_mut()?;
    if delta.base_nodes as usize != nodes.len() {
        return Err(Error::InvalidTree(format!(
            "the delta was written for a tree of {} nodes, the tree file has {}",
            delta.base_nodes,
            nodes.len()
        )));
    }
    for (id, node) in delta.nodes {
        let i = id as usize;
        match i.cmp(&nodes.len()) {
            std::cmp::Ordering::Less => nodes[i] = node,
            std::cmp::Ordering::Equal => nodes.push(node),
            std::cmp::Ordering::Greater => {
                return Err(Error::InvalidTree(format!(
                    "the delta adds node {i} after {} nodes",
                    nodes.len()
                )))
            }
        }
    }
    if !lists.is_empty() {
        lists.resize(nodes.len(), Vec::new());
        for (id, list) in delta.neighbours {
            if let Some(slot) = lists.get_mut(id as usize) {
                *slot = list;
            }
        }
    }
    if let Some(lexical) = tree.lexical_mut() {
        apply_stats(Arc::make_mut(&mut lexical.stats), &delta.stats);
    }
    tree.set_updates(Some(delta.log));
    tree.validate_around(&changed, &changed_lists)
}

fn apply_stats(stats: &mut treenav_text::stats::CorpusStats, change: &StatsChange) {
    let total = stats.mean_terms * stats.documents as f64 + change.terms as f64;
    stats.documents = (stats.documents as i64 + change.documents).max(0) as u64;
    stats.mean_terms = (total / stats.documents.max(1) as f64).max(0.0);
    for (term, n) in &change.df {
        let now = stats.df.get(term).copied().unwrap_or(0) as i64 + n;
        if now > 0 {
            stats.df.insert(term.clone(), now as u64);
        } else {
            stats.df.remove(term);
        }
    }
}

impl Delta {
    /// The nodes of a tree file of `built` nodes once this delta is
    /// applied: those and the ones it adds (counted, never taken from an
    /// id the file gives: applying it refuses ids that do not follow on).
    pub fn nodes_after(&self, built: usize) -> usize {
        built
            + self
                .nodes
                .iter()
                .filter(|(id, _)| *id as usize >= built)
                .count()
    }

    /// The stats change as a map, to be added to.
    pub fn df_map(&self) -> HashMap<String, i64> {
        self.stats.df.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generation_the_index_names_is_read_from_either_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tree = dir.path().join("t.tree");
        let base = BaseId { crc: 1, len: 2 };
        let one = Delta {
            generation: 1,
            base_nodes: 5,
            ..Delta::default()
        };
        let two = Delta {
            generation: 2,
            ..one.clone()
        };
        let h1 = write(&one, &delta_path(&tree), base).expect("write");
        let h2 = write(&two, &next_path(&tree), base).expect("write");
        let at = |number, delta| Generation { number, delta };
        assert_eq!(current(&tree, base, at(0, None)).expect("none"), None);
        assert_eq!(
            current(&tree, base, at(1, Some(h1))).expect("one"),
            Some(one.clone())
        );
        assert_eq!(
            current(&tree, base, at(2, Some(h2))).expect("two"),
            Some(two)
        );
        // A commit written before deltas were named matches by number.
        assert_eq!(current(&tree, base, at(1, None)).expect("old"), Some(one));
        let missing = current(&tree, base, at(3, None)).expect_err("no generation 3");
        assert!(missing.to_string().contains("generation 3"), "{missing}");
        // Another tree file's delta is not applied.
        assert!(current(&tree, BaseId { crc: 9, len: 2 }, at(1, None)).is_err());
        // Nor a delta of the same base and generation the commit does not name.
        let foreign = current(&tree, base, at(1, Some(h1 ^ 1))).expect_err("foreign");
        assert!(foreign.to_string().contains("another tree"), "{foreign}");
        assert_eq!(generation_of(Some(&payload(7, h1))), Some(at(7, Some(h1))));
        assert_eq!(
            generation_of(Some("treenav-generation 7")),
            Some(at(7, None))
        );
        assert_eq!(generation_of(Some("treenav-generation 7 zz")), None);
        assert_eq!(generation_of(None), None);
    }
}

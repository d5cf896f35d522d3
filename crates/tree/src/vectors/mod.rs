//! The build embedding of a tree's documents, kept for updates: one row
//! per document node, quantised to 8 bits with a scale per row (a unit
//! vector's cosines keep about two decimal places), and what embedded
//! them (for TF-IDF, the fitted vocabulary and IDF, so that documents
//! added later land in the same space).
//!
//! Saved beside the tree as `T.vectors`, paired with the tree file it was
//! written with (its checksum and size): a vectors file of another build is
//! refused by name. Layout 2 ([`layout`]) is read as asked for, a block of
//! rows at a time, and carries the clusters' [`Centroids`].

mod centroids;
mod layout;
mod rows;

pub use centroids::Centroids;
pub use layout::write_to;
use rows::Rows;

use crate::embed::tfidf::TfidfModel;
use crate::format::Header;
use crate::id::NodeId;
use crate::store::{side_path, FileAt, ReadAt};
use crate::{Error, Result};
use ndarray::{ArrayView1, ArrayView2};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The suffix of the vectors file: `T.tree` → `T.tree.vectors`.
pub const VECTORS_SUFFIX: &str = "vectors";
/// The suffix of the passage vectors file: `T.tree` → `T.tree.passage-vectors`.
pub const PASSAGE_VECTORS_SUFFIX: &str = "passage-vectors";
/// Dimensions at most.
const MAX_DIMS: u64 = 8192;

/// Which saved tree file a side file belongs to: its payload checksum and
/// length, as its header records them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseId {
    /// CRC-32 of the tree file's payload.
    pub crc: u32,
    /// The payload's length in bytes.
    pub len: u64,
}

/// The header of a side file paired with a tree file (vectors, delta):
/// magic, layout version, reserved, the body's content hash, the base
/// tree file's id, then `tail` numbers of the file's own.
pub(crate) fn paired_header(
    magic: &[u8; 8],
    version: u32,
    hash: u128,
    base: BaseId,
    tail: &[u64],
) -> Vec<u8> {
    // The base's CRC-32 fills the low half of its word (the high half 0).
    let mut words = vec![u64::from(base.crc), base.len];
    words.extend_from_slice(tail);
    Header {
        magic,
        version,
        hash,
        words: &words,
    }
    .to_bytes()
}

/// Reads a [`paired_header`] of `N` bytes from `source` (`len` bytes
/// long), checking its magic and version (`what` names the kind in
/// errors): the header, and the base tree file's id.
pub(crate) fn read_paired_header<const N: usize>(
    source: &FileAt,
    len: u64,
    (magic, version, what): (&[u8; 8], u32, &str),
) -> std::result::Result<([u8; N], BaseId), String> {
    if len < N as u64 {
        return Err("truncated: shorter than its header".into());
    }
    let mut head = [0u8; N];
    source.read_at(0, &mut head).map_err(|e| e.to_string())?;
    if &head[..8] != magic || head[8..12] != version.to_le_bytes() {
        return Err(format!("not a treenav {what} file of layout {version}"));
    }
    // The CRC-32 is the low half of word 0 (see `paired_header`).
    let base = BaseId {
        crc: crate::format::word(&head, 0) as u32,
        len: crate::format::word(&head, 1),
    };
    Ok((head, base))
}

/// The body after a [`paired_header`] (`head`), read whole and checked
/// against the hash the header records.
pub(crate) fn read_checked_body(
    source: &FileAt,
    head: &[u8],
    len: u64,
) -> std::result::Result<Vec<u8>, String> {
    let at = head.len() as u64;
    let body_len = usize::try_from(len.saturating_sub(at))
        .map_err(|_| "too large for this machine".to_string())?;
    let mut body = vec![0u8; body_len];
    source.read_at(at, &mut body).map_err(|e| e.to_string())?;
    if twox_hash::XxHash3_128::oneshot(&body) != crate::format::hash_of(head) {
        return Err("checksum mismatch: the file is corrupted".into());
    }
    Ok(body)
}

/// What embedded the rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Embedding {
    /// The embedder as the tree's metadata names it, e.g. `tfidf(dims=128)`.
    pub embedder: String,
    /// The fitted TF-IDF model, for TF-IDF trees.
    pub tfidf: Option<TfidfModel>,
    /// Sentences of a document's text embedded after its title.
    pub sentences: usize,
}

/// Document vectors by node, quantised.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitVectors {
    /// What embedded them.
    pub embedding: Embedding,
    dims: usize,
    /// Row → node.
    nodes: Vec<u32>,
    /// Per row: the factor of its bytes.
    scales: Vec<f32>,
    /// The rows' bytes: held, or read from the file as asked for.
    data: Rows<i8>,
    /// Node → row (`u32::MAX`: none), by node index.
    row_of: RowOf,
    /// The clusters' centroids the file was saved with (document vectors
    /// of a build): dropped by any change of a row.
    centroids: Option<Arc<Centroids>>,
}

impl UnitVectors {
    /// No rows yet, of `dims` dimensions.
    pub fn new(embedding: Embedding, dims: usize) -> UnitVectors {
        UnitVectors {
            embedding,
            dims,
            nodes: Vec::new(),
            scales: Vec::new(),
            data: Rows::held(dims, Vec::new()),
            row_of: RowOf::default(),
            centroids: None,
        }
    }

    /// Rows of `matrix` for `nodes` (row i is node i's), quantised.
    pub fn from_rows(
        embedding: Embedding,
        nodes: &[NodeId],
        matrix: ArrayView2<'_, f32>,
    ) -> UnitVectors {
        let mut out = UnitVectors::new(embedding, matrix.ncols());
        let mut cells = Vec::with_capacity(nodes.len() * matrix.ncols());
        for (node, row) in nodes.iter().zip(matrix.rows()) {
            out.put(*node, row, &mut cells);
        }
        out.data = Rows::held(out.dims, cells);
        out
    }

    /// Dimensions of a row.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Sets (or replaces) node `id`'s row. A row of another width is ignored
    /// (the callers check widths where rows enter). Rows still in their
    /// file are read whole first: an error when they no longer read.
    pub fn set(&mut self, id: NodeId, row: ArrayView1<'_, f32>) -> Result<()> {
        let cells = self.data.held_mut().map_err(unread)?;
        let mut taken = std::mem::take(cells);
        self.put(id, row, &mut taken);
        self.data = Rows::held(self.dims, taken);
        self.centroids = None;
        Ok(())
    }

    /// [`UnitVectors::set`] on held `cells`.
    fn put(&mut self, id: NodeId, row: ArrayView1<'_, f32>, cells: &mut Vec<i8>) {
        if row.len() != self.dims {
            return;
        }
        let max = row.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 && max.is_finite() {
            max / 127.0
        } else {
            0.0
        };
        let bytes = row.iter().map(|x| {
            if scale > 0.0 {
                (x / scale).round().clamp(-127.0, 127.0) as i8
            } else {
                0
            }
        });
        match self.row_of.get(id.0) {
            Some(r) => {
                let at = r as usize * self.dims;
                for (slot, b) in cells[at..at + self.dims].iter_mut().zip(bytes) {
                    *slot = b;
                }
                self.scales[r as usize] = scale;
            }
            None => {
                self.row_of.insert(id.0, self.nodes.len() as u32);
                self.nodes.push(id.0);
                self.scales.push(scale);
                cells.extend(bytes);
            }
        }
    }

    /// The centroids of the tree's clusters saved with these rows, if
    /// they were and no row changed since.
    pub fn centroids(&self) -> Option<&Arc<Centroids>> {
        self.centroids.as_ref()
    }

    /// Drops the saved centroids (the tree they were summed over changed).
    pub(crate) fn forget_centroids(&mut self) {
        self.centroids = None;
    }

    /// Whether the rows are read from their file as asked for (layout 2),
    /// rather than held.
    pub fn reads_lazily(&self) -> bool {
        self.data.reads_lazily()
    }

    /// Node `id`'s row: its bytes and their factor.
    fn row(&self, id: NodeId) -> Option<(&[i8], f32)> {
        let r = self.row_of.get(id.0)? as usize;
        Some((self.data.row(r)?, self.scales[r]))
    }

    /// Node `id`'s row, dequantised.
    pub fn get(&self, id: NodeId) -> Option<Vec<f32>> {
        let (row, s) = self.row(id)?;
        Some(row.iter().map(|b| f32::from(*b) * s).collect())
    }

    /// Whether node `id` has a row.
    pub fn contains(&self, id: NodeId) -> bool {
        self.row_of.get(id.0).is_some()
    }

    /// The dot product of `v` with node `id`'s row (`None`: no row).
    pub fn dot(&self, id: NodeId, v: &[f32]) -> Option<f32> {
        self.dot_probe(id, &Probe::new(v))
    }

    /// The dot product of a quantised vector with node `id`'s row, in
    /// integers (8 × 8 bits summed in 32: vectorised), then scaled.
    pub fn dot_probe(&self, id: NodeId, probe: &Probe) -> Option<f32> {
        let (row, scale) = self.row(id)?;
        let sum: i32 = row
            .iter()
            .zip(&probe.bytes)
            .map(|(a, b)| i32::from(*a) * i32::from(*b))
            .sum();
        Some(sum as f32 * scale * probe.scale)
    }

    /// The dot product of a full-precision `v` with node `id`'s row
    /// (dequantised on the fly: only the row is rounded, not `v`).
    pub fn dot_exact(&self, id: NodeId, v: &[f32]) -> Option<f32> {
        let (row, scale) = self.row(id)?;
        let sum: f32 = row.iter().zip(v).map(|(a, b)| f32::from(*a) * b).sum();
        Some(sum * scale)
    }

    /// Adds node `id`'s row to `acc` (for sums of members).
    pub fn add_to(&self, id: NodeId, acc: &mut [f32]) -> bool {
        let Some((row, s)) = self.row(id) else {
            return false;
        };
        for (a, b) in acc.iter_mut().zip(row) {
            *a += f32::from(*b) * s;
        }
        true
    }

    /// The rows of the given nodes only, renumbered by `new_id`
    /// (compaction): an error when a row still in its file no longer reads.
    pub fn renumbered(&self, new_id: impl Fn(NodeId) -> Option<NodeId>) -> Result<UnitVectors> {
        let mut out = UnitVectors::new(self.embedding.clone(), self.dims);
        let mut cells = Vec::new();
        for (r, node) in self.nodes.iter().enumerate() {
            if let Some(id) = new_id(NodeId(*node)) {
                out.row_of.insert(id.0, out.nodes.len() as u32);
                out.nodes.push(id.0);
                out.scales.push(self.scales[r]);
                cells.extend_from_slice(self.data.try_row(r).map_err(unread)?);
            }
        }
        out.data = Rows::held(self.dims, cells);
        Ok(out)
    }

    /// The rows past the first `from`, as their own set (what an update
    /// added, kept in its delta).
    pub fn rows_from(&self, from: usize) -> Result<VectorRows> {
        let from = from.min(self.nodes.len());
        let mut data = Vec::new();
        for r in from..self.nodes.len() {
            data.extend_from_slice(self.data.try_row(r).map_err(unread)?);
        }
        Ok(VectorRows {
            nodes: self.nodes[from..].to_vec(),
            scales: self.scales[from..].to_vec(),
            data,
        })
    }

    /// Appends rows kept in a delta (replacing any row of the same node) to
    /// the vectors of a tree of `nodes` nodes (a row naming a node past
    /// them is refused).
    pub fn extend(&mut self, rows: &VectorRows, nodes: usize) -> Result<()> {
        if rows.data.len() != rows.nodes.len() * self.dims || rows.scales.len() != rows.nodes.len()
        {
            return Err(Error::InvalidTree(
                "the update's vectors do not match the tree's width".into(),
            ));
        }
        if let Some(n) = rows.nodes.iter().find(|n| **n as usize >= nodes) {
            return Err(Error::InvalidTree(format!(
                "the update's vectors: {}",
                beyond(*n, nodes)
            )));
        }
        if rows.is_empty() {
            return Ok(());
        }
        let data = self.data.held_mut().map_err(unread)?;
        for (i, node) in rows.nodes.iter().enumerate() {
            let bytes = &rows.data[i * self.dims..(i + 1) * self.dims];
            match self.row_of.get(*node) {
                Some(r) => {
                    let at = r as usize * self.dims;
                    data[at..at + self.dims].copy_from_slice(bytes);
                    self.scales[r as usize] = rows.scales[i];
                }
                None => {
                    self.row_of.insert(*node, self.nodes.len() as u32);
                    self.nodes.push(*node);
                    self.scales.push(rows.scales[i]);
                    data.extend_from_slice(bytes);
                }
            }
        }
        self.centroids = None;
        Ok(())
    }
}

/// A row that no longer reads from its file, as an error naming the file.
fn unread((path, problem): (PathBuf, String)) -> Error {
    Error::BadFile { path, problem }
}

/// The problem of a row naming node `n` of a tree of `nodes` nodes.
fn beyond(n: u32, nodes: usize) -> String {
    format!("a row names node {n}, past the tree's {nodes} nodes")
}

/// Rows by node index: a dense table (node ids are dense).
#[derive(Debug, Clone, Default, PartialEq)]
struct RowOf(Vec<u32>);

impl RowOf {
    /// The table of rows whose nodes are `nodes`, in order (sized once).
    fn of(nodes: &[u32]) -> RowOf {
        let len = nodes.iter().max().map_or(0, |m| *m as usize + 1);
        let mut table = vec![u32::MAX; len];
        for (r, n) in nodes.iter().enumerate() {
            table[*n as usize] = r as u32;
        }
        RowOf(table)
    }

    fn get(&self, node: u32) -> Option<u32> {
        self.0
            .get(node as usize)
            .copied()
            .filter(|r| *r != u32::MAX)
    }

    fn insert(&mut self, node: u32, row: u32) {
        let i = node as usize;
        if i >= self.0.len() {
            self.0.resize(i + 1, u32::MAX);
        }
        self.0[i] = row;
    }
}

/// A vector quantised as the rows are, to be dotted with many of them.
#[derive(Debug, Clone)]
pub struct Probe {
    bytes: Vec<i8>,
    scale: f32,
}

impl Probe {
    /// Quantises `v` (8 bits a dimension, one scale).
    pub fn new(v: &[f32]) -> Probe {
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 && max.is_finite() {
            max / 127.0
        } else {
            0.0
        };
        let bytes = v
            .iter()
            .map(|x| {
                if scale > 0.0 {
                    (x / scale).round().clamp(-127.0, 127.0) as i8
                } else {
                    0
                }
            })
            .collect();
        Probe { bytes, scale }
    }
}

/// Quantised rows as a delta keeps them (opaque: made by
/// [`UnitVectors::rows_from`], taken by [`UnitVectors::extend`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VectorRows {
    pub(crate) nodes: Vec<u32>,
    pub(crate) scales: Vec<f32>,
    pub(crate) data: Vec<i8>,
}

impl VectorRows {
    /// Rows held.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether it holds no row.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// The vectors file of the tree file `tree`.
pub fn vectors_path(tree: &Path) -> PathBuf {
    side_path(tree, VECTORS_SUFFIX)
}

/// The passage vectors file of the tree file `tree` (same layout as the
/// document vectors, one row per passage node, each embedded from its
/// document's title and its own text).
pub fn passage_vectors_path(tree: &Path) -> PathBuf {
    side_path(tree, PASSAGE_VECTORS_SUFFIX)
}

/// Writes `vectors` (with the clusters' `centroids`, for a tree's
/// document vectors) beside the tree file `tree` (whose payload is
/// `base`), atomically.
pub fn write(
    vectors: &UnitVectors,
    centroids: Option<&Centroids>,
    tree: &Path,
    base: BaseId,
) -> Result<()> {
    write_to(vectors, centroids, &vectors_path(tree), base)
}

/// Reads the vectors beside the tree file `tree` (of `nodes` nodes: a row
/// naming a node past them is refused before any table is sized by it):
/// `Ok(None)` when there is none; an error when the file is damaged or was written
/// with another tree file than `base` (a stale or foreign copy: used, it
/// would score passages by other texts' vectors). Rows of layout 2 are
/// left in the file and read as asked for.
pub fn read(tree: &Path, base: BaseId, nodes: usize) -> Result<Option<UnitVectors>> {
    read_from(&vectors_path(tree), base, nodes)
}

/// Reads a vectors file at `path` paired with the tree file whose payload
/// is `base` ([`read`]'s rules).
pub(crate) fn read_from(
    path: &Path,
    base: BaseId,
    tree_nodes: usize,
) -> Result<Option<UnitVectors>> {
    layout::read_from(path, base, tree_nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three() -> UnitVectors {
        let m = ndarray::arr2(&[
            [0.6f32, 0.8, 0.0],
            [0.0, -1.0, 0.0],
            [0.57735, 0.57735, 0.57735],
        ]);
        let nodes = [NodeId(4), NodeId(9), NodeId(12)];
        let embedding = Embedding {
            embedder: "test".into(),
            tfidf: None,
            sentences: 1,
        };
        UnitVectors::from_rows(embedding, &nodes, m.view())
    }

    /// Rewrites the directory of a layout-2 file with `change` applied,
    /// its checksum made right again (a file damaged with care).
    fn with_directory(path: &Path, change: impl FnOnce(&mut [u8])) {
        let mut bytes = std::fs::read(path).expect("bytes");
        let header = crate::format::Header::len(9);
        let word = |i| crate::format::word(&bytes, i) as usize;
        let cells = word(2) * word(3) + 4 * word(5) * word(3);
        let directory = header..bytes.len() - cells;
        change(&mut bytes[directory.clone()]);
        let hash = twox_hash::XxHash3_64::oneshot(&bytes[directory]);
        let at = crate::format::Header::len(8);
        bytes[at..at + 8].copy_from_slice(&hash.to_le_bytes());
        std::fs::write(path, bytes).expect("write");
    }

    #[test]
    fn rows_survive_quantisation_and_the_file() {
        let v = three();
        let got = v.get(NodeId(4)).expect("row");
        assert!((got[0] - 0.6).abs() < 0.01 && (got[1] - 0.8).abs() < 0.01);
        let d = v
            .dot(NodeId(12), &[0.57735, 0.57735, 0.57735])
            .expect("row");
        assert!((d - 1.0).abs() < 0.01, "{d}");
        assert!(v.get(NodeId(5)).is_none());

        let dir = tempfile::tempdir().expect("tempdir");
        let tree = dir.path().join("t.tree");
        let base = BaseId { crc: 7, len: 100 };
        write(&v, None, &tree, base).expect("write");
        let read_back = read(&tree, base, 13).expect("read").expect("a file");
        assert!(
            read_back.reads_lazily(),
            "layout 2 leaves the rows in the file"
        );
        assert_eq!(read_back, v);
        // Another tree file's vectors are refused, naming the file and the
        // fix (#66 row 6: they were dropped silently).
        for other in [BaseId { crc: 8, len: 100 }, BaseId { crc: 7, len: 101 }] {
            let e = read(&tree, other, 13).expect_err("another tree file's");
            let e = e.to_string();
            assert!(
                e.contains("t.tree.vectors") && e.contains("another tree file"),
                "{e}"
            );
            assert!(e.contains("treenav build"), "{e}");
        }
        assert_eq!(
            read(&dir.path().join("none.tree"), base, 13).expect("none"),
            None
        );
        // Rows naming nodes the tree does not have are refused.
        let past = read(&tree, base, 12).expect_err("node 12 of 12");
        assert!(
            past.to_string().contains("more than the tree's 12 nodes")
                || past
                    .to_string()
                    .contains("node 12, past the tree's 12 nodes"),
            "{past}"
        );
        let past = read(&tree, base, 3).expect_err("rows past the tree");
        assert!(past.to_string().contains("3 nodes"), "{past}");
        // So is a file whose checksums hold but whose row names node
        // 2^32 − 16 (never a table sized by it).
        let path = vectors_path(&tree);
        let clean = std::fs::read(&path).expect("bytes");
        let described = crate::format::word(&clean, 4) as usize;
        with_directory(&path, |d| {
            d[described + 8..described + 12].copy_from_slice(&(u32::MAX - 15).to_le_bytes())
        });
        let huge = read(&tree, base, 13).expect_err("a huge node id");
        assert!(
            huge.to_string().contains("past the tree's 13 nodes"),
            "{huge}"
        );
        // A flipped byte of the directory is refused when the file opens.
        let mut bytes = clean.clone();
        bytes[crate::format::Header::len(9) + described] ^= 1;
        std::fs::write(&path, &bytes).expect("write");
        let e = read(&tree, base, 13).expect_err("a damaged directory");
        assert!(
            e.to_string().contains("directory fails its checksum"),
            "{e}"
        );
        // A flipped byte of a row is found when its block is read: the row
        // reads as absent, and what needs every row names the file.
        let mut bytes = clean;
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).expect("write");
        let opened = read(&tree, base, 13).expect("opens").expect("a file");
        assert_eq!(opened.get(NodeId(12)), None);
        let e = opened.renumbered(Some).expect_err("a row does not read");
        assert!(
            e.to_string().contains("t.tree.vectors") && e.to_string().contains("checksum"),
            "{e}"
        );
    }

    #[test]
    fn a_delta_s_rows_are_held_to_the_tree() {
        let v = three();
        let mut grown = v.clone();
        let rows = VectorRows {
            nodes: vec![u32::MAX - 15],
            scales: vec![1.0],
            data: vec![0; 3],
        };
        let refused = grown.extend(&rows, 13).expect_err("a huge node id");
        assert!(
            refused.to_string().contains("past the tree's 13 nodes"),
            "{refused}"
        );
        grown
            .extend(&v.rows_from(1).expect("held rows"), 13)
            .expect("rows of the tree's nodes");
        assert_eq!(grown, v, "the same rows again");
    }

    #[test]
    fn rows_read_from_a_file_can_be_changed_and_lose_their_centroids() {
        let v = three();
        let dir = tempfile::tempdir().expect("tempdir");
        let tree = dir.path().join("t.tree");
        let base = BaseId { crc: 7, len: 100 };
        let centroids = Centroids {
            nodes: vec![1, 2],
            rows: Rows::held(3, vec![1.0, 0.0, 0.0, 0.0, 0.6, 0.8]),
        };
        write(&v, Some(&centroids), &tree, base).expect("write");
        let mut opened = read(&tree, base, 13).expect("read").expect("a file");
        let saved = opened.centroids().expect("saved with them").clone();
        assert_eq!(*saved, centroids);
        assert_eq!(saved.get(NodeId(2)), Some(&[0.0, 0.6, 0.8][..]));
        assert_eq!(saved.get(NodeId(3)), None);
        opened
            .set(NodeId(5), ndarray::arr1(&[0.0f32, 0.0, 1.0]).view())
            .expect("set");
        assert!(!opened.reads_lazily(), "held once changed");
        assert!(opened.centroids().is_none(), "no longer the build's");
        assert_eq!(opened.len(), 4);
        assert!(opened.get(NodeId(12)).is_some() && opened.get(NodeId(5)).is_some());
        // Centroids out of order, or naming a node past the tree, are refused.
        let path = vectors_path(&tree);
        let described = crate::format::word(&std::fs::read(&path).expect("bytes"), 4) as usize;
        let at = described + 8 * 3;
        with_directory(&path, |d| {
            d[at..at + 4].copy_from_slice(&3u32.to_le_bytes())
        });
        let e = read(&tree, base, 13).expect_err("3 before 2");
        assert!(e.to_string().contains("ascending"), "{e}");
        with_directory(&path, |d| {
            d[at..at + 8].copy_from_slice(&[1, 0, 0, 0, 13, 0, 0, 0])
        });
        let e = read(&tree, base, 13).expect_err("cluster 13 of 13 nodes");
        assert!(e.to_string().contains("past the tree's 13 nodes"), "{e}");
    }
}

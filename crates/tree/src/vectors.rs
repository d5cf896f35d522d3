//! The build embedding of a tree's documents, kept for updates: one row
//! per document node, quantised to 8 bits with a scale per row (a unit
//! vector's cosines keep about two decimal places), and what embedded
//! them (for TF-IDF, the fitted vocabulary and IDF, so that documents
//! added later land in the same space).
//!
//! Saved beside the tree as `T.vectors`, paired with the tree file it was
//! written with (its checksum and size): a vectors file of another build is
//! ignored, and an update then embeds the tree's documents again.

use crate::embed::tfidf::TfidfModel;
use crate::id::NodeId;
use crate::store::{side_path, write_atomically, FileAt, ReadAt};
use crate::{Error, Result};
use ndarray::{ArrayView1, ArrayView2};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The suffix of the vectors file: `T.tree` → `T.tree.vectors`.
pub const VECTORS_SUFFIX: &str = "vectors";
/// The suffix of the passage vectors file: `T.tree` → `T.tree.passage-vectors`.
pub const PASSAGE_VECTORS_SUFFIX: &str = "passage-vectors";
use crate::format::Header;
use treenav_files::magic::VECTORS as MAGIC;
const VERSION: u32 = 1;
/// Magic, version, reserved, content hash, base tree (crc, reserved, len),
/// rows, dims, description bytes.
const HEADER: usize = Header::len(5);
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
    data: Vec<i8>,
    /// Node → row (`u32::MAX`: none), by node index.
    row_of: RowOf,
}

impl UnitVectors {
    /// No rows yet, of `dims` dimensions.
    pub fn new(embedding: Embedding, dims: usize) -> UnitVectors {
        UnitVectors {
            embedding,
            dims,
            nodes: Vec::new(),
            scales: Vec::new(),
            data: Vec::new(),
            row_of: RowOf::default(),
        }
    }

    /// Rows of `matrix` for `nodes` (row i is node i's), quantised.
    pub fn from_rows(
        embedding: Embedding,
        nodes: &[NodeId],
        matrix: ArrayView2<'_, f32>,
    ) -> UnitVectors {
        let mut out = UnitVectors::new(embedding, matrix.ncols());
        for (node, row) in nodes.iter().zip(matrix.rows()) {
            out.set(*node, row);
        }
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
    /// (the callers check widths where rows enter).
    pub fn set(&mut self, id: NodeId, row: ArrayView1<'_, f32>) {
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
                for (slot, b) in self.data[at..at + self.dims].iter_mut().zip(bytes) {
                    *slot = b;
                }
                self.scales[r as usize] = scale;
            }
            None => {
                self.row_of.insert(id.0, self.nodes.len() as u32);
                self.nodes.push(id.0);
                self.scales.push(scale);
                self.data.extend(bytes);
            }
        }
    }

    /// Node `id`'s row, dequantised.
    pub fn get(&self, id: NodeId) -> Option<Vec<f32>> {
        let r = self.row_of.get(id.0)? as usize;
        let s = self.scales[r];
        Some(
            self.data[r * self.dims..(r + 1) * self.dims]
                .iter()
                .map(|b| f32::from(*b) * s)
                .collect(),
        )
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
        let r = self.row_of.get(id.0)? as usize;
        let row = &self.data[r * self.dims..(r + 1) * self.dims];
        let sum: i32 = row
            .iter()
            .zip(&probe.bytes)
            .map(|(a, b)| i32::from(*a) * i32::from(*b))
            .sum();
        Some(sum as f32 * self.scales[r] * probe.scale)
    }

    /// The dot product of a full-precision `v` with node `id`'s row
    /// (dequantised on the fly: only the row is rounded, not `v`).
    pub fn dot_exact(&self, id: NodeId, v: &[f32]) -> Option<f32> {
        let r = self.row_of.get(id.0)? as usize;
        let row = &self.data[r * self.dims..(r + 1) * self.dims];
        let sum: f32 = row.iter().zip(v).map(|(a, b)| f32::from(*a) * b).sum();
        Some(sum * self.scales[r])
    }

    /// Adds node `id`'s row to `acc` (for sums of members).
    pub fn add_to(&self, id: NodeId, acc: &mut [f32]) -> bool {
        let Some(r) = self.row_of.get(id.0) else {
            return false;
        };
        let r = r as usize;
        let s = self.scales[r];
        for (a, b) in acc
            .iter_mut()
            .zip(&self.data[r * self.dims..(r + 1) * self.dims])
        {
            *a += f32::from(*b) * s;
        }
        true
    }

    /// The rows of the given nodes only, renumbered by `new_id` (compaction).
    pub fn renumbered(&self, new_id: impl Fn(NodeId) -> Option<NodeId>) -> UnitVectors {
        let mut out = UnitVectors::new(self.embedding.clone(), self.dims);
        for (r, node) in self.nodes.iter().enumerate() {
            if let Some(id) = new_id(NodeId(*node)) {
                out.row_of.insert(id.0, out.nodes.len() as u32);
                out.nodes.push(id.0);
                out.scales.push(self.scales[r]);
                out.data
                    .extend_from_slice(&self.data[r * self.dims..(r + 1) * self.dims]);
            }
        }
        out
    }

    /// The rows past the first `from`, as their own set (what an update
    /// added, kept in its delta).
    pub fn rows_from(&self, from: usize) -> VectorRows {
        let from = from.min(self.nodes.len());
        VectorRows {
            nodes: self.nodes[from..].to_vec(),
            scales: self.scales[from..].to_vec(),
            data: self.data[from * self.dims..].to_vec(),
        }
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
        for (i, node) in rows.nodes.iter().enumerate() {
            let bytes = &rows.data[i * self.dims..(i + 1) * self.dims];
            match self.row_of.get(*node) {
                Some(r) => {
                    let at = r as usize * self.dims;
                    self.data[at..at + self.dims].copy_from_slice(bytes);
                    self.scales[r as usize] = rows.scales[i];
                }
                None => {
                    self.row_of.insert(*node, self.nodes.len() as u32);
                    self.nodes.push(*node);
                    self.scales.push(rows.scales[i]);
                    self.data.extend_from_slice(bytes);
                }
            }
        }
        Ok(())
    }
}

/// The problem of a row naming node `n` of a tree of `nodes` nodes.
fn beyond(n: u32, nodes: usize) -> String {
    format!("a row names node {n}, past the tree's {nodes} nodes")
}

/// Rows by node index: a dense table (node ids are dense).
#[derive(Debug, Clone, Default, PartialEq)]
struct RowOf(Vec<u32>);

impl RowOf {
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

/// Writes `vectors` beside the tree file `tree` (whose payload is `base`),
/// atomically.
pub fn write(vectors: &UnitVectors, tree: &Path, base: BaseId) -> Result<()> {
    write_to(vectors, &vectors_path(tree), base)
}

/// Writes `vectors` to `path`, paired with the tree file whose payload is
/// `base`, atomically.
pub fn write_to(vectors: &UnitVectors, path: &Path, base: BaseId) -> Result<()> {
    let path = path.to_path_buf();
    let io = |source| Error::Io {
        path: path.clone(),
        source,
    };
    let described = postcard::to_stdvec(&vectors.embedding).map_err(Error::encode)?;
    let rows = vectors.nodes.len() as u64;
    let body = |out: &mut dyn Write| -> Result<()> {
        out.write_all(&described).map_err(io)?;
        for n in &vectors.nodes {
            out.write_all(&n.to_le_bytes()).map_err(io)?;
        }
        for s in &vectors.scales {
            out.write_all(&s.to_le_bytes()).map_err(io)?;
        }
        let bytes: Vec<u8> = vectors.data.iter().map(|b| *b as u8).collect();
        out.write_all(&bytes).map_err(io)
    };
    let tail = [rows, vectors.dims as u64, described.len() as u64];
    let header_of = |hash: u128, _len: u64| paired_header(MAGIC, VERSION, hash, base, &tail);
    write_atomically(&path, HEADER, body, header_of).map(|_| ())
}

/// Reads the vectors beside the tree file `tree` (of `nodes` nodes: a row
/// naming a node past them is refused before any table is sized by it):
/// `Ok(None)` when there is none; an error when the file is damaged or was written
/// with another tree file than `base` (a stale or foreign copy: used, it
/// would score passages by other texts' vectors).
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
    let path = path.to_path_buf();
    if !path.exists() {
        return Ok(None);
    }
    let bad = |problem: String| Error::BadFile {
        path: path.clone(),
        problem,
    };
    let (source, len) = FileAt::open(&path, &crate::store::SIDE_FILE)?;
    let (head, written_for): ([u8; HEADER], BaseId) =
        read_paired_header(&source, len, (MAGIC, VERSION, "vectors")).map_err(&bad)?;
    if written_for != base {
        return Err(bad(format!(
            "it was written with another tree file (payload {:08x}, {} bytes; this tree's is {:08x}, {} bytes): it is not this generation's vectors (an older copy, or another tree's). Restore the file saved with this tree, or remove it and rebuild the tree (`treenav build`)",
            written_for.crc, written_for.len, base.crc, base.len
        )));
    }
    let word = |i| crate::format::word(&head, i);
    let (rows, dims, described) = (word(2), word(3), word(4));
    if dims == 0 || dims > MAX_DIMS {
        return Err(bad(format!(
            "{dims} dimensions, out of range 1..={MAX_DIMS}"
        )));
    }
    let expected = rows
        .checked_mul(8 + dims)
        .and_then(|n| n.checked_add(described + HEADER as u64));
    if expected != Some(len) {
        return Err(bad("its section sizes do not add up to its size".into()));
    }
    let body = read_checked_body(&source, &head, len).map_err(&bad)?;
    let (described, rest) = body.split_at(described as usize);
    let embedding: Embedding =
        postcard::from_bytes(described).map_err(|e| bad(format!("cannot decode: {e}")))?;
    let rows = rows as usize;
    let (nodes, rest) = rest.split_at(rows * 4);
    let (scales, data) = rest.split_at(rows * 4);
    let word = |c: &[u8]| [c[0], c[1], c[2], c[3]];
    let mut out = UnitVectors::new(embedding, dims as usize);
    out.nodes = nodes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(word(c)))
        .collect();
    out.scales = scales
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(word(c)))
        .collect();
    out.data = data.iter().map(|b| *b as i8).collect();
    if let Some(n) = out.nodes.iter().find(|n| **n as usize >= tree_nodes) {
        return Err(bad(beyond(*n, tree_nodes)));
    }
    for (r, n) in out.nodes.iter().enumerate() {
        out.row_of.insert(*n, r as u32);
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_survive_quantisation_and_the_file() {
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
        let v = UnitVectors::from_rows(embedding, &nodes, m.view());
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
        write(&v, &tree, base).expect("write");
        assert_eq!(read(&tree, base, 13).expect("read"), Some(v.clone()));
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
            past.to_string()
                .contains("node 12, past the tree's 12 nodes"),
            "{past}"
        );
        // So is a file whose checksum holds but whose row names node 2^32 − 16
        // (never a table sized by it).
        let path = vectors_path(&tree);
        let mut bytes = std::fs::read(&path).expect("bytes");
        let described = crate::format::word(&bytes, 4) as usize;
        let third = HEADER + described + 8;
        bytes[third..third + 4].copy_from_slice(&(u32::MAX - 15).to_le_bytes());
        let hash = twox_hash::XxHash3_128::oneshot(&bytes[HEADER..]);
        bytes[16..32].copy_from_slice(&hash.to_le_bytes());
        std::fs::write(&path, &bytes).expect("write");
        let huge = read(&tree, base, 13).expect_err("a huge node id");
        assert!(
            huge.to_string().contains("past the tree's 13 nodes"),
            "{huge}"
        );
        // A delta's rows are held to the tree's nodes the same way.
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
            .extend(&v.rows_from(1), 13)
            .expect("rows of the tree's nodes");
        // A flipped byte is refused.
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).expect("write");
        assert!(read(&tree, base, 13).is_err());
    }
}

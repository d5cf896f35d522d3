//! Format version 5: a tree file opened without decoding its nodes.
//!
//! The payload is an index, then the nodes' labels in record chunks:
//!
//! ```text
//! u64 LE   the index's length
//! index    postcard `IndexV5`: metadata, side files, counts
//! shape    raw little-endian arrays, each read straight into memory: per
//!          node its kind, parent and where its children start; the
//!          children; per record chunk where it starts and its CRC-32
//! records  `CHUNK_NODES` nodes a chunk: postcard `RecordsV5` (their kinds
//!          with summaries, titles, leads, ids and metadata, and their
//!          neighbour lists)
//! ```
//!
//! The header's CRC-32 covers the index's length, the index and the shape; each
//! record chunk is checked by its own CRC when it is first read. Opening
//! reads, checks and validates the index and the shape only (what a walk
//! needs); a node's labels and neighbour list are read, decoded and
//! checked with its chunk's when first asked for, by positioned reads, and
//! kept. At 5M passages the index and shape are 139 MB of the file's
//! 1.18 GiB, and the tree opens in 1.4 s against 9–14 s decoding every
//! node (docs/scale.md).

use crate::format::layouts::{IndexV5, KindV1, MetaV3, RecordsV5};
use crate::id::NodeId;
use crate::node::{Node, Tag, TreeMeta};
use crate::store::{ReadAt, SideFile};
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Nodes per record chunk: a first read of a node decodes this many.
/// (Small under test, so the tests cross chunk boundaries.)
pub(crate) const CHUNK_NODES: usize = if cfg!(test) { 5 } else { 16 };

/// The most nodes a record chunk may claim (a file's own figure is checked
/// against it where it enters).
const MAX_CHUNK_NODES: u32 = 1 << 16;

/// What sits before the record chunks: `u64` index length, then the index.
pub(crate) const INDEX_LEN_BYTES: usize = 8;

/// No parent, in the index's parents array.
pub(crate) const NONE: u32 = u32::MAX;

/// A tree's shape: what a walk, a count or a check reads.
#[derive(Debug, Default)]
pub(crate) struct Shape {
    tags: Vec<Tag>,
    parents: Vec<u32>,
    child_at: Vec<u32>,
    children: Vec<NodeId>,
}

impl Shape {
    pub(crate) fn len(&self) -> usize {
        self.tags.len()
    }

    pub(crate) fn tag(&self, i: usize) -> Option<Tag> {
        self.tags.get(i).copied()
    }

    pub(crate) fn parent(&self, i: usize) -> Option<NodeId> {
        self.parents
            .get(i)
            .filter(|p| **p != NONE)
            .map(|p| NodeId(*p))
    }

    pub(crate) fn children(&self, i: usize) -> &[NodeId] {
        slice_of(&self.child_at, &self.children, i)
    }

    /// Whether node `i` is a document an update has not removed.
    fn is_document(&self, i: usize) -> bool {
        self.tag(i) == Some(Tag::Document) && self.parent(i).is_some()
    }
}

/// Item `i` of a packed list of lists (`at[i]..at[i + 1]` of `items`).
fn slice_of<'a>(at: &[u32], items: &'a [NodeId], i: usize) -> &'a [NodeId] {
    let range = at.get(i).zip(at.get(i + 1));
    range
        .and_then(|(a, b)| items.get(*a as usize..*b as usize))
        .unwrap_or(&[])
}

/// A version-5 tree file, its nodes decoded a chunk at a time as asked for.
pub(crate) struct Mapped {
    /// The file, for messages.
    name: PathBuf,
    /// The whole file (positioned reads: a file cut short under a running
    /// process gives an error, never a crash).
    source: Box<dyn ReadAt>,
    /// Where the record chunks start in `source`.
    records_at: u64,
    shape: Shape,
    /// Per chunk: its start and end after `records_at`, and its CRC-32.
    chunks: Vec<(u64, u64, u32)>,
    /// Per chunk, once read: its nodes, or `None` when it did not decode.
    decoded: Box<[OnceLock<Option<Decoded>>]>,
    chunk_nodes: usize,
    /// Whether the tree has neighbour lists.
    lists: bool,
}

/// A record chunk, read: its nodes and their neighbour lists.
struct Decoded {
    nodes: Box<[Node]>,
    lists: Box<[Vec<NodeId>]>,
}

impl std::fmt::Debug for Mapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapped")
            .field("name", &self.name)
            .field("nodes", &self.len())
            .field("chunks", &self.chunks.len())
            .finish_non_exhaustive()
    }
}

impl Mapped {
    pub(crate) fn len(&self) -> usize {
        self.shape.len()
    }

    /// How many chunks were read so far.
    #[cfg(test)]
    pub(crate) fn chunks_read(&self) -> usize {
        self.decoded.iter().filter(|c| c.get().is_some()).count()
    }

    pub(crate) fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Node `i`, its chunk read and decoded on first use. `None` past the
    /// end, or when its chunk does not read or decode (a file damaged
    /// after it was opened: logged once, with the file and chunk).
    pub(crate) fn get(&self, i: usize) -> Option<&Node> {
        self.chunk_of(i)?.nodes.get(i % self.chunk_nodes)
    }

    /// Number of neighbour lists: none, or one per node.
    pub(crate) fn lists(&self) -> usize {
        if self.lists {
            self.len()
        } else {
            0
        }
    }

    /// Node `i`'s neighbour list, read with its chunk (empty when the
    /// chunk does not read, as [`Mapped::get`]).
    pub(crate) fn neighbours(&self, i: usize) -> &[NodeId] {
        self.chunk_of(i)
            .and_then(|c| c.lists.get(i % self.chunk_nodes))
            .map_or(&[], Vec::as_slice)
    }

    /// The chunk that holds node `i`, read on first use.
    fn chunk_of(&self, i: usize) -> Option<&Decoded> {
        let c = i / self.chunk_nodes;
        let chunk = self.decoded.get(c)?.get_or_init(|| match self.decode(c) {
            Ok(decoded) => Some(decoded),
            Err(e) => {
                tracing::error!(file = %self.name.display(), chunk = c, "cannot read the tree's nodes: {e}");
                None
            }
        });
        chunk.as_ref()
    }

    /// Reads every chunk not read yet (in parallel); the first error.
    pub(crate) fn decode_all(&self) -> Result<()> {
        use rayon::prelude::*;
        self.decoded
            .par_iter()
            .enumerate()
            .try_for_each(|(c, slot)| match slot.get() {
                Some(Some(_)) => Ok(()),
                // It failed before: its error again (a chunk that reads
                // now stays unread for this tree: reload it).
                Some(None) => Err(self.decode(c).err().unwrap_or_else(|| {
                    self.bad(format!("node chunk {c} did not read when first asked for"))
                })),
                None => {
                    let decoded = self.decode(c)?;
                    let _ = slot.set(Some(decoded));
                    match slot.get() {
                        Some(Some(_)) => Ok(()),
                        // A read beside this one failed first.
                        _ => Err(self.bad(format!("node chunk {c} did not read"))),
                    }
                }
            })
    }

    /// Chunk `c`'s nodes: read, checked and decoded.
    fn decode(&self, c: usize) -> Result<Decoded> {
        let &(start, end, crc) = self
            .chunks
            .get(c)
            .ok_or_else(|| self.bad(format!("no node chunk {c}")))?;
        let len = usize::try_from(end - start).map_err(|_| self.bad("a chunk too large".into()))?;
        let mut bytes = vec![0u8; len];
        self.source
            .read_at(self.records_at + start, &mut bytes)
            .map_err(|e| self.bad(format!("cannot read node chunk {c}: {e}")))?;
        if crc32fast::hash(&bytes) != crc {
            return Err(self.bad(format!("node chunk {c} fails its checksum")));
        }
        let records: RecordsV5 = postcard::from_bytes(&bytes)
            .map_err(|e| self.bad(format!("cannot decode node chunk {c}: {e}")))?;
        let first = c * self.chunk_nodes;
        let count = self.chunk_nodes.min(self.len() - first);
        if records.len() != count {
            return Err(self.bad(format!(
                "node chunk {c} holds {} nodes, not {count}",
                records.len()
            )));
        }
        let (mut nodes, mut lists) = (Vec::with_capacity(count), Vec::with_capacity(count));
        for (i, (kind, list)) in (first..).zip(records) {
            let (node, list) = self.node(i, kind, list).map_err(|e| self.bad(e))?;
            nodes.push(node);
            lists.push(list);
        }
        Ok(Decoded {
            nodes: nodes.into(),
            lists: lists.into(),
        })
    }

    /// Node `i` from its record, checked against the index: its kind, and
    /// its neighbour list as [`crate::Tree::validate`] checks a held tree's.
    fn node(
        &self,
        i: usize,
        kind: KindV1,
        list: Vec<NodeId>,
    ) -> std::result::Result<(Node, Vec<NodeId>), String> {
        let kind: crate::node::NodeKind = kind.into();
        if Some(Tag::of(&kind)) != self.shape.tag(i) {
            return Err(format!("node {i}'s kind differs from its index's"));
        }
        if !self.lists && !list.is_empty() {
            return Err(format!("node {i} has neighbours in a tree without them"));
        }
        let is_doc = |n: NodeId| self.shape.is_document(n.index());
        if let Some(problem) = crate::node::list_problem(i, &list, is_doc) {
            return Err(problem);
        }
        let node = Node {
            kind,
            parent: self.shape.parent(i),
            children: self.shape.children(i).to_vec(),
        };
        Ok((node, list))
    }

    fn bad(&self, problem: String) -> Error {
        Error::BadFile {
            path: self.name.clone(),
            problem,
        }
    }
}

/// A version-5 file's index, read: the metadata, the side files it names
/// and the nodes, read as asked for.
pub(crate) struct Opened {
    pub(crate) meta: TreeMeta,
    pub(crate) sides: (Option<SideFile>, Option<SideFile>),
    pub(crate) nodes: Mapped,
}

/// Reads a version-5 file's arrays in order, each straight into its
/// vector, feeding the header's CRC as it goes.
struct Sections<'a> {
    source: &'a dyn ReadAt,
    at: u64,
    end: u64,
    crc: crc32fast::Hasher,
}

/// The shape's arrays as read: kinds, parents, child offsets, children.
type ShapeArrays = (Vec<u8>, Vec<u32>, Vec<u32>, Vec<u32>);

/// Items read from a section, and the CRC state of their bytes.
type Section<T> = std::result::Result<(Vec<T>, crc32fast::Hasher), String>;

impl Sections<'_> {
    /// The next `count` items; an error past the payload's end.
    fn next<T: bytemuck::Pod>(
        &mut self,
        count: usize,
        what: &str,
    ) -> std::result::Result<Vec<T>, String> {
        let bytes = self.span::<T>(self.at, count, what)?;
        let (items, crc) = self.read::<T>(self.at, count, what)?;
        self.crc.combine(&crc);
        self.at += bytes;
        Ok(items)
    }

    /// The bytes of `count` items at `at`: an error past the payload's end.
    fn span<T>(&self, at: u64, count: usize, what: &str) -> std::result::Result<u64, String> {
        count
            .checked_mul(std::mem::size_of::<T>())
            .map(|b| b as u64)
            .filter(|b| at.checked_add(*b).is_some_and(|e| e <= self.end))
            .ok_or_else(|| format!("truncated: its {what} overrun the file"))
    }

    /// `count` items at `at` (within the payload: see [`Sections::span`]),
    /// with the CRC state of their bytes.
    fn read<T: bytemuck::Pod>(&self, at: u64, count: usize, what: &str) -> Section<T> {
        let mut items = vec![T::zeroed(); count];
        let buf: &mut [u8] = bytemuck::cast_slice_mut(&mut items);
        self.source
            .read_at(at, buf)
            .map_err(|e| format!("cannot read its {what}: {e}"))?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(buf);
        Ok((items, crc))
    }

    /// The shape's four arrays (kinds, parents, child offsets, children)
    /// for `n` nodes and `children` children, read in parallel and added
    /// to the CRC in file order.
    fn shape_arrays(
        &mut self,
        n: usize,
        children: usize,
    ) -> std::result::Result<ShapeArrays, String> {
        let tags_at = self.at;
        let parents_at = tags_at + self.span::<u8>(tags_at, n, "node kinds")?;
        let child_at_at = parents_at + self.span::<u32>(parents_at, n, "parents")?;
        let children_at = child_at_at + self.span::<u32>(child_at_at, n + 1, "children")?;
        let end = children_at + self.span::<u32>(children_at, children, "children")?;
        let this = &*self;
        let ((tags, parents), (child_at, kids)) = rayon::join(
            || {
                rayon::join(
                    || this.read::<u8>(tags_at, n, "node kinds"),
                    || this.read::<u32>(parents_at, n, "parents"),
                )
            },
            || {
                rayon::join(
                    || this.read::<u32>(child_at_at, n + 1, "children"),
                    || this.read::<u32>(children_at, children, "children"),
                )
            },
        );
        let (tags, parents, child_at, kids) = (tags?, parents?, child_at?, kids?);
        for crc in [&tags.1, &parents.1, &child_at.1, &kids.1] {
            self.crc.combine(crc);
        }
        self.at = end;
        let le = |mut w: Vec<u32>| {
            w.iter_mut().for_each(|x| *x = u32::from_le(*x));
            w
        };
        Ok((tags.0, le(parents.0), le(child_at.0), le(kids.0)))
    }

    /// The next `count` little-endian `u32`s.
    fn words(&mut self, count: usize, what: &str) -> std::result::Result<Vec<u32>, String> {
        let mut w: Vec<u32> = self.next(count, what)?;
        w.iter_mut().for_each(|x| *x = u32::from_le(*x));
        Ok(w)
    }
}

/// Opens the version-5 payload that starts at `payload_at` in `source`
/// (of `payload_len` bytes; `crc` the header's): reads and checks the
/// index and the shape only. `name` stands for the file in errors.
pub(crate) fn open(
    source: Box<dyn ReadAt>,
    name: &Path,
    (payload_at, payload_len, crc): (u64, u64, u32),
) -> Result<Opened> {
    let bad = |problem: String| Error::BadFile {
        path: name.to_path_buf(),
        problem,
    };
    let end = payload_at.saturating_add(payload_len);
    let mut sections = Sections {
        source: &*source,
        at: payload_at,
        end,
        crc: crc32fast::Hasher::new(),
    };
    let index_len = sections
        .next::<u8>(INDEX_LEN_BYTES, "index length")
        .map_err(bad)?;
    let index_len = index_len.try_into().map_or(0, u64::from_le_bytes);
    let index_len = usize::try_from(index_len).unwrap_or(usize::MAX);
    let index = sections.next::<u8>(index_len, "index").map_err(bad)?;
    let index: IndexV5 = postcard::from_bytes(&index)
        .map_err(|e| bad(format!("cannot decode the tree's index: {e}")))?;
    let (shape, chunk_at, chunk_crc) = read_shape(&index, &mut sections).map_err(bad)?;
    if sections.crc.clone().finalize() != crc {
        return Err(bad("checksum mismatch: the file is corrupted".into()));
    }
    let records_at = sections.at;
    let chunks = chunk_table(&chunk_at, &chunk_crc, end - records_at).map_err(bad)?;
    let decoded = (0..chunks.len()).map(|_| OnceLock::new()).collect();
    Ok(Opened {
        meta: index.meta.into(),
        sides: (index.texts, index.lexical),
        nodes: Mapped {
            name: name.to_path_buf(),
            source,
            records_at,
            shape,
            chunks,
            decoded,
            chunk_nodes: index.chunk_nodes as usize,
            lists: index.lists,
        },
    })
}

/// The shape's arrays and the chunk table's, read and checked for range:
/// kinds known, parents and children inside the tree, child offsets
/// rising. (The structure is checked as any tree's, by [`crate::Tree::validate`].)
fn read_shape(
    index: &IndexV5,
    sections: &mut Sections<'_>,
) -> std::result::Result<(Shape, Vec<u64>, Vec<u32>), String> {
    let n = index.nodes as usize;
    if !(1..=MAX_CHUNK_NODES).contains(&index.chunk_nodes) {
        return Err(format!("{} nodes a chunk", index.chunk_nodes));
    }
    let (tags, parents, child_at, children) = sections.shape_arrays(n, index.children as usize)?;
    if tags.iter().any(|t| Tag::from_byte(*t).is_none()) {
        return Err("a node of an unknown kind".into());
    }
    if parents.iter().any(|p| *p != NONE && *p as usize >= n) {
        return Err("a parent outside the tree".into());
    }
    let rising = child_at.first() == Some(&0)
        && child_at.last() == Some(&index.children)
        && child_at.windows(2).all(|w| w[0] <= w[1]);
    if !rising || children.iter().any(|c| *c as usize >= n) {
        return Err("its children do not fit its nodes".into());
    }
    let chunks = n.div_ceil(index.chunk_nodes as usize);
    let mut chunk_at: Vec<u64> = sections.next(chunks + 1, "chunk table")?;
    chunk_at.iter_mut().for_each(|x| *x = u64::from_le(*x));
    let chunk_crc = sections.words(chunks, "chunk table")?;
    let shape = Shape {
        tags: tags.into_iter().filter_map(Tag::from_byte).collect(),
        parents,
        child_at,
        children: children.into_iter().map(NodeId).collect(),
    };
    Ok((shape, chunk_at, chunk_crc))
}

/// A chunk table: per chunk its start, end and CRC.
type Chunks = Vec<(u64, u64, u32)>;

/// The chunk table, checked against the records' length.
fn chunk_table(at: &[u64], crcs: &[u32], records_len: u64) -> std::result::Result<Chunks, String> {
    let ordered = at.first() == Some(&0)
        && at.last() == Some(&records_len)
        && at.windows(2).all(|w| w[0] <= w[1]);
    if !ordered || at.len() != crcs.len() + 1 {
        return Err("its chunk table does not match its records".into());
    }
    Ok(at
        .windows(2)
        .zip(crcs)
        .map(|(w, crc)| (w[0], w[1], *crc))
        .collect())
}

/// The metadata at the start of a version-5 payload (for `load_meta`).
pub(crate) fn meta_of(payload: &[u8]) -> std::result::Result<TreeMeta, postcard::Error> {
    let index = payload.get(INDEX_LEN_BYTES..).unwrap_or_default();
    Ok(postcard::take_from_bytes::<MetaV3>(index)?.0.into())
}

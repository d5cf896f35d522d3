//! The tree file: a fixed header (magic, format version, payload length,
//! CRC-32 of the payload) followed by the postcard-encoded tree.
//!
//! Version 2 adds each document's neighbour list; version-1 files (no
//! neighbours) still load, and navigate with neighbourhoods off. Version 3
//! adds the corpus fingerprint to the metadata; older files load without it.
//! Version 4 may keep passage texts and the lexical index in side files
//! ([`crate::store`]): [`save`] writes `T.texts` and `T.lexical` beside `T`
//! and records their content hashes; [`to_bytes`] keeps everything in one
//! buffer. Files of versions 1 to 3 hold everything in one file and load as
//! before. Version 5 ([`crate::mapped`], what [`save`] and [`to_bytes`]
//! write) opens without decoding its nodes: the header's CRC covers an
//! index and the tree's shape, read and validated at load; each node's
//! labels are read, checked and decoded with its chunk's when first asked
//! for (a tree with an update pending is decoded whole, as the update
//! changes it). Nodes and metadata go in and out through the frozen layouts of
//! [`crate::format`], never the model's own types.
//!
//! Saving writes a temporary file beside the target, syncs it and renames it
//! over the target, so a crash never leaves a half-written tree. Loading
//! checks every header field and the checksum before decoding, then validates
//! the structure, so a truncated, corrupted or foreign file is an error,
//! never a panic or a garbage tree.

use crate::format::layouts::{
    Chunk, IndexV5, KindV1Out, MetaV1, MetaV3, NodeV1, NodeV1Out, TreeV1, TreeV2, TreeV3, TreeV4,
    TreeV4Out,
};
use crate::id::NodeId;
use crate::lexical::{Lexical, LEXICAL_SUFFIX};
use crate::model::Tree;
use crate::node::{Node, NodeKind, Tag, TreeMeta};
use crate::store::{side_path, write_texts, SideFile, TextStore, TEXTS_SUFFIX};
use crate::{mapped, Error, Result};
use serde::ser::{Error as _, SerializeSeq};
use std::borrow::Cow;
use std::io::Write;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use treenav_text::index::LexicalIndex;

use treenav_files::magic::TREE as MAGIC;

/// A tree file as an input.
const TREE_FILE: treenav_files::Kind =
    treenav_files::Kind::new("tree file", crate::store::TREE_FILE_CAP).with_magic(MAGIC);
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 5;
/// The oldest format version this build still reads.
pub const OLDEST_VERSION: u32 = 1;
const HEADER_LEN: usize = 8 + 4 + 4 + 8 + 4;

/// Nodes per chunk of a version-4 payload: chunks are encoded and decoded
/// in parallel.
/// (Small under test, so the tests cross chunk boundaries.)
const NODE_CHUNK: usize = if cfg!(test) { 7 } else { 1 << 16 };

/// A range of a tree's nodes, encoded as `Vec<Node>` is, with passage
/// texts read from wherever the tree holds them (`with_texts`) or left empty.
struct NodesOut<'a> {
    tree: &'a Tree,
    range: std::ops::Range<usize>,
    with_texts: bool,
}

impl serde::Serialize for NodesOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.range.len()))?;
        for i in self.range.clone() {
            let node = self
                .tree
                .get(NodeId(i as u32))
                .ok_or_else(|| S::Error::custom(format!("node {i} cannot be read")))?;
            let text = || match self.with_texts {
                true => self.tree.passage_text(NodeId(i as u32)),
                false => Ok(Cow::Borrowed("")),
            };
            let text = match &node.kind {
                NodeKind::Passage { .. } => text().map_err(S::Error::custom)?,
                _ => Cow::Borrowed(""),
            };
            seq.serialize_element(&NodeV1Out::of(node, || text))?;
        }
        seq.end()
    }
}

/// Encodes a version-4 payload.
fn payload_v4(tree: &Tree, texts: Option<SideFile>, lexical: Option<SideFile>) -> Result<Vec<u8>> {
    use rayon::prelude::*;
    let encode = |e: postcard::Error| Error::encode(e);
    let ranges: Vec<std::ops::Range<usize>> = (0..tree.len())
        .step_by(NODE_CHUNK)
        .map(|start| start..(start + NODE_CHUNK).min(tree.len()))
        .collect();
    let nodes = ranges
        .par_iter()
        .map(|range| {
            let chunk = NodesOut {
                tree,
                range: range.clone(),
                with_texts: texts.is_none(),
            };
            postcard::to_stdvec(&chunk).map(Chunk).map_err(encode)
        })
        .collect::<Result<Vec<Chunk>>>()?;
    let neighbours = match tree.has_neighbours() {
        false => Vec::new(),
        true => ranges
            .par_iter()
            .map(|range| {
                let lists: Vec<&[NodeId]> = range
                    .clone()
                    .map(|i| tree.neighbours(NodeId(i as u32)))
                    .collect();
                postcard::to_stdvec(&lists).map(Chunk).map_err(encode)
            })
            .collect::<Result<Vec<Chunk>>>()?,
    };
    let out = TreeV4Out {
        meta: tree.meta().into(),
        nodes,
        neighbours,
        texts,
        lexical,
    };
    postcard::to_stdvec(&out).map_err(encode)
}

/// A version-5 payload, and how many of its first bytes the header's
/// CRC covers (the index and the shape).
struct PayloadV5 {
    bytes: Vec<u8>,
    checked: usize,
}

/// Encodes a tree as a version-5 payload (its side files named, or none:
/// then passage texts are in the records).
fn payload_v5(
    tree: &Tree,
    texts: Option<SideFile>,
    lexical: Option<SideFile>,
) -> Result<PayloadV5> {
    let n = tree.len();
    let too_many = |what: &str| Error::InvalidTree(format!("too many {what} for one tree file"));
    let id = |i: usize| NodeId(i as u32);
    let records = records_v5(tree, texts.is_none())?;
    let mut shape = Vec::new();
    shape.extend((0..n).map(|i| tree.tag(id(i)).map_or(0, Tag::byte)));
    for i in 0..n {
        shape.extend(
            tree.parent(id(i))
                .map_or(mapped::NONE, |p| p.0)
                .to_le_bytes(),
        );
    }
    let mut children = Vec::new();
    let mut count = 0u32;
    shape.extend(count.to_le_bytes());
    for i in 0..n {
        let list = tree.children(id(i));
        count = u32::try_from(list.len())
            .ok()
            .and_then(|l| count.checked_add(l))
            .ok_or_else(|| too_many("nodes"))?;
        shape.extend(count.to_le_bytes());
        children.extend(list.iter().flat_map(|c| c.0.to_le_bytes()));
    }
    shape.extend(children);
    let mut at = 0u64;
    shape.extend(at.to_le_bytes());
    for r in &records {
        at += r.len() as u64;
        shape.extend(at.to_le_bytes());
    }
    shape.extend(
        records
            .iter()
            .flat_map(|r| crc32fast::hash(r).to_le_bytes()),
    );
    let index = IndexV5 {
        meta: tree.meta().into(),
        texts,
        lexical,
        nodes: u32::try_from(n).map_err(|_| too_many("nodes"))?,
        children: count,
        chunk_nodes: mapped::CHUNK_NODES as u32,
        lists: tree.has_neighbours(),
    };
    let index = postcard::to_stdvec(&index).map_err(Error::encode)?;
    let mut bytes =
        Vec::with_capacity(mapped::INDEX_LEN_BYTES + index.len() + shape.len() + at as usize);
    bytes.extend_from_slice(&(index.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&index);
    bytes.extend_from_slice(&shape);
    let checked = bytes.len();
    for r in records {
        bytes.extend_from_slice(&r);
    }
    Ok(PayloadV5 { bytes, checked })
}

/// The record chunks of a tree, encoded in parallel (passage texts in
/// them when `with_texts`).
fn records_v5(tree: &Tree, with_texts: bool) -> Result<Vec<Vec<u8>>> {
    use rayon::prelude::*;
    let n = tree.len();
    let id = |i: usize| NodeId(i as u32);
    (0..n.div_ceil(mapped::CHUNK_NODES))
        .into_par_iter()
        .map(|c| {
            let range = c * mapped::CHUNK_NODES..((c + 1) * mapped::CHUNK_NODES).min(n);
            let kinds = range
                .map(|i| {
                    let node = tree.get(id(i)).ok_or_else(|| missing(i))?;
                    let text = match (with_texts, Tag::of(&node.kind)) {
                        (true, Tag::Passage) => tree.passage_text(id(i))?,
                        _ => Cow::Borrowed(""),
                    };
                    Ok((KindV1Out::of(&node.kind, || text), tree.neighbours(id(i))))
                })
                .collect::<Result<Vec<_>>>()?;
            postcard::to_stdvec(&kinds).map_err(Error::encode)
        })
        .collect()
}

fn missing(i: usize) -> Error {
    Error::InvalidTree(format!("node {i} cannot be read"))
}

/// Decodes a version-4 payload's chunks in parallel: the nodes, the
/// neighbour lists and the side files it names.
#[allow(clippy::type_complexity)]
fn decode_v4(
    payload: &[u8],
    spare: usize,
) -> std::result::Result<
    (
        TreeMeta,
        Vec<Node>,
        Vec<Vec<NodeId>>,
        (Option<SideFile>, Option<SideFile>),
    ),
    postcard::Error,
> {
    let v4: TreeV4<'_> = postcard::from_bytes(payload)?;
    // Each node takes at least 3 bytes, each list at least 1.
    let nodes = decode_chunks::<NodeV1, _>(&v4.nodes, payload.len() / 3, spare, || Node {
        kind: NodeKind::Root,
        parent: None,
        children: Vec::new(),
    })?;
    let neighbours =
        decode_chunks::<Vec<NodeId>, _>(&v4.neighbours, payload.len(), spare, Vec::new)?;
    Ok((v4.meta.into(), nodes, neighbours, (v4.texts, v4.lexical)))
}

/// Decodes chunks, each an encoded `Vec<T>`, into one vector in parallel,
/// straight into its place: the vector is first filled with `placeholder`
/// (in parallel), then each chunk's items overwrite their slots. (Decoding
/// each chunk into a vector of its own and joining them moved 300 MB at
/// 1M passages, faulting in every page twice.) At most `max` items; room
/// for `spare` more (an update's nodes, pushed when it is applied).
fn decode_chunks<D: serde::de::DeserializeOwned + Into<T>, T: Send>(
    chunks: &[&[u8]],
    max: usize,
    spare: usize,
    placeholder: impl Fn() -> T + Sync,
) -> std::result::Result<Vec<T>, postcard::Error> {
    use rayon::prelude::*;
    let lens: Vec<usize> = chunks
        .iter()
        .map(|c| postcard::take_from_bytes::<usize>(c).map(|(len, _)| len))
        .collect::<std::result::Result<_, _>>()?;
    let total = lens
        .iter()
        .try_fold(0usize, |sum, len| sum.checked_add(*len))
        .filter(|total| *total <= max)
        .ok_or(postcard::Error::DeserializeBadVarint)?;
    let mut out: Vec<T> = Vec::with_capacity(total.saturating_add(spare.min(max)));
    out.par_extend((0..total).into_par_iter().map(|_| placeholder()));
    let mut slots: Vec<&mut [T]> = Vec::with_capacity(chunks.len());
    let mut rest = out.as_mut_slice();
    for len in &lens {
        let (head, tail) = rest.split_at_mut(*len);
        slots.push(head);
        rest = tail;
    }
    slots
        .into_par_iter()
        .zip(chunks)
        .try_for_each(|(slots, chunk)| {
            let mut de = postcard::Deserializer::from_bytes(chunk);
            serde::de::DeserializeSeed::deserialize(IntoSlots::<D, T>(slots, PhantomData), &mut de)
        })?;
    Ok(out)
}

/// Deserialises a sequence of `D` into the given slots of `T`, which it
/// must fill exactly.
struct IntoSlots<'s, D, T>(&'s mut [T], PhantomData<D>);

impl<'de, D: serde::Deserialize<'de> + Into<T>, T> serde::de::DeserializeSeed<'de>
    for IntoSlots<'_, D, T>
{
    type Value = ();
    fn deserialize<De: serde::Deserializer<'de>>(
        self,
        d: De,
    ) -> std::result::Result<(), De::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, D: serde::Deserialize<'de> + Into<T>, T> serde::de::Visitor<'de> for IntoSlots<'_, D, T> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a sequence of {} items", self.0.len())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<(), A::Error> {
        use serde::de::Error as _;
        let mut filled = 0;
        while let Some(item) = seq.next_element::<D>()? {
            let slot = self
                .0
                .get_mut(filled)
                .ok_or_else(|| A::Error::custom("more items than the chunk's length"))?;
            *slot = item.into();
            filled += 1;
        }
        if filled != self.0.len() {
            return Err(A::Error::custom("fewer items than the chunk's length"));
        }
        Ok(())
    }
}

/// Encodes a tree into the bytes of one self-contained file (header +
/// payload, passage texts included, no side files).
pub fn to_bytes(tree: &Tree) -> Result<Vec<u8>> {
    Ok(framed_v5(payload_v5(tree, None, None)?))
}

/// Encodes a tree as a version-4 file (one file, texts included), for
/// tools and tests that must produce files older builds read.
pub fn to_bytes_v4(tree: &Tree) -> Result<Vec<u8>> {
    Ok(framed(4, payload_v4(tree, None, None)?))
}

/// Encodes a tree as a version-3 file (one file, texts included), for tools
/// and tests that must produce files older builds read.
pub fn to_bytes_v3(tree: &Tree) -> Result<Vec<u8>> {
    let (meta, nodes, neighbours) = tree.clone().into_parts()?;
    let out = TreeV3 {
        meta: MetaV3::from(&meta),
        nodes: nodes.iter().map(NodeV1Out::held).collect(),
        neighbours,
    };
    let payload = postcard::to_stdvec(&out).map_err(Error::encode)?;
    Ok(framed(3, payload))
}

/// Encodes a tree as a version-1 file (neighbour lists and corpus
/// fingerprint dropped), for tools and tests that must produce files older
/// builds read.
pub fn to_bytes_v1(tree: &Tree) -> Result<Vec<u8>> {
    let (meta, nodes, _) = tree.clone().into_parts()?;
    let out = TreeV1 {
        meta: MetaV1::from(&meta),
        nodes: nodes.iter().map(NodeV1Out::held).collect(),
    };
    let payload = postcard::to_stdvec(&out).map_err(Error::encode)?;
    Ok(framed(1, payload))
}

/// Header and payload (of version 4 or older), the CRC over the payload.
fn framed(version: u32, payload: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&payload);
    with_header(version, crc, payload)
}

/// Header and a version-5 payload, the CRC over its index and shape.
fn framed_v5(payload: PayloadV5) -> Vec<u8> {
    let checked = payload.bytes.get(..payload.checked).unwrap_or_default();
    with_header(5, crc32fast::hash(checked), payload.bytes)
}

fn with_header(version: u32, crc: u32, payload: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // flags, reserved
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// Nodes as read into the model.
fn nodes(stored: Vec<NodeV1>) -> Vec<Node> {
    stored.into_iter().map(Node::from).collect()
}

/// Decodes and validates file bytes; `name` stands for the file in errors.
pub fn from_bytes(bytes: &[u8], name: &Path) -> Result<Tree> {
    from_bytes_with_room(bytes, name, 0)
}

/// [`from_bytes`], the arena decoded with room for `room` more nodes (an
/// update about to add them: no reallocation of the whole arena).
fn from_bytes_with_room(bytes: &[u8], name: &Path, room: usize) -> Result<Tree> {
    let (version, crc) = checked_header(
        bytes.get(..HEADER_LEN).unwrap_or(bytes),
        bytes.len() as u64,
        name,
    )?;
    let delta = pending_delta(bytes, name)?;
    let base = crate::delta::base_of(bytes);
    if version >= 5 {
        let source = Box::new(bytes.to_vec());
        let payload = (HEADER_LEN as u64, (bytes.len() - HEADER_LEN) as u64, crc);
        return open_v5(source, name, payload, delta, base);
    }
    let bad = |problem: String| Error::BadFile {
        path: name.to_path_buf(),
        problem,
    };
    let payload = &bytes[HEADER_LEN..];
    if crc32fast::hash(payload) != crc {
        return Err(bad("checksum mismatch: the file is corrupted".into()));
    }
    let decode_error = |e: postcard::Error| bad(format!("cannot decode the tree: {e}"));
    // Updates since the tree file was written: the delta of the generation
    // the lexical index was committed at (read first, so that the arena
    // is decoded with room for the nodes it adds).
    let spare = delta.as_ref().map_or(0, |d| d.nodes.len()) + room;
    let no_sides = (None, None);
    let (meta, nodes, neighbours, sides) = match version {
        1 => {
            let v1: TreeV1<NodeV1> = postcard::from_bytes(payload).map_err(decode_error)?;
            (v1.meta.into(), nodes(v1.nodes), Vec::new(), no_sides)
        }
        2 => {
            let v2: TreeV2 = postcard::from_bytes(payload).map_err(decode_error)?;
            (v2.meta.into(), nodes(v2.nodes), v2.neighbours, no_sides)
        }
        3 => {
            let v3: TreeV3<NodeV1> = postcard::from_bytes(payload).map_err(decode_error)?;
            (v3.meta.into(), nodes(v3.nodes), v3.neighbours, no_sides)
        }
        _ => decode_v4(payload, spare).map_err(decode_error)?,
    };
    let tree = Tree::with_neighbours(meta, nodes, neighbours).map_err(|e| bad(e.to_string()))?;
    attach_sides(tree, name, sides, delta, base)
}

/// Checks a tree file's header (`header`, the file's first bytes) against
/// the file's length: magic, a version this build reads, the payload's
/// length. Returns the version and the header's CRC.
fn checked_header(header: &[u8], file_len: u64, name: &Path) -> Result<(u32, u32)> {
    let bad = |problem: String| Error::BadFile {
        path: name.to_path_buf(),
        problem,
    };
    if header.len() < MAGIC.len() || &header[..MAGIC.len()] != MAGIC {
        return Err(bad("not a treenav tree file (wrong magic bytes)".into()));
    }
    if header.len() < HEADER_LEN {
        return Err(bad(format!(
            "truncated: {file_len} bytes, shorter than the {HEADER_LEN}-byte header"
        )));
    }
    let u32_at = |at: usize| {
        let mut b = [0u8; 4];
        b.copy_from_slice(&header[at..at + 4]);
        u32::from_le_bytes(b)
    };
    let version = u32_at(8);
    if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(bad(format!(
            "format version {version}, but this build reads versions {OLDEST_VERSION} to {FORMAT_VERSION}: rebuild the tree with `treenav build`"
        )));
    }
    let mut len_bytes = [0u8; 8];
    len_bytes.copy_from_slice(&header[16..24]);
    let len = u64::from_le_bytes(len_bytes);
    let held = file_len - HEADER_LEN as u64;
    if held != len {
        return Err(bad(format!(
            "truncated or padded: header promises {len} payload bytes, file holds {held}"
        )));
    }
    Ok((version, u32_at(24)))
}

/// Opens a version-5 payload (`payload`: where it starts in `source`, its
/// length, the header's CRC): the index read and the tree's shape checked,
/// the nodes left in the file until asked for, then the side files and
/// any pending delta (which decodes every node: an update changes them).
fn open_v5(
    source: Box<dyn crate::store::ReadAt>,
    name: &Path,
    payload: (u64, u64, u32),
    delta: Option<crate::delta::Delta>,
    base: crate::vectors::BaseId,
) -> Result<Tree> {
    let opened = mapped::open(source, name, payload)?;
    let tree = Tree::mapped_unchecked(opened.meta, opened.nodes);
    // The structure is checked while the side files open (on the other
    // core): each reads the shape only, never trusting what is unchecked
    // beyond its arrays' bounds.
    let (checked, read) = rayon::join(
        || tree.validate(),
        || read_sides(&tree, name, opened.sides, delta.as_ref(), base),
    );
    checked.map_err(|e| Error::BadFile {
        path: name.to_path_buf(),
        problem: e.to_string(),
    })?;
    attach_read(tree, name, read?, delta)
}

/// What a tree's side files hold, read: the vectors (with those the
/// delta added), the text store and the lexical index.
struct Sides {
    documents: Option<crate::vectors::UnitVectors>,
    passages: Option<crate::vectors::UnitVectors>,
    texts: Option<TextStore>,
    lexical: Option<Lexical>,
}

/// Attaches the side files a tree file names (its text store, its lexical
/// index) and the build's vectors saved with it (whose payload is `base`),
/// then applies the delta of updates since it was written.
fn attach_sides(
    tree: Tree,
    name: &Path,
    sides: (Option<SideFile>, Option<SideFile>),
    delta: Option<crate::delta::Delta>,
    base: crate::vectors::BaseId,
) -> Result<Tree> {
    let read = read_sides(&tree, name, sides, delta.as_ref(), base)?;
    attach_read(tree, name, read, delta)
}

/// Reads the side files of [`attach_sides`] (`tree`'s shape tells their
/// sizes).
fn read_sides(
    tree: &Tree,
    name: &Path,
    sides: (Option<SideFile>, Option<SideFile>),
    delta: Option<&crate::delta::Delta>,
    base: crate::vectors::BaseId,
) -> Result<Sides> {
    // What the embedding judge and the descent by centroid read at query
    // time: the documents' vectors (with those the updates added) and the
    // passages'.
    // Rows may name the tree file's nodes, and the delta's added ones.
    let built = tree.len();
    let updated = delta.map_or(built, |d| d.nodes_after(built));
    let mut documents = crate::vectors::read(name, base, built)?;
    if let (Some(v), Some(d)) = (documents.as_mut(), delta) {
        v.extend(&d.vectors, updated)?;
        // The build's centroids: an update moved documents (a removal
        // adds no row), so the first descent sums them again.
        v.forget_centroids();
    }
    let passages_path = crate::vectors::passage_vectors_path(name);
    let mut passages = crate::vectors::read_from(&passages_path, base, built)?;
    if let (Some(v), Some(d)) = (passages.as_mut(), delta) {
        v.extend(&d.passage_vectors, updated)?;
    }
    let texts = match sides.0 {
        Some(texts) => {
            let store_path = side_path(name, TEXTS_SUFFIX);
            let passages = tree.passages().count();
            let store = TextStore::open(&store_path, texts, passages)
                .map_err(|e| missing_side_file(e, name, &store_path, "passage texts"))?;
            Some(store)
        }
        None => None,
    };
    let lexical = match sides.1 {
        Some(lexical) => Some(open_lexical(tree, name, lexical, delta.map(|d| d.indexed))?),
        None => None,
    };
    Ok(Sides {
        documents,
        passages,
        texts,
        lexical,
    })
}

/// Attaches side files read by [`read_sides`], then applies the delta.
fn attach_read(
    mut tree: Tree,
    name: &Path,
    read: Sides,
    delta: Option<crate::delta::Delta>,
) -> Result<Tree> {
    tree.set_vectors(read.documents.map(std::sync::Arc::new));
    tree.set_passage_vectors(read.passages.map(std::sync::Arc::new));
    if let Some(store) = read.texts {
        tree.attach_texts(store)?;
    }
    let Some(lexical) = read.lexical else {
        return Ok(tree);
    };
    tree.attach_lexical(lexical);
    if let Some(delta) = delta {
        crate::delta::apply(&mut tree, delta).map_err(|e| match e {
            Error::InvalidTree(problem) => Error::BadFile {
                path: crate::delta::delta_path(name),
                problem,
            },
            other => other,
        })?;
    }
    Ok(tree)
}

/// The delta of updates beside the tree file `name` (whose bytes are
/// `bytes`): the one of the generation its lexical index was committed at,
/// if any.
fn pending_delta(bytes: &[u8], name: &Path) -> Result<Option<crate::delta::Delta>> {
    let folder = index_folder(name);
    if !folder.join("meta.json").is_file() {
        return Ok(None);
    }
    let payload = LexicalIndex::payload_in(&folder).ok().flatten();
    let generation = crate::delta::generation_of(payload.as_deref()).unwrap_or_default();
    crate::delta::current(name, crate::delta::base_of(bytes), generation)
}

/// The lexical side file of the tree file `name` (described by `expected`),
/// checked against the tree's documents.
fn open_lexical(
    tree: &Tree,
    name: &Path,
    expected: SideFile,
    indexed: Option<u64>,
) -> Result<Lexical> {
    let lexical_path = side_path(name, LEXICAL_SUFFIX);
    let documents: Vec<bool> = (0..tree.len())
        .map(|i| tree.level_of(NodeId(i as u32)) == Some(crate::node::LevelKind::Document))
        .collect();
    let count = documents.iter().filter(|d| **d).count() as u64;
    let is_document = |n: NodeId| documents.get(n.index()).copied().unwrap_or(false);
    let rebuild = |analyzer| tree.document_index_with(analyzer);
    Lexical::open(name, expected, (count, &is_document), indexed, &rebuild)
        .map_err(|e| missing_side_file(e, name, &lexical_path, "lexical index"))
}

/// A side file that is not there gets an error that says which tree
/// needs it and what it holds.
fn missing_side_file(error: Error, tree: &Path, side: &Path, what: &str) -> Error {
    match error {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            Error::BadFile {
                path: tree.to_path_buf(),
                problem: format!(
                    "its {what} are kept in {}, which is missing: copy it beside the tree file, or rebuild the tree",
                    side.display()
                ),
            }
        }
        other => other,
    }
}

/// The side files a saved tree keeps beside `path`: the text store and the
/// lexical file.
pub fn side_files(path: &Path) -> [PathBuf; 2] {
    [
        side_path(path, TEXTS_SUFFIX),
        side_path(path, LEXICAL_SUFFIX),
    ]
}

/// The folder of a saved tree's lexical index (tantivy): `T` → `T.tantivy`.
pub fn index_folder(path: &Path) -> PathBuf {
    side_path(path, crate::lexical::INDEX_SUFFIX)
}

/// Saves a tree as one generation of files (see [`crate::generation`]):
/// the passage texts (`T.texts`), the lexical index and statistics
/// (`T.tantivy`, `T.lexical`, computed here unless the tree was loaded with
/// them), the vectors when it has them (`T.vectors`,
/// `T.passage-vectors`) and the tree file `T`, which records the side
/// files' content hashes. All are written under staged names, then made
/// current by one atomic commit: a failure at any point (a full disk, a
/// kill) leaves the tree as it was or as saved, never a mix. Takes the
/// tree's writer lock (`T.lock`) for the while.
///
/// A tree changed by updates is saved compacted (removed nodes dropped,
/// ids renumbered), and the delta of an earlier tree file at `path` is
/// removed by the commit.
pub fn save(tree: &Tree, path: &Path) -> Result<()> {
    let lock = crate::generation::Lock::acquire(path)?;
    save_locked(tree, path, &lock)
}

/// [`save`], for a caller already holding the tree's writer lock.
pub fn save_locked(tree: &Tree, path: &Path, lock: &crate::generation::Lock) -> Result<()> {
    if tree.updates().is_some() {
        return save_locked(&tree.compacted()?, path, lock);
    }
    crate::generation::save(path, lock, |staged| write_parts(tree, staged))
}

/// Writes every file of a saved tree beside `path`, each atomically.
fn write_parts(tree: &Tree, path: &Path) -> Result<()> {
    let [texts_path, _] = side_files(path);
    let passages = tree.passages().count();
    let texts = write_texts(&texts_path, passages, || {
        Box::new(tree.passages().map(|p| tree.passage_text(p)))
    })?;
    let lexical = tree.lexical_for_saving()?.write(path)?;
    let bytes = framed_v5(payload_v5(tree, Some(texts), Some(lexical))?);
    let base = crate::delta::base_of(&bytes);
    if let Some(vectors) = tree.vectors() {
        // The descent by meaning's centroids, saved so that a query of the
        // opened tree never sums every document's row first.
        let centroids = crate::vectors::Centroids::of(tree, vectors);
        crate::vectors::write(vectors, Some(&centroids), path, base)?;
    }
    if let Some(vectors) = tree.passage_vectors() {
        let at = crate::vectors::passage_vectors_path(path);
        crate::vectors::write_to(vectors, None, &at, base)?;
    }
    write_file(&bytes, path)
}

/// Writes one self-contained tree file (see [`to_bytes`]) atomically: no
/// side files.
pub fn save_single(tree: &Tree, path: &Path) -> Result<()> {
    write_file(&to_bytes(tree)?, path)
}

/// Writes bytes to `path` atomically: temp file, fsync, rename.
fn write_file(bytes: &[u8], path: &Path) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    treenav_files::atomic::write_atomically(path, crate::fault::io_step, io, |f| {
        f.write_all(bytes).map_err(io)
    })
}

/// Loads and validates a tree file. Only a regular file is read, and only
/// past a header with the right magic bytes, so a device (`/dev/zero`) or
/// a large foreign file is refused without reading it whole.
pub fn load(path: &Path) -> Result<Tree> {
    load_with_room(path, 0)
}

/// [`load`], with room in the arena for `room` more nodes.
pub fn load_with_room(path: &Path, room: usize) -> Result<Tree> {
    use crate::store::ReadAt;
    crate::generation::settle(path)?;
    let (_, len) = open_tree_file(path)?;
    let (file, now) = crate::store::FileAt::open(path, &TREE_FILE)?;
    let mut header = vec![0u8; HEADER_LEN.min(now as usize)];
    file.read_at(0, &mut header).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let (version, crc) = checked_header(&header, now, path)?;
    if version < 5 || now != len {
        let bytes = read_parallel(path, len)?;
        return from_bytes_with_room(&bytes, path, room);
    }
    // Version 5: the index read, the nodes left in the file.
    let delta = pending_delta(&header, path)?;
    let base = crate::delta::base_of(&header);
    let payload = (HEADER_LEN as u64, now - HEADER_LEN as u64, crc);
    open_v5(Box::new(file), path, payload, delta, base)
}

/// Reads a file of `len` bytes whole, in blocks read by positioned reads in
/// parallel (a 200 MB tree file reads in about half the time of one
/// sequential read, which spends it faulting in the buffer's pages). A file
/// that changed length meanwhile is an error.
fn read_parallel(path: &Path, len: u64) -> Result<Vec<u8>> {
    use crate::store::ReadAt;
    use rayon::prelude::*;
    const BLOCK: usize = 8 << 20;
    let len = usize::try_from(len).map_err(|_| Error::BadFile {
        path: path.to_path_buf(),
        problem: "too large for this machine".into(),
    })?;
    let (file, now) = crate::store::FileAt::open(path, &TREE_FILE)?;
    let mut bytes = vec![0u8; len];
    let read = if now == len as u64 {
        bytes
            .par_chunks_mut(BLOCK)
            .enumerate()
            .try_for_each(|(i, block)| file.read_at((i * BLOCK) as u64, block))
    } else {
        Err(std::io::ErrorKind::UnexpectedEof.into())
    };
    read.map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(bytes)
}

/// How a tree file was built, read from the start of its payload only
/// (not checksummed: for choosing settings before loading it whole).
pub fn load_meta(path: &Path) -> Result<TreeMeta> {
    use crate::store::ReadAt;
    crate::generation::settle(path)?;
    let (_, len) = open_tree_file(path)?;
    let (file, _) = crate::store::FileAt::open(path, &TREE_FILE)?;
    let bad = |problem: String| Error::BadFile {
        path: path.to_path_buf(),
        problem,
    };
    let take = len.min(HEADER_LEN as u64 + (1 << 20)) as usize;
    let mut bytes = vec![0u8; take];
    file.read_at(0, &mut bytes)
        .map_err(|e| bad(format!("cannot read its header: {e}")))?;
    if take < HEADER_LEN {
        return Err(bad("truncated: shorter than its header".into()));
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    let payload = &bytes[HEADER_LEN..];
    let undecodable = |e: postcard::Error| bad(format!("cannot decode its metadata: {e}"));
    match version {
        1 | 2 => Ok(postcard::take_from_bytes::<MetaV1>(payload)
            .map_err(undecodable)?
            .0
            .into()),
        3 | 4 => Ok(postcard::take_from_bytes::<MetaV3>(payload)
            .map_err(undecodable)?
            .0
            .into()),
        5 => mapped::meta_of(payload).map_err(undecodable),
        v => Err(bad(format!("format version {v}, not one this build reads"))),
    }
}

/// The format version a tree file's header names (not validated further).
pub fn version(path: &Path) -> Result<u32> {
    use std::io::Read;
    let (file, _) = open_tree_file(path)?;
    let mut version = [0u8; 4];
    file.take(4)
        .read_exact(&mut version)
        .map_err(|_| Error::BadFile {
            path: path.to_path_buf(),
            problem: "truncated: no format version after the magic bytes".into(),
        })?;
    Ok(u32::from_le_bytes(version))
}

/// Opens a tree file and reads past its magic bytes: a regular file with
/// the right magic, or an error (never blocking on a FIFO). Returns the
/// file and its length.
fn open_tree_file(path: &Path) -> Result<(std::fs::File, u64)> {
    let input = treenav_files::open(path, &TREE_FILE).map_err(|e| match e {
        treenav_files::Error::BadMagic { .. } => Error::BadFile {
            path: path.to_path_buf(),
            problem: "not a treenav tree file (wrong magic bytes)".into(),
        },
        other => other.into(),
    })?;
    Ok((input.file, input.len))
}

#[cfg(test)]
mod tests {

    #[test]
    fn chunks_decode_into_one_vector_and_bad_lengths_are_errors() {
        let a = postcard::to_stdvec(&vec![1u32, 2, 3]).expect("encode");
        let b = postcard::to_stdvec(&vec![4u32]).expect("encode");
        let empty = postcard::to_stdvec(&Vec::<u32>::new()).expect("encode");
        let chunks: Vec<&[u8]> = vec![&a, &empty, &b];
        assert_eq!(
            decode_chunks::<u32, _>(&chunks, 10, 0, || 0u32).ok(),
            Some(vec![1, 2, 3, 4])
        );
        assert!(
            decode_chunks::<u32, _>(&chunks, 3, 0, || 0u32).is_err(),
            "over the bound"
        );
        let cut: Vec<&[u8]> = vec![&a[..a.len() - 1], &b];
        assert!(
            decode_chunks::<u32, _>(&cut, 10, 0, || 0u32).is_err(),
            "a chunk cut short"
        );
        assert_eq!(
            decode_chunks::<u32, _>(&[], 10, 0, || 0u32).ok(),
            Some(Vec::new())
        );
    }

    use super::*;

    /// A root, two clusters, `docs` documents of two passages each, with
    /// neighbour lists: enough nodes to span several chunks.
    fn small_tree(docs: u32) -> Tree {
        let meta = TreeMeta {
            source: "t".into(),
            embedder: "e".into(),
            summarizer: "s".into(),
            branching: 100,
            seed: 1,
            built_by: "test".into(),
            corpus: None,
        };
        let node = |kind, parent: Option<u32>, children: Vec<u32>| Node {
            kind,
            parent: parent.map(NodeId),
            children: children.into_iter().map(NodeId).collect(),
        };
        let cluster = |c: u32| NodeKind::Cluster {
            summary: format!("cluster {c}"),
            terms: vec![format!("t{c}")],
            documents: docs / 2,
        };
        let first_doc = 3;
        let doc_ids: Vec<u32> = (0..docs).map(|d| first_doc + d).collect();
        let mut nodes = vec![
            node(NodeKind::Root, None, vec![1, 2]),
            node(cluster(0), Some(0), doc_ids[..(docs / 2) as usize].to_vec()),
            node(cluster(1), Some(0), doc_ids[(docs / 2) as usize..].to_vec()),
        ];
        let first_passage = first_doc + docs;
        for d in 0..docs {
            let parent = if d < docs / 2 { 1 } else { 2 };
            let p = first_passage + 2 * d;
            nodes.push(node(
                NodeKind::Document {
                    id: format!("d{d}"),
                    title: format!("Doc {d}"),
                    lead: "Lead.".into(),
                    part: None,
                    metadata: None,
                },
                Some(parent),
                vec![p, p + 1],
            ));
        }
        for d in 0..docs {
            for k in 0..2 {
                let kind = NodeKind::Passage {
                    id: format!("d{d}#{k}"),
                    text: format!("text {d} {k}"),
                };
                nodes.push(node(kind, Some(first_doc + d), Vec::new()));
            }
        }
        let mut neighbours = vec![Vec::new(); nodes.len()];
        for d in 0..docs {
            neighbours[(first_doc + d) as usize] = vec![NodeId(first_doc + (d + 1) % docs)];
        }
        Tree::with_neighbours(meta, nodes, neighbours).expect("valid tree")
    }

    #[test]
    fn chunked_payloads_round_trip_across_chunk_boundaries() {
        for docs in [2, 3, 10, 21] {
            let tree = small_tree(docs);
            assert!(tree.len() > 2 * NODE_CHUNK || docs < 10);
            let bytes = to_bytes(&tree).expect("encode");
            let again = from_bytes(&bytes, Path::new("mem.tree")).expect("decode");
            assert_eq!(again, tree, "{docs} documents");
            let plain = from_bytes(
                &to_bytes(&tree.clone().without_neighbours()).expect("encode"),
                Path::new("m"),
            )
            .expect("decode");
            assert!(!plain.has_neighbours());
        }
    }

    #[test]
    fn version_5_opens_without_decoding_and_reads_a_chunk_as_asked() {
        let tree = small_tree(21);
        let bytes = to_bytes(&tree).expect("encode");
        let again = from_bytes(&bytes, Path::new("mem.tree")).expect("decode");
        assert!(again.reads_nodes_lazily());
        assert_eq!(again.chunks_read(), Some(0), "checked without a node read");
        assert_eq!(again.documents().count(), 21);
        assert_eq!(again.chunks_read(), Some(0), "counted from the shape");
        let doc = again.documents().nth(7).expect("a document");
        assert!(matches!(
            again.get(doc).map(|n| &n.kind),
            Some(NodeKind::Document { id, .. }) if id == "d7"
        ));
        assert_eq!(again.chunks_read(), Some(1), "one chunk for one node");
        assert_eq!(again.neighbours(doc), tree.neighbours(doc));
        assert_eq!(again, tree);
        // The same tree as version 4 decodes whole, to the same model.
        let v4 = from_bytes(&to_bytes_v4(&tree).expect("v4"), Path::new("m")).expect("v4");
        assert!(!v4.reads_nodes_lazily());
        assert_eq!(v4, again);
        let plain = tree.clone().without_neighbours();
        let again = from_bytes(&to_bytes(&plain).expect("encode"), Path::new("m")).expect("v5");
        assert!(!again.has_neighbours());
        assert_eq!(again, plain);
    }

    #[test]
    fn a_damaged_chunk_fails_alone_and_a_damaged_shape_fails_the_open() {
        let tree = small_tree(21);
        let bytes = to_bytes(&tree).expect("encode");
        let last = NodeId(tree.len() as u32 - 1);
        let mut chunk = bytes.clone();
        let at = chunk.len() - 2;
        chunk[at] ^= 0x55;
        let opened = from_bytes(&chunk, Path::new("c.tree")).expect("the index is intact");
        assert!(opened.get(NodeId(0)).is_some());
        assert!(
            opened.get(last).is_none(),
            "the last chunk fails its checksum"
        );
        let err = opened.nodes().err().expect("reading every node fails");
        assert!(err.to_string().contains("checksum"), "{err}");
        let mut parts = opened.clone();
        assert!(parts.parts_mut().is_err(), "no update over a damaged file");

        let index_len =
            u64::from_le_bytes(bytes[HEADER_LEN..HEADER_LEN + 8].try_into().expect("8"));
        let mut shape = bytes.clone();
        shape[HEADER_LEN + 8 + index_len as usize + 1] ^= 0x01;
        let err = from_bytes(&shape, Path::new("s.tree")).expect_err("shape damaged");
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
        for cut in (0..bytes.len()).step_by(3) {
            assert!(
                from_bytes(&bytes[..cut], Path::new("t.tree")).is_err(),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_saved_version_5_tree_loads_lazily_and_an_update_decodes_it_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.tree");
        let tree = small_tree(10);
        save(&tree, &path).expect("save");
        assert_eq!(version(&path).expect("version"), FORMAT_VERSION);
        assert_eq!(load_meta(&path).expect("meta"), *tree.meta());
        let mut loaded = load(&path).expect("load");
        assert!(loaded.reads_nodes_lazily());
        assert_eq!(loaded, tree);
        let (nodes, _) = loaded.parts_mut().expect("decoded whole");
        assert_eq!(nodes.len(), tree.len());
        assert!(!loaded.reads_nodes_lazily());
        assert_eq!(loaded, tree);
    }
}

//! The vectors file's layouts.
//!
//! Layout 2 (written since format 5's lazy open) is read as asked for:
//!
//! ```text
//! header     magic, 2, reserved, XXH3-128 of the body; words: the base
//!            tree file (crc, len), rows, dims, description bytes,
//!            centroids, rows a block, centroids a block, XXH3-64 of the
//!            directory
//! directory  the description (postcard `Embedding`); per row its node
//!            (u32) and scale (f32); per centroid its cluster (u32,
//!            ascending); per block of rows, then of centroids, its XXH3-64
//! rows       8 bits a cell, row after row, in blocks
//! centroids  f32 a cell, in blocks
//! ```
//!
//! Opening reads and checks the directory only (40 MB at 5M documents,
//! against 649 MiB for the whole file); a row is read with its block, the
//! block checked by its own hash, when first asked for. Layout 1 (one hash
//! over everything, no centroids) is still read, whole.

use super::centroids::Centroids;
use super::rows::{self, block_rows_for, Blocks, Cell, Rows};
use super::{beyond, paired_header, read_checked_body, read_paired_header, BaseId, Embedding};
use super::{UnitVectors, MAX_DIMS};
use crate::store::{write_atomically, FileAt, ReadAt};
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use treenav_files::magic::VECTORS as MAGIC;

/// Layout 1: one hash over the body, read whole.
const V1: u32 = 1;
/// Layout 2: a checked directory, rows in checked blocks.
const V2: u32 = 2;
const HEADER_V1: usize = crate::format::Header::len(5);
const HEADER_V2: usize = crate::format::Header::len(9);
/// Rows a block at most (a file's own figure is checked against it).
const MAX_BLOCK_ROWS: u64 = 1 << 20;

/// Writes `vectors` (with the clusters' `centroids`, for document
/// vectors) to `path`, paired with the tree file whose payload is `base`,
/// atomically, in layout 2.
pub fn write_to(
    vectors: &UnitVectors,
    centroids: Option<&Centroids>,
    path: &Path,
    base: BaseId,
) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let dims = vectors.dims;
    let (rows, cents) = (vectors.nodes.len(), centroids.map_or(0, Centroids::len));
    let (row_block, cent_block) = (block_rows_for(dims, 1), block_rows_for(dims, 4));
    let mut directory = postcard::to_stdvec(&vectors.embedding).map_err(Error::encode)?;
    let described = directory.len() as u64;
    vectors.nodes.iter().for_each(|n| n.put(&mut directory));
    vectors.scales.iter().for_each(|s| s.put(&mut directory));
    let mut checks = rows::checks(&vectors.data, rows, row_block).map_err(io)?;
    if let Some(c) = centroids {
        c.nodes.iter().for_each(|n| n.put(&mut directory));
        checks.extend(rows::checks(&c.rows, cents, cent_block).map_err(io)?);
    }
    checks
        .iter()
        .for_each(|h| directory.extend_from_slice(&h.to_le_bytes()));
    let tail = [
        rows as u64,
        dims as u64,
        described,
        cents as u64,
        row_block as u64,
        cent_block as u64,
        twox_hash::XxHash3_64::oneshot(&directory),
    ];
    let body = |out: &mut dyn std::io::Write| -> Result<()> {
        out.write_all(&directory).map_err(io)?;
        let mut put = |bytes: &[u8]| out.write_all(bytes);
        rows::write_blocks(&vectors.data, rows, row_block, &mut put).map_err(io)?;
        if let Some(c) = centroids {
            rows::write_blocks(&c.rows, cents, cent_block, &mut put).map_err(io)?;
        }
        Ok(())
    };
    let header_of = |hash: u128, _len: u64| paired_header(MAGIC, V2, hash, base, &tail);
    write_atomically(path, HEADER_V2, body, header_of).map(|_| ())
}

/// Reads a vectors file at `path` paired with the tree file whose payload
/// is `base` (see [`super::read`]).
pub(crate) fn read_from(
    path: &Path,
    base: BaseId,
    tree_nodes: usize,
) -> Result<Option<UnitVectors>> {
    if !path.exists() {
        return Ok(None);
    }
    let bad = |problem: String| Error::BadFile {
        path: path.to_path_buf(),
        problem,
    };
    let (source, len) = FileAt::open(path, &crate::store::SIDE_FILE)?;
    let mut version = [0u8; 12];
    source
        .read_at(0, &mut version)
        .map_err(|e| bad(format!("cannot read its header: {e}")))?;
    let read = if crate::format::version_of(&version) == V1 {
        read_v1(&source, len, base, tree_nodes)
    } else {
        read_v2(
            (Arc::new(source), path.to_path_buf()),
            len,
            base,
            tree_nodes,
        )
    };
    read.map(Some).map_err(bad)
}

/// Refuses a file written with another tree file than `base`.
fn check_base(written_for: BaseId, base: BaseId) -> std::result::Result<(), String> {
    if written_for == base {
        return Ok(());
    }
    Err(format!(
        "it was written with another tree file (payload {:08x}, {} bytes; this tree's is {:08x}, {} bytes): it is not this generation's vectors (an older copy, or another tree's). Restore the file saved with this tree, or remove it and rebuild the tree (`treenav build`)",
        written_for.crc, written_for.len, base.crc, base.len
    ))
}

/// The dimensions a header gives, range-checked.
fn checked_dims(dims: u64) -> std::result::Result<usize, String> {
    if dims == 0 || dims > MAX_DIMS {
        return Err(format!("{dims} dimensions, out of range 1..={MAX_DIMS}"));
    }
    Ok(dims as usize)
}

/// Layout 1, read whole and checked by its one hash.
fn read_v1(
    source: &FileAt,
    len: u64,
    base: BaseId,
    tree_nodes: usize,
) -> std::result::Result<UnitVectors, String> {
    let (head, written_for): ([u8; HEADER_V1], BaseId) =
        read_paired_header(source, len, (MAGIC, V1, "vectors"))?;
    check_base(written_for, base)?;
    let word = |i| crate::format::word(&head, i);
    let (rows, dims, described) = (word(2), checked_dims(word(3))?, word(4));
    let expected = rows
        .checked_mul(8 + dims as u64)
        .and_then(|n| n.checked_add(described + HEADER_V1 as u64));
    if expected != Some(len) {
        return Err("its section sizes do not add up to its size".into());
    }
    let body = read_checked_body(source, &head, len)?;
    let (described, rest) = body.split_at(described as usize);
    let rows = rows as usize;
    let (nodes, rest) = rest.split_at(rows * 4);
    let (scales, data) = rest.split_at(rows * 4);
    let cells = data.iter().map(|b| *b as i8).collect();
    let directory = (described, nodes, scales);
    assemble(directory, Rows::held(dims, cells), None, tree_nodes)
}

/// Layout 2: the directory read and checked; rows and centroids left in
/// the file, read by blocks as asked for.
fn read_v2(
    (file, name): (Arc<FileAt>, PathBuf),
    len: u64,
    base: BaseId,
    tree_nodes: usize,
) -> std::result::Result<UnitVectors, String> {
    let (head, written_for): ([u8; HEADER_V2], BaseId) =
        read_paired_header(&file, len, (MAGIC, V2, "vectors"))?;
    check_base(written_for, base)?;
    let word = |i| crate::format::word(&head, i);
    let sizes = Sizes::of(&head, len, tree_nodes as u64)?;
    let mut directory = vec![0u8; sizes.directory as usize];
    file.read_at(HEADER_V2 as u64, &mut directory)
        .map_err(|e| format!("cannot read its directory: {e}"))?;
    if twox_hash::XxHash3_64::oneshot(&directory) != word(8) {
        return Err("its directory fails its checksum: the file is corrupted".into());
    }
    let (rows, cents) = (sizes.rows as usize, sizes.centroids as usize);
    let (described, rest) = directory.split_at(sizes.described as usize);
    let (nodes, rest) = rest.split_at(rows * 4);
    let (scales, rest) = rest.split_at(rows * 4);
    let (cent_nodes, checks) = rest.split_at(cents * 4);
    let checks: Vec<u64> = checks.chunks_exact(8).map(u64::take).collect();
    let (row_checks, cent_checks) = checks.split_at(sizes.row_blocks as usize);
    let dims = sizes.dims as usize;
    let at = HEADER_V2 as u64 + sizes.directory;
    let data = Rows::read_as_asked(
        dims,
        Blocks::new(
            (file.clone(), name.clone()),
            at,
            (rows, sizes.row_block as usize),
            row_checks.to_vec(),
        ),
    );
    let centroids = (cents > 0)
        .then(|| {
            let cells = Blocks::new(
                (file, name),
                at + sizes.rows * sizes.dims,
                (cents, sizes.cent_block as usize),
                cent_checks.to_vec(),
            );
            centroids_of(cent_nodes, Rows::read_as_asked(dims, cells), tree_nodes)
        })
        .transpose()?;
    assemble((described, nodes, scales), data, centroids, tree_nodes)
}

/// The clusters of a file's centroids, checked (ascending, in the tree).
fn centroids_of(
    nodes: &[u8],
    rows: Rows<f32>,
    tree_nodes: usize,
) -> std::result::Result<Centroids, String> {
    let nodes: Vec<u32> = words(nodes);
    if nodes.windows(2).any(|w| w[0] >= w[1]) {
        return Err("its centroids' clusters are not in ascending order".into());
    }
    if let Some(n) = nodes.last().filter(|n| **n as usize >= tree_nodes) {
        return Err(beyond(*n, tree_nodes));
    }
    Ok(Centroids { nodes, rows })
}

/// A layout-2 header's sizes, range-checked against the file's length.
struct Sizes {
    rows: u64,
    dims: u64,
    described: u64,
    centroids: u64,
    row_block: u64,
    cent_block: u64,
    row_blocks: u64,
    directory: u64,
}

impl Sizes {
    fn of(head: &[u8], len: u64, tree_nodes: u64) -> std::result::Result<Sizes, String> {
        let word = |i| crate::format::word(head, i);
        let dims = checked_dims(word(3))? as u64;
        let (rows, described, centroids) = (word(2), word(4), word(5));
        let (row_block, cent_block) = (word(6), word(7));
        if described > len {
            return Err("its section sizes do not add up to its size".into());
        }
        if rows > tree_nodes || centroids > tree_nodes {
            return Err(format!(
                "{rows} rows and {centroids} centroids, more than the tree's {tree_nodes} nodes"
            ));
        }
        for b in [row_block, cent_block] {
            if b == 0 || b > MAX_BLOCK_ROWS {
                return Err(format!(
                    "{b} rows a block, out of range 1..={MAX_BLOCK_ROWS}"
                ));
            }
        }
        let (row_blocks, cent_blocks) = (rows.div_ceil(row_block), centroids.div_ceil(cent_block));
        // Each number is now under 2^40 and dims under 2^14: no sum overflows.
        let directory = described + 8 * rows + 4 * centroids + 8 * (row_blocks + cent_blocks);
        let whole = HEADER_V2 as u64 + directory + rows * dims + 4 * centroids * dims;
        if whole != len {
            return Err("its section sizes do not add up to its size".into());
        }
        Ok(Sizes {
            rows,
            dims,
            described,
            centroids,
            row_block,
            cent_block,
            row_blocks,
            directory,
        })
    }
}

/// Little-endian `u32`s from their bytes (whole words only).
fn words(bytes: &[u8]) -> Vec<u32> {
    let mut w = vec![0u32; bytes.len() / 4];
    let raw: &mut [u8] = bytemuck::cast_slice_mut(&mut w);
    raw.copy_from_slice(&bytes[..raw.len()]);
    w.iter_mut().for_each(|x| *x = u32::from_le(*x));
    w
}

/// The vectors from a directory's sections (description, nodes, scales)
/// and their rows: every node checked against the tree's.
fn assemble(
    (described, nodes, scales): (&[u8], &[u8], &[u8]),
    data: Rows<i8>,
    centroids: Option<Centroids>,
    tree_nodes: usize,
) -> std::result::Result<UnitVectors, String> {
    let embedding: Embedding =
        postcard::from_bytes(described).map_err(|e| format!("cannot decode: {e}"))?;
    let nodes: Vec<u32> = words(nodes);
    if let Some(n) = nodes.iter().find(|n| **n as usize >= tree_nodes) {
        return Err(beyond(*n, tree_nodes));
    }
    let mut out = UnitVectors::new(embedding, data.width());
    out.scales = words(scales).into_iter().map(f32::from_bits).collect();
    out.row_of = super::RowOf::of(&nodes);
    out.nodes = nodes;
    out.data = data;
    out.centroids = centroids.map(Arc::new);
    Ok(out)
}

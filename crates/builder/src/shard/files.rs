//! The files of a sharded build: framed records (the plan, each shard's
//! subtrees) and the plan's vectors, read row by row.
//!
//! A record is `magic (8) · version u32 · reserved u32 · XXH3-128 of the
//! body (16) · body length u64 · postcard body`. The vectors file is
//! `TRNVPVEC · version u32 · reserved u32 · XXH3-128 of the body (16) ·
//! rows u64 · dims u64 · rows × dims little-endian f32`, row-major, so a
//! shard reads only its own rows.

use crate::TreeError;
use crate::{Error, Result};
use ndarray::{Array2, ArrayView2};
use serde::{de::DeserializeOwned, Serialize};
use std::path::Path;
use treenav_tree::format::{hash_of, version_of, word, Header};
use treenav_tree::store::ReadAt;
use treenav_tree::store::{write_atomically, FileAt};

const RECORD_HEADER: usize = Header::len(1);
use treenav_files::magic::{PLAN_VECTORS as VECTORS_MAGIC, VECTORS as TREE_VECTORS_MAGIC};
const VECTORS_HEADER: usize = Header::len(2);
/// 2: the plan keeps the sentences embedded per document and the fitted
/// TF-IDF model, so a merged tree keeps its vectors like a single build.
const VERSION: u32 = 2;

fn bad(path: &Path, problem: impl Into<String>) -> Error {
    TreeError::BadFile {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
    .into()
}

fn header(magic: &[u8; 8], hash: u128, words: &[u64]) -> Vec<u8> {
    Header {
        magic,
        version: VERSION,
        hash,
        words,
    }
    .to_bytes()
}

/// Writes `value` as a record atomically; returns the body's hash.
pub(crate) fn write_record<T: Serialize>(path: &Path, magic: &[u8; 8], value: &T) -> Result<u128> {
    let body = postcard::to_stdvec(value).map_err(TreeError::encode)?;
    let io = |source| TreeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = write_atomically(
        path,
        RECORD_HEADER,
        |out| out.write_all(&body).map_err(io),
        |hash, len| header(magic, hash, &[len]),
    )?;
    Ok(file.hash)
}

/// The largest plan or shard record read (a 1M-document shard is tens of MB).
const RECORD_CAP: u64 = 16 << 30;

/// Reads a record written by [`write_record`]; `what` names the kind of
/// file in errors. Returns the value and its body's hash.
pub(crate) fn read_record<T: DeserializeOwned>(
    path: &Path,
    magic: &'static [u8; 8],
    what: &str,
) -> Result<(T, u128)> {
    let kind = treenav_files::Kind::new("build plan file", RECORD_CAP).with_magic(magic);
    let bytes = treenav_files::read(path, &kind).map_err(|e| match e {
        treenav_files::Error::BadMagic { .. } => bad(path, format!("not a treenav {what} file")),
        other => other.into(),
    })?;
    if bytes.len() < RECORD_HEADER {
        return Err(bad(path, format!("truncated {what} file")));
    }
    let version = version_of(&bytes);
    if version != VERSION {
        return Err(bad(
            path,
            format!("{what} layout version {version}, but this build reads version {VERSION}: make it again with this build"),
        ));
    }
    let hash = hash_of(&bytes);
    let body = &bytes[RECORD_HEADER..];
    if word(&bytes, 0) != body.len() as u64 {
        return Err(bad(path, format!("truncated {what} file")));
    }
    if twox_hash::XxHash3_128::oneshot(body) != hash {
        return Err(bad(
            path,
            format!("checksum mismatch: the {what} file is corrupted"),
        ));
    }
    let value = postcard::from_bytes(body)
        .map_err(|e| bad(path, format!("cannot decode the {what} file: {e}")))?;
    Ok((value, hash))
}

/// Writes the rows of `vectors` atomically; returns the body's hash.
pub(crate) fn write_vectors(path: &Path, vectors: ArrayView2<'_, f32>) -> Result<u128> {
    let io = |source| TreeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (rows, dims) = vectors.dim();
    let file = write_atomically(
        path,
        VECTORS_HEADER,
        |out| {
            let mut row_bytes = Vec::with_capacity(dims * 4);
            for row in vectors.rows() {
                row_bytes.clear();
                row_bytes.extend(row.iter().flat_map(|v| v.to_le_bytes()));
                out.write_all(&row_bytes).map_err(io)?;
            }
            Ok(())
        },
        |hash, _| header(VECTORS_MAGIC, hash, &[rows as u64, dims as u64]),
    )?;
    Ok(file.hash)
}

/// Reads the vectors' body once: its hash must be the one the plan
/// recorded (a flipped byte anywhere is caught, not only in the header)
/// and every value finite.
fn check_body(path: &Path, file: &FileAt, len: u64, hash: u128) -> Result<()> {
    const BLOCK: usize = 8 << 20;
    let mut hasher = twox_hash::XxHash3_128::new();
    let mut buf = vec![0u8; BLOCK];
    let mut at = VECTORS_HEADER as u64;
    while at < len {
        let n = usize::try_from(len - at).map_or(BLOCK, |left| left.min(BLOCK));
        file.read_at(at, &mut buf[..n])
            .map_err(|source| TreeError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        if buf[..n]
            .chunks_exact(4)
            .any(|b| !f32::from_le_bytes([b[0], b[1], b[2], b[3]]).is_finite())
        {
            return Err(bad(
                path,
                "holds a NaN or infinite value: the vectors file is corrupted; make the plan again",
            ));
        }
        hasher.write(&buf[..n]);
        at += n as u64;
    }
    if hasher.finish_128() != hash {
        return Err(bad(
            path,
            "checksum mismatch: the vectors file is corrupted; make the plan again",
        ));
    }
    Ok(())
}

/// The plan's vectors, read row by row.
pub(crate) struct Vectors {
    path: std::path::PathBuf,
    file: FileAt,
    dims: usize,
}

impl Vectors {
    /// Opens the file and checks it is the one the plan wrote: `rows` ×
    /// `dims`, body hash `hash`.
    pub(crate) fn open(path: &Path, rows: u64, dims: u64, hash: u128) -> Result<Vectors> {
        let kind = treenav_files::Kind::new("build plan vectors", u64::MAX);
        let (file, len) = FileAt::open(path, &kind)?;
        let mut head = [0u8; VECTORS_HEADER];
        if len < VECTORS_HEADER as u64 {
            return Err(bad(path, "truncated: shorter than a vectors file's header"));
        }
        file.read_at(0, &mut head).map_err(|source| TreeError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if &head[..8] == TREE_VECTORS_MAGIC {
            return Err(bad(
                path,
                "a plan's vectors written by an older build (under the tree vectors' magic): make the plan again",
            ));
        }
        if &head[..8] != VECTORS_MAGIC {
            return Err(bad(path, "not a treenav plan vectors file"));
        }
        let mut found = [0u8; 16];
        found.copy_from_slice(&head[16..32]);
        let expected_len =
            (VECTORS_HEADER as u64).saturating_add(rows.saturating_mul(dims).saturating_mul(4));
        if u128::from_le_bytes(found) != hash
            || word(&head, 0) != rows
            || word(&head, 1) != dims
            || len != expected_len
        {
            return Err(bad(
                path,
                format!("these vectors are not the plan's ({rows} × {dims} expected, hash {hash:032x}): make the plan again"),
            ));
        }
        check_body(path, &file, len, hash)?;
        Ok(Vectors {
            path: path.to_path_buf(),
            file,
            dims: usize::try_from(dims).map_err(|_| bad(path, "too many dimensions"))?,
        })
    }

    /// The given rows (ascending, distinct) as a matrix, in that order.
    /// Runs of consecutive rows are read in one call.
    pub(crate) fn rows(&self, rows: &[usize]) -> Result<Array2<f32>> {
        let row_bytes = self.dims * 4;
        let mut out = Vec::with_capacity(rows.len() * self.dims);
        let mut buf = Vec::new();
        let mut i = 0;
        while i < rows.len() {
            let mut j = i + 1;
            while j < rows.len() && rows[j] == rows[j - 1] + 1 && j - i < 4096 {
                j += 1;
            }
            buf.resize((j - i) * row_bytes, 0);
            let at = VECTORS_HEADER as u64 + rows[i] as u64 * row_bytes as u64;
            self.file
                .read_at(at, &mut buf)
                .map_err(|source| TreeError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            out.extend(
                buf.chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
            i = j;
        }
        Array2::from_shape_vec((rows.len(), self.dims), out)
            .map_err(|e| bad(&self.path, e.to_string()))
    }

    /// Every row, row i as node `nodes[i]`'s, quantised as it is read: the
    /// file is read a few megabytes at a time, never whole.
    pub(crate) fn quantised(
        &self,
        embedding: treenav_tree::vectors::Embedding,
        nodes: &[crate::NodeId],
    ) -> Result<treenav_tree::vectors::UnitVectors> {
        const ROWS_PER_READ: usize = 16 * 4096;
        let mut out = treenav_tree::vectors::UnitVectors::new(embedding, self.dims);
        for (i, nodes) in nodes.chunks(ROWS_PER_READ).enumerate() {
            let first = i * ROWS_PER_READ;
            let rows: Vec<usize> = (first..first + nodes.len()).collect();
            let matrix = self.rows(&rows)?;
            for (node, row) in nodes.iter().zip(matrix.rows()) {
                out.set(*node, row)?;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_vectors_have_their_own_magic_and_an_old_ones_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("plan.vecs");
        let rows = ndarray::arr2(&[[1.0f32, 0.0], [0.0, 1.0]]);
        let hash = write_vectors(&path, rows.view()).expect("write");
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(&bytes[..8], VECTORS_MAGIC);
        assert_ne!(VECTORS_MAGIC, TREE_VECTORS_MAGIC);
        assert!(Vectors::open(&path, 2, 2, hash).is_ok());
        let mut old = bytes.clone();
        old[..8].copy_from_slice(TREE_VECTORS_MAGIC);
        std::fs::write(&path, &old).expect("write");
        let err = Vectors::open(&path, 2, 2, hash).err().expect("refused");
        assert!(err.to_string().contains("older build"), "{err}");
    }
}

//! Rows of numbers of one width, held in memory or read from a vectors
//! file a block at a time as they are asked for.
//!
//! A file's rows are cut into blocks of `block_rows` rows, each checked by
//! its own XXH3-64 (the checks sit in the file's directory, itself checked
//! when the file opens): opening reads none of them, and a query reads
//! only the blocks of the rows it scores, each once.

use crate::store::{FileAt, ReadAt};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// A number a row holds, as a vectors file stores it (little-endian).
pub(crate) trait Cell: Copy + Default + PartialEq + std::fmt::Debug + Send + Sync {
    /// Bytes a cell takes in the file.
    const BYTES: usize;
    /// Appends the cell's bytes.
    fn put(self, out: &mut Vec<u8>);
    /// The cell from its bytes (`BYTES` of them).
    fn take(bytes: &[u8]) -> Self;
}

impl Cell for i8 {
    const BYTES: usize = 1;
    fn put(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn take(bytes: &[u8]) -> i8 {
        bytes.first().map_or(0, |b| *b as i8)
    }
}

/// A little-endian number as a cell (a short slice reads as zeros past
/// its end: callers pass whole cells).
macro_rules! le_cell {
    ($t:ty, $n:literal) => {
        impl Cell for $t {
            const BYTES: usize = $n;
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn take(bytes: &[u8]) -> $t {
                let mut word = [0u8; $n];
                let n = bytes.len().min($n);
                word[..n].copy_from_slice(&bytes[..n]);
                <$t>::from_le_bytes(word)
            }
        }
    };
}

le_cell!(f32, 4);
le_cell!(u32, 4);
le_cell!(u64, 8);

/// The block size a vectors file is written with: about 8 KiB of cells a
/// block (a query reads a few hundred scattered rows: small blocks keep
/// what it reads near what it needs), at least one row.
pub(crate) fn block_rows_for(width: usize, cell_bytes: usize) -> usize {
    (8192 / (width * cell_bytes).max(1)).max(1)
}

/// Rows of `width` cells each.
#[derive(Debug, Clone)]
pub(crate) struct Rows<T> {
    width: usize,
    store: Store<T>,
}

#[derive(Debug, Clone)]
enum Store<T> {
    Held(Vec<T>),
    Read(Box<Blocks<T>>),
}

/// A block once read: its cells, or `None` when it did not read.
type Read<T> = Option<Box<[T]>>;

/// Rows left in their file: where they start, the block size and each
/// block's check, and the blocks read so far.
#[derive(Debug, Clone)]
pub(crate) struct Blocks<T> {
    pub(crate) file: Arc<FileAt>,
    pub(crate) name: PathBuf,
    /// Where the first block starts.
    pub(crate) at: u64,
    pub(crate) rows: usize,
    pub(crate) block_rows: usize,
    /// Per block: XXH3-64 of its bytes.
    pub(crate) checks: Vec<u64>,
    /// Per block, once read: its cells, or `None` when it did not read.
    read: Box<[OnceLock<Read<T>>]>,
}

impl<T: Cell> Blocks<T> {
    /// Rows left in `file` from byte `at`, blocks of `block_rows` rows
    /// checked by `checks` (one a block: the caller checked the count).
    pub(crate) fn new(
        (file, name): (Arc<FileAt>, PathBuf),
        at: u64,
        (rows, block_rows): (usize, usize),
        checks: Vec<u64>,
    ) -> Blocks<T> {
        let read = (0..checks.len()).map(|_| OnceLock::new()).collect();
        Blocks {
            file,
            name,
            at,
            rows,
            block_rows,
            checks,
            read,
        }
    }

    /// Block `b`'s cells, read and checked (`width` cells a row).
    fn read_block(&self, b: usize, width: usize) -> Result<Box<[T]>, String> {
        let first = b * self.block_rows;
        let rows = self.block_rows.min(self.rows.saturating_sub(first));
        let len = rows * width * T::BYTES;
        let at = self.at + (first * width * T::BYTES) as u64;
        let mut bytes = vec![0u8; len];
        self.file
            .read_at(at, &mut bytes)
            .map_err(|e| format!("cannot read vector block {b}: {e}"))?;
        if self.checks.get(b) != Some(&twox_hash::XxHash3_64::oneshot(&bytes)) {
            return Err(format!("vector block {b} fails its checksum"));
        }
        Ok(bytes.chunks_exact(T::BYTES).map(T::take).collect())
    }

    /// Block `b`, read on first use (a block that does not read is logged
    /// once, with the file, and its rows read as absent).
    fn block(&self, b: usize, width: usize) -> Option<&[T]> {
        let slot = self.read.get(b)?;
        slot.get_or_init(|| match self.read_block(b, width) {
            Ok(cells) => Some(cells),
            Err(e) => {
                tracing::error!(file = %self.name.display(), "cannot read the tree's vectors: {e}");
                None
            }
        })
        .as_deref()
    }
}

impl<T: Cell> Rows<T> {
    /// Rows held in memory (`cells` is row after row).
    pub(crate) fn held(width: usize, cells: Vec<T>) -> Rows<T> {
        Rows {
            width,
            store: Store::Held(cells),
        }
    }

    /// Rows left in their file.
    pub(crate) fn read_as_asked(width: usize, blocks: Blocks<T>) -> Rows<T> {
        Rows {
            width,
            store: Store::Read(Box::new(blocks)),
        }
    }

    /// Row `r` (`None` past the end, or when its block does not read).
    pub(crate) fn row(&self, r: usize) -> Option<&[T]> {
        let w = self.width;
        match &self.store {
            Store::Held(cells) => cells.get(r * w..(r + 1) * w),
            Store::Read(blocks) => {
                if r >= blocks.rows {
                    return None;
                }
                let block = blocks.block(r / blocks.block_rows, w)?;
                let at = (r % blocks.block_rows) * w;
                block.get(at..at + w)
            }
        }
    }

    /// Cells a row.
    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// Row `r`, or why it cannot be had: the file and its problem.
    pub(crate) fn try_row(&self, r: usize) -> Result<&[T], (PathBuf, String)> {
        if let Some(row) = self.row(r) {
            return Ok(row);
        }
        match &self.store {
            Store::Held(_) => Err((PathBuf::new(), format!("no vector row {r}"))),
            Store::Read(b) => {
                let problem = b
                    .read_block(r / b.block_rows, self.width)
                    .err()
                    .unwrap_or_else(|| format!("vector row {r} did not read when first asked for"));
                Err((b.name.clone(), problem))
            }
        }
    }

    /// Whether the rows are read from their file as asked for.
    pub(crate) fn reads_lazily(&self) -> bool {
        matches!(self.store, Store::Read(_))
    }

    /// The cells, held: rows still in their file are read whole first (in
    /// parallel, every block checked); the first block that does not read
    /// is the error.
    pub(crate) fn held_mut(&mut self) -> Result<&mut Vec<T>, (PathBuf, String)> {
        if let Store::Read(blocks) = &self.store {
            let cells = read_all(blocks, self.width)?;
            self.store = Store::Held(cells);
        }
        match &mut self.store {
            Store::Held(cells) => Ok(cells),
            Store::Read(blocks) => Err((blocks.name.clone(), "its vectors did not read".into())),
        }
    }
}

/// Every block's cells, in order.
fn read_all<T: Cell>(blocks: &Blocks<T>, width: usize) -> Result<Vec<T>, (PathBuf, String)> {
    use rayon::prelude::*;
    let parts: Vec<Box<[T]>> = (0..blocks.checks.len())
        .into_par_iter()
        .map(|b| match blocks.read.get(b).and_then(|s| s.get()) {
            Some(Some(cells)) => Ok(cells.clone()),
            _ => blocks.read_block(b, width),
        })
        .collect::<Result<_, String>>()
        .map_err(|e| (blocks.name.clone(), e))?;
    Ok(parts.into_iter().flat_map(Vec::from).collect())
}

impl<T: Cell> PartialEq for Rows<T> {
    /// Same width and the same cells (rows left in a file are read).
    fn eq(&self, other: &Rows<T>) -> bool {
        let rows = |r: &Rows<T>| match &r.store {
            Store::Held(c) => c.len() / r.width.max(1),
            Store::Read(b) => b.rows,
        };
        self.width == other.width
            && rows(self) == rows(other)
            && (0..rows(self)).all(|r| self.row(r) == other.row(r))
    }
}

/// Writes rows as blocks of `block_rows` rows: the bytes of each block in
/// turn to `out`; returns each block's XXH3-64 (computed in a first pass
/// by [`checks`], so they can sit before the blocks in a file).
pub(crate) fn write_blocks<T: Cell>(
    rows: &Rows<T>,
    count: usize,
    block_rows: usize,
    out: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    each_block(rows, count, block_rows, |bytes| out(bytes))
}

/// Each block's XXH3-64, as [`write_blocks`] will write them.
pub(crate) fn checks<T: Cell>(
    rows: &Rows<T>,
    count: usize,
    block_rows: usize,
) -> std::io::Result<Vec<u64>> {
    let mut out = Vec::new();
    each_block(rows, count, block_rows, |bytes| {
        out.push(twox_hash::XxHash3_64::oneshot(bytes));
        Ok(())
    })?;
    Ok(out)
}

/// Calls `f` with the bytes of each block of the first `count` rows.
fn each_block<T: Cell>(
    rows: &Rows<T>,
    count: usize,
    block_rows: usize,
    mut f: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(block_rows * rows.width * T::BYTES);
    for first in (0..count).step_by(block_rows.max(1)) {
        bytes.clear();
        for r in first..(first + block_rows).min(count) {
            let row = rows
                .row(r)
                .ok_or_else(|| std::io::Error::other(format!("vector row {r} does not read")))?;
            row.iter().for_each(|c| c.put(&mut bytes));
        }
        f(&bytes)?;
    }
    Ok(())
}

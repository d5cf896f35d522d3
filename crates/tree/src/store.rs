//! Files beside a tree file: the passage texts (`T.texts`) and the lexical
//! entry's index and statistics (`T.lexical`, written by the `lexical` module).
//!
//! A tree of format version 4 or 5 keeps its structure and the labels a judge
//! reads; passage texts live in the text store and are read one passage at
//! a time, when a query shows that passage. Each side file starts with its
//! own magic bytes and the 128-bit content hash the tree file records for
//! it, so a side file from another build is refused by name rather than
//! read as if it matched.
//!
//! Reads are positioned reads (`pread`), not a memory map: a file cut short
//! or replaced under a running server gives an error, never a crash, and no
//! `unsafe` is needed. The page cache does the caching.

use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::format::{word, Header};
use treenav_files::magic::TEXTS as TEXTS_MAGIC;
const TEXTS_VERSION: u32 = 1;
/// Magic, version, reserved, content hash, passage count, text bytes.
const TEXTS_HEADER: usize = Header::len(2);

/// What a tree file records of one of its side files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SideFile {
    /// The content hash (XXH3-128) of everything after the side file's header.
    pub hash: u128,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The suffix of the text store: `T.tree` → `T.tree.texts`.
pub const TEXTS_SUFFIX: &str = "texts";

/// The path of a tree's side file: `T.tree` → `T.tree.texts`.
pub fn side_path(tree: &Path, suffix: &str) -> PathBuf {
    let mut name = tree.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// The most bytes a tree file or one of its side files may have.
pub(crate) const TREE_FILE_CAP: u64 = 1 << 40;

/// A tree's side file (`.texts`, `.lexical`) as an input.
pub const SIDE_FILE: treenav_files::Kind = treenav_files::Kind::new("side file", TREE_FILE_CAP);

/// A file read by positioned reads, shared by every query. It remembers
/// its length and modification time when opened, so a file rewritten in
/// place underneath (rather than replaced by a rename) is noticed.
#[derive(Debug)]
pub struct FileAt {
    #[cfg(unix)]
    file: std::fs::File,
    #[cfg(not(unix))]
    file: std::sync::Mutex<std::fs::File>,
    path: PathBuf,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileAt {
    /// Opens `path` as an input of `kind` (a regular file within the
    /// kind's cap; see [`treenav_files::open`]); returns it and its length.
    pub fn open(path: &Path, kind: &treenav_files::Kind) -> Result<(FileAt, u64)> {
        let input = treenav_files::open(
            path,
            &treenav_files::Kind {
                magic: None,
                ..*kind
            },
        )?;
        let file = input.file;
        #[cfg(not(unix))]
        let file = std::sync::Mutex::new(file);
        let at = FileAt {
            file,
            path: path.to_path_buf(),
            len: input.len,
            modified: input.modified,
        };
        Ok((at, input.len))
    }

    /// `Some(path)` when the open file's length or modification time is
    /// no longer what it was when opened: it was written over in place.
    pub fn changed(&self) -> Option<&Path> {
        #[cfg(unix)]
        let meta = self.file.metadata();
        #[cfg(not(unix))]
        let meta = match self.file.lock() {
            Ok(f) => f.metadata(),
            Err(_) => return Some(&self.path),
        };
        match meta {
            Ok(m) if m.len() == self.len && m.modified().ok() == self.modified => None,
            _ => Some(&self.path),
        }
    }
}

/// Reads bytes at an offset: a file read with `pread` (never a memory
/// map, so a file cut short under a running process gives an error, never
/// a crash), or bytes in memory.
pub trait ReadAt: Send + Sync {
    /// Fills `buf` from byte `at`; an error if the bytes are not all there.
    fn read_at(&self, at: u64, buf: &mut [u8]) -> std::io::Result<()>;
}

impl ReadAt for Vec<u8> {
    fn read_at(&self, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let start = usize::try_from(at).unwrap_or(usize::MAX);
        let bytes = start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(bytes);
        Ok(())
    }
}

impl ReadAt for FileAt {
    #[cfg(unix)]
    fn read_at(&self, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, at)
    }

    #[cfg(not(unix))]
    fn read_at(&self, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = self
            .file
            .lock()
            .map_err(|_| std::io::Error::other("a reader panicked"))?;
        file.seek(SeekFrom::Start(at))?;
        file.read_exact(buf)
    }
}

/// Writes `bytes_of` into `path` atomically: a temp file beside it, synced,
/// renamed over the target. `bytes_of` writes the body after a header of
/// `header` zero bytes; the header is written last, from the body's hash.
pub fn write_atomically(
    path: &Path,
    header: usize,
    body: impl FnOnce(&mut dyn Write) -> Result<()>,
    header_of: impl FnOnce(u128, u64) -> Vec<u8>,
) -> Result<SideFile> {
    use std::io::{Seek, SeekFrom};
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    treenav_files::atomic::write_atomically(path, crate::fault::io_step, io, |file| {
        let mut out = std::io::BufWriter::new(&mut *file);
        out.write_all(&vec![0u8; header]).map_err(io)?;
        let mut hashing = Hashing {
            inner: &mut out,
            hasher: twox_hash::XxHash3_128::new(),
            bytes: 0,
        };
        body(&mut hashing)?;
        let (hash, len) = (hashing.hasher.finish_128(), hashing.bytes);
        out.flush().map_err(io)?;
        drop(out);
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(&header_of(hash, len)).map_err(io)?;
        Ok(SideFile {
            hash,
            bytes: header as u64 + len,
        })
    })
}

/// A writer that hashes and counts what passes through it.
struct Hashing<'a> {
    inner: &'a mut dyn Write,
    hasher: twox_hash::XxHash3_128,
    bytes: u64,
}

impl Write for Hashing<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.write(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes the passage texts, in order, as a text store at `path`.
pub(crate) fn write_texts<'a>(
    path: &Path,
    count: usize,
    texts: impl Fn() -> Box<dyn Iterator<Item = Result<std::borrow::Cow<'a, str>>> + 'a>,
) -> Result<SideFile> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut total = 0u64;
    let body = |out: &mut dyn Write| -> Result<()> {
        // The offsets, then the texts: two passes over the texts.
        out.write_all(&0u64.to_le_bytes()).map_err(io)?;
        let mut written = 0usize;
        for text in texts() {
            total += text?.len() as u64;
            out.write_all(&total.to_le_bytes()).map_err(io)?;
            written += 1;
        }
        if written != count {
            return Err(Error::InvalidTree(format!(
                "{written} passage texts for {count} passages"
            )));
        }
        for text in texts() {
            out.write_all(text?.as_bytes()).map_err(io)?;
        }
        Ok(())
    };
    let header_of = |hash: u128, len: u64| {
        let blob = len - 8 * (count as u64 + 1);
        Header {
            magic: TEXTS_MAGIC,
            version: TEXTS_VERSION,
            hash,
            words: &[count as u64, blob],
        }
        .to_bytes()
    };
    write_atomically(path, TEXTS_HEADER, body, header_of)
}

/// Reads a side file's header of `N` bytes and checks what every side file
/// starts with: its magic, layout version 1, and the content hash and size
/// the tree file expects. `what` names the kind of file (".texts", …) in
/// errors.
pub(crate) fn read_side_header<const N: usize>(
    source: &FileAt,
    len: u64,
    expected: SideFile,
    magic: &[u8; 8],
    what: &str,
    versions: &[u32],
) -> std::result::Result<[u8; N], String> {
    if len < N as u64 {
        return Err(format!("truncated: shorter than a {what} file's header"));
    }
    let mut head = [0u8; N];
    source.read_at(0, &mut head).map_err(|e| e.to_string())?;
    if &head[..8] != magic {
        return Err(format!("not a treenav {what} file (wrong magic bytes)"));
    }
    let version = crate::format::version_of(&head);
    if !versions.contains(&version) {
        return Err(format!(
            "layout version {version}, but this build reads versions {versions:?}: rebuild the tree"
        ));
    }
    let hash = crate::format::hash_of(&head);
    if hash != expected.hash || len != expected.bytes {
        return Err(format!(
            "this {what} file does not belong to its tree file (content hash {hash:032x}, {len} bytes; the tree expects {:032x}, {} bytes): copy the matching {what} file beside the tree, or rebuild",
            expected.hash, expected.bytes
        ));
    }
    Ok(head)
}

/// Passage texts beside a tree, read one at a time.
pub struct TextStore {
    path: PathBuf,
    source: FileAt,
    /// Where each text starts in the text bytes; one more than the count.
    offsets: Vec<u64>,
    /// Where the text bytes start in the file.
    blob: u64,
}

impl std::fmt::Debug for TextStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextStore")
            .field("path", &self.path)
            .field("passages", &self.len())
            .finish()
    }
}

impl TextStore {
    /// `Some(path)` when the file was written over in place since it was
    /// opened (see [`FileAt::changed`]).
    pub fn changed(&self) -> Option<&Path> {
        self.source.changed()
    }

    /// Opens the text store at `path`, which must be the one `expected`
    /// describes (its hash and size) and hold `passages` texts. Reads the
    /// header and the offsets (8 bytes a passage), not the texts.
    pub fn open(path: &Path, expected: SideFile, passages: usize) -> Result<TextStore> {
        let bad = |problem: String| Error::BadFile {
            path: path.to_path_buf(),
            problem,
        };
        let (source, len) = FileAt::open(path, &SIDE_FILE)?;
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let head: [u8; TEXTS_HEADER] =
            read_side_header(&source, len, expected, TEXTS_MAGIC, ".texts", &[1]).map_err(&bad)?;
        let (count, blob_len) = (word(&head, 0), word(&head, 1));
        if count != passages as u64 {
            return Err(bad(format!(
                "holds {count} passages, the tree has {passages}"
            )));
        }
        let table = (count + 1)
            .checked_mul(8)
            .filter(|t| TEXTS_HEADER as u64 + t + blob_len == len)
            .ok_or_else(|| bad("its counts do not match its size".into()))?;
        let mut raw = vec![0u8; table as usize];
        source.read_at(TEXTS_HEADER as u64, &mut raw).map_err(io)?;
        let offsets: Vec<u64> = raw
            .chunks_exact(8)
            .map(|c| {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                u64::from_le_bytes(b)
            })
            .collect();
        let ordered = offsets.windows(2).all(|w| w[0] <= w[1]);
        if offsets.first() != Some(&0) || offsets.last() != Some(&blob_len) || !ordered {
            return Err(bad("its offsets are out of order".into()));
        }
        Ok(TextStore {
            path: path.to_path_buf(),
            source,
            offsets,
            blob: TEXTS_HEADER as u64 + table,
        })
    }

    /// How many texts it holds.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Text `i` (the i-th passage in node order), read from the file.
    pub fn get(&self, i: usize) -> Result<String> {
        let bad = |problem: String| Error::BadFile {
            path: self.path.clone(),
            problem,
        };
        let (Some(start), Some(end)) = (self.offsets.get(i), self.offsets.get(i + 1)) else {
            return Err(bad(format!("no passage {i}: it holds {}", self.len())));
        };
        let mut buf = vec![0u8; (end - start) as usize];
        self.source
            .read_at(self.blob + start, &mut buf)
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })?;
        String::from_utf8(buf).map_err(|_| bad(format!("passage {i} is not UTF-8")))
    }
}

pub(crate) use treenav_files::atomic::{remove_stale_temp_files, temp_path};

//! One way to open an input file. Every file treenav reads — tree files and
//! their side files, build plans, shards and vectors, `.npy` embeddings,
//! tokenizers, token files, judge configs, chunk files, corpora and bench
//! data sets — goes through [`open`] or [`read`]:
//!
//! * **a regular file or refused.** The file is opened without blocking
//!   (`O_NONBLOCK` on Unix: opening a FIFO for reading would otherwise wait
//!   for a writer forever) and checked with `fstat` on the descriptor it
//!   will be read from, so a FIFO, a device such as `/dev/zero`, a socket
//!   or a folder is refused before one byte is read, and a path swapped
//!   between the check and the read cannot slip through;
//! * **size against a per-kind cap, before reading** (a sparse 4 GiB file is
//!   refused from its length, not read whole), and a file that grows past
//!   the cap while being read is refused too;
//! * **magic bytes first** where the kind has them, so a foreign file is
//!   refused after reading a few bytes.
//!
//! ```
//! use treenav_files::{read, Kind};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("tokens.txt");
//! std::fs::write(&path, "secret\n").unwrap();
//! let bytes = read(&path, &Kind::new("--auth-token-file", 1 << 20)).unwrap();
//! assert_eq!(bytes, b"secret\n");
//! assert!(read(dir.path(), &Kind::new("--auth-token-file", 1 << 20)).is_err());
//! ```
#![warn(missing_docs)]

pub mod atomic;
pub mod magic;

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// What kind of input a file is: the name errors use (a flag, a config key
/// or a file's role), its size cap and its magic bytes if it has any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// The flag, config key or role errors name (`--judge-config`, `tree file`).
    pub what: &'static str,
    /// The largest file accepted, bytes.
    pub max_bytes: u64,
    /// The bytes the file must start with, if any.
    pub magic: Option<&'static [u8]>,
}

impl Kind {
    /// A kind without magic bytes.
    pub const fn new(what: &'static str, max_bytes: u64) -> Kind {
        Kind {
            what,
            max_bytes,
            magic: None,
        }
    }

    /// The same kind, whose files start with `magic`.
    pub const fn with_magic(self, magic: &'static [u8]) -> Kind {
        Kind {
            magic: Some(magic),
            ..self
        }
    }
}

/// Why an input file was refused. Every variant names the file and what
/// it was for.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or read.
    #[error("{what}: cannot read {}: {source}", path.display())]
    Io {
        /// What the file was for.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Not a regular file (a FIFO, a device, a socket or a folder).
    #[error("{what}: {} is {found}, not a regular file", path.display())]
    NotRegular {
        /// What the file was for.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What it is instead ("a folder", "a FIFO (named pipe)", …).
        found: &'static str,
    },
    /// Larger than the kind's cap.
    #[error("{what}: {} is {bytes} bytes, over the limit of {max} bytes", path.display())]
    TooLarge {
        /// What the file was for.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Its size (or at least this many bytes when it grew while read).
        bytes: u64,
        /// The cap.
        max: u64,
    },
    /// It does not start with the kind's magic bytes.
    #[error("{what}: {} is not the expected kind of file (wrong magic bytes)", path.display())]
    BadMagic {
        /// What the file was for.
        what: &'static str,
        /// The file.
        path: PathBuf,
    },
}

impl Error {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Error::Io { path, .. }
            | Error::NotRegular { path, .. }
            | Error::TooLarge { path, .. }
            | Error::BadMagic { path, .. } => path,
        }
    }

    /// The error as an `io::Error` of the matching kind (for callers whose
    /// own error type carries one), its message naming the file.
    pub fn into_io(self) -> std::io::Error {
        let kind = match &self {
            Error::Io { source, .. } => source.kind(),
            Error::NotRegular { .. } | Error::TooLarge { .. } | Error::BadMagic { .. } => {
                std::io::ErrorKind::InvalidInput
            }
        };
        std::io::Error::new(kind, self.to_string())
    }
}

/// An opened input: a regular file within its kind's cap, positioned after
/// its magic bytes when the kind has some.
#[derive(Debug)]
pub struct Input {
    /// The open file (reads past the magic bytes, if any).
    pub file: File,
    /// Its length when opened, bytes.
    pub len: u64,
    /// Its modification time when opened (to notice a file changed in place).
    pub modified: Option<std::time::SystemTime>,
}

/// Opens `path` as an input of `kind`: a regular file, within the cap,
/// starting with the magic bytes (read and checked) if the kind has them.
/// Never blocks on a FIFO.
pub fn open(path: &Path, kind: &Kind) -> Result<Input, Error> {
    let io = |source| Error::Io {
        what: kind.what,
        path: path.to_path_buf(),
        source,
    };
    let mut file = open_nonblocking(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(Error::NotRegular {
            what: kind.what,
            path: path.to_path_buf(),
            found: describe(&meta.file_type()),
        });
    }
    if meta.len() > kind.max_bytes {
        return Err(Error::TooLarge {
            what: kind.what,
            path: path.to_path_buf(),
            bytes: meta.len(),
            max: kind.max_bytes,
        });
    }
    if let Some(magic) = kind.magic {
        let mut head = Vec::with_capacity(magic.len());
        (&mut file)
            .take(magic.len() as u64)
            .read_to_end(&mut head)
            .map_err(io)?;
        if head != magic {
            return Err(Error::BadMagic {
                what: kind.what,
                path: path.to_path_buf(),
            });
        }
    }
    Ok(Input {
        file,
        len: meta.len(),
        modified: meta.modified().ok(),
    })
}

/// Reads a whole input of `kind` (see [`open`]); with magic bytes, the
/// result still starts with them.
pub fn read(path: &Path, kind: &Kind) -> Result<Vec<u8>, Error> {
    let input = open(path, kind)?;
    let mut bytes = kind.magic.map(<[u8]>::to_vec).unwrap_or_default();
    let start = bytes.len() as u64;
    // Room for what the length says, and one byte to notice growth.
    let room = kind.max_bytes.saturating_sub(start).saturating_add(1);
    bytes.reserve(usize::try_from(input.len.saturating_sub(start)).unwrap_or(0));
    input
        .file
        .take(room)
        .read_to_end(&mut bytes)
        .map_err(|source| Error::Io {
            what: kind.what,
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > kind.max_bytes {
        return Err(Error::TooLarge {
            what: kind.what,
            path: path.to_path_buf(),
            bytes: bytes.len() as u64,
            max: kind.max_bytes,
        });
    }
    Ok(bytes)
}

/// Reads a whole input of `kind` as UTF-8 text.
pub fn read_to_string(path: &Path, kind: &Kind) -> Result<String, Error> {
    String::from_utf8(read(path, kind)?).map_err(|e| Error::Io {
        what: kind.what,
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        ),
    })
}

/// Checks that `path` is a regular file within `kind`'s cap (and its magic
/// bytes), for a file another library opens by its path (the ONNX Runtime
/// library, a model). The file could still be swapped afterwards; every
/// file treenav reads itself goes through [`open`].
pub fn check(path: &Path, kind: &Kind) -> Result<u64, Error> {
    open(path, kind).map(|input| input.len)
}

/// Opens (creating it if missing) a lock file for writing: without
/// blocking, and only a regular file (a FIFO or a device planted under the
/// lock's name is refused, never waited on).
pub fn open_lock(path: &Path, what: &'static str) -> Result<File, Error> {
    let io = |source| Error::Io {
        what,
        path: path.to_path_buf(),
        source,
    };
    let file = open_lock_nonblocking(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(Error::NotRegular {
            what,
            path: path.to_path_buf(),
            found: describe(&meta.file_type()),
        });
    }
    Ok(file)
}

/// Opens (or makes) a lock file for reading and writing; on Unix without
/// waiting on a FIFO (`O_NONBLOCK`) or taking a terminal (`O_NOCTTY`).
fn open_lock_nonblocking(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO does not wait for a writer (and reads of a
    // regular file ignore the flag). O_NOCTTY: a terminal never becomes
    // the controlling one.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

fn describe(t: &std::fs::FileType) -> &'static str {
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Kind = Kind::new("--test-file", 64);

    #[test]
    fn reads_a_regular_file_within_the_cap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        std::fs::write(&p, b"hello").expect("write");
        assert_eq!(read(&p, &SMALL).expect("read"), b"hello");
        assert_eq!(read_to_string(&p, &SMALL).expect("text"), "hello");
    }

    #[test]
    fn a_folder_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = read(dir.path(), &SMALL).expect_err("a folder");
        assert!(
            matches!(
                e,
                Error::NotRegular {
                    found: "a folder",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().starts_with("--test-file: "), "{e}");
    }

    #[test]
    fn a_sparse_file_over_the_cap_is_refused_from_its_length() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("sparse");
        let f = File::create(&p).expect("create");
        f.set_len(4 << 30).expect("sparse 4 GiB");
        let e = read(&p, &SMALL).expect_err("too large");
        assert!(
            matches!(e, Error::TooLarge { bytes, .. } if bytes == 4 << 30),
            "{e}"
        );
    }

    #[test]
    fn magic_is_checked_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("m");
        std::fs::write(&p, b"MAGICbody").expect("write");
        let kind = SMALL.with_magic(b"MAGIC");
        assert_eq!(read(&p, &kind).expect("read"), b"MAGICbody");
        let mut input = open(&p, &kind).expect("open");
        let mut rest = String::new();
        input.file.read_to_string(&mut rest).expect("rest");
        assert_eq!(rest, "body", "positioned after the magic");
        std::fs::write(&p, b"OTHERbody").expect("write");
        assert!(matches!(read(&p, &kind), Err(Error::BadMagic { .. })));
        std::fs::write(&p, b"MA").expect("write");
        assert!(matches!(read(&p, &kind), Err(Error::BadMagic { .. })));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_and_a_device_are_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        // Without O_NONBLOCK this open would wait for a writer forever.
        let e = read(&fifo, &SMALL).expect_err("a FIFO");
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = read(Path::new("/dev/zero"), &SMALL).expect_err("a device");
        assert!(e.to_string().contains("a device"), "{e}");
        let link = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
        assert!(matches!(read(&link, &SMALL), Err(Error::NotRegular { .. })));
    }

    #[cfg(unix)]
    #[test]
    fn a_lock_file_is_created_and_a_fifo_under_its_name_is_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = dir.path().join("t.lock");
        open_lock(&lock, "lock").expect("created");
        assert!(lock.is_file());
        open_lock(&lock, "lock").expect("opened again");
        let fifo = dir.path().join("f.lock");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        // A blocking open for writing would wait for a reader forever.
        let e = open_lock(&fifo, "lock").expect_err("a FIFO");
        assert!(e.to_string().contains("FIFO"), "{e}");
        assert!(open_lock(dir.path(), "lock").is_err(), "a folder");
    }
}

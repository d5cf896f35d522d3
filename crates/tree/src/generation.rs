//! A saved tree's files as one generation: written aside, made current by
//! one atomic step, never half-replaced.
//!
//! A save (a build's or a compaction's) writes every file of the new
//! generation under the staged name `T.staged` (`T.staged.texts`,
//! `T.staged.tantivy`, …), each synced. Nothing current has changed yet:
//! a failure here (a full disk, an I/O error, a kill) leaves the old
//! generation whole, and the staged files are swept by the next writer.
//!
//! The commit is one atomic rename: the manifest `T.commit`, naming the
//! parts the new generation has. From then on the new generation is the
//! current one: the parts are moved in (one rename each, a folder by two),
//! the parts it lacks and the delta of the old generation removed, then
//! the manifest. A process killed among these renames leaves the manifest:
//! whoever opens the tree next finishes them (under the writer lock) before
//! reading, so no reader ever mixes the two generations.
//!
//! Every write and rename here passes [`io_step`], the one fault point
//! (`treenav::io`, compiled in with the `fault-injection` feature) the
//! crash tests fail or panic at, one step after another.

use crate::store::side_path;
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// The suffixes of a generation's parts beside the tree file `T` (`""`:
/// the tree file itself).
const PARTS: [&str; 6] = [
    "",
    crate::store::TEXTS_SUFFIX,
    crate::lexical::LEXICAL_SUFFIX,
    crate::lexical::INDEX_SUFFIX,
    crate::vectors::VECTORS_SUFFIX,
    crate::vectors::PASSAGE_VECTORS_SUFFIX,
];

pub(crate) use crate::fault::io_step;
pub use crate::fault::FAULT_POINT;

/// The most bytes a manifest may have.
const MANIFEST_CAP: u64 = 4 << 10;

/// How long a reader waits for another process to finish a commit it
/// found under way.
const SETTLE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long [`Lock::acquire`] tries before saying another writer holds the
/// lock: a lock released a moment ago can still be held by a process a
/// concurrent `fork` copied it into until that process `exec`s.
const LOCK_PATIENCE: [u64; 5] = [20, 50, 100, 200, 400];

/// The tree's writer lock, `T.lock`: an advisory lock the kernel releases
/// when the process ends. One writer at a time: a second fails within a
/// second.
#[derive(Debug)]
pub struct Lock {
    _file: std::fs::File,
}

impl Lock {
    /// Takes the tree's writer lock, or fails naming the lock file when
    /// another writer still holds it after ≈ 0.8 s of retries.
    pub fn acquire(tree: &Path) -> Result<Lock> {
        for wait_ms in LOCK_PATIENCE {
            if let Some(lock) = Lock::try_acquire(tree)? {
                return Ok(lock);
            }
            std::thread::sleep(std::time::Duration::from_millis(wait_ms));
        }
        Lock::try_acquire(tree)?.ok_or_else(|| {
            Error::Locked(format!(
                "another update of {} is running ({} is locked): wait for it to finish",
                tree.display(),
                lock_path(tree).display()
            ))
        })
    }

    /// The lock, or `None` when another writer holds it. The lock file is
    /// opened without blocking and must be a regular file.
    pub fn try_acquire(tree: &Path) -> Result<Option<Lock>> {
        use fs4::fs_std::FileExt;
        let path = lock_path(tree);
        let file = treenav_files::open_lock(&path, "tree lock file")?;
        match file.try_lock_exclusive() {
            Ok(true) => Ok(Some(Lock { _file: file })),
            Ok(false) => Ok(None),
            Err(source) => Err(Error::Io { path, source }),
        }
    }
}

/// `T.lock`.
pub fn lock_path(tree: &Path) -> PathBuf {
    side_path(tree, "lock")
}

/// `T.staged`: the tree path a save writes its new generation under.
pub(crate) fn staged_path(tree: &Path) -> PathBuf {
    side_path(tree, "staged")
}

/// `T.commit`: the manifest whose presence makes the staged generation
/// the current one.
pub fn manifest_path(tree: &Path) -> PathBuf {
    side_path(tree, "commit")
}

/// The path of part `suffix` beside the tree path `tree`.
fn part(tree: &Path, suffix: &str) -> PathBuf {
    match suffix {
        "" => tree.to_path_buf(),
        s => side_path(tree, s),
    }
}

/// Saves a generation: `write` writes every part beside the path it is
/// given (the staged name), then one rename of the manifest commits it and
/// the parts are moved in. On failure before the commit, the staged parts
/// are removed and the old generation is untouched.
pub(crate) fn save(
    tree: &Path,
    _lock: &Lock,
    write: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    settle_locked(tree)?;
    let staged = staged_path(tree);
    let written = write(&staged).and_then(|()| {
        let parts: Vec<&str> = PARTS
            .into_iter()
            .filter(|s| part(&staged, s).symlink_metadata().is_ok())
            .collect();
        write_manifest(tree, &parts)
    });
    if let Err(e) = written {
        sweep(tree);
        return Err(e);
    }
    roll_forward(tree)
}

/// Writes the manifest atomically (temp file, fsync, rename, folder fsync):
/// the commit point.
fn write_manifest(tree: &Path, parts: &[&str]) -> Result<()> {
    let path = manifest_path(tree);
    let io = |source| Error::Io {
        path: path.clone(),
        source,
    };
    let text = serde_json::to_string(&Manifest {
        parts: parts.iter().map(|s| s.to_string()).collect(),
    })
    .map_err(Error::encode)?;
    treenav_files::atomic::write_atomically(&path, io_step, io, |f| {
        std::io::Write::write_all(f, text.as_bytes()).map_err(io)
    })
}

/// What a commit makes current.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    /// The suffixes of the parts the new generation has.
    parts: Vec<String>,
}

fn read_manifest(tree: &Path) -> Result<Manifest> {
    let path = manifest_path(tree);
    let kind = treenav_files::Kind::new("tree commit manifest", MANIFEST_CAP);
    let text = treenav_files::read_to_string(&path, &kind)?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| Error::BadFile {
        path: path.clone(),
        problem: format!("not a commit manifest: {e}"),
    })?;
    if let Some(bad) = manifest.parts.iter().find(|p| !PARTS.contains(&p.as_str())) {
        return Err(Error::BadFile {
            path,
            problem: format!("names an unknown part {bad:?}"),
        });
    }
    Ok(manifest)
}

/// Finishes a committed generation: moves each staged part in, removes the
/// parts the generation lacks and the old generation's delta, then the
/// manifest. Every step may be done again, so a process killed here is
/// finished by the next one.
fn roll_forward(tree: &Path) -> Result<()> {
    let manifest = read_manifest(tree)?;
    let staged = staged_path(tree);
    // The tree file last: a reader that finds it new finds every part new.
    for suffix in PARTS.iter().rev() {
        let (from, to) = (part(&staged, suffix), part(tree, suffix));
        if manifest.parts.iter().any(|p| p == suffix) {
            move_in(&from, &to)?;
        } else {
            remove(&to)?;
        }
    }
    for stale in [
        crate::delta::delta_path(tree),
        crate::delta::next_path(tree),
    ] {
        remove(&stale)?;
    }
    sync_folder(tree).map_err(|source| Error::Io {
        path: tree.to_path_buf(),
        source,
    })?;
    remove(&manifest_path(tree))?;
    sync_folder(tree).map_err(|source| Error::Io {
        path: tree.to_path_buf(),
        source,
    })
}

/// Moves a staged part over the current one (a folder is moved aside
/// first: a folder cannot be renamed over a non-empty one). Nothing to do
/// when the staged part is gone (moved in already).
fn move_in(from: &Path, to: &Path) -> Result<()> {
    let io = |source| Error::Io {
        path: to.to_path_buf(),
        source,
    };
    let Ok(meta) = from.symlink_metadata() else {
        return Ok(());
    };
    if meta.is_dir() {
        let aside = side_path(to, "old");
        remove(&aside)?;
        if to.symlink_metadata().is_ok() {
            io_step().map_err(io)?;
            treenav_files::atomic::rename(to, &aside).map_err(io)?;
        }
        io_step().map_err(io)?;
        treenav_files::atomic::rename(from, to).map_err(io)?;
        return remove(&aside);
    }
    io_step().map_err(io)?;
    treenav_files::atomic::rename(from, to).map_err(io)
}

/// Removes a file or folder; one that is not there is no error.
fn remove(path: &Path) -> Result<()> {
    let Ok(meta) = path.symlink_metadata() else {
        return Ok(());
    };
    let removed = io_step().and_then(|()| match meta.is_dir() {
        true => std::fs::remove_dir_all(path),
        false => std::fs::remove_file(path),
    });
    match removed {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::Io {
            path: path.to_path_buf(),
            source: e,
        }),
        _ => Ok(()),
    }
}

use treenav_files::atomic::sync_folder;

/// Removes what an interrupted save left before its commit: the staged
/// parts, a folder moved aside, and the temp files of killed writers of
/// every part (by their pid, once that process is gone). Best effort (a
/// failure is logged).
fn sweep(tree: &Path) {
    let dir = match tree.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    for suffix in PARTS {
        if let Some(name) = part(tree, suffix).file_name() {
            crate::store::remove_stale_temp_files(&dir, &name.to_string_lossy());
        }
    }
    let staged = staged_path(tree);
    let leftovers = PARTS
        .iter()
        .map(|s| part(&staged, s))
        .chain([side_path(&part(tree, crate::lexical::INDEX_SUFFIX), "old")]);
    for path in leftovers {
        if let Err(e) = remove(&path) {
            tracing::warn!(error = %e, "cannot remove what an interrupted save left");
        }
    }
}

/// For a writer holding the lock: finishes a committed generation, then
/// sweeps what an interrupted save left.
pub fn settle_locked(tree: &Path) -> Result<()> {
    if manifest_path(tree).symlink_metadata().is_ok() {
        tracing::info!(tree = %tree.display(), "finishing an interrupted save");
        roll_forward(tree)?;
    }
    sweep(tree);
    Ok(())
}

/// For a reader, before opening: when a save was committed but not
/// finished, finishes it (taking the writer lock), or waits for the writer
/// finishing it. A reader that cannot write the folder gets an error
/// saying what to run.
pub(crate) fn settle(tree: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    while manifest_path(tree).symlink_metadata().is_ok() {
        let held = Lock::try_acquire(tree).map_err(|e| Error::BadFile {
            path: manifest_path(tree),
            problem: format!(
                "a save of {} was interrupted after its commit and is not finished, and this process cannot finish it ({e}): run `treenav compact {}` as a user who can write its folder",
                tree.display(),
                tree.display()
            ),
        })?;
        match held {
            Some(lock) => {
                settle_locked(tree)?;
                drop(lock);
                return Ok(());
            }
            None if started.elapsed() > SETTLE_WAIT => {
                return Err(Error::Locked(format!(
                "{} is being saved by another process ({} is locked): try again when it is done",
                tree.display(),
                lock_path(tree).display()
            )))
            }
            None => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    Ok(())
}

/// Which generation of a tree is on disk, as cheaply as it can be told:
/// the identity of the tree file and of its delta (every save and every
/// update replaces one of them by a rename), and whether a commit is
/// being finished. Two stamps that differ mean another process changed
/// the tree; a reader holding a tree loaded under an older stamp is stale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    tree: Option<FileId>,
    delta: Option<FileId>,
    committing: bool,
}

/// A file's identity: a rename over it changes the inode (or, where there
/// is none, the length or the modification time).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileId {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

impl FileId {
    fn of(path: &Path) -> Option<FileId> {
        let m = path.symlink_metadata().ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&m);
        #[cfg(not(unix))]
        let inode = 0;
        Some(FileId {
            len: m.len(),
            modified: m.modified().ok(),
            inode,
        })
    }
}

/// The stamp of the generation now on disk at `tree` (three `stat`s).
pub fn stamp(tree: &Path) -> Stamp {
    Stamp {
        tree: FileId::of(tree),
        delta: FileId::of(&crate::delta::delta_path(tree)),
        committing: manifest_path(tree).symlink_metadata().is_ok(),
    }
}

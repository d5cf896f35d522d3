//! One way to write a file: [`write_atomically`] writes a temp file beside
//! the target (`.{name}.tmp-{pid}`), syncs it, renames it over the target
//! and syncs the folder, so a reader sees the old file or the new one,
//! never half of one, and a crash leaves at most a temp file (removed by
//! the next write to that name once its process is gone). Every other
//! move of a finished file goes through [`rename`].
//!
//! A caller that tests crashes passes a [`Step`] hook: it runs before the
//! temp file is created and before the rename, where a test injects a
//! failure.
//!
//! ```
//! use std::io::Write;
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("out.txt");
//! treenav_files::atomic::write_atomically(&path, treenav_files::atomic::no_step, |e| e, |f| {
//!     f.write_all(b"hello")
//! })
//! .unwrap();
//! assert_eq!(std::fs::read(&path).unwrap(), b"hello");
//! ```

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// A hook run before each create and rename (a fault point in crash tests).
pub type Step = fn() -> io::Result<()>;

/// The hook that does nothing.
pub fn no_step() -> io::Result<()> {
    Ok(())
}

/// Writes `path` atomically: `body` fills a temp file beside it, which is
/// synced, renamed over `path`, and the folder synced. On any failure the
/// temp file is removed and `path` is as it was. `io` turns the writer's
/// own I/O errors into the caller's error type (naming `path`).
pub fn write_atomically<T, E>(
    path: &Path,
    step: Step,
    io: impl Fn(io::Error) -> E,
    body: impl FnOnce(&mut File) -> Result<T, E>,
) -> Result<T, E> {
    let tmp = temp_path(path);
    let write = || -> Result<T, E> {
        step().map_err(&io)?;
        let mut file = File::create(&tmp).map_err(&io)?;
        let made = body(&mut file)?;
        file.sync_all().map_err(&io)?;
        drop(file);
        step().map_err(&io)?;
        rename(&tmp, path).map_err(&io)?;
        Ok(made)
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Writes `bytes` to `path` atomically (see [`write_atomically`]).
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomically(path, no_step, |e| e, |f| io::Write::write_all(f, bytes))
}

/// Renames `from` to `to` and syncs the folder of `to`, so the move is
/// durable: the one rename of the workspace.
pub fn rename(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::rename(from, to)?;
    sync_folder(to)
}

/// Syncs the folder holding `path`, so its renames are durable (a no-op
/// where folders cannot be opened, outside Unix).
pub fn sync_folder(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// The temp path a write to `path` goes through: `.{name}.tmp-{pid}` in
/// the same folder (a rename never crosses file systems). Temp files of
/// that name left by processes that are gone are removed first.
pub fn temp_path(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    remove_stale_temp_files(&dir, &file_name);
    dir.join(format!(".{file_name}.tmp-{}", std::process::id()))
}

/// Removes `.{file_name}.tmp-{pid}` files, and `-new`/`-old` folders
/// beside them, left by writes that were killed (kill -9, power loss): ours
/// by name, and only when that process is gone (checked in `/proc`, so only
/// on Linux; elsewhere they are left alone).
pub fn remove_stale_temp_files(dir: &Path, file_name: &str) {
    if !cfg!(target_os = "linux") {
        return;
    }
    let prefix = format!(".{file_name}.tmp-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .map(|p| {
                p.strip_suffix("-new")
                    .or(p.strip_suffix("-old"))
                    .unwrap_or(p)
            })
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
        if !alive {
            let path = entry.path();
            let removed = match entry.file_type() {
                Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
                _ => std::fs::remove_file(&path),
            };
            match removed {
                Ok(()) => tracing::info!(file = %path.display(), "removed a stale temp file"),
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "cannot remove a stale temp file")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_failed_body_leaves_the_old_file_and_no_temp_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.bin");
        std::fs::write(&path, b"old").expect("write");
        let failed: Result<(), io::Error> = write_atomically(
            &path,
            no_step,
            |e| e,
            |f| {
                f.write_all(b"half")?;
                Err(io::Error::other("body failed"))
            },
        );
        assert!(failed.is_err());
        assert_eq!(std::fs::read(&path).expect("read"), b"old");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("t.bin")]);
    }

    #[test]
    fn a_failing_step_stops_the_write_before_the_rename() {
        fn fail_always() -> io::Result<()> {
            Err(io::Error::other("injected"))
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.bin");
        std::fs::write(&path, b"old").expect("write");
        let r = write_atomically(&path, fail_always, |e| e, |f| f.write_all(b"new"));
        assert!(r.is_err());
        assert_eq!(std::fs::read(&path).expect("read"), b"old");
    }

    #[test]
    fn a_stale_temp_file_of_a_dead_process_is_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Pid numbers above the kernel's maximum (4,194,304) belong to no process.
        let dead = dir.path().join(".t.bin.tmp-4999999");
        let live = dir
            .path()
            .join(format!(".t.bin.tmp-{}", std::process::id()));
        std::fs::write(&dead, b"x").expect("write");
        std::fs::write(&live, b"x").expect("write");
        let path = dir.path().join("t.bin");
        write_atomically(&path, no_step, |e| e, |f| f.write_all(b"new")).expect("write");
        assert_eq!(std::fs::read(&path).expect("read"), b"new");
        if cfg!(target_os = "linux") {
            assert!(!dead.exists(), "the dead process's temp file is removed");
        }
        assert!(!live.exists(), "our own temp file is the one renamed");
    }
}

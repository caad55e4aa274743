//! Crash-safe file primitives: atomic replace for rewritten files and
//! single-`write` appends for append-only ones. Reads and appends touch
//! regular files only: a FIFO or a device named like a memory file would
//! block a reader forever (or take a write meant for the disk).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Replaces `path` with `data` atomically: write a temp file in the same
/// folder, fsync it, rename it over the target, fsync the folder. A crash
/// leaves either the old or the new content, never a mix.
pub fn atomic_write(path: &Path, data: &[u8]) -> Result<()> {
    let (dir, tmp) = synced_temp(path, data)?;
    let result = fs::rename(&tmp, path)
        .map_err(Error::io("rename into place", path))
        .and_then(|()| sync_dir(&dir));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// A fresh temp file's name beside `path`, `.<name>.<tag>-<pid>-<n>` (its
/// folder created when missing): the folder and the temp path, for a
/// writer that renames it over `path` when it is whole.
pub fn temp_beside(path: &Path, tag: &str) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    fs::create_dir_all(dir).map_err(Error::io("create folder", dir))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{tag}-{}-{}", std::process::id(), unique()));
    Ok((dir.to_path_buf(), tmp))
}

/// A temp file in `path`'s folder (created when missing) holding `data`,
/// fsynced. Returns the folder and the temp file, which the caller renames
/// or removes.
fn synced_temp(path: &Path, data: &[u8]) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    let (dir, tmp) = temp_beside(path, "tmp")?;
    let written = (|| {
        let mut f = File::create(&tmp).map_err(Error::io("create", &tmp))?;
        f.write_all(data).map_err(Error::io("write", &tmp))?;
        f.sync_all().map_err(Error::io("fsync", &tmp))
    })();
    match written {
        Ok(()) => Ok((dir, tmp)),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Creates `path` holding `data` unless it exists: the content is written
/// and fsynced in a temp file first, then linked into place, so the file
/// appears whole or not at all and an existing file is never replaced.
/// Returns false (and writes nothing) when `path` exists.
pub fn create_new(path: &Path, data: &[u8]) -> Result<bool> {
    if path.exists() {
        return Ok(false);
    }
    let (dir, tmp) = synced_temp(path, data)?;
    let result = (|| {
        match fs::hard_link(&tmp, path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
            // No hard links here (some network or FAT file systems): an
            // exclusive create still never replaces a file.
            Err(_) => {
                let mut f = match OpenOptions::new().write(true).create_new(true).open(path) {
                    Ok(f) => f,
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
                    Err(e) => return Err(Error::io("create", path)(e)),
                };
                f.write_all(data).map_err(Error::io("write", path))?;
                f.sync_all().map_err(Error::io("fsync", path))?;
            }
        }
        sync_dir(&dir)?;
        Ok(true)
    })();
    let _ = fs::remove_file(&tmp);
    result
}

/// Appends `data` to `path` in one `write` call (O_APPEND), creating the
/// file and its folder when needed; fsyncs when `sync` is set.
pub fn append(path: &Path, data: &[u8], sync: bool) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(Error::io("create folder", dir))?;
    }
    let mut f = open_regular(path, OpenOptions::new().create(true).append(true))
        .map_err(Error::io("open for append", path))?;
    f.write_all(data).map_err(Error::io("append to", path))?;
    if sync {
        f.sync_data().map_err(Error::io("fsync", path))?;
    }
    Ok(())
}

/// Fsyncs a folder so that a rename or a new file in it survives a crash.
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let d = File::open(dir).map_err(Error::io("open folder", dir))?;
        d.sync_all().map_err(Error::io("fsync folder", dir))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Reads a file as UTF-8 text. Invalid UTF-8 is an error naming the file and
/// the line of the first bad byte; the file itself is left untouched.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = read_regular(path)?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e
            .as_bytes()
            .iter()
            .take(valid)
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        Error::Corrupt {
            path: path.to_path_buf(),
            line,
            message: format!(
                "invalid UTF-8 at byte {valid}: the file was left unchanged; re-save it as UTF-8"
            ),
        }
    })
}

/// Like [`read_text`], but a missing file reads as `None`.
pub fn read_text_opt(path: &Path) -> Result<Option<String>> {
    match fs::metadata(path) {
        Err(e) if mnemo_core::files::names_no_file(&e) => Ok(None),
        _ => read_text(path).map(Some),
    }
}

/// Reads a whole regular file; anything else (a FIFO, a device, a folder)
/// is refused without blocking.
pub fn read_regular(path: &Path) -> Result<Vec<u8>> {
    mnemo_core::files::read_regular(path).map_err(Error::io("read", path))
}

pub use mnemo_core::files::open_regular;

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ N.fetch_add(1, Ordering::Relaxed).rotate_left(48)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a/MEMORY.md");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(d.path().join("a")).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn invalid_utf8_names_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.md");
        fs::write(&p, b"ok\nstill ok\nbad \xff here\n").unwrap();
        match read_text(&p) {
            Err(Error::Corrupt { line, .. }) => assert_eq!(line, 3),
            other => panic!("{other:?}"),
        }
        assert_eq!(fs::read(&p).unwrap().len(), 23);
    }

    /// A FIFO named like a memory file must not hang a reader or a writer.
    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("2026-01-01.md");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let read = read_text(&p).map(|_| ());
            let appended = append(&p, b"x\n", false);
            let _ = tx.send((read, appended));
        });
        let (read, appended) = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("reading or appending to a FIFO blocked");
        for r in [read, appended] {
            let e = r.unwrap_err().to_string();
            assert!(e.contains("2026-01-01.md"), "{e}");
        }
    }
}

//! Opening workspace files: regular files only, and never blocking. A FIFO
//! or a device named like a memory file would hang a reader forever (or
//! take a write meant for the disk); the check is made on the opened handle,
//! so nothing can be swapped in between.

use std::fs::{File, OpenOptions};
use std::path::Path;

/// Opens `path` with `options`, refusing anything but a regular file. On
/// Unix the open is non-blocking (a FIFO opens at once, or fails when opened
/// for writing without a reader).
pub fn open_regular(path: &Path, options: &mut OpenOptions) -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let f = options.open(path)?;
    if f.metadata()?.is_file() {
        Ok(f)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, a device or a folder): mnemo reads and writes regular files only; \
             move it out of the workspace",
        ))
    }
}

/// Whether `e` says no file has the name asked for: it is missing, longer
/// than the file system takes, or goes through a file as if it were a
/// folder. A read of a name a client chose answers "none" to all three,
/// not an error.
pub fn names_no_file(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{InvalidFilename, NotADirectory, NotFound};
    matches!(e.kind(), NotFound | InvalidFilename | NotADirectory)
}

/// Reads a whole regular file with [`open_regular`].
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = open_regular(path, OpenOptions::new().read(true))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    Ok(bytes)
}

//! Prepared models: the arrays a model runs on (its matrices already
//! expanded, transposed and quantised, its tokenizer's tables already
//! built) saved once in one file beside the model, then mapped by every
//! later load instead of rebuilt. Loading the default model went from
//! reading, hashing and converting 72 MB to mapping a file; the pages are
//! read by the first query that uses them.
//!
//! The file, `<model file>.<engine>.prepared`:
//!
//! ```text
//! "MNEMOPW1"  sections, each aligned to 64 bytes  footer (JSON)  u64 footer length  "MNEMOPW1"
//! ```
//!
//! The footer names every section (byte offset and length) and holds the
//! values a loader needs besides arrays, and what it was prepared from:
//! [`PREPARED_VERSION`], the engine, and the model file's size, time and
//! identity. A file that does not match all of them is ignored (and
//! replaced by the next load that prepares). Files are written to a
//! temporary name and renamed, never changed in place, so a mapped file's
//! bytes never change under a reader. Machines that are not little-endian
//! never use them.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use serde::{Deserialize, Serialize};

use crate::buf::{Buf, Plain};

const MAGIC: &[u8; 8] = b"MNEMOPW1";
/// Bumped whenever the layout of any stored array changes.
pub(crate) const PREPARED_VERSION: u32 = 1;
const ALIGN: usize = 64;

/// What a prepared file was made from: the model file as it was then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Source {
    len: u64,
    mtime_ns: i128,
    id: u64,
}

impl Source {
    /// The model file as it is now.
    pub fn of(path: &Path) -> Option<Source> {
        let meta = std::fs::metadata(path).ok()?;
        let mtime_ns = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_nanos() as i128;
        #[cfg(unix)]
        let id = {
            use std::os::unix::fs::MetadataExt;
            meta.ino() ^ meta.dev().rotate_left(32)
        };
        #[cfg(not(unix))]
        let id = 0;
        Some(Source {
            len: meta.len(),
            mtime_ns,
            id,
        })
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Footer {
    version: u32,
    engine: String,
    source: Source,
    sections: BTreeMap<String, (usize, usize)>,
    meta: BTreeMap<String, serde_json::Value>,
}

/// Where the prepared file of `model` for `engine` lives.
pub(crate) fn path_for(model: &Path, engine: &str) -> PathBuf {
    let mut name = model
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".{engine}.prepared"));
    model.with_file_name(name)
}

/// Collects sections and values, then writes the file.
pub(crate) struct Writer {
    data: Vec<u8>,
    sections: BTreeMap<String, (usize, usize)>,
    meta: BTreeMap<String, serde_json::Value>,
}

impl Writer {
    pub fn new() -> Self {
        Writer {
            data: MAGIC.to_vec(),
            sections: BTreeMap::new(),
            meta: BTreeMap::new(),
        }
    }

    /// Adds the bytes of an array under `name`.
    pub fn put(&mut self, name: &str, bytes: &[u8]) {
        let start = self.data.len().next_multiple_of(ALIGN);
        self.data.resize(start, 0);
        self.data.extend_from_slice(bytes);
        self.sections.insert(name.to_string(), (start, bytes.len()));
    }

    /// Adds a value under `key`.
    pub fn meta(&mut self, key: &str, value: serde_json::Value) {
        self.meta.insert(key.to_string(), value);
    }

    /// Writes the file for `engine`, made from `source`, at `path` (through
    /// a temporary file renamed into place).
    pub fn finish(self, path: &Path, engine: &str, source: Source) -> std::io::Result<()> {
        if cfg!(target_endian = "big") {
            return Ok(());
        }
        let footer = serde_json::to_vec(&Footer {
            version: PREPARED_VERSION,
            engine: engine.to_string(),
            source,
            sections: self.sections,
            meta: self.meta,
        })?;
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        let res = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&self.data)?;
            f.write_all(&footer)?;
            f.write_all(&(footer.len() as u64).to_le_bytes())?;
            f.write_all(MAGIC)?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        if res.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        res
    }
}

/// A mapped prepared file whose footer matched.
pub(crate) struct Reader {
    map: Arc<Mmap>,
    footer: Footer,
}

impl Reader {
    /// Maps `path` when it was prepared for `engine` from `source` by this
    /// version; `None` otherwise (missing, stale, foreign or damaged).
    pub fn open(path: &Path, engine: &str, source: &Source) -> Option<Reader> {
        if cfg!(target_endian = "big") {
            return None;
        }
        let file = std::fs::File::open(path).ok()?;
        // SAFETY: prepared files are only ever replaced by rename, never
        // written in place (see the module docs), so the mapped bytes stay
        // as they are while mapped.
        let map = unsafe { Mmap::map(&file) }.ok()?;
        let n = map.len();
        if n < 2 * MAGIC.len() + 8 || &map[..8] != MAGIC || &map[n - 8..] != MAGIC {
            return None;
        }
        let mut len = [0u8; 8];
        len.copy_from_slice(&map[n - 16..n - 8]);
        let len = usize::try_from(u64::from_le_bytes(len)).ok()?;
        let start = (n - 16).checked_sub(len)?;
        let footer: Footer = serde_json::from_slice(&map[start..n - 16]).ok()?;
        let fits = footer
            .sections
            .values()
            .all(|(off, l)| off.checked_add(*l).is_some_and(|end| end <= start));
        (fits
            && footer.version == PREPARED_VERSION
            && footer.engine == engine
            && &footer.source == source)
            .then(|| Reader {
                map: Arc::new(map),
                footer,
            })
    }

    /// The array stored under `name`, as `T`s.
    pub fn buf<T: Plain>(&self, name: &str) -> Option<Buf<T>> {
        let &(off, len) = self.footer.sections.get(name)?;
        let size = std::mem::size_of::<T>();
        if !len.is_multiple_of(size) {
            return None;
        }
        Buf::mapped(&self.map, off, len / size)
    }

    /// The value stored under `key`.
    pub fn meta(&self, key: &str) -> Option<&serde_json::Value> {
        self.footer.meta.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_come_back_mapped_and_a_changed_source_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.bin");
        std::fs::write(&model, b"weights").unwrap();
        let source = Source::of(&model).unwrap();
        let floats: Buf<f32> = vec![1.5f32, -2.0, 3.25].into();
        let bytes: Buf<u8> = vec![7u8, 8, 9].into();
        let mut w = Writer::new();
        w.put("b", bytes.as_bytes());
        w.put("f", floats.as_bytes());
        w.meta("n", serde_json::json!(3));
        let path = path_for(&model, "int8");
        assert_eq!(path, dir.path().join("m.bin.int8.prepared"));
        w.finish(&path, "int8", source.clone()).unwrap();
        let r = Reader::open(&path, "int8", &source).unwrap();
        let f: Buf<f32> = r.buf("f").unwrap();
        assert!(matches!(f, Buf::Mapped { .. }));
        assert_eq!(&*f, &[1.5, -2.0, 3.25]);
        assert_eq!(&*r.buf::<u8>("b").unwrap(), &[7, 8, 9]);
        assert_eq!(r.meta("n"), Some(&serde_json::json!(3)));
        assert!(r.buf::<f32>("b").is_none(), "3 bytes are no f32");
        assert!(r.buf::<u8>("missing").is_none());
        assert!(Reader::open(&path, "f32", &source).is_none());
        // The model changed: the prepared file no longer applies.
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(&model, b"other weights").unwrap();
        assert!(Reader::open(&path, "int8", &Source::of(&model).unwrap()).is_none());
        // A damaged file is refused, not trusted.
        let mut raw = std::fs::read(&path).unwrap();
        let n = raw.len();
        raw[n - 12] ^= 0xFF;
        std::fs::write(&path, &raw).unwrap();
        assert!(Reader::open(&path, "int8", &source).is_none());
    }
}

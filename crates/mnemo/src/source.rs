//! The index's view of a workspace kept in a [`Storage`] that is not a
//! folder (a database): its documents and session logs as a
//! [`SourceTree`], with the storage's revision as the freshness check.

use mnemo_index::{Source, SourceDoc, SourceTree};
use mnemo_store::{Entry, SharedStorage};
use sha2::Digest;

/// A [`Storage`](mnemo_store::Storage) read by the index.
pub(crate) struct StorageSource(pub SharedStorage);

fn doc(e: Entry, source: Source) -> SourceDoc {
    SourceDoc {
        rel: e.rel,
        source,
        mtime_ms: e.modified.timestamp_millis(),
        size: e.len,
    }
}

impl SourceTree for StorageSource {
    fn location(&self) -> String {
        self.0.location()
    }

    fn documents(&self) -> Result<Vec<SourceDoc>, String> {
        let mut out: Vec<SourceDoc> = self
            .0
            .documents()
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|e| !e.rel.starts_with("sessions/"))
            .map(|e| doc(e, Source::Memory))
            .collect();
        out.extend(
            self.0
                .session_files()
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|e| doc(e, Source::Sessions)),
        );
        Ok(out)
    }

    fn read(&self, rel: &str) -> Result<Option<Vec<u8>>, String> {
        if rel.starts_with("sessions/") {
            return self.0.read_session_file(rel).map_err(|e| e.to_string());
        }
        Ok(self
            .0
            .read(rel)
            .map_err(|e| e.to_string())?
            .map(|d| d.text.into_bytes()))
    }

    fn revision(&self) -> Result<String, String> {
        if let Some(r) = self.0.revision().map_err(|e| e.to_string())? {
            return Ok(r);
        }
        // No revision of its own: the listing's paths, times and sizes.
        let mut h = sha2::Sha256::new();
        for d in self.documents()? {
            h.update(format!("{}\0{}\0{}\n", d.rel, d.mtime_ms, d.size));
        }
        Ok(hex::encode(h.finalize()))
    }
}

//! An embedder that computes each text's vector once ([`Memo`]): the
//! benchmarks' sweeps and builds time the index's work, not the model's,
//! after the first pass.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use mnemo_core::{EmbedError, EmbedKind, Embedder, EmbedderId};

/// Vectors by (query or not, text), computed by the inner embedder the
/// first time a text is asked for; with a file, kept there too, so a later
/// process embeds nothing it has seen.
pub struct Memo {
    inner: Arc<dyn Embedder>,
    file: Option<Mutex<std::fs::File>>,
    known: Mutex<HashMap<(bool, String), Vec<f32>>>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Memo {
    /// Keeps the vectors in memory only.
    pub fn new(inner: Arc<dyn Embedder>) -> Self {
        Memo {
            inner,
            file: None,
            known: Mutex::new(HashMap::new()),
        }
    }

    /// Reads the vectors `path` holds and appends the new ones to it.
    /// Each record: 1 for a query's vector (else 0), the text's length in
    /// bytes (u32, little-endian), the text, then the vector's f32s; a
    /// record cut short by a stopped run is left out.
    pub fn with_file(inner: Arc<dyn Embedder>, path: &Path) -> std::io::Result<Self> {
        let dims = inner.dims();
        let mut known = HashMap::new();
        if let Ok(mut f) = std::fs::File::open(path) {
            let mut buf = Vec::new();
            f.read_to_end(&mut buf)?;
            let mut at = 0;
            while let Some(head) = buf.get(at..at + 5) {
                let query = head[0] == 1;
                let n = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
                let (text_end, end) = (at + 5 + n, at + 5 + n + 4 * dims);
                let (Some(text), Some(vector)) =
                    (buf.get(at + 5..text_end), buf.get(text_end..end))
                else {
                    break;
                };
                let text = String::from_utf8_lossy(text).into_owned();
                let v = vector
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                known.insert((query, text), v);
                at = end;
            }
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Memo {
            inner,
            file: Some(Mutex::new(file)),
            known: Mutex::new(known),
        })
    }

    /// Vectors held.
    pub fn len(&self) -> usize {
        locked(&self.known).len()
    }

    /// Whether no vector is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Embedder for Memo {
    fn id(&self) -> EmbedderId {
        self.inner.id()
    }
    fn dims(&self) -> usize {
        self.inner.dims()
    }
    fn max_batch(&self) -> usize {
        self.inner.max_batch()
    }
    fn max_input_tokens(&self) -> Option<usize> {
        self.inner.max_input_tokens()
    }
    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.inner.count_tokens(text)
    }
    fn multilingual(&self) -> Option<bool> {
        self.inner.multilingual()
    }
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        let query = kind == EmbedKind::Query;
        let missing: Vec<&str> = {
            let known = locked(&self.known);
            texts
                .iter()
                .copied()
                .filter(|t| !known.contains_key(&(query, t.to_string())))
                .collect()
        };
        if !missing.is_empty() {
            let got = self.inner.embed(&missing, kind)?;
            if let Some(file) = &self.file {
                let mut out = Vec::new();
                for (t, v) in missing.iter().zip(&got) {
                    out.push(u8::from(query));
                    out.extend((t.len() as u32).to_le_bytes());
                    out.extend(t.as_bytes());
                    out.extend(v.iter().flat_map(|x| x.to_le_bytes()));
                }
                locked(file)
                    .write_all(&out)
                    .map_err(|e| EmbedError::Inference(format!("the vectors' file: {e}")))?;
            }
            let mut known = locked(&self.known);
            for (t, v) in missing.into_iter().zip(got) {
                known.insert((query, t.to_string()), v);
            }
        }
        let known = locked(&self.known);
        Ok(texts
            .iter()
            .map(|t| {
                known
                    .get(&(query, t.to_string()))
                    .cloned()
                    .unwrap_or_default()
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the texts it embeds.
    struct Counting(Mutex<usize>);

    impl Embedder for Counting {
        fn id(&self) -> EmbedderId {
            EmbedderId {
                provider: "test".into(),
                model: "counting".into(),
                provider_key: String::new(),
            }
        }
        fn dims(&self) -> usize {
            3
        }
        fn embed(&self, texts: &[&str], _: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
            *self.0.lock().unwrap() += texts.len();
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, 0.0, 1.0])
                .collect())
        }
    }

    #[test]
    fn a_text_is_embedded_once_and_read_back_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors");
        let inner = Arc::new(Counting(Mutex::new(0)));
        let memo = Memo::with_file(inner.clone(), &path).unwrap();
        let a = memo.embed(&["one", "three"], EmbedKind::Document).unwrap();
        let b = memo.embed(&["three", "one"], EmbedKind::Document).unwrap();
        assert_eq!((a[0].clone(), a[1].clone()), (b[1].clone(), b[0].clone()));
        memo.embed(&["one"], EmbedKind::Query).unwrap();
        assert_eq!(
            *inner.0.lock().unwrap(),
            3,
            "a query's vector is apart from a document's"
        );
        // Another process: everything from the file, a cut record left out.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(&[0, 9, 0, 0, 0, b'x']).unwrap();
        drop(f);
        let again = Memo::with_file(inner.clone(), &path).unwrap();
        assert_eq!(again.len(), 3);
        assert_eq!(
            again.embed(&["three"], EmbedKind::Document).unwrap(),
            vec![a[1].clone()]
        );
        assert_eq!(*inner.0.lock().unwrap(), 3);
    }
}

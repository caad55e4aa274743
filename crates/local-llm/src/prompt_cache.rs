//! Saved prompt prefixes: the keys and values of a request's system block
//! (instructions and offered tools), kept in files so that the next
//! process, or the same one after another prompt took the cache, starts
//! from them instead of reading the block again. A 1.5B model reads about
//! 55 tokens a second on two cores, so a write path's 700-token
//! instructions cost 13 s a call; a saved block loads in milliseconds and
//! answers with the same bits (the cache keeps half floats; the file holds
//! those). A file that is missing, stale or damaged is ignored, and the
//! block runs as it always did.
//!
//! Only blocks a request marks as fixed instructions
//! (`ChatRequest::fixed_system`: the write path's extraction and judging,
//! consolidation, recall and re-rank prompts) are saved. A chat turn's
//! system block holds MEMORY.md and facts: saved, a forgotten fact would
//! stay on disk, in a folder every workspace of a server shares.
//!
//! A file holds: `MNEMOKV1`, the model's identity (file, size, shape), the
//! token ids, then each layer's keys and values. Its name is a hash of the
//! identity and the tokens; the folder keeps the [`KEEP`] newest.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"MNEMOKV1";

/// Saved prefixes a folder keeps (about 20 MB each for a 700-token block
/// of the 1.5B model).
pub const KEEP: usize = 8;

/// Shortest block worth a file.
pub const MIN_TOKENS: usize = 64;

/// Where a model's saved prefixes go and what identifies the model.
#[derive(Debug, Clone)]
pub struct PromptCache {
    dir: PathBuf,
    identity: String,
}

/// Each layer's keys and values for the saved tokens.
pub type Layers = Vec<(Vec<u16>, Vec<u16>)>;

fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in *p {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn token_bytes(tokens: &[u32]) -> Vec<u8> {
    tokens.iter().flat_map(|t| t.to_le_bytes()).collect()
}

impl PromptCache {
    /// Prefixes of the model `identity` (its file, size and shape) in
    /// `dir`.
    pub fn new(dir: PathBuf, identity: String) -> Self {
        PromptCache { dir, identity }
    }

    fn file(&self, tokens: &[u32]) -> PathBuf {
        let h = fnv(&[self.identity.as_bytes(), &token_bytes(tokens)]);
        self.dir.join(format!("{h:016x}.kv"))
    }

    /// The saved keys and values of exactly `tokens`, for `layers` layers
    /// of `kv_dim` values a position; `None` when there is no such file or
    /// it does not hold them (a damaged one is removed).
    pub fn load(&self, tokens: &[u32], layers: usize, kv_dim: usize) -> Option<Layers> {
        let path = self.file(tokens);
        let bytes = fs::read(&path).ok()?;
        let out = self.parse(&bytes, tokens, layers, kv_dim);
        if out.is_none() {
            let _ = fs::remove_file(&path);
        }
        out
    }

    fn parse(&self, bytes: &[u8], tokens: &[u32], layers: usize, kv_dim: usize) -> Option<Layers> {
        let mut at = 0usize;
        let mut take = |n: usize| {
            let s = bytes.get(at..at.checked_add(n)?)?;
            at += n;
            Some(s)
        };
        let u32_at = |s: &[u8]| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize;
        if take(8)? != MAGIC {
            return None;
        }
        let id_len = u32_at(take(4)?);
        if take(id_len)? != self.identity.as_bytes() {
            return None;
        }
        let (l, d, n) = (u32_at(take(4)?), u32_at(take(4)?), u32_at(take(4)?));
        if (l, d, n) != (layers, kv_dim, tokens.len()) || take(n * 4)? != token_bytes(tokens) {
            return None;
        }
        let half = |s: &[u8]| -> Vec<u16> {
            s.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        };
        let mut out = Vec::with_capacity(l);
        for _ in 0..l {
            let k = half(take(n * d * 2)?);
            let v = half(take(n * d * 2)?);
            out.push((k, v));
        }
        (at == bytes.len()).then_some(out)
    }

    /// Saves `tokens` with each layer's keys and values (written whole to a
    /// temporary file, then renamed), and keeps the folder to [`KEEP`]
    /// files. Errors are ignored: the cache only saves time.
    pub fn save(&self, tokens: &[u32], layers: &[crate::model::LayerKv<'_>], kv_dim: usize) {
        let path = self.file(tokens);
        if path.exists() || fs::create_dir_all(&self.dir).is_err() {
            return;
        }
        let mut bytes = Vec::with_capacity(64 + tokens.len() * (4 + layers.len() * kv_dim * 4));
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(self.identity.len() as u32).to_le_bytes());
        bytes.extend_from_slice(self.identity.as_bytes());
        for n in [layers.len(), kv_dim, tokens.len()] {
            bytes.extend_from_slice(&(n as u32).to_le_bytes());
        }
        bytes.extend_from_slice(&token_bytes(tokens));
        for (k, v) in layers {
            for x in k.iter().chain(v.iter()) {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
        }
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        let written = fs::File::create(&tmp)
            .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.sync_all()))
            .and_then(|()| fs::rename(&tmp, &path));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
            return;
        }
        self.prune();
    }

    /// Removes all but the [`KEEP`] newest saved prefixes.
    fn prune(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "kv"))
            .filter_map(|p| Some((fs::metadata(&p).ok()?.modified().ok()?, p)))
            .collect();
        files.sort_by_key(|f| std::cmp::Reverse(f.0));
        for (_, p) in files.into_iter().skip(KEEP) {
            let _ = fs::remove_file(p);
        }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The default folder: `MNEMO_PROMPT_CACHE` (`off` or `0` turns saving
/// off), else `mnemo/prompts` in the user's cache folder.
pub fn default_dir() -> Option<PathBuf> {
    match std::env::var("MNEMO_PROMPT_CACHE") {
        Ok(v) if matches!(v.trim(), "off" | "0" | "false") => None,
        Ok(v) if !v.trim().is_empty() => Some(PathBuf::from(v.trim())),
        _ => dirs::cache_dir().map(|d| d.join("mnemo").join("prompts")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_block_loads_only_for_its_model_and_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PromptCache::new(dir.path().to_path_buf(), "model a".into());
        let tokens = [1u32, 2, 3];
        let k: Vec<u16> = (0..6).collect();
        let v: Vec<u16> = (10..16).collect();
        cache.save(&tokens, &[(&k, &v)], 2);
        assert_eq!(
            cache.load(&tokens, 1, 2),
            Some(vec![(k.clone(), v.clone())])
        );
        // Another shape, other tokens, another model: nothing.
        assert_eq!(cache.load(&tokens, 2, 2), None);
        let cache = PromptCache::new(dir.path().to_path_buf(), "model a".into());
        assert_eq!(cache.load(&[1, 2, 4], 1, 2), None);
        let other = PromptCache::new(dir.path().to_path_buf(), "model b".into());
        assert_eq!(other.load(&tokens, 1, 2), None);
        // A damaged file is ignored and removed.
        cache.save(&tokens, &[(&k, &v)], 2);
        let file = cache.file(&tokens);
        let bytes = fs::read(&file).unwrap();
        fs::write(&file, &bytes[..bytes.len() - 3]).unwrap();
        assert_eq!(cache.load(&tokens, 1, 2), None);
        assert!(!file.exists());
    }

    #[test]
    fn the_folder_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PromptCache::new(dir.path().to_path_buf(), "m".into());
        for t in 0..(KEEP as u32 + 3) {
            cache.save(&[t], &[(&[1, 2], &[3, 4])], 2);
        }
        let n = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(n, KEEP);
    }
}

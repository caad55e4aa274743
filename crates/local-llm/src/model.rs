//! The transformer of a GGUF chat model (Qwen2 and Llama families: RMS
//! norms, rotary positions, grouped-query attention, SwiGLU) on candle's
//! quantized matrix products, with a KV cache that keeps the longest prefix
//! the next prompt shares with the last one, and prompts run in batches.
//!
//! Weights stay quantized as the file stores them: the token embedding is
//! read one row at a time rather than expanded to `f32`, and the matrix
//! products run on [`crate::quant`]'s kernels, which read the blocks in
//! place (candle's `QMatMul` is kept for the block types they lack).

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::{ggml_file::qtensor_from_ggml, GgmlDType, QMatMul};
use candle_core::{DType, Device, Module, Tensor};

use crate::error::{Error, Result};
use crate::quant::{self, Kernel, QWeight};

/// Prompt tokens processed per forward pass: large enough that each weight
/// matrix is read once for many tokens, small enough to bound the attention
/// scores' memory.
pub const PROMPT_BATCH: usize = 128;

/// The architecture families this crate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// Qwen2 / Qwen2.5: biases on q, k, v; rotary halves (NeoX layout).
    Qwen2,
    /// Llama (SmolLM2 and others): no biases; interleaved rotary pairs.
    Llama,
}

/// Shapes and constants read from the GGUF metadata.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// Architecture.
    pub arch: Arch,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads.
    pub n_kv_head: usize,
    /// Hidden size.
    pub n_embd: usize,
    /// Size of one head.
    pub head_dim: usize,
    /// RMS norm epsilon.
    pub eps: f64,
    /// Rotary base frequency.
    pub rope_base: f32,
    /// Context length the model was trained for.
    pub train_context: usize,
}

/// A weight matrix: this crate's kernels when they run its block type,
/// else candle's product.
struct Linear {
    own: Option<QWeight>,
    candle: QMatMul,
}

impl Linear {
    fn new(t: candle_core::quantized::QTensor) -> Result<Self> {
        let t = Arc::new(t);
        Ok(Linear {
            own: QWeight::new(Arc::clone(&t)),
            candle: QMatMul::QTensor(t),
        })
    }
}

/// `h · wᵀ` for each of `ws` (which share the input `h`, `[b, n, k]`): one
/// pass of the kernels over all of them when they all have one, else
/// candle's product for each.
fn linear_many(ws: &[&Linear], h: &Tensor, kernel: Kernel) -> Result<Vec<Tensor>> {
    let tokens = h.elem_count() / h.dims().last().copied().unwrap_or(1).max(1);
    let own: Option<Vec<&QWeight>> = ws.iter().map(|w| w.own.as_ref()).collect();
    let own = own.filter(|_| tokens < candle_from());
    let Some(own) = own else {
        return ws
            .iter()
            .map(|w| Ok(w.candle.forward(h)?))
            .collect::<Result<Vec<_>>>();
    };
    let mut dims = h.dims().to_vec();
    let x = h.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?;
    let outs = quant::matmul_many(&own, &x, kernel).map_err(|e| Error::Inference(e.to_string()))?;
    dims.pop();
    own.iter()
        .zip(outs)
        .map(|(w, out)| {
            let mut shape = dims.clone();
            shape.push(w.rows());
            Ok(Tensor::from_vec(out, shape, h.device())?)
        })
        .collect()
}

/// Products of this many tokens or more run on candle's `QMatMul`. By
/// default none do: the tiled kernels run prompt batches about as fast as
/// candle's tiled product, and candle builds a repacked copy of every Q4_K
/// matrix on its first product and keeps it (1.22 GB instead of 2.2 GB
/// peak for Qwen2.5-1.5B; BENCHMARKS items 33 and 35).
/// `MNEMO_LLM_CANDLE_FROM` overrides, to compare (1: candle for
/// everything, as before the kernels; 2: candle for prompts only).
fn candle_from() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("MNEMO_LLM_CANDLE_FROM")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(CANDLE_FROM)
    })
}

/// See [`candle_from`].
const CANDLE_FROM: usize = usize::MAX;

fn linear(w: &Linear, h: &Tensor, kernel: Kernel) -> Result<Tensor> {
    linear_many(&[w], h, kernel)?
        .pop()
        .ok_or_else(|| Error::Inference("no product".into()))
}

struct Layer {
    attn_norm: Tensor,
    wq: Linear,
    wk: Linear,
    wv: Linear,
    bq: Option<Tensor>,
    bk: Option<Tensor>,
    bv: Option<Tensor>,
    wo: Linear,
    ffn_norm: Tensor,
    gate: Linear,
    up: Linear,
    down: Linear,
}

/// One layer's keys and values, preallocated and grown by doubling;
/// `len` positions are valid, so truncating to a prefix is free.
#[derive(Default)]
struct KvCache {
    k: Option<Tensor>,
    v: Option<Tensor>,
    len: usize,
}

impl KvCache {
    fn append(&mut self, k: &Tensor, v: &Tensor, limit: usize) -> Result<(Tensor, Tensor)> {
        let n = k.dim(2)?;
        let cap = self.k.as_ref().map(|t| t.dim(2)).transpose()?.unwrap_or(0);
        if self.len + n > cap {
            let new_cap = (cap * 2)
                .max(self.len + n)
                .max(256)
                .min(limit.max(self.len + n));
            let grow = |old: &Option<Tensor>, like: &Tensor| -> Result<Tensor> {
                let (b, h, _, d) = like.dims4()?;
                let t = Tensor::zeros((b, h, new_cap, d), like.dtype(), like.device())?;
                if let Some(o) = old {
                    if self.len > 0 {
                        t.slice_set(&o.narrow(2, 0, self.len)?.contiguous()?, 2, 0)?;
                    }
                }
                Ok(t)
            };
            self.k = Some(grow(&self.k, k)?);
            self.v = Some(grow(&self.v, v)?);
        }
        let (Some(kc), Some(vc)) = (&self.k, &self.v) else {
            return Err(Error::Inference("KV cache not allocated".into()));
        };
        kc.slice_set(k, 2, self.len)?;
        vc.slice_set(v, 2, self.len)?;
        self.len += n;
        Ok((
            kc.narrow(2, 0, self.len)?.contiguous()?,
            vc.narrow(2, 0, self.len)?.contiguous()?,
        ))
    }
}

/// A loaded model and its KV cache.
pub struct Model {
    /// Shapes and constants.
    pub config: ModelConfig,
    layers: Vec<Layer>,
    embd_raw: Vec<u8>,
    embd_dtype: GgmlDType,
    embd_row_bytes: usize,
    norm: Tensor,
    output: Linear,
    kernel: Kernel,
    cos: Tensor,
    sin: Tensor,
    cache: Vec<KvCache>,
    /// The tokens whose keys and values the cache holds.
    cached: Vec<u32>,
    /// Largest number of positions (the configured context window).
    max_positions: usize,
    device: Device,
}

fn meta_u32(ct: &Content, key: &str) -> Result<usize> {
    ct.metadata
        .get(key)
        .and_then(|v| v.to_u32().ok())
        .map(|v| v as usize)
        .ok_or_else(|| Error::Invalid(format!("GGUF metadata {key} is missing")))
}

fn meta_f32(ct: &Content, key: &str) -> Option<f32> {
    ct.metadata.get(key).and_then(|v| v.to_f32().ok())
}

/// The `general.architecture` of a GGUF's metadata.
pub fn architecture(ct: &Content) -> String {
    ct.metadata
        .get("general.architecture")
        .and_then(|v| Value::to_string(v).ok())
        .cloned()
        .unwrap_or_default()
}

impl ModelConfig {
    /// Reads the shapes of a Qwen2 or Llama GGUF.
    pub fn from_gguf(ct: &Content) -> Result<Self> {
        let arch_name = architecture(ct);
        let arch = match arch_name.as_str() {
            "qwen2" => Arch::Qwen2,
            "llama" => Arch::Llama,
            other => {
                return Err(Error::Invalid(format!(
                    "architecture `{other}` is not supported: mnemo runs Qwen2 and Llama family models (qwen2, llama)"
                )))
            }
        };
        let p = |k: &str| format!("{arch_name}.{k}");
        let n_head = meta_u32(ct, &p("attention.head_count"))?;
        let n_embd = meta_u32(ct, &p("embedding_length"))?;
        let head_dim = n_embd.checked_div(n_head).unwrap_or(0);
        if n_head == 0 || head_dim % 2 != 0 {
            return Err(Error::Invalid(format!(
                "bad attention shape: {n_head} heads for {n_embd} dimensions"
            )));
        }
        let n_kv_head = ct
            .metadata
            .get(&p("attention.head_count_kv"))
            .and_then(|v| v.to_u32().ok())
            .map(|v| v as usize)
            .unwrap_or(n_head);
        if n_kv_head == 0 || n_head % n_kv_head != 0 {
            return Err(Error::Invalid(format!(
                "bad attention shape: {n_head} query heads for {n_kv_head} key/value heads"
            )));
        }
        Ok(ModelConfig {
            arch,
            n_layer: meta_u32(ct, &p("block_count"))?,
            n_head,
            n_kv_head,
            n_embd,
            head_dim,
            eps: meta_f32(ct, &p("attention.layer_norm_rms_epsilon")).unwrap_or(1e-5) as f64,
            rope_base: meta_f32(ct, &p("rope.freq_base")).unwrap_or(10_000.0),
            train_context: meta_u32(ct, &p("context_length")).unwrap_or(4096),
        })
    }
}

/// Checks that every tensor lies inside the file, so a truncated download
/// is reported as such rather than as a read error deep in the loader.
pub fn check_extents(ct: &Content, file_len: u64, path: &Path) -> Result<()> {
    for (name, info) in &ct.tensor_infos {
        let elems = info.shape.elem_count();
        let bytes = (elems / info.ggml_dtype.block_size()) * info.ggml_dtype.type_size();
        let end = ct.tensor_data_offset + info.offset + bytes as u64;
        if end > file_len {
            return Err(Error::BadModel {
                path: path.to_path_buf(),
                message: format!(
                    "it is truncated: tensor {name} ends at byte {end} but the file has {file_len}; delete it and fetch it again"
                ),
            });
        }
    }
    Ok(())
}

impl Model {
    /// Loads the weights of `ct` (read from `file`) for a context of
    /// `max_positions` tokens.
    pub fn load(ct: &Content, file: &mut File, max_positions: usize) -> Result<Self> {
        let config = ModelConfig::from_gguf(ct)?;
        let device = Device::Cpu;
        let mut tensor = |name: &str| {
            ct.tensor(file, name, &device)
                .map_err(|e| Error::Invalid(format!("tensor {name}: {e}")))
        };
        let mut layers = Vec::with_capacity(config.n_layer);
        let qwen = config.arch == Arch::Qwen2;
        for i in 0..config.n_layer {
            let n = |s: &str| format!("blk.{i}.{s}");
            let mut bias = |s: &str| -> Result<Option<Tensor>> {
                if qwen {
                    Ok(Some(tensor(&n(s))?.dequantize(&device)?))
                } else {
                    Ok(None)
                }
            };
            let (bq, bk, bv) = (
                bias("attn_q.bias")?,
                bias("attn_k.bias")?,
                bias("attn_v.bias")?,
            );
            layers.push(Layer {
                attn_norm: tensor(&n("attn_norm.weight"))?.dequantize(&device)?,
                wq: Linear::new(tensor(&n("attn_q.weight"))?)?,
                wk: Linear::new(tensor(&n("attn_k.weight"))?)?,
                wv: Linear::new(tensor(&n("attn_v.weight"))?)?,
                bq,
                bk,
                bv,
                wo: Linear::new(tensor(&n("attn_output.weight"))?)?,
                ffn_norm: tensor(&n("ffn_norm.weight"))?.dequantize(&device)?,
                gate: Linear::new(tensor(&n("ffn_gate.weight"))?)?,
                up: Linear::new(tensor(&n("ffn_up.weight"))?)?,
                down: Linear::new(tensor(&n("ffn_down.weight"))?)?,
            });
        }
        let norm = tensor("output_norm.weight")?.dequantize(&device)?;
        let output = match ct.tensor_infos.contains_key("output.weight") {
            true => Linear::new(tensor("output.weight")?)?,
            // Tied embeddings (SmolLM2): the embedding is the output matrix.
            false => Linear::new(tensor("token_embd.weight")?)?,
        };
        let info = ct
            .tensor_infos
            .get("token_embd.weight")
            .ok_or_else(|| Error::Invalid("tensor token_embd.weight is missing".into()))?;
        let embd_dtype = info.ggml_dtype;
        let dims = info.shape.dims();
        // candle lists GGUF dimensions outermost first: [vocab, n_embd].
        if dims.len() != 2 || dims[1] != config.n_embd {
            return Err(Error::Invalid(format!(
                "token_embd.weight has shape {dims:?}, expected [vocab, {}]",
                config.n_embd
            )));
        }
        let embd_row_bytes = config.n_embd / embd_dtype.block_size() * embd_dtype.type_size();
        let mut embd_raw = vec![0u8; embd_row_bytes * dims[0]];
        {
            use std::io::{Read, Seek, SeekFrom};
            file.seek(SeekFrom::Start(ct.tensor_data_offset + info.offset))
                .and_then(|_| file.read_exact(&mut embd_raw))
                .map_err(|e| Error::Invalid(format!("reading token_embd.weight: {e}")))?;
        }
        let max_positions = max_positions.max(1);
        let (cos, sin) = rope_tables(&config, max_positions, &device)?;
        let cache = (0..config.n_layer).map(|_| KvCache::default()).collect();
        Ok(Model {
            config,
            layers,
            embd_raw,
            embd_dtype,
            embd_row_bytes,
            norm,
            output,
            kernel: quant::kernel(),
            cos,
            sin,
            cache,
            cached: Vec::new(),
            max_positions,
            device,
        })
    }

    /// Number of rows of the embedding (the vocabulary size the model knows).
    pub fn vocab_rows(&self) -> usize {
        self.embd_raw.len() / self.embd_row_bytes.max(1)
    }

    /// The largest number of positions the cache may hold.
    pub fn max_positions(&self) -> usize {
        self.max_positions
    }

    fn embed(&self, tokens: &[u32]) -> Result<Tensor> {
        let mut rows = Vec::with_capacity(tokens.len());
        for &t in tokens {
            let start = t as usize * self.embd_row_bytes;
            let raw = self
                .embd_raw
                .get(start..start + self.embd_row_bytes)
                .ok_or_else(|| {
                    Error::Inference(format!("token id {t} is outside the vocabulary"))
                })?;
            let q = qtensor_from_ggml(
                self.embd_dtype,
                raw,
                vec![1, self.config.n_embd],
                &self.device,
            )?;
            rows.push(q.dequantize(&self.device)?);
        }
        Ok(Tensor::cat(&rows, 0)?.unsqueeze(0)?)
    }

    /// Forgets the cache.
    pub fn reset(&mut self) {
        self.cached.clear();
        for c in &mut self.cache {
            c.len = 0;
        }
    }

    /// How many leading tokens of `tokens` the cache already holds.
    pub fn shared_prefix(&self, tokens: &[u32]) -> usize {
        self.cached
            .iter()
            .zip(tokens)
            .take_while(|(a, b)| a == b)
            .count()
    }

    /// Runs `tokens` after the longest prefix the cache shares with them,
    /// in batches of [`PROMPT_BATCH`], and returns the last token's logits
    /// and how many tokens were reused. `cancel` stops it between batches.
    pub fn prefill(&mut self, tokens: &[u32], cancel: &AtomicBool) -> Result<(Vec<f32>, usize)> {
        if tokens.is_empty() {
            return Err(Error::Invalid("empty prompt".into()));
        }
        // At least one token must run, to have logits.
        let reuse = self.shared_prefix(tokens).min(tokens.len() - 1);
        self.truncate(reuse);
        let mut logits = None;
        for chunk in tokens[reuse..].chunks(PROMPT_BATCH) {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            logits = Some(self.forward(chunk)?);
        }
        logits
            .map(|l| (l, reuse))
            .ok_or_else(|| Error::Inference("no tokens ran".into()))
    }

    /// Runs one generated token and returns the next logits.
    pub fn step(&mut self, token: u32) -> Result<Vec<f32>> {
        self.forward(&[token])
    }

    fn truncate(&mut self, len: usize) {
        self.cached.truncate(len);
        for c in &mut self.cache {
            c.len = c.len.min(len);
        }
    }

    fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        let pos = self.cached.len();
        let n = tokens.len();
        if pos + n > self.max_positions {
            return Err(Error::ContextOverflow(format!(
                "{} tokens do not fit the context window of {}",
                pos + n,
                self.max_positions
            )));
        }
        let cfg = self.config.clone();
        let kernel = self.kernel;
        let mut x = self.embed(tokens)?;
        let mask = if n > 1 {
            Some(causal_mask(
                n,
                pos,
                cfg.n_head / cfg.n_kv_head,
                &self.device,
            )?)
        } else {
            None
        };
        let cos = self.cos.narrow(0, pos, n)?;
        let sin = self.sin.narrow(0, pos, n)?;
        for (layer, cache) in self.layers.iter().zip(self.cache.iter_mut()) {
            let h = candle_nn::ops::rms_norm(&x, &layer.attn_norm, cfg.eps as f32)?;
            let attn = attention(
                &cfg,
                kernel,
                layer,
                cache,
                &h,
                &cos,
                &sin,
                mask.as_ref(),
                self.max_positions,
            )?;
            x = (x + attn)?;
            let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, cfg.eps as f32)?;
            let gu = linear_many(&[&layer.gate, &layer.up], &h, kernel)?;
            let (g, u) = (&gu[0], &gu[1]);
            let ff = linear(&layer.down, &(candle_nn::ops::silu(g)? * u)?, kernel)?;
            x = (x + ff)?;
        }
        self.cached.extend_from_slice(tokens);
        let last = x.narrow(1, n - 1, 1)?;
        let last = candle_nn::ops::rms_norm(&last, &self.norm, cfg.eps as f32)?;
        let logits = linear(&self.output, &last, kernel)?;
        Ok(logits
            .flatten_all()?
            .to_dtype(DType::F32)?
            .to_vec1::<f32>()?)
    }
}

#[allow(clippy::too_many_arguments)]
fn attention(
    cfg: &ModelConfig,
    kernel: Kernel,
    layer: &Layer,
    cache: &mut KvCache,
    h: &Tensor,
    cos: &Tensor,
    sin: &Tensor,
    mask: Option<&Tensor>,
    limit: usize,
) -> Result<Tensor> {
    let (b, n, _) = h.dims3()?;
    let qkv = linear_many(&[&layer.wq, &layer.wk, &layer.wv], h, kernel)?;
    let proj = |y: &Tensor, bias: &Option<Tensor>| -> Result<Tensor> {
        let y = y.clone();
        Ok(match bias {
            Some(bias) => y.broadcast_add(bias)?,
            None => y,
        })
    };
    let heads = |t: Tensor, count: usize| -> Result<Tensor> {
        Ok(t.reshape((b, n, count, cfg.head_dim))?
            .transpose(1, 2)?
            .contiguous()?)
    };
    let q = heads(proj(&qkv[0], &layer.bq)?, cfg.n_head)?;
    let k = heads(proj(&qkv[1], &layer.bk)?, cfg.n_kv_head)?;
    let v = heads(proj(&qkv[2], &layer.bv)?, cfg.n_kv_head)?;
    let rope = |t: &Tensor| -> Result<Tensor> {
        Ok(match cfg.arch {
            Arch::Qwen2 => candle_nn::rotary_emb::rope(t, cos, sin)?,
            Arch::Llama => candle_nn::rotary_emb::rope_i(t, cos, sin)?,
        })
    };
    let q = rope(&q)?;
    let k = rope(&k)?;
    let (k, v) = cache.append(&k, &v, limit)?;
    // Grouped-query attention without copying keys: the query heads that
    // share a key/value head are stacked as extra rows of that head.
    let rep = cfg.n_head / cfg.n_kv_head;
    let q = q.reshape((b, cfg.n_kv_head, rep * n, cfg.head_dim))?;
    let scores = (q.matmul(&k.t()?)? / (cfg.head_dim as f64).sqrt())?;
    let scores = match mask {
        Some(m) => scores.broadcast_add(m)?,
        None => scores,
    };
    let probs = candle_nn::ops::softmax_last_dim(&scores)?;
    let y = probs.matmul(&v)?;
    let y = y
        .reshape((b, cfg.n_head, n, cfg.head_dim))?
        .transpose(1, 2)?
        .reshape((b, n, cfg.n_embd))?;
    linear(&layer.wo, &y, kernel)
}

/// `(rep * n, pos + n)`: row `r` is query `r % n`, which sees positions up
/// to `pos + r % n`.
fn causal_mask(n: usize, pos: usize, rep: usize, device: &Device) -> Result<Tensor> {
    let total = pos + n;
    let mut m = vec![0f32; rep * n * total];
    for r in 0..rep * n {
        let i = r % n;
        for j in (pos + i + 1)..total {
            m[r * total + j] = f32::NEG_INFINITY;
        }
    }
    Ok(Tensor::from_vec(m, (rep * n, total), device)?)
}

fn rope_tables(cfg: &ModelConfig, positions: usize, device: &Device) -> Result<(Tensor, Tensor)> {
    let half = cfg.head_dim / 2;
    let inv: Vec<f32> = (0..half)
        .map(|i| 1.0 / cfg.rope_base.powf((2 * i) as f32 / cfg.head_dim as f32))
        .collect();
    let mut cos = Vec::with_capacity(positions * half);
    let mut sin = Vec::with_capacity(positions * half);
    for p in 0..positions {
        for f in &inv {
            let a = p as f32 * f;
            cos.push(a.cos());
            sin.push(a.sin());
        }
    }
    Ok((
        Tensor::from_vec(cos, (positions, half), device)?,
        Tensor::from_vec(sin, (positions, half), device)?,
    ))
}

/// Index of the largest value (the greedy choice).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0usize;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best as u32
}

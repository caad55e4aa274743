//! The fast forward pass: a hand-written BERT encoder on contiguous `f32`
//! buffers.
//!
//! Why it is faster than the candle path: the sequences of a batch are packed
//! end to end, so the dense layers run as one matrix product over real tokens
//! only (no padding at all) and only attention works per sequence; Q, K and V
//! come from one fused product; bias, residual, layer norm and GELU are fused
//! loops over buffers allocated once per call; and the batch is split across
//! threads by token count, each thread running single-threaded `gemm` (the
//! kernel candle itself uses), so threads never wait on each other inside a
//! layer.
//!
//! The weights come either from a safetensors BERT or MPNet
//! ([`FastBert::new`]; MPNet is BERT with a relative-position bias added to
//! every attention score, no token types and positions numbered from 2), or,
//! already laid out, from another file format ([`FastBert::from_parts`]:
//! the 4-bit multilingual-e5 file of [`crate::e5q4`], whose word table stays
//! 4-bit and is expanded one looked-up row at a time).

use std::collections::HashMap;

use candle_core::{DType, Tensor};
use candle_transformers::models::bert::{Config as BertConfig, HiddenAct};
use gemm::Parallelism;

use crate::buf::Buf;
use crate::error::{Error, Result};
use crate::int8::{kernel, linear_i8, Kernel, QActs, QMatrix, QParts};
use crate::model_files::{position_offset, Arch, Pooling};
use crate::prepared::{Reader, Writer};

/// The vector extensions the element-wise loops are compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isa {
    Base,
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Avx2,
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Avx512,
}

impl Isa {
    fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::env::var_os("MNEMO_EMBED_NO_AVX512").is_none()
                && is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512vl")
                && is_x86_feature_detected!("fma")
            {
                return Isa::Avx512;
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                return Isa::Avx2;
            }
        }
        Isa::Base
    }
}

/// One encoder layer, every matrix `[in, out]` row-major.
pub(crate) struct Layer {
    /// Q, K and V projections side by side, `[hidden, 3 * hidden]` row-major.
    pub qkv_w: Buf<f32>,
    pub qkv_b: Buf<f32>,
    /// Attention output projection, `[hidden, hidden]`.
    pub ao_w: Buf<f32>,
    pub ao_b: Buf<f32>,
    pub ln1_w: Buf<f32>,
    pub ln1_b: Buf<f32>,
    /// Feed-forward up projection, `[hidden, intermediate]`.
    pub up_w: Buf<f32>,
    pub up_b: Buf<f32>,
    /// Feed-forward down projection, `[intermediate, hidden]`.
    pub down_w: Buf<f32>,
    pub down_b: Buf<f32>,
    pub ln2_w: Buf<f32>,
    pub ln2_b: Buf<f32>,
    /// The four matrices in int8 once [`FastBert::quantize_int8`] ran (the
    /// `f32` copies are then dropped).
    pub q: Option<Box<QLayer>>,
}

/// A layer's matrices in int8.
pub(crate) struct QLayer {
    qkv: QMatrix,
    ao: QMatrix,
    up: QMatrix,
    down: QMatrix,
}

/// The word-embedding table.
pub(crate) enum WordTable {
    /// `[vocab, hidden]` row-major.
    F32(Vec<f32>),
    /// 4-bit blocks, one row per token, expanded when looked up: a
    /// 250k-token table is 54 MB this way and 384 MB as `f32`.
    Q4(crate::e5q4::Q4Rows),
}

impl WordTable {
    fn rows(&self, hidden: usize) -> usize {
        match self {
            WordTable::F32(w) => w.len() / hidden.max(1),
            WordTable::Q4(q) => q.rows(),
        }
    }

    #[inline(always)]
    fn row_into(&self, id: usize, dst: &mut [f32]) {
        match self {
            WordTable::F32(w) => dst.copy_from_slice(&w[id * dst.len()..(id + 1) * dst.len()]),
            WordTable::Q4(q) => q.row_into(id, dst),
        }
    }
}

/// Everything [`FastBert::from_parts`] needs, already in its layout.
pub(crate) struct BertParts {
    pub hidden: usize,
    pub heads: usize,
    pub inter: usize,
    pub eps: f32,
    pub act: HiddenAct,
    pub word: WordTable,
    /// `[positions, hidden]`; row `p` is the embedding of the `p`-th token
    /// of a sequence (a format with a position offset stores the table
    /// from that offset on).
    pub pos: Buf<f32>,
    /// The token-type embedding every token gets (type 0), `[hidden]`.
    pub type0: Buf<f32>,
    pub emb_ln_w: Buf<f32>,
    pub emb_ln_b: Buf<f32>,
    pub layers: Vec<Layer>,
    /// MPNet's relative-position bias, shared by all layers.
    pub rel: Option<RelBias>,
}

/// T5-style relative-position attention bias (MPNet): a learned value per
/// head for each of `buckets` distance buckets, exact for small distances and
/// logarithmic up to `max_distance`, with separate buckets for keys before
/// and after the query.
pub(crate) struct RelBias {
    /// `[buckets, heads]` row-major, as stored.
    pub table: Vec<f32>,
    pub buckets: usize,
    pub max_distance: usize,
}

impl RelBias {
    /// Bucket of key position minus query position, as MPNet computes it
    /// (in `f32`, truncating, so boundaries fall where the reference puts
    /// them).
    fn bucket(&self, rel: i64) -> usize {
        let half = self.buckets / 2;
        let n = -rel;
        let mut ret = if n < 0 { half } else { 0 };
        let n = n.unsigned_abs() as usize;
        let max_exact = half / 2;
        if n < max_exact {
            ret += n;
        } else {
            let ratio = (n as f32 / max_exact as f32).ln()
                / ((self.max_distance as f64 / max_exact as f64).ln() as f32);
            let large = max_exact + (ratio * (half - max_exact) as f32) as usize;
            ret += large.min(half - 1);
        }
        ret
    }

    /// Bias of every head for every distance `-(len-1)..=len-1`:
    /// `out[head * (2 * len - 1) + (rel + len - 1)]`.
    fn by_distance(&self, heads: usize, len: usize) -> Vec<f32> {
        let w = (2 * len).saturating_sub(1);
        let mut out = vec![0f32; heads * w];
        for d in 0..w {
            let b = self.bucket(d as i64 - (len as i64 - 1));
            for h in 0..heads {
                out[h * w + d] = self.table[b * heads + h];
            }
        }
        out
    }
}

/// BERT encoder weights laid out for [`FastBert::forward`].
pub(crate) struct FastBert {
    isa: Isa,
    hidden: usize,
    heads: usize,
    inter: usize,
    vocab: usize,
    max_pos: usize,
    eps: f32,
    act: HiddenAct,
    word: WordTable,
    pos: Buf<f32>,
    /// Token-type 0 embedding: every input is a single segment.
    type0: Buf<f32>,
    emb_ln_w: Buf<f32>,
    emb_ln_b: Buf<f32>,
    layers: Vec<Layer>,
    rel: Option<RelBias>,
    /// The int8 kernel to use.
    kernel: Kernel,
}

struct Weights<'a> {
    tensors: &'a HashMap<String, Tensor>,
    prefix: String,
}

impl Weights<'_> {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let key = format!("{}{}", self.prefix, name);
        let t = self.tensors.get(&key).ok_or_else(|| {
            Error::Unsupported(format!("weight {key} is missing from model.safetensors"))
        })?;
        if t.dims() != shape {
            return Err(Error::Unsupported(format!(
                "weight {key} has shape {:?}, config.json implies {shape:?}",
                t.dims()
            )));
        }
        Ok(t.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?)
    }

    /// A PyTorch `Linear` weight `[out, in]`, returned transposed to `[in, out]`.
    fn linear_t(&self, name: &str, out: usize, inp: usize) -> Result<Vec<f32>> {
        let w = self.get(name, &[out, inp])?;
        let mut t = vec![0f32; w.len()];
        for o in 0..out {
            for i in 0..inp {
                t[i * out + o] = w[o * inp + i];
            }
        }
        Ok(t)
    }
}

impl FastBert {
    pub fn new(tensors: &HashMap<String, Tensor>, c: &BertConfig, arch: Arch) -> Result<Self> {
        let family = match arch {
            Arch::Bert => c.model_type.as_deref().unwrap_or("bert"),
            Arch::MpNet => "mpnet",
        };
        let prefix = ["", "bert.", &format!("{family}.")]
            .into_iter()
            .find(|p| tensors.contains_key(&format!("{p}embeddings.word_embeddings.weight")))
            .ok_or_else(|| {
                Error::Unsupported(
                    "model.safetensors has no embeddings.word_embeddings.weight: not a BERT or MPNet model"
                        .into(),
                )
            })?
            .to_string();
        let w = Weights { tensors, prefix };
        let h = c.hidden_size;
        let i = c.intermediate_size;
        // Names of the attention weights inside `encoder.layer.N.`.
        let (q_n, k_n, v_n, o_n, ln1_n) = match arch {
            Arch::Bert => (
                "attention.self.query",
                "attention.self.key",
                "attention.self.value",
                "attention.output.dense",
                "attention.output.LayerNorm",
            ),
            Arch::MpNet => (
                "attention.attn.q",
                "attention.attn.k",
                "attention.attn.v",
                "attention.attn.o",
                "attention.LayerNorm",
            ),
        };
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for l in 0..c.num_hidden_layers {
            let p = format!("encoder.layer.{l}.");
            let q = w.linear_t(&format!("{p}{q_n}.weight"), h, h)?;
            let k = w.linear_t(&format!("{p}{k_n}.weight"), h, h)?;
            let v = w.linear_t(&format!("{p}{v_n}.weight"), h, h)?;
            let mut qkv_w = vec![0f32; h * 3 * h];
            for r in 0..h {
                qkv_w[r * 3 * h..r * 3 * h + h].copy_from_slice(&q[r * h..(r + 1) * h]);
                qkv_w[r * 3 * h + h..r * 3 * h + 2 * h].copy_from_slice(&k[r * h..(r + 1) * h]);
                qkv_w[r * 3 * h + 2 * h..(r + 1) * 3 * h].copy_from_slice(&v[r * h..(r + 1) * h]);
            }
            let mut qkv_b = w.get(&format!("{p}{q_n}.bias"), &[h])?;
            qkv_b.extend(w.get(&format!("{p}{k_n}.bias"), &[h])?);
            qkv_b.extend(w.get(&format!("{p}{v_n}.bias"), &[h])?);
            layers.push(Layer {
                qkv_w: qkv_w.into(),
                qkv_b: qkv_b.into(),
                ao_w: w.linear_t(&format!("{p}{o_n}.weight"), h, h)?.into(),
                ao_b: w.get(&format!("{p}{o_n}.bias"), &[h])?.into(),
                ln1_w: w.get(&format!("{p}{ln1_n}.weight"), &[h])?.into(),
                ln1_b: w.get(&format!("{p}{ln1_n}.bias"), &[h])?.into(),
                up_w: w
                    .linear_t(&format!("{p}intermediate.dense.weight"), i, h)?
                    .into(),
                up_b: w.get(&format!("{p}intermediate.dense.bias"), &[i])?.into(),
                down_w: w.linear_t(&format!("{p}output.dense.weight"), h, i)?.into(),
                down_b: w.get(&format!("{p}output.dense.bias"), &[h])?.into(),
                ln2_w: w.get(&format!("{p}output.LayerNorm.weight"), &[h])?.into(),
                ln2_b: w.get(&format!("{p}output.LayerNorm.bias"), &[h])?.into(),
                q: None,
            });
        }
        let (type0, rel) = match arch {
            Arch::Bert => {
                let types = w.get(
                    "embeddings.token_type_embeddings.weight",
                    &[c.type_vocab_size, h],
                )?;
                if types.len() < h {
                    return Err(Error::Unsupported(
                        "the model has no token-type embedding (type_vocab_size = 0)".into(),
                    ));
                }
                (types[..h].to_vec(), None)
            }
            Arch::MpNet => {
                let key = "encoder.relative_attention_bias.weight";
                let buckets = w
                    .tensors
                    .get(&format!("{}{key}", w.prefix))
                    .map(|t| t.dims().first().copied().unwrap_or(0))
                    .unwrap_or(0);
                let rel = RelBias {
                    table: w.get(key, &[buckets, c.num_attention_heads])?,
                    buckets,
                    max_distance: 128,
                };
                if buckets < 4 {
                    return Err(Error::Unsupported(format!(
                        "{key} has {buckets} buckets; MPNet needs at least 4"
                    )));
                }
                (vec![0f32; h], Some(rel))
            }
        };
        let offset = position_offset(arch, c);
        let pos = w.get(
            "embeddings.position_embeddings.weight",
            &[c.max_position_embeddings, h],
        )?;
        if pos.len() <= offset * h {
            return Err(Error::Unsupported(
                "the position table has no rows past the padding id".into(),
            ));
        }
        Self::from_parts(BertParts {
            hidden: h,
            heads: c.num_attention_heads,
            inter: i,
            eps: c.layer_norm_eps as f32,
            act: c.hidden_act,
            word: WordTable::F32(w.get("embeddings.word_embeddings.weight", &[c.vocab_size, h])?),
            pos: pos[offset * h..].to_vec().into(),
            type0: type0.into(),
            emb_ln_w: w.get("embeddings.LayerNorm.weight", &[h])?.into(),
            emb_ln_b: w.get("embeddings.LayerNorm.bias", &[h])?.into(),
            layers,
            rel,
        })
    }

    /// Builds the encoder from weights already in its layout, checking every
    /// length so that `forward` cannot index out of bounds.
    pub(crate) fn from_parts(p: BertParts) -> Result<Self> {
        let (h, i) = (p.hidden, p.inter);
        if h == 0 || i == 0 || p.heads == 0 || !h.is_multiple_of(p.heads) {
            return Err(Error::Unsupported(format!(
                "hidden size {h} with {} heads and intermediate size {i}",
                p.heads
            )));
        }
        let bad = |what: &str, got: usize, want: usize| {
            Error::Unsupported(format!("{what} holds {got} values, the model needs {want}"))
        };
        for (what, v, want) in [
            ("the token-type embedding", &p.type0, h),
            ("the embedding layer norm weight", &p.emb_ln_w, h),
            ("the embedding layer norm bias", &p.emb_ln_b, h),
        ] {
            if v.len() != want {
                return Err(bad(what, v.len(), want));
            }
        }
        if let Some(r) = &p.rel {
            if r.buckets < 4 || r.table.len() != r.buckets * p.heads {
                return Err(bad(
                    "the relative-position bias",
                    r.table.len(),
                    r.buckets * p.heads,
                ));
            }
        }
        if p.pos.is_empty() || !p.pos.len().is_multiple_of(h) {
            return Err(bad("the position table", p.pos.len(), h));
        }
        if let WordTable::F32(w) = &p.word {
            if w.is_empty() || !w.len().is_multiple_of(h) {
                return Err(bad("the word table", w.len(), h));
            }
        }
        if let WordTable::Q4(q) = &p.word {
            if q.row_len() != h {
                return Err(bad("a word table row", q.row_len(), h));
            }
        }
        for (n, l) in p.layers.iter().enumerate() {
            // A layer restored in int8 has no f32 matrices; its int8 ones
            // must have the shapes those would have had.
            let f32_want = |len: usize| if l.q.is_some() { 0 } else { len };
            for (what, v, want) in [
                ("qkv weight", &l.qkv_w, f32_want(h * 3 * h)),
                ("qkv bias", &l.qkv_b, 3 * h),
                ("attention output weight", &l.ao_w, f32_want(h * h)),
                ("attention output bias", &l.ao_b, h),
                ("attention layer norm weight", &l.ln1_w, h),
                ("attention layer norm bias", &l.ln1_b, h),
                ("feed-forward up weight", &l.up_w, f32_want(h * i)),
                ("feed-forward up bias", &l.up_b, i),
                ("feed-forward down weight", &l.down_w, f32_want(i * h)),
                ("feed-forward down bias", &l.down_b, h),
                ("output layer norm weight", &l.ln2_w, h),
                ("output layer norm bias", &l.ln2_b, h),
            ] {
                if v.len() != want {
                    return Err(bad(&format!("layer {n}'s {what}"), v.len(), want));
                }
            }
            if let Some(q) = &l.q {
                for (what, m, want) in [
                    ("qkv", &q.qkv, (h, 3 * h)),
                    ("attention output", &q.ao, (h, h)),
                    ("feed-forward up", &q.up, (h, i)),
                    ("feed-forward down", &q.down, (i, h)),
                ] {
                    if m.dims() != want {
                        return Err(Error::Unsupported(format!(
                            "layer {n}'s int8 {what} matrix is {:?}, the model needs {want:?}",
                            m.dims()
                        )));
                    }
                }
            }
        }
        Ok(FastBert {
            isa: Isa::detect(),
            hidden: h,
            heads: p.heads,
            inter: i,
            vocab: p.word.rows(h),
            max_pos: p.pos.len() / h,
            eps: p.eps,
            act: p.act,
            word: p.word,
            pos: p.pos,
            type0: p.type0,
            emb_ln_w: p.emb_ln_w,
            emb_ln_b: p.emb_ln_b,
            layers: p.layers,
            rel: p.rel,
            kernel: kernel(),
        })
    }

    /// Quantises every layer's matrices to int8 (per output column) and
    /// drops their `f32` copies: the dense layers then run on int8 products
    /// (see [`crate::int8`]).
    pub fn quantize_int8(&mut self) {
        let (h, i) = (self.hidden, self.inter);
        // How large each channel of a layer norm's output gets: the
        // normalised values rarely pass 3, so 3|gamma| + |beta| bounds them.
        let range = |w: &[f32], b: &[f32]| -> Vec<f32> {
            w.iter()
                .zip(b)
                .map(|(g, b)| 3.0 * g.abs() + b.abs())
                .collect()
        };
        if self.is_int8() {
            return;
        }
        let mut input_range = range(&self.emb_ln_w, &self.emb_ln_b);
        for l in &mut self.layers {
            // The f32 copies go: the int8 ones replace them.
            let quant = |w: &mut Buf<f32>, k: usize, n: usize, act: Option<&[f32]>| {
                let q = QMatrix::smoothed(w, k, n, act);
                *w = Buf::default();
                q
            };
            let after_attention = range(&l.ln1_w, &l.ln1_b);
            l.q = Some(Box::new(QLayer {
                // Inputs that come out of a layer norm are smoothed.
                qkv: quant(&mut l.qkv_w, h, 3 * h, Some(&input_range)),
                ao: quant(&mut l.ao_w, h, h, None),
                up: quant(&mut l.up_w, h, i, Some(&after_attention)),
                down: quant(&mut l.down_w, i, h, None),
            }));
            input_range = range(&l.ln2_w, &l.ln2_b);
        }
    }

    /// Saves every array but the word table (see [`crate::prepared`]);
    /// `false` for a model this cannot store (MPNet's relative bias).
    pub(crate) fn store(&self, w: &mut Writer) -> bool {
        let act = match self.act {
            HiddenAct::Gelu => "gelu",
            HiddenAct::GeluApproximate => "gelu_approximate",
            HiddenAct::Relu => "relu",
        };
        if self.rel.is_some() {
            return false;
        }
        w.meta(
            "bert",
            serde_json::json!({
                "hidden": self.hidden, "heads": self.heads, "inter": self.inter,
                "eps": self.eps, "act": act, "layers": self.layers.len(),
                "int8": self.is_int8(),
            }),
        );
        w.put("pos", self.pos.as_bytes());
        w.put("type0", self.type0.as_bytes());
        w.put("emb_ln_w", self.emb_ln_w.as_bytes());
        w.put("emb_ln_b", self.emb_ln_b.as_bytes());
        for (n, l) in self.layers.iter().enumerate() {
            for (name, v) in [
                ("qkv_w", &l.qkv_w),
                ("qkv_b", &l.qkv_b),
                ("ao_w", &l.ao_w),
                ("ao_b", &l.ao_b),
                ("ln1_w", &l.ln1_w),
                ("ln1_b", &l.ln1_b),
                ("up_w", &l.up_w),
                ("up_b", &l.up_b),
                ("down_w", &l.down_w),
                ("down_b", &l.down_b),
                ("ln2_w", &l.ln2_w),
                ("ln2_b", &l.ln2_b),
            ] {
                w.put(&format!("l{n}.{name}"), v.as_bytes());
            }
            if let Some(q) = &l.q {
                for (name, m) in [
                    ("qkv", &q.qkv),
                    ("ao", &q.ao),
                    ("up", &q.up),
                    ("down", &q.down),
                ] {
                    let (dims, parts) = m.parts();
                    w.meta(&format!("l{n}.{name}"), serde_json::json!(dims));
                    for (part, bytes) in ["packed", "scales", "colsum", "smooth"].iter().zip(parts)
                    {
                        w.put(&format!("l{n}.{name}.{part}"), bytes);
                    }
                }
            }
        }
        true
    }

    /// The encoder [`FastBert::store`] saved, with `word` as its word
    /// table; every length is checked as [`FastBert::from_parts`] checks a
    /// model read from its files. `None` when something does not fit.
    pub(crate) fn restore(r: &Reader, word: WordTable) -> Option<Self> {
        let m = r.meta("bert")?;
        let num = |k: &str| m.get(k)?.as_u64().and_then(|v| usize::try_from(v).ok());
        let act = match m.get("act")?.as_str()? {
            "gelu" => HiddenAct::Gelu,
            "gelu_approximate" => HiddenAct::GeluApproximate,
            "relu" => HiddenAct::Relu,
            _ => return None,
        };
        let int8 = m.get("int8")?.as_bool()?;
        let mut layers = Vec::new();
        for n in 0..num("layers")? {
            let f = |name: &str| r.buf::<f32>(&format!("l{n}.{name}"));
            let q = if int8 {
                let mat = |name: &str| -> Option<QMatrix> {
                    let key = format!("l{n}.{name}");
                    let dims: [usize; 4] = serde_json::from_value(r.meta(&key)?.clone()).ok()?;
                    QMatrix::from_parts(QParts {
                        dims,
                        packed: r.buf(&format!("{key}.packed"))?,
                        scales: r.buf(&format!("{key}.scales"))?,
                        colsum: r.buf(&format!("{key}.colsum"))?,
                        smooth: r.buf(&format!("{key}.smooth"))?,
                    })
                };
                Some(Box::new(QLayer {
                    qkv: mat("qkv")?,
                    ao: mat("ao")?,
                    up: mat("up")?,
                    down: mat("down")?,
                }))
            } else {
                None
            };
            layers.push(Layer {
                qkv_w: f("qkv_w")?,
                qkv_b: f("qkv_b")?,
                ao_w: f("ao_w")?,
                ao_b: f("ao_b")?,
                ln1_w: f("ln1_w")?,
                ln1_b: f("ln1_b")?,
                up_w: f("up_w")?,
                up_b: f("up_b")?,
                down_w: f("down_w")?,
                down_b: f("down_b")?,
                ln2_w: f("ln2_w")?,
                ln2_b: f("ln2_b")?,
                q,
            });
        }
        Self::from_parts(BertParts {
            hidden: num("hidden")?,
            heads: num("heads")?,
            inter: num("inter")?,
            eps: m.get("eps")?.as_f64()? as f32,
            act,
            word,
            pos: r.buf("pos")?,
            type0: r.buf("type0")?,
            emb_ln_w: r.buf("emb_ln_w")?,
            emb_ln_b: r.buf("emb_ln_b")?,
            layers,
            rel: None,
        })
        .ok()
    }

    /// True once [`quantize_int8`](Self::quantize_int8) ran.
    pub fn is_int8(&self) -> bool {
        self.layers.iter().all(|l| l.q.is_some())
    }

    /// Width of the vectors.
    pub fn hidden(&self) -> usize {
        self.hidden
    }

    /// Pooled, not yet normalised, vectors of `seqs`, in order, using up to
    /// `threads` threads.
    pub fn forward(
        &self,
        seqs: &[&[u32]],
        pooling: Pooling,
        threads: usize,
    ) -> Result<Vec<Vec<f32>>> {
        for s in seqs {
            if s.len() > self.max_pos {
                return Err(Error::Invalid(format!(
                    "{} tokens exceed the model's {} positions",
                    s.len(),
                    self.max_pos
                )));
            }
            if let Some(&bad) = s.iter().find(|&&id| id as usize >= self.vocab) {
                return Err(Error::Invalid(format!(
                    "token id {bad} is outside the vocabulary"
                )));
            }
        }
        let threads = threads.max(1);
        if threads == 1 || seqs.len() < 2 {
            // One sequence (typically a query): let gemm split each product.
            let par = if threads > 1 {
                Parallelism::Rayon(threads)
            } else {
                Parallelism::None
            };
            return Ok(self.forward_group(seqs, pooling, par));
        }
        // Greedy balance by cost (tokens plus an attention term), longest first.
        let mut order: Vec<usize> = (0..seqs.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(seqs[i].len()));
        let groups_n = threads.min(seqs.len());
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); groups_n];
        let mut load = vec![0usize; groups_n];
        for i in order {
            let g = (0..groups_n).min_by_key(|&g| load[g]).unwrap_or(0);
            let l = seqs[i].len();
            load[g] += l * (64 + l / 8);
            groups[g].push(i);
        }
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); seqs.len()];
        std::thread::scope(|scope| {
            let handles: Vec<_> = groups[1..]
                .iter()
                .map(|g| {
                    let part: Vec<&[u32]> = g.iter().map(|&i| seqs[i]).collect();
                    scope.spawn(move || self.forward_group(&part, pooling, Parallelism::None))
                })
                .collect();
            let part: Vec<&[u32]> = groups[0].iter().map(|&i| seqs[i]).collect();
            let first = self.forward_group(&part, pooling, Parallelism::None);
            let mut results = vec![Some(first)];
            for h in handles {
                results.push(h.join().ok());
            }
            for (g, r) in groups.iter().zip(results) {
                if let Some(vecs) = r {
                    for (&i, v) in g.iter().zip(vecs) {
                        out[i] = v;
                    }
                }
            }
        });
        if out.iter().any(Vec::is_empty) {
            return Err(Error::Inference(
                "a worker thread of the fast BERT path failed".into(),
            ));
        }
        Ok(out)
    }

    /// Runs the encoder over `seqs` packed end to end, with the element-wise
    /// loops compiled for the widest vector unit the CPU has (`gemm` picks
    /// its own kernel at run time). Token ids and lengths were checked by
    /// the caller.
    fn forward_group(&self, seqs: &[&[u32]], pooling: Pooling, par: Parallelism) -> Vec<Vec<f32>> {
        #[cfg(target_arch = "x86_64")]
        match self.isa {
            // SAFETY: `isa` was set from run-time CPU feature detection.
            Isa::Avx512 => return unsafe { self.forward_group_avx512(seqs, pooling, par) },
            // SAFETY: as above.
            Isa::Avx2 => return unsafe { self.forward_group_avx2(seqs, pooling, par) },
            Isa::Base => {}
        }
        self.forward_group_body(seqs, pooling, par)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
    unsafe fn forward_group_avx512(
        &self,
        seqs: &[&[u32]],
        pooling: Pooling,
        par: Parallelism,
    ) -> Vec<Vec<f32>> {
        self.forward_group_body(seqs, pooling, par)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn forward_group_avx2(
        &self,
        seqs: &[&[u32]],
        pooling: Pooling,
        par: Parallelism,
    ) -> Vec<Vec<f32>> {
        self.forward_group_body(seqs, pooling, par)
    }

    #[inline(always)]
    fn forward_group_body(
        &self,
        seqs: &[&[u32]],
        pooling: Pooling,
        par: Parallelism,
    ) -> Vec<Vec<f32>> {
        let h = self.hidden;
        let t: usize = seqs.iter().map(|s| s.len()).sum();
        if t == 0 {
            return seqs.iter().map(|_| vec![0f32; h]).collect();
        }
        let mut x = vec![0f32; t * h];
        let mut row = 0;
        for s in seqs {
            for (p, &id) in s.iter().enumerate() {
                let id = id as usize;
                let dst = &mut x[row * h..(row + 1) * h];
                self.word.row_into(id, dst);
                let pe = &self.pos[p * h..(p + 1) * h];
                for j in 0..h {
                    // Same order of additions as word + pos + type.
                    dst[j] = dst[j] + pe[j] + self.type0[j];
                }
                layer_norm(dst, &self.emb_ln_w, &self.emb_ln_b, self.eps);
                row += 1;
            }
        }
        let max_len = seqs.iter().map(|s| s.len()).max().unwrap_or(0);
        let mut qkv = vec![0f32; t * 3 * h];
        let mut ctx = vec![0f32; t * h];
        let mut tmp = vec![0f32; t * h];
        let mut mid = vec![0f32; t * self.inter];
        let padded = max_len.div_ceil(JB) * JB;
        let mut scores = vec![0f32; padded];
        let mut kt = vec![0f32; padded * (h / self.heads)];
        let lens: Vec<usize> = seqs.iter().map(|s| s.len()).collect();
        let rel = self
            .rel
            .as_ref()
            .map(|r| r.by_distance(self.heads, max_len));
        let bias = rel.as_deref().map(|table| Bias { table, max_len });
        let mut acts = QActs::default();
        for l in &self.layers {
            let q = l.q.as_deref();
            let mut dense =
                |x: &[f32], w: &[f32], qm: Option<&QMatrix>, b: &[f32], out: &mut [f32], k, n| {
                    match qm {
                        Some(m) => linear_i8(x, m, b, out, t, &mut acts, self.kernel),
                        None => linear(x, w, b, out, t, k, n, par),
                    }
                };
            dense(
                &x,
                &l.qkv_w,
                q.map(|q| &q.qkv),
                &l.qkv_b,
                &mut qkv,
                h,
                3 * h,
            );
            self.attention(&qkv, &mut ctx, &lens, &mut scores, &mut kt, bias);
            dense(&ctx, &l.ao_w, q.map(|q| &q.ao), &l.ao_b, &mut tmp, h, h);
            add_layer_norm(&mut x, &tmp, h, &l.ln1_w, &l.ln1_b, self.eps);
            dense(
                &x,
                &l.up_w,
                q.map(|q| &q.up),
                &l.up_b,
                &mut mid,
                h,
                self.inter,
            );
            activate(&mut mid, self.act);
            dense(
                &mid,
                &l.down_w,
                q.map(|q| &q.down),
                &l.down_b,
                &mut tmp,
                self.inter,
                h,
            );
            add_layer_norm(&mut x, &tmp, h, &l.ln2_w, &l.ln2_b, self.eps);
        }
        let mut out = Vec::with_capacity(seqs.len());
        let mut start = 0;
        for &len in &lens {
            let mut v = vec![0f32; h];
            match pooling {
                Pooling::Cls if len > 0 => v.copy_from_slice(&x[start * h..(start + 1) * h]),
                Pooling::Cls => {}
                Pooling::Mean => {
                    for r in start..start + len {
                        for (a, b) in v.iter_mut().zip(&x[r * h..(r + 1) * h]) {
                            *a += b;
                        }
                    }
                    let inv = 1.0 / len.max(1) as f32;
                    v.iter_mut().for_each(|a| *a *= inv);
                }
            }
            out.push(v);
            start += len;
        }
        out
    }

    /// Scaled dot-product attention of each sequence with itself, head by
    /// head; `qkv` rows hold Q, K and V side by side.
    #[inline(always)]
    fn attention(
        &self,
        qkv: &[f32],
        ctx: &mut [f32],
        lens: &[usize],
        scores: &mut [f32],
        kt: &mut [f32],
        bias: Option<Bias<'_>>,
    ) {
        let h = self.hidden;
        match h / self.heads {
            32 => attention_heads::<32>(qkv, ctx, lens, scores, kt, h, self.heads, bias),
            64 => attention_heads::<64>(qkv, ctx, lens, scores, kt, h, self.heads, bias),
            hd => attention_heads_dyn(qkv, ctx, lens, scores, h, self.heads, hd, bias),
        }
    }
}

/// A relative-position bias laid out by [`RelBias::by_distance`] for
/// sequences of up to `max_len` tokens.
#[derive(Clone, Copy)]
struct Bias<'a> {
    table: &'a [f32],
    max_len: usize,
}

impl Bias<'_> {
    /// Adds head `head`'s bias for query `i` to the scores of keys `0..len`.
    #[inline(always)]
    fn add(self, scores: &mut [f32], head: usize, i: usize) {
        let w = 2 * self.max_len - 1;
        // Key j sits at distance j - i: index j + (max_len - 1 - i).
        let start = head * w + self.max_len - 1 - i;
        for (s, b) in scores.iter_mut().zip(&self.table[start..]) {
            *s += b;
        }
    }
}

/// Score columns computed together: one 512-bit register of partial sums.
const JB: usize = 16;

/// Attention for head size `HD`. One head's K is stored transposed in `kt`
/// (`HD` rows of the sequence length rounded up to [`JB`], zero-padded), so a
/// block of [`JB`] scores accumulates in registers over `d`; the context row
/// (`HD` values) likewise accumulates in registers over the keys.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn attention_heads<const HD: usize>(
    qkv: &[f32],
    ctx: &mut [f32],
    lens: &[usize],
    scores: &mut [f32],
    kt: &mut [f32],
    h: usize,
    heads: usize,
    bias: Option<Bias<'_>>,
) {
    let scale = 1.0 / (HD as f32).sqrt();
    let stride = 3 * h;
    let mut start = 0;
    for &len in lens {
        let lp = len.div_ceil(JB) * JB;
        let rows = &qkv[start * stride..(start + len) * stride];
        let kt = &mut kt[..HD * lp];
        kt.fill(0.0);
        for head in 0..heads {
            let off = head * HD;
            for (j, row) in rows.chunks_exact(stride).enumerate() {
                for (d, &k) in row[h + off..h + off + HD].iter().enumerate() {
                    kt[d * lp + j] = k;
                }
            }
            for (i, row) in rows.chunks_exact(stride).enumerate() {
                let mut q = [0f32; HD];
                for (a, &b) in q.iter_mut().zip(&row[off..off + HD]) {
                    *a = b * scale;
                }
                let sc = &mut scores[..lp];
                for (jb, out) in sc.chunks_exact_mut(JB).enumerate() {
                    let mut acc = [0f32; JB];
                    for (d, &qd) in q.iter().enumerate() {
                        let k: &[f32; JB] =
                            match kt[d * lp + jb * JB..d * lp + jb * JB + JB].try_into() {
                                Ok(k) => k,
                                Err(_) => continue,
                            };
                        for l in 0..JB {
                            acc[l] += qd * k[l];
                        }
                    }
                    out.copy_from_slice(&acc);
                }
                let sc = &mut scores[..len];
                if let Some(b) = bias {
                    b.add(sc, head, i);
                }
                let max = max_of(sc);
                for s in sc.iter_mut() {
                    *s = fast_exp(*s - max);
                }
                let inv = 1.0 / sum8(sc);
                let mut acc = [0f32; HD];
                for (&p, vrow) in sc.iter().zip(rows.chunks_exact(stride)) {
                    let v: &[f32; HD] = match vrow[2 * h + off..2 * h + off + HD].try_into() {
                        Ok(v) => v,
                        Err(_) => continue,
                    };
                    for l in 0..HD {
                        acc[l] += p * v[l];
                    }
                }
                let ci = (start + i) * h + off;
                for (c, a) in ctx[ci..ci + HD].iter_mut().zip(&acc) {
                    *c = a * inv;
                }
            }
        }
        start += len;
    }
}

/// Attention for any head size (models whose heads are not 32 or 64 wide).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn attention_heads_dyn(
    qkv: &[f32],
    ctx: &mut [f32],
    lens: &[usize],
    scores: &mut [f32],
    h: usize,
    heads: usize,
    hd: usize,
    bias: Option<Bias<'_>>,
) {
    let scale = 1.0 / (hd as f32).sqrt();
    let stride = 3 * h;
    let mut start = 0;
    for &len in lens {
        let rows = &qkv[start * stride..(start + len) * stride];
        for head in 0..heads {
            let off = head * hd;
            for (i, row) in rows.chunks_exact(stride).enumerate() {
                let q = &row[off..off + hd];
                let sc = &mut scores[..len];
                for (s, krow) in sc.iter_mut().zip(rows.chunks_exact(stride)) {
                    let k = &krow[h + off..h + off + hd];
                    *s = q.iter().zip(k).map(|(a, b)| a * b).sum::<f32>() * scale;
                }
                if let Some(b) = bias {
                    b.add(sc, head, i);
                }
                let max = max_of(sc);
                for s in sc.iter_mut() {
                    *s = fast_exp(*s - max);
                }
                let inv = 1.0 / sum8(sc);
                let ci = (start + i) * h + off;
                let c = &mut ctx[ci..ci + hd];
                c.fill(0.0);
                for (&p, vrow) in sc.iter().zip(rows.chunks_exact(stride)) {
                    for (a, &v) in c.iter_mut().zip(&vrow[2 * h + off..2 * h + off + hd]) {
                        *a += p * inv * v;
                    }
                }
            }
        }
        start += len;
    }
}

/// Largest value, in lanes so the loop vectorises.
#[inline(always)]
fn max_of(v: &[f32]) -> f32 {
    let mut m = [f32::NEG_INFINITY; 8];
    let chunks = v.chunks_exact(8);
    let mut best = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |a, &b| if b > a { b } else { a });
    for c in chunks {
        for (a, &x) in m.iter_mut().zip(c) {
            *a = if x > *a { x } else { *a };
        }
    }
    for x in m {
        best = if x > best { x } else { best };
    }
    best
}

/// `out[t, n] = x[t, k] · w[k, n] + b[n]`, all row-major.
#[allow(clippy::too_many_arguments)]
fn linear(
    x: &[f32],
    w: &[f32],
    b: &[f32],
    out: &mut [f32],
    t: usize,
    k: usize,
    n: usize,
    par: Parallelism,
) {
    if x.len() < t * k || w.len() < k * n || out.len() < t * n || b.len() < n {
        // Unreachable by construction; refuse rather than read out of bounds.
        out.fill(f32::NAN);
        return;
    }
    for row in out[..t * n].chunks_exact_mut(n) {
        row.copy_from_slice(&b[..n]);
    }
    // SAFETY: the bounds were checked above: `x` holds t×k, `w` k×n and `out`
    // t×n row-major values, which is what these strides describe, and `out`
    // does not alias the inputs (it is a distinct `&mut`).
    unsafe {
        gemm::gemm(
            t,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            true,
            x.as_ptr(),
            1,
            k as isize,
            w.as_ptr(),
            1,
            n as isize,
            1.0f32,
            1.0f32,
            false,
            false,
            false,
            par,
        );
    }
}

/// Sum with eight partial sums, so the loop vectorises without
/// reassociation flags.
#[inline(always)]
fn sum8(v: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = v.chunks_exact(8);
    let rest: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    acc.iter().sum::<f32>() + rest
}

#[inline(always)]
fn layer_norm(v: &mut [f32], w: &[f32], b: &[f32], eps: f32) {
    let n = v.len() as f32;
    let mean = sum8(v) / n;
    let mut sq = [0f32; 8];
    let chunks = v.chunks_exact(8);
    let rest: f32 = chunks
        .remainder()
        .iter()
        .map(|x| (x - mean) * (x - mean))
        .sum();
    for c in chunks {
        for (a, x) in sq.iter_mut().zip(c) {
            *a += (x - mean) * (x - mean);
        }
    }
    let var = (sq.iter().sum::<f32>() + rest) / n;
    let r = 1.0 / (var + eps).sqrt();
    for ((x, w), b) in v.iter_mut().zip(w).zip(b) {
        *x = (*x - mean) * r * w + b;
    }
}

/// `x = layer_norm(x + delta)` row by row.
#[inline(always)]
fn add_layer_norm(x: &mut [f32], delta: &[f32], h: usize, w: &[f32], b: &[f32], eps: f32) {
    for (row, d) in x.chunks_exact_mut(h).zip(delta.chunks_exact(h)) {
        for (a, b) in row.iter_mut().zip(d) {
            *a += b;
        }
        layer_norm(row, w, b, eps);
    }
}

#[inline(always)]
fn activate(v: &mut [f32], act: HiddenAct) {
    match act {
        HiddenAct::Gelu => {
            for x in v.iter_mut() {
                *x = gelu_erf(*x);
            }
        }
        HiddenAct::GeluApproximate => {
            for x in v.iter_mut() {
                *x = gelu_tanh(*x);
            }
        }
        HiddenAct::Relu => {
            for x in v.iter_mut() {
                *x = x.max(0.0);
            }
        }
    }
}

/// `e^x` for `x <= 0`-ish inputs, to about 2 ulp, written without branches
/// or calls so loops over it vectorise (Cephes `expf` polynomial).
#[inline(always)]
pub(crate) fn fast_exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    // Round to nearest through the float adder: no call, vectorises on SSE2.
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
    let t = x * std::f32::consts::LOG2_E + MAGIC;
    let n = t - MAGIC;
    // The integer n sits in t's low mantissa bits: no float-to-int
    // conversion, whose saturating semantics would block vectorisation.
    let ni = t.to_bits().wrapping_sub(MAGIC.to_bits()) as i32;
    let r = x - n * 0.693_359_4 + n * 2.121_944_4e-4;
    let p = 1.987_569_1e-4;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 5e-1;
    let y = p * r * r + r + 1.0;
    y * f32::from_bits((ni.wrapping_add(127) as u32) << 23)
}

/// `0.5 x (1 + erf(x / √2))`, with erf from Abramowitz & Stegun 7.1.26
/// (absolute error below 1.5e-7).
#[inline(always)]
fn gelu_erf(x: f32) -> f32 {
    let z = x * std::f32::consts::FRAC_1_SQRT_2;
    let a = z.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let erf_abs = 1.0 - poly * fast_exp(-a * a);
    let erf = erf_abs.copysign(z);
    0.5 * x * (1.0 + erf)
}

#[inline(always)]
fn gelu_tanh(x: f32) -> f32 {
    let u = 0.797_884_6 * (x + 0.044_715 * x * x * x);
    // tanh(u) = 1 - 2 / (e^{2u} + 1)
    let th = 1.0 - 2.0 / (fast_exp(2.0 * u) + 1.0);
    0.5 * x * (1.0 + th)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_buckets_follow_mpnet() {
        let r = RelBias {
            table: Vec::new(),
            buckets: 32,
            max_distance: 128,
        };
        // Keys before the query (rel < 0) use buckets 0..16, keys after it
        // 16..32; exact below 8, logarithmic up to 128, capped beyond.
        let cases = [
            (0, 0),
            (-1, 1),
            (-7, 7),
            (-8, 8),
            (-15, 9),
            (-16, 10),
            (-31, 11),
            (-32, 12),
            (-64, 14),
            (-127, 15),
            (-128, 15),
            (-1000, 15),
            (1, 17),
            (7, 23),
            (16, 26),
            (500, 31),
        ];
        for (rel, want) in cases {
            assert_eq!(r.bucket(rel), want, "distance {rel}");
        }
    }

    #[test]
    fn distance_table_puts_each_head_bias_at_its_offset() {
        // Two heads, 4 buckets: buckets 0/1 before-or-at and 2/3 after.
        let r = RelBias {
            table: vec![10.0, 20.0, 11.0, 21.0, 12.0, 22.0, 13.0, 23.0],
            buckets: 4,
            max_distance: 8,
        };
        let t = r.by_distance(2, 3);
        let w = 5;
        for d in -2i64..=2 {
            let b = r.bucket(d);
            let at = (d + 2) as usize;
            assert_eq!(t[at], r.table[b * 2], "head 0, distance {d}");
            assert_eq!(t[w + at], r.table[b * 2 + 1], "head 1, distance {d}");
        }
        let mut scores = [0f32; 3];
        Bias {
            table: &t,
            max_len: 3,
        }
        .add(&mut scores, 1, 2);
        // Query 2, keys 0..3 sit at distances -2, -1, 0.
        let want: Vec<f32> = [-2i64, -1, 0]
            .iter()
            .map(|&d| r.table[r.bucket(d) * 2 + 1])
            .collect();
        assert_eq!(scores.to_vec(), want);
    }

    #[test]
    fn exp_matches_std() {
        for i in -800..=200 {
            let x = i as f32 / 10.0;
            let want = x.exp();
            let got = fast_exp(x);
            assert!(
                ((got - want) / want).abs() < 1e-6,
                "x={x} got={got} want={want}"
            );
        }
    }

    #[test]
    fn gelu_matches_reference_values() {
        // 0.5 x (1 + erf(x/√2)) computed in f64.
        for (x, want) in [
            (-3.0f32, -0.004_049_694),
            (-1.0, -0.158_655_25),
            (0.0, 0.0),
            (0.5, 0.345_731_23),
            (2.0, 1.954_499_7),
        ] {
            assert!(
                (gelu_erf(x) - want).abs() < 1e-6,
                "x={x} got={}",
                gelu_erf(x)
            );
        }
    }

    #[test]
    fn linear_matches_naive() {
        let (t, k, n) = (5, 7, 3);
        let x: Vec<f32> = (0..t * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let w: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.11).cos()).collect();
        let b = vec![0.5, -1.0, 2.0];
        let mut out = vec![0f32; t * n];
        linear(&x, &w, &b, &mut out, t, k, n, Parallelism::None);
        for r in 0..t {
            for c in 0..n {
                let want: f32 = b[c] + (0..k).map(|i| x[r * k + i] * w[i * n + c]).sum::<f32>();
                assert!((out[r * n + c] - want).abs() < 1e-5);
            }
        }
    }
}

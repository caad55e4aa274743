//! The reference forward pass: candle's BERT model, run on padded
//! sub-batches. It is the exactness reference for the fast path.

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};

use crate::error::Result;
use crate::model_files::Pooling;

/// candle's BERT with the pooling the model folder asks for.
pub(crate) struct CandleBert {
    model: BertModel,
    device: Device,
    pad_id: u32,
}

impl CandleBert {
    pub fn new(tensors: HashMap<String, Tensor>, config: &BertConfig) -> Result<Self> {
        let device = Device::Cpu;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let model = BertModel::load(vb, config)?;
        Ok(CandleBert {
            model,
            device,
            pad_id: config.pad_token_id as u32,
        })
    }

    /// Pooled, not yet normalised, vectors of `batch` (one padded forward).
    pub fn forward(&self, batch: &[&[u32]], pooling: Pooling) -> Result<Vec<Vec<f32>>> {
        let n = batch.len();
        let len = batch.iter().map(|s| s.len()).max().unwrap_or(0);
        if n == 0 || len == 0 {
            return Ok(Vec::new());
        }
        let mut ids = vec![self.pad_id; n * len];
        let mut mask = vec![0u32; n * len];
        for (i, seq) in batch.iter().enumerate() {
            ids[i * len..i * len + seq.len()].copy_from_slice(seq);
            mask[i * len..i * len + seq.len()].fill(1);
        }
        let ids = Tensor::from_vec(ids, (n, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
        let types = ids.zeros_like()?;
        let out = self.model.forward(&ids, &types, Some(&mask))?; // (n, len, hidden)
        let pooled = match pooling {
            Pooling::Cls => out.narrow(1, 0, 1)?.squeeze(1)?,
            Pooling::Mean => {
                let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (n, len, 1)
                let summed = out.broadcast_mul(&m)?.sum(1)?; // (n, hidden)
                let counts = m.sum(1)?; // (n, 1)
                summed.broadcast_div(&counts)?
            }
        };
        Ok(pooled.to_vec2::<f32>()?)
    }
}

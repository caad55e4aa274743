//! The embedding seam: anything that turns text into vectors.

/// Whether a text is a search query or a stored document. Some models
/// (e5, bge) prefix the two differently; others ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedKind {
    /// A search query.
    Query,
    /// A stored passage.
    Document,
}

/// Identity of an embedder, used to key the embedding cache and to detect
/// that an index was built with another model.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EmbedderId {
    /// `local`, `openai`, …
    pub provider: String,
    /// Model name.
    pub model: String,
    /// Hash of whatever else changes the vectors (endpoint, headers minus auth).
    pub provider_key: String,
}

/// Errors from an embedder.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model files could not be found or loaded; not retried.
    #[error("embedding model unavailable: {0}")]
    Unavailable(String),
    /// The provider answered with an error; retried with backoff when transient.
    #[error("embedding provider error{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Provider {
        /// HTTP status when there was one.
        status: Option<u16>,
        /// What the provider said.
        message: String,
    },
    /// The request timed out after its retries.
    #[error("embedding request timed out: {0}")]
    Timeout(String),
    /// The input was unusable (for instance, a blank text, see
    /// [`Embedder::embed`], or a dimension mismatch). Not retried: the
    /// same input fails the same way.
    #[error("invalid embedding input: {0}")]
    Invalid(String),
    /// Inference failed inside a local model.
    #[error("embedding inference failed: {0}")]
    Inference(String),
}

/// Turns texts into unit-length vectors of a fixed dimension.
///
/// Implementations are synchronous: callers in async code run them on a
/// blocking thread.
pub trait Embedder: Send + Sync {
    /// Provider, model and key, for caching and index metadata.
    fn id(&self) -> EmbedderId;

    /// Dimension of the vectors.
    fn dims(&self) -> usize;

    /// The batch size the implementation works in: callers that report
    /// progress batch by it. [`embed`](Self::embed) takes larger batches
    /// too and splits them itself.
    fn max_batch(&self) -> usize {
        32
    }

    /// The model's input limit in its own tokens (word pieces), if known.
    /// Chunkers keep chunks under it so nothing is cut silently.
    fn max_input_tokens(&self) -> Option<usize> {
        None
    }

    /// Number of model tokens in `text`, if the embedder can tell.
    fn count_tokens(&self, _text: &str) -> Option<usize> {
        None
    }

    /// Whether the model was trained on many languages (`Some(true)`), on
    /// English only (`Some(false)`), or is not known (`None`). Search keeps
    /// an English-only model away from queries written in CJK scripts,
    /// where its vectors are noise.
    fn multilingual(&self) -> Option<bool> {
        None
    }

    /// Embeds `texts`, returning one L2-normalised vector of
    /// [`dims`](Self::dims) finite numbers per text, in order.
    ///
    /// - **Blank texts are refused.** When any text is empty or white space
    ///   only, the whole call fails with [`EmbedError::Invalid`] (its
    ///   message says "input N is blank") before any work or request. A
    ///   blank text has no meaning to embed: a model would answer with the
    ///   vector of its special tokens alone, which sits near unrelated
    ///   texts, and hosted providers refuse it. Callers leave blank texts
    ///   out (the index stores a blank chunk without a vector).
    /// - **An empty batch** gives an empty answer, not an error.
    /// - **Batches of any length** are taken: an implementation splits a
    ///   batch larger than [`max_batch`](Self::max_batch) itself, and a
    ///   text's vector does not depend on the batch it came in.
    /// - **Texts over the input limit** are embedded cut to it, never
    ///   refused ([`max_input_tokens`](Self::max_input_tokens)).
    /// - **`kind`** selects the query or document prefix of models that
    ///   have them; others ignore it.
    ///
    /// `mnemo-test-support`'s `embedder_suite!` checks all of this on every
    /// implementation.
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError>;
}

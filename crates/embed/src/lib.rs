//! mnemo-embed (placeholder).

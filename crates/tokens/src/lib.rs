//! mnemo-tokens (placeholder).

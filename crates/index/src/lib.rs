//! mnemo-index (placeholder).

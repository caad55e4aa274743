//! mnemo-engine (placeholder).

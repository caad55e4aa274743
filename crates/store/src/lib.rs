//! mnemo-store (placeholder).

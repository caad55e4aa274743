//! mnemo-http (placeholder).

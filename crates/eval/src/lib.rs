//! mnemo-eval (placeholder).

//! mnemo-test-support (placeholder).

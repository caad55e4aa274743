//! mnemo-llm (placeholder).

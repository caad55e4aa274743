//! mnemo-mcp (placeholder).

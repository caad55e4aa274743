//! mnemo-import (placeholder).

//! Shared helpers of the integration tests: the real local model, fixture
//! workspaces written into temporary folders.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, OnceLock};

use mnemo_core::{Embedder, Workspace};
use mnemo_embed::{E5Q4Embedder, LocalEmbedder};
use mnemo_test_support::e5_model_file;

pub use mnemo_test_support::model_dir;

/// The real local embedding model, loaded once per test binary.
pub fn model() -> Arc<dyn Embedder> {
    static MODEL: OnceLock<Arc<LocalEmbedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let dir = model_dir();
            assert!(
                dir.join("model.safetensors").exists(),
                "the embedding model is missing at {}: run scripts/fetch-models.sh",
                dir.display()
            );
            Arc::new(LocalEmbedder::load(&dir).expect("load all-MiniLM-L6-v2"))
        })
        .clone()
}

/// The default model (multilingual-e5-small, 4-bit), loaded once per test
/// binary: its cosines crowd near 0.8, unlike MiniLM's.
pub fn e5_model() -> Arc<dyn Embedder> {
    static MODEL: OnceLock<Arc<E5Q4Embedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| Arc::new(E5Q4Embedder::load(&e5_model_file()).expect("load e5")))
        .clone()
}

/// A temporary workspace.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub ws: Workspace,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path());
        Fixture { dir, ws }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, text: impl AsRef<[u8]>) {
        let p = self.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn remove(&self, rel: &str) {
        std::fs::remove_file(self.root().join(rel)).unwrap();
    }

    pub fn rename(&self, from: &str, to: &str) {
        std::fs::create_dir_all(self.root().join(to).parent().unwrap()).unwrap();
        std::fs::rename(self.root().join(from), self.root().join(to)).unwrap();
    }
}

/// Topics for filler daily logs.
pub const TOPICS: &[&str] = &[
    "Reviewed the quarterly budget with Alice and moved the marketing spend to April.",
    "Went for a long run along the river; knee felt fine after the physio exercises.",
    "Refactored the search module and wrote tests for the tokenizer edge cases.",
    "Dinner with Sam at the Thai place; he recommended a book about sailing.",
    "Planned the trip to Lisbon: flights booked, still need a hotel near Alfama.",
    "Fixed the flaky integration test by waiting for the server to be ready.",
    "Read two chapters of the history of the Roman empire before bed.",
    "Team meeting about the new onboarding flow; Priya owns the design review.",
    "Bought groceries and tried a new lentil soup recipe with smoked paprika.",
    "Spent the afternoon debugging a memory leak in the image cache.",
];

/// A filler daily log for day `i`.
pub fn daily_log(i: usize) -> String {
    format!(
        "# Daily log\n\n- {}\n- {}\n- Note {i}: nothing else worth remembering today.\n",
        TOPICS[i % TOPICS.len()],
        TOPICS[(i * 7 + 3) % TOPICS.len()]
    )
}

//! The [`Embedder`] conformance suite: what every embedder must do with
//! blank texts, empty batches, order, dimensions, norms, query and
//! document kinds, and batches larger than its `max_batch`.
//!
//! Only scenario functions are `pub fn` at the top of this file: the
//! completeness test of test-support reads them from the source.

use std::any::Any;

use mnemo_core::{EmbedError, EmbedKind, Embedder};

/// Every scenario of the suite, in the order of this file.
pub const SCENARIOS: &[&str] = &[
    "blank_text_is_refused",
    "empty_batch_is_empty",
    "order_is_preserved",
    "dimensions_match",
    "vectors_are_unit_length",
    "query_and_document_kinds",
    "batches_over_the_limit",
];

/// How an embedder treats [`EmbedKind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kinds {
    /// Queries and documents are embedded alike (MiniLM, MPNet, hashing,
    /// OpenAI-compatible endpoints).
    Same,
    /// Queries and documents get different prefixes (e5: `query: `,
    /// `passage: `), so their vectors differ.
    Prefixed,
}

/// One embedder under test, with what the suite needs to know about it.
pub struct EmbedderCase {
    /// The implementation.
    pub embedder: Box<dyn Embedder>,
    /// Whether it prefixes queries and documents differently.
    pub kinds: Kinds,
    /// What must outlive the embedder (a loopback server).
    keep: Vec<Box<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for EmbedderCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbedderCase")
            .field("embedder", &self.embedder.id())
            .field("kinds", &self.kinds)
            .finish_non_exhaustive()
    }
}

impl EmbedderCase {
    /// A case for `embedder`.
    pub fn new(embedder: impl Embedder + 'static, kinds: Kinds) -> Self {
        EmbedderCase {
            embedder: Box::new(embedder),
            kinds,
            keep: Vec::new(),
        }
    }

    /// Keeps `thing` (for instance the server the embedder talks to) alive
    /// as long as the case.
    pub fn keeping(mut self, thing: impl Any + Send + Sync) -> Self {
        self.keep.push(Box::new(thing));
        self
    }
}

/// Generates one `#[test]` per scenario of the [`Embedder`] suite, in a
/// module named `$name`, for the case `$make` builds (a `fn() ->
/// EmbedderCase` or a closure without captures). The case is built once
/// and shared by the module's tests; `suite_is_complete` fails when the
/// macro misses a scenario.
///
/// ```text
/// mnemo_test_support::embedder_suite!(hash, || EmbedderCase::new(HashEmbedder::default(), Kinds::Same));
/// ```
#[macro_export]
macro_rules! embedder_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::conformance::embedder as suite;

            fn case() -> &'static suite::EmbedderCase {
                static CASE: ::std::sync::OnceLock<suite::EmbedderCase> =
                    ::std::sync::OnceLock::new();
                CASE.get_or_init(|| {
                    let make: fn() -> suite::EmbedderCase = $make;
                    make()
                })
            }

            #[test]
            fn blank_text_is_refused() {
                suite::blank_text_is_refused(case());
            }
            #[test]
            fn empty_batch_is_empty() {
                suite::empty_batch_is_empty(case());
            }
            #[test]
            fn order_is_preserved() {
                suite::order_is_preserved(case());
            }
            #[test]
            fn dimensions_match() {
                suite::dimensions_match(case());
            }
            #[test]
            fn vectors_are_unit_length() {
                suite::vectors_are_unit_length(case());
            }
            #[test]
            fn query_and_document_kinds() {
                suite::query_and_document_kinds(case());
            }
            #[test]
            fn batches_over_the_limit() {
                suite::batches_over_the_limit(case());
            }
            #[test]
            fn suite_is_complete() {
                $crate::conformance::assert_covers(
                    "embedder",
                    suite::SCENARIOS,
                    &[
                        "blank_text_is_refused",
                        "empty_batch_is_empty",
                        "order_is_preserved",
                        "dimensions_match",
                        "vectors_are_unit_length",
                        "query_and_document_kinds",
                        "batches_over_the_limit",
                    ],
                );
            }
        }
    };
}

const KINDS: [EmbedKind; 2] = [EmbedKind::Document, EmbedKind::Query];

/// Texts of different scripts and shapes, each non-blank.
fn varied_texts() -> Vec<String> {
    vec![
        "The deploy key for staging is ERR-4711.".into(),
        "ok".into(),
        "?!".into(),
        "我每周二上钢琴课。".into(),
        "Remember that the user prefers green tea in the morning.".into(),
        // Longer than any model's input limit: embedded cut, never refused.
        "We walked to the lake and back, then read in the old bookshop. ".repeat(120),
    ]
}

/// Distinct texts that share no words, so even a hashing embedder tells
/// them apart.
const DISTINCT: [&str; 5] = [
    "Alice moved to Lisbon last spring.",
    "The invoice is due on Friday.",
    "Green tea without sugar, please.",
    "Rotate staging credentials monthly.",
    "我每周二上钢琴课。",
];

fn embed(case: &EmbedderCase, texts: &[&str], kind: EmbedKind) -> Vec<Vec<f32>> {
    match case.embedder.embed(texts, kind) {
        Ok(v) => v,
        Err(e) => panic!(
            "{:?}: embedding {texts:?} as {kind:?} failed: {e}",
            case.embedder.id()
        ),
    }
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

/// Same vector up to batching noise (padding, thread splits).
fn assert_same(a: &[f32], b: &[f32], what: &str) {
    let c = cos(a, b);
    assert!(c > 0.9999, "{what}: cosine {c}, expected the same vector");
}

/// A blank text (empty, or white space only) is refused with
/// [`EmbedError::Invalid`], alone or inside a batch, for both kinds, and
/// the embedder still works afterwards: the contract of [`Embedder::embed`].
pub fn blank_text_is_refused(case: &EmbedderCase) {
    let e = &case.embedder;
    for kind in KINDS {
        for batch in [
            vec![""],
            vec!["   "],
            vec![" \n\t "],
            vec!["\u{3000}"],
            vec!["a real text", ""],
            vec!["", "a real text", "another one"],
        ] {
            match e.embed(&batch, kind) {
                Err(EmbedError::Invalid(msg)) => {
                    assert!(
                        msg.contains("blank"),
                        "{:?}: message {msg:?} should say the input is blank",
                        e.id()
                    );
                }
                Err(other) => panic!(
                    "{:?}: {batch:?} as {kind:?}: expected EmbedError::Invalid, got {other}",
                    e.id()
                ),
                Ok(v) => panic!(
                    "{:?}: {batch:?} as {kind:?}: expected EmbedError::Invalid, got {} vectors",
                    e.id(),
                    v.len()
                ),
            }
        }
        assert_eq!(embed(case, &["still works"], kind).len(), 1);
    }
}

/// An empty batch gives an empty answer, not an error.
pub fn empty_batch_is_empty(case: &EmbedderCase) {
    for kind in KINDS {
        assert!(
            embed(case, &[], kind).is_empty(),
            "{:?}: {kind:?}",
            case.embedder.id()
        );
    }
}

/// Vector `i` belongs to text `i`: a batch gives each text the vector it
/// gets alone, a reversed batch gives the vectors reversed, and distinct
/// texts get distinct vectors.
pub fn order_is_preserved(case: &EmbedderCase) {
    for kind in KINDS {
        let batch = embed(case, &DISTINCT, kind);
        assert_eq!(batch.len(), DISTINCT.len());
        for (i, t) in DISTINCT.iter().enumerate() {
            let alone = embed(case, &[t], kind);
            assert_same(
                &batch[i],
                &alone[0],
                &format!("{t:?} ({kind:?}) in a batch and alone"),
            );
        }
        let reversed: Vec<&str> = DISTINCT.iter().rev().copied().collect();
        let back = embed(case, &reversed, kind);
        for (i, v) in back.iter().rev().enumerate() {
            assert_same(
                v,
                &batch[i],
                &format!("{:?} ({kind:?}) in a reversed batch", DISTINCT[i]),
            );
        }
        for i in 0..batch.len() {
            for j in i + 1..batch.len() {
                let c = cos(&batch[i], &batch[j]);
                assert!(
                    c < 0.999,
                    "{:?} and {:?} got the same vector (cosine {c})",
                    DISTINCT[i],
                    DISTINCT[j]
                );
            }
        }
    }
}

/// Every vector has [`Embedder::dims`] dimensions, whatever the text
/// (scripts, punctuation only, longer than the model's input limit).
pub fn dimensions_match(case: &EmbedderCase) {
    let dims = case.embedder.dims();
    assert!(dims > 0, "{:?}: dims() is 0", case.embedder.id());
    let texts = varied_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for kind in KINDS {
        for (t, v) in refs.iter().zip(embed(case, &refs, kind)) {
            assert_eq!(
                v.len(),
                dims,
                "{:?}: {kind:?} vector of {:.40?}",
                case.embedder.id(),
                t
            );
        }
    }
}

/// Every vector is finite and L2-normalised, so that a dot product is a
/// cosine.
pub fn vectors_are_unit_length(case: &EmbedderCase) {
    let texts = varied_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for kind in KINDS {
        for (t, v) in refs.iter().zip(embed(case, &refs, kind)) {
            assert!(
                v.iter().all(|x| x.is_finite()),
                "{kind:?} vector of {t:.40?} is not finite"
            );
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!(
                (norm - 1.0).abs() < 1e-3,
                "{kind:?} vector of {t:.40?} has norm {norm}"
            );
        }
    }
}

/// [`Kinds::Same`]: a query and a document of the same text get the same
/// vector. [`Kinds::Prefixed`]: they differ, and a question's query vector
/// is nearer the passage that answers it than to an unrelated one.
pub fn query_and_document_kinds(case: &EmbedderCase) {
    let texts = [
        "Where does Alice live now?",
        "Alice moved to Lisbon last spring.",
    ];
    let docs = embed(case, &texts, EmbedKind::Document);
    let queries = embed(case, &texts, EmbedKind::Query);
    match case.kinds {
        Kinds::Same => {
            for ((t, d), q) in texts.iter().zip(&docs).zip(&queries) {
                assert_same(d, q, &format!("{t:?} as a query and as a document"));
            }
        }
        Kinds::Prefixed => {
            for ((t, d), q) in texts.iter().zip(&docs).zip(&queries) {
                let c = cos(d, q);
                assert!(c < 0.9999, "{t:?}: the query and document vectors are the same (cosine {c}): is the prefix applied?");
            }
            let passages = embed(
                case,
                &[
                    "Alice moved to Lisbon last spring.",
                    "The invoice is due on Friday.",
                ],
                EmbedKind::Document,
            );
            let (near, far) = (
                cos(&queries[0], &passages[0]),
                cos(&queries[0], &passages[1]),
            );
            assert!(
                near > far,
                "the question is nearer the unrelated passage ({near} <= {far})"
            );
        }
    }
}

/// A batch larger than [`Embedder::max_batch`] (twice over, plus one) is
/// split by the embedder itself: one vector per text, in order.
pub fn batches_over_the_limit(case: &EmbedderCase) {
    let max = case.embedder.max_batch();
    assert!(max >= 1, "{:?}: max_batch() is 0", case.embedder.id());
    let n = 2 * max + 1;
    let words = [
        "lake",
        "invoice",
        "violin",
        "harbour",
        "credential",
        "piano",
        "garden",
    ];
    let texts: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "note {i}: {} {} {i}",
                words[i % words.len()],
                words[(i / words.len()) % words.len()]
            )
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let kind = EmbedKind::Document;
    let batch = embed(case, &refs, kind);
    assert_eq!(batch.len(), n, "{:?}: {n} texts", case.embedder.id());
    // The first and last of every sub-batch, and one inside.
    for i in [0, max - 1, max, 2 * max - 1, 2 * max, max / 2] {
        let alone = embed(case, &[refs[i]], kind);
        assert_same(
            &batch[i],
            &alone[0],
            &format!("text {i} of {n} ({:?})", refs[i]),
        );
    }
}

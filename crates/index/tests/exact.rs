//! Exact matches survive scale: among 10,000 notes, the one note that holds
//! the query word for word (and so has the best keyword score) is the first
//! hit, although hundreds of notes that merely resemble the query have
//! closer vectors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Fixture, TOPICS};
use mnemo_core::Embedder;
use mnemo_embed::HashEmbedder;
use mnemo_index::{IndexSettings, SearchRequest};
use mnemo_test_support::XorShift;

const NOTES: usize = 10_000;
const NEEDLE: &str = "memory/notes/n04321.md";

/// 10,000 one-chunk notes: 40 short ones that look just like the query but
/// name another project, 400 longer ones about other projects' codenames,
/// filler, and the needle: a note that holds the phrase after a sentence
/// about something else (its only "7" gives it the best keyword score).
fn corpus(f: &Fixture) {
    let mut rng = XorShift::new(7);
    let words = [
        "alpha", "falcon", "meadow", "copper", "lantern", "harbor", "violet", "ember",
    ];
    for i in 0..NOTES {
        let word = words[rng.below(words.len())];
        let project = 1000 + rng.below(9000);
        let text = if i == 4321 {
            format!(
                "{} The secret codename for project 7 is BLUEBIRD.\n",
                TOPICS[0]
            )
        } else if i % 250 == 0 {
            format!("Secret codename for project {project}.\n")
        } else if i % 25 == 0 {
            format!(
                "The secret codename for project {project} is {word}; {}\n",
                TOPICS[i % TOPICS.len()]
            )
        } else {
            format!(
                "{} {}\n",
                TOPICS[i % TOPICS.len()],
                TOPICS[(i / 7) % TOPICS.len()]
            )
        };
        f.write(&format!("memory/notes/n{i:05}.md"), text);
    }
}

#[test]
fn the_note_holding_the_query_word_for_word_comes_first_among_10_000() {
    let f = Fixture::new();
    corpus(&f);
    let emb: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(384));
    let index = mnemo_index_sqlite::open(&f.ws, IndexSettings::default(), Some(emb)).unwrap();
    let report = index.sync(&|_| {}).unwrap();
    assert_eq!(report.indexed.len(), NOTES);

    let found = index
        .search(&SearchRequest::new("secret codename for project 7"))
        .unwrap();
    let paths: Vec<&str> = found.results.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(paths.first(), Some(&NEEDLE), "{paths:?}");
    let needle = &found.results[0];
    assert_eq!(needle.text_score, Some(1.0));
    // The notes that only resemble the query have closer vectors: without
    // the rule they would rank first.
    let closer = found
        .results
        .iter()
        .filter(|h| h.vector_score > needle.vector_score)
        .count();
    assert!(closer >= 3, "{:?}", found.results);

    // A query that is not in the needle word for word gets no such lift.
    let loose = index
        .search(&SearchRequest::new("codename for project 7 secret"))
        .unwrap();
    assert_ne!(
        loose.results.first().map(|h| h.path.as_str()),
        Some(NEEDLE),
        "{:?}",
        loose.results
    );
}

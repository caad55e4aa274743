//! The Hugging Face hub cache layout (`models--ORG--NAME/snapshots/<rev>/…`,
//! `refs/<branch>`) and downloads into it.
//!
//! Downloads write each file to a temporary name beside its final place and
//! rename it when complete and verified, so an interrupted download never
//! leaves a truncated file where a loader would take it for a model.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Files every model folder must contain.
pub(crate) const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// Files read when present.
pub(crate) const OPTIONAL_FILES: [&str; 2] = ["1_Pooling/config.json", "sentence_bert_config.json"];

/// The public hub, used when neither an endpoint nor `HF_ENDPOINT` is given.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Progress of [`download`], reported after every chunk written and once per
/// file when it is complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadProgress {
    /// File being fetched, relative to the model folder (`model.safetensors`).
    pub file: String,
    /// 0-based position of this file in the download.
    pub file_index: usize,
    /// Number of files to fetch.
    pub file_count: usize,
    /// Bytes of this file received so far.
    pub bytes: u64,
    /// Size of this file, when the server said.
    pub total: Option<u64>,
    /// True on the last report for this file.
    pub done: bool,
}

/// The hub cache folder: `HF_HUB_CACHE`, else `HF_HOME/hub`, else
/// `~/.cache/huggingface/hub`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(v) = std::env::var_os("HF_HUB_CACHE").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(v));
    }
    if let Some(v) = std::env::var_os("HF_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(v).join("hub"));
    }
    dirs::home_dir().map(|h| h.join(".cache").join("huggingface").join("hub"))
}

/// The hub endpoint: `HF_ENDPOINT`, else [`DEFAULT_ENDPOINT`].
pub fn default_endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string())
}

fn safe_part(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Checks an `ORG/NAME` model id, so it can name a cache folder and a URL.
pub(crate) fn validate_model_id(model_id: &str) -> Result<(&str, &str)> {
    match model_id.split_once('/') {
        Some((org, name)) if safe_part(org) && safe_part(name) => Ok((org, name)),
        _ => Err(Error::Invalid(format!(
            "model id {model_id:?} is not of the form ORG/NAME (letters, digits, '-', '_', '.'), \
             e.g. sentence-transformers/all-MiniLM-L6-v2"
        ))),
    }
}

fn validate_revision(revision: &str) -> Result<()> {
    if revision.split('/').all(safe_part) {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "revision {revision:?} must be a branch, tag or commit made of letters, digits, '-', '_', '.' and '/'"
        )))
    }
}

/// `models--ORG--NAME` inside the cache.
pub(crate) fn repo_dir(cache_dir: &Path, model_id: &str) -> Result<PathBuf> {
    let (org, name) = validate_model_id(model_id)?;
    Ok(cache_dir.join(format!("models--{org}--{name}")))
}

/// The snapshot folder of `model_id` at `revision` in the cache at
/// `cache_dir`, resolving branch names through `refs/`.
pub fn cached_model_dir(model_id: &str, revision: &str, cache_dir: &Path) -> Result<PathBuf> {
    validate_revision(revision)?;
    let repo = repo_dir(cache_dir, model_id)?;
    let not_found = |what: String| Error::ModelNotFound {
        path: repo.clone(),
        message: format!(
            "{what}: run scripts/fetch-models.sh and set [embedder] path = \"<model folder>\", \
             or download it (`mnemo` does when the network allows; set HF_ENDPOINT for a mirror)"
        ),
    };
    if !repo.is_dir() {
        return Err(not_found(format!(
            "model {model_id} is not in the Hugging Face cache {} (no folder {})",
            cache_dir.display(),
            repo.display()
        )));
    }
    let ref_file = repo.join("refs").join(revision);
    let commit = match std::fs::read_to_string(&ref_file) {
        Ok(s) => s.trim().to_string(),
        Err(_) => revision.to_string(),
    };
    validate_revision(&commit)?;
    let snap = repo.join("snapshots").join(&commit);
    if !snap.is_dir() {
        return Err(not_found(format!(
            "model {model_id} is in the cache but has no snapshot for revision {revision} (looked for {})",
            snap.display()
        )));
    }
    Ok(snap)
}

/// Downloads the files a [`crate::LocalEmbedder`] needs for `model_id` at
/// `revision` into the hub cache layout under `cache_dir` (default:
/// [`default_cache_dir`]), from `endpoint` (default: [`default_endpoint`]),
/// fetching `{endpoint}/{model_id}/resolve/{revision}/{file}`. Files already
/// in the snapshot are kept. Returns the snapshot folder.
pub fn download(
    model_id: &str,
    revision: &str,
    cache_dir: Option<&Path>,
    endpoint: Option<&str>,
    progress: &mut dyn FnMut(&DownloadProgress),
) -> Result<PathBuf> {
    validate_revision(revision)?;
    let (cache_dir, endpoint) = cache_and_endpoint(cache_dir, endpoint)?;
    let endpoint = endpoint.as_str();
    let repo = repo_dir(&cache_dir, model_id)?;
    let client = http_client()?;

    let files: Vec<(&str, bool)> = REQUIRED_FILES
        .iter()
        .map(|f| (*f, true))
        .chain(OPTIONAL_FILES.iter().map(|f| (*f, false)))
        .collect();
    let file_count = files.len();
    // The snapshot is named after the commit the hub reports for the first
    // file, as huggingface_hub does; a plain server falls back to the revision.
    let mut snapshot: Option<(String, PathBuf)> = None;
    for (file_index, (file, required)) in files.into_iter().enumerate() {
        if let Some((_, snap)) = &snapshot {
            if snap.join(file).is_file() {
                continue;
            }
        }
        let url = format!("{endpoint}/{model_id}/resolve/{revision}/{file}");
        let resp = client.get(&url).send().map_err(|e| {
            Error::Download(format!(
                "GET {url}: {e}; check the network or set HF_ENDPOINT to a reachable mirror"
            ))
        })?;
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_FOUND && !required {
            continue;
        }
        if !status.is_success() {
            return Err(Error::Download(format!(
                "GET {url} answered HTTP {status}{}",
                if status.as_u16() == 401 || status.as_u16() == 404 {
                    ": check the model id and revision (gated models need a token, which mnemo does not send)"
                } else {
                    ""
                }
            )));
        }
        let (commit, snap) = match &snapshot {
            Some(s) => s.clone(),
            None => {
                let commit = resp
                    .headers()
                    .get("x-repo-commit")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
                    .filter(|c| validate_revision(c).is_ok() && !c.contains('/'))
                    .unwrap_or_else(|| revision.to_string());
                let snap = repo.join("snapshots").join(&commit);
                snapshot = Some((commit.clone(), snap.clone()));
                if snap.join(file).is_file() {
                    continue;
                }
                (commit, snap)
            }
        };
        let _ = commit;
        let dest = snap.join(file);
        fetch_to(
            resp, &url, &dest, file, file_index, file_count, None, progress,
        )?;
    }
    let Some((commit, snap)) = snapshot else {
        return Err(Error::Download(format!(
            "no file of {model_id} could be fetched from {endpoint}"
        )));
    };
    if commit != revision {
        let ref_file = repo.join("refs").join(revision);
        write_atomic(&ref_file, commit.as_bytes())?;
    }
    Ok(snap)
}

/// Downloads the single file `file` of the hub repository `repo_id` at
/// `revision` into the hub cache layout (as [`download`] does), refusing
/// it unless its sha256 is `sha256`. A file already in the snapshot that
/// `refs/<revision>` names is returned without asking the hub. Returns the
/// file's path.
pub fn download_file(
    repo_id: &str,
    revision: &str,
    file: &str,
    sha256: &str,
    cache_dir: Option<&Path>,
    endpoint: Option<&str>,
    progress: &mut dyn FnMut(&DownloadProgress),
) -> Result<PathBuf> {
    validate_revision(revision)?;
    if !file.split('/').all(safe_part) {
        return Err(Error::Invalid(format!(
            "file name {file:?} must be made of letters, digits, '-', '_', '.' and '/'"
        )));
    }
    let (cache_dir, endpoint) = cache_and_endpoint(cache_dir, endpoint)?;
    if let Ok(snap) = cached_model_dir(repo_id, revision, &cache_dir) {
        if snap.join(file).is_file() {
            return Ok(snap.join(file));
        }
    }
    let repo = repo_dir(&cache_dir, repo_id)?;
    let url = format!("{endpoint}/{repo_id}/resolve/{revision}/{file}");
    let resp = http_client()?.get(&url).send().map_err(|e| {
        Error::Download(format!(
            "GET {url}: {e}; check the network or set HF_ENDPOINT to a reachable mirror"
        ))
    })?;
    let status = resp.status();
    if !status.is_success() {
        return Err(Error::Download(format!("GET {url} answered HTTP {status}")));
    }
    let commit = resp
        .headers()
        .get("x-repo-commit")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .filter(|c| validate_revision(c).is_ok() && !c.contains('/'))
        .unwrap_or_else(|| revision.to_string());
    let dest = repo.join("snapshots").join(&commit).join(file);
    fetch_to(resp, &url, &dest, file, 0, 1, Some(sha256), progress)?;
    if commit != revision {
        write_atomic(&repo.join("refs").join(revision), commit.as_bytes())?;
    }
    Ok(dest)
}

/// The cache folder (default: [`default_cache_dir`]) and the endpoint
/// without a trailing `/` (default: [`default_endpoint`]).
fn cache_and_endpoint(
    cache_dir: Option<&Path>,
    endpoint: Option<&str>,
) -> Result<(PathBuf, String)> {
    let cache_dir = match cache_dir {
        Some(c) => c.to_path_buf(),
        None => default_cache_dir().ok_or_else(|| {
            Error::Invalid("no Hugging Face cache folder: set HF_HUB_CACHE or HF_HOME, or the cache_dir setting".into())
        })?,
    };
    let endpoint = endpoint
        .map(str::to_string)
        .unwrap_or_else(default_endpoint);
    Ok((cache_dir, endpoint.trim_end_matches('/').to_string()))
}

/// The client of every model download: a connect timeout, no overall
/// timeout (model files are large).
pub(crate) fn http_client() -> Result<reqwest::blocking::Client> {
    reqwest::blocking::Client::builder()
        .connect_timeout(Duration::from_secs(20))
        .timeout(None::<Duration>)
        .user_agent(concat!("mnemo/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Download(format!("cannot start an HTTP client: {e}")))
}

fn expected_sha256(resp: &reqwest::blocking::Response) -> Option<String> {
    for name in ["x-linked-etag", "etag"] {
        if let Some(v) = resp.headers().get(name).and_then(|v| v.to_str().ok()) {
            let v = v
                .trim_start_matches("W/")
                .trim_matches('"')
                .to_ascii_lowercase();
            if v.len() == 64 && v.chars().all(|c| c.is_ascii_hexdigit()) {
                return Some(v);
            }
        }
    }
    None
}

/// A writer that passes bytes on to `inner` and hashes them (sha256), so
/// a download or an unpacked file is checked in the same pass that writes it.
pub(crate) struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W: Write> HashingWriter<W> {
    pub(crate) fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// Bytes written so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The sha256 (hex) of everything written.
    pub(crate) fn sha256_hex(self) -> String {
        hex::encode(self.hasher.finalize())
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Streams `resp` into `dest` through a temporary file beside it, checking
/// the length, any sha256 the server states and the `pinned` one, reporting
/// progress. Nothing reaches `dest` unless every check passed. Returns the
/// file's sha256 (hex), so callers with a digest of their own need not read
/// it again.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fetch_to(
    mut resp: reqwest::blocking::Response,
    url: &str,
    dest: &Path,
    file: &str,
    file_index: usize,
    file_count: usize,
    pinned: Option<&str>,
    progress: &mut dyn FnMut(&DownloadProgress),
) -> Result<String> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|e| Error::io(format!("cannot create {}", parent.display()), e))?;
    let total = resp.content_length();
    let want_sha = expected_sha256(&resp);
    let mut tmp = cache_temp_file(parent, ".download-")?;
    let tmp_path = tmp.path().to_path_buf();
    let mut out = HashingWriter::new(tmp.as_file_mut());
    let mut buf = vec![0u8; 256 * 1024];
    let mut report = |bytes: u64, done: bool| {
        progress(&DownloadProgress {
            file: file.to_string(),
            file_index,
            file_count,
            bytes,
            total,
            done,
        })
    };
    report(0, false);
    loop {
        let n = resp
            .read(&mut buf)
            .map_err(|e| Error::Download(format!("reading {url}: {e}")))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])
            .map_err(|e| Error::io(format!("cannot write {}", tmp_path.display()), e))?;
        report(out.bytes(), false);
    }
    let bytes = out.bytes();
    let got = out.sha256_hex();
    if let Some(total) = total {
        if bytes != total {
            return Err(Error::Download(format!(
                "{url}: received {bytes} bytes, expected {total}; try again"
            )));
        }
    }
    if let Some(want) = want_sha {
        if got != want {
            return Err(Error::Download(format!(
                "{url}: sha256 {got} does not match the server's {want}; try again"
            )));
        }
    }
    if let Some(want) = pinned {
        if got != want {
            return Err(Error::Download(format!(
                "{url}: sha256 {got} is not the pinned {want}: the file is not the release mnemo knows, so it was not kept"
            )));
        }
    }
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io(format!("cannot flush {}", tmp.path().display()), e))?;
    tmp.persist(dest).map_err(|e| {
        Error::io(
            format!("cannot move the download into {}", dest.display()),
            e.error,
        )
    })?;
    report(bytes, true);
    Ok(got)
}

/// A temporary file in the cache folder `dir`, renamed into place once
/// complete. Readable by everyone like the rest of a model cache (tempfile's
/// own default is owner-only), so one cache can serve several users.
pub(crate) fn cache_temp_file(dir: &Path, prefix: &str) -> Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix).suffix(".part");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    builder.tempfile_in(dir).map_err(|e| {
        Error::io(
            format!("cannot create a temporary file in {}", dir.display()),
            e,
        )
    })
}

fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|e| Error::io(format!("cannot create {}", parent.display()), e))?;
    let mut tmp = cache_temp_file(parent, ".write-")?;
    tmp.write_all(data)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    tmp.persist(path)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_are_checked() {
        assert!(validate_model_id("sentence-transformers/all-MiniLM-L6-v2").is_ok());
        for bad in ["", "noslash", "../x/y", "a/../b", "a/b/c", "/abs", "a/b c"] {
            assert!(validate_model_id(bad).is_err(), "{bad}");
        }
        assert!(validate_revision("refs/pr/1").is_ok());
        assert!(validate_revision("../main").is_err());
    }

    #[test]
    fn cache_lookup_names_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let e = cached_model_dir("org/name", "main", dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("models--org--name") && e.contains("fetch-models.sh"),
            "{e}"
        );
    }
}

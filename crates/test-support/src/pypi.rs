//! A package index on 127.0.0.1 that serves one wheel through the Simple
//! API, as PyPI and its mirrors do: the project page (PEP 691 JSON or
//! PEP 503 HTML with relative links) and the wheel, with download counts.
//! Tests point `MNEMO_PYPI_URL` (or `pypi::fetch`'s index) at [`PackageIndex::url`].

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// How the index answers for the project page.
#[derive(Debug, Clone, Copy)]
pub enum Page {
    /// PEP 691 JSON with absolute links, as pypi.org does when asked.
    Json,
    /// PEP 503 HTML with links relative to the page, as many mirrors do.
    Html,
}

/// A running index. The server thread lives as long as the test process.
pub struct PackageIndex {
    /// The index root, as `MNEMO_PYPI_URL` would name it (`…/simple`).
    pub url: String,
    wheel_gets: Arc<AtomicUsize>,
}

impl PackageIndex {
    /// Serves `wheel` as the file `filename` (`NAME-VERSION-TAGS.whl`) of
    /// project NAME, stating `digest` as its sha256. An older release's
    /// wheel is listed beside it, so a client must pick by version.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    #[allow(clippy::expect_used)]
    pub fn start(filename: &str, wheel: Vec<u8>, digest: &str, page: Page) -> PackageIndex {
        Self::start_many(
            vec![(filename.to_string(), wheel, digest.to_string())],
            page,
        )
    }

    /// Serves several projects at once, one wheel each: `(filename, wheel,
    /// digest)` as for [`PackageIndex::start`]. The project is the wheel
    /// name's first part with `_` read as `-` (`my_pkg-1.0-…` is `my-pkg`).
    ///
    /// # Panics
    /// When no loopback port can be bound.
    #[allow(clippy::expect_used)]
    pub fn start_many(wheels: Vec<(String, Vec<u8>, String)>, page: Page) -> PackageIndex {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let base = format!(
            "http://{}",
            listener.local_addr().expect("the bound address")
        );
        let wheel_gets = Arc::new(AtomicUsize::new(0));
        let sites: Arc<Vec<Site>> = Arc::new(
            wheels
                .into_iter()
                .map(|(filename, wheel, digest)| Site {
                    base: base.clone(),
                    project: filename
                        .split('-')
                        .next()
                        .unwrap_or_default()
                        .replace('_', "-"),
                    filename,
                    wheel,
                    digest,
                    page,
                    gets: wheel_gets.clone(),
                })
                .collect(),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let sites = sites.clone();
                std::thread::spawn(move || serve(&sites, stream));
            }
        });
        PackageIndex {
            url: format!("{base}/simple"),
            wheel_gets,
        }
    }

    /// How many times the wheel itself was downloaded.
    pub fn wheel_downloads(&self) -> usize {
        self.wheel_gets.load(Ordering::SeqCst)
    }
}

struct Site {
    base: String,
    filename: String,
    project: String,
    wheel: Vec<u8>,
    digest: String,
    page: Page,
    gets: Arc<AtomicUsize>,
}

/// Answers one request from the site whose project page or wheel it asks for.
fn serve(sites: &[Site], stream: TcpStream) {
    let Ok(clone) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(clone);
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
    let site = sites.iter().find(|s| {
        path == format!("/simple/{}/", s.project) || path == format!("/files/{}", s.filename)
    });
    match site {
        Some(site) => site.answer(stream, &path),
        None => {
            let mut stream = stream;
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found",
            );
        }
    }
}

impl Site {
    fn answer(&self, mut stream: TcpStream, path: &str) {
        let (base, file, project, digest) =
            (&self.base, &self.filename, &self.project, &self.digest);
        let (status, ctype, body): (&str, &str, Vec<u8>) = if path == format!("/simple/{project}/")
        {
            match self.page {
                Page::Json => {
                    let json = serde_json::json!({"meta": {"api-version": "1.1"}, "name": project, "files": [
                        {"filename": format!("{project}-0.0.1-py3-none-any.whl"),
                         "url": format!("{base}/files/old.whl"), "hashes": {"sha256": "00"}},
                        {"filename": file, "url": format!("{base}/files/{file}"),
                         "hashes": {"sha256": digest}},
                    ]});
                    (
                        "200 OK",
                        "application/vnd.pypi.simple.v1+json",
                        json.to_string().into_bytes(),
                    )
                }
                Page::Html => {
                    let html = format!(
                        "<!DOCTYPE html><html><body><h1>Links for {project}</h1>\n\
                         <a href=\"../../files/old.whl#sha256=00\">{project}-0.0.1-py3-none-any.whl</a><br/>\n\
                         <a href=\"../../files/{file}#sha256={digest}\" data-requires-python=\"&gt;=3.8\">{file}</a><br/>\n\
                         </body></html>"
                    );
                    ("200 OK", "text/html", html.into_bytes())
                }
            }
        } else if path == format!("/files/{file}") {
            self.gets.fetch_add(1, Ordering::SeqCst);
            ("200 OK", "application/octet-stream", self.wheel.clone())
        } else {
            ("404 Not Found", "text/plain", b"not found".to_vec())
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(&body);
    }
}

/// A wheel holding `member` = `data` beside an empty `__init__.py`,
/// deflated as real wheels are.
///
/// # Panics
/// When the zip cannot be written (in memory: never in practice).
#[allow(clippy::expect_used)]
pub fn wheel(member: &str, data: &[u8]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        let package = member.split('/').next().unwrap_or("pkg");
        z.start_file(format!("{package}/__init__.py"), opts)
            .expect("zip entry");
        z.start_file(member, opts).expect("zip entry");
        z.write_all(data).expect("zip data");
        z.finish().expect("zip end");
    }
    out.into_inner()
}

/// Lower-case hex sha256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}

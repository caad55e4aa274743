//! A real browser for tests: Debian's headless Chromium driven by its
//! ChromeDriver over the W3C WebDriver protocol (JSON over HTTP on
//! loopback). Only what the page tests use: open an address, find
//! elements by CSS selector, click, type, press keys, read text, run a
//! script, take a screenshot.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cli::free_port;

/// The key of an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How long a wait for an element or a text lasts: generous, for a
/// loaded 2-core machine running other tests beside the browser.
const WAIT_SECS: u64 = 45;

/// Where Debian puts the browser and its driver.
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A headless Chromium session, closed (and its driver stopped) when dropped.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

/// Why no browser can be started, or `None` when one can: a test skips
/// with this reason, except under CI (`CI` set), where it fails.
pub fn missing() -> Option<String> {
    for (path, package) in [(CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")] {
        if !Path::new(path).exists() {
            return Some(format!(
                "{path} is missing: install Debian's {package} (`apt-get install chromium chromium-driver`)"
            ));
        }
    }
    None
}

impl Browser {
    /// Starts ChromeDriver and a headless Chromium of `width`×`height`.
    ///
    /// # Panics
    /// When the driver or the browser does not start.
    #[allow(clippy::expect_used, clippy::panic)]
    pub fn start(width: u32, height: u32) -> Browser {
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().expect("a profile folder");
        // As root, without a sandbox; no background traffic (this
        // machine has no network, and a test needs none).
        let args = vec![
            "--headless=new".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let mut options = json!({"binary": CHROMIUM, "args": args});
        // A window is at least 500 pixels wide: a phone's narrower screen
        // is emulated (its viewport, as a phone's browser lays it out).
        if width < 500 {
            options["mobileEmulation"] = json!({"deviceMetrics": {
                "width": width, "height": height, "pixelRatio": 2.0, "mobile": true, "touch": true,
            }});
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": options,
        }}});
        let mut browser = Browser {
            driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        let answer = browser.call("POST", "/session", Some(&caps));
        browser.session = answer["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {answer}"))
            .to_string();
        browser
    }

    /// One WebDriver command; returns its `value`.
    #[allow(clippy::panic)]
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let body = body.map(Value::to_string);
        let (status, text) = request(self.port, method, path, body.as_deref());
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status != 200 {
            panic!("WebDriver {method} {path}: {status} {text}");
        }
        v["value"].clone()
    }

    fn session_call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    /// Opens `url`.
    pub fn goto(&self, url: &str) {
        self.session_call("POST", "/url", Some(&json!({"url": url})));
    }

    /// The elements matching `css` now.
    pub fn find_all(&self, css: &str) -> Vec<String> {
        let v = self.session_call(
            "POST",
            "/elements",
            Some(&json!({"using": "css selector", "value": css})),
        );
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The first element matching `css`, waiting for it up to 45 s.
    ///
    /// # Panics
    /// When none appears.
    #[allow(clippy::panic)]
    pub fn wait_for(&self, css: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(WAIT_SECS);
        loop {
            if let Some(e) = self.find_all(css).into_iter().next() {
                return e;
            }
            if Instant::now() > deadline {
                let body = self.text_of("body");
                panic!("no element {css:?} appeared; the page says: {body}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the text of the first element matching `css` holds
    /// `needle`, and returns that text.
    ///
    /// # Panics
    /// When it does not within 45 s.
    #[allow(clippy::panic)]
    pub fn wait_text(&self, css: &str, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(WAIT_SECS);
        loop {
            // An element the page replaced since it was found reads as
            // empty: the next look finds its successor.
            let text = self
                .find_all(css)
                .first()
                .and_then(|e| self.live_text(e))
                .unwrap_or_default();
            if text.contains(needle) {
                return text;
            }
            if Instant::now() > deadline {
                let body = self.text_of("body");
                panic!("{css:?} never held {needle:?} (it holds {text:?}); the page says: {body}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The visible text of `element`.
    pub fn element_text(&self, element: &str) -> String {
        self.session_call("GET", &format!("/element/{element}/text"), None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The visible text of `element`, or `None` when the page removed it.
    fn live_text(&self, element: &str) -> Option<String> {
        let path = format!("/session/{}/element/{element}/text", self.session);
        let (status, text) = request(self.port, "GET", &path, None);
        let v: Value = serde_json::from_str(&text).ok()?;
        (status == 200).then(|| v["value"].as_str().unwrap_or_default().to_string())
    }

    /// The visible text of the first element matching `css` (empty when none).
    pub fn text_of(&self, css: &str) -> String {
        self.find_all(css)
            .first()
            .map(|e| self.element_text(e))
            .unwrap_or_default()
    }

    /// Clicks the first element matching `css` (waiting for it).
    pub fn click(&self, css: &str) {
        let e = self.wait_for(css);
        self.session_call("POST", &format!("/element/{e}/click"), Some(&json!({})));
    }

    /// Replaces the value of the input matching `css` with `text`.
    pub fn type_into(&self, css: &str, text: &str) {
        let e = self.wait_for(css);
        self.session_call("POST", &format!("/element/{e}/clear"), Some(&json!({})));
        self.session_call(
            "POST",
            &format!("/element/{e}/value"),
            Some(&json!({"text": text})),
        );
    }

    /// Presses each key of `keys` in turn on the focused element, as a
    /// person would (WebDriver's codes: `\u{E004}` Tab, `\u{E007}` Enter).
    pub fn press(&self, keys: &str) {
        let actions: Vec<Value> = keys
            .chars()
            .flat_map(|k| {
                [
                    json!({"type": "keyDown", "value": k.to_string()}),
                    json!({"type": "keyUp", "value": k.to_string()}),
                ]
            })
            .collect();
        self.session_call(
            "POST",
            "/actions",
            Some(&json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        );
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the
    /// page and returns what it returns.
    pub fn execute(&self, script: &str, args: Value) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            Some(&json!({"script": script, "args": args})),
        )
    }

    /// The page's address now.
    pub fn url(&self) -> String {
        self.session_call("GET", "/url", None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Saves a PNG of the window to `path`.
    ///
    /// # Panics
    /// When the browser gives no image or it cannot be written.
    #[allow(clippy::expect_used)]
    pub fn screenshot(&self, path: &Path) -> PathBuf {
        use base64::Engine as _;
        let v = self.session_call("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .expect("a base64 PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("the screenshot folder");
        }
        std::fs::write(path, png).expect("write the screenshot");
        path.to_path_buf()
    }
}

/// One HTTP/1.1 request to the driver, its answer read by its
/// `Content-Length` (the driver may keep the connection open).
#[allow(clippy::expect_used, clippy::panic)]
fn request(port: u16, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    let body = body.unwrap_or_default();
    let mut stream =
        std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the driver");
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("a read timeout");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send to the driver");
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader
        .read_line(&mut status_line)
        .expect("the driver's status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status from the driver: {status_line:?}"));
    let mut length = None;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
    }
    let mut answer = Vec::new();
    match length {
        Some(n) => {
            answer.resize(n, 0);
            reader.read_exact(&mut answer).expect("the driver's answer");
        }
        None => {
            reader
                .read_to_end(&mut answer)
                .expect("the driver's answer");
        }
    }
    (status, String::from_utf8_lossy(&answer).into_owned())
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = std::panic::catch_unwind(|| {
                request(
                    self.port,
                    "DELETE",
                    &format!("/session/{}", self.session),
                    None,
                )
            });
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

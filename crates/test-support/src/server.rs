//! The loopback HTTP server: routing, recording of requests, the script
//! queue and the server's lifetime.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::render::{self, embedding_inputs, error_body, Endpoint};
use crate::reply::Reply;

/// Dimension of the hashed embeddings unless changed.
pub const DEFAULT_EMBEDDING_DIMS: usize = 64;

/// One request the server received, for assertions on what a client sent.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// HTTP method, upper case.
    pub method: String,
    /// Path without the query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers with lower-case names; repeated headers are joined by `, `.
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
    /// The body as text, exactly as received (lossy UTF-8).
    pub raw_body: String,
}

impl RecordedRequest {
    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

type Responder = Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

struct Inner {
    script: VecDeque<Reply>,
    default: Option<Reply>,
    responder: Option<Responder>,
    requests: Vec<RecordedRequest>,
    dims: usize,
    seq: u64,
}

struct Shared {
    inner: Mutex<Inner>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A test that panicked while holding the lock must not hide the
        // recorded requests from the assertions that follow.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

enum Runner {
    /// Serving on the caller's runtime; dropping the sender stops it.
    Task(Option<oneshot::Sender<()>>),
    /// Serving on a private runtime in a background thread, joined on drop.
    Thread(
        Option<oneshot::Sender<()>>,
        Option<std::thread::JoinHandle<()>>,
    ),
}

/// A scripted model server on `127.0.0.1` with a random port.
///
/// It speaks the real wire protocols over HTTP:
/// `POST /v1/chat/completions` (OpenAI, `stream: false` only),
/// `POST /v1/messages` (Anthropic) and `POST /v1/embeddings` (OpenAI).
///
/// Chat answers come, in this order, from the FIFO script
/// ([`push`](Self::push)), the responder ([`respond_with`](Self::respond_with)),
/// the default reply ([`set_default`](Self::set_default)), and otherwise a
/// 500 whose message says the script is empty. The embeddings endpoint takes
/// the next scripted reply only when it is not a chat reply (an error, raw
/// body or embeddings reply); otherwise it answers with
/// [`hashed_embedding`](crate::hashed_embedding) vectors.
///
/// Every request is recorded, including rejected ones. The server stops
/// when the value is dropped.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    runner: Runner,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

fn new_shared() -> Arc<Shared> {
    Arc::new(Shared {
        inner: Mutex::new(Inner {
            script: VecDeque::new(),
            default: None,
            responder: None,
            requests: Vec::new(),
            dims: DEFAULT_EMBEDDING_DIMS,
            seq: 0,
        }),
    })
}

fn app(shared: Arc<Shared>) -> Router {
    Router::new().fallback(handle).with_state(shared)
}

impl ScriptedServer {
    /// Starts the server on the current tokio runtime. On a current-thread
    /// runtime (the `#[tokio::test]` default) the server only runs while the
    /// test awaits: use [`start_blocking`](Self::start_blocking) with
    /// blocking clients.
    ///
    /// # Panics
    /// When no loopback port can be bound: a test cannot go on without its
    /// server, so this fails the test at once (use
    /// [`try_start`](Self::try_start) to handle the error).
    pub async fn start() -> Self {
        match Self::try_start().await {
            Ok(s) => s,
            Err(e) => panic!("scripted server: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Starts the server on the current tokio runtime, returning bind errors.
    pub async fn try_start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = new_shared();
        let (tx, rx) = oneshot::channel::<()>();
        let router = app(shared.clone());
        tokio::spawn(async move {
            let serve = axum::serve(listener, router);
            tokio::select! {
                _ = serve => {}
                _ = rx => {}
            }
        });
        Ok(ScriptedServer {
            addr,
            shared,
            runner: Runner::Task(Some(tx)),
        })
    }

    /// Starts the server on its own runtime in a background thread, for
    /// synchronous tests and for tests that spawn the `mnemo` binary.
    ///
    /// # Panics
    /// When the runtime or the socket cannot be set up (see [`start`](Self::start)).
    pub fn start_blocking() -> Self {
        match Self::try_start_blocking() {
            Ok(s) => s,
            Err(e) => panic!("scripted server: cannot start: {e}"),
        }
    }

    /// Like [`start_blocking`](Self::start_blocking), returning errors.
    pub fn try_start_blocking() -> std::io::Result<Self> {
        let shared = new_shared();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel::<std::io::Result<SocketAddr>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let router = app(shared.clone());
        let handle = std::thread::Builder::new()
            .name("scripted-server".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = addr_tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(async move {
                    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", 0)).await {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = addr_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = addr_tx.send(listener.local_addr());
                    tokio::select! {
                        _ = axum::serve(listener, router) => {}
                        _ = stop_rx => {}
                    }
                });
                // Connections still open (a client stuck on a delayed reply)
                // must not keep the test waiting.
                rt.shutdown_timeout(Duration::from_millis(200));
            })?;
        let addr = addr_rx.recv().map_err(|_| {
            std::io::Error::other("scripted server thread ended before listening")
        })??;
        Ok(ScriptedServer {
            addr,
            shared,
            runner: Runner::Thread(Some(stop_tx), Some(handle)),
        })
    }

    /// `http://127.0.0.1:PORT`: the Anthropic base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`: the OpenAI-compatible base URL.
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// The socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: Reply) {
        self.shared.lock().script.push_back(reply);
    }

    /// Appends several replies to the script.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.lock().script.extend(replies);
    }

    /// Number of scripted replies not yet consumed.
    pub fn remaining(&self) -> usize {
        self.shared.lock().script.len()
    }

    /// The reply used by chat endpoints when the script is empty and no
    /// responder is set.
    pub fn set_default(&self, reply: Reply) {
        self.shared.lock().default = Some(reply);
    }

    /// Answers chat requests with `f(request)` whenever the script is empty.
    pub fn respond_with<F>(&self, f: F)
    where
        F: Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    {
        self.shared.lock().responder = Some(Arc::new(f));
    }

    /// Dimension of the hashed embeddings (default [`DEFAULT_EMBEDDING_DIMS`]).
    pub fn set_embedding_dims(&self, dims: usize) {
        self.shared.lock().dims = dims.max(1);
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Number of requests received so far.
    pub fn request_count(&self) -> usize {
        self.shared.lock().requests.len()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        self.shared.lock().requests.clear();
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        match &mut self.runner {
            Runner::Task(tx) => {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(());
                }
            }
            Runner::Thread(tx, handle) => {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(());
                }
                if let Some(h) = handle.take() {
                    let _ = h.join();
                }
            }
        }
    }
}

fn json_response(status: u16, body: &Value, headers: &[(String, String)]) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = (code, axum::Json(body.clone())).into_response();
    for (k, v) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(k.as_str()),
            HeaderValue::try_from(v.as_str()),
        ) {
            resp.headers_mut().insert(name, value);
        }
    }
    resp
}

fn bad_request(message: &str) -> Response {
    json_response(400, &error_body(message), &[])
}

/// Checks the request the way a real server would, so client bugs show up
/// as a 400 with a message instead of a plausible answer.
fn validate(endpoint: Endpoint, req: &RecordedRequest) -> Result<(), String> {
    let body = &req.body;
    if !body.is_object() {
        return Err(format!(
            "the body is not a JSON object: {}",
            req.raw_body.chars().take(200).collect::<String>()
        ));
    }
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err("`model` is missing".into());
    }
    match endpoint {
        Endpoint::OpenAiChat => {
            if body.get("stream").and_then(Value::as_bool) == Some(true) {
                return Err("only `stream: false` is supported".into());
            }
            if !body.get("messages").is_some_and(Value::is_array) {
                return Err("`messages` must be an array".into());
            }
        }
        Endpoint::AnthropicMessages => {
            if req.header("anthropic-version").is_none() {
                return Err("the `anthropic-version` header is missing".into());
            }
            if !body.get("max_tokens").is_some_and(Value::is_u64) {
                return Err("`max_tokens` is required".into());
            }
            let Some(messages) = body.get("messages").and_then(Value::as_array) else {
                return Err("`messages` must be an array".into());
            };
            if messages
                .iter()
                .any(|m| m.get("role").and_then(Value::as_str) == Some("system"))
            {
                return Err(
                    "`system` is not a valid message role: put the system prompt at the top level"
                        .into(),
                );
            }
        }
        Endpoint::OpenAiEmbeddings => {
            embedding_inputs(body)?;
        }
    }
    Ok(())
}

async fn handle(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let mut header_map: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in &headers {
        let v = String::from_utf8_lossy(value.as_bytes()).into_owned();
        header_map
            .entry(name.as_str().to_ascii_lowercase())
            .and_modify(|e| {
                e.push_str(", ");
                e.push_str(&v);
            })
            .or_insert(v);
    }
    let raw_body = String::from_utf8_lossy(&bytes).into_owned();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let req = RecordedRequest {
        method: method.as_str().to_string(),
        path: uri.path().to_string(),
        headers: header_map,
        body,
        raw_body,
    };
    let seq = {
        let mut inner = shared.lock();
        inner.requests.push(req.clone());
        inner.seq += 1;
        inner.seq
    };

    let endpoint = match (method, req.path.as_str()) {
        (Method::POST, "/v1/chat/completions") => Endpoint::OpenAiChat,
        (Method::POST, "/v1/messages") => Endpoint::AnthropicMessages,
        (Method::POST, "/v1/embeddings") => Endpoint::OpenAiEmbeddings,
        (m, p) => {
            return json_response(
                404,
                &error_body(&format!(
                    "no route for {m} {p}: use POST /v1/chat/completions, /v1/messages or /v1/embeddings"
                )),
                &[],
            );
        }
    };
    if let Err(message) = validate(endpoint, &req) {
        return bad_request(&message);
    }

    let (reply, dims) = pick_reply(&shared, endpoint, &req);
    let Some(reply) = reply else {
        return json_response(
            500,
            &error_body(
                "the script is empty and no default reply is set: push a Reply, or call set_default or respond_with",
            ),
            &[],
        );
    };
    if let Some(d) = reply.delay {
        tokio::time::sleep(d).await;
    }
    let rendered = render::render(&reply, endpoint, seq, &req.body, dims);
    json_response(rendered.status, &rendered.body, &reply.headers)
}

fn pick_reply(
    shared: &Shared,
    endpoint: Endpoint,
    req: &RecordedRequest,
) -> (Option<Reply>, usize) {
    let responder = {
        let mut inner = shared.lock();
        let dims = inner.dims;
        if endpoint == Endpoint::OpenAiEmbeddings {
            let scripted = if inner.script.front().is_some_and(Reply::fits_embeddings) {
                inner.script.pop_front()
            } else {
                None
            };
            return (
                Some(scripted.unwrap_or_else(Reply::hashed_embeddings)),
                dims,
            );
        }
        if inner.script.front().is_some_and(Reply::fits_chat) {
            return (inner.script.pop_front(), dims);
        }
        match inner.responder.clone() {
            Some(r) => (r, dims),
            None => return (inner.default.clone(), dims),
        }
    };
    // The responder runs outside the lock: a slow responder must not hold
    // up recording of concurrent requests.
    let (f, dims) = responder;
    (Some(f(req)), dims)
}

impl ScriptedServer {
    /// The `mnemo` flags that make this server the chat model of an engine
    /// command (`consolidate`, `compact`, `context`, `new`, `chat`, `run`).
    pub fn model_flags(&self) -> Vec<String> {
        [
            "--provider",
            "openai",
            "--base-url",
            &self.openai_base(),
            "--model",
            "test-model",
        ]
        .map(String::from)
        .to_vec()
    }
}

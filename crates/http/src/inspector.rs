//! The memory inspector's page: one HTML file, its script and its style,
//! compiled into the binary (no CDN, nothing fetched from elsewhere), so it
//! works offline. The page holds no data: each view asks the API, with the
//! token the page was opened with, and draws what comes back as text
//! (never as markup), under a content security policy that runs no script
//! but its own.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

const INDEX_HTML: &str = include_str!("../inspector/index.html");
const APP_JS: &str = include_str!("../inspector/app.js");
const APP_CSS: &str = include_str!("../inspector/app.css");

/// Scripts, styles and connections of the page's own origin only; no
/// frames, no plugins, no inline script.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/// The page's routes: `/` (and, on a multi-tenant server, each workspace's
/// `/v1/workspaces/{id}/`), and its script and style under `/inspector/`.
pub(crate) fn pages(tenants: bool) -> Router {
    let mut router = Router::new()
        .route("/", get(index))
        .route("/inspector/app.js", get(script))
        .route("/inspector/app.css", get(style));
    if tenants {
        router = router.route("/v1/workspaces/{id}/", get(index));
    }
    router.method_not_allowed_fallback(crate::routes::method_not_allowed)
}

async fn index() -> Response {
    asset(INDEX_HTML, "text/html; charset=utf-8")
}

async fn script() -> Response {
    asset(APP_JS, "text/javascript; charset=utf-8")
}

async fn style() -> Response {
    asset(APP_CSS, "text/css; charset=utf-8")
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    let mut resp = (StatusCode::OK, body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

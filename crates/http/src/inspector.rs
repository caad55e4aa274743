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
/// `/` of a server of many workspaces: the inspector is each workspace's,
/// and a page whose calls all 404 would only puzzle; this one says which
/// address to open.
const WORKSPACES_HTML: &str = include_str!("../inspector/workspaces.html");
const APP_JS: &str = include_str!("../inspector/app.js");
const APP_CSS: &str = include_str!("../inspector/app.css");

/// Scripts, styles and connections of the page's own origin only; no
/// frames, no plugins, no inline script.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/// The page's routes: `/` (on a multi-tenant server, each workspace's
/// `/v1/workspaces/{id}/`, and at `/` a page saying so), and its script
/// and style under `/inspector/`.
pub(crate) fn pages(tenants: bool) -> Router {
    let mut router = Router::new()
        .route("/inspector/app.js", get(script))
        .route("/inspector/app.css", get(style));
    router = if tenants {
        router
            .route("/", get(workspaces))
            .route("/v1/workspaces/{id}/", get(index))
    } else {
        router.route("/", get(index))
    };
    router.method_not_allowed_fallback(crate::routes::method_not_allowed)
}

async fn index() -> Response {
    asset(INDEX_HTML, "text/html; charset=utf-8")
}

async fn workspaces() -> Response {
    asset(WORKSPACES_HTML, "text/html; charset=utf-8")
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use tower::ServiceExt as _;

    async fn page(tenants: bool, path: &str) -> (u16, String) {
        let req = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        let resp = pages(tenants).oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    /// One workspace: `/` is the inspector. Many: `/` says which address
    /// opens a workspace's, and that address is the inspector.
    #[tokio::test]
    async fn the_root_of_a_server_of_many_workspaces_names_their_pages() {
        let (status, one) = page(false, "/").await;
        assert_eq!(status, 200);
        assert!(one.contains("/inspector/app.js"), "{one}");
        let (status, many) = page(true, "/").await;
        assert_eq!(status, 200);
        assert!(many.contains("/v1/workspaces/ID/"), "{many}");
        assert!(!many.contains("app.js"), "{many}");
        let (status, ana) = page(true, "/v1/workspaces/ana/").await;
        assert_eq!(status, 200);
        assert!(ana.contains("/inspector/app.js"), "{ana}");
    }
}

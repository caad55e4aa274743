//! TLS to the index database, with libpq's `sslmode` and `sslrootcert`.
//!
//! The test server (`MNEMO_TEST_POSTGRES_URL`) speaks plain TCP, so each
//! test puts a TLS front in front of it on loopback, as a managed
//! database or a `pgbouncer` with TLS would: it answers PostgreSQL's
//! `SSLRequest` with `S`, completes a real TLS handshake with a
//! certificate made for the test, then relays the session to the server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mnemo_core::{Embedder, Workspace};
use mnemo_embed::HashEmbedder;
use mnemo_index::{IndexSettings, MemoryIndex, SearchRequest};
use mnemo_index_postgres::{PostgresBackend, PostgresOptions, PostgresStore};
use mnemo_test_support::postgres::{fresh_schema, test_url};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// PostgreSQL's `SSLRequest`: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

/// A certificate authority of the test, and a server certificate it
/// signed for `names`.
struct Certs {
    ca_pem: String,
    server: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

fn certs(names: &[&str]) -> Certs {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "mnemo test CA");
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let server = CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    Certs {
        ca_pem: ca.pem(),
        server: server.der().clone(),
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    }
}

/// A TLS front of the test server on a port of its own; counts the
/// sessions that completed a handshake.
struct Front {
    port: u16,
    sessions: Arc<AtomicUsize>,
    _rt: tokio::runtime::Runtime,
}

fn front(upstream: SocketAddr, certs: &Certs) -> Front {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![certs.server.clone()], certs.key.clone_key())
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let sessions = Arc::new(AtomicUsize::new(0));
    let counted = sessions.clone();
    rt.spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let (acceptor, counted) = (acceptor.clone(), counted.clone());
            tokio::spawn(async move {
                let mut first = [0u8; 8];
                if s.read_exact(&mut first).await.is_err() || first != SSL_REQUEST {
                    return; // TLS only: a plain start-up is hung up on.
                }
                if s.write_all(b"S").await.is_err() {
                    return;
                }
                let Ok(mut tls) = acceptor.accept(s).await else {
                    return;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                let Ok(mut up) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
            });
        }
    });
    Front {
        port,
        sessions,
        _rt: rt,
    }
}

/// The test server's address, and its URL with the host and port of
/// `port` and `query` appended.
fn server_and_url(url: &str, host: &str, port: u16, query: &str) -> (SocketAddr, String) {
    let config = tokio_postgres::Config::from_str(url).unwrap();
    let upstream_host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        other => panic!("the test server must be on TCP, not {other:?}"),
    };
    let upstream_port = config.get_ports().first().copied().unwrap_or(5432);
    let addr: SocketAddr = format!("{upstream_host}:{upstream_port}").parse().unwrap();
    let user = config.get_user().unwrap_or("postgres");
    let password = config
        .get_password()
        .map(|p| format!(":{}", String::from_utf8_lossy(p)))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or("postgres");
    (
        addr,
        format!("postgres://{user}{password}@{host}:{port}/{db}?{query}"),
    )
}

/// A workspace with one memory file.
fn workspace(dir: &Path) -> Workspace {
    std::fs::create_dir_all(dir.join("memory")).unwrap();
    std::fs::write(
        dir.join("memory/2026-11-03.md"),
        "# 2026-11-03\n\n- The build broke with ERR-9081 after the upgrade.\n",
    )
    .unwrap();
    Workspace::new(dir)
}

fn open(opts: &PostgresOptions) -> mnemo_index::Result<PostgresBackend> {
    let e = HashEmbedder::default();
    PostgresBackend::open(opts, Some((e.id(), e.dims())))
}

#[test]
fn verify_full_indexes_and_searches_over_tls() {
    let Some(url) = test_url() else { return };
    let certs = certs(&["localhost", "127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &certs.ca_pem).unwrap();
    let (upstream, _) = server_and_url(&url, "", 0, "");
    let front = front(upstream, &certs);
    let query = format!("sslmode=verify-full&sslrootcert={}", ca.display());
    let (_, tls_url) = server_and_url(&url, "127.0.0.1", front.port, &query);
    let opts = PostgresOptions {
        url: tls_url,
        schema: fresh_schema(),
    };

    let ws_dir = tempfile::tempdir().unwrap();
    let ws = workspace(ws_dir.path());
    let embedder = Arc::new(HashEmbedder::default());
    let model = Some((embedder.id(), embedder.dims()));
    let store = PostgresStore::open(&opts, model).unwrap();
    let index = MemoryIndex::with_store(
        &ws,
        IndexSettings::default(),
        Some(embedder),
        Arc::new(store),
    )
    .unwrap();
    index.sync(&|_| {}).unwrap();
    let found = index.search(&SearchRequest::new("ERR-9081")).unwrap();
    assert_eq!(found.results[0].path, "memory/2026-11-03.md");
    assert!(
        front.sessions.load(Ordering::SeqCst) >= 1,
        "every session went through the TLS front"
    );
    drop(index);
    PostgresStore::drop_index(&PostgresOptions {
        url,
        schema: opts.schema,
    })
    .unwrap();
}

#[test]
fn a_certificate_the_roots_do_not_vouch_for_is_refused() {
    let Some(url) = test_url() else { return };
    let certs = certs(&["127.0.0.1"]);
    let other = self::certs(&["127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("other-ca.pem");
    std::fs::write(&ca, &other.ca_pem).unwrap();
    let (upstream, _) = server_and_url(&url, "", 0, "");
    let front = front(upstream, &certs);
    for mode in ["verify-full", "verify-ca", "require"] {
        let query = format!("sslmode={mode}&sslrootcert={}", ca.display());
        let (_, tls_url) = server_and_url(&url, "127.0.0.1", front.port, &query);
        let e = open(&PostgresOptions {
            url: tls_url,
            schema: fresh_schema(),
        })
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains("cannot connect to the index database at postgres://")
                && e.contains("certificate")
                && e.contains("sslrootcert"),
            "{mode}: {e}"
        );
    }
    assert_eq!(front.sessions.load(Ordering::SeqCst), 0);
}

#[test]
fn verify_ca_checks_the_chain_and_verify_full_the_name_too() {
    let Some(url) = test_url() else { return };
    // A certificate for another host name than the one connected to.
    let certs = certs(&["db.example"]);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &certs.ca_pem).unwrap();
    let (upstream, _) = server_and_url(&url, "", 0, "");
    let front = front(upstream, &certs);
    let with = |mode: &str| {
        let query = format!("sslmode={mode}&sslrootcert={}", ca.display());
        let (_, tls_url) = server_and_url(&url, "127.0.0.1", front.port, &query);
        PostgresOptions {
            url: tls_url,
            schema: fresh_schema(),
        }
    };
    let sessions = || front.sessions.load(Ordering::SeqCst);
    let ca_only = with("verify-ca");
    open(&ca_only).unwrap();
    let _ = PostgresBackend::drop_schema(&ca_only);
    let after_ca = sessions();
    assert!(after_ca >= 1);
    let e = open(&with("verify-full")).err().unwrap().to_string();
    assert!(e.contains("certificate") && e.contains("db.example"), "{e}");
    assert_eq!(sessions(), after_ca);
    // `require` without a root file encrypts and takes the certificate
    // as it is (libpq's rule).
    let (_, plain_check) = server_and_url(&url, "127.0.0.1", front.port, "sslmode=require");
    let opts = PostgresOptions {
        url: plain_check,
        schema: fresh_schema(),
    };
    open(&opts).unwrap();
    let _ = PostgresBackend::drop_schema(&opts);
    assert!(sessions() > after_ca);
}

#[test]
fn require_against_a_server_without_tls_says_what_to_change() {
    let Some(url) = test_url() else { return };
    let sep = if url.contains('?') { '&' } else { '?' };
    let e = open(&PostgresOptions {
        url: format!("{url}{sep}sslmode=require"),
        schema: fresh_schema(),
    })
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("TLS") && e.contains("sslmode=disable"), "{e}");
    // The default (`prefer`) falls back to plain TCP.
    let opts = PostgresOptions {
        url,
        schema: fresh_schema(),
    };
    open(&opts).unwrap();
    let _ = PostgresBackend::drop_schema(&opts);
}

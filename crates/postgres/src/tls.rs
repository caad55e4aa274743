//! TLS to the database, with libpq's `sslmode` and `sslrootcert`.
//!
//! `tokio-postgres` reads `sslmode=disable|prefer|require` only, and
//! refuses `verify-ca`, `verify-full` and `sslrootcert`: the URL a managed
//! database hands out often has them. So [`split`] takes those two
//! settings out of the URL before the client reads the rest, and
//! [`Tls::connector`] builds the rustls configuration that does what libpq
//! does with them:
//!
//! | `sslmode` | encrypted | certificate checked |
//! |---|---|---|
//! | `disable` | never | - |
//! | `allow`, `prefer` (the default) | when the server offers it | only with `sslrootcert` |
//! | `require` | always | only with `sslrootcert` |
//! | `verify-ca` | always | its chain, not its host name |
//! | `verify-full` | always | its chain and host name |
//!
//! The roots are the file `sslrootcert` names (PEM), or the system's
//! certificates for `verify-ca` / `verify-full` without one (and for
//! `sslrootcert=system`, as in PostgreSQL 16).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use tokio_postgres::config::SslMode;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it (`allow` and `prefer`).
    Prefer,
    /// TLS or no connection.
    Require,
    /// TLS with the certificate's chain checked.
    VerifyCa,
    /// TLS with the certificate's chain and host name checked.
    VerifyFull,
}

/// Where the trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// No `sslrootcert`.
    Default,
    /// `sslrootcert=system`.
    System,
    /// `sslrootcert=PATH`: a PEM file of one or more certificates.
    File(PathBuf),
}

/// The TLS settings of a connection URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    /// The mode.
    pub mode: Mode,
    /// The roots.
    pub roots: Roots,
}

impl Default for Tls {
    fn default() -> Self {
        Tls {
            mode: Mode::Prefer,
            roots: Roots::Default,
        }
    }
}

/// Takes `sslmode` and `sslrootcert` out of `url` (a `postgres://` URL or
/// a libpq `key=value` string): the URL left for `tokio-postgres`, with
/// the mode it knows (`verify-*` become `require`), and the settings.
pub fn split(url: &str) -> Result<(String, Tls), String> {
    let mut tls = Tls::default();
    let mut take = |key: &str, value: &str| -> Result<bool, String> {
        match key {
            "sslmode" => {
                tls.mode = match value {
                    "disable" => Mode::Disable,
                    "allow" | "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    other => {
                        return Err(format!(
                            "sslmode={other} is not a TLS mode: use disable, allow, prefer, \
                             require, verify-ca or verify-full"
                        ))
                    }
                };
                Ok(true)
            }
            "sslrootcert" => {
                tls.roots = match value {
                    "system" => Roots::System,
                    path => Roots::File(PathBuf::from(percent_decode(path))),
                };
                Ok(true)
            }
            _ => Ok(false),
        }
    };
    let rest = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        match url.split_once('?') {
            None => url.to_string(),
            Some((base, query)) => {
                let mut kept = Vec::new();
                for pair in query.split('&') {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    if !take(k, v)? {
                        kept.push(pair);
                    }
                }
                if kept.is_empty() {
                    base.to_string()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
        }
    } else {
        // key=value pairs; values with spaces are quoted, which these two
        // settings never need.
        let mut kept = Vec::new();
        for pair in url.split_whitespace() {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if !take(k.trim(), v.trim_matches('\''))? {
                kept.push(pair);
            }
        }
        kept.join(" ")
    };
    Ok((rest, tls))
}

/// `%XX` escapes of a URL's query value decoded (a path may hold spaces).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Tls {
    /// The mode `tokio-postgres` runs the handshake with.
    pub fn ssl_mode(&self) -> SslMode {
        match self.mode {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }

    /// The rustls configuration for these settings; `None` for `disable`.
    /// The error says which file or store could not be read.
    pub fn connector(&self) -> Result<Option<tokio_postgres_rustls::MakeRustlsConnect>, String> {
        if self.mode == Mode::Disable {
            return Ok(None);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS cannot be set up: {e}"))?;
        let check = match (&self.roots, self.mode) {
            (Roots::Default, Mode::Prefer | Mode::Require) => None,
            (Roots::Default | Roots::System, _) => Some(system_roots()?),
            (Roots::File(path), _) => Some(file_roots(path)?),
        };
        let chain = match check {
            None => None,
            Some(roots) => Some(
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| format!("TLS cannot be set up: {e}"))?,
            ),
        };
        let config = match chain {
            Some(webpki) if self.mode == Mode::VerifyFull => {
                builder.with_webpki_verifier(webpki).with_no_client_auth()
            }
            chain => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Lenient { chain, provider }))
                .with_no_client_auth(),
        };
        Ok(Some(tokio_postgres_rustls::MakeRustlsConnect::new(config)))
    }
}

fn file_roots(path: &std::path::Path) -> Result<RootCertStore, String> {
    let bad = |e: &dyn std::fmt::Display| {
        format!(
            "cannot read the root certificates of sslrootcert={}: {e} (give a PEM file of the \
             server's CA, or sslrootcert=system for the system's)",
            path.display()
        )
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(&e))? {
        roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
    }
    if roots.is_empty() {
        return Err(bad(&"no certificate in the file"));
    }
    Ok(roots)
}

fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        return Err(
            "no system root certificates were found to check the database's certificate: \
             install the ca-certificates package, or give the CA with sslrootcert=PATH"
                .into(),
        );
    }
    Ok(roots)
}

/// libpq's checks below `verify-full`: the certificate's chain against
/// the roots when there are some (`verify-ca`, or a root file), nothing
/// without (`prefer`, `require`), and never its host name. The handshake's
/// signatures are always checked, so the peer holds the certificate's key.
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algs)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_settings_leave_the_url() {
        let (rest, tls) = split(
            "postgres://u:p@db.example:5432/mem?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fmy%20ca.pem",
        )
        .unwrap();
        assert_eq!(
            rest,
            "postgres://u:p@db.example:5432/mem?application_name=x"
        );
        assert_eq!(tls.mode, Mode::VerifyFull);
        assert_eq!(tls.roots, Roots::File("/etc/my ca.pem".into()));
        assert_eq!(tls.ssl_mode(), SslMode::Require);

        let (rest, tls) = split("host=db user=u sslmode=require sslrootcert=system").unwrap();
        assert_eq!(rest, "host=db user=u");
        assert_eq!((tls.mode, tls.roots), (Mode::Require, Roots::System));

        let (rest, tls) = split("postgres://u@h/d").unwrap();
        assert_eq!(rest, "postgres://u@h/d");
        assert_eq!(tls, Tls::default());
        assert_eq!(
            split("postgres://h/d?sslmode=disable").unwrap().1.mode,
            Mode::Disable
        );
    }

    #[test]
    fn a_wrong_mode_or_root_file_is_a_clear_error() {
        let e = split("postgres://h/d?sslmode=verify").unwrap_err();
        assert!(e.contains("verify-full"), "{e}");
        let tls = Tls {
            mode: Mode::VerifyFull,
            roots: Roots::File("/nonexistent/ca.pem".into()),
        };
        let e = tls.connector().err().unwrap();
        assert!(e.contains("sslrootcert=/nonexistent/ca.pem"), "{e}");
        assert!(Tls {
            mode: Mode::Disable,
            roots: Roots::Default
        }
        .connector()
        .unwrap()
        .is_none());
        assert!(Tls::default().connector().unwrap().is_some());
    }
}

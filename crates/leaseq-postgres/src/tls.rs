//! TLS for every connection the store makes (the pool, the notification listener, the
//! `try_receive` thread): one [`MakeRustlsConnect`] built at open from the connection
//! string's `sslmode`, `sslrootcert`, `sslcert` and `sslkey` (libpq's meaning), and the
//! mapping of a failed handshake to a typed [`OpenError`].
//!
//! The stack: rustls (pure Rust, memory-safe, the `ring` provider: no C toolchain, cmake
//! or nasm needed) through `tokio-postgres-rustls`, the maintained connector for
//! `tokio-postgres` (it also gives SCRAM channel binding). Roots: the `sslrootcert` file,
//! or the platform's store (`rustls-native-certs`) when it says `system` or is absent.
//!
//! | `sslmode` | encrypted | chain checked | host name checked |
//! |---|---|---|---|
//! | `disable` | no | - | - |
//! | `prefer` (default) | if the server offers TLS | only with `sslrootcert` | no |
//! | `require` | yes | only with `sslrootcert` (as libpq) | no |
//! | `verify-ca` | yes | yes | no |
//! | `verify-full` | yes | yes | yes |

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use rustls::{Error as TlsError, SignatureScheme};
pub(crate) use tokio_postgres_rustls::MakeRustlsConnect;

use crate::conninfo::{SslMode, TlsParams};
use crate::error::OpenError;

/// The connection string `url` parsed: `tokio-postgres`'s configuration and the TLS
/// parameters it does not know.
pub(crate) fn parse(url: &str) -> Result<(tokio_postgres::Config, TlsParams), OpenError> {
    let (rest, params) =
        crate::conninfo::split(url).map_err(|e| OpenError::BadConnectionString(e.to_string()))?;
    let config = rest.parse().map_err(OpenError::BadUrl)?;
    Ok((config, params))
}

/// The TLS parameters of a configuration parsed by the caller (`open_with`): its
/// `sslmode`, no `sslrootcert` (so `prefer` and `require` do not verify, as libpq).
pub(crate) fn params_of(config: &tokio_postgres::Config) -> TlsParams {
    let mode = match config.get_ssl_mode() {
        tokio_postgres::config::SslMode::Disable => SslMode::Disable,
        tokio_postgres::config::SslMode::Require => SslMode::Require,
        _ => SslMode::Prefer,
    };
    TlsParams {
        mode,
        ..TlsParams::default()
    }
}

/// The connector for `params` (never used under `sslmode=disable`, which `tokio-postgres`
/// is told too). Refused with [`OpenError::Tls`] when a file it names cannot be read.
pub(crate) fn connector(params: &TlsParams) -> Result<MakeRustlsConnect, OpenError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verify_chain = matches!(params.mode, SslMode::VerifyCa | SslMode::VerifyFull)
        || params.root_cert.is_some();
    let verifier: Arc<dyn ServerCertVerifier> = if verify_chain && params.mode != SslMode::Disable {
        let roots = Arc::new(roots(params.root_cert.as_deref())?);
        let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| OpenError::Tls(format!("cannot use the trusted roots: {e}")))?;
        if params.mode == SslMode::VerifyFull {
            webpki
        } else {
            Arc::new(ChainOnly(webpki))
        }
    } else {
        Arc::new(Unverified(provider.clone()))
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| OpenError::Tls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match (&params.cert, &params.key) {
        (None, None) => builder.with_no_client_auth(),
        (Some(cert), Some(key)) => {
            let chain = read_certs(cert, "sslcert")?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| OpenError::Tls(format!("cannot read sslkey {key:?}: {e}")))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| OpenError::Tls(format!("unusable client certificate: {e}")))?
        }
        _ => {
            return Err(OpenError::Tls(
                "sslcert and sslkey go together: give both or neither".into(),
            ))
        }
    };
    Ok(MakeRustlsConnect::new(config))
}

/// The trusted roots: the `sslrootcert` file, else `~/.postgresql/root.crt` if present (as
/// libpq), else (or with `sslrootcert=system`) the platform's store.
fn roots(root_cert: Option<&str>) -> Result<RootCertStore, OpenError> {
    let default = std::env::var_os("HOME")
        .map(|h| std::path::Path::new(&h).join(".postgresql/root.crt"))
        .filter(|p| p.exists())
        .and_then(|p| p.to_str().map(str::to_string));
    let mut store = RootCertStore::empty();
    match root_cert.map(str::to_string).or(default) {
        Some(path) if path != "system" => {
            for cert in read_certs(&path, "sslrootcert")? {
                store
                    .add(cert)
                    .map_err(|e| OpenError::Tls(format!("bad certificate in {path:?}: {e}")))?;
            }
        }
        _ => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(OpenError::Tls(
                    "no trusted roots: the platform has none; name a CA file with sslrootcert"
                        .into(),
                ));
            }
        }
    }
    Ok(store)
}

/// The PEM certificates of `path` (at least one).
fn read_certs(path: &str, what: &str) -> Result<Vec<CertificateDer<'static>>, OpenError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| OpenError::Tls(format!("cannot read {what} {path:?}: {e}")))?;
    if certs.is_empty() {
        return Err(OpenError::Tls(format!(
            "{what} {path:?} holds no PEM certificate"
        )));
    }
    Ok(certs)
}

/// The typed error for a connection that failed in TLS (by its kind), if it did:
/// `connect_error.rs` types every other failure.
pub(crate) fn tls_failure(e: &(dyn std::error::Error + 'static)) -> Option<OpenError> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        // An `io::Error` wrapping a rustls error answers `source()` with the rustls error's
        // own source: look inside it by hand.
        let inner = c
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|i| i as &(dyn std::error::Error + 'static));
        if let Some(tls) = c
            .downcast_ref::<TlsError>()
            .or_else(|| inner.and_then(|i| i.downcast_ref::<TlsError>()))
        {
            return Some(from_rustls(tls));
        }
        if c.to_string() == "server does not support TLS" {
            return Some(OpenError::ServerWithoutTls);
        }
        cause = c.source();
    }
    None
}

fn from_rustls(e: &TlsError) -> OpenError {
    match e {
        TlsError::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => OpenError::NameMismatch(e.to_string()),
        TlsError::InvalidCertificate(_) => OpenError::UntrustedCertificate(e.to_string()),
        other => OpenError::Tls(other.to_string()),
    }
}

/// `verify-ca`: the chain checked by webpki, a certificate not naming the host accepted
/// (webpki checks the name last, after the chain).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(TlsError::InvalidCertificate(
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
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.0.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.0.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` without `sslrootcert`: encrypted, any certificate accepted (as
/// libpq); the handshake's signatures are still checked.
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

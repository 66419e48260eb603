//! The rustls client configuration, with the ring crypto provider chosen explicitly (no
//! process-wide default provider, no aws-lc-rs: cross-compiling for ARM gateways needs no C
//! toolchain beyond what ring needs).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::config::MqttTls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};

use crate::Error;

/// The system CA bundle used when no `ca_file` is given (Debian/Ubuntu path).
pub const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

fn certs(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::io(format!("mqtt {what} file {}", path.display()), &e))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls_error(format!("{what} {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(tls_error(format!(
            "{what} {}: no PEM certificate found",
            path.display()
        )));
    }
    Ok(certs)
}

/// Builds the client configuration: trusted CAs and, optionally, a client certificate
/// (`None`: the system roots, no client certificate).
pub fn client_config(opts: Option<&MqttTls>) -> Result<Arc<ClientConfig>, Error> {
    let ca_path = opts
        .and_then(|t| t.ca_file.clone())
        .unwrap_or_else(|| PathBuf::from(SYSTEM_CA_BUNDLE));
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(certs("ca_file", &ca_path)?);
    if added == 0 {
        return Err(tls_error(format!(
            "ca_file {}: no usable CA certificate",
            ca_path.display()
        )));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(e.to_string()))?
        .with_root_certificates(roots);
    let config = match opts.and_then(|t| t.client_auth.as_ref()) {
        Some((cert, key)) => {
            let chain = certs("client_cert", cert)?;
            let key_bytes = std::fs::read(key)
                .map_err(|e| Error::io(format!("mqtt client_key file {}", key.display()), &e))?;
            let key_der = PrivateKeyDer::from_pem_slice(&key_bytes)
                .map_err(|e| tls_error(format!("client_key {}: {e}", key.display())))?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| tls_error(format!("client certificate: {e}")))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// A TLS configuration problem.
fn tls_error(message: String) -> Error {
    Error::Client {
        client: "mqtt tls",
        message,
    }
}

//! TLS for `clickhouse+https://` stores, by rustls (the `ring` provider; TLS 1.2 and 1.3):
//! the server's certificate is verified against the system's roots (read as OpenSSL would:
//! `SSL_CERT_FILE`, `SSL_CERT_DIR`, else the distribution's bundle), or against the CA
//! certificates of a PEM file alone when one is given. Nothing here ever skips verification.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};

/// The certificates of a CA file, or a sentence saying why there are none.
pub(crate) fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read the CA file {}: {e}", path.display()))?;
    let mut certs = Vec::new();
    for c in CertificateDer::pem_slice_iter(&bytes) {
        certs.push(c.map_err(|e| format!("the CA file {}: not PEM certificates: {e}", path.display()))?);
    }
    if certs.is_empty() {
        return Err(format!(
            "the CA file {}: no certificate in it (expected PEM, -----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    Ok(certs)
}

fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found.errors.first().map_or(String::new(), |e| format!(" ({e})"));
        return Err(format!(
            "no CA certificate found on this system{why}: install ca-certificates, or name the \
             server's CA with KFLAME_CLICKHOUSE_CA_FILE=FILE.pem (or ca_file= in the URL)"
        ));
    }
    Ok(roots)
}

/// The client configuration for a CA file (`None`: the system's roots), made once per
/// process and file.
pub(crate) fn config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    type Cache = Mutex<Vec<(Option<std::path::PathBuf>, Arc<ClientConfig>)>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    let key = ca_file.map(Path::to_path_buf);
    if let Some((_, c)) = cache.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|(k, _)| *k == key) {
        return Ok(c.clone());
    }
    let roots = match ca_file {
        Some(path) => {
            let mut roots = RootCertStore::empty();
            for c in read_ca_file(path)? {
                roots.add(c).map_err(|e| format!("the CA file {}: {e}", path.display()))?;
            }
            roots
        }
        None => system_roots()?,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let config = Arc::new(config);
    cache.lock().unwrap_or_else(|p| p.into_inner()).push((key, config.clone()));
    Ok(config)
}

/// Whether a failed handshake step heard TLS from the server (a certificate, an alert):
/// false when what came back was no TLS at all, or nothing (closed, reset, timed out).
pub(crate) fn heard_tls(e: &std::io::Error) -> bool {
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. }) | None => false,
        Some(_) => true,
    }
}

/// Whether the server at `addr` speaks TLS: a handshake, trusting no CA, gets as far as the
/// server's certificate (or an alert of TLS). Nothing but the client's hello is sent, and
/// the answer is waited for `timeout` at most. Asked when a plain HTTP request got no answer
/// at all, which is how ClickHouse's https_port drops one.
pub(crate) fn speaks_tls(addr: &std::net::SocketAddr, host: &str, timeout: std::time::Duration) -> bool {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let Ok(builder) = ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions()
    else {
        return false;
    };
    let config = Arc::new(builder.with_root_certificates(RootCertStore::empty()).with_no_client_auth());
    let name = server_name(host)
        .unwrap_or_else(|_| ServerName::IpAddress(rustls::pki_types::IpAddr::from(addr.ip())));
    let Ok(mut conn) = rustls::ClientConnection::new(config, name) else { return false };
    let Ok(mut sock) = std::net::TcpStream::connect_timeout(addr, timeout) else { return false };
    if sock.set_read_timeout(Some(timeout)).is_err() || sock.set_write_timeout(Some(timeout)).is_err() {
        return false;
    }
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut sock) {
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return heard_tls(&e);
        }
    }
    true
}

/// The name a server's certificate must carry: its DNS name or its IP address.
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string())
        .map_err(|e| format!("{host:?} is no DNS name or address for TLS: {e}"))
}

/// What a refused handshake means for whoever runs kflame, and what to do about it.
pub(crate) fn explain(e: &rustls::Error, host: &str, ca_file: Option<&Path>) -> String {
    use rustls::CertificateError as C;
    let trusted = match ca_file {
        Some(p) => format!("the CA file {}", p.display()),
        None => "the system's CA certificates".to_string(),
    };
    let fix = match ca_file {
        Some(_) => "give the CA that signed the server's certificate",
        None => "give the server's CA with KFLAME_CLICKHOUSE_CA_FILE=FILE.pem (or ca_file= in the URL)",
    };
    match e {
        rustls::Error::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => {
            format!("TLS: the server's certificate is not signed by a CA in {trusted}: {fix}")
        }
        rustls::Error::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            format!("TLS: the server's certificate is not for {host:?} (its names do not include it)")
        }
        rustls::Error::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            "TLS: the server's certificate has expired".to_string()
        }
        rustls::Error::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => {
            "TLS: the server's certificate is not valid yet (is this machine's clock right?)".to_string()
        }
        rustls::Error::InvalidCertificate(c) => format!("TLS: the server's certificate was refused: {c:?}"),
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => format!(
            "TLS: the server did not answer in TLS ({e}); is the port ClickHouse's https_port? \
             (plain HTTP is clickhouse+http://)"
        ),
        e => format!("TLS: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_files_that_hold_no_certificate_are_refused() {
        let dir = std::env::temp_dir().join(format!("kflame-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        assert!(read_ca_file(&empty).unwrap_err().contains("no certificate in it"));
        let bad = dir.join("bad.pem");
        std::fs::write(&bad, "-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n").unwrap();
        assert!(read_ca_file(&bad).unwrap_err().contains("not PEM certificates"), "{:?}", read_ca_file(&bad));
        assert!(read_ca_file(&dir.join("none.pem")).unwrap_err().contains("cannot read the CA file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_and_addresses_are_server_names() {
        assert!(server_name("ch1.example.com").is_ok());
        assert!(server_name("127.0.0.1").is_ok());
        assert!(server_name("::1").is_ok());
        assert!(server_name("not a name").is_err());
    }
}

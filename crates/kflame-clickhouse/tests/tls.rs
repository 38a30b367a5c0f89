//! The store over HTTPS (`clickhouse+https://`) against Debian's `clickhouse-server` serving
//! its `https_port` on loopback with a certificate the test's own CA signed
//! (`rig::make_certificates`, the `openssl` command): a host's history written and read
//! back through TLS equals the SQLite store's of the same writes; the system's roots, a CA
//! that did not sign the certificate, and plain HTTP on the TLS port are refused with an
//! error that says which.

use std::path::PathBuf;

use kflame_clickhouse::rig::{self, Rig};
use kflame_clickhouse::{InitOptions, Location, Reader, Writer, WriterOptions, schema};
use kflame_store::{Kind, OpenMode, ProfileQuery, Query, Sqlite};

const T0: i64 = 1_764_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kflame-ch-tls-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn env<'a>(vars: &'a [(&'a str, String)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
}

#[test]
fn a_history_written_and_read_over_https_with_the_servers_ca() {
    let rig = Rig::start_tls(1).unwrap();
    let ca = rig.tls.as_ref().unwrap().ca.display().to_string();
    let vars =
        [("KFLAME_CLICKHOUSE_PASSWORD", rig.password.clone()), ("KFLAME_CLICKHOUSE_CA_FILE", ca.clone())];
    let loc = Location::parse_with(&rig.https_url(0, "fleet"), &env(&vars)).unwrap();
    assert!(loc.tls && loc.ca_file.is_some());
    assert!(loc.to_string().starts_with("clickhouse+https://default@127.0.0.1:"), "{loc}");
    schema::init(&kflame_clickhouse::http::Client::new(&loc), &loc, &InitOptions::default()).unwrap();

    // One host's real stacks over 40 s, written through TLS and into SQLite alike.
    let stacks = rig::fleet::real_stacks();
    let d = dir("history");
    let mut w = Writer::open(&loc, &d.join("spool.db"), WriterOptions::default()).unwrap();
    let written = rig::fleet::write_history(&mut w, "tls-host", 0, T0, 40, &stacks).unwrap();
    drop(w);
    let mut db = Sqlite::open(d.join("same.db"), OpenMode::Write).unwrap();
    assert_eq!(rig::fleet::write_history(&mut db, "tls-host", 0, T0, 40, &stacks).unwrap(), written);
    assert!(written > 0);

    let r = Reader::open(&loc).unwrap();
    assert_eq!(r.hosts().unwrap(), db.hosts().unwrap());
    let q = ProfileQuery::new(Kind::Cpu, T0, T0 + 3600 * SEC);
    let (a, b) = (r.profile(&q).unwrap(), db.profile(&q).unwrap());
    assert_eq!((a.samples, a.buckets), (b.samples, b.buckets));
    assert_eq!(a.stacks.in_output_order(), b.stacks.in_output_order());
    // By name too: the certificate is for localhost as well as for its addresses.
    let by_name = rig.https_url(0, "fleet").replace("127.0.0.1", "localhost");
    let r = Reader::open(&Location::parse_with(&by_name, &env(&vars)).unwrap()).unwrap();
    assert_eq!(r.profile(&q).unwrap().samples, b.samples);
    std::fs::remove_dir_all(&d).unwrap();
}

/// Why a writer refuses to open on `url` (with `vars` for its environment, spooling in
/// `spool`).
fn open_refused(url: &str, vars: &[(&str, String)], spool: &std::path::Path) -> String {
    let loc = Location::parse_with(url, &env(vars)).unwrap();
    Writer::open(&loc, spool, WriterOptions::default()).unwrap_err().to_string()
}

#[test]
fn https_without_the_servers_ca_or_on_the_wrong_port_is_refused_and_says_why() {
    let rig = Rig::start_tls(1).unwrap();
    let pw = [("KFLAME_CLICKHOUSE_PASSWORD", rig.password.clone())];
    // The system's roots do not hold the test's CA (a machine without any is refused too,
    // saying so; the CLI's test fixes the roots through OpenSSL's variables).
    let loc = Location::parse_with(&rig.https_url(0, "fleet"), &env(&pw)).unwrap();
    let e = Reader::open(&loc).unwrap_err().to_string();
    assert!(
        e.contains("not signed by a CA in the system's CA certificates")
            || e.contains("no CA certificate found on this system"),
        "{e}"
    );
    assert!(e.contains("KFLAME_CLICKHOUSE_CA_FILE"), "{e}");
    // A writer refuses to open on it rather than spool: nothing would ever get through.
    let d = dir("refused");
    let e = Writer::open(&loc, &d.join("spool.db"), WriterOptions::default()).unwrap_err().to_string();
    assert!(e.contains("not signed by a CA") || e.contains("no CA certificate found"), "{e}");
    // Another CA, given in the URL.
    let other = rig::make_certificates(&d.join("other"), "another").unwrap();
    let url = format!("{}?ca_file={}", rig.https_url(0, "fleet"), other.ca.display());
    let loc = Location::parse_with(&url, &env(&pw)).unwrap();
    let e = Reader::open(&loc).unwrap_err().to_string();
    assert!(e.contains(&format!("not signed by a CA in the CA file {}", other.ca.display())), "{e}");
    // A CA file that is no certificate, or is not there: refused before any connection.
    let e = Location::parse_with(
        &format!("{}?ca_file={}", rig.https_url(0, "x"), other.key.display()),
        &env(&pw),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no certificate in it"), "{e}");
    let e =
        Location::parse_with(&format!("{}?ca_file=/nonexistent/ca.pem", rig.https_url(0, "x")), &env(&pw))
            .unwrap_err()
            .to_string();
    assert!(e.contains("cannot read the CA file /nonexistent/ca.pem"), "{e}");
    // TLS to the plain HTTP port.
    let ca = [
        ("KFLAME_CLICKHOUSE_PASSWORD", rig.password.clone()),
        ("KFLAME_CLICKHOUSE_CA_FILE", rig.tls.as_ref().unwrap().ca.display().to_string()),
    ];
    let plain_port = format!("clickhouse+https://127.0.0.1:{}/fleet", rig.servers[0].http_port);
    // Its server answers the client's hello with an HTTP error, or waits for the rest of
    // what it reads as a request line, as the hello's random bytes fall: either way the
    // port is found to answer HTTP, and that is said.
    let e = Reader::open(&Location::parse_with(&plain_port, &env(&ca)).unwrap()).unwrap_err().to_string();
    let http_port = rig.servers[0].http_port;
    assert!(
        e.contains(&format!("127.0.0.1:{http_port} speaks plain HTTP, not TLS")) && e.contains("https_port"),
        "{e}"
    );
    let e = open_refused(&plain_port, &ca, &d.join("tls.db"));
    assert!(e.contains("speaks plain HTTP, not TLS"), "{e}");
    // Plain HTTP to the TLS port: the server drops the request unanswered, and answers a TLS
    // handshake. Said so, with the URL to use; a writer refuses to open on it rather than
    // spool what would never get through.
    let https_port = rig.servers[0].https_port.unwrap();
    let tls_port = format!("clickhouse+http://127.0.0.1:{https_port}/fleet");
    let e = Reader::open(&Location::parse_with(&tls_port, &env(&pw)).unwrap()).unwrap_err().to_string();
    let want = format!("127.0.0.1:{https_port} speaks TLS");
    assert!(
        e.contains(&want)
            && e.contains(&format!("use clickhouse+https://default@127.0.0.1:{https_port}/fleet")),
        "{e}"
    );
    let e = open_refused(&tls_port, &pw, &d.join("plain.db"));
    assert!(e.contains(&want), "{e}");
    // A port that drops requests and speaks no TLS either is still a server not reached.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    silent.set_nonblocking(true).unwrap();
    let dropper = std::thread::spawn(move || {
        // The request, then the handshake asked after it: each read a little of and dropped.
        let (end, mut taken) = (std::time::Instant::now() + std::time::Duration::from_secs(20), 0);
        while taken < 2 && std::time::Instant::now() < end {
            match silent.accept() {
                Ok((mut s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    let mut buf = [0u8; 512];
                    let _ = std::io::Read::read(&mut s, &mut buf);
                    taken += 1;
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
        taken
    });
    let e = Reader::open(&Location::parse(&format!("clickhouse+http://127.0.0.1:{port}/fleet")).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("unreachable") && e.contains("no answer to the request"), "{e}");
    assert_eq!(dropper.join().unwrap(), 2, "the request, and the handshake that asked whether it speaks TLS");
    std::fs::remove_dir_all(&d).unwrap();
}

//! A rig of real ClickHouse servers for tests and benchmarks: `clickhouse-server` processes
//! on loopback, on free ports, with their data in a temporary directory, a password, and a
//! `remote_servers` cluster (`kflame_rig`) with one shard per server. Servers can be stopped
//! and started again (an outage). Everything is removed when the rig is dropped.
//! [`Rig::start_tls`] serves HTTPS as well, with a certificate made for the rig by a CA of
//! its own (`openssl`, [`make_certificates`]).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::http::Client;
use crate::location::Location;

/// The jemalloc options ClickHouse's own Linux builds are compiled with, given to Debian's
/// build (which links the system jemalloc) through `MALLOC_CONF`.
pub const JEMALLOC_CONF: &str =
    "percpu_arena:percpu,oversize_threshold:0,muzzy_decay_ms:5000,dirty_decay_ms:5000";

/// The cluster name the rig's servers know.
pub const CLUSTER: &str = "kflame_rig";

/// One server of the rig.
#[derive(Debug)]
pub struct Server {
    child: Option<Child>,
    dir: PathBuf,
    /// Its HTTP port on 127.0.0.1.
    pub http_port: u16,
    /// Its native protocol port (what shards talk to each other on).
    pub tcp_port: u16,
    /// Its HTTPS port, when the rig serves TLS.
    pub https_port: Option<u16>,
}

/// A CA and a certificate it signed for `localhost`, `127.0.0.1` and `::1`.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The CA's certificate (PEM): what clients are given.
    pub ca: PathBuf,
    /// The server's certificate (PEM).
    pub cert: PathBuf,
    /// The server's key (PEM).
    pub key: PathBuf,
}

/// Makes a CA (`CN=<name> CA`) and a server certificate it signs, in `dir`, with the
/// `openssl` command. Each call makes a new CA: one call's CA does not verify another's.
pub fn make_certificates(dir: &Path, name: &str) -> Result<TlsFiles, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let run = |args: &[&str]| -> Result<(), String> {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("openssl (Debian: apt-get install openssl): {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("openssl {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
        }
    };
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    let ca_subject = format!("/CN={name} CA");
    run(&[
        &["req", "-x509"][..],
        &ec,
        &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", &ca_subject],
    ]
    .concat())?;
    run(&[&["req"][..], &ec, &["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"]]
        .concat())?;
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .map_err(|e| e.to_string())?;
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ])?;
    Ok(TlsFiles { ca: dir.join("ca.pem"), cert: dir.join("server.pem"), key: dir.join("server.key") })
}

/// Servers on loopback. Each server is killed when the thread that started it ends (and when
/// the rig is dropped): start, restart and drop a rig on one thread.
#[derive(Debug)]
pub struct Rig {
    /// The servers, shard 1 first.
    pub servers: Vec<Server>,
    /// The password of user `default`.
    pub password: String,
    /// The CA and certificate of a rig that serves HTTPS.
    pub tls: Option<TlsFiles>,
    root: PathBuf,
}

/// A server of the rig gets SIGKILL when the thread that started it ends: a test or bench
/// killed before it could drop its rig leaves no server behind.
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches no memory of the
    // parent; it runs in the child between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// The `clickhouse-server` binary, if installed.
pub fn server_binary() -> Option<PathBuf> {
    ["/usr/bin/clickhouse-server", "/usr/sbin/clickhouse-server", "/usr/local/bin/clickhouse-server"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

impl Rig {
    /// Starts `n` servers and waits until each answers (at most 60 s each). A port chosen
    /// free can be taken by another program before the server binds it: the rig is then
    /// started again on other ports (three times at most).
    pub fn start(n: usize) -> Result<Rig, String> {
        Rig::start_with(n, false)
    }

    /// [`Rig::start`], each server serving HTTPS too (`https_port`), with a certificate of
    /// [`make_certificates`] (the CA in `tls.ca`).
    pub fn start_tls(n: usize) -> Result<Rig, String> {
        Rig::start_with(n, true)
    }

    fn start_with(n: usize, tls: bool) -> Result<Rig, String> {
        let mut tries = 0;
        loop {
            tries += 1;
            match Rig::start_once(n, tls) {
                // Ports chosen free and taken meanwhile: by a server that could not bind
                // them, or by one that did not answer on them.
                Err(e)
                    if tries < 3
                        && (e.contains("Address already in use") || e.contains("did not answer")) =>
                {
                    continue;
                }
                r => return r,
            }
        }
    }

    fn start_once(n: usize, tls: bool) -> Result<Rig, String> {
        let bin = server_binary().ok_or(
            "clickhouse-server is not installed (Debian: apt-get install clickhouse-server; scripts/test does it)",
        )?;
        let root = std::env::temp_dir().join(format!(
            "kflame-ch-rig-{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
        ));
        let mut servers = Vec::new();
        for i in 0..n {
            let dir = root.join(format!("s{i}"));
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let https_port = if tls { Some(free_port()?) } else { None };
            servers.push(Server {
                child: None,
                dir,
                http_port: free_port()?,
                tcp_port: free_port()?,
                https_port,
            });
        }
        let tls = if tls { Some(make_certificates(&root.join("tls"), "kflame rig")?) } else { None };
        let mut rig = Rig { servers, password: format!("rig-{}", std::process::id()), tls, root };
        let shards: String = rig
            .servers
            .iter()
            .map(|s| format!("<shard><replica><host>127.0.0.1</host><port>{}</port><password>{}</password></replica></shard>", s.tcp_port, rig.password))
            .collect();
        for s in &rig.servers {
            let d = s.dir.display();
            let https = match (&rig.tls, s.https_port) {
                (Some(t), Some(port)) => format!(
                    "<https_port>{port}</https_port>\n  <openSSL><server><certificateFile>{}</certificateFile>\
                     <privateKeyFile>{}</privateKeyFile><verificationMode>none</verificationMode>\
                     <loadDefaultCAFile>false</loadDefaultCAFile><cacheSessions>true</cacheSessions>\
                     <disableProtocols>sslv2,sslv3,tlsv1,tlsv1_1</disableProtocols>\
                     <preferServerCiphers>true</preferServerCiphers></server></openSSL>",
                    t.cert.display(),
                    t.key.display()
                ),
                _ => String::new(),
            };
            std::fs::write(
                s.dir.join("config.xml"),
                format!(
                    r#"<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/log/server.log</log><errorlog>{d}/log/error.log</errorlog><size>50M</size><count>1</count></logger>
  <http_port>{}</http_port>
  <tcp_port>{}</tcp_port>
  {https}
  <listen_host>127.0.0.1</listen_host>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <remote_servers><{CLUSTER}>{shards}</{CLUSTER}></remote_servers>
</yandex>
"#,
                    s.http_port, s.tcp_port
                ),
            )
            .map_err(|e| e.to_string())?;
            std::fs::write(
                s.dir.join("users.xml"),
                format!(
                    r#"<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users><default><password>{}</password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
"#,
                    rig.password
                ),
            )
            .map_err(|e| e.to_string())?;
        }
        for i in 0..n {
            rig.start_server(&bin, i)?;
        }
        Ok(rig)
    }

    fn start_server(&mut self, bin: &Path, i: usize) -> Result<(), String> {
        let s = &mut self.servers[i];
        let log = std::fs::File::create(s.dir.join("stdout.log")).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(bin);
        cmd.arg(format!("--config-file={}", s.dir.join("config.xml").display()))
            // Debian's server links the system jemalloc with jemalloc's defaults; ClickHouse's
            // own builds set these (contrib/jemalloc-cmake: keep freed pages 5 s instead of
            // returning them at once, one arena per CPU). Without them the servers spent a
            // fifth of their insert time faulting pages back in (bench/fleet.sh, perf).
            .env("MALLOC_CONF", JEMALLOC_CONF);
        die_with_parent(&mut cmd);
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        s.child = Some(child);
        let loc = self.location(i, "default", false);
        // Short waits: a port that accepts and never answers (another server's native port,
        // taken in a race for free ports) must not use up the whole minute in one try.
        let mut client = Client::new(&loc);
        client.io_timeout = Duration::from_secs(2);
        let start = Instant::now();
        loop {
            if client.query("SELECT 1", &[]).is_ok() {
                return Ok(());
            }
            if let Some(c) = self.servers[i].child.as_mut()
                && let Ok(Some(st)) = c.try_wait()
            {
                let log =
                    std::fs::read_to_string(self.servers[i].dir.join("log/error.log")).unwrap_or_default();
                return Err(format!(
                    "clickhouse-server {i} exited ({st}): {}",
                    log.lines().last().unwrap_or("")
                ));
            }
            if start.elapsed() > Duration::from_secs(60) {
                return Err(format!("clickhouse-server {i} did not answer within 60 s"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The store URL's location of server `i`, database `db`, over the cluster or not.
    pub fn location(&self, i: usize, db: &str, cluster: bool) -> Location {
        Location {
            host: "127.0.0.1".into(),
            port: self.servers[i].http_port,
            database: db.into(),
            user: "default".into(),
            password: self.password.clone(),
            cluster: cluster.then(|| CLUSTER.to_string()),
            insert_local: false,
            tls: false,
            ca_file: None,
        }
    }

    /// The URL of [`Rig::location`] (the password goes in `KFLAME_CLICKHOUSE_PASSWORD`).
    pub fn url(&self, i: usize, db: &str, cluster: bool) -> String {
        let mut u = format!("clickhouse+http://127.0.0.1:{}/{db}", self.servers[i].http_port);
        if cluster {
            u.push_str(&format!("?cluster={CLUSTER}"));
        }
        u
    }

    /// The `clickhouse+https://` URL of server `i` (a rig started by [`Rig::start_tls`]),
    /// by address; the CA goes in `KFLAME_CLICKHOUSE_CA_FILE` or `ca_file=`.
    pub fn https_url(&self, i: usize, db: &str) -> String {
        format!("clickhouse+https://127.0.0.1:{}/{db}", self.servers[i].https_port.unwrap_or(0))
    }

    /// Stops server `i` (SIGKILL: an outage, not a shutdown) and waits for it.
    pub fn stop(&mut self, i: usize) {
        if let Some(mut c) = self.servers[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts server `i` again on its ports and data.
    pub fn restart(&mut self, i: usize) -> Result<(), String> {
        self.stop(i);
        let bin = server_binary().ok_or("clickhouse-server is gone")?;
        self.start_server(&bin, i)
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        for i in 0..self.servers.len() {
            self.stop(i);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Simulated hosts for tests and benchmarks: real stacks spread over hosts and time.
pub mod fleet {
    use kflame::events::{EventKind, EventRecord, Frames};
    use kflame::fold::{Meta, Unit, Weight};
    use kflame_store_api::{
        Bucket, CaptureStart, Kind, LatencyKind, LatencyRow, Metric, Sample, Store, StoreError, StoredReport,
        TriggerFired,
    };

    const SEC: i64 = 1_000_000_000;

    /// One sample, owning its stack.
    #[derive(Clone, Debug)]
    pub struct OwnedSample {
        /// UTC ns.
        pub time_ns: i64,
        /// CPU.
        pub cpu: u32,
        /// Cgroup.
        pub cgroup: Option<&'static str>,
        /// Folded stack.
        pub stack: Vec<u8>,
        /// Weight.
        pub weight: Weight,
    }

    impl OwnedSample {
        /// As the store takes it.
        pub fn sample(&self) -> Sample<'_> {
            Sample {
                time_ns: self.time_ns,
                cpu: self.cpu,
                cgroup: self.cgroup,
                stack: &self.stack,
                weight: self.weight,
            }
        }
    }

    /// Stacks of a real system-wide capture (the render fixtures' `perf record -a` of this
    /// kind of machine), one per sample: what the fleet tests and benchmarks write.
    pub fn real_stacks() -> Vec<Vec<u8>> {
        const FIXTURE: &str =
            concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data/render/perf-sys-cpuclock.folded");
        expand(&std::fs::read(FIXTURE).unwrap_or_else(|e| panic!("{FIXTURE}: {e}")))
    }

    /// The stacks of folded text (`stack count` lines; `#` headers skipped), one entry per
    /// sample counted.
    pub fn expand(folded: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for line in folded.split(|&b| b == b'\n').filter(|l| !l.is_empty() && l[0] != b'#') {
            let Some(sp) = line.iter().rposition(|&b| b == b' ') else { continue };
            let n: usize =
                std::str::from_utf8(&line[sp + 1..]).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
            for _ in 0..n {
                out.push(line[..sp].to_vec());
            }
        }
        out
    }

    /// Host number `h`'s samples: `seconds` from `t0` at `hz` per CPU on `cpus` CPUs, stacks
    /// drawn in turn from `stacks` from a place of the host's own, cgroups in turn, in time
    /// order.
    pub fn host_samples(
        h: usize,
        t0: i64,
        seconds: i64,
        hz: i64,
        cpus: u32,
        stacks: &[Vec<u8>],
    ) -> Vec<OwnedSample> {
        let mut out = Vec::new();
        let mut k = h.wrapping_mul(7919) % stacks.len().max(1);
        for cpu in 0..cpus {
            let mut t = t0 + i64::from(cpu) * 7_000_000 + (h as i64 % 50) * 3_000_000;
            while t < t0 + seconds * 1_000_000_000 {
                let cgroup = match k % 3 {
                    0 => Some("/system.slice/nginx.service"),
                    1 => Some("/user.slice"),
                    _ => None,
                };
                out.push(OwnedSample {
                    time_ns: t,
                    cpu,
                    cgroup,
                    stack: stacks[k % stacks.len()].clone(),
                    weight: Weight::from_u64(1),
                });
                k += 1;
                t += 1_000_000_000 / hz;
            }
        }
        out.sort_by_key(|s| s.time_ns);
        out
    }

    /// Writes `samples` as always-on buckets of `bucket_ns` from `t0`; returns the samples
    /// written.
    pub fn write_buckets(
        store: &mut dyn Store,
        host: &str,
        kind: Kind,
        meta: &Meta,
        samples: &[OwnedSample],
        t0: i64,
        bucket_ns: i64,
    ) -> Result<u64, StoreError> {
        let mut written = 0;
        let mut i = 0;
        let mut start = t0;
        while i < samples.len() {
            let end = start + bucket_ns;
            let j = i + samples[i..].partition_point(|s| s.time_ns < end);
            let part: Vec<Sample<'_>> = samples[i..j].iter().map(OwnedSample::sample).collect();
            if !part.is_empty() {
                store.append_bucket(&Bucket {
                    host,
                    kind,
                    start_ns: start,
                    end_ns: end,
                    capture: None,
                    meta,
                    samples: &part,
                    aggregated: &[],
                })?;
                written += part.len() as u64;
            }
            i = j;
            start = end;
        }
        Ok(written)
    }

    /// Writes `seconds` from `t0` of host number `h`'s history as `kflame watch` would:
    /// metrics every second, 10-s CPU buckets of [`host_samples`] (19 Hz, 2 CPUs), a trigger
    /// at 20 s, the syscall capture it starts (50 events and an aggregated bucket), a kernel
    /// report at 25 s; flushed. Returns the CPU samples written.
    pub fn write_history(
        store: &mut dyn Store,
        host: &str,
        h: usize,
        t0: i64,
        seconds: i64,
        stacks: &[Vec<u8>],
    ) -> Result<u64, StoreError> {
        for s in 0..seconds {
            let v = (s as f64 * 1.7 + h as f64 * 10.0) % 100.0;
            let m = [
                Metric { name: "cpu.usr", label: "", value: v },
                Metric { name: "cpu.usr", label: "cpu1", value: v / 2.0 },
                Metric { name: "psi.io.some", label: "", value: 0.25 * h as f64 },
            ];
            store.append_metrics(host, t0 + s * SEC, &m)?;
            let mut write = kflame::latency::Histogram::default();
            for i in 0..(s as u64 % 7 + 1) {
                write.record(1_000 * (i + 1) * (h as u64 + 1) + s as u64 * 10_000);
            }
            let mut cpu0 = kflame::latency::Histogram::default();
            cpu0.record(2_000_000 + s as u64);
            // Reads a second apart, give or take the 10 ms of /proc/uptime.
            let span_ms = [1000, 990, 1010, 1000][s as usize % 4];
            let rows = [
                LatencyRow {
                    kind: LatencyKind::Syscall,
                    label: "",
                    histogram: &write,
                    slow: s as u64 % 3,
                    span_ms,
                },
                LatencyRow {
                    kind: LatencyKind::Syscall,
                    label: "write",
                    histogram: &write,
                    slow: s as u64 % 3,
                    span_ms,
                },
                LatencyRow { kind: LatencyKind::Runq, label: "cpu0", histogram: &cpu0, slow: 0, span_ms },
            ];
            store.append_latency(host, t0 + s * SEC + 999_000_000, &rows)?;
        }
        let meta = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
        let samples = host_samples(h, t0, seconds, 19, 2, stacks);
        let written = write_buckets(store, host, Kind::Cpu, &meta, &samples, t0, 10 * SEC)?;
        let at = t0 + 20 * SEC;
        let trig = store.append_trigger(&TriggerFired {
            host,
            time_ns: at,
            rule: "cpu > 80% for 5s => syscalls 10s",
            metric: "cpu",
            value: 91.5,
            threshold: 80.0,
        })?;
        let ns = Meta { unit: Unit::Nanoseconds, event: None };
        let cap = store.begin_capture(&CaptureStart {
            host,
            kind: Kind::Syscalls,
            start_ns: at,
            trigger: Some(trig),
            meta: &ns,
        })?;
        let frames: Vec<Vec<u8>> =
            vec![b"nginx".to_vec(), b"entry_SYSCALL_64".to_vec(), b"ksys_write".to_vec()];
        let k = h as u64 + 1;
        let events: Vec<EventRecord<'_>> = (0..50u64)
            .map(|i| EventRecord {
                kind: EventKind::Syscall,
                ts_ns: Some(at as u64 + i * 100_000_000),
                duration_ns: Some(1_000 * (i + 1) * k),
                cpu: (i % 2) as u32,
                pid: Some(100 + i as u32),
                tid: Some(100 + i as u32),
                comm: Some("nginx"),
                event: "syscall:write",
                weight: 1_000 * (i + 1) * k,
                stack: Frames::Owned(&frames),
            })
            .collect();
        store.append_events(cap, &events)?;
        // Three system-call outliers of the host, always on (no capture).
        let outliers: Vec<EventRecord<'_>> = events[..3]
            .iter()
            .map(|e| EventRecord { ts_ns: e.ts_ns.map(|t| t + 7), event: "syscall:write", ..*e })
            .collect();
        store.append_outliers(host, LatencyKind::Syscall, &outliers)?;
        let agg: Vec<(&[u8], Weight)> = vec![(
            b"nginx;entry_SYSCALL_64;ksys_write".as_slice(),
            Weight::parse(b"55000.25").unwrap_or(Weight::ONE).saturating_mul(k),
        )];
        store.append_bucket(&Bucket {
            host,
            kind: Kind::Syscalls,
            start_ns: at,
            end_ns: at + 10 * SEC,
            capture: Some(cap),
            meta: &ns,
            samples: &[],
            aggregated: &agg,
        })?;
        store.end_capture(cap, at + 10 * SEC, "done")?;
        store.append_report(&StoredReport {
            host,
            time_ns: t0 + 25 * SEC,
            kind: "warning",
            title: "WARNING in shrink_slab",
            stack: "kswapd;balance_pgdat;shrink_node;shrink_slab",
            text: "WARNING: CPU: 1 PID: 77 at mm/vmscan.c:512 shrink_slab+0x1f/0x300 \"it's\"\n",
        })?;
        store.flush()?;
        Ok(written)
    }
}

//! Following the kernel log live through `/dev/kmsg`: non-blocking reads with a timeout, so
//! the caller's loop can stop it; records overwritten before they were read (`EPIPE`, a gap
//! in the sequence numbers) are counted and reading goes on; the record format and the
//! reports of a stream of records are [`report::kmsg`](crate::report::kmsg)'s.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::report::kmsg::{KmsgError, KmsgReports, Record, ReportText, parse_record};

/// The kernel device.
pub const DEVICE: &str = "/dev/kmsg";

/// The longest record the kernel writes (`CONSOLE_EXT_LOG_MAX`); a read needs room for a
/// whole record.
const RECORD_MAX: usize = 8192;

/// Where to start reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// The oldest record the kernel still holds.
    Beginning,
    /// The next record written (`SEEK_END`).
    Now,
}

/// Counters of a [`Kmsg`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Records read.
    pub records: u64,
    /// Times the kernel said records were overwritten before they were read (`EPIPE`).
    pub overwritten: u64,
    /// Records missed (gaps in the sequence numbers).
    pub missed: u64,
    /// Records that could not be parsed (skipped).
    pub malformed: u64,
}

/// A follower of `/dev/kmsg`.
pub struct Kmsg {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    next_seq: Option<u64>,
    /// What was read so far.
    pub counters: Counters,
    /// The first malformed record's error, if any.
    pub first_malformed: Option<String>,
}

impl Kmsg {
    /// Opens `/dev/kmsg` (root or `CAP_SYSLOG` when `kernel.dmesg_restrict` is set).
    pub fn open(start: Start) -> Result<Kmsg, KmsgError> {
        Kmsg::open_path(Path::new(DEVICE), start)
    }

    /// Opens a device that speaks the `/dev/kmsg` protocol.
    pub fn open_path(path: &Path, start: Start) -> Result<Kmsg, KmsgError> {
        let io = |what, source| KmsgError::Io { path: path.to_path_buf(), what, source };
        use super::features::{Feature, masked, masked_error};
        if masked(Feature::Kmsg) {
            return Err(io("cannot open", masked_error(Feature::Kmsg)));
        }
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| io("cannot open", e))?;
        if start == Start::Now {
            file.seek(SeekFrom::End(0)).map_err(|e| io("cannot seek to the end", e))?;
        }
        Ok(Kmsg {
            file,
            path: path.to_path_buf(),
            buf: vec![0; RECORD_MAX + 1],
            next_seq: None,
            counters: Counters::default(),
            first_malformed: None,
        })
    }

    /// The next record, waiting up to `timeout` for one (`None`: none came). Records the
    /// kernel overwrote before they were read are counted ([`Counters::overwritten`],
    /// [`Counters::missed`]) and reading goes on; a malformed record is counted and
    /// skipped.
    pub fn read(&mut self, timeout: Duration) -> Result<Option<Record>, KmsgError> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.file.read(&mut self.buf) {
                Ok(0) => return Ok(None),
                Ok(n) => {
                    self.counters.records += 1;
                    match parse_record(&self.buf[..n]) {
                        Ok(r) => {
                            if let Some(expected) = self.next_seq
                                && r.seq > expected
                            {
                                self.counters.missed += r.seq - expected;
                            }
                            self.next_seq = Some(r.seq + 1);
                            return Ok(Some(r));
                        }
                        Err(e) => {
                            self.counters.malformed += 1;
                            self.first_malformed.get_or_insert_with(|| e.to_string());
                        }
                    }
                }
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => self.counters.overwritten += 1,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    super::wait_readable(self.file.as_raw_fd(), left).map_err(|source| KmsgError::Io {
                        path: self.path.clone(),
                        what: "cannot wait",
                        source,
                    })?;
                }
                Err(source) => {
                    return Err(KmsgError::Io { path: self.path.clone(), what: "cannot read", source });
                }
            }
        }
    }
}

/// A follower of `/dev/kmsg` that yields kernel reports: [`Kmsg`] and [`KmsgReports`]
/// together.
pub struct Follower {
    /// The device.
    pub kmsg: Kmsg,
    /// The reports of its records.
    pub reports: KmsgReports,
}

impl Follower {
    /// Follows `kmsg`, ending a report after `quiet` without records.
    pub fn new(kmsg: Kmsg, quiet: Duration) -> Follower {
        Follower { kmsg, reports: KmsgReports::new(quiet) }
    }

    /// Reads the records that come within `timeout` (at least waits for one) and returns
    /// the reports that ended meanwhile.
    pub fn poll(&mut self, timeout: Duration) -> Result<Vec<ReportText>, KmsgError> {
        let deadline = Instant::now() + timeout;
        let mut wait = timeout;
        while let Some(r) = self.kmsg.read(wait)? {
            self.reports.push(&r, Instant::now());
            wait = Duration::ZERO; // read what is there, then return
            if Instant::now() >= deadline {
                break;
            }
        }
        self.reports.idle(Instant::now());
        Ok(std::iter::from_fn(|| self.reports.pop_with_text()).collect())
    }
}

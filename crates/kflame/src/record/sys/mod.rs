//! The system-call surface of recording: the only `unsafe` code of the crate.
//!
//! Everything here is a thin wrapper with a safe signature: `perf_event_open`, the event
//! ioctls, the mmap'ed ring buffer, `poll`, the monotonic clock, `kill`, and mounting a
//! private tracefs. No signal handler: the program that records installs its own. Each
//! `unsafe` block carries a SAFETY comment.
#![allow(unsafe_code)]

pub(crate) mod attr;
mod ring;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub(crate) use attr::PerfEventAttr;
pub(crate) use ring::Ring;

const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;

/// Opens one perf event; `pid` -1 with a `cpu` means every task on that CPU.
pub(crate) fn perf_event_open(attr: &PerfEventAttr, pid: i32, cpu: i32) -> io::Result<OwnedFd> {
    masked_refusal(attr)?;
    // SAFETY: `attr` points to a fully initialised 112-byte struct whose `size` field says so;
    // the kernel only reads it. The group fd is -1 and the flags are a valid constant.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid as libc::pid_t,
            cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the syscall returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// What a kernel without a masked feature (`KFLAME_MASK_FEATURES`) answers to `attr`.
fn masked_refusal(attr: &PerfEventAttr) -> io::Result<()> {
    use super::features::{Feature, masked, masked_error};
    let asks = [
        (Feature::PerfEvents, true),
        (
            Feature::UserStackCopy,
            attr.sample_type & (attr::sample::REGS_USER | attr::sample::STACK_USER) != 0,
        ),
        (Feature::ContextSwitch, attr.flags & attr::flag::CONTEXT_SWITCH != 0),
        (
            Feature::SampleCgroup,
            attr.sample_type & attr::sample::CGROUP != 0 || attr.flags & attr::flag::CGROUP != 0,
        ),
    ];
    match asks.into_iter().find(|&(f, asked)| asked && masked(f)) {
        Some((f, _)) => Err(masked_error(f)),
        None => Ok(()),
    }
}

fn ioctl(fd: &OwnedFd, request: libc::c_ulong, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: `fd` is an open perf event; the requests used here take an integer argument.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request, arg) };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Starts counting/sampling.
pub(crate) fn enable(fd: &OwnedFd) -> io::Result<()> {
    ioctl(fd, IOC_ENABLE, 0)
}

/// Stops counting/sampling (the event stays open).
pub(crate) fn disable(fd: &OwnedFd) -> io::Result<()> {
    ioctl(fd, IOC_DISABLE, 0)
}

/// Sends the records of `fd` into the ring buffer of `target` (same CPU).
pub(crate) fn set_output(fd: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
    ioctl(fd, IOC_SET_OUTPUT, target.as_raw_fd() as libc::c_ulong)
}

/// Waits until one of `fds` is readable or `timeout_ms` passed; an interrupted wait
/// (a signal arrived) returns normally.
pub(crate) fn poll_readable(fds: &[RawFd], timeout_ms: i32) -> io::Result<()> {
    let mut pfds: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    // SAFETY: `pfds` is a valid array of `pfds.len()` pollfd structs owned by this frame.
    let rc = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// `CLOCK_MONOTONIC` in nanoseconds: the clock the events are stamped with.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_REALTIME` in nanoseconds since the Unix epoch (negative before 1970).
pub(crate) fn realtime_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_REALTIME always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec.saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec)
}

/// The `clockid` value to put in the attribute (with `USE_CLOCKID`).
pub(crate) const CLOCK_MONOTONIC: i32 = libc::CLOCK_MONOTONIC;

/// Sends `signal` to process `pid` (used to stop a profiled command on SIGTERM).
pub(crate) fn kill(pid: u32, signal: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe { libc::kill(pid as libc::pid_t, signal) };
}

/// `SIGTERM`, for [`kill`].
pub(crate) const SIGTERM: i32 = libc::SIGTERM;

/// Mounts a tracefs at `dir` (an empty directory this process created).
pub(crate) fn mount_tracefs(dir: &Path) -> io::Result<()> {
    let target = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: all strings are NUL-terminated and outlive the call; no mount data is passed.
    let rc =
        unsafe { libc::mount(c"nodev".as_ptr(), target.as_ptr(), c"tracefs".as_ptr(), 0, std::ptr::null()) };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Detaches the mount at `dir` (mounted by [`mount_tracefs`]).
pub(crate) fn unmount(dir: &Path) -> io::Result<()> {
    let target = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: `target` is NUL-terminated and outlives the call.
    let rc = unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Raises the soft limit of open files to the hard limit (one event per thread, CPU and
/// event kind adds up quickly with `-p` on a many-threaded process), as perf does.
pub(crate) fn raise_fd_limit() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 && lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: `lim` is a valid rlimit; raising the soft limit up to the hard one is allowed.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
}

/// Makes glibc's allocator use one arena for every thread of the process (as
/// `MALLOC_ARENA_MAX=1` does) unless the environment chose otherwise. By default each thread
/// that allocates gets an arena of its own, which keeps what it freed: a watcher's capture
/// thread that names a few seconds of stacks then holds tens of MiB for the process's life
/// (`kflame watch` beside `rustc -O` with captures: 88 MiB peak, 61 MiB with one arena). The
/// recorders allocate little and from few threads, so one arena costs no contention that
/// shows. Elsewhere (musl, another allocator) it does nothing.
pub fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt has no memory-safety preconditions; M_ARENA_MAX takes a count.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
    }
}

/// Gives the pages of memory the allocator holds free back to the system (glibc's
/// `malloc_trim`, which also releases free pages inside the heap). Naming a window can load
/// a large symbol table (a test binary with debug information: tens of MiB of `.symtab` and
/// `.strtab` read to build its compact index) and free it at once; without this the freed
/// pages stay in the process's RSS. Elsewhere (musl, another allocator) it does nothing.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no memory-safety preconditions; 0 keeps no padding.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The system page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 { n as usize } else { 4096 }
}

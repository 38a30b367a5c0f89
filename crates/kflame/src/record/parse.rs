//! Decoding perf ring-buffer records (`PERF_RECORD_*`) from bytes: pure, no I/O.
//!
//! Every event of a session uses the same `sample_type` ([`SAMPLE_TYPE`], plus `RAW` for
//! tracepoints and `CGROUP` when samples are kept and the kernel takes it) and
//! `sample_id_all`, so every record carries pid/tid, time and CPU.

use super::sys::attr::sample;
use crate::unwind::{REG_BP, REG_IP, REG_SP, Regs};

/// The sample fields every session asks for, in the kernel's record order.
pub(crate) const SAMPLE_TYPE: u64 =
    sample::IP | sample::TID | sample::TIME | sample::CPU | sample::PERIOD | sample::CALLCHAIN;

const RECORD_MMAP2: u32 = 10;
const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_EXIT: u32 = 4;
const RECORD_FORK: u32 = 7;
const RECORD_SAMPLE: u32 = 9;
const RECORD_SWITCH_CPU_WIDE: u32 = 15;
const RECORD_CGROUP: u32 = 19;
const MISC_COMM_EXEC: u16 = 1 << 13;
const MISC_SWITCH_OUT: u16 = 1 << 13;
const MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;
/// Size of the `sample_id_all` trailer for our sample type: (pid, tid), time, (cpu, res).
const ID_TRAILER: usize = 24;

/// A sample: one stack at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sample {
    pub(crate) time: u64,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) cpu: u32,
    pub(crate) period: u64,
    /// The callchain as the kernel wrote it: leaf first, with `PERF_CONTEXT_*` markers.
    pub(crate) chain: Vec<u64>,
    /// Tracepoint data (`PERF_SAMPLE_RAW`), empty for cpu-clock.
    pub(crate) raw: Vec<u8>,
    /// The task's cgroup id (`PERF_SAMPLE_CGROUP`), when the session asked for it.
    pub(crate) cgroup: Option<u64>,
    /// The user registers and a copy of the user stack (`PERF_SAMPLE_REGS_USER`,
    /// `PERF_SAMPLE_STACK_USER`), when the session asked for them (`--call-graph dwarf`)
    /// and the task was in user space or entered the kernel from it.
    pub(crate) user: Option<Box<UserStack>>,
}

/// What a DWARF unwinder needs of a sample's user state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UserStack {
    /// `PERF_SAMPLE_REGS_ABI_64` (2) or `_32` (1).
    pub(crate) abi: u64,
    pub(crate) regs: Regs,
    /// The bytes copied from the stack pointer up, only as many as were valid
    /// (`dyn_size`).
    pub(crate) stack: Vec<u8>,
}

/// A context switch seen from one side (`PERF_RECORD_SWITCH_CPU_WIDE`): written in the
/// context of the task switched out (`out`) or in, naming the task on the other side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Switch {
    pub(crate) time: u64,
    /// The task this record is about (the one leaving the CPU when `out`, else entering it).
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) cpu: u32,
    /// Switched out (`PERF_RECORD_MISC_SWITCH_OUT`), else switched in.
    pub(crate) out: bool,
    /// Switched out while still runnable (`PERF_RECORD_MISC_SWITCH_OUT_PREEMPT`).
    pub(crate) preempt: bool,
    /// The next task (switch out) or the previous one (switch in).
    pub(crate) other_pid: u32,
    pub(crate) other_tid: u32,
}

/// The records a session acts on; others are counted as ignored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    /// A sample.
    Sample(Sample),
    /// A task's name changed (`exec` true when by execve).
    Comm { time: u64, pid: u32, tid: u32, comm: Vec<u8>, exec: bool },
    /// A task was created.
    Fork { time: u64, pid: u32, ppid: u32, tid: u32, ptid: u32 },
    /// A task exited.
    Exit { time: u64, pid: u32, tid: u32 },
    /// A context switch (only from events opened with `context_switch`).
    Switch(Switch),
    /// An executable mapping was created.
    Mmap { time: u64, pid: u32, start: u64, len: u64, pgoff: u64, path: Vec<u8> },
    /// A cgroup (v2) and its path from the root of the hierarchy (`PERF_RECORD_CGROUP`).
    Cgroup { time: u64, id: u64, path: Vec<u8> },
    /// The kernel dropped `count` records because the ring buffer was full.
    Lost { time: u64, count: u64 },
    /// Anything else (throttling, ...).
    Other { time: u64 },
}

impl Record {
    /// The time stamp (CLOCK_MONOTONIC ns).
    pub(crate) fn time(&self) -> u64 {
        match self {
            Record::Sample(s) => s.time,
            Record::Switch(s) => s.time,
            Record::Comm { time, .. }
            | Record::Fork { time, .. }
            | Record::Exit { time, .. }
            | Record::Mmap { time, .. }
            | Record::Cgroup { time, .. }
            | Record::Lost { time, .. }
            | Record::Other { time } => *time,
        }
    }
}

/// A little-endian cursor over one record body.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn u64(&mut self) -> Option<u64> {
        let v = self.b.get(self.at..self.at + 8)?;
        self.at += 8;
        Some(u64::from_le_bytes(v.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        let v = self.b.get(self.at..self.at + 4)?;
        self.at += 4;
        Some(u32::from_le_bytes(v.try_into().ok()?))
    }
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let v = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(v)
    }
}

/// Which optional sample fields the records of a session carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    /// `PERF_SAMPLE_RAW`.
    pub(crate) raw: bool,
    /// `PERF_SAMPLE_CGROUP`.
    pub(crate) cgroup: bool,
    /// `PERF_SAMPLE_REGS_USER` with this `sample_regs_user` mask (0: not asked for).
    pub(crate) user_regs: u64,
    /// `PERF_SAMPLE_STACK_USER`.
    pub(crate) user_stack: bool,
}

/// Splits `buf` into records and decodes them; `bad` counts records that could not be read
/// (a truncated or inconsistent record ends the buffer: its size field cannot be trusted).
pub(crate) fn records(buf: &[u8], layout: Layout, out: &mut Vec<Record>, bad: &mut u64) {
    let mut at = 0;
    while at + 8 <= buf.len() {
        let kind = u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
        let misc = u16::from_le_bytes([buf[at + 4], buf[at + 5]]);
        let size = u16::from_le_bytes([buf[at + 6], buf[at + 7]]) as usize;
        if size < 8 || at + size > buf.len() {
            *bad += 1;
            return;
        }
        match decode(kind, misc, &buf[at + 8..at + size], layout) {
            Some(r) => out.push(r),
            None => *bad += 1,
        }
        at += size;
    }
    if at != buf.len() {
        *bad += 1;
    }
}

fn decode(kind: u32, misc: u16, body: &[u8], layout: Layout) -> Option<Record> {
    if kind == RECORD_SAMPLE {
        return decode_sample(body, layout).map(Record::Sample);
    }
    let time = trailer_time(body)?;
    let mut c = Cursor { b: body, at: 0 };
    Some(match kind {
        RECORD_COMM => {
            let (pid, tid) = (c.u32()?, c.u32()?);
            let name = body.get(8..body.len() - ID_TRAILER)?;
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            Record::Comm { time, pid, tid, comm: name[..end].to_vec(), exec: misc & MISC_COMM_EXEC != 0 }
        }
        RECORD_FORK => {
            let (pid, ppid, tid, ptid) = (c.u32()?, c.u32()?, c.u32()?, c.u32()?);
            Record::Fork { time, pid, ppid, tid, ptid }
        }
        RECORD_EXIT => {
            let (pid, _ppid, tid) = (c.u32()?, c.u32()?, c.u32()?);
            Record::Exit { time, pid, tid }
        }
        RECORD_MMAP2 => decode_mmap2(&mut c, body, time)?,
        RECORD_SWITCH_CPU_WIDE => decode_switch(&mut c, body, misc, time)?,
        RECORD_CGROUP => {
            let id = c.u64()?;
            let path = body.get(8..body.len() - ID_TRAILER)?;
            let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
            Record::Cgroup { time, id, path: path[..end].to_vec() }
        }
        RECORD_LOST => {
            let _id = c.u64()?;
            Record::Lost { time, count: c.u64()? }
        }
        _ => Record::Other { time },
    })
}

/// The time field of the `sample_id_all` trailer.
fn trailer_time(body: &[u8]) -> Option<u64> {
    let at = body.len().checked_sub(ID_TRAILER)? + 8;
    Some(u64::from_le_bytes(body.get(at..at + 8)?.try_into().ok()?))
}

/// The pid, tid and CPU of the `sample_id_all` trailer.
fn trailer_task(body: &[u8]) -> Option<(u32, u32, u32)> {
    let at = body.len().checked_sub(ID_TRAILER)?;
    let mut c = Cursor { b: body, at };
    let (pid, tid, _time, cpu) = (c.u32()?, c.u32()?, c.u64()?, c.u32()?);
    Some((pid, tid, cpu))
}

fn decode_switch(c: &mut Cursor<'_>, body: &[u8], misc: u16, time: u64) -> Option<Record> {
    let (other_pid, other_tid) = (c.u32()?, c.u32()?);
    if body.len() != c.at + ID_TRAILER {
        return None;
    }
    let (pid, tid, cpu) = trailer_task(body)?;
    Some(Record::Switch(Switch {
        time,
        pid,
        tid,
        cpu,
        out: misc & MISC_SWITCH_OUT != 0,
        preempt: misc & MISC_SWITCH_OUT_PREEMPT != 0,
        other_pid,
        other_tid,
    }))
}

fn decode_mmap2(c: &mut Cursor<'_>, body: &[u8], time: u64) -> Option<Record> {
    let (pid, _tid) = (c.u32()?, c.u32()?);
    let (start, len, pgoff) = (c.u64()?, c.u64()?, c.u64()?);
    // maj, min, ino, ino_generation (or build id), prot, flags: 32 bytes.
    c.bytes(32)?;
    let name = body.get(c.at..body.len() - ID_TRAILER)?;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Some(Record::Mmap { time, pid, start, len, pgoff, path: name[..end].to_vec() })
}

fn decode_sample(body: &[u8], layout: Layout) -> Option<Sample> {
    let mut c = Cursor { b: body, at: 0 };
    let _ip = c.u64()?;
    let (pid, tid) = (c.u32()?, c.u32()?);
    let time = c.u64()?;
    let (cpu, _res) = (c.u32()?, c.u32()?);
    let period = c.u64()?;
    let nr = c.u64()? as usize;
    let chain_bytes = c.bytes(nr.checked_mul(8)?)?;
    let chain = chain_bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]))
        .collect();
    let raw = if layout.raw {
        let n = c.u32()? as usize;
        c.bytes(n)?.to_vec()
    } else {
        Vec::new()
    };
    // The raw field is padded so that what follows is 8-byte aligned.
    let user = decode_user(&mut c, layout)?;
    let cgroup = if layout.cgroup { Some(c.u64()?) } else { None };
    Some(Sample { time, pid, tid, cpu, period, chain, raw, cgroup, user })
}

/// The user registers (`abi`, then one word per bit of the mask, in bit order) and the
/// stack copy (`size`, the bytes, then `dyn_size` when `size` is not 0), as
/// `perf_output_sample` writes them. `Some(None)` when there is nothing to unwind: a kernel
/// thread (ABI 0), an event that copies no stack, a session that asked for neither; `None`
/// when the record is malformed.
fn decode_user(c: &mut Cursor<'_>, layout: Layout) -> Option<Option<Box<UserStack>>> {
    let mut regs = None;
    if layout.user_regs != 0 {
        let abi = c.u64()?;
        if abi != 0 {
            let words = c.bytes((layout.user_regs.count_ones() as usize) * 8)?;
            let reg = |r: u32| {
                let bit = 1u64 << r;
                if layout.user_regs & bit == 0 {
                    return 0;
                }
                let i = (layout.user_regs & (bit - 1)).count_ones() as usize * 8;
                u64::from_le_bytes(words[i..i + 8].try_into().unwrap_or([0; 8]))
            };
            regs = Some((abi, Regs { ip: reg(REG_IP), sp: reg(REG_SP), bp: reg(REG_BP) }));
        }
    }
    // An event that copies no stack (size 0) has nothing to unwind, whatever its registers.
    let mut stack = None;
    if layout.user_stack {
        let size = usize::try_from(c.u64()?).ok()?;
        let bytes = c.bytes(size)?;
        if size != 0 {
            let dyn_size = usize::try_from(c.u64()?).unwrap_or(usize::MAX);
            stack = Some(&bytes[..dyn_size.min(size)]);
        }
    }
    Some(match (regs, stack) {
        (Some((abi, regs)), Some(stack)) => Some(Box::new(UserStack { abi, regs, stack: stack.to_vec() })),
        _ => None,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a sample record as the kernel lays it out (for tests of every consumer).
    pub(crate) fn sample_bytes(s: &Sample, raw: bool) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&0xffff_ffff_8100_0000u64.to_le_bytes());
        b.extend_from_slice(&s.pid.to_le_bytes());
        b.extend_from_slice(&s.tid.to_le_bytes());
        b.extend_from_slice(&s.time.to_le_bytes());
        b.extend_from_slice(&s.cpu.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&s.period.to_le_bytes());
        b.extend_from_slice(&(s.chain.len() as u64).to_le_bytes());
        for ip in &s.chain {
            b.extend_from_slice(&ip.to_le_bytes());
        }
        if raw && s.cgroup.is_some() {
            // As the kernel writes it: the raw size includes the padding to 8 bytes.
            let padded = (4 + s.raw.len()).next_multiple_of(8) - 4;
            b.extend_from_slice(&(padded as u32).to_le_bytes());
            b.extend_from_slice(&s.raw);
            b.resize(b.len() + padded - s.raw.len(), 0);
        } else if raw {
            b.extend_from_slice(&(s.raw.len() as u32).to_le_bytes());
            b.extend_from_slice(&s.raw);
        }
        if let Some(id) = s.cgroup {
            b.extend_from_slice(&id.to_le_bytes());
        }
        while (b.len() + 8) % 8 != 0 {
            b.push(0);
        }
        with_header(RECORD_SAMPLE, 0, b)
    }

    /// Builds a `PERF_RECORD_SWITCH_CPU_WIDE` record as the kernel lays it out.
    pub(crate) fn switch_bytes(s: &Switch) -> Vec<u8> {
        let mut b = s.other_pid.to_le_bytes().to_vec();
        b.extend_from_slice(&s.other_tid.to_le_bytes());
        b.extend_from_slice(&s.pid.to_le_bytes());
        b.extend_from_slice(&s.tid.to_le_bytes());
        b.extend_from_slice(&s.time.to_le_bytes());
        b.extend_from_slice(&s.cpu.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        let misc =
            if s.out { MISC_SWITCH_OUT } else { 0 } | if s.preempt { MISC_SWITCH_OUT_PREEMPT } else { 0 };
        with_header(RECORD_SWITCH_CPU_WIDE, misc, b)
    }

    fn with_header(kind: u32, misc: u16, body: Vec<u8>) -> Vec<u8> {
        let mut r = kind.to_le_bytes().to_vec();
        r.extend_from_slice(&misc.to_le_bytes());
        r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        r.extend_from_slice(&body);
        r
    }

    fn trailer(pid: u32, time: u64) -> Vec<u8> {
        let mut t = pid.to_le_bytes().to_vec();
        t.extend_from_slice(&pid.to_le_bytes());
        t.extend_from_slice(&time.to_le_bytes());
        t.extend_from_slice(&[0; 8]);
        t
    }

    #[test]
    fn decodes_sample_comm_and_lost() {
        let s = Sample {
            time: 7,
            pid: 10,
            tid: 11,
            cpu: 1,
            period: 3,
            chain: vec![1, 2, 3],
            ..Sample::default()
        };
        let mut buf = sample_bytes(&s, false);
        let mut comm = 10u32.to_le_bytes().to_vec();
        comm.extend_from_slice(&11u32.to_le_bytes());
        comm.extend_from_slice(b"burn\0\0\0\0");
        comm.extend(trailer(10, 9));
        buf.extend(with_header(RECORD_COMM, MISC_COMM_EXEC, comm));
        let mut lost = 0u64.to_le_bytes().to_vec();
        lost.extend_from_slice(&5u64.to_le_bytes());
        lost.extend(trailer(0, 12));
        buf.extend(with_header(RECORD_LOST, 0, lost));
        let (mut out, mut bad) = (Vec::new(), 0);
        records(&buf, Layout::default(), &mut out, &mut bad);
        assert_eq!(bad, 0);
        assert_eq!(out[0], Record::Sample(s));
        assert_eq!(out[1], Record::Comm { time: 9, pid: 10, tid: 11, comm: b"burn".to_vec(), exec: true });
        assert_eq!(out[2], Record::Lost { time: 12, count: 5 });
    }

    /// A sample with `PERF_SAMPLE_CGROUP` carries the id after the raw data (padded), and
    /// a `PERF_RECORD_CGROUP` its id and NUL-padded path before the `sample_id_all` trailer.
    #[test]
    fn decodes_cgroup_ids_and_cgroup_records() {
        let s = Sample {
            time: 7,
            pid: 10,
            tid: 11,
            cpu: 1,
            period: 1,
            chain: vec![1, 2],
            raw: vec![9, 0, 1],
            cgroup: Some(0x1234),
            user: None,
        };
        let mut buf = sample_bytes(&s, true);
        let plain = Sample { raw: vec![], ..s.clone() };
        buf.extend(sample_bytes(&plain, false));
        let mut body = 0x77u64.to_le_bytes().to_vec();
        body.extend_from_slice(b"/system.slice/ssh.service\0\0\0\0\0\0\0");
        body.extend(trailer(0, 40));
        let cgroup = with_header(RECORD_CGROUP, 0, body);
        let (mut raw_out, mut bad) = (Vec::new(), 0);
        records(
            &buf[..buf.len() - sample_bytes(&plain, false).len()],
            Layout { raw: true, cgroup: true, ..Layout::default() },
            &mut raw_out,
            &mut bad,
        );
        let mut decoded = vec![];
        records(
            &sample_bytes(&plain, false),
            Layout { raw: false, cgroup: true, ..Layout::default() },
            &mut decoded,
            &mut bad,
        );
        records(&cgroup, Layout::default(), &mut decoded, &mut bad);
        assert_eq!(bad, 0);
        let Record::Sample(got) = &raw_out[0] else { panic!("{raw_out:?}") };
        assert_eq!(
            (got.cgroup, &got.raw[..3], got.chain.as_slice()),
            (Some(0x1234), &[9, 0, 1][..], &[1, 2][..])
        );
        assert_eq!(decoded[0], Record::Sample(plain));
        assert_eq!(
            decoded[1],
            Record::Cgroup { time: 40, id: 0x77, path: b"/system.slice/ssh.service".to_vec() }
        );
        // A sample cut before its cgroup id is malformed, not a sample without one.
        let short = sample_bytes(&Sample { cgroup: None, ..s }, false);
        let (mut out, mut bad) = (Vec::new(), 0);
        records(&short, Layout { raw: false, cgroup: true, ..Layout::default() }, &mut out, &mut bad);
        assert_eq!((out.len(), bad), (0, 1));
    }

    /// A sample with the user registers (ABI, then BP, SP, IP: the mask's bits in order)
    /// and a stack copy (size, bytes, valid size), as `perf_output_sample` writes them.
    fn user_sample(abi: u64, copy: &[u8], dyn_size: u64, cgroup: Option<u64>) -> Vec<u8> {
        let s = Sample { time: 5, pid: 7, tid: 8, cpu: 1, period: 1, chain: vec![1, 2], ..Sample::default() };
        let mut r = sample_bytes(&s, false);
        r.truncate(8 + 48 + 8 * s.chain.len()); // header, fixed fields, chain
        r.extend_from_slice(&abi.to_le_bytes());
        if abi != 0 {
            for reg in [0xb0u64, 0x7ffc_0000, 0x40_1000] {
                r.extend_from_slice(&reg.to_le_bytes());
            }
        }
        r.extend_from_slice(&(copy.len() as u64).to_le_bytes());
        r.extend_from_slice(copy);
        if !copy.is_empty() {
            r.extend_from_slice(&dyn_size.to_le_bytes());
        }
        if let Some(id) = cgroup {
            r.extend_from_slice(&id.to_le_bytes());
        }
        let size = r.len() as u16;
        r[6..8].copy_from_slice(&size.to_le_bytes());
        r
    }

    #[test]
    fn decodes_user_registers_and_stack_copies() {
        let layout = Layout {
            cgroup: true,
            user_regs: crate::unwind::USER_REGS_MASK,
            user_stack: true,
            ..Layout::default()
        };
        let copy: Vec<u8> = (0..24).collect();
        let one = |bytes: &[u8]| {
            let (mut out, mut bad) = (Vec::new(), 0);
            records(bytes, layout, &mut out, &mut bad);
            (out, bad)
        };
        let (out, bad) = one(&user_sample(2, &copy, 16, Some(9)));
        let Record::Sample(s) = &out[0] else { panic!("{out:?}") };
        assert_eq!((bad, s.chain.as_slice(), s.cgroup), (0, &[1, 2][..], Some(9)));
        let want = UserStack {
            abi: 2,
            regs: Regs { ip: 0x40_1000, sp: 0x7ffc_0000, bp: 0xb0 },
            stack: copy[..16].to_vec(),
        };
        assert_eq!(s.user.as_deref(), Some(&want));
        // A kernel thread (ABI 0: no registers, no copy) and an event that copies nothing.
        for bytes in [user_sample(0, &[], 0, Some(9)), user_sample(2, &[], 0, Some(9))] {
            let (out, bad) = one(&bytes);
            let Record::Sample(s) = &out[0] else { panic!("{out:?}") };
            assert_eq!((bad, s.user.is_none(), s.cgroup), (0, true, Some(9)));
        }
        // A valid size past the copy keeps the copy; every cut is one bad record.
        let (out, _) = one(&user_sample(2, &copy, 1 << 40, Some(9)));
        let Record::Sample(s) = &out[0] else { panic!("{out:?}") };
        assert_eq!(s.user.as_ref().unwrap().stack, copy);
        let full = user_sample(2, &copy, 16, Some(9));
        for cut in 1..full.len() {
            let mut b = full[..cut].to_vec();
            if b.len() >= 8 {
                let size = b.len() as u16;
                b[6..8].copy_from_slice(&size.to_le_bytes());
            }
            let (out, bad) = one(&b);
            assert_eq!((out.len(), bad), (0, 1), "cut at {cut}");
        }
    }

    #[test]
    fn decodes_switch_records_of_both_directions() {
        let out = Switch {
            time: 100,
            pid: 7,
            tid: 8,
            cpu: 1,
            out: true,
            preempt: true,
            other_pid: 0,
            other_tid: 0,
        };
        let inn =
            Switch { time: 200, out: false, preempt: false, other_pid: 9, other_tid: 10, ..out.clone() };
        let mut buf = switch_bytes(&out);
        buf.extend(switch_bytes(&inn));
        let (mut recs, mut bad) = (Vec::new(), 0);
        records(&buf, Layout::default(), &mut recs, &mut bad);
        assert_eq!(bad, 0);
        assert_eq!(recs, vec![Record::Switch(out), Record::Switch(inn.clone())]);
        assert_eq!(recs[1].time(), 200);
        // A switch record whose body is not 8 bytes plus the trailer is malformed.
        let mut long = switch_bytes(&inn);
        long.extend_from_slice(&[0; 8]);
        long[6] += 8;
        let (mut recs, mut bad) = (Vec::new(), 0);
        records(&long, Layout::default(), &mut recs, &mut bad);
        assert_eq!((recs.len(), bad), (0, 1));
    }

    /// Random bytes, and valid records with random corruption, never panic the decoder.
    #[test]
    fn garbage_never_panics() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let s = Sample {
            time: 1,
            pid: 2,
            tid: 3,
            cpu: 0,
            period: 1,
            chain: vec![5; 6],
            raw: vec![7; 20],
            cgroup: None,
            user: None,
        };
        for round in 0..20_000 {
            let mut buf: Vec<u8> = if round % 2 == 0 {
                (0..(next() % 300)).map(|_| next() as u8).collect()
            } else {
                sample_bytes(&s, true)
            };
            if !buf.is_empty() {
                let at = (next() as usize) % buf.len();
                buf[at] = next() as u8;
            }
            let (mut out, mut bad) = (Vec::new(), 0);
            let user = round % 7 == 0;
            let layout = Layout {
                raw: round % 3 == 0,
                cgroup: round % 5 == 0,
                user_regs: if user { crate::unwind::USER_REGS_MASK } else { 0 },
                user_stack: user,
            };
            records(&buf, layout, &mut out, &mut bad);
        }
    }

    #[test]
    fn truncated_record_is_counted_not_panicking() {
        let s = Sample { chain: vec![1; 4], ..Default::default() };
        let buf = sample_bytes(&s, false);
        for cut in 0..buf.len() {
            let (mut out, mut bad) = (Vec::new(), 0);
            records(&buf[..cut], Layout::default(), &mut out, &mut bad);
            assert!(out.is_empty());
            assert_eq!(bad, u64::from(cut > 0));
        }
        // A sample whose callchain length runs past the record.
        let mut evil = buf.clone();
        evil[8 + 40..8 + 48].copy_from_slice(&u64::MAX.to_le_bytes());
        let (mut out, mut bad) = (Vec::new(), 0);
        records(&evil, Layout::default(), &mut out, &mut bad);
        assert_eq!((out.len(), bad), (0, 1));
    }
}

//! The collapse engine: streams any input through a [`Collapse`] in bounded memory, on one
//! or several threads, with identical output either way.
//!
//! Data flow (parallel mode):
//! ```text
//! reader thread ──blocks cut at split_point──▶ bounded channel ──▶ N workers (forked
//! collapsers, one Output each) ──▶ merge (counts: sum, commutative; ordered: by chunk seq)
//! ```
//! Memory is bounded by `block_size × (2 × threads + 2)` plus the distinct stacks, never
//! by the input size. A record longer than a block grows the block until it fits, up to
//! [`MAX_LINE`]: a longer line is skipped (counted under [`LINE_TOO_LONG`] and seen by the
//! format as a blank line, in either mode), and in parallel mode whole lines without a record
//! boundary are cut at a line once they exceed the cap (noted under [`RECORD_TOO_LONG`]).

use std::io::{self, Read};
use std::sync::mpsc;

use super::{Collapse, Output};
use crate::diag::Diagnostics;
use crate::fold::{OrderedStacks, StackCounts, Stacks};
use crate::text::{LINE_TOO_LONG, MAX_LINE, line_too_long_message};

/// Diagnostic kind (a note) of a parallel input cut at a line that is not a record boundary,
/// because no boundary came within [`MAX_LINE`] bytes.
pub const RECORD_TOO_LONG: &str = "record too long";

/// How stacks are aggregated.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Summed per distinct stack, output sorted (FlameGraph's default).
    #[default]
    Sorted,
    /// Time order, merging only identical consecutive stacks (flame charts).
    Time,
}

impl Order {
    /// An empty aggregation for this order.
    pub fn empty_stacks(self) -> Stacks {
        match self {
            Order::Sorted => Stacks::Counts(StackCounts::new()),
            Order::Time => Stacks::Ordered(OrderedStacks::new()),
        }
    }
}

/// Engine settings.
#[derive(Clone, Debug)]
pub struct Engine {
    /// Worker threads (1 = sequential).
    pub threads: usize,
    /// Aggregation order.
    pub order: Order,
    /// Bytes read per block.
    pub block_size: usize,
}

impl Default for Engine {
    fn default() -> Self {
        Engine {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            order: Order::Sorted,
            block_size: 1 << 20,
        }
    }
}

/// A chunk of whole lines handed to a worker.
struct Chunk {
    seq: usize,
    first_line: u64,
    data: Vec<u8>,
}

impl Engine {
    /// Sequential engine (mainly for tests and stateful formats).
    pub fn single_threaded() -> Engine {
        Engine { threads: 1, ..Engine::default() }
    }

    /// Collapses `input` with `collapser`. Only I/O errors of `input` fail; malformed
    /// input is counted in the returned diagnostics.
    pub fn run<R: Read + Send>(&self, mut collapser: Box<dyn Collapse>, mut input: R) -> io::Result<Output> {
        let block = self.block();
        let mut head = Vec::with_capacity(block);
        fill(&mut input, &mut head, block)?;
        collapser.prepare(&head);
        let parallel = self.threads > 1 && collapser.fork().is_some();
        if parallel {
            self.run_parallel(collapser, head, input)
        } else {
            self.run_sequential(collapser, head, input)
        }
    }

    /// Bytes read at a time: the configured block, at least 4 KiB and at most [`MAX_LINE`]
    /// (so that the head handed to [`Collapse::prepare`] holds no over-long line).
    fn block(&self) -> usize {
        self.block_size.clamp(4096, MAX_LINE)
    }

    fn run_sequential<R: Read>(
        &self,
        mut c: Box<dyn Collapse>,
        mut buf: Vec<u8>,
        mut input: R,
    ) -> io::Result<Output> {
        let mut out = Output::new(self.order);
        let block = self.block();
        let mut cap = LineCap::new();
        let mut line = 1u64;
        let mut want = block;
        loop {
            fill(&mut input, &mut buf, want)?;
            let eof = buf.len() < want;
            cap.check(&mut buf, &mut input, &mut out.diag, line)?;
            let cut = if eof { buf.len() } else { memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1) };
            if cut == 0 && !eof {
                // One line longer than the block (and within the cap): read more.
                want = grow(buf.len(), block);
                continue;
            }
            want = block;
            c.collapse(&buf[..cut], line, &mut out);
            line += count_lines(&buf[..cut]);
            buf.drain(..cut);
            cap.consumed(cut);
            if eof {
                c.finish(&mut out);
                out.meta = c.meta();
                return Ok(out);
            }
        }
    }

    fn run_parallel<R: Read + Send>(
        &self,
        proto: Box<dyn Collapse>,
        head: Vec<u8>,
        input: R,
    ) -> io::Result<Output> {
        let threads = self.threads;
        let order = self.order;
        let (tx, rx) = mpsc::sync_channel::<Chunk>(threads * 2);
        let rx = std::sync::Mutex::new(rx);
        // Buffers the workers are done with go back to the reader, which reads the next
        // blocks into them: no block is allocated (and faulted in) afresh.
        let (back_tx, back_rx) = mpsc::channel::<Vec<u8>>();
        std::thread::scope(|s| {
            let mut workers = Vec::with_capacity(threads);
            for _ in 0..threads {
                let mut c = proto.fork().expect("fork checked by caller");
                let rx = &rx;
                let back = back_tx.clone();
                workers.push(s.spawn(move || {
                    let mut sorted = Output::new(order);
                    let mut parts: Vec<(usize, Output)> = Vec::new();
                    loop {
                        let next = rx.lock().map(|r| r.recv());
                        let Ok(Ok(chunk)) = next else { break };
                        let mut out = match order {
                            Order::Sorted => std::mem::replace(&mut sorted, Output::new(order)),
                            Order::Time => Output::new(order),
                        };
                        c.collapse(&chunk.data, chunk.first_line, &mut out);
                        c.finish(&mut out);
                        let mut used = chunk.data;
                        used.clear();
                        let _ = back.send(used); // the reader may be done: then it is dropped
                        match order {
                            Order::Sorted => sorted = out,
                            Order::Time => parts.push((chunk.seq, out)),
                        }
                    }
                    if order == Order::Sorted {
                        parts.push((0, sorted));
                    }
                    parts
                }));
            }
            drop(back_tx);
            let read_result = self.feed(&*proto, head, input, tx, back_rx);
            let mut parts: Vec<(usize, Output)> = Vec::new();
            for w in workers {
                match w.join() {
                    Ok(p) => parts.extend(p),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            let fed = read_result?;
            parts.sort_by_key(|(seq, _)| *seq);
            let mut total = Output::new(order);
            total.diag.merge(fed);
            for (_, p) in parts {
                total.stacks.append(p.stacks);
                total.diag.merge(p.diag);
            }
            total.meta = proto.meta();
            Ok(total)
        })
    }

    /// Reads the input and sends chunks cut at the collapser's split points. Returns what it
    /// noted about the input (over-long lines and records).
    fn feed<R: Read>(
        &self,
        c: &dyn Collapse,
        mut buf: Vec<u8>,
        mut input: R,
        tx: mpsc::SyncSender<Chunk>,
        recycled: mpsc::Receiver<Vec<u8>>,
    ) -> io::Result<Diagnostics> {
        let mut diag = Diagnostics::new();
        let block = self.block();
        let mut cap = LineCap::new();
        let mut seq = 0;
        let mut line = 1u64;
        let mut want = block;
        loop {
            fill(&mut input, &mut buf, want)?;
            let eof = buf.len() < want;
            cap.check(&mut buf, &mut input, &mut diag, line)?;
            let cut = if eof {
                buf.len()
            } else {
                let whole = memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1);
                match c.split_point(&buf[..whole]) {
                    Some(cut) => cut,
                    None if whole > MAX_LINE => {
                        // No record boundary in the cap's worth of whole lines: cut at a line.
                        let at = line + count_lines(&buf[..whole]);
                        diag.note(RECORD_TOO_LONG, at, || {
                            format!(
                                "a record boundary within {} MiB, found none: the input was cut \
                                 before this line, and a record spanning the cut may be split",
                                MAX_LINE >> 20
                            )
                        });
                        whole
                    }
                    None => 0,
                }
            };
            if cut == 0 && !eof {
                // No record boundary in this block: grow it.
                want = grow(buf.len(), block);
                continue;
            }
            want = block;
            let mut rest = recycled.try_recv().unwrap_or_else(|_| Vec::with_capacity(block));
            rest.extend_from_slice(&buf[cut..]);
            buf.truncate(cut);
            let data = std::mem::replace(&mut buf, rest);
            cap.consumed(cut);
            let lines = count_lines(&data);
            if !data.is_empty() && tx.send(Chunk { seq, first_line: line, data }).is_err() {
                return Ok(diag);
            }
            seq += 1;
            line += lines;
            if eof {
                return Ok(diag);
            }
        }
    }
}

/// Keeps lines longer than [`MAX_LINE`] out of the engine's buffer: each is replaced by a
/// blank line (so that line numbers stay right and a format sees a record end there) and
/// counted under [`LINE_TOO_LONG`]. It tracks the line being read across buffer fills; the
/// engine tells it what it cut off the front of the buffer.
struct LineCap {
    /// Offset in the buffer where the current (not yet ended) line starts.
    start: usize,
    /// Offset up to which the buffer was searched for newlines.
    scanned: usize,
}

impl LineCap {
    fn new() -> LineCap {
        LineCap { start: 0, scanned: 0 }
    }

    /// Checks what was added to `buf` since the last call (`first_line` is the number of
    /// its first line). A current line that is already longer than the cap without its
    /// newline is read through to its end from `input` without being kept.
    fn check<R: Read>(
        &mut self,
        buf: &mut Vec<u8>,
        input: &mut R,
        diag: &mut Diagnostics,
        first_line: u64,
    ) -> io::Result<()> {
        // The number of the line that starts at `start`: worked out only for a line that is
        // reported, so that the common case reads no byte twice.
        let line_at = |buf: &[u8], start: usize| first_line + count_lines(&buf[..start]);
        loop {
            // Everything from the current line's start on fits in the cap: no line of it can
            // pass the cap, and only where the last one starts matters.
            if buf.len() - self.start <= MAX_LINE {
                if let Some(i) = memchr::memrchr(b'\n', &buf[self.scanned..]) {
                    self.start = self.scanned + i + 1;
                }
                self.scanned = buf.len();
                return Ok(());
            }
            match memchr::memchr(b'\n', &buf[self.scanned..]) {
                Some(i) => {
                    let newline = self.scanned + i;
                    if newline - self.start > MAX_LINE {
                        let len = (newline - self.start) as u64;
                        let line = line_at(buf, self.start);
                        buf.drain(self.start..newline);
                        diag.skip(LINE_TOO_LONG, line, || line_too_long_message(len));
                        self.scanned = self.start + 1;
                    } else {
                        self.scanned = newline + 1;
                    }
                    self.start = self.scanned;
                }
                None if buf.len() - self.start > MAX_LINE => {
                    let mut len = (buf.len() - self.start) as u64;
                    buf.truncate(self.start);
                    let mut scratch = vec![0u8; 1 << 16];
                    let rest = loop {
                        let n = match input.read(&mut scratch) {
                            Ok(0) => break &scratch[..0],
                            Ok(n) => n,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(e) => return Err(e),
                        };
                        if let Some(i) = memchr::memchr(b'\n', &scratch[..n]) {
                            len += i as u64;
                            break &scratch[i + 1..n];
                        }
                        len += n as u64;
                    };
                    let line = line_at(buf, self.start);
                    buf.push(b'\n');
                    buf.extend_from_slice(rest);
                    diag.skip(LINE_TOO_LONG, line, || line_too_long_message(len));
                    self.scanned = self.start + 1;
                    self.start = self.scanned;
                }
                None => {
                    self.scanned = buf.len();
                    return Ok(());
                }
            }
        }
    }

    /// The engine removed `n` bytes from the front of the buffer: whole lines, or all of it
    /// at the end of the input.
    fn consumed(&mut self, n: usize) {
        self.start = self.start.saturating_sub(n);
        self.scanned = self.scanned.saturating_sub(n);
    }
}

/// Reads until `buf` holds `want` bytes or the input ends (without zero-filling the buffer
/// first: `read_to_end` reads into spare capacity).
fn fill<R: Read>(input: &mut R, buf: &mut Vec<u8>, want: usize) -> io::Result<()> {
    if buf.len() >= want {
        return Ok(());
    }
    buf.reserve(want - buf.len());
    let limit = (want - buf.len()) as u64;
    input.by_ref().take(limit).read_to_end(buf)?;
    Ok(())
}

/// The next size of a buffer that holds no place to cut: doubled (so that the searches for a
/// cut over the whole buffer cost linear time in all), at least one block more; past the
/// cap, one block more at a time (the buffer then holds at most a cap's worth of whole lines
/// and a last line within the cap).
fn grow(len: usize, block: usize) -> usize {
    (len + block).max(len.saturating_mul(2).min(MAX_LINE + block))
}

fn count_lines(data: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', data).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collapse::lines;
    use crate::fold::Weight;

    /// A toy format: records are lines `stack count`, each independent.
    struct Toy;
    impl Collapse for Toy {
        fn collapse(&mut self, chunk: &[u8], first: u64, out: &mut Output) {
            for (n, l) in lines(chunk, first) {
                match crate::fold::read::parse_line(l) {
                    Ok(Some(f)) => out.stacks.add(f.stack, f.weight),
                    Ok(None) => {}
                    Err((k, m)) => out.diag.skip(k, n, || m),
                }
            }
        }
        fn finish(&mut self, _: &mut Output) {}
        fn split_point(&self, buf: &[u8]) -> Option<usize> {
            memchr::memrchr(b'\n', buf).map(|i| i + 1).filter(|&i| i < buf.len() || i > 0)
        }
        fn fork(&self) -> Option<Box<dyn Collapse>> {
            Some(Box::new(Toy))
        }
    }

    fn input() -> Vec<u8> {
        let mut s = Vec::new();
        for i in 0..20_000u32 {
            s.extend_from_slice(format!("s{};f{} {}\n", i % 97, i % 13, i % 5).as_bytes());
            if i % 777 == 0 {
                s.extend_from_slice(b"garbage\n");
            }
        }
        s
    }

    #[test]
    fn same_result_for_any_thread_count_and_block_size() {
        let data = input();
        let reference = Engine::single_threaded().run(Box::new(Toy), &data[..]).unwrap();
        for threads in [1, 2, 3, 8] {
            for block_size in [4096, 10_000, 1 << 20] {
                for order in [Order::Sorted, Order::Time] {
                    let e = Engine { threads, order, block_size };
                    let out = e.run(Box::new(Toy), &data[..]).unwrap();
                    assert_eq!(out.diag, reference.diag, "threads {threads} block {block_size}");
                    if order == Order::Sorted {
                        assert_eq!(out.stacks.in_output_order(), reference.stacks.in_output_order());
                    } else {
                        let seq =
                            Engine { threads: 1, order, block_size }.run(Box::new(Toy), &data[..]).unwrap();
                        assert_eq!(out.stacks.in_output_order(), seq.stacks.in_output_order());
                    }
                }
            }
        }
        assert_eq!(reference.diag.get("no count").unwrap().first_line, 2);
        assert_eq!(reference.diag.get("no count").unwrap().count, 26);
        let total: Weight = reference.stacks.total();
        assert_eq!(total.whole(), (0..20_000u64).map(|i| i % 5).sum::<u64>());
    }

    #[test]
    fn an_over_long_line_is_skipped_alike_on_one_or_more_threads() {
        let mut data = b"a;b 1\n".to_vec();
        data.resize(data.len() + MAX_LINE + 100, 0);
        data.extend_from_slice(b"\nc 2\nd 3\n");
        data.resize(data.len() + MAX_LINE + 1, b'x');
        let mut reference = None;
        for threads in [1, 2] {
            for block_size in [4096, 1 << 20] {
                let e = Engine { threads, order: Order::Sorted, block_size };
                let out = e.run(Box::new(Toy), &data[..]).unwrap();
                assert_eq!(out.stacks.total().whole(), 6, "threads {threads} block {block_size}");
                assert_eq!(out.stacks.len(), 3);
                let long = out.diag.get(LINE_TOO_LONG).expect("over-long lines reported");
                assert_eq!((long.count, long.first_line), (2, 2));
                assert!(long.message.contains(&format!("{} bytes", MAX_LINE + 100)), "{}", long.message);
                assert_eq!(out.diag.skipped(), 2, "nothing else skipped");
                let reference = reference.get_or_insert_with(|| out.diag.clone());
                assert_eq!(&out.diag, reference, "threads {threads} block {block_size}");
            }
        }
    }

    /// A format whose records never end (no split point): the parallel engine cuts at a line
    /// once the cap is reached, and says so.
    #[test]
    fn records_without_boundary_are_cut_at_the_cap() {
        struct Endless;
        impl Collapse for Endless {
            fn collapse(&mut self, chunk: &[u8], first: u64, out: &mut Output) {
                Toy.collapse(chunk, first, out)
            }
            fn finish(&mut self, _: &mut Output) {}
            fn split_point(&self, _: &[u8]) -> Option<usize> {
                None
            }
            fn fork(&self) -> Option<Box<dyn Collapse>> {
                Some(Box::new(Endless))
            }
        }
        let mut line = "frame;".repeat(700).into_bytes();
        line.extend_from_slice(b"leaf 1\n");
        let n = (2 * MAX_LINE + MAX_LINE / 2) / line.len();
        let data = line.repeat(n);
        let e = Engine { threads: 2, order: Order::Sorted, block_size: 1 << 20 };
        let out = e.run(Box::new(Endless), &data[..]).unwrap();
        assert_eq!(out.stacks.total().whole(), n as u64, "every line still read");
        let cut = out.diag.get(RECORD_TOO_LONG).expect("the cuts are noted");
        assert_eq!(cut.count, 2);
        assert_eq!(out.diag.skipped(), 0);
    }

    #[test]
    fn long_lines_and_missing_final_newline() {
        let mut data = vec![b'x'; 3 * 4096];
        data.extend_from_slice(b" 7\ny 1");
        for threads in [1, 2] {
            let e = Engine { threads, order: Order::Sorted, block_size: 4096 };
            let out = e.run(Box::new(Toy), &data[..]).unwrap();
            assert_eq!(out.stacks.total().whole(), 8);
            assert_eq!(out.stacks.len(), 2);
        }
    }
}

//! The collapse engine: streams any input through a [`Collapse`] in bounded memory, on one
//! or several threads, with identical output either way.
//!
//! Data flow (parallel mode):
//! ```text
//! reader thread ──blocks cut at split_point──▶ bounded channel ──▶ N workers (forked
//! collapsers, one Output each) ──▶ merge (counts: sum, commutative; ordered: by chunk seq)
//! ```
//! Memory is bounded by `block_size × (2 × threads + 2)` plus the distinct stacks, never
//! by the input size. A record longer than a block grows the block until it fits.

use std::io::{self, Read};
use std::sync::mpsc;

use super::{Collapse, Output};
use crate::fold::{OrderedStacks, StackCounts, Stacks};

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
        let block = self.block_size.max(4096);
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

    fn run_sequential<R: Read>(
        &self,
        mut c: Box<dyn Collapse>,
        mut buf: Vec<u8>,
        mut input: R,
    ) -> io::Result<Output> {
        let mut out = Output::new(self.order);
        let block = self.block_size.max(4096);
        let mut line = 1u64;
        let mut want = block;
        loop {
            fill(&mut input, &mut buf, want)?;
            let eof = buf.len() < want;
            let cut = if eof { buf.len() } else { memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1) };
            if cut == 0 && !eof {
                // One line longer than the block: read more.
                want = buf.len() + block;
                continue;
            }
            want = block;
            c.collapse(&buf[..cut], line, &mut out);
            line += count_lines(&buf[..cut]);
            buf.drain(..cut);
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
        std::thread::scope(|s| {
            let mut workers = Vec::with_capacity(threads);
            for _ in 0..threads {
                let mut c = proto.fork().expect("fork checked by caller");
                let rx = &rx;
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
            let read_result = self.feed(&*proto, head, input, tx);
            let mut parts: Vec<(usize, Output)> = Vec::new();
            for w in workers {
                match w.join() {
                    Ok(p) => parts.extend(p),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            read_result?;
            parts.sort_by_key(|(seq, _)| *seq);
            let mut total = Output::new(order);
            for (_, p) in parts {
                total.stacks.append(p.stacks);
                total.diag.merge(p.diag);
            }
            total.meta = proto.meta();
            Ok(total)
        })
    }

    /// Reads the input and sends chunks cut at the collapser's split points.
    fn feed<R: Read>(
        &self,
        c: &dyn Collapse,
        mut buf: Vec<u8>,
        mut input: R,
        tx: mpsc::SyncSender<Chunk>,
    ) -> io::Result<()> {
        let block = self.block_size.max(4096);
        let mut seq = 0;
        let mut line = 1u64;
        let mut want = block;
        loop {
            fill(&mut input, &mut buf, want)?;
            let eof = buf.len() < want;
            let cut = if eof {
                buf.len()
            } else {
                let whole = memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1);
                c.split_point(&buf[..whole]).unwrap_or(0)
            };
            if cut == 0 && !eof {
                // No record boundary in this block: grow it.
                want = buf.len() + block;
                continue;
            }
            want = block;
            let rest = buf.split_off(cut);
            let data = std::mem::replace(&mut buf, rest);
            let lines = count_lines(&data);
            if !data.is_empty() && tx.send(Chunk { seq, first_line: line, data }).is_err() {
                return Ok(());
            }
            seq += 1;
            line += lines;
            if eof {
                return Ok(());
            }
        }
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

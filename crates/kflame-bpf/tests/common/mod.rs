//! Live tests' helpers (they may read the host): kernel symbols, the calling thread's id.

#![allow(dead_code)] // each test file uses some

/// The kernel's symbols from /proc/kallsyms (a live test may read the host), read once.
pub(crate) struct Kallsyms(Vec<(u64, String)>);

impl Kallsyms {
    pub(crate) fn read() -> Kallsyms {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let a = u64::from_str_radix(it.next()?, 16).ok()?;
                let _kind = it.next()?;
                Some((a, it.next()?.to_string()))
            })
            .filter(|(a, _)| *a != 0)
            .collect();
        syms.sort_unstable();
        Kallsyms(syms)
    }

    /// The symbol of each address.
    pub(crate) fn names(&self, addrs: &[u64]) -> Vec<String> {
        addrs
            .iter()
            .map(|&a| match self.0.partition_point(|s| s.0 <= a) {
                0 => format!("{a:#x}"),
                i => self.0[i - 1].1.clone(),
            })
            .collect()
    }
}

pub(crate) fn gettid() -> u32 {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .unwrap_or(0)
}

//! `bench/fixes.sh`'s measurement: builds (or updates) the fix index of a repository and
//! times queries through the library, as `kflame fixes` and its library callers make them.
//!
//! Usage: fixes_bench REPO INDEX_DIR [QUERY]...  where QUERY is `f1,f2[@REV]` (functions,
//! and optionally the `after` revision).

#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use std::path::Path;
use std::time::Instant;

use kflame_fixes::{Index, Query};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: fixes_bench REPO INDEX_DIR [f1,f2[@REV]]...");
        std::process::exit(2);
    }
    let t = Instant::now();
    let index = match Index::open_or_build(Path::new(&args[1]), Some(Path::new(&args[2]))) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("fixes_bench: {e}");
            std::process::exit(1);
        }
    };
    let st = index.stats();
    println!(
        "open_or_build: {} ms ({} commits added, {} in the index, rebuilt: {})",
        t.elapsed().as_millis(),
        st.added,
        st.total,
        st.rebuilt.as_deref().unwrap_or("no")
    );
    let mut worst = 0.0f64;
    for q in &args[3..] {
        let (funcs, after) = match q.split_once('@') {
            Some((f, a)) => (f, Some(a.to_string())),
            None => (q.as_str(), None),
        };
        let query = Query {
            functions: funcs.split(',').map(str::to_string).collect(),
            after,
            limit: 10,
            ..Query::default()
        };
        let mut times = Vec::new();
        let mut n = 0;
        for _ in 0..5 {
            let t = Instant::now();
            match index.search(&query) {
                Ok(h) => n = h.len(),
                Err(e) => {
                    eprintln!("fixes_bench: {e}");
                    std::process::exit(1);
                }
            }
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        worst = worst.max(times[4]);
        let shown = if q.len() > 70 { format!("{}...", &q[..70]) } else { q.clone() };
        println!("query {shown:<74} {n:>2} hits  median {:6.2} ms  worst {:6.2} ms", times[2], times[4]);
    }
    println!("worst query: {worst:.2} ms");
}

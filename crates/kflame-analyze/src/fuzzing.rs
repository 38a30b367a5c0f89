//! Entry points of the analyzer's fuzz targets (`fuzz/fuzz_targets/<name>.rs` call them;
//! `tests/fuzz_replay.rs` replays them over `fuzz/corpus/<name>/` and
//! `fuzz/regressions/<name>/`): the parsers of text the analyzer reads from a kernel tree,
//! which may hold anything.

/// A fuzz target: panics when a property does not hold.
pub type Target = fn(&[u8]);

/// Every target, by name.
pub const TARGETS: &[(&str, Target)] = &[("source_scan", source_scan), ("maintainers", maintainers)];

/// The C scanner of the source index: no panic; every definition's lines are within the
/// file and in order, and it names something.
pub fn source_scan(data: &[u8]) {
    let lines = data.iter().filter(|&&b| b == b'\n').count() as u32 + 1;
    for d in crate::source::scan(data) {
        assert!(!d.names.is_empty(), "a definition without a name");
        assert!(
            1 <= d.start && d.start <= d.end && d.end <= lines,
            "lines {}..{} of {lines}",
            d.start,
            d.end
        );
    }
}

/// `MAINTAINERS`: no panic; the sections of a path are found whatever the text, each with
/// the pattern that matched it, and a path under an `X:` exclusion of a section is never
/// given that section by its `F:` patterns.
pub fn maintainers(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let m = crate::maintainers::Maintainers::parse(&text);
    // Paths named by the text itself, and a few fixed ones.
    let named = text.lines().filter_map(|l| l.strip_prefix("F:").or_else(|| l.strip_prefix("X:")));
    let paths: Vec<String> = named
        .map(|p| p.trim().replace(['*', '?'], "x"))
        .chain(["fs/ext4/inode.c", "drivers/net/x.c", "README"].map(String::from))
        .take(64)
        .collect();
    for p in &paths {
        for s in m.for_file(p) {
            assert!(!s.matched.is_empty(), "{p}: section {:?} without its pattern", s.name);
        }
    }
}

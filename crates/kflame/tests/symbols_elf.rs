//! ELF symbol tables read through `kflame::symbols` from real binaries: this test binary
//! itself (one live test finds it through its own `/proc/self/maps`), a corrupted copy of
//! it, and non-ELF files.

use std::path::Path;

use kflame::symbols::{ElfSymbols, demangle, parse_proc_maps_line, read_build_id};

fn own_exe() -> std::path::PathBuf {
    std::env::current_exe().expect("test binary path")
}

/// Live test: reads this process's own memory map.
#[test]
fn live_own_function_is_named_by_file_offset() {
    let syms = ElfSymbols::open(&own_exe(), Path::new("/")).expect("test binary is ELF");
    assert!(syms.len() > 100, "{} symbols", syms.len());
    let maps = std::fs::read_to_string("/proc/self/maps").expect("own maps");
    let addr = live_own_function_is_named_by_file_offset as *const () as usize as u64;
    let map = maps
        .lines()
        .filter_map(parse_proc_maps_line)
        .find(|m| addr >= m.start && addr < m.end)
        .expect("executable mapping of our own code");
    let sym = syms.lookup(map.file_offset(addr)).expect("symbol of own function");
    let name = demangle(sym.name);
    assert!(name.ends_with("live_own_function_is_named_by_file_offset"), "{name}");
}

#[test]
fn build_id_of_own_binary_matches_the_table() {
    let bytes = std::fs::read(own_exe()).expect("read test binary");
    let syms = ElfSymbols::parse(&bytes).expect("test binary is ELF");
    assert_eq!(read_build_id(&bytes).as_deref(), syms.build_id());
    assert_eq!(read_build_id(b"not an elf file"), None);
}

/// A real ELF image with bytes overwritten all over its headers and tables: parsing and
/// looking up may find nothing, but never panic or allocate without bound.
#[test]
fn corrupted_elf_never_panics() {
    let exe = std::fs::read(own_exe()).expect("read test binary");
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..40 {
        let mut bytes = exe[..exe.len().min(1 << 20)].to_vec();
        for _ in 0..64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at =
                if x.is_multiple_of(2) { (x >> 8) as usize % 64 } else { (x >> 8) as usize % bytes.len() };
            bytes[at] = (x >> 40) as u8;
        }
        if let Ok(syms) = ElfSymbols::parse(&bytes) {
            for off in [0u64, 0x1000, 0x12345, u64::MAX] {
                let _ = syms.lookup(off);
            }
        }
    }
}

#[test]
fn non_elf_is_an_error() {
    let text = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/perf-data/README.md");
    assert!(ElfSymbols::open(Path::new(text), Path::new("/")).is_err());
    assert!(ElfSymbols::open(Path::new("/nonexistent/file"), Path::new("/")).is_err());
    assert!(ElfSymbols::open(Path::new("/"), Path::new("/")).is_err());
}

/// DWARF function names with their inline chain, from the `gcc -O2 -g` fixture binary of
/// tests/data/perf-data (its text segment has equal file offsets and addresses).
#[test]
fn dwarf_names_give_the_inline_chain() {
    use kflame::symbols::DwarfNames;
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perf-data/symfs/opt/kflame-demo/bin");
    let dwarf = DwarfNames::open(&bin.join("inline-nofp")).unwrap().expect("built with -g");
    let syms = ElfSymbols::open(&bin.join("inline-nofp"), Path::new("/nonexistent")).unwrap();
    let start = (0..0x4000u64).find(|&a| syms.lookup(a).is_some_and(|s| s.name == "hot_path")).unwrap();
    let chains: Vec<Vec<String>> = (start..start + 0x40).map(|a| dwarf.functions(a)).collect();
    assert!(chains.iter().all(|c| c.last().map(String::as_str) == Some("hot_path")), "{chains:?}");
    assert!(chains.contains(&vec!["mix".into(), "churn".into(), "hot_path".into()]), "{chains:?}");
    assert!(dwarf.functions(0xdead_0000).is_empty());
    // Without debug information: nothing, not an error; not ELF: an error.
    assert!(DwarfNames::open(&bin.join("workload-nofp")).unwrap().is_none());
    assert!(DwarfNames::parse(b"not an ELF file").is_err());
}

/// Bytes flipped in the debug sections of the `-g` fixture binary: lookups may find less,
/// never panic.
#[test]
fn damaged_dwarf_never_panics() {
    use kflame::symbols::DwarfNames;
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/perf-data/symfs/opt/kflame-demo/bin/inline-nofp");
    let good = std::fs::read(bin).unwrap();
    // Damage past the ELF and program headers (code, unwind tables, DWARF, section headers).
    let debug_start = good.len() / 6;
    let mut parsed = 0;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..300 {
        let mut bytes = good.clone();
        for _ in 0..16 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = debug_start + (x >> 8) as usize % (bytes.len() - debug_start);
            bytes[at] = (x >> 40) as u8;
        }
        if let Ok(Some(dwarf)) = DwarfNames::parse(&bytes) {
            parsed += 1;
            for addr in (0x1000..0x1400).step_by(7) {
                let _ = dwarf.functions(addr);
            }
        }
    }
    assert!(parsed > 30, "only {parsed} damaged copies parsed: the lookups were hardly exercised");
}

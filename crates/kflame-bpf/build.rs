//! Compiles the BPF programs of `src/bpf/` with clang (`-target bpf`, with BTF for CO-RE) into
//! the build's output directory; the crate embeds the objects. clang and libbpf's headers
//! come from Debian's `clang` and `libbpf-dev` (scripts/test and scripts/demo install them).

use std::path::PathBuf;
use std::process::Command;

/// The programs of `src/bpf/`, each `NAME.bpf.c` built into `NAME.bpf.o`.
const PROGRAMS: &[&str] = &["offcpu", "locks", "runq", "bio", "syscalls"];

/// Headers the programs include.
const HEADERS: &[&str] = &[
    "src/bpf/common.h",
    "src/bpf/wait.h",
    "src/bpf/sync.h",
    "src/bpf/hist.h",
    "src/bpf/outlier.h",
    "src/bpf/budget.h",
];

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let clang = std::env::var("KFLAME_CLANG").unwrap_or_else(|_| "clang".to_string());
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_else(|_| "x86_64".to_string());
    let multiarch = format!("/usr/include/{arch}-linux-gnu");
    println!("cargo:rerun-if-env-changed=KFLAME_CLANG");
    for h in HEADERS {
        println!("cargo:rerun-if-changed={h}");
    }
    for name in PROGRAMS {
        let src = format!("src/bpf/{name}.bpf.c");
        println!("cargo:rerun-if-changed={src}");
        let obj = out.join(format!("{name}.bpf.o"));
        let status = Command::new(&clang)
            .args(["-target", "bpf", "-O2", "-g", "-Wall", "-Werror"])
            .arg(format!("-I{multiarch}"))
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(&obj)
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => panic!("{clang} failed on {src} ({s})"),
            Err(e) => panic!(
                "cannot run {clang} to build {src}: {e}; install Debian's clang and libbpf-dev \
                 (scripts/test does), or set KFLAME_CLANG"
            ),
        }
    }
}

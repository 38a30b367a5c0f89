//! Symbol demangling as `perf` prints names: C++ without parameter lists, Rust without
//! hashes.

use std::borrow::Cow;

/// Demangles a C++ (`_Z…`) or Rust (`_ZN…17h…E`, `_R…`) symbol the way `perf script` shows
/// it (`llvm::Foo::bar`, `<core::fmt::Formatter>::pad`); other names are returned as is.
pub fn demangle(name: &str) -> Cow<'_, str> {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return Cow::Owned(format!("{d:#}"));
    }
    if name.starts_with("_Z") {
        if let Some(d) = cpp(name) {
            return Cow::Owned(d);
        }
    }
    Cow::Borrowed(name)
}

fn cpp(name: &str) -> Option<String> {
    let sym = cpp_demangle::Symbol::new(name.as_bytes()).ok()?;
    let opts = cpp_demangle::DemangleOptions::new().no_params().no_return_type();
    sym.demangle_with_options(&opts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_perf() {
        assert_eq!(demangle("_ZN4llvm16X86TargetMachineD0Ev"), "llvm::X86TargetMachine::~X86TargetMachine");
        assert_eq!(
            demangle("_RNvMs3_NtNtCsdadwybgsbvk_12rustc_middle2ty7contextNtB5_13CtxtInterners9intern_ty"),
            "<rustc_middle::ty::context::CtxtInterners>::intern_ty"
        );
        assert_eq!(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
        assert_eq!(demangle("memcpy"), "memcpy");
        assert_eq!(demangle("_Zgarbage("), "_Zgarbage(");
    }
}

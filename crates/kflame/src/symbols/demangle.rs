//! Symbol demangling as `perf` prints names: C++ without parameter lists, Rust without
//! hashes.

use std::borrow::Cow;

/// Demangles a C++ (`_Z…`) or Rust (`_ZN…17h…E`, `_R…`) symbol the way `perf script` shows
/// it (`llvm::Foo::bar`, `<core::fmt::Formatter>::pad`); other names are returned as is.
pub fn demangle(name: &str) -> Cow<'_, str> {
    // libiberty drops compiler suffixes (`.llvm.123`, `.warm`) of Rust v0 names.
    let rust = if name.starts_with("_R") { name.split('.').next().unwrap_or(name) } else { name };
    if let Ok(d) = rustc_demangle::try_demangle(rust) {
        return Cow::Owned(format!("{d:#}"));
    }
    if let Some((label, target)) = thunk(name)
        && let Some(d) = cpp(&target)
    {
        return Cow::Owned(format!("{label}{d}"));
    }
    if name.starts_with("_Z")
        && let Some(d) = cpp(name)
    {
        return Cow::Owned(d);
    }
    Cow::Borrowed(name)
}

/// A C++ thunk (`_ZTh…`, `_ZTv…`, `_ZTc…`): libiberty's words for it and the mangled name
/// of its target (cpp_demangle spells thunks `{virtual override thunk(...)}`).
fn thunk(name: &str) -> Option<(&'static str, String)> {
    let rest = name.strip_prefix("_ZT")?;
    let (label, target) = match rest.as_bytes().first()? {
        b'h' => ("non-virtual thunk to ", call_offset(rest)?),
        b'v' => ("virtual thunk to ", call_offset(rest)?),
        b'c' => ("covariant return thunk to ", call_offset(call_offset(&rest[1..])?)?),
        _ => return None,
    };
    Some((label, format!("_Z{target}")))
}

/// What follows a `<call-offset>` at the start of `s`: `h <number> _` or
/// `v <number> _ <number> _` (a number may start with `n`, negative).
fn call_offset(s: &str) -> Option<&str> {
    fn number(s: &str) -> Option<&str> {
        let s = s.strip_prefix('n').unwrap_or(s);
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        s[digits..].strip_prefix('_')
    }
    match s.as_bytes().first()? {
        b'h' => number(&s[1..]),
        b'v' => number(number(&s[1..])?),
        _ => None,
    }
}

fn cpp(name: &str) -> Option<String> {
    let sym = cpp_demangle::Symbol::new(name.as_bytes()).ok()?;
    let opts = cpp_demangle::DemangleOptions::new().no_params().no_return_type();
    let mut text = sym.demangle_with_options(&opts).ok()?;
    // Without parameters libiberty prints no method qualifiers either.
    while let Some(t) = [" const", " volatile", " &&", " &"].iter().find_map(|q| text.strip_suffix(q)) {
        text.truncate(t.len());
    }
    Some(like_libiberty(&text))
}

/// Rewrites the few spots where cpp_demangle's output differs from GNU libiberty's (which
/// perf uses): integer literals `(unsigned long)8` are `8ul`, `(bool)1` is `true`, and an
/// empty parameter pack leaves no `, ` behind.
fn like_libiberty(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('(') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        match literal(rest) {
            Some((lit, used)) => {
                out.push_str(&lit);
                rest = &rest[used..];
            }
            None => {
                out.push('(');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    while out.contains(", >") {
        out = out.replace(", >", ">");
    }
    out.replace("<, ", "<")
}

/// `(type)digits` at the start of `s`: libiberty's spelling and the bytes consumed.
fn literal(s: &str) -> Option<(String, usize)> {
    const SUFFIXES: &[(&str, &str)] = &[
        ("(int)", ""),
        ("(unsigned int)", "u"),
        ("(long)", "l"),
        ("(unsigned long)", "ul"),
        ("(long long)", "ll"),
        ("(unsigned long long)", "ull"),
        ("(bool)", "bool"),
    ];
    let &(ty, suffix) = SUFFIXES.iter().find(|(ty, _)| s.starts_with(ty))?;
    let num = &s[ty.len()..];
    let neg = num.starts_with('-');
    let digits = num[usize::from(neg)..].bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let len = ty.len() + usize::from(neg) + digits;
    let value = &s[ty.len()..len];
    let text = match suffix {
        "bool" if value == "0" => "false".to_string(),
        "bool" if value == "1" => "true".to_string(),
        "bool" => return None,
        _ => format!("{value}{suffix}"),
    };
    Some((text, len))
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
        assert_eq!(
            demangle("_ZNK4llvm10ModulePass27getPotentialPassManagerTypeEv"),
            "llvm::ModulePass::getPotentialPassManagerType"
        );
        assert_eq!(demangle("_RNvCs1234_5crate3foo.llvm.9362712566924669442.warm"), "crate::foo");
        assert_eq!(
            demangle("_ZN4llvm11PassManagerINS_8FunctionENS_15AnalysisManagerIS1_JEEEJEE3runERS1_RS3_"),
            "llvm::PassManager<llvm::Function, llvm::AnalysisManager<llvm::Function>>::run"
        );
        assert_eq!(
            like_libiberty("A<(unsigned long)8, (int)-1, (bool)1, (char)65>"),
            "A<8ul, -1, true, (char)65>"
        );
        assert_eq!(demangle("_Zgarbage("), "_Zgarbage(");
    }

    /// Expected spellings are those of binutils 2.40's `c++filt -p` (libiberty, what perf
    /// uses), without the parameter lists perf leaves out of thunk targets too.
    #[test]
    fn thunks_as_libiberty_spells_them() {
        assert_eq!(demangle("_ZThn8_N1C1fEv"), "non-virtual thunk to C::f");
        assert_eq!(demangle("_ZTv0_n24_N1C1fEv"), "virtual thunk to C::f");
        assert_eq!(demangle("_ZTch0_h16_N1C1fEv"), "covariant return thunk to C::f");
        assert_eq!(
            demangle("_ZThn96_N4llvm13VPInstructionD1Ev"),
            "non-virtual thunk to llvm::VPInstruction::~VPInstruction"
        );
        assert!(!demangle("_ZTVN1C1fE").contains("thunk"), "a vtable is not a thunk");
        assert_eq!(demangle("_ZNSt8functionIFviEEC2Ev"), "std::function<void (int)>::function");
        assert_eq!(demangle("_ZN3FooclEv"), "Foo::operator()");
        assert_eq!(demangle("_ZZ4mainENKUliE_clEi"), "main::{lambda(int)#1}::operator()");
    }
}

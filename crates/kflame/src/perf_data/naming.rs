//! Frame names exactly as the perf script collapser derives them from a `perf script` frame
//! line `PC SYMBOL+0xOFF (DSO)`.
//!
//! The reader does not print text, but it builds the same `SYMBOL+0xOFF (DSO)` string perf
//! would print and hands that line to the perf script collapser's parser and rules
//! (`collapse::perf::frame`: stackcollapse-perf's, as inferno pins them), so that reading a
//! perf.data file and collapsing its `perf script` output give the same frames: the DSO is
//! the last ` (…)` group; `+0x…` offsets are dropped; frames starting with `(` are skipped;
//! `a->b` inline chains become `a;b_[i]`; `[unknown]` becomes `[dso-basename]`; `;` becomes
//! `:`; an argument list (from the first `(` outside `<>`, `{}`, `[]`, other than
//! `(anonymous namespace)` and Go receivers) is cut; `_[k]` / `_[j]` / `_[i]` on request.

use crate::collapse::perf::frame::{self, FrameStyle};

/// Which optional rules apply.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NameRules {
    /// Append `_[k]` to kernel frames.
    pub(crate) annotate_kernel: bool,
    /// Append `_[j]` to JIT frames (`/tmp/perf-PID.map`).
    pub(crate) annotate_jit: bool,
    /// Write unknown frames as `[dso <pc>]`.
    pub(crate) include_addrs: bool,
    /// Show DWARF inline frames of unwound user frames (perf's default; `--no-inline`).
    pub(crate) inline: bool,
    /// Append `_[i]` to inline frames.
    pub(crate) mark_inlined: bool,
}

/// Appends the folded frame(s) for one perf frame to `out` (several joined by `;` for an
/// inline chain; nothing for a skipped frame). `text` is `SYMBOL+0xOFF (DSO)` or
/// `[unknown] (DSO)`; `pc` is the printed address; `java` is true when the process is `java`.
///
/// The line perf script would print for the frame goes through the perf script collapser's
/// own parsing and rules, so that both front ends name every frame alike.
pub(crate) fn fold_frame(out: &mut Vec<u8>, text: &str, pc: u64, java: bool, rules: NameRules) {
    let line = format!("{pc:x} {text}");
    if let Some(sl) = frame::parse(line.as_bytes(), true) {
        frame::render(&sl, rules.style(), java, out);
    }
}

impl NameRules {
    /// The perf script collapser's options for these rules.
    fn style(self) -> FrameStyle {
        FrameStyle {
            kernel: self.annotate_kernel,
            jit: self.annotate_jit,
            addrs: self.include_addrs,
            inlined: self.mark_inlined,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(text: &str, rules: NameRules) -> String {
        let mut v = Vec::new();
        fold_frame(&mut v, text, 0x1234, false, rules);
        String::from_utf8(v).unwrap()
    }

    /// What the perf script collapser makes of the same frame in a one-sample script.
    fn via_script(text: &str, rules: NameRules) -> String {
        use crate::collapse::perf::{PerfOptions, PerfScript};
        use crate::collapse::{Collapse, Order, Output};
        let opts = PerfOptions {
            annotate_kernel: rules.annotate_kernel,
            annotate_jit: rules.annotate_jit,
            include_addrs: rules.include_addrs,
            mark_inlined: rules.mark_inlined,
            ..PerfOptions::default()
        };
        let script = format!("x 1 [000] 1.0: 1 cpu-clock:\n\t{:>16x} {text}\n\n", 0x1234);
        let mut c = PerfScript::new(opts);
        let mut out = Output::new(Order::Sorted);
        c.collapse(script.as_bytes(), 1, &mut out);
        c.finish(&mut out);
        let stacks = out.stacks.in_output_order();
        assert_eq!(stacks.len(), 1, "{text}");
        let stack = String::from_utf8_lossy(stacks[0].0).into_owned();
        stack.strip_prefix("x;").unwrap_or_default().to_string()
    }

    /// Every rule gives the frame the perf script collapser gives the line perf prints.
    #[test]
    fn frames_are_named_as_the_perf_script_collapser_names_them() {
        let d = NameRules::default();
        let k = NameRules { annotate_kernel: true, annotate_jit: true, include_addrs: true, ..d };
        let i = NameRules { mark_inlined: true, ..d };
        let cases = [
            ("do_syscall_64+0x71 ([kernel.kallsyms])", d, "do_syscall_64"),
            ("[unknown] (/usr/lib/libc.so.6)", d, "[libc.so.6]"),
            ("[unknown] ([unknown])", d, "[unknown]"),
            ("[unknown] ([vdso])", d, "[[vdso]]"),
            ("llvm::Foo<int>::bar(int) const+0x10 (/x/libLLVM.so)", d, "llvm::Foo<int>::bar"),
            // A cast in a template argument is not an argument list.
            (
                "llvm::RegisterTarget<(llvm::Triple::ArchType)31, false>::getArchMatch+0x0 (/x/libLLVM.so)",
                d,
                "llvm::RegisterTarget<(llvm::Triple::ArchType)31, false>::getArchMatch",
            ),
            // C++ anonymous namespaces are kept (stackcollapse-perf takes them for comms).
            ("(anonymous namespace)::X::f+0x0 (/x/libLLVM.so)", d, "(anonymous namespace)::X::f"),
            ("a::(anonymous namespace)::f(int)+0x0 (/x/l.so)", d, "a::(anonymous namespace)::f"),
            ("net/http.(*Client).Do+0x5 (/bin/go)", d, "net/http.(*Client).Do"),
            ("f->g+0x1 (/bin/x)", d, "f;g_[i]"),
            ("inlined_fn+0x1 (inlined)", i, "inlined_fn_[i]"),
            ("inlined_fn+0x1 (inlined)", d, "inlined_fn"),
            ("schedule+0x1 ([kernel.kallsyms])", k, "schedule_[k]"),
            ("[unknown] ([kernel.kallsyms])", k, "[[kernel.kallsyms] <1234>]_[k]"),
            ("[unknown] (/tmp/perf-42.map)", k, "[perf-42.map <1234>]_[j]"),
            ("[unknown] ([unknown])", k, "[unknown <1234>]"),
        ];
        for (text, rules, want) in cases {
            assert_eq!(fold(text, rules), want, "{text}");
            assert_eq!(fold(text, rules), via_script(text, rules), "{text}");
        }
        // Quirky lines: whatever the perf script collapser makes of them.
        for text in
            ["[unknown] (/memfd:sealed-9 (deleted))", "a;b\"c'+0x1 (/bin/x)", "Foo::operator->+0x1 (/bin/x)"]
        {
            assert_eq!(fold(text, d), via_script(text, d), "{text}");
        }
    }
}

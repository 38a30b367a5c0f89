//! Which kind of output a file name asks for, decided in one place for every command that
//! writes stacks or graphs (`kflame flamegraph`, `kflame record`, later the watcher).

use std::path::Path;

/// What an output file holds, as its name says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputKind {
    /// Folded stacks (`.folded`).
    Folded,
    /// JSON lines, one event each (`.json`, `.jsonl`).
    Json,
    /// An interactive SVG flame graph (`.svg`).
    Svg,
    /// The self-contained HTML viewer (`.html`, `.htm`).
    Html,
}

impl OutputKind {
    /// The extensions [`OutputKind::from_path`] knows, for messages.
    pub const KNOWN_EXTENSIONS: &'static str = ".folded, .json (.jsonl), .svg, .html (.htm)";

    /// The kind `path`'s extension names, ignoring case; `None` when it has no extension or
    /// one kflame does not know (the caller decides between a default and an error).
    pub fn from_path(path: &Path) -> Option<OutputKind> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "folded" => OutputKind::Folded,
            "json" | "jsonl" => OutputKind::Json,
            "svg" => OutputKind::Svg,
            "html" | "htm" => OutputKind::Html,
            _ => return None,
        })
    }

    /// The usual extension of this kind (without the dot).
    pub fn extension(self) -> &'static str {
        match self {
            OutputKind::Folded => "folded",
            OutputKind::Json => "json",
            OutputKind::Svg => "svg",
            OutputKind::Html => "html",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_from_extension() {
        let k = |p: &str| OutputKind::from_path(Path::new(p));
        assert_eq!(k("out/a.folded"), Some(OutputKind::Folded));
        assert_eq!(k("a.json"), Some(OutputKind::Json));
        assert_eq!(k("a.JSONL"), Some(OutputKind::Json));
        assert_eq!(k("a.svg"), Some(OutputKind::Svg));
        assert_eq!(k("A.Html"), Some(OutputKind::Html));
        assert_eq!(k("a.htm"), Some(OutputKind::Html));
        for none in ["a", "-", "a.txt", "a.png", ".svg", "svg"] {
            assert_eq!(k(none), None, "{none}");
        }
        for kind in [OutputKind::Folded, OutputKind::Json, OutputKind::Svg, OutputKind::Html] {
            assert_eq!(k(&format!("x.{}", kind.extension())), Some(kind));
            assert!(OutputKind::KNOWN_EXTENSIONS.contains(kind.extension()));
        }
    }
}

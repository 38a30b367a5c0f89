//! Palette names understood by the viewer (the colors are computed in `assets/palette.js`,
//! from a hash of each frame name, so they are stable across runs).

use std::fmt;

/// A color scheme, by its `flamegraph.pl` name plus the kernel-aware `kernel`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Palette {
    /// Reds and yellows (CPU).
    #[default]
    Hot,
    /// Greens (memory).
    Mem,
    /// Blues (I/O).
    Io,
    /// Shades of red.
    Red,
    /// Shades of green.
    Green,
    /// Shades of blue.
    Blue,
    /// Shades of aqua.
    Aqua,
    /// Shades of yellow.
    Yellow,
    /// Shades of purple.
    Purple,
    /// Shades of orange.
    Orange,
    /// Java: JIT, inlined, kernel and C++ frames apart (by `_[j]`, `_[i]`, `_[k]` and names).
    Java,
    /// JavaScript: JIT, built-in and kernel frames apart.
    Js,
    /// Perl: Perl, C and kernel frames apart.
    Perl,
    /// Wakeup stacks: frames after a `--` separator in aqua, the rest in blue.
    Wakeup,
    /// Chained stacks: waker frames (`_[w]`) in aqua, the rest in blue.
    Chain,
    /// Kernel-aware: kernel (`_[k]`, or called from a kernel entry point), user, interrupt,
    /// unreliable (`? sym`, `[unknown]`, perf's `[dso]` placeholders, bare addresses) and
    /// synthetic category frames (`-` separators, task states, `key=value`, `cpu-N`) each in
    /// their own hue.
    Kernel,
}

impl Palette {
    /// Every palette, in the order `--help` lists them.
    pub const ALL: [Palette; 16] = [
        Palette::Hot,
        Palette::Mem,
        Palette::Io,
        Palette::Red,
        Palette::Green,
        Palette::Blue,
        Palette::Aqua,
        Palette::Yellow,
        Palette::Purple,
        Palette::Orange,
        Palette::Java,
        Palette::Js,
        Palette::Perl,
        Palette::Wakeup,
        Palette::Chain,
        Palette::Kernel,
    ];

    /// The name on the command line and in the page.
    pub fn name(self) -> &'static str {
        match self {
            Palette::Hot => "hot",
            Palette::Mem => "mem",
            Palette::Io => "io",
            Palette::Red => "red",
            Palette::Green => "green",
            Palette::Blue => "blue",
            Palette::Aqua => "aqua",
            Palette::Yellow => "yellow",
            Palette::Purple => "purple",
            Palette::Orange => "orange",
            Palette::Java => "java",
            Palette::Js => "js",
            Palette::Perl => "perl",
            Palette::Wakeup => "wakeup",
            Palette::Chain => "chain",
            Palette::Kernel => "kernel",
        }
    }

    /// The palette called `name`.
    pub fn from_name(name: &str) -> Option<Palette> {
        Palette::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for Palette {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The viewer must know every palette the library offers, and no other.
    #[test]
    fn viewer_knows_the_same_palettes() {
        let js = include_str!("assets/palette.js");
        let start = js.find("const PALETTES = [").map(|i| i + "const PALETTES = [".len());
        let list = start.and_then(|s| js[s..].find(']').map(|e| &js[s..s + e])).unwrap_or("");
        let names: Vec<&str> =
            list.split(',').map(|n| n.trim().trim_matches('\'')).filter(|n| !n.is_empty()).collect();
        let ours: Vec<&str> = Palette::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(names, ours);
        for p in Palette::ALL {
            assert_eq!(Palette::from_name(p.name()), Some(p));
        }
        assert_eq!(Palette::from_name("rainbow"), None);
    }
}

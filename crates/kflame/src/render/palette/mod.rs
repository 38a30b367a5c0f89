//! Frame colours: FlameGraph's palettes (same names, same intent), the kernel-aware
//! palette, the differential red/blue scale, and the consistent-palette file.
//!
//! Colours are deterministic by default: each frame draws its variation from a generator
//! seeded with a fixed value (so the same input gives the same SVG), `--hash` keys the
//! variation on the function name (the same function has the same colour in every graph),
//! and `--random` seeds the generator from the clock.

mod kernel;
pub mod map;

pub use kernel::Category;
pub use map::PaletteMap;

use std::fmt;

/// An RGB colour.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl fmt::Display for Rgb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rgb({},{},{})", self.0, self.1, self.2)
    }
}

impl Rgb {
    /// Parses `rgb(r,g,b)` or `#rrggbb`.
    pub fn parse(s: &str) -> Option<Rgb> {
        let s = s.trim();
        if let Some(hex) = s.strip_prefix('#') {
            let v = u32::from_str_radix(hex, 16).ok().filter(|_| hex.len() == 6)?;
            return Some(Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
        }
        let inner = s.strip_prefix("rgb(")?.strip_suffix(')')?;
        let mut it = inner.split(',').map(|p| p.trim().parse::<u8>().ok());
        let rgb = Rgb(it.next()??, it.next()??, it.next()??);
        it.next().is_none().then_some(rgb)
    }
}

/// Declares the palettes once: the enum, their `--colors` names and the list of all of them
/// come from one table, in the order `--help` lists them.
macro_rules! palettes {
    ($($(#[$attr:meta])* $variant:ident = $name:literal,)+) => {
        /// A colour scheme (`--colors`).
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
        pub enum Palette {
            $($(#[$attr])* $variant,)+
        }

        /// Palette names accepted by `--colors`.
        pub const PALETTE_NAMES: &[&str] = &[$($name),+];

        impl Palette {
            /// Every palette, in the order of [`PALETTE_NAMES`].
            pub const ALL: [Palette; PALETTE_NAMES.len()] = [$(Palette::$variant),+];
        }
    };
}

palettes! {
    /// Reds and yellows (the default).
    #[default]
    Hot = "hot",
    /// Greens and blues, for memory.
    Mem = "mem",
    /// Blues, for I/O.
    Io = "io",
    /// Plain hues.
    Red = "red",
    /// Plain hues.
    Green = "green",
    /// Plain hues.
    Blue = "blue",
    /// Plain hues.
    Aqua = "aqua",
    /// Plain hues.
    Yellow = "yellow",
    /// Plain hues.
    Purple = "purple",
    /// Plain hues.
    Orange = "orange",
    /// Java: JIT/interpreted Java green, inlined aqua, C++ yellow, kernel orange, other red.
    Java = "java",
    /// JavaScript: JS green, built-ins aqua, C++ yellow, kernel orange, other red.
    Js = "js",
    /// Perl: Perl green, C++ yellow, kernel orange, other red.
    Perl = "perl",
    /// Wakeup stacks: aqua.
    Wakeup = "wakeup",
    /// Off-wake chains: waker frames (`_[w]`) aqua, the rest blue.
    Chain = "chain",
    /// Kernel, user, interrupt, unreliable and category frames told apart.
    Kernel = "kernel",
}

impl Palette {
    /// Looks a palette up by its `--colors` name.
    pub fn from_name(name: &str) -> Option<Palette> {
        Palette::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The `--colors` name of this palette.
    pub fn name(self) -> &'static str {
        PALETTE_NAMES[self as usize]
    }
}

impl std::fmt::Display for Palette {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Palette {
    /// The background gradient FlameGraph pairs with this palette.
    pub fn default_background(self) -> Background {
        match self {
            Palette::Mem => Background::Green,
            Palette::Io | Palette::Wakeup | Palette::Chain => Background::Blue,
            Palette::Red
            | Palette::Green
            | Palette::Blue
            | Palette::Aqua
            | Palette::Yellow
            | Palette::Purple
            | Palette::Orange
            | Palette::Kernel => Background::Grey,
            _ => Background::Yellow,
        }
    }

    /// The colour of frame `name` of `category`, given three variation values in [0, 1).
    /// `waker`: the frame lies above a `--` separator (the waker's stack of an off-wake
    /// graph), drawn in [`Palette::waker_hue`]'s family; the separators themselves
    /// (`--`, and bcc's user/kernel delimiter `-`) are grey, as flamegraph.pl draws them.
    pub fn color(self, name: &str, category: Category, waker: bool, v: [f64; 3]) -> Rgb {
        if name == "-" || name == "--" {
            return SEPARATOR;
        }
        if waker {
            return self.waker_hue().rgb(v[0]);
        }
        match self {
            Palette::Hot => scale([(205, 50, 2), (0, 230, 0), (0, 55, 1)], v),
            Palette::Mem => scale([(0, 0, 0), (190, 50, 1), (0, 210, 0)], v),
            Palette::Io => {
                let c = scale([(80, 60, 0), (80, 60, 0), (190, 55, 1)], v);
                Rgb(c.0, c.0, c.2)
            }
            Palette::Java => Hue::for_java(name).rgb(v[0]),
            Palette::Js => Hue::for_js(name).rgb(v[0]),
            Palette::Perl => Hue::for_perl(name).rgb(v[0]),
            Palette::Chain if name.ends_with("_[w]") => Hue::Aqua.rgb(v[0]),
            Palette::Chain => Hue::Blue.rgb(v[0]),
            Palette::Wakeup => Hue::Aqua.rgb(v[0]),
            Palette::Kernel => kernel_color(category, v[0]),
            Palette::Red => Hue::Red.rgb(v[0]),
            Palette::Green => Hue::Green.rgb(v[0]),
            Palette::Blue => Hue::Blue.rgb(v[0]),
            Palette::Aqua => Hue::Aqua.rgb(v[0]),
            Palette::Yellow => Hue::Yellow.rgb(v[0]),
            Palette::Purple => Hue::Purple.rgb(v[0]),
            Palette::Orange => Hue::Orange.rgb(v[0]),
        }
    }
}

/// The colour of the `--` (and `-`) separator frames, flamegraph.pl's dark grey.
pub const SEPARATOR: Rgb = Rgb(160, 160, 160);

impl Palette {
    /// The family the waker's frames (above `--`) are drawn in: aqua, as flamegraph.pl's
    /// `chain` palette draws waker frames, unless the palette's own frames are aqua or
    /// close to it.
    fn waker_hue(self) -> Hue {
        match self {
            Palette::Aqua => Hue::Blue,
            Palette::Mem => Hue::Orange,
            _ => Hue::Aqua,
        }
    }
}

/// `(base, span, which variation)` per channel.
fn scale(ch: [(u8, u8, usize); 3], v: [f64; 3]) -> Rgb {
    let f = |(base, span, i): (u8, u8, usize)| base.saturating_add((span as f64 * v[i]) as u8);
    Rgb(f(ch[0]), f(ch[1]), f(ch[2]))
}

#[derive(Copy, Clone)]
enum Hue {
    Red,
    Green,
    Blue,
    Aqua,
    Yellow,
    Purple,
    Orange,
    Grey,
}

impl Hue {
    fn rgb(self, v: f64) -> Rgb {
        let s = |base: u8, span: u8| base.saturating_add((span as f64 * v) as u8);
        match self {
            Hue::Red => Rgb(s(200, 55), s(50, 80), s(50, 80)),
            Hue::Green => Rgb(s(50, 60), s(200, 55), s(50, 60)),
            Hue::Blue => Rgb(s(80, 60), s(80, 60), s(205, 50)),
            Hue::Aqua => Rgb(s(50, 60), s(165, 55), s(165, 55)),
            Hue::Yellow => Rgb(s(175, 55), s(175, 55), s(50, 20)),
            Hue::Purple => Rgb(s(190, 65), s(80, 60), s(190, 65)),
            Hue::Orange => Rgb(s(190, 65), s(90, 65), 0),
            Hue::Grey => Rgb(s(175, 40), s(175, 40), s(175, 40)),
        }
    }

    fn annotated(name: &str) -> Option<Hue> {
        if name.ends_with("_[k]") {
            Some(Hue::Orange)
        } else if name.ends_with("_[i]") {
            Some(Hue::Aqua)
        } else if name.ends_with("_[j]") {
            Some(Hue::Green)
        } else {
            None
        }
    }

    fn for_java(name: &str) -> Hue {
        let bare = name.trim_start_matches('L');
        Hue::annotated(name).unwrap_or(
            if bare.contains('/') || (bare.contains('.') && !bare.contains("::")) {
                Hue::Green
            } else if name.contains("::") {
                Hue::Yellow
            } else {
                Hue::Red
            },
        )
    }

    fn for_js(name: &str) -> Hue {
        if name.ends_with("_[j]") && name.contains('/') {
            return Hue::Green;
        }
        Hue::annotated(name).unwrap_or(if name.contains("::") {
            Hue::Yellow
        } else if name.contains('/') || name.contains(".js") {
            Hue::Green
        } else if name.contains(':') {
            Hue::Aqua
        } else {
            Hue::Red
        })
    }

    fn for_perl(name: &str) -> Hue {
        Hue::annotated(name).unwrap_or(if name.contains("::") && !name.contains("Perl") {
            Hue::Yellow
        } else if name.contains("Perl") || name.contains(".pl") {
            Hue::Green
        } else {
            Hue::Red
        })
    }
}

fn kernel_color(category: Category, v: f64) -> Rgb {
    match category {
        Category::Kernel => Hue::Orange.rgb(v),
        Category::User => Hue::Blue.rgb(v),
        Category::Interrupt => Hue::Purple.rgb(v),
        Category::Unreliable => Hue::Grey.rgb(v),
        Category::Synthetic => Hue::Green.rgb(v),
        Category::Root => Rgb(200, 200, 200),
    }
}

/// The red/blue scale of differential graphs: red where the frame grew (more weight
/// after), blue where it shrank, white when unchanged; intensity relative to `max`.
pub fn differential(delta: i128, max: i128, negate: bool) -> Rgb {
    let delta = if negate { -delta } else { delta };
    if max == 0 || delta == 0 {
        return Rgb(255, 255, 255);
    }
    let fade = (210.0 * (1.0 - (delta.unsigned_abs() as f64 / max as f64))) as u8;
    if delta > 0 { Rgb(255, fade, fade) } else { Rgb(fade, fade, 255) }
}

/// The background gradient (`--bgcolors`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Background {
    /// FlameGraph's default: light grey to pale yellow.
    Yellow,
    /// Light grey to pale blue.
    Blue,
    /// Light grey to pale green.
    Green,
    /// Light greys.
    Grey,
    /// One flat colour.
    Flat(Rgb),
}

impl Background {
    /// Parses `yellow`, `blue`, `green`, `grey` or a `#rrggbb` colour.
    pub fn from_name(s: &str) -> Option<Background> {
        Some(match s {
            "yellow" => Background::Yellow,
            "blue" => Background::Blue,
            "green" => Background::Green,
            "grey" | "gray" => Background::Grey,
            other => Background::Flat(Rgb::parse(other).filter(|_| other.starts_with('#'))?),
        })
    }

    /// The two gradient stops, as `#rrggbb` or `rgb()` text.
    pub fn stops(self) -> (String, String) {
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        match self {
            Background::Yellow => pair("#eeeeee", "#eeeeb0"),
            Background::Blue => pair("#eeeeee", "#e0e0ff"),
            Background::Green => pair("#eef2ee", "#e0ffe0"),
            Background::Grey => pair("#f8f8f8", "#e8e8e8"),
            Background::Flat(c) => (c.to_string(), c.to_string()),
        }
    }
}

/// Where the variation of each frame's colour comes from.
#[derive(Clone, Debug)]
pub enum Variation {
    /// A generator with a fixed seed, stepped per frame (the default: reproducible).
    Seeded(u64),
    /// Keyed on the function name (`--hash`).
    NameHash,
}

impl Variation {
    /// Three values in [0, 1) for the next frame, named `name`.
    pub fn next(&mut self, name: &str) -> [f64; 3] {
        match self {
            Variation::Seeded(state) => [step(state), step(state), step(state)],
            Variation::NameHash => {
                let h = name_hash(name.as_bytes());
                let r = name_hash_rev(name.as_bytes());
                [unit(h), unit(r), unit(r)]
            }
        }
    }
}

/// splitmix64.
fn step(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    unit(z ^ (z >> 31))
}

fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// A hash of the first characters of a name, so related names get related colours
/// (module prefixes up to a backtick are ignored).
fn name_hash(name: &[u8]) -> u64 {
    let name = match name.iter().position(|&b| b == b'`') {
        Some(i) => &name[i + 1..],
        None => name,
    };
    let mut h = 0u64;
    for (i, &b) in name.iter().take(8).enumerate() {
        h |= (b as u64) << (56 - 8 * i);
    }
    h.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ name.len() as u64
}

fn name_hash_rev(name: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in name.iter().rev() {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_round_trip() {
        for name in super::PALETTE_NAMES {
            assert_eq!(super::Palette::from_name(name).map(|p| p.name()), Some(*name));
        }
    }

    use super::*;

    #[test]
    fn every_palette_name_resolves() {
        for n in PALETTE_NAMES {
            assert!(Palette::from_name(n).is_some(), "{n}");
        }
        assert_eq!(Palette::from_name("nope"), None);
    }

    #[test]
    fn hash_is_stable_and_seeded_is_reproducible() {
        let mut a = Variation::NameHash;
        assert_eq!(a.next("vfs_read"), a.next("vfs_read"));
        let (mut s1, mut s2) = (Variation::Seeded(7), Variation::Seeded(7));
        assert_eq!(s1.next("x"), s2.next("y"));
    }

    #[test]
    fn differential_scale() {
        assert_eq!(differential(10, 10, false), Rgb(255, 0, 0));
        assert_eq!(differential(-10, 10, false), Rgb(0, 0, 255));
        assert_eq!(differential(-10, 10, true), Rgb(255, 0, 0));
        assert_eq!(differential(0, 10, false), Rgb(255, 255, 255));
    }

    #[test]
    fn waker_frames_leave_the_blocked_family() {
        let v = [0.5, 0.5, 0.5];
        for p in Palette::ALL {
            assert_eq!(p.color("--", Category::Kernel, false, v), SEPARATOR);
            assert_eq!(p.color("--", Category::Kernel, true, v), SEPARATOR);
            let waker = p.color("main", Category::User, true, v);
            if p == Palette::Wakeup {
                // flamegraph.pl's wakeup palette: every frame is a waker's, aqua.
                continue;
            }
            assert_ne!(waker, p.color("main", Category::User, false, v), "{p}");
        }
        assert_eq!(Palette::Hot.color("kf_pipe_writer", Category::User, true, v), Hue::Aqua.rgb(0.5));
    }

    #[test]
    fn parses_colors() {
        assert_eq!(Rgb::parse("rgb(1, 2,3)"), Some(Rgb(1, 2, 3)));
        assert_eq!(Rgb::parse("#0a0B0c"), Some(Rgb(10, 11, 12)));
        assert_eq!(Rgb::parse("rgb(1,2)"), None);
        assert_eq!(Background::from_name("#ffffff"), Some(Background::Flat(Rgb(255, 255, 255))));
    }
}

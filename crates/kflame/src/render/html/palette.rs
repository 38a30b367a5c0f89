//! Palettes of the viewer: the same [`Palette`] as the SVG renderer's `--colors`; the colors
//! themselves are computed in `assets/palette.js`, from a hash of each frame name, so they are
//! stable across runs.

pub use crate::render::palette::Palette;

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

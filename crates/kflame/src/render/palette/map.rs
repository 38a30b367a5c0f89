//! The consistent palette (`--cp`): a `name->rgb(r,g,b)` file, read before drawing and
//! written back with every colour used, so the same function keeps its colour across
//! graphs (FlameGraph's `palette.map` format).

use std::collections::BTreeMap;

use super::Rgb;
use crate::diag::Diagnostics;

/// Kind of a palette-map line that did not parse.
pub const BAD_PALETTE_LINE: &str = "bad palette line";

/// Function name → colour.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaletteMap {
    colors: BTreeMap<String, Rgb>,
}

impl PaletteMap {
    /// Parses a palette file; bad lines go to `diag`.
    pub fn parse(text: &str, diag: &mut Diagnostics) -> PaletteMap {
        let mut colors = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let parsed = line.rsplit_once("->").and_then(|(name, c)| Some((name, Rgb::parse(c)?)));
            match parsed {
                Some((name, rgb)) => {
                    colors.insert(name.to_string(), rgb);
                }
                None => diag.skip(BAD_PALETTE_LINE, i as u64 + 1, || {
                    format!("`name->rgb(r,g,b)`, found `{}`", crate::fold::read::show(line.as_bytes()))
                }),
            }
        }
        PaletteMap { colors }
    }

    /// The colour of `name`, choosing it with `pick` the first time.
    pub fn get_or_insert(&mut self, name: &str, pick: impl FnOnce() -> Rgb) -> Rgb {
        if let Some(c) = self.colors.get(name) {
            return *c;
        }
        let c = pick();
        self.colors.insert(name.to_string(), c);
        c
    }

    /// The file text, sorted by name.
    pub fn to_text(&self) -> String {
        self.colors.iter().map(|(n, c)| format!("{n}->{c}\n")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reports_bad_lines() {
        let mut diag = Diagnostics::new();
        let map = PaletteMap::parse("a->rgb(1,2,3)\nbroken\nb->c->rgb(4,5,6)\n", &mut diag);
        assert_eq!(map.to_text(), "a->rgb(1,2,3)\nb->c->rgb(4,5,6)\n");
        assert_eq!(diag.get(BAD_PALETTE_LINE).unwrap().first_line, 2);
    }
}

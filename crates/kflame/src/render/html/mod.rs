//! The self-contained interactive HTML flame graph: one file, no network, canvas drawing.
//!
//! [`write_html`] embeds the profile as a compact prefix tree (a string table of frame names
//! and a base64 varint stream of nodes, see `encode.rs`) and the viewer, written as plain
//! JavaScript and CSS files under `assets/` and included at compile time. The viewer
//! (`FlameViewer` in `assets/viewer.js`) is a reusable module: a page that fetches profile
//! data from elsewhere constructs it the same way `assets/page.js` does here.
//!
//! ## Embedding the viewer elsewhere
//!
//! The assets are plain scripts, loaded in this order: `model.js` (the tree in typed arrays,
//! decoding, hide/focus/sandwich/top-function computations, unit formatting), `palette.js`,
//! `render.js` (`FlameView`: canvas layout and hit testing of one tree), `ui.js` (DOM helper,
//! top-functions table, URL state) and `viewer.js` (`FlameViewer`: the whole UI). Each adds
//! to `globalThis.KFlame`. A page with data from a server does what `page.js` does:
//!
//! ```text
//! const tree = KFlame.decodeTree(meta, nodesBase64);   // meta: the JSON written here
//! const viewer = new KFlame.FlameViewer(element, tree, meta);
//! ```
//!
//! or builds the tree itself with `KFlame.TreeBuilder`. `meta` needs `names`, `count`,
//! `scale`, `unit`, `countname`, `palette`, `inverted`, `flamechart` and optionally `title`,
//! `subtitle`, `notes`, and `differential` (each node has a BEFORE weight), `negate`.
//!
//! Untrusted text (frame names, titles, notes) reaches the page only inside JSON whose `<`,
//! `>` and `&` are escaped, so `</script>` in a symbol cannot end the data block; the viewer
//! draws names on a canvas and puts them in the DOM with `textContent` only.
//!
//! ```
//! use kflame::fold::{Meta, StackCounts, Stacks, Weight};
//! use kflame::render::html::{write_html, HtmlOptions, HtmlProfile};
//!
//! let mut counts = StackCounts::new();
//! counts.add(b"main;work", Weight::from_u64(3));
//! let stacks = Stacks::Counts(counts);
//! let meta = Meta::default();
//! let mut page = Vec::new();
//! write_html(&mut page, &HtmlProfile::new(&stacks, &meta), &HtmlOptions::default()).unwrap();
//! assert!(page.starts_with(b"<!DOCTYPE html>"));
//! ```

mod encode;
mod page;
mod palette;
mod tree;

use std::io::{self, Write};

use crate::fold::{Meta, Stacks, Unit};

pub use palette::Palette;

/// What to draw: stacks and their metadata (the unit decides how weights are shown).
#[derive(Clone, Copy, Debug)]
pub struct HtmlProfile<'a> {
    /// The stacks: summed ([`Stacks::Counts`]) or in time order ([`Stacks::Ordered`]). For
    /// differential input, the AFTER weights (the second column), which set the widths.
    pub stacks: &'a Stacks,
    /// Unit and event of the weights.
    pub meta: &'a Meta,
    /// Differential input (`stack BEFORE AFTER`, from `kflame diff` or `difffolded.pl`): the
    /// BEFORE weights. Summed stacks are looked up by stack (a missing stack was 0 before);
    /// time-ordered stacks must be the same runs in the same order as `stacks`. Frames are
    /// then drawn red where their own weight grew, blue where it shrank, as in the SVG.
    pub before: Option<&'a Stacks>,
}

impl<'a> HtmlProfile<'a> {
    /// A profile of `stacks` whose weights are in `meta.unit`.
    pub fn new(stacks: &'a Stacks, meta: &'a Meta) -> Self {
        HtmlProfile { stacks, meta, before: None }
    }

    /// A differential profile: `after` sets the widths, `before` the comparison.
    pub fn differential(after: &'a Stacks, before: &'a Stacks, meta: &'a Meta) -> Self {
        HtmlProfile { stacks: after, meta, before: Some(before) }
    }
}

/// How to draw it. The names follow `flamegraph.pl`'s options.
#[derive(Clone, Debug, Default)]
pub struct HtmlOptions {
    /// Page and graph title (default: "Flame Graph", "Flame Chart" or "Icicle Graph").
    pub title: Option<String>,
    /// A second line under the title.
    pub subtitle: Option<String>,
    /// What a unit of weight is called (default: from the profile's unit).
    pub countname: Option<String>,
    /// Color scheme.
    pub palette: Palette,
    /// Draw an icicle graph: roots at the top, growing down.
    pub inverted: bool,
    /// Flame chart: x is input (time) order; only consecutive equal prefixes merge.
    pub flamechart: bool,
    /// Reverse each stack (leaf first) before merging.
    pub reverse: bool,
    /// Free text shown under the graph title.
    pub notes: Option<String>,
    /// Differential input: red for shrinking and blue for growing frames instead.
    pub negate: bool,
}

impl HtmlOptions {
    /// The title to show.
    pub fn title_or_default(&self) -> &str {
        match &self.title {
            Some(t) => t,
            None if self.flamechart => "Flame Chart",
            None if self.inverted => "Icicle Graph",
            None => "Flame Graph",
        }
    }

    /// The count name to show for `unit`.
    pub fn countname_for(&self, unit: &Unit) -> String {
        match &self.countname {
            Some(c) => c.clone(),
            None => unit.name().to_string(),
        }
    }
}

/// Writes one self-contained HTML page showing `profile`. The output depends only on the
/// profile and the options (no time stamps, no randomness).
pub fn write_html(out: &mut dyn Write, profile: &HtmlProfile<'_>, opts: &HtmlOptions) -> io::Result<()> {
    let tree = tree::Tree::build(profile.stacks, profile.before, opts.reverse, !opts.flamechart);
    let encoded = encode::encode(&tree, profile.before.is_some());
    let totals = page::Totals { after: tree.total(), before: tree.total_before() };
    page::write_page(out, &encoded, &totals, profile.meta, opts)
}

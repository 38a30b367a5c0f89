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
//! The viewer is a set of ES modules ([`ASSETS`], in dependency order): `model.js` (the tree
//! in typed arrays, decoding, hide/focus/sandwich/top-function computations, unit
//! formatting), `palette.js`, `render.js` (`FlameView`: canvas layout and hit testing of one
//! tree), `ui.js` (DOM helper, top-functions table, URL state) and `viewer.js` (`FlameViewer`,
//! the whole UI, and `start(element, meta, nodes)`). Three small entry modules differ only in
//! where the data comes from: `page.js` reads it from the page, `served.js` fetches it
//! (and `mcp_app.js`, the MCP Apps view, receives it from the assistant's host).
//!
//! - [`write_html`]: one self-contained file that works from `file://` with no network. As
//!   modules cannot import each other there, the page inlines them in order, each turned
//!   into a function whose result is its exports (`import`/`export` lines rewritten, every
//!   other line as it is), and embeds the data.
//! - [`served_page`] + [`encode`] + [`ASSETS`]: a page for a server. It loads the same
//!   modules as real ES modules (`<script type="module" src=".../served.js">`) and fetches
//!   its data as JSON from a URL; [`ViewerData::to_json`] is that JSON. A server serves each
//!   asset under its [`Asset::path`] with its [`Asset::content_type`].
//!
//! A page may also construct the viewer itself: `new FlameViewer(element, tree, meta)` with
//! `tree` from `decodeTree(meta, nodesBase64)` or a `TreeBuilder`. `meta` needs `names`,
//! `count`, `scale`, `unit`, `countname`, `palette`, `inverted`, `flamechart` and optionally
//! `title`, `subtitle`, `notes`, and `differential` (each node has a BEFORE weight),
//! `negate`.
//! A page that replaces a viewer with one of other data (`kflame serve` as its range moves)
//! calls `viewer.destroy()` first: it removes the old viewer's document and window listeners.
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
pub mod scatter;

use std::io::{self, Write};

use crate::fold::tree::StackTree;
use crate::fold::{Meta, Stacks, Unit};

pub use page::{ASSETS, Asset};
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
    let data = encode(profile, opts);
    page::write_page(out, &data, opts)
}

/// The data the viewer draws: `profile`, the description and string table the viewer reads
/// (`decodeTree(meta, nodes)`, `new FlameViewer(.., meta)`), and `nodes`, the base64 node
/// stream (see `encode.rs`). A serde type: a server puts it in its own answer and encodes
/// the whole once (with [`crate::render::json::to_script_safe_string`] where it is embedded
/// in a page).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ViewerData {
    /// The description and string table.
    pub profile: ViewerMeta,
    /// Base64 of the node stream.
    pub nodes: String,
}

/// The `meta` object of [`ViewerData`]. Weights are decimal strings: exact, whatever their
/// size.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ViewerMeta {
    /// Format version (1).
    pub version: u32,
    /// Graph title.
    pub title: String,
    /// Second line.
    pub subtitle: Option<String>,
    /// Free text under the title.
    pub notes: Option<String>,
    /// The weights' unit.
    pub unit: String,
    /// What a unit of weight is called.
    pub countname: String,
    /// The event sampled.
    pub event: Option<String>,
    /// Color scheme name.
    pub palette: String,
    /// Icicle graph.
    pub inverted: bool,
    /// Flame chart.
    pub flamechart: bool,
    /// Sum of the weights.
    pub total: String,
    /// Only for a comparison, as the next two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub differential: Option<bool>,
    /// Sum of the BEFORE weights.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_before: Option<String>,
    /// Colors swapped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub negate: Option<bool>,
    /// Decimal digits of the encoded weights.
    pub scale: u32,
    /// Nodes in the stream.
    pub count: usize,
    /// Deepest depth.
    pub max_depth: usize,
    /// Frame names, by index.
    pub names: Vec<String>,
}

impl ViewerData {
    /// `{"profile": ..., "nodes": "..."}` as JSON safe inside `<script>`: what a served page
    /// fetches (`served.js`).
    pub fn to_json(&self) -> String {
        crate::render::json::to_script_safe_string(self)
    }
}

/// Encodes `profile` for the viewer as [`write_html`] embeds it, for a server to send to a
/// [`served_page`] (or for any page that builds the viewer itself).
pub fn encode(profile: &HtmlProfile<'_>, opts: &HtmlOptions) -> ViewerData {
    let tree = StackTree::from_stacks(profile.stacks, profile.before, opts.reverse, !opts.flamechart);
    encode_tree(&tree, profile.meta, opts, profile.before.is_some())
}

/// Encodes a built tree, as a comparison (BEFORE weights sent too) or not as `differential`
/// says (a comparison whose baseline is empty is still drawn as one): what a server that
/// reads a store's tree sends. `opts.reverse` and `opts.flamechart` were the tree's to apply
/// when it was built; `opts.flamechart` is still what the viewer is told.
pub fn encode_tree(tree: &StackTree, meta: &Meta, opts: &HtmlOptions, differential: bool) -> ViewerData {
    let encoded = encode::encode(tree, differential);
    let totals = page::Totals { after: tree.total(), before: tree.total_before() };
    let nodes = encode::base64(&encoded.nodes);
    ViewerData { profile: page::viewer_meta(encoded, &totals, meta, opts), nodes }
}

/// Writes the MCP Apps view (`kflame mcp`'s `ui://kflame/flamegraph`): the viewer's
/// modules inlined, with `mcp_app.js` as entry, which takes its [`ViewerData::to_json`] from
/// the host's tool results (`_meta["kflame/view"]`) instead of the page.
pub fn write_app_page(out: &mut dyn Write, title: &str) -> io::Result<()> {
    page::write_app_page(out, title)
}

/// Writes a page that loads the viewer's modules and style from `assets_base` (a URL prefix
/// ending in `/`, `""` for the page's own directory) and draws the [`ViewerData::to_json`]
/// it fetches from `data_url`. Nothing is embedded but the title: the same page serves any
/// profile. Both URLs are relative to the page or absolute paths on its server (its
/// Content-Security-Policy allows only its own origin).
pub fn served_page(out: &mut dyn Write, title: &str, data_url: &str, assets_base: &str) -> io::Result<()> {
    page::write_served_page(out, title, data_url, assets_base)
}

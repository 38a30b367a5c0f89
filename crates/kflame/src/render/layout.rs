//! Stacks in drawing order → positioned frames.
//!
//! One pass over the ordered stacks, as FlameGraph's `flow` does: a frame stays open while
//! consecutive stacks share it, and is closed (emitted with its start and end) when a stack
//! diverges. With sorted stacks this merges every common prefix; with time-ordered stacks it
//! merges only neighbours, which is exactly a flame chart. Positions are exact [`Weight`]s.

use super::palette::Category;
use super::profile::Profile;
use crate::fold::Weight;

/// One frame to draw.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    /// Interned name id (a name of the [`Profile`] laid out); `u32::MAX` for the root.
    pub name: u32,
    /// 0 for the root ("all"), 1 for the first frame of a stack.
    pub depth: u32,
    /// Start, in weight units from the left edge.
    pub x: Weight,
    /// Width, in weight units.
    pub w: Weight,
    /// Differential input: sum of (after − before) of the stacks that *end* in this frame
    /// (its self change, as FlameGraph computes it), in raw fixed-point units.
    pub delta: i128,
    /// Kind of code, for the kernel palette.
    pub category: Category,
    /// Above a [`WAKER_SEPARATOR`] frame: part of the waker's stack (leaf first), not of
    /// the blocked task's.
    pub waker: bool,
}

/// The frame bcc's `offwaketime` (and `kflame record --off-cpu --wakers`) puts between the
/// blocked task's stack (root first, below) and its waker's stack (leaf first, above).
/// Only this name: a single `-` is bcc's delimiter of the user and kernel parts of one stack.
pub const WAKER_SEPARATOR: &str = "--";

/// Frames with their geometry, ready to draw.
#[derive(Debug)]
pub struct Layout {
    /// Frames narrower than the minimum width are left out.
    pub frames: Vec<Frame>,
    /// Sum of all weights.
    pub total: Weight,
    /// Deepest drawn frame.
    pub max_depth: u32,
    /// Largest |delta| of a drawn frame (differential input).
    pub max_delta: i128,
}

/// Root id.
pub const ROOT: u32 = u32::MAX;

struct Open {
    id: u32,
    x: Weight,
    delta: i128,
    category: Category,
    waker: bool,
    separator: bool,
}

struct Flow<'a> {
    profile: &'a Profile,
    /// In raw fixed-point units.
    min_width: u128,
    classify: bool,
    open: Vec<Open>,
    x: Weight,
    out: Layout,
}

/// Lays out a finished profile. `min_width` is in weight units: narrower frames (and so
/// their descendants) are not drawn. `classify` computes each frame's [`Category`] (for the
/// kernel palette; [`Category::User`] otherwise).
pub fn layout(profile: &Profile, min_width: f64, classify: bool) -> Layout {
    let out = Layout { frames: Vec::new(), total: Weight::ZERO, max_depth: 0, max_delta: 0 };
    let min_width = (min_width.max(0.0) * Weight::ONE.raw() as f64) as u128;
    let mut flow = Flow { profile, min_width, classify, open: Vec::new(), x: Weight::ZERO, out };
    for s in &profile.stacks {
        let frames = profile.frames(s);
        let same = flow.open.iter().zip(frames).take_while(|(o, id)| o.id == **id).count();
        flow.close_to(same);
        for &id in &frames[same..] {
            flow.open_frame(id);
        }
        flow.x += s.weight;
        if let Some(leaf) = flow.open.last_mut() {
            leaf.delta += s.weight.raw() as i128 - s.before.raw() as i128;
        }
    }
    flow.close_to(0);
    let total = flow.x;
    let root = Frame {
        name: ROOT,
        depth: 0,
        x: Weight::ZERO,
        w: total,
        delta: 0,
        category: Category::Root,
        waker: false,
    };
    flow.out.frames.push(root);
    flow.out.total = total;
    flow.out
}

impl Flow<'_> {
    fn open_frame(&mut self, id: u32) {
        let parent = self.open.last().map_or(Category::Root, |o| o.category);
        let waker = self.open.last().is_some_and(|o| o.waker || o.separator);
        let depth = self.open.len() + 1;
        let name = self.profile.name(id);
        let category = if self.classify { Category::classify(name, depth, parent) } else { Category::User };
        let separator = name == WAKER_SEPARATOR;
        self.open.push(Open { id, x: self.x, delta: 0, category, waker, separator });
    }

    fn close_to(&mut self, keep: usize) {
        while self.open.len() > keep {
            let depth = self.open.len() as u32;
            let Some(o) = self.open.pop() else { return };
            let w = self.x.saturating_sub(o.x);
            if w.is_zero() || w.raw() < self.min_width {
                continue;
            }
            let delta = o.delta;
            self.out.max_depth = self.out.max_depth.max(depth);
            self.out.max_delta = self.out.max_delta.max(delta.abs());
            let (category, waker) = (o.category, o.waker);
            self.out.frames.push(Frame { name: o.id, depth, x: o.x, w, delta, category, waker });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(lines: &[(&str, u64)], time_order: bool) -> Profile {
        let mut p = Profile::new(time_order, false);
        for (s, w) in lines {
            p.add(s, Weight::from_u64(*w), Weight::ZERO);
        }
        p.finish();
        p
    }

    fn describe(p: &Profile, l: &Layout) -> Vec<(String, u32, u64, u64)> {
        let mut v: Vec<_> = l
            .frames
            .iter()
            .map(|f| {
                let name = if f.name == ROOT { "all" } else { p.name(f.name) };
                (name.to_string(), f.depth, f.x.whole(), f.w.whole())
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn merges_common_prefixes() {
        let p = profile(&[("a;b", 2), ("a;c", 3), ("a", 1), ("d", 4)], false);
        let l = layout(&p, 0.0, true);
        let expect = [("a", 1, 0, 6), ("all", 0, 0, 10), ("b", 2, 1, 2), ("c", 2, 3, 3), ("d", 1, 6, 4)];
        let expect: Vec<_> = expect.iter().map(|(n, d, x, w)| (n.to_string(), *d, *x, *w)).collect();
        assert_eq!(describe(&p, &l), expect);
        assert_eq!(l.max_depth, 2);
    }

    #[test]
    fn flame_chart_keeps_time_order() {
        let p = profile(&[("a;b", 1), ("c", 1), ("a;b", 2)], true);
        let l = layout(&p, 0.0, true);
        let d = describe(&p, &l);
        assert!(d.contains(&("a".into(), 1, 0, 1)) && d.contains(&("a".into(), 1, 2, 2)), "{d:?}");
    }

    #[test]
    fn frames_above_the_separator_are_the_wakers() {
        let p = profile(&[("r;b;--;w1;w2", 2), ("r;b;-;k", 1), ("r;b", 1), ("r;--", 1)], false);
        let l = layout(&p, 0.0, false);
        let mut wakers: Vec<_> = l.frames.iter().filter(|f| f.waker).map(|f| p.name(f.name)).collect();
        wakers.sort();
        assert_eq!(wakers, ["w1", "w2"]);
    }

    #[test]
    fn prunes_narrow_frames() {
        let p = profile(&[("a;b", 100), ("a;c", 1)], false);
        let l = layout(&p, 2.0, true);
        assert_eq!(describe(&p, &l).len(), 3);
    }
}

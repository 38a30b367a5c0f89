//! Renderers: folded stacks to pictures.

pub mod html;

//! Memory allocation profiling: `kmem:mm_page_alloc` weighted by `PAGE_SIZE << order` bytes,
//! and optionally `kmem:kmalloc` weighted by `bytes_alloc`. With both, the event name is the
//! root frame so the two kinds stay apart.

use super::{Handler, Sample, common_type, tracepoint_spec};
use crate::fold::{Meta, Unit};
use crate::record::stacks::Collector;
use crate::record::sys;
use crate::record::tasks::Tasks;
use crate::record::tracefs::{Field, Tracefs};
use crate::record::{RecordError, StackParts};

const PAGE_ALLOC: &str = "kmem:mm_page_alloc";
const KMALLOC: &str = "kmem:kmalloc";

pub(super) fn build(
    tfs: &Tracefs,
    kmalloc: bool,
    parts: StackParts,
) -> Result<(Vec<super::EventSpec>, Box<dyn Handler>), RecordError> {
    let page = tfs.tracepoint(PAGE_ALLOC)?;
    let mut specs = vec![tracepoint_spec(page.id, PAGE_ALLOC, parts)];
    let mut h = Mem {
        page_id: page.id,
        order: page.field("order")?,
        pfn: page.field("pfn")?,
        kmalloc: None,
        page_size: sys::page_size() as u64,
        added: 0,
        failed: 0,
    };
    if kmalloc {
        let km = tfs.tracepoint(KMALLOC)?;
        specs.push(tracepoint_spec(km.id, KMALLOC, parts));
        h.kmalloc = Some((km.id, km.field("bytes_alloc")?));
    }
    Ok((specs, Box::new(h)))
}

struct Mem {
    page_id: u64,
    order: Field,
    pfn: Field,
    kmalloc: Option<(u64, Field)>,
    page_size: u64,
    added: u64,
    /// Failed page allocations (pfn == -1): nothing was allocated.
    failed: u64,
}

impl Mem {
    /// Bytes allocated by this sample, and the event it came from.
    fn bytes(&mut self, raw: &[u8]) -> Option<(u64, &'static str)> {
        let ty = common_type(raw)?;
        if ty == self.page_id {
            if self.pfn.read(raw)? == -1 {
                self.failed += 1;
                return None;
            }
            let order = self.order.read(raw)?;
            return (0..=20).contains(&order).then(|| (self.page_size << order, "mm_page_alloc"));
        }
        let (id, field) = self.kmalloc.as_ref()?;
        (ty == *id).then(|| field.read(raw).map(|b| (b.max(0) as u64, "kmalloc")))?
    }
}

impl Handler for Mem {
    fn sample(&mut self, s: &Sample, tasks: &mut Tasks, out: &mut Collector) {
        if !tasks.wanted(s.pid, s.tid) {
            return;
        }
        let Some((bytes, event)) = self.bytes(&s.raw) else { return };
        let mut raw = out.raw(tasks, s);
        if self.kmalloc.is_some() {
            raw.prefix = Some(event.as_bytes().into());
        }
        out.add(s.time, raw, bytes, None);
        self.added += 1;
    }

    fn meta(&self) -> Meta {
        let event =
            if self.kmalloc.is_some() { format!("{PAGE_ALLOC},{KMALLOC}") } else { PAGE_ALLOC.into() };
        Meta { unit: Unit::Bytes, event: Some(event) }
    }

    fn unpaired(&self) -> u64 {
        self.failed
    }

    fn added(&self) -> u64 {
        self.added
    }
}

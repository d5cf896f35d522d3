//! The labels a judge was shown, kept per node once rendered.
//!
//! Slots come in pages allocated when a node of the page is first
//! labelled: a navigator over 10M nodes starts with a table of 2,442 empty
//! pages (≈ 20 KB) rather than 10M slots (240 MB, allocated again by each
//! request that changes how labels render).

use std::sync::{Arc, OnceLock};

/// Slots a page.
const PAGE: usize = 4096;

/// One page's slots.
type Page = Box<[OnceLock<Arc<str>>]>;

/// Rendered labels by node index.
#[derive(Debug, Default)]
pub(crate) struct Labels {
    pages: Box<[OnceLock<Page>]>,
    len: usize,
}

impl Labels {
    /// Room for `nodes` labels, none rendered.
    pub(crate) fn new(nodes: usize) -> Labels {
        Labels {
            pages: (0..nodes.div_ceil(PAGE)).map(|_| OnceLock::new()).collect(),
            len: nodes,
        }
    }

    /// Node `i`'s label: kept, else rendered by `render` and kept (`None`
    /// past the table's end).
    pub(crate) fn get_or_render(
        &self,
        i: usize,
        render: impl FnOnce() -> String,
    ) -> Option<Arc<str>> {
        if i >= self.len {
            return None;
        }
        let page = self.pages.get(i / PAGE)?.get_or_init(|| {
            let slots = PAGE.min(self.len - i / PAGE * PAGE);
            (0..slots).map(|_| OnceLock::new()).collect()
        });
        let slot = page.get(i % PAGE)?;
        Some(slot.get_or_init(|| Arc::from(render())).clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_rendered_once_and_pages_appear_as_touched() {
        let labels = Labels::new(PAGE + 3);
        let touched = |l: &Labels| l.pages.iter().filter(|p| p.get().is_some()).count();
        assert_eq!(touched(&labels), 0);
        let calls = std::cell::Cell::new(0);
        let render = || {
            calls.set(calls.get() + 1);
            "card".to_string()
        };
        assert_eq!(
            labels.get_or_render(PAGE + 2, render).as_deref(),
            Some("card")
        );
        assert_eq!(
            labels.get_or_render(PAGE + 2, render).as_deref(),
            Some("card")
        );
        assert_eq!(calls.get(), 1, "rendered once");
        assert_eq!(touched(&labels), 1, "only the last page");
        assert_eq!(labels.pages[1].get().map(|p| p.len()), Some(3));
        assert_eq!(labels.get_or_render(PAGE + 3, render), None, "past the end");
        assert_eq!(
            labels.get_or_render(0, || "other".into()).as_deref(),
            Some("other")
        );
        assert_eq!(touched(&labels), 2);
    }
}

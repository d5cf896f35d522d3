//! Progress bars for long builds (drawn on stderr only when it is a terminal).

use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Mutex;

/// One bar per build stage.
pub struct Bars {
    hidden: bool,
    current: Mutex<Option<ProgressBar>>,
}

impl Bars {
    pub fn new(hidden: bool) -> Bars {
        Bars {
            hidden,
            current: Mutex::new(None),
        }
    }

    pub fn finish(&self) {
        if let Ok(mut slot) = self.current.lock() {
            if let Some(bar) = slot.take() {
                bar.finish();
            }
        }
    }
}

impl treenav::tree::Progress for Bars {
    fn stage(&self, name: &str, total: u64) {
        self.finish();
        let bar = if self.hidden {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(total)
        };
        let style = ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(name.to_string());
        if let Ok(mut slot) = self.current.lock() {
            *slot = Some(bar);
        }
    }

    fn inc(&self, n: u64) {
        if let Ok(slot) = self.current.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.inc(n);
            }
        }
    }
}

//! Progress of long builds and benches on stderr: bars when it is a
//! terminal; otherwise (a log file, CI) one plain line per finished stage,
//! so a long run is never silent.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Instant;

/// The stage being reported.
struct Stage {
    bar: ProgressBar,
    name: String,
    started: Instant,
}

/// One bar (or, off a terminal, one line) per stage.
pub struct Bars {
    hidden: bool,
    terminal: bool,
    current: Mutex<Option<Stage>>,
}

impl Bars {
    pub fn new(hidden: bool) -> Bars {
        Bars {
            hidden,
            terminal: std::io::stderr().is_terminal(),
            current: Mutex::new(None),
        }
    }

    pub fn finish(&self) {
        if let Ok(mut slot) = self.current.lock() {
            if let Some(stage) = slot.take() {
                stage.bar.finish();
                if !self.hidden && !self.terminal {
                    eprintln!(
                        "{}: {}/{} done in {:.1} s",
                        stage.name,
                        stage.bar.position(),
                        stage.bar.length().unwrap_or(0),
                        stage.started.elapsed().as_secs_f64()
                    );
                }
            }
        }
    }
}

impl treenav::tree::Progress for Bars {
    fn stage(&self, name: &str, total: u64) {
        self.finish();
        // Off a terminal indicatif draws nothing; the bar still counts.
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
            *slot = Some(Stage {
                bar,
                name: name.to_string(),
                started: Instant::now(),
            });
        }
    }

    fn inc(&self, n: u64) {
        if let Ok(slot) = self.current.lock() {
            if let Some(stage) = slot.as_ref() {
                stage.bar.inc(n);
            }
        }
    }
}

//! Progress of long builds and benches on stderr: bars (with rate and ETA)
//! when it is a terminal; otherwise (a log file, CI) a plain line every few
//! seconds (done, rate, ETA) and one per finished stage, so a long run is
//! never silent.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a plain progress line is printed off a terminal.
const EVERY: Duration = Duration::from_secs(5);
/// When the first one is: a long stage says it is under way at once.
const FIRST: Duration = Duration::from_secs(1);

/// The stage being reported.
struct Stage {
    bar: ProgressBar,
    name: String,
    started: Instant,
    /// When the last plain line was printed.
    said: Instant,
    /// Whether one was.
    spoke: bool,
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
        let style = ProgressStyle::with_template(
            "{prefix:>12} [{bar:30}] {pos}/{len} {elapsed} ({per_sec}, ETA {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(name.to_string());
        if let Ok(mut slot) = self.current.lock() {
            *slot = Some(Stage {
                bar,
                name: name.to_string(),
                started: Instant::now(),
                said: Instant::now(),
                spoke: false,
            });
        }
    }

    fn inc(&self, n: u64) {
        if let Ok(mut slot) = self.current.lock() {
            if let Some(stage) = slot.as_mut() {
                stage.bar.inc(n);
                let wait = if stage.spoke { EVERY } else { FIRST };
                if !self.hidden && !self.terminal && stage.said.elapsed() >= wait {
                    stage.said = Instant::now();
                    stage.spoke = true;
                    eprintln!("{}", plain_line(stage));
                }
            }
        }
    }
}

/// `name: done/total, rate/s, ETA s` for a stage under way.
fn plain_line(stage: &Stage) -> String {
    let done = stage.bar.position();
    let total = stage.bar.length().unwrap_or(0);
    let secs = stage.started.elapsed().as_secs_f64();
    let rate = done as f64 / secs.max(1e-9);
    let eta = if rate > 0.0 {
        format!("{:.0} s", total.saturating_sub(done) as f64 / rate)
    } else {
        "unknown".to_string()
    };
    format!(
        "{}: {done}/{total} done, {rate:.2}/s, ETA {eta}",
        stage.name
    )
}

//! [`Navigator::builder`]: the engine `treenav query` and `serve` run, by
//! default, from the library: the embedding judge (the lexical one on a
//! tree without usable vectors) and [`NavigatorConfig::default`]
//! (best-first). Name a judge or settings to change either.

use crate::{Navigator, NavigatorConfig, Result};
use std::sync::Arc;
use treenav_judge::{Decide, Judge, JudgeOptions};
use treenav_tree::Tree;

/// A navigator being set up: see [`Navigator::builder`].
#[derive(Debug)]
pub struct NavigatorBuilder {
    tree: Arc<Tree>,
    judge: Option<Arc<dyn Decide>>,
    config: NavigatorConfig,
}

impl Navigator {
    /// A navigator over `tree` with the defaults of the CLI and `serve`:
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use treenav_navigator::Navigator;
    /// let tree = treenav_tree::file::load("notes.tree".as_ref())?;
    /// let navigator = Navigator::builder(Arc::new(tree)).build()?;
    /// let found = navigator.retrieve("how do I rotate the keys?").await?;
    /// # Ok(()) }
    /// ```
    pub fn builder(tree: Arc<Tree>) -> NavigatorBuilder {
        NavigatorBuilder {
            tree,
            judge: None,
            config: NavigatorConfig::default(),
        }
    }
}

impl NavigatorBuilder {
    /// Judge with `judge` (a [`Judge`] or any [`Decide`]) instead of the
    /// tree's default ([`JudgeOptions::for_tree`]).
    pub fn judge(mut self, judge: impl Into<Arc<dyn Decide>>) -> Self {
        self.judge = Some(judge.into());
        self
    }

    /// These settings instead of [`NavigatorConfig::default`]; checked by
    /// [`NavigatorBuilder::build`].
    pub fn config(mut self, config: NavigatorConfig) -> Self {
        self.config = config;
        self
    }

    /// The navigator; fails on settings out of range or a tree with no
    /// passage.
    pub fn build(self) -> Result<Navigator> {
        let judge = match self.judge {
            Some(judge) => judge,
            None => {
                Arc::new(Judge::new(&JudgeOptions::for_tree()).map_err(crate::Error::JudgeSetup)?)
            }
        };
        Navigator::new(self.tree, judge, self.config.check()?)
    }
}

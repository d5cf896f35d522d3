//! The served trees, by name, each with its navigator. Reloading loads the
//! new file beside the old one and swaps the whole map atomically: a
//! request sees either the old tree or the new one, never a mix, and a
//! file that fails to load leaves the old copy serving.

use crate::api::{ReloadOutcome, TreeInfo, UpdateResponse};
use crate::error::{ApiError, Error};
use crate::options::TreeSpec;
use arc_swap::ArcSwap;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use treenav_judge::Judge;
use treenav_navigator::{Navigator, ValidConfig};
use treenav_tree::file;
use treenav_tree::generation::{stamp, Stamp};

/// One served tree.
#[derive(Debug)]
pub(crate) struct Served {
    pub(crate) navigator: Navigator,
    pub(crate) info: TreeInfo,
    /// The generation on disk when this copy was loaded.
    stamp: Stamp,
}

#[derive(Debug)]
pub(crate) struct Registry {
    trees: ArcSwap<BTreeMap<String, Arc<Served>>>,
    specs: Vec<TreeSpec>,
    judge: Judge,
    config: ValidConfig,
    /// One reload (or update) at a time.
    reloading: tokio::sync::Mutex<()>,
    /// Per tree, a generation on disk that failed to load, and why: not
    /// tried again until the files change once more. A tree refused with no
    /// copy in service (damaged or foreign files at start) is not loaded:
    /// its requests are 503 and `/readyz` says why; the others serve on.
    refused: std::sync::Mutex<BTreeMap<String, (Stamp, String)>>,
}

/// An update of a served tree's documents.
#[derive(Debug)]
pub(crate) enum Change {
    /// Add these (ids the tree has are replaced).
    Add(treenav_tree::corpus::Corpus),
    /// Remove the documents with these ids.
    Remove(Vec<String>),
    /// Fold the updates into a new tree file.
    Compact,
}

impl Registry {
    /// Loads every tree. A tree that fails to load is kept out (not ready,
    /// its requests 503 saying why) while the others serve; when none
    /// loads, the first failure is the error (the service does not start).
    pub(crate) async fn load(
        specs: Vec<TreeSpec>,
        judge: Judge,
        config: ValidConfig,
    ) -> Result<Registry, Error> {
        let mut trees = BTreeMap::new();
        let mut refused = BTreeMap::new();
        let mut first_error = None;
        for spec in &specs {
            match load_one(spec.clone(), judge.clone(), config.clone()).await {
                Ok(served) => {
                    tracing::info!(tree = %spec.name, path = %spec.path.display(),
                        documents = served.info.documents, passages = served.info.passages, "tree loaded");
                    trees.insert(spec.name.clone(), Arc::new(served));
                }
                Err(e) => {
                    tracing::error!(tree = %spec.name, error = %e,
                        "tree not loaded: it answers 503 and /readyz says so until its files load; the other trees serve");
                    refused.insert(spec.name.clone(), (stamp(&spec.path), e.to_string()));
                    first_error.get_or_insert(e);
                }
            }
        }
        if let (true, Some(e)) = (trees.is_empty(), first_error) {
            return Err(e);
        }
        metrics::gauge!("treenav_trees_loaded").set(trees.len() as f64);
        Ok(Registry {
            trees: ArcSwap::from_pointee(trees),
            specs,
            judge,
            config,
            reloading: tokio::sync::Mutex::new(()),
            refused: std::sync::Mutex::new(refused),
        })
    }

    /// Why tree `name` is not loaded, if it is one of the served names that
    /// has no copy in service.
    pub(crate) fn not_loaded(&self, name: &str) -> Option<String> {
        if self.get(name).is_some() {
            return None;
        }
        let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.get(name).map(|(_, why)| why.clone())
    }

    /// The trees that are not loaded, with why.
    pub(crate) fn unloaded(&self) -> Vec<(String, String)> {
        let trees = self.trees.load();
        let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused
            .iter()
            .filter(|(name, _)| !trees.contains_key(*name))
            .map(|(name, (_, why))| (name.clone(), why.clone()))
            .collect()
    }

    pub(crate) fn get(&self, name: &str) -> Option<Arc<Served>> {
        self.trees.load().get(name).cloned()
    }

    /// The served copy of tree `name`, first following its files: when
    /// another process (`treenav add`, `remove`, `compact`, a new build
    /// renamed in) changed the generation on disk, it is loaded before
    /// answering, so the next request after a CLI update sees it: a request
    /// that finds a reload or an update under way here waits for it, then
    /// looks again (read your writes: never the generation before one that
    /// completed). While a changed generation fails to load, the copy in
    /// service answers; a tree with none (not loaded) is tried again when
    /// its files change.
    pub(crate) async fn current(&self, name: &str) -> Option<Arc<Served>> {
        let spec = self.specs.iter().find(|s| s.name == name)?;
        let settled = |served: &Option<Arc<Served>>, on_disk: &Stamp| {
            served.as_ref().is_some_and(|s| s.stamp == *on_disk) || self.was_refused(name, on_disk)
        };
        let served = self.get(name);
        if settled(&served, &stamp(&spec.path)) {
            return served;
        }
        let _one_at_a_time = self.reloading.lock().await;
        let on_disk = stamp(&spec.path);
        let served = self.get(name);
        if settled(&served, &on_disk) {
            return served;
        }
        match load_one(spec.clone(), self.judge.clone(), self.config.clone()).await {
            Ok(fresh) => {
                let fresh = Arc::new(fresh);
                tracing::info!(tree = %name, generation = fresh.info.generation,
                    "the tree changed on disk: its new generation is served");
                metrics::counter!("treenav_reloads_total", "outcome" => "followed").increment(1);
                self.swap(name, fresh.clone());
                Some(fresh)
            }
            Err(e) => {
                tracing::warn!(tree = %name, error = %e,
                    "the tree changed on disk but its new generation does not load; the copy in service (if any) answers");
                metrics::counter!("treenav_reloads_total", "outcome" => "refused").increment(1);
                self.refuse(name, on_disk, e.to_string());
                served
            }
        }
    }

    /// Follows every tree's files (see [`Registry::current`]), then names
    /// those whose generation on disk is still not the one served.
    pub(crate) async fn stale(&self) -> Vec<String> {
        let mut stale = Vec::new();
        for spec in &self.specs {
            if let Some(served) = self.current(&spec.name).await {
                if stamp(&spec.path) != served.stamp {
                    stale.push(spec.name.clone());
                }
            }
        }
        stale
    }

    fn was_refused(&self, name: &str, on_disk: &Stamp) -> bool {
        let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.get(name).is_some_and(|(at, _)| at == on_disk)
    }

    fn refuse(&self, name: &str, on_disk: Stamp, why: String) {
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.insert(name.to_string(), (on_disk, why));
    }

    /// Serves `served` as tree `name` from the next request on.
    fn swap(&self, name: &str, served: Arc<Served>) {
        self.refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        self.trees.rcu(|old| {
            let mut map = BTreeMap::clone(old);
            map.insert(name.to_string(), served.clone());
            map
        });
        metrics::gauge!("treenav_trees_loaded").set(self.len() as f64);
    }

    pub(crate) fn len(&self) -> usize {
        self.trees.load().len()
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.trees.load().keys().cloned().collect()
    }

    /// The served trees whose side files were written over in place.
    pub(crate) fn changed_on_disk(&self) -> Vec<String> {
        let trees = self.trees.load();
        trees
            .iter()
            .filter(|(_, s)| s.navigator.tree().changed_on_disk().is_some())
            .map(|(name, _)| name.clone())
            .collect()
    }

    pub(crate) fn infos(&self) -> Vec<TreeInfo> {
        self.trees.load().values().map(|s| s.info.clone()).collect()
    }

    /// Reloads one tree (or all) from its file. Unknown names are 404; a
    /// file that fails to load is reported in its outcome and the old copy
    /// keeps serving.
    pub(crate) async fn reload(&self, name: Option<&str>) -> Result<Vec<ReloadOutcome>, ApiError> {
        let specs: Vec<TreeSpec> = match name {
            None => self.specs.clone(),
            Some(n) => vec![self
                .specs
                .iter()
                .find(|s| s.name == n)
                .cloned()
                .ok_or_else(|| ApiError::not_found(format!("no tree named `{n}`")))?],
        };
        let _one_at_a_time = self.reloading.lock().await;
        let mut outcomes = Vec::new();
        for spec in specs {
            let name = spec.name.clone();
            match load_one(spec, self.judge.clone(), self.config.clone()).await {
                Ok(served) => {
                    self.swap(&name, Arc::new(served));
                    tracing::info!(tree = %name, "tree reloaded");
                    metrics::counter!("treenav_reloads_total", "outcome" => "ok").increment(1);
                    outcomes.push(ReloadOutcome {
                        name,
                        reloaded: true,
                        error: None,
                    });
                }
                Err(e) => {
                    let broken = self
                        .get(&name)
                        .is_some_and(|s| s.navigator.tree().changed_on_disk().is_some());
                    let e = if broken {
                        format!("{e}; the copy in service was written over in place and answers 503 until a reload succeeds")
                    } else {
                        e.to_string()
                    };
                    tracing::warn!(tree = %name, error = %e, "reload refused; the old copy keeps serving");
                    metrics::counter!("treenav_reloads_total", "outcome" => "refused").increment(1);
                    outcomes.push(ReloadOutcome {
                        name,
                        reloaded: false,
                        error: Some(e),
                    });
                }
            }
        }
        Ok(outcomes)
    }
}

impl Registry {
    /// Updates a served tree's files (one writer at a time: this service's
    /// lock, and the tree's lock file against other processes), then serves
    /// the new generation: requests in flight finish on the copy they
    /// started with, the next ones see the new one.
    pub(crate) async fn update(
        &self,
        name: &str,
        change: Change,
    ) -> Result<UpdateResponse, ApiError> {
        let spec = self
            .specs
            .iter()
            .find(|s| s.name == name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(format!("no tree named `{name}`")))?;
        let _one_at_a_time = self.reloading.lock().await;
        let recorded = self
            .get(name)
            .map(|s| s.info.embedder.clone())
            .unwrap_or_default();
        let embedder = match treenav_builder::update::embedder_for(&recorded).transpose() {
            Ok(e) => e,
            Err(e) => return Err(update_error(name, e.into())),
        };
        // On the load thread: an update reads, embeds and writes files,
        // and must never hold an async worker.
        let path = spec.path.clone();
        let runtime = tokio::runtime::Handle::current();
        let report =
            crate::heavy::run(move || runtime.block_on(apply(&path, change, embedder.as_ref())))
                .await
                .map_err(|e| {
                    ApiError::internal(format!("the update of tree `{name}` stopped: {e}"))
                })?
                .map_err(|e| update_error(name, e))?;
        let served = Arc::new(
            load_one(spec, self.judge.clone(), self.config.clone())
                .await
                .map_err(|e| {
                    ApiError::internal(format!(
                        "the update landed but the tree did not load again: {e}"
                    ))
                })?,
        );
        let documents = served.info.documents;
        self.swap(name, served);
        tracing::info!(tree = %name, generation = report.generation, added = report.added,
            replaced = report.replaced, removed = report.removed, "tree updated");
        metrics::counter!("treenav_updates_total").increment(1);
        Ok(UpdateResponse {
            version: crate::api::API_VERSION,
            tree: name.to_string(),
            generation: report.generation,
            added: report.added,
            replaced: report.replaced,
            removed: report.removed,
            not_found: report.not_found,
            unchanged: report.unchanged,
            documents,
            embedded_again: report.embedded_again,
            passages_embedded_again: report.passages_embedded_again,
        })
    }
}

/// Applies one change to the tree's files at `path`.
async fn apply(
    path: &std::path::Path,
    change: Change,
    embedder: Option<&treenav_tree::Embedder>,
) -> treenav_builder::Result<treenav_builder::update::Report> {
    match change {
        Change::Add(corpus) => {
            treenav_builder::update::add(path, corpus, embedder, &treenav_tree::NoProgress).await
        }
        Change::Remove(ids) => treenav_builder::update::remove(path, &ids, embedder).await,
        Change::Compact => treenav_builder::update::compact(path).map(|_| Default::default()),
    }
}

/// An update's error as the client sees it: 409 while another writer holds
/// the tree, 422 for what the tree needs or would lose, 500 otherwise (the
/// server's paths go to the log, not the body).
fn update_error(name: &str, e: treenav_builder::Error) -> ApiError {
    use treenav_builder::{Error as E, TreeError as T};
    use treenav_tree::embed::Error as Embed;
    tracing::warn!(tree = %name, error = %e, "update refused");
    match e {
        E::Tree(T::Locked(_)) => ApiError::conflict(format!(
            "another update of tree `{name}` is running: retry when it ends"
        )),
        E::Param(m) | E::Tree(T::Param(m)) | E::Tree(T::Embed(Embed::Param(m))) => {
            ApiError::update(m)
        }
        E::Tree(T::Http(h)) | E::Tree(T::Embed(Embed::Http(h))) => {
            ApiError::judge(format!("the tree's embedder failed: {h}"))
        }
        _ => ApiError::internal(format!(
            "the update of tree `{name}` failed (see the server log)"
        )),
    }
}

impl Served {
    /// 503 when a side file of this tree was written over in place since it
    /// was loaded: its texts and index no longer match the tree, so nothing
    /// is answered from it until a reload (the path goes to the log only).
    pub(crate) fn check_unchanged(&self, name: &str) -> Result<(), ApiError> {
        match self.navigator.tree().changed_on_disk() {
            None => Ok(()),
            Some(path) => {
                tracing::error!(tree = %name, path = %path.display(),
                    "a served side file was written over in place; the tree answers 503 until reloaded (replace files by writing new ones and renaming)");
                metrics::counter!("treenav_tree_changed_total").increment(1);
                Err(ApiError::tree_changed(name))
            }
        }
    }
}

/// Loads a tree file and builds its navigator, on the load thread.
async fn load_one(spec: TreeSpec, judge: Judge, config: ValidConfig) -> Result<Served, Error> {
    let fail = |spec: &TreeSpec, source: Box<dyn std::error::Error + Send + Sync>| Error::Tree {
        name: spec.name.clone(),
        path: spec.path.clone(),
        source,
    };
    let task_spec = spec.clone();
    let joined = crate::heavy::run(move || -> Result<Served, Error> {
        let spec = task_spec;
        // Taken before reading: a change made during the load makes the
        // next request load again, never hides behind this copy.
        let stamp = stamp(&spec.path);
        let tree = file::load(&spec.path).map_err(|e| fail(&spec, Box::new(e)))?;
        let format_version = file::version(&spec.path).map_err(|e| fail(&spec, Box::new(e)))?;
        let info = tree_info(&spec, &tree, format_version);
        let navigator =
            Navigator::new(Arc::new(tree), judge, config).map_err(|e| fail(&spec, Box::new(e)))?;
        Ok(Served {
            navigator,
            info,
            stamp,
        })
    })
    .await;
    joined.map_err(|e| fail(&spec, Box::new(e)))?
}

fn tree_info(spec: &TreeSpec, tree: &treenav_tree::Tree, format_version: u32) -> TreeInfo {
    let clusters = tree.ids_of(treenav_tree::LevelKind::Cluster).count();
    let meta = tree.meta();
    TreeInfo {
        name: spec.name.clone(),
        path: spec.path.display().to_string(),
        format_version,
        documents: tree.documents().count(),
        passages: tree.passages().count(),
        clusters,
        source: meta.source.clone(),
        embedder: meta.embedder.clone(),
        summarizer: meta.summarizer.clone(),
        built_by: meta.built_by.clone(),
        loaded_at: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        generation: tree.updates().map_or(0, |u| u.updates),
    }
}

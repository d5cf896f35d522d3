//! A build split across processes or machines, as three steps with files
//! in and out (the shards run as jobs on whatever engine a team has:
//! Kubernetes Jobs, a Slurm array, Ray tasks):
//!
//! 1. **Plan** ([`Plan::make`]): embed every document, split the root
//!    (the first step of the top-down build) and save in a folder
//!    `plan.bin` (the settings, the corpus's fingerprint, every top
//!    cluster's members, seed and centroid) and `vectors.bin` (the
//!    embeddings, so nothing is embedded twice).
//! 2. **Shard** ([`Plan::build_shard`], shard `i` of `n`): grow the
//!    subtrees of the top clusters given to shard `i` (largest first to
//!    the least loaded shard), with their neighbour lists, reading only
//!    their rows of the vectors; save `shard-i-of-n.bin`.
//! 3. **Merge** ([`Plan::merge`]): join the subtrees under the root, label
//!    and summarise every cluster, lay out the tree.
//!
//! A single build ([`crate::build_tree`]) runs the same three steps in one
//! process, so the merged tree equals it, byte for byte, for the same
//! corpus, settings and seed.

use crate::TreeError;
mod files;

use crate::full::{
    attach_vectors, blocking, embed_units_fitted, finish, near_by_unit, units, Outline,
    ValidTreeParams, Vectors as Kept,
};
use crate::grow::{grow, join, Grown, Local, RootSplit};
use crate::{Clustering, Error, Progress, Result};
use files::{read_record, write_record, write_vectors, Vectors};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use treenav_cluster::neighbours::Lists;
use treenav_cluster::{centroid, Group, TopDown};
use treenav_corpus::{Corpus, Fingerprint};
use treenav_summary::Summarizer;
use treenav_tree::embed::Embedder;
use treenav_tree::{Tree, TreeMeta};

/// The plan's file in a plan folder.
pub const PLAN_FILE: &str = "plan.bin";
/// The plan's vectors in a plan folder.
pub const VECTORS_FILE: &str = "vectors.bin";
use treenav_files::magic::{PLAN as PLAN_MAGIC, SHARD as SHARD_MAGIC};

/// The file shard `index` of `count` writes in a plan folder.
pub fn shard_file(index: u32, count: u32) -> String {
    format!("shard-{index}-of-{count}.bin")
}

/// Which shard a process builds: `index` of `count`, counted from 0
/// (`2/3` is the last of three), as a Kubernetes indexed Job or a Slurm
/// array numbers its tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    index: u32,
    count: u32,
}

impl ShardSpec {
    /// Which shard, counting from 0.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Of how many.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Shard `index` of `count`; the index counts from 0.
    pub fn new(index: u32, count: u32) -> Result<ShardSpec> {
        if count == 0 || count > 100_000 {
            return Err(Error::Param(format!(
                "the shard count must be in 1..=100000, got {count}"
            )));
        }
        if index >= count {
            return Err(Error::Param(format!(
                "shard {index}/{count}: the index counts from 0, so it must be below {count} (0/{count} … {}/{count})",
                count - 1
            )));
        }
        Ok(ShardSpec { index, count })
    }
}

impl std::str::FromStr for ShardSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<ShardSpec> {
        let (i, n) = treenav_corpus::part::index_of_count(s).ok_or_else(|| {
            Error::Param(format!("`{s}` is not a shard: write INDEX/COUNT, e.g. 0/3"))
        })?;
        ShardSpec::new(i, n)
    }
}

/// One top cluster of the plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Top {
    /// The seed its subtree grows with.
    seed: u64,
    /// Its documents (units), in the order the split listed them.
    members: Vec<u32>,
    /// The mean of its members' vectors.
    centroid: Vec<f32>,
}

/// The plan file's content.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PlanFile {
    corpus: Fingerprint,
    units: u64,
    dims: u64,
    vectors: u128,
    branching: u32,
    seed: u64,
    neighbours: u32,
    settings: TopDown,
    embedder: String,
    /// Sentences of each document embedded after its title.
    sentences: u32,
    /// The fitted TF-IDF model of a TF-IDF plan.
    tfidf: Option<treenav_tree::embed::tfidf::TfidfModel>,
    /// Whether the tree keeps a vector per passage.
    passage_vectors: bool,
    recipe: String,
    /// Whether the root was split (else the one top is the whole corpus).
    split: bool,
    tops: Vec<Top>,
}

/// A shard file's content.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ShardFile {
    plan: u128,
    index: u32,
    count: u32,
    /// (top cluster, its subtree), rows are units.
    tops: Vec<(u32, Group)>,
    /// Neighbour lists of units under a parent inside the subtrees.
    near: Vec<(u32, Vec<u32>)>,
}

/// Top clusters per shard: largest first, each to the least loaded shard
/// (ties: the lower shard, the lower cluster). Each shard's list ascends.
fn assign(sizes: &[usize], count: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|a, b| sizes[*b].cmp(&sizes[*a]).then(a.cmp(b)));
    let mut load = vec![0usize; count];
    let mut out = vec![Vec::new(); count];
    for t in order {
        let least = (0..count).min_by_key(|s| (load[*s], *s)).unwrap_or(0);
        load[least] += sizes[t];
        out[least].push(t);
    }
    out.iter_mut().for_each(|s| s.sort_unstable());
    out
}

/// The plan's top clusters from the root's split (seed, members) of
/// `rows`, each with its centroid.
fn tops_of(split: &[(u64, Vec<usize>)], rows: ndarray::ArrayView2<f32>) -> Vec<Top> {
    split
        .iter()
        .map(|(seed, members)| Top {
            seed: *seed,
            members: members.iter().map(|m| *m as u32).collect(),
            centroid: centroid(rows, members).to_vec(),
        })
        .collect()
}

/// A plan: the root's split of a corpus, saved in a folder.
#[derive(Debug)]
pub struct Plan {
    dir: PathBuf,
    file: PlanFile,
    hash: u128,
}

impl Plan {
    /// Embeds every document of a corpus (its `outline`, made with
    /// `params`' branching and sentences: [`Outline::of`] a loaded corpus,
    /// or an [`crate::Outliner`] fed as the corpus is read), splits the
    /// root and saves the plan and the vectors in `dir` (created if
    /// missing). `recipe` is kept for the caller (the CLI keeps how to load
    /// the corpus again).
    pub async fn make(
        outline: Outline,
        params: &ValidTreeParams,
        embedder: &Embedder,
        recipe: &str,
        dir: &Path,
        progress: &dyn Progress,
    ) -> Result<Plan> {
        if params.clustering() != Clustering::TopDown {
            return Err(Error::Param(
                "a sharded build needs the top-down clustering".into(),
            ));
        }
        if outline.documents == 0 {
            return Err(Error::Param("the corpus has no document".into()));
        }
        outline.made_for(params)?;
        let Outline {
            fingerprint,
            documents,
            units,
            texts,
            ..
        } = outline;
        let (embeddings, tfidf) =
            embed_units_fitted(documents, &units, move || texts, embedder, progress).await?;
        progress.stage("planning", 1);
        let split = crate::full::blocking(|| {
            RootSplit::new(
                embeddings.view(),
                params.branching(),
                params.sample(),
                params.seed(),
            )
        });
        std::fs::create_dir_all(dir).map_err(|source| TreeError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let vectors = write_vectors(&dir.join(VECTORS_FILE), embeddings.view())?;
        let tops = tops_of(&split.tops, embeddings.view());
        let file = PlanFile {
            corpus: fingerprint,
            units: units.len() as u64,
            dims: embeddings.ncols() as u64,
            vectors,
            branching: params.branching() as u32,
            seed: params.seed(),
            neighbours: params.neighbours() as u32,
            settings: split.settings,
            embedder: embedder.describe(),
            sentences: params.embed_sentences() as u32,
            tfidf,
            passage_vectors: params.keeps_passage_vectors(),
            recipe: recipe.to_string(),
            split: split.split,
            tops,
        };
        let hash = write_record(&dir.join(PLAN_FILE), PLAN_MAGIC, &file)?;
        progress.inc(1);
        Ok(Plan {
            dir: dir.to_path_buf(),
            file,
            hash,
        })
    }

    /// Opens the plan saved in `dir`, checking it.
    pub fn open(dir: &Path) -> Result<Plan> {
        let path = dir.join(PLAN_FILE);
        if !path.exists() {
            return Err(Error::Param(format!(
                "no plan in {}: make one first with `treenav build CORPUS --plan {}`",
                dir.display(),
                dir.display()
            )));
        }
        let (file, hash): (PlanFile, u128) = read_record(&path, PLAN_MAGIC, "plan")?;
        let units = file.units;
        let bad = |problem: String| -> Error {
            TreeError::BadFile {
                path: path.clone(),
                problem,
            }
            .into()
        };
        let placed: u64 = file.tops.iter().map(|t| t.members.len() as u64).sum();
        if placed != units
            || file
                .tops
                .iter()
                .flat_map(|t| &t.members)
                .any(|m| u64::from(*m) >= units)
        {
            return Err(bad(format!(
                "the top clusters do not hold the {units} documents"
            )));
        }
        if !(2..=10_000).contains(&file.branching) || file.settings != file.settings.clamped() {
            return Err(bad("the settings are out of range".into()));
        }
        Ok(Plan {
            dir: dir.to_path_buf(),
            file,
            hash,
        })
    }

    /// What the caller kept with the plan.
    pub fn recipe(&self) -> &str {
        &self.file.recipe
    }

    /// The fingerprint of the corpus the plan was made from.
    pub fn corpus(&self) -> &Fingerprint {
        &self.file.corpus
    }

    /// The seed of the build.
    pub fn seed(&self) -> u64 {
        self.file.seed
    }

    /// The number of top clusters.
    pub fn tops(&self) -> usize {
        self.file.tops.len()
    }

    /// The top clusters of each of `count` shards.
    fn shard_tops(&self, count: u32) -> Vec<Vec<usize>> {
        let sizes: Vec<usize> = self.file.tops.iter().map(|t| t.members.len()).collect();
        assign(&sizes, count as usize)
    }

    fn vectors(&self) -> Result<Vectors> {
        Vectors::open(
            &self.dir.join(VECTORS_FILE),
            self.file.units,
            self.file.dims,
            self.file.vectors,
        )
    }

    /// Whether shard `spec` is already built from this plan: its file is
    /// there, intact, and of this plan and index (a rerun keeps it).
    pub fn shard_done(&self, spec: ShardSpec) -> bool {
        let path = self.dir.join(shard_file(spec.index, spec.count));
        path.is_file()
            && read_record::<ShardFile>(&path, SHARD_MAGIC, "shard").is_ok_and(|(shard, _)| {
                (shard.plan, shard.index, shard.count) == (self.hash, spec.index, spec.count)
            })
    }

    /// Grows the subtrees of shard `spec`'s top clusters, reading only
    /// their rows of the vectors, and saves them in the plan's folder;
    /// returns the file written.
    pub fn build_shard(&self, spec: ShardSpec, progress: &dyn Progress) -> Result<PathBuf> {
        let mine = self.shard_tops(spec.count).swap_remove(spec.index as usize);
        let members: Vec<Vec<usize>> = mine
            .iter()
            .map(|t| {
                self.file.tops[*t]
                    .members
                    .iter()
                    .map(|m| *m as usize)
                    .collect()
            })
            .collect();
        let local = Local::new(members.iter().flatten().copied().collect());
        let points = self.vectors()?.rows(&local.rows)?;
        progress.stage("clustering", local.rows.len() as u64);
        let placed = |m: usize| progress.inc(m as u64);
        let grown: Vec<Grown> = crate::full::blocking(|| {
            mine.par_iter()
                .zip(members)
                .map(|(t, m)| {
                    let seed = self.file.tops[*t].seed;
                    let k = self.file.neighbours as usize;
                    grow(
                        points.view(),
                        local.to_local(&m),
                        seed,
                        self.file.settings,
                        k,
                        &placed,
                    )
                })
                .collect()
        });
        let mut file = ShardFile {
            plan: self.hash,
            index: spec.index,
            count: spec.count,
            tops: Vec::with_capacity(grown.len()),
            near: Vec::new(),
        };
        for (t, mut g) in mine.into_iter().zip(grown) {
            g.group.map_rows(&|r| local.global(r));
            file.tops.push((t as u32, g.group));
            file.near.extend(g.near.into_iter().map(|(u, list)| {
                let global = local.to_global(&list).into_iter().map(|v| v as u32);
                (local.global(u) as u32, global.collect())
            }));
        }
        let path = self.dir.join(shard_file(spec.index, spec.count));
        write_record(&path, SHARD_MAGIC, &file)?;
        Ok(path)
    }

    /// Checks, without reading them, that the plan's folder holds the
    /// shard files of one count and every index: a merge says a missing
    /// shard before it loads the corpus.
    pub fn check_shards(&self) -> Result<()> {
        self.shard_paths().map(|_| ())
    }

    /// The shard files in the plan's folder: one count, every index, each
    /// made from this plan.
    fn read_shards(&self) -> Result<Vec<ShardFile>> {
        let (count, paths) = self.shard_paths()?;
        let dir = self.dir.display();
        let mut out = Vec::with_capacity(paths.len());
        for (index, path) in (0..count).zip(paths) {
            let (shard, _): (ShardFile, u128) = read_record(&path, SHARD_MAGIC, "shard")?;
            if shard.plan != self.hash {
                return Err(TreeError::BadFile {
                    path,
                    problem: format!("this shard was built from another plan, not the one in {dir}: build it again"),
                }
                .into());
            }
            if (shard.index, shard.count) != (index, count) {
                return Err(TreeError::BadFile {
                    path,
                    problem: format!(
                        "it holds shard {}/{}, not {index}/{count}",
                        shard.index, shard.count
                    ),
                }
                .into());
            }
            out.push(shard);
        }
        Ok(out)
    }

    /// The shard count and the path of every shard file, each present.
    fn shard_paths(&self) -> Result<(u32, Vec<PathBuf>)> {
        let counts = self.shard_counts()?;
        let dir = self.dir.display();
        let count = match counts.as_slice() {
            [] => {
                return Err(Error::Param(format!(
                    "no shard in {dir}: build each with `treenav build --plan {dir} --shard I/N` (I = 0 … N-1)"
                )))
            }
            [one] => *one,
            many => {
                return Err(Error::Param(format!(
                    "{dir} holds shards of {} different counts ({many:?}): remove the files of the runs you do not want",
                    many.len()
                )))
            }
        };
        let mut paths = Vec::with_capacity(count as usize);
        for index in 0..count {
            let path = self.dir.join(shard_file(index, count));
            if !path.exists() {
                return Err(Error::Param(format!(
                    "shard {index}/{count} is missing ({}): run `treenav build --plan {dir} --shard {index}/{count}`",
                    path.display()
                )));
            }
            paths.push(path);
        }
        Ok((count, paths))
    }

    /// The shard counts named by the shard files in the plan's folder.
    fn shard_counts(&self) -> Result<Vec<u32>> {
        let entries = std::fs::read_dir(&self.dir).map_err(|source| TreeError::Io {
            path: self.dir.clone(),
            source,
        })?;
        let mut counts: Vec<u32> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let rest = name.strip_prefix("shard-")?.strip_suffix(".bin")?;
                let (_, count) = rest.split_once("-of-")?;
                count.parse().ok()
            })
            .collect();
        counts.sort_unstable();
        counts.dedup();
        Ok(counts)
    }

    /// Joins the shards saved in the plan's folder into the tree of
    /// `corpus` (which must be the corpus the plan was made from), labels
    /// and summarises it, and keeps the plan's vectors with it; `embedder`
    /// (the plan's) embeds the passages, as a single build does.
    pub async fn merge(
        &self,
        corpus: Corpus,
        source: &str,
        summarizer: &Summarizer,
        embedder: &Embedder,
        progress: &dyn Progress,
    ) -> Result<Tree> {
        self.check_corpus(&corpus, source)?;
        if embedder.describe() != self.file.embedder {
            return Err(Error::Param(format!(
                "the plan in {} was embedded with {}, not {}",
                self.dir.display(),
                self.file.embedder,
                embedder.describe()
            )));
        }
        let units = units(&corpus, self.file.branching as usize);
        if units.len() as u64 != self.file.units {
            return Err(Error::Param(format!(
                "the plan has {} documents to place, the corpus gives {}",
                self.file.units,
                units.len()
            )));
        }
        progress.stage("merging", self.tops() as u64);
        let (root, near) = self.join_shards(progress)?;
        let meta = TreeMeta {
            source: source.to_string(),
            embedder: self.file.embedder.clone(),
            summarizer: summarizer.describe(),
            branching: self.file.branching,
            seed: self.file.seed,
            built_by: concat!("treenav ", env!("CARGO_PKG_VERSION")).to_string(),
            corpus: Some(corpus.fingerprint()),
        };
        let near = near_by_unit(units.len(), near);
        let vectors = self.vectors()?;
        let (mut tree, node_of_unit) =
            finish(corpus, units, root, near, meta, summarizer, progress).await?;
        let embedding = treenav_tree::vectors::Embedding {
            embedder: self.file.embedder.clone(),
            tfidf: self.file.tfidf.clone(),
            sentences: self.file.sentences as usize,
        };
        let documents = blocking(|| vectors.quantised(embedding, &node_of_unit))?;
        let kept = Kept {
            documents,
            embedder,
        };
        let with_passages = self.file.passage_vectors;
        attach_vectors(&mut tree, &node_of_unit, kept, with_passages, progress).await?;
        Ok(tree)
    }

    /// Checks `corpus` is the one the plan was made from.
    fn check_corpus(&self, corpus: &Corpus, source: &str) -> Result<()> {
        let fingerprint = corpus.fingerprint();
        if fingerprint == self.file.corpus {
            return Ok(());
        }
        Err(Error::Param(format!(
            "{source} is not the corpus the plan in {} was made from ({} documents, {} passages, content {} now; the plan has {} documents, {} passages, content {})",
            self.dir.display(),
            fingerprint.documents,
            fingerprint.passages,
            fingerprint.xxh3_128,
            self.file.corpus.documents,
            self.file.corpus.passages,
            self.file.corpus.xxh3_128
        )))
    }

    /// The root over every shard's subtrees, and every neighbour list.
    fn join_shards(&self, progress: &dyn Progress) -> Result<(Group, Lists)> {
        let shards = self.read_shards()?;
        let count = shards.len() as u32;
        let expected = self.shard_tops(count);
        let mut tops: Vec<Option<Group>> = vec![None; self.tops()];
        let mut near: Lists = Vec::new();
        for shard in shards {
            let mut held: Vec<usize> = shard.tops.iter().map(|(t, _)| *t as usize).collect();
            held.sort_unstable();
            if held != expected[shard.index as usize] {
                return Err(TreeError::BadFile {
                    path: self.dir.join(shard_file(shard.index, count)),
                    problem: format!(
                        "it holds top clusters {held:?}, but the plan gives this shard {:?}",
                        expected[shard.index as usize]
                    ),
                }
                .into());
            }
            for (t, group) in shard.tops {
                progress.inc(1);
                if let Some(slot) = tops.get_mut(t as usize) {
                    *slot = Some(group);
                }
            }
            near.extend(
                shard
                    .near
                    .into_iter()
                    .map(|(u, list)| (u as usize, list.into_iter().map(|v| v as usize).collect())),
            );
        }
        let groups: Vec<Group> = tops.into_iter().flatten().collect();
        let vectors = self.vectors()?;
        join(
            self.file.split,
            self.file.settings.branching,
            groups,
            near,
            self.file.neighbours as usize,
            |rows| vectors.rows(rows),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_parsed_and_checked() {
        assert_eq!("2/3".parse::<ShardSpec>().ok(), ShardSpec::new(2, 3).ok());
        for bad in ["3/3", "1/0", "a/3", "1", "-1/3", "1/3/4"] {
            assert!(bad.parse::<ShardSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn top_clusters_are_balanced_over_shards() {
        let sizes = [50, 10, 40, 30, 20, 5];
        let shards = assign(&sizes, 3);
        let loads: Vec<usize> = shards
            .iter()
            .map(|s| s.iter().map(|t| sizes[*t]).sum())
            .collect();
        assert_eq!(loads, vec![55, 50, 50]);
        let mut all: Vec<usize> = shards.concat();
        all.sort_unstable();
        assert_eq!(all, (0..6).collect::<Vec<_>>());
        // More shards than clusters: some are empty.
        assert!(assign(&[1, 2], 4).iter().filter(|s| s.is_empty()).count() == 2);
    }
}

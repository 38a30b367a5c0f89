//! The on-disk index (tantivy) and the search over it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use std::io::Write as _;
use std::sync::{Arc, OnceLock};
use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query as TQuery, TermQuery, TermSetQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::{DocAddress, IndexReader, ReloadPolicy, TantivyDocument, Term};

use crate::Error;
use crate::commit::{Commit, words};
use crate::git::Repo;

/// Bumped whenever the schema or what is indexed changes: an older index is rebuilt.
const FORMAT: u32 = 2;
/// Our own record in the index directory, beside tantivy's files.
const META: &str = "kflame-fixes.json";
/// The commit graph beside the index: a line per indexed commit in `seq` order, its hash then
/// its parents' (what `--after` needs: the commits after a revision, without asking git to
/// walk the history, some 200 ms for 12k commits without a commit-graph file).
const GRAPH: &str = "kflame-fixes.graph";
/// Default directory of the index inside the repository's git directory.
const DEFAULT_DIR: &str = "kflame-fixes";

/// Weights of the query clauses (BM25 scores are multiplied by them). A function git names in
/// a hunk header, or a definition among the diff's lines, is the function the commit changes;
/// one called on a changed line is only nearby.
const W_HUNK_FN: f32 = 3.0;
const W_LINE_FN: f32 = 1.0;
const W_SUBJECT: f32 = 2.0;
const W_BODY: f32 = 0.5;
const W_FILE: f32 = 1.5;
const W_FILE_BASE: f32 = 1.0;
/// A commit that carries a `Fixes:` trailer is a fix: its score is multiplied by this.
const FIXES_FACTOR: f32 = 1.5;

/// What to look for. At least one function, file or word.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Function names, exact (`bpf_object__load`): the culprit frame first, then nearby frames.
    pub functions: Vec<String>,
    /// Source paths relative to the repository (`kernel/bpf/stackmap.c`), or base names
    /// (`stackmap.c`).
    pub files: Vec<String>,
    /// Free words (a report's title): matched in subjects and bodies, case-insensitively.
    pub words: Vec<String>,
    /// A revision (hash, tag, branch): commits after it (reachable from the indexed `HEAD`
    /// but not from it) rank first, and among them those whose `Fixes:` trailer names it.
    pub after: Option<String>,
    /// How many commits to return.
    pub limit: usize,
}

/// One ranked commit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// Full hash.
    pub id: String,
    /// Author date, ISO 8601.
    pub date: String,
    /// Subject line.
    pub subject: String,
    /// The ranking score (BM25 of the matched fields, times 1.5 for a `Fixes:` trailer);
    /// comparable within one search only.
    pub score: f32,
    /// Why it matched: `function:NAME` (named in a hunk header or defined), `call:NAME`
    /// (called on a changed line), `file:PATH`, `word:WORD`, `fixes:REV` (its `Fixes:`
    /// trailer names the `after` revision).
    pub matched: Vec<String>,
    /// Whether the commit carries a `Fixes:` trailer.
    pub fixes_trailer: bool,
    /// Its `Fixes:` trailers, as `HASH ("subject")`.
    pub fixes: Vec<String>,
    /// Whether it comes after [`Query::after`] (false when no `after` was given).
    pub after: bool,
}

/// What [`Index::open_or_build`] did.
#[derive(Debug, Clone, Default)]
pub struct BuildStats {
    /// Commits indexed by this call.
    pub added: usize,
    /// Commits in the index.
    pub total: usize,
    /// Why the index was built from scratch (`None`: it was opened and brought up to date).
    pub rebuilt: Option<String>,
    /// Time spent reading git and indexing.
    pub elapsed: Duration,
}

#[derive(Serialize, Deserialize)]
struct Meta {
    format: u32,
    git_dir: PathBuf,
    tip: String,
    commits: usize,
}

/// The commits after a revision: `seq`s not before it (from the graph), or hashes (from git).
enum After {
    Seqs(Arc<Vec<bool>>),
    Ids(Vec<String>),
}

#[derive(Clone, Copy)]
struct Fields {
    id: Field,
    seq: Field,
    date: Field,
    subject: Field,
    body: Field,
    fixes: Field,
    has_fixes: Field,
    subject_w: Field,
    body_w: Field,
    hunk_fn: Field,
    line_fn: Field,
    file: Field,
    file_base: Field,
    fixes_subject: Field,
    fixes_hash: Field,
    touched_fn: Field,
    touched_call: Field,
    files: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let raw = |freqs: bool| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default().set_tokenizer("raw").set_index_option(if freqs {
                IndexRecordOption::WithFreqs
            } else {
                IndexRecordOption::Basic
            }),
        )
    };
    let f = Fields {
        id: b.add_text_field("id", STRING | STORED),
        seq: b.add_u64_field("seq", INDEXED | STORED | FAST),
        date: b.add_text_field("date", STORED),
        subject: b.add_text_field("subject", STORED),
        body: b.add_text_field("body", STORED),
        fixes: b.add_text_field("fixes", STORED),
        has_fixes: b.add_u64_field("has_fixes", INDEXED | STORED | FAST),
        subject_w: b.add_text_field("subject_w", raw(true)),
        body_w: b.add_text_field("body_w", raw(true)),
        hunk_fn: b.add_text_field("hunk_fn", raw(true)),
        line_fn: b.add_text_field("line_fn", raw(true)),
        file: b.add_text_field("file", raw(true)),
        file_base: b.add_text_field("file_base", raw(true)),
        fixes_subject: b.add_text_field("fixes_subject", raw(false)),
        fixes_hash: b.add_text_field("fixes_hash", raw(false)),
        touched_fn: b.add_text_field("touched_fn", STORED),
        touched_call: b.add_text_field("touched_call", STORED),
        files: b.add_text_field("files", STORED),
    };
    (b.build(), f)
}

/// A commit search index over one repository.
pub struct Index {
    repo: Repo,
    dir: PathBuf,
    reader: IndexReader,
    f: Fields,
    tip: String,
    stats: BuildStats,
    /// The commit graph, read on the first query with `after` (`None`: missing or not of
    /// this index: git is asked instead).
    graph: OnceLock<Option<Graph>>,
}

/// The indexed commits' graph: `seq` of each hash, parents by `seq`.
struct Graph {
    seq: FxHashMap<String, u32>,
    parents: Vec<Vec<u32>>,
}

impl Graph {
    /// The graph file of an index of `commits` commits; `None` when it does not match.
    fn read(path: &Path, commits: usize) -> Option<Graph> {
        let text = std::fs::read_to_string(path).ok()?;
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() != commits {
            return None;
        }
        let mut seq = FxHashMap::default();
        for (i, l) in lines.iter().enumerate() {
            seq.insert(l.split(' ').next()?.to_string(), i as u32);
        }
        let parents = lines
            .iter()
            .map(|l| l.split(' ').skip(1).filter_map(|p| seq.get(p).copied()).collect())
            .collect();
        Some(Graph { seq, parents })
    }

    /// By `seq`: whether the commit is `id` or one of its ancestors (not after it).
    fn ancestors(&self, id: &str) -> Option<Vec<bool>> {
        let &start = self.seq.get(id)?;
        let mut seen = vec![false; self.parents.len()];
        let mut todo = vec![start];
        seen[start as usize] = true;
        while let Some(c) = todo.pop() {
            for &p in &self.parents[c as usize] {
                if !std::mem::replace(&mut seen[p as usize], true) {
                    todo.push(p);
                }
            }
        }
        Some(seen)
    }
}

impl std::fmt::Debug for Index {
    fn fmt(&self, fm: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fm.debug_struct("Index").field("dir", &self.dir).field("tip", &self.tip).finish_non_exhaustive()
    }
}

impl Index {
    /// Opens the index of the repository at `git_dir` (a work tree or a git directory),
    /// building it on first use in `index_dir` (default: `kflame-fixes/` inside the git
    /// directory) and indexing only the commits added to `HEAD` since the last call. An index
    /// that cannot be read, was made by another format, for another repository, or whose tip
    /// is no longer an ancestor of `HEAD` is rebuilt from scratch.
    pub fn open_or_build(git_dir: &Path, index_dir: Option<&Path>) -> Result<Index, Error> {
        let start = Instant::now();
        let repo = Repo::open(git_dir)?;
        let head = repo.head()?;
        let dir = index_dir.map_or_else(|| repo.git_dir.join(DEFAULT_DIR), Path::to_path_buf);
        let (schema, f) = schema();
        let mut stats = BuildStats::default();
        let reason = match open_existing(&dir, &repo, &schema) {
            Ok((index, meta)) => {
                if meta.tip == head {
                    stats.total = meta.commits;
                    stats.elapsed = start.elapsed();
                    return finish(repo, dir, &index, f, head, stats);
                }
                if repo.is_ancestor(&meta.tip, &head)? {
                    let range = format!("{}..{}", meta.tip, head);
                    let added = add_commits(&dir, &index, &repo, f, &range, meta.commits as u64)?;
                    stats.added = added;
                    stats.total = meta.commits + added;
                    write_meta(&dir, &repo, &head, stats.total)?;
                    stats.elapsed = start.elapsed();
                    return finish(repo, dir, &index, f, head, stats);
                }
                format!("its last indexed commit {} is no longer in HEAD's history", short(&meta.tip))
            }
            Err(reason) => reason,
        };
        clear_dir(&dir)?;
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
        let index = tantivy::Index::create_in_dir(&dir, schema)
            .map_err(|source| Error::Index { dir: dir.clone(), source })?;
        let added = add_commits(&dir, &index, &repo, f, &head, 0)?;
        write_meta(&dir, &repo, &head, added)?;
        stats.added = added;
        stats.total = added;
        stats.rebuilt = Some(reason);
        stats.elapsed = start.elapsed();
        finish(repo, dir, &index, f, head, stats)
    }

    /// What opening did: commits added, total, whether and why it was rebuilt.
    pub fn stats(&self) -> &BuildStats {
        &self.stats
    }

    /// The index directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The newest indexed commit (`HEAD` when the index was opened).
    pub fn tip(&self) -> &str {
        &self.tip
    }

    /// Ranked commits for `q`: see the crate documentation for the ranking.
    pub fn search(&self, q: &Query) -> Result<Vec<Hit>, Error> {
        let limit = q.limit.max(1);
        let f = self.f;
        let funcs: Vec<&str> = q.functions.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).collect();
        let files: Vec<&str> =
            q.files.iter().map(|s| s.trim().trim_start_matches("./")).filter(|s| !s.is_empty()).collect();
        let qwords: Vec<String> = {
            let mut v: Vec<String> = q.words.iter().flat_map(|w| words(w)).collect();
            v.dedup();
            v
        };
        if funcs.is_empty() && files.is_empty() && qwords.is_empty() {
            return Err(Error::EmptyQuery);
        }
        // The `after` revision: its full hash, subject, and the commits after it.
        let after = match &q.after {
            Some(rev) => {
                let id = self.repo.resolve(rev)?.ok_or_else(|| Error::UnknownRevision {
                    rev: rev.clone(),
                    repo: self.repo.shown.clone(),
                })?;
                let subject = match self.stored_subject(&id)? {
                    Some(s) => s,
                    None => self.repo.subject(&id)?,
                };
                // The commits after it: from the graph beside the index (every commit of the
                // indexed history that is not `id` or an ancestor of it), else from git.
                let graph = self.graph.get_or_init(|| Graph::read(&self.dir.join(GRAPH), self.stats.total));
                let after = match graph.as_ref().and_then(|g| g.ancestors(&id)) {
                    Some(before) => After::Seqs(Arc::new(before)),
                    None => After::Ids(self.repo.rev_list(&[&format!("{id}..{}", self.tip)])?),
                };
                Some((rev.clone(), id, subject, after))
            }
            None => None,
        };

        let mut clauses: Vec<(Occur, Box<dyn TQuery>)> = Vec::new();
        let term = |field: Field, text: &str, w: f32| -> (Occur, Box<dyn TQuery>) {
            let t = TermQuery::new(Term::from_field_text(field, text), IndexRecordOption::WithFreqs);
            (Occur::Should, Box::new(BoostQuery::new(Box::new(t), w)))
        };
        for func in &funcs {
            clauses.push(term(f.hunk_fn, func, W_HUNK_FN));
            clauses.push(term(f.line_fn, func, W_LINE_FN));
            let lower = func.to_lowercase();
            clauses.push(term(f.subject_w, &lower, W_SUBJECT));
            clauses.push(term(f.body_w, &lower, W_BODY));
        }
        for file in &files {
            clauses.push(term(f.file, file, W_FILE));
            clauses.push(term(f.file_base, basename(file), W_FILE_BASE));
        }
        for w in &qwords {
            clauses.push(term(f.subject_w, w, W_SUBJECT));
            clauses.push(term(f.body_w, w, W_BODY));
        }
        if let Some((_, id, subject, _)) = &after {
            // Fixes of the `after` commit itself: by the subject their trailer quotes or the
            // start of its hash (verified in full below).
            if !subject.is_empty() {
                clauses.push(term(f.fixes_subject, subject, 1.0));
            }
            clauses.push(term(f.fixes_hash, &id[..7], 1.0));
        }
        let text_query = BooleanQuery::new(clauses);

        let searcher = self.reader.searcher();
        let pool = (limit * 10).max(200);
        let top = |query: &dyn TQuery| -> Result<Vec<(f32, DocAddress)>, Error> {
            searcher
                .search(query, &TopDocs::with_limit(pool).order_by_score())
                .map_err(|source| Error::Index { dir: self.dir.clone(), source })
        };
        let mut found: Vec<(f32, DocAddress, bool)> = Vec::new();
        match after.as_ref().map(|a| &a.3) {
            Some(After::Seqs(before)) => {
                let before = before.clone();
                let keep = move |seq: u64| !before.get(seq as usize).copied().unwrap_or(true);
                let collector =
                    FilterCollector::new("seq".to_string(), keep, TopDocs::with_limit(pool).order_by_score());
                let hits = searcher
                    .search(&text_query, &collector)
                    .map_err(|source| Error::Index { dir: self.dir.clone(), source })?;
                found.extend(hits.into_iter().map(|(s, a)| (s, a, true)));
            }
            Some(After::Ids(ids)) if !ids.is_empty() => {
                let set = TermSetQuery::new(ids.iter().map(|i| Term::from_field_text(f.id, i)));
                // A filter: the set adds nothing to the score (as the graph's filter).
                let restricted = BooleanQuery::new(vec![
                    (Occur::Must, Box::new(text_query.clone()) as Box<dyn TQuery>),
                    (Occur::Must, Box::new(BoostQuery::new(Box::new(set), 0.0))),
                ]);
                found.extend(top(&restricted)?.into_iter().map(|(s, a)| (s, a, true)));
            }
            _ => {}
        }
        let seen: FxHashSet<DocAddress> = found.iter().map(|x| x.1).collect();
        if found.len() < limit {
            for (s, a) in top(&text_query)? {
                if !seen.contains(&a) {
                    found.push((s, a, false));
                }
            }
        }

        let mut hits = Vec::with_capacity(found.len());
        for (score, addr, is_after) in found {
            let doc: TantivyDocument =
                searcher.doc(addr).map_err(|source| Error::Index { dir: self.dir.clone(), source })?;
            let text = |field: Field| doc.get_first(field).and_then(|v| v.as_str()).unwrap_or("").to_string();
            let fixes: Vec<String> =
                doc.get_all(f.fixes).filter_map(|v| v.as_str()).map(str::to_string).collect();
            let fixes_trailer = !fixes.is_empty();
            let mut matched = Vec::new();
            let touched_fn = text(f.touched_fn);
            let touched_call = text(f.touched_call);
            let subject = text(f.subject);
            let body = text(f.body);
            for func in &funcs {
                if touched_fn.split(' ').any(|x| x == *func) {
                    matched.push(format!("function:{func}"));
                } else if touched_call.split(' ').any(|x| x == *func) {
                    matched.push(format!("call:{func}"));
                } else if words(&subject).chain(words(&body)).any(|w| w == func.to_lowercase()) {
                    matched.push(format!("word:{func}"));
                }
            }
            let all_files = text(f.files);
            for file in &files {
                if all_files.lines().any(|p| p == *file || basename(p) == basename(file)) {
                    matched.push(format!("file:{file}"));
                }
            }
            for w in &qwords {
                if words(&subject).chain(words(&body)).any(|x| x == *w) {
                    matched.push(format!("word:{w}"));
                }
            }
            let mut cites = false;
            if let Some((rev, id, subj, _)) = &after {
                cites = fixes.iter().any(|t| {
                    let (h, s) = t.split_once(' ').unwrap_or((t, ""));
                    id.starts_with(h)
                        || (!subj.is_empty()
                            && s.trim_start_matches('(').trim_matches(|c| c == '"' || c == ')') == subj)
                });
                if cites {
                    matched.push(format!("fixes:{rev}"));
                }
            }
            let score = if fixes_trailer { score * FIXES_FACTOR } else { score };
            hits.push((
                (is_after, cites),
                Hit {
                    id: text(f.id),
                    date: text(f.date),
                    subject,
                    score,
                    matched,
                    fixes_trailer,
                    fixes,
                    after: is_after,
                },
            ));
        }
        hits.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.score.total_cmp(&a.1.score)));
        hits.truncate(limit);
        Ok(hits.into_iter().map(|h| h.1).collect())
    }

    /// The full hash of revision `rev` (a tag, branch or hash) in the indexed repository,
    /// `None` when it names no commit.
    pub fn resolve(&self, rev: &str) -> Result<Option<String>, Error> {
        self.repo.resolve(rev)
    }

    /// The tag of this history a kernel release comes from ([`crate::release_tags`], the
    /// first that names a commit here); [`Error::NoReleaseTag`] when none does.
    pub fn release_tag(&self, release: &str) -> Result<String, Error> {
        let tried = crate::release_tags(release);
        for t in &tried {
            if self.resolve(t)?.is_some() {
                return Ok(t.clone());
            }
        }
        Err(Error::NoReleaseTag { release: release.to_string(), tried, repo: self.repo.shown.clone() })
    }

    /// The commits of `from..to` (reachable from `to`, not from `from`, as `git log
    /// from..to`) whose diffs touch `function` (a hunk of theirs is in it, or defines it),
    /// newest first, at most `limit`; and how many there are in all. Only indexed commits
    /// are found: `to` must be an ancestor of the indexed `HEAD`.
    pub fn touching(
        &self,
        function: &str,
        from: &str,
        to: &str,
        limit: usize,
    ) -> Result<(Vec<Hit>, usize), Error> {
        let mut all = self.touching_each(&[function], from, to, limit)?;
        Ok(all.pop().unwrap_or_default())
    }

    /// [`Index::touching`] of several functions over one range: the revisions resolved and
    /// the range listed once.
    pub fn touching_each(
        &self,
        functions: &[&str],
        from: &str,
        to: &str,
        limit: usize,
    ) -> Result<Vec<(Vec<Hit>, usize)>, Error> {
        let mut ids = Vec::with_capacity(2);
        for rev in [from, to] {
            let id = self.repo.resolve(rev)?.ok_or_else(|| Error::UnknownRevision {
                rev: rev.to_string(),
                repo: self.repo.shown.clone(),
            })?;
            ids.push(id);
        }
        let range: FxHashSet<String> =
            self.repo.rev_list(&[&format!("{}..{}", ids[0], ids[1])])?.into_iter().collect();
        functions.iter().map(|f| self.touching_in(f, &range, limit)).collect()
    }

    /// The indexed commits of `range` that touch `function`, newest first (`limit`), and
    /// their number.
    fn touching_in(
        &self,
        function: &str,
        range: &FxHashSet<String>,
        limit: usize,
    ) -> Result<(Vec<Hit>, usize), Error> {
        let searcher = self.reader.searcher();
        let q = TermQuery::new(Term::from_field_text(self.f.hunk_fn, function), IndexRecordOption::Basic);
        // Every commit of the history that touches it (a function's history is short next to
        // the kernel's), kept when it lies in the range.
        let all = searcher
            .search(&q, &TopDocs::with_limit(self.stats.total.max(1)).order_by_score())
            .map_err(|source| Error::Index { dir: self.dir.clone(), source })?;
        let mut hits = Vec::new();
        for (_, addr) in all {
            let doc: TantivyDocument =
                searcher.doc(addr).map_err(|source| Error::Index { dir: self.dir.clone(), source })?;
            let text = |field: Field| doc.get_first(field).and_then(|v| v.as_str()).unwrap_or("").to_string();
            let id = text(self.f.id);
            if !range.contains(&id) {
                continue;
            }
            let fixes: Vec<String> =
                doc.get_all(self.f.fixes).filter_map(|v| v.as_str()).map(str::to_string).collect();
            hits.push(Hit {
                id,
                date: text(self.f.date),
                subject: text(self.f.subject),
                score: 0.0,
                matched: vec![format!("function:{function}")],
                fixes_trailer: !fixes.is_empty(),
                fixes,
                after: true,
            });
        }
        hits.sort_by(|a, b| b.date.cmp(&a.date).then_with(|| a.id.cmp(&b.id)));
        let total = hits.len();
        hits.truncate(limit);
        Ok((hits, total))
    }

    /// The subject of an indexed commit, from the index (no git call).
    fn stored_subject(&self, id: &str) -> Result<Option<String>, Error> {
        let searcher = self.reader.searcher();
        let q = TermQuery::new(Term::from_field_text(self.f.id, id), IndexRecordOption::Basic);
        let top = searcher
            .search(&q, &TopDocs::with_limit(1).order_by_score())
            .map_err(|source| Error::Index { dir: self.dir.clone(), source })?;
        let Some((_, addr)) = top.first() else { return Ok(None) };
        let doc: TantivyDocument =
            searcher.doc(*addr).map_err(|source| Error::Index { dir: self.dir.clone(), source })?;
        Ok(doc.get_first(self.f.subject).and_then(|v| v.as_str()).map(str::to_string))
    }
}

fn finish(
    repo: Repo,
    dir: PathBuf,
    index: &tantivy::Index,
    f: Fields,
    tip: String,
    stats: BuildStats,
) -> Result<Index, Error> {
    let reader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()
        .map_err(|source| Error::Index { dir: dir.clone(), source })?;
    Ok(Index { repo, dir, reader, f, tip, stats, graph: OnceLock::new() })
}

/// The existing index, if it is one we can trust; otherwise why it must be rebuilt.
fn open_existing(dir: &Path, repo: &Repo, schema: &Schema) -> Result<(tantivy::Index, Meta), String> {
    let meta_path = dir.join(META);
    let text = match std::fs::read_to_string(&meta_path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err("no index yet".into()),
        Err(e) => return Err(format!("{} is unreadable: {e}", meta_path.display())),
    };
    let meta: Meta =
        serde_json::from_str(&text).map_err(|e| format!("{} is corrupt: {e}", meta_path.display()))?;
    if meta.format != FORMAT {
        return Err(format!("it was made by index format {} (this kflame writes {FORMAT})", meta.format));
    }
    if meta.git_dir != repo.git_dir {
        return Err(format!("it indexes another repository ({})", meta.git_dir.display()));
    }
    let index = tantivy::Index::open_in_dir(dir).map_err(|e| format!("it cannot be opened: {e}"))?;
    if index.schema() != *schema {
        return Err("its fields differ from this kflame's".into());
    }
    let reader: IndexReader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()
        .map_err(|e| format!("it cannot be read: {e}"))?;
    let searcher = reader.searcher();
    let docs = searcher.num_docs() as usize;
    if docs != meta.commits {
        return Err(format!("it holds {docs} commits where its record says {}", meta.commits));
    }
    // Opening checked every segment file's footer; reading each segment's first and last
    // stored document checks its document store without reading it all on every run.
    for (ord, seg) in searcher.segment_readers().iter().enumerate() {
        let store = seg.get_store_reader(1).map_err(|e| format!("segment {ord} is damaged: {e}"))?;
        for doc in [0, seg.max_doc().saturating_sub(1)] {
            store.get::<TantivyDocument>(doc).map_err(|e| format!("segment {ord} is damaged: {e}"))?;
        }
    }
    Ok((index, meta))
}

fn add_commits(
    dir: &Path,
    index: &tantivy::Index,
    repo: &Repo,
    f: Fields,
    range: &str,
    first_seq: u64,
) -> Result<usize, Error> {
    let ierr = |source| Error::Index { dir: dir.to_path_buf(), source };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let mut writer =
        index.writer_with_num_threads::<TantivyDocument>(threads, 48_000_000 * threads).map_err(ierr)?;
    let mut n = 0usize;
    let mut graph = String::new();
    repo.log(range, |c| {
        writer.add_document(document(&c, f, first_seq + n as u64)).map_err(ierr)?;
        graph.push_str(&c.id);
        for p in &c.parents {
            graph.push(' ');
            graph.push_str(p);
        }
        graph.push('\n');
        n += 1;
        Ok(())
    })?;
    writer.commit().map_err(ierr)?;
    writer.wait_merging_threads().map_err(ierr)?;
    // The graph follows the index (a graph that does not end up with a line per indexed
    // commit is not used: see `Graph::read`).
    let path = dir.join(GRAPH);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(first_seq > 0)
        .truncate(first_seq == 0)
        .open(&path)
        .and_then(|mut file| file.write_all(graph.as_bytes()));
    file.map_err(|source| Error::Io { path, source })?;
    Ok(n)
}

fn document(c: &Commit, f: Fields, seq: u64) -> TantivyDocument {
    let mut d = TantivyDocument::new();
    d.add_text(f.id, &c.id);
    d.add_u64(f.seq, seq);
    d.add_text(f.date, &c.date);
    d.add_text(f.subject, &c.subject);
    d.add_text(f.body, &c.body);
    d.add_u64(f.has_fixes, u64::from(!c.fixes.is_empty()));
    for t in &c.fixes {
        d.add_text(f.fixes, format!("{} (\"{}\")", t.hash, t.subject));
        if !t.subject.is_empty() {
            d.add_text(f.fixes_subject, &t.subject);
        }
        d.add_text(f.fixes_hash, &t.hash[..7]);
    }
    for w in words(&c.subject) {
        d.add_text(f.subject_w, w);
    }
    for w in words(&c.body) {
        d.add_text(f.body_w, w);
    }
    for x in &c.hunk_fns {
        d.add_text(f.hunk_fn, x);
    }
    for x in &c.line_fns {
        d.add_text(f.line_fn, x);
    }
    for p in &c.files {
        d.add_text(f.file, p);
        d.add_text(f.file_base, basename(p));
    }
    d.add_text(f.touched_fn, unique(&c.hunk_fns).join(" "));
    d.add_text(f.touched_call, unique(&c.line_fns).join(" "));
    d.add_text(f.files, c.files.join("\n"));
    d
}

fn unique(v: &[String]) -> Vec<&str> {
    let mut seen = FxHashSet::default();
    v.iter().map(String::as_str).filter(|s| seen.insert(*s)).collect()
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

fn write_meta(dir: &Path, repo: &Repo, tip: &str, commits: usize) -> Result<(), Error> {
    let meta = Meta { format: FORMAT, git_dir: repo.git_dir.clone(), tip: tip.to_string(), commits };
    let tmp = dir.join(format!("{META}.tmp"));
    let path = dir.join(META);
    let text = serde_json::to_string_pretty(&meta).unwrap_or_default();
    std::fs::write(&tmp, text).map_err(|source| Error::Io { path: tmp.clone(), source })?;
    std::fs::rename(&tmp, &path).map_err(|source| Error::Io { path, source })
}

/// Empties an index directory before a rebuild, only when it is ours (our record or
/// tantivy's `meta.json` in it) or already empty.
fn clear_dir(dir: &Path) -> Result<(), Error> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(Error::Io { path: dir.to_path_buf(), source }),
    };
    let entries: Vec<_> = entries.filter_map(Result::ok).collect();
    if entries.is_empty() {
        return Ok(());
    }
    if !dir.join(META).exists() && !dir.join("meta.json").exists() {
        return Err(Error::ForeignDirectory { dir: dir.to_path_buf() });
    }
    for e in entries {
        let p = e.path();
        let r = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        r.map_err(|source| Error::Io { path: p.clone(), source })?;
    }
    Ok(())
}

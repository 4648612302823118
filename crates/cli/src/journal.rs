//! A run's journal of finished work (`FILE.partial`, JSON lines next to `--out FILE`): one
//! header line naming the run (its command's identity), then one line per finished unit (a
//! sweep simulation), appended and flushed as each completes. Its existence marks the run
//! incomplete; `--resume` reads it back and redoes only what is missing; the complete result
//! replaces it (written atomically) at the end.

use anyhow::{bail, Context, Result};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub struct Journal {
    path: PathBuf,
    file: Mutex<std::fs::File>,
    /// Units recorded by this process, and whether it continued an earlier journal.
    records: std::sync::atomic::AtomicUsize,
    resumed: bool,
}

/// The journal kept beside `out`.
pub fn path_for(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".partial");
    PathBuf::from(s)
}

impl Journal {
    /// Start (or, with `resume`, continue) the journal for `out`; `header` identifies the run.
    /// Returns the journal and the units already finished, by key.
    pub fn open<T: DeserializeOwned>(
        out: &Path,
        header: &Value,
        resume: bool,
    ) -> Result<(Journal, BTreeMap<String, T>)> {
        let path = path_for(out);
        let mut done = BTreeMap::new();
        if resume {
            let text = std::fs::read_to_string(&path).with_context(|| {
                format!(
                    "--resume: no journal {} (nothing was interrupted, or it already finished)",
                    path.display()
                )
            })?;
            let mut lines = text.lines();
            let first: Value = serde_json::from_str(lines.next().unwrap_or(""))
                .with_context(|| format!("{}: bad header line", path.display()))?;
            if &first != header {
                bail!(
                    "--resume: {} belongs to a different run (its scenario, grid, policies or \
                     --set differ); start afresh without --resume",
                    path.display()
                );
            }
            for l in lines {
                // A line cut by the interrupt is simply redone.
                let Ok(v) = serde_json::from_str::<Value>(l) else {
                    continue;
                };
                let (Some(k), Some(d)) = (v.get("key").and_then(Value::as_str), v.get("doc"))
                else {
                    continue;
                };
                if let Ok(doc) = serde_json::from_value::<T>(d.clone()) {
                    done.insert(k.to_string(), doc);
                }
            }
        } else if path.exists() {
            bail!(
                "{} exists: an earlier run was interrupted; continue it with --resume, or \
                 remove the file",
                path.display()
            );
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        if !resume {
            writeln!(file, "{header}")?;
            file.sync_data()?;
        }
        Ok((
            Journal {
                path,
                file: Mutex::new(file),
                records: Default::default(),
                resumed: resume,
            },
            done,
        ))
    }

    /// Record one finished unit (flushed to disk before returning).
    pub fn record<T: Serialize>(&self, key: &str, doc: &T) -> Result<()> {
        let line = serde_json::json!({"key": key, "doc": doc});
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        writeln!(f, "{line}").and_then(|_| f.sync_data())?;
        self.records
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    /// The run failed: keep the journal only if it holds finished work (else a bad key would
    /// leave a journal that demands --resume next time).
    pub fn fail<T>(self, r: Result<T>) -> Result<T> {
        if r.is_err()
            && !self.resumed
            && self.records.load(std::sync::atomic::Ordering::SeqCst) == 0
        {
            let _ = std::fs::remove_file(&self.path);
        }
        r
    }

    /// The run is complete (its result written): drop the journal.
    pub fn finish(self) -> Result<()> {
        std::fs::remove_file(&self.path)
            .with_context(|| format!("removing {}", self.path.display()))
    }
}

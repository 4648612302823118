//! Run one benchmark in a forked child inside a fresh memcg (so its pages are charged there and
//! its mm is new and single-threaded), and bring its result back as one JSON line.

use crate::cgroup::{Memcg, MemcgRoot};
use crate::cleanup::{Cleanup, Undo};
use crate::proc::{fork_in_memcg, read_line};
use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::Write;
use std::time::{Duration, Instant};

/// A memcg for one benchmark, removed (with anything still in it) on every exit path.
pub fn fresh_memcg(root: &MemcgRoot, cleanup: &Cleanup) -> Result<(Memcg, Undo)> {
    let name = root.unique_name();
    let cg = Memcg {
        version: root.version,
        dir: root.dir.join(&name),
    };
    let cg2 = cg.clone();
    let (_, undo) = cleanup.apply(
        format!("memcg {}", cg.dir.display()),
        || root.create(&name),
        move || cg2.remove(),
    )?;
    Ok((cg, undo))
}

/// Fork a child that joins `cg`, runs `body` and sends its result back; wait for both (at most
/// `limit`). The child is killed on every exit path.
pub fn run_in<T: Serialize + DeserializeOwned>(
    cg: &Memcg,
    cleanup: &Cleanup,
    what: &str,
    limit: Duration,
    body: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let (mut f, undo) = fork_in_memcg(cg, cleanup, what, move |_from_parent, mut to_parent| {
        let v = body()?;
        let line = serde_json::to_string(&v)?;
        to_parent.write_all(format!("{line}\n").as_bytes())?;
        Ok(())
    })?;
    let deadline = Instant::now() + limit;
    let mut buf = Vec::new();
    let line = read_line(&mut f.from_child, &mut buf, deadline)
        .with_context(|| format!("benchmark {what}"))?;
    let ended = f.proc.wait_until(deadline, &mut || {})?;
    undo.run()?;
    let Some(line) = line else {
        bail!("benchmark {what} took longer than {limit:?}: stopped");
    };
    match ended {
        Some(e) if e.ok() => {}
        Some(e) => bail!("benchmark {what}: the child {}", e.describe()),
        None => bail!("benchmark {what}: the child did not exit after reporting"),
    }
    serde_json::from_str(&line).with_context(|| format!("benchmark {what}: bad report {line:?}"))
}

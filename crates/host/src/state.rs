//! bench's set-up journal: a small state file, `/run/reclaimlab/bench-<pid>.json`, rewritten
//! *before* each set-up step that creates something no name can tie back to us (a zram device
//! is nameless until mkswap labels it; a tracefs mount has no owner). If bench is SIGKILLed in
//! the middle, the next bench reads the dead one's journal and undoes exactly what it may have
//! done ([`recover_dead`]); a clean exit removes the file last.
//!
//! Every recovery step checks the machine first (is the device still there, still swap, still
//! sized?), so a journal whose steps were already undone (e.g. by a SIGINT clean-up that ran)
//! is harmless.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where journals live: tmpfs, so a reboot (which undoes everything anyway) empties it.
pub const DIR: &str = "/run/reclaimlab";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub pid: i32,
    /// zram ids that existed before bench asked zram-control for a new one.
    #[serde(default)]
    pub zram_before: Vec<u32>,
    /// A hot_add was about to be written (its id is known only once it returns).
    #[serde(default)]
    pub hot_add_started: bool,
    /// The zram device bench is configuring: (id, hot-added).
    #[serde(default)]
    pub zram: Option<(u32, bool)>,
    /// bench was about to mount tracefs.
    #[serde(default)]
    pub tracefs_mount_started: bool,
}

static CURRENT: Mutex<Option<(PathBuf, Journal)>> = Mutex::new(None);

fn lock() -> std::sync::MutexGuard<'static, Option<(PathBuf, Journal)>> {
    CURRENT.lock().unwrap_or_else(|e| e.into_inner())
}

fn write(path: &Path, j: &Journal) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec(j)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
}

/// Start this process's journal in `dir` (bench calls it before its first change).
pub fn open_in(dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let pid = std::process::id() as i32;
    let path = dir.join(format!("bench-{pid}.json"));
    let j = Journal {
        pid,
        ..Default::default()
    };
    write(&path, &j)?;
    *lock() = Some((path.clone(), j));
    Ok(path)
}

/// Record a step before taking it. Without an open journal (library use, tests) it does
/// nothing.
pub fn record(f: impl FnOnce(&mut Journal)) -> Result<()> {
    let mut g = lock();
    if let Some((path, j)) = g.as_mut() {
        f(j);
        write(path, j)?;
    }
    Ok(())
}

/// The clean-up is complete: drop the journal.
pub fn close() -> Result<()> {
    if let Some((path, _)) = lock().take() {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", path.display()))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The zram ids present now.
pub fn zram_ids() -> Vec<u32> {
    let mut ids: Vec<u32> = std::fs::read_dir("/sys/block")
        .map(|rd| {
            rd.filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("zram")?
                    .parse()
                    .ok()
            })
            .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

fn disksize(id: u32) -> u64 {
    std::fs::read_to_string(format!("/sys/block/zram{id}/disksize"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Undo what one dead bench's journal says it may have done to zram device `id`: swapoff if it
/// is swap, reset if it has a size, hot_remove if bench hot-added it. Each only when needed.
pub fn undo_zram(id: u32, hot: bool, said: &mut Vec<String>, pid: i32) {
    let dev = PathBuf::from(format!("/dev/zram{id}"));
    let name = dev.display().to_string();
    if !Path::new(&format!("/sys/block/zram{id}")).exists() {
        return;
    }
    let mut did = Vec::new();
    if crate::swap::active().iter().any(|(d, _)| *d == name) {
        // Only our own label: a device someone else has made swap since is not ours.
        let label = crate::swap::read_swap_label(&dev).unwrap_or_default();
        if !label.starts_with(&format!("rlab-{pid}")) {
            return;
        }
        if let Err(e) = crate::swap::swapoff_path(&dev) {
            said.push(format!("could not swapoff {name} of a killed bench: {e:#}"));
            return;
        }
        did.push("swapoff");
    }
    if disksize(id) != 0 {
        match std::fs::write(format!("/sys/block/zram{id}/reset"), "1") {
            Ok(()) => did.push("reset"),
            Err(e) => {
                said.push(format!("could not reset {name} of a killed bench: {e}"));
                return;
            }
        }
    }
    if hot {
        match std::fs::write("/sys/class/zram-control/hot_remove", id.to_string()) {
            Ok(()) => did.push("hot_remove"),
            Err(e) => said.push(format!(
                "could not hot_remove {name} of a killed bench: {e}"
            )),
        }
    }
    if !did.is_empty() {
        let what = if did.contains(&"swapoff") {
            "swap"
        } else {
            "zram device"
        };
        said.push(format!(
            "took down {what} {name} ({}) left by a killed bench (pid {pid})",
            did.join(", ")
        ));
    }
}

/// Undo what benches that died mid-set-up left, from their journals in `dir`; returns one
/// message per thing done. Journals of live processes are left alone.
pub fn recover_dead(dir: &Path) -> Vec<String> {
    let mut said = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return said;
    };
    let mut files: Vec<PathBuf> = rd.filter_map(|e| Some(e.ok()?.path())).collect();
    files.sort();
    for path in files {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let Some(pid) = name
            .strip_prefix("bench-")
            .and_then(|r| r.split('.').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() as i32 || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        // A torn or unreadable journal (killed mid-write: the .tmp) still says "this pid
        // started"; with nothing recorded there is nothing to undo.
        let j: Journal = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        match j.zram {
            Some((id, hot)) => undo_zram(id, hot, &mut said, pid),
            None if j.hot_add_started => {
                // Killed between hot_add and recording its answer: a device that is new since,
                // unsized and not swap, is the one it added.
                for id in zram_ids() {
                    if !j.zram_before.contains(&id)
                        && disksize(id) == 0
                        && !crate::swap::active()
                            .iter()
                            .any(|(d, _)| *d == format!("/dev/zram{id}"))
                    {
                        undo_zram(id, true, &mut said, pid);
                    }
                }
            }
            None => {}
        }
        if j.tracefs_mount_started {
            let t = Path::new(crate::trace::TRACEFS);
            // Its own instances first (and any other dead bench's): they would keep it mounted.
            if crate::trace::mounted().is_some() {
                said.extend(crate::leftovers::sweep_trace_instances(t));
            }
            let busy = std::fs::read_dir(t.join("instances")).is_ok_and(|mut r| r.next().is_some());
            if crate::trace::mounted().is_some() && !busy {
                match nix::mount::umount(t) {
                    Ok(()) => said.push(format!(
                        "unmounted tracefs left mounted by a killed bench (pid {pid})"
                    )),
                    Err(e) => said.push(format!("could not unmount tracefs: {e}")),
                }
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_is_written_before_steps_and_removed_at_the_end() {
        let d = tempfile::tempdir().unwrap();
        let path = open_in(d.path()).unwrap();
        record(|j| {
            j.zram_before = vec![0];
            j.hot_add_started = true;
        })
        .unwrap();
        let j: Journal = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(j.zram_before, vec![0]);
        assert!(j.hot_add_started);
        assert_eq!(j.pid, std::process::id() as i32);
        close().unwrap();
        assert!(!path.exists());
        // Without a journal, recording does nothing.
        record(|j| j.tracefs_mount_started = true).unwrap();
    }

    #[test]
    fn a_dead_benchs_empty_journal_is_removed_and_a_live_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        let dead_j = d.path().join(format!("bench-{dead}.json"));
        std::fs::write(&dead_j, "{\"pid\": 1").unwrap(); // torn
        let live_j = d.path().join("bench-1.json");
        std::fs::write(&live_j, "{}").unwrap();
        let said = recover_dead(d.path());
        assert!(said.is_empty(), "{said:?}");
        assert!(!dead_j.exists() && live_j.exists());
    }
}

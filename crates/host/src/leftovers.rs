//! What an earlier bench could not clean up because it was SIGKILLed: its memcgs, trace
//! instances, data files, swap files and stress-ng output, all named `reclaimlab-<pid>...`, and
//! its zram swap, labelled `rlab-<pid>`. bench removes those whose `<pid>` is no longer running before it
//! starts. A memcg that still has processes after a few seconds is left alone (and reported):
//! bench kills only processes it started itself.

use crate::cgroup::{Memcg, MemcgRoot};
use std::path::{Path, PathBuf};

/// The PID in a `reclaimlab-<pid>[-...]` (or swap label `rlab-<pid>[-h]`) name, if that
/// process is gone (and is not us).
pub fn dead_owner(name: &str) -> Option<i32> {
    let rest = name
        .strip_prefix("reclaimlab-")
        .or_else(|| name.strip_prefix("rlab-"))?;
    let pid: i32 = rest.split(['-', '.']).next()?.parse().ok()?;
    let alive = Path::new(&format!("/proc/{pid}")).exists();
    (pid > 0 && pid != std::process::id() as i32 && !alive).then_some(pid)
}

fn entries(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| {
                let e = e.ok()?;
                Some((e.file_name().into_string().ok()?, e.path()))
            })
            .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Remove what dead benches left in the memcg root, `data_dirs` and the temp directory, and
/// their trace instances if tracefs is mounted. A memcg with processes gets `patience` to
/// empty. Returns one message per thing found.
pub fn sweep(
    root: &MemcgRoot,
    data_dirs: &[&Path],
    tracefs: Option<&Path>,
    patience: std::time::Duration,
) -> Vec<String> {
    let mut said = Vec::new();
    for (name, path) in entries(&root.dir) {
        let Some(pid) = dead_owner(&name) else {
            continue;
        };
        if !path.is_dir() {
            continue;
        }
        let cg = Memcg {
            version: root.version,
            dir: path.clone(),
        };
        // The killed bench's workload dies with it (PR_SET_PDEATHSIG), but stress-ng's workers
        // take a moment: give them time to leave.
        let t = std::time::Instant::now();
        while cg.pids().is_ok_and(|p| !p.is_empty()) && t.elapsed() < patience {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        match cg.pids() {
            Ok(p) if !p.is_empty() => said.push(format!(
                "left alone memcg {} of a killed bench (pid {pid}): it still has processes {p:?}",
                path.display()
            )),
            _ => said.push(match cg.remove() {
                Ok(()) => format!(
                    "removed memcg {} left by a killed bench (pid {pid})",
                    path.display()
                ),
                Err(e) => format!("could not remove leftover memcg {}: {e:#}", path.display()),
            }),
        }
    }
    // Swap first: an active swap file cannot be unlinked (may_delete refuses S_SWAPFILE).
    said.extend(take_down_dead_swap());
    let tmp = std::env::temp_dir();
    let mut files: Vec<(String, PathBuf)> = data_dirs.iter().flat_map(|d| entries(d)).collect();
    files.extend(
        entries(&tmp)
            .into_iter()
            .filter(|(n, _)| n.ends_with("-stress-ng.yaml") || n.ends_with("-stress-ng.log")),
    );
    for (name, path) in files {
        let leftover = name.ends_with(".dat")
            || name.ends_with("-stress-ng.yaml")
            || name.ends_with("-stress-ng.log");
        if let (true, Some(pid)) = (leftover && path.is_file(), dead_owner(&name)) {
            said.push(match std::fs::remove_file(&path) {
                Ok(()) => format!(
                    "removed {} left by a killed bench (pid {pid})",
                    path.display()
                ),
                Err(e) => format!("could not remove leftover {}: {e}", path.display()),
            });
        }
    }
    if let Some(t) = tracefs {
        said.extend(sweep_trace_instances(t));
    }
    said
}

/// Swap that dead benches left on: zram devices labelled `rlab-<pid>` (taken down, reset) and
/// swap files named `reclaimlab-<pid>-swap.dat` (swapoff, removed).
fn take_down_dead_swap() -> Vec<String> {
    let mut said = Vec::new();
    for (dev, _) in crate::swap::active() {
        let dev = Path::new(&dev);
        let name = dev.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("reclaimlab-") && name.ends_with("-swap.dat") {
            let Some(pid) = dead_owner(name) else {
                continue;
            };
            said.push(match crate::swap::take_down_file(dev) {
                Ok(()) => format!(
                    "took down swap file {} left on by a killed bench (pid {pid})",
                    dev.display()
                ),
                Err(e) => format!("could not take down leftover swap {}: {e:#}", dev.display()),
            });
            continue;
        }
        let Some(label) = name
            .starts_with("zram")
            .then(|| crate::swap::read_swap_label(dev))
            .flatten()
        else {
            continue;
        };
        if let Some(pid) = dead_owner(&label) {
            said.push(
                match crate::swap::take_down_zram(dev, label.ends_with("-h")) {
                    Ok(()) => format!(
                        "took down swap {} left on by a killed bench (pid {pid})",
                        dev.display()
                    ),
                    Err(e) => format!("could not take down leftover swap {}: {e:#}", dev.display()),
                },
            );
        }
    }
    said
}

/// How long a dead bench's trace instance may stay busy: its processes die with it
/// (PR_SET_PDEATHSIG) but not at once, and one that still holds an instance file open makes
/// rmdir say EBUSY (the instance's trace_array is still referenced).
pub const INSTANCE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// rmdir `path`, again while it is busy, for up to `patience`.
fn remove_dir_patiently(path: &Path, patience: std::time::Duration) -> std::io::Result<()> {
    let t = std::time::Instant::now();
    loop {
        match std::fs::remove_dir(path) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && t.elapsed() < patience => {
                std::thread::sleep(std::time::Duration::from_millis(50))
            }
            r => return r,
        }
    }
}

/// Remove the trace instances (`reclaimlab-<pid>`, `reclaimlab-<pid>-sched`, ...) of dead
/// benches under the tracefs mounted at `tracefs`.
pub fn sweep_trace_instances(tracefs: &Path) -> Vec<String> {
    let mut said = Vec::new();
    for (name, path) in entries(&tracefs.join("instances")) {
        if let Some(pid) = dead_owner(&name) {
            // Every event of the instance, whichever it traced.
            let _ = std::fs::write(path.join("events/enable"), "0");
            said.push(match remove_dir_patiently(&path, INSTANCE_PATIENCE) {
                Ok(()) => format!(
                    "removed trace instance {} left by a killed bench (pid {pid})",
                    path.display()
                ),
                Err(e) => format!("could not remove leftover {}: {e}", path.display()),
            });
        }
    }
    said
}

/// zram devices (and a tracefs mount) that benches killed mid-set-up left: first from their
/// set-up journals in `journal_dir` (crate::state), then labelled zram devices that are sized
/// but not swap (killed between mkswap and swapon, or between swapoff and reset) — found by
/// label and state, not through /proc/swaps. Returns one message per thing done.
pub fn sweep_devices(journal_dir: &Path) -> Vec<String> {
    let mut said = crate::state::recover_dead(journal_dir);
    // Labelled zram devices that are not (or no longer) swap: a bench killed between mkswap
    // and swapon, or between swapoff and reset. Found by label and state, not /proc/swaps.
    let active: Vec<String> = crate::swap::active().into_iter().map(|(d, _)| d).collect();
    for id in crate::state::zram_ids() {
        let dev = PathBuf::from(format!("/dev/zram{id}"));
        let sized = std::fs::read_to_string(format!("/sys/block/zram{id}/disksize"))
            .is_ok_and(|s| s.trim() != "0");
        if !sized || active.contains(&dev.display().to_string()) {
            continue;
        }
        let Some(label) = crate::swap::read_swap_label(&dev) else {
            continue;
        };
        if let Some(pid) = dead_owner(&label) {
            crate::state::undo_zram(id, label.ends_with("-h"), &mut said, pid);
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cgroup::Version;

    /// A PID that no process has right now: one of ours, reaped.
    fn dead_pid() -> i32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id() as i32;
        c.wait().unwrap();
        pid
    }

    #[test]
    fn owners() {
        let dead = dead_pid();
        assert_eq!(dead_owner(&format!("reclaimlab-{dead}-3")), Some(dead));
        assert_eq!(dead_owner(&format!("reclaimlab-{dead}-0.dat")), Some(dead));
        assert_eq!(dead_owner(&format!("reclaimlab-{dead}")), Some(dead));
        assert_eq!(dead_owner(&format!("reclaimlab-{dead}-sched")), Some(dead));
        assert_eq!(dead_owner(&crate::swap::swap_label(dead, true)), Some(dead));
        assert_eq!(
            dead_owner(&format!("reclaimlab-{}-0", std::process::id())),
            None
        );
        assert_eq!(dead_owner("reclaimlab-1-0"), None, "pid 1 is alive");
        assert_eq!(dead_owner("other-123"), None);
        assert_eq!(dead_owner("reclaimlab-x"), None);
    }

    #[test]
    fn sweeps_what_dead_benches_left_and_nothing_else() {
        let dead = dead_pid();
        let t = tempfile::tempdir().unwrap();
        let root = MemcgRoot::new(Version::V1, t.path().join("memory"));
        let data = t.path().join("data");
        for d in [&root.dir, &data] {
            std::fs::create_dir_all(d).unwrap();
        }
        let empty = root.dir.join(format!("reclaimlab-{dead}-0"));
        let busy = root.dir.join(format!("reclaimlab-{dead}-1"));
        let mine = root
            .dir
            .join(format!("reclaimlab-{}-0", std::process::id()));
        for (d, procs) in [(&empty, ""), (&busy, "4242\n"), (&mine, "")] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("cgroup.procs"), procs).unwrap();
        }
        let file = data.join(format!("reclaimlab-{dead}-0.dat"));
        let other = data.join("reclaimlab-notes.txt");
        std::fs::write(&file, "x").unwrap();
        std::fs::write(&other, "x").unwrap();
        let said = sweep(&root, &[&data], None, std::time::Duration::ZERO);
        assert!(!empty.exists() && !file.exists());
        assert!(busy.exists() && mine.exists() && other.exists());
        assert_eq!(said.len(), 3, "{said:?}");
        assert!(said.iter().any(|s| s.contains("left alone")), "{said:?}");
    }
}

//! Memory cgroups, v1 and v2: find the memory controller, create a uniquely named memcg, set its
//! limit, move a process in, read its statistics and OOM kills, reclaim from it, remove it.
//!
//! The cgroupfs root is injectable ([`MemcgRoot::new`]) so both versions are unit-tested against a
//! plain directory.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V1 => "v1",
            Version::V2 => "v2",
        }
    }
}

/// Where memcgs are created: the memory controller's hierarchy (v1) or a cgroup2 directory whose
/// `cgroup.subtree_control` has (or will get) `memory` (v2).
#[derive(Clone, Debug)]
pub struct MemcgRoot {
    pub version: Version,
    pub dir: PathBuf,
}

/// Find the memory controller from `/proc/self/mountinfo`-formatted text. v2 wins when its root
/// lists `memory` in `cgroup.controllers` (read from the filesystem); otherwise a v1 hierarchy
/// mounted with the `memory` option.
pub fn detect_from(mountinfo: &str) -> Option<MemcgRoot> {
    let mut v1 = None;
    let mut v2 = None;
    for line in mountinfo.lines() {
        // id parent maj:min root mountpoint opts [optional...] - fstype source superopts
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let f: Vec<&str> = left.split_whitespace().collect();
        let r: Vec<&str> = right.split_whitespace().collect();
        if f.len() < 5 || r.is_empty() {
            continue;
        }
        let mnt = PathBuf::from(f[4]);
        match r[0] {
            "cgroup2" => {
                let ctrl =
                    std::fs::read_to_string(mnt.join("cgroup.controllers")).unwrap_or_default();
                if ctrl.split_whitespace().any(|c| c == "memory") && v2.is_none() {
                    v2 = Some(MemcgRoot::new(Version::V2, mnt));
                }
            }
            "cgroup" => {
                let opts = r.get(2).copied().unwrap_or("");
                if opts.split(',').any(|o| o == "memory") && v1.is_none() {
                    v1 = Some(MemcgRoot::new(Version::V1, mnt));
                }
            }
            _ => {}
        }
    }
    v2.or(v1)
}

/// The live machine's memory controller, or an error saying what is missing.
pub fn detect() -> Result<MemcgRoot> {
    let mi =
        std::fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    detect_from(&mi).ok_or_else(|| {
        anyhow::anyhow!(
            "no memory cgroup controller is mounted: bench needs cgroup v2 with the memory \
             controller (mount -t cgroup2 none /sys/fs/cgroup) or a v1 memory hierarchy \
             (mount -t cgroup -o memory none /sys/fs/cgroup/memory)"
        )
    })
}

fn write(path: &Path, v: &str) -> Result<()> {
    std::fs::write(path, v).with_context(|| format!("writing {v:?} to {}", path.display()))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// `key value` lines (memory.stat, memory.events, memory.oom_control) as a map.
pub fn parse_kv(text: &str) -> BTreeMap<String, i64> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let k = it.next()?;
            let v = it.next()?.parse().ok()?;
            Some((k.to_string(), v))
        })
        .collect()
}

impl MemcgRoot {
    pub fn new(version: Version, dir: impl Into<PathBuf>) -> MemcgRoot {
        MemcgRoot {
            version,
            dir: dir.into(),
        }
    }

    /// v2 only: whether `memory` must be enabled in the root's `cgroup.subtree_control` for a
    /// child to get memory files.
    pub fn needs_subtree_memory(&self) -> bool {
        self.version == Version::V2
            && !std::fs::read_to_string(self.dir.join("cgroup.subtree_control"))
                .unwrap_or_default()
                .split_whitespace()
                .any(|c| c == "memory")
    }

    /// Write `+memory` / `-memory` to the root's `cgroup.subtree_control` (v2).
    pub fn set_subtree_memory(&self, on: bool) -> Result<()> {
        write(
            &self.dir.join("cgroup.subtree_control"),
            if on { "+memory" } else { "-memory" },
        )
    }

    /// A fresh, unique memcg name: `reclaimlab-<pid>-<n>`.
    pub fn unique_name(&self) -> String {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        format!("reclaimlab-{}-{n}", std::process::id())
    }

    /// mkdir the memcg (it must not exist).
    pub fn create(&self, name: &str) -> Result<Memcg> {
        assert!(name.contains("reclaimlab") && !name.contains('/'));
        let dir = self.dir.join(name);
        std::fs::create_dir(&dir).with_context(|| format!("creating memcg {}", dir.display()))?;
        Ok(Memcg {
            version: self.version,
            dir,
        })
    }
}

/// One memcg directory.
#[derive(Clone, Debug)]
pub struct Memcg {
    pub version: Version,
    pub dir: PathBuf,
}

impl Memcg {
    fn file(&self, v1: &str, v2: &str) -> PathBuf {
        self.dir.join(match self.version {
            Version::V1 => v1,
            Version::V2 => v2,
        })
    }

    pub fn name(&self) -> String {
        self.dir.file_name().unwrap().to_string_lossy().into_owned()
    }

    /// Hard limit: v1 `memory.limit_in_bytes` (memsw stays unlimited so the group can swap),
    /// v2 `memory.max`.
    pub fn set_limit(&self, bytes: u64) -> Result<()> {
        write(
            &self.file("memory.limit_in_bytes", "memory.max"),
            &bytes.to_string(),
        )
    }

    pub fn limit(&self) -> Result<u64> {
        let s = read(&self.file("memory.limit_in_bytes", "memory.max"))?;
        let s = s.trim();
        Ok(if s == "max" {
            u64::MAX
        } else {
            s.parse().with_context(|| format!("bad limit {s:?}"))?
        })
    }

    /// v1 `memory.swappiness`; v2 has no per-memcg swappiness (returns false).
    pub fn set_swappiness(&self, v: u32) -> Result<bool> {
        match self.version {
            Version::V1 => {
                write(&self.dir.join("memory.swappiness"), &v.to_string())?;
                Ok(true)
            }
            Version::V2 => Ok(false),
        }
    }

    /// Charged memory: v1 `memory.usage_in_bytes`, v2 `memory.current`.
    pub fn usage(&self) -> Result<u64> {
        let s = read(&self.file("memory.usage_in_bytes", "memory.current"))?;
        s.trim().parse().with_context(|| format!("bad usage {s:?}"))
    }

    /// Move a process (all its threads) into the memcg.
    pub fn add_pid(&self, pid: i32) -> Result<()> {
        write(&self.dir.join("cgroup.procs"), &pid.to_string())
    }

    /// The path of `cgroup.procs`, for a child that moves itself in before exec.
    pub fn procs_path(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    pub fn pids(&self) -> Result<Vec<i32>> {
        Ok(read(&self.dir.join("cgroup.procs"))?
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect())
    }

    pub fn stat(&self) -> Result<BTreeMap<String, i64>> {
        Ok(parse_kv(&read(&self.dir.join("memory.stat"))?))
    }

    /// OOM kills in this memcg so far: v1 `memory.oom_control` / v2 `memory.events` `oom_kill`.
    pub fn oom_kills(&self) -> Result<u64> {
        let kv = parse_kv(&read(&self.file("memory.oom_control", "memory.events"))?);
        Ok(kv.get("oom_kill").copied().unwrap_or(0).max(0) as u64)
    }

    /// Reclaim `bytes` from the memcg and return how long the kernel took. v2 writes
    /// `memory.reclaim`; v1 (and v2 before Linux 5.19, without `memory.reclaim`) lowers the
    /// limit to usage − bytes (the write returns once usage is below it) and restores the
    /// previous limit afterwards.
    pub fn reclaim(&self, bytes: u64) -> Result<Duration> {
        let knob = self.dir.join("memory.reclaim");
        if self.version == Version::V2 && knob.exists() {
            let t = Instant::now();
            write(&knob, &bytes.to_string())?;
            return Ok(t.elapsed());
        }
        let old = self.limit()?;
        let usage = self.usage()?;
        let target = usage.saturating_sub(bytes).max(4096);
        let t = Instant::now();
        let r = self.set_limit(target);
        let took = t.elapsed();
        let restore = match old {
            u64::MAX if self.version == Version::V2 => write(&self.dir.join("memory.max"), "max"),
            _ => self.set_limit(old),
        };
        r?;
        restore?;
        Ok(took)
    }

    /// Kill every process in the memcg (all were started by us: the memcg is ours alone), wait
    /// until it is empty and remove it. A memcg that no longer exists is fine.
    pub fn remove(&self) -> Result<()> {
        if !self.dir.exists() {
            return Ok(());
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let pids = self.pids().unwrap_or_default();
            if pids.is_empty() {
                break;
            }
            if self.version == Version::V2 && self.dir.join("cgroup.kill").exists() {
                let _ = write(&self.dir.join("cgroup.kill"), "1");
            }
            for p in &pids {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(*p),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "memcg {} still has processes {pids:?} after SIGKILL",
                    self.dir.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // A process can leave cgroup.procs a moment before the memcg lets go of it.
        loop {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) && !is_cgroupfs(&self.dir) => {
                    // A plain directory standing in for cgroupfs (tests).
                    return std::fs::remove_dir_all(&self.dir)
                        .with_context(|| format!("removing {}", self.dir.display()));
                }
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("removing memcg {}", self.dir.display()))
                }
            }
        }
    }
}

fn is_cgroupfs(p: &Path) -> bool {
    match nix::sys::statfs::statfs(p) {
        Ok(s) => {
            let t = s.filesystem_type();
            t == nix::sys::statfs::CGROUP_SUPER_MAGIC || t == nix::sys::statfs::CGROUP2_SUPER_MAGIC
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(version: Version) -> (tempfile::TempDir, MemcgRoot) {
        let t = tempfile::tempdir().unwrap();
        let root = MemcgRoot::new(version, t.path());
        (t, root)
    }

    #[test]
    fn detects_v2_with_memory_before_v1() {
        let t = tempfile::tempdir().unwrap();
        let v2 = t.path().join("unified");
        let v1 = t.path().join("memory");
        std::fs::create_dir_all(&v2).unwrap();
        std::fs::create_dir_all(&v1).unwrap();
        let mi = format!(
            "30 25 0:26 / {} rw,relatime shared:9 - cgroup cgroup rw,memory\n\
             31 25 0:27 / {} rw,relatime shared:10 - cgroup2 cgroup2 rw\n",
            v1.display(),
            v2.display()
        );
        // The v2 hierarchy has no memory controller (this machine): v1 is used.
        std::fs::write(v2.join("cgroup.controllers"), "cpu io pids\n").unwrap();
        let r = detect_from(&mi).unwrap();
        assert_eq!((r.version, r.dir.clone()), (Version::V1, v1.clone()));
        // With memory in v2, v2 wins.
        std::fs::write(v2.join("cgroup.controllers"), "cpu io memory pids\n").unwrap();
        let r = detect_from(&mi).unwrap();
        assert_eq!((r.version, r.dir), (Version::V2, v2));
        // Nothing with memory: None.
        assert!(detect_from("31 25 0:27 / /x rw - cgroup cgroup rw,cpu\n").is_none());
    }

    #[test]
    fn v2_files() {
        let (_t, root) = fake(Version::V2);
        std::fs::write(root.dir.join("cgroup.subtree_control"), "cpu io\n").unwrap();
        assert!(root.needs_subtree_memory());
        let name = root.unique_name();
        assert!(name.starts_with("reclaimlab-"));
        let cg = root.create(&name).unwrap();
        cg.set_limit(256 << 20).unwrap();
        assert_eq!(
            std::fs::read_to_string(cg.dir.join("memory.max")).unwrap(),
            "268435456"
        );
        assert!(!cg.set_swappiness(60).unwrap());
        std::fs::write(
            cg.dir.join("memory.events"),
            "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n",
        )
        .unwrap();
        assert_eq!(cg.oom_kills().unwrap(), 2);
        std::fs::write(
            cg.dir.join("memory.stat"),
            "anon 4096\nfile 8192\npgscan 5\n",
        )
        .unwrap();
        assert_eq!(cg.stat().unwrap()["file"], 8192);
        std::fs::write(cg.dir.join("memory.reclaim"), "").unwrap(); // Linux >= 5.19
        cg.reclaim(128 << 20).unwrap();
        assert_eq!(
            std::fs::read_to_string(cg.dir.join("memory.reclaim")).unwrap(),
            "134217728"
        );
        cg.add_pid(1234).unwrap();
        assert_eq!(cg.pids().unwrap(), vec![1234]);
        std::fs::write(cg.dir.join("cgroup.procs"), "").unwrap();
        cg.remove().unwrap();
        assert!(!cg.dir.exists());
        cg.remove().unwrap(); // idempotent
    }

    #[test]
    fn v1_files_and_reclaim_by_limit() {
        let (_t, root) = fake(Version::V1);
        assert!(!root.needs_subtree_memory());
        let cg = root.create(&root.unique_name()).unwrap();
        cg.set_limit(512 << 20).unwrap();
        assert_eq!(cg.limit().unwrap(), 512 << 20);
        assert!(cg.set_swappiness(60).unwrap());
        assert_eq!(
            std::fs::read_to_string(cg.dir.join("memory.swappiness")).unwrap(),
            "60"
        );
        std::fs::write(
            cg.dir.join("memory.oom_control"),
            "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n",
        )
        .unwrap();
        assert_eq!(cg.oom_kills().unwrap(), 5);
        std::fs::write(cg.dir.join("memory.usage_in_bytes"), "300000000\n").unwrap();
        cg.reclaim(100_000_000).unwrap();
        // The limit went down to usage − reclaim and was restored after.
        assert_eq!(cg.limit().unwrap(), 512 << 20);
        cg.remove().unwrap();
        assert!(!cg.dir.exists());
    }

    #[test]
    fn v2_without_memory_reclaim_lowers_memory_max_and_restores_it() {
        let (_t, root) = fake(Version::V2);
        let cg = root.create(&root.unique_name()).unwrap();
        std::fs::write(cg.dir.join("memory.max"), "max\n").unwrap();
        std::fs::write(cg.dir.join("memory.current"), "300000000\n").unwrap();
        cg.reclaim(100_000_000).unwrap();
        assert!(!cg.dir.join("memory.reclaim").exists());
        assert_eq!(
            std::fs::read_to_string(cg.dir.join("memory.max")).unwrap(),
            "max"
        );
        cg.remove().unwrap();
    }

    #[test]
    fn parses_kv() {
        let kv = parse_kv("cache 10\nrss 20\nbogus\ntotal_rss -3\n");
        assert_eq!(kv.len(), 3);
        assert_eq!(kv["total_rss"], -3);
    }
}

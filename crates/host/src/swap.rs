//! Swap for anonymous scenarios: report what is on, or set up a zram device for the run
//! (`--swap zram:SIZE`) and take it down afterwards.

use crate::cleanup::Cleanup;
use anyhow::{bail, Context, Result};
use reclaimlab_core::SwapInfo;
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Active swap devices from `/proc/swaps` text: (device, size in bytes).
pub fn parse_proc_swaps(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((
                f.first()?.to_string(),
                f.get(2)?.parse::<u64>().ok()? * 1024,
            ))
        })
        .collect()
}

pub fn active() -> Vec<(String, u64)> {
    parse_proc_swaps(&std::fs::read_to_string("/proc/swaps").unwrap_or_default())
}

/// A `queue/` attribute of the disk under a swap device or swap file: the device's own, or
/// a partition's disk's (None when sysfs does not say).
fn queue_attr(dev: &str, name: &str) -> Option<String> {
    disk_attr(dev, &format!("queue/{name}"))
}

/// An attribute (a path under the disk's sysfs directory) of the disk under a swap device or
/// swap file: the device's own, or a partition's disk's.
fn disk_attr(dev: &str, rel: &str) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = std::fs::metadata(dev).ok()?;
    // A swap file lives on its filesystem's device; a swap partition is the device itself.
    let id = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let sys = PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        libc::major(id),
        libc::minor(id)
    ));
    [sys.clone(), sys.join("..")]
        .iter()
        .find_map(|d| std::fs::read_to_string(d.join(rel)).ok())
}

/// VIRTIO_RING_F_INDIRECT_DESC, a bit of the virtio feature word.
const VIRTIO_RING_F_INDIRECT_DESC: usize = 28;

/// A virtio-blk disk's ring: (descriptors, indirect descriptors) from its negotiated features
/// (`device/features`, one character per bit) and its tags (`mq/0/nr_tags`). virtblk_probe
/// gives a device without indirect descriptors half its ring as tags (two descriptors a
/// request at least); with them a request takes one, and the tags bound the ring's use.
/// None for another driver or where sysfs does not say.
fn virtio_ring(dev: &str) -> Option<(u32, bool)> {
    ring_from(
        &disk_attr(dev, "device/uevent")?,
        &disk_attr(dev, "device/features")?,
        &disk_attr(dev, "mq/0/nr_tags")?,
    )
}

/// [`virtio_ring`] from the text of `device/uevent`, `device/features` and `mq/0/nr_tags`.
fn ring_from(uevent: &str, features: &str, nr_tags: &str) -> Option<(u32, bool)> {
    if !uevent.lines().any(|l| l == "DRIVER=virtio_blk") {
        return None;
    }
    let indirect = features
        .trim()
        .as_bytes()
        .get(VIRTIO_RING_F_INDIRECT_DESC)?
        == &b'1';
    let tags: u32 = nr_tags.trim().parse().ok()?;
    Some((if indirect { tags } else { 2 * tags }, indirect))
}

/// nr_rotate_swap > 0: any active device rotational (None if one is unknown).
fn any_rotational(devices: &[String]) -> Option<bool> {
    let flags: Option<Vec<bool>> = devices
        .iter()
        .map(|d| queue_attr(d, "rotational").map(|t| t.trim() == "1"))
        .collect();
    flags.map(|f| f.into_iter().any(|r| r))
}

/// The active entry of a queue/scheduler line ("none [mq-deadline] kyber bfq").
fn active_scheduler(line: &str) -> Option<String> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_string)
}

/// What swap the run has, for `machine.swap`.
pub fn info(kind: &str) -> SwapInfo {
    let a = active();
    let devices: Vec<String> = a.iter().map(|(d, _)| d.clone()).collect();
    SwapInfo {
        rotational: if a.is_empty() {
            None
        } else {
            any_rotational(&devices)
        },
        // The first device's: the one a swap file or partition sits on.
        scheduler: devices
            .first()
            .and_then(|d| queue_attr(d, "scheduler"))
            .and_then(|l| active_scheduler(&l)),
        request_pages: devices.first().and_then(|d| {
            let num = |n| queue_attr(d, n)?.trim().parse::<u32>().ok();
            Some(num("max_segments")?.min(num("max_sectors_kb")? / 4))
        }),
        virtio_ring: devices.first().and_then(|d| virtio_ring(d)),
        kind: if a.is_empty() {
            "none".into()
        } else {
            kind.into()
        },
        bytes: a.iter().map(|(_, b)| b).sum(),
        devices,
    }
}

/// The message for an anonymous scenario without swap.
pub fn no_swap_error(scenario: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "scenario {scenario} reclaims anonymous memory, which needs swap, and no swap is on: \
         pass --swap zram:4G to set up a zram swap device for the run (it is taken down \
         afterwards), or enable swap yourself"
    )
}

fn sysfs_write(p: &Path, v: &str) -> Result<()> {
    std::fs::write(p, v).with_context(|| format!("writing {v:?} to {}", p.display()))
}

fn swapon(dev: &Path) -> Result<()> {
    let c = CString::new(dev.as_os_str().as_encoded_bytes())?;
    // Highest priority, so the run's swap goes to this device first.
    // SWAP_FLAG_PREFER | priority (linux/swap.h; not in the libc crate).
    const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
    const SWAP_FLAG_PRIO_MASK: libc::c_int = 0x7fff;
    let flags = SWAP_FLAG_PREFER | (32767 & SWAP_FLAG_PRIO_MASK);
    // SAFETY: valid NUL-terminated path.
    if unsafe { libc::swapon(c.as_ptr(), flags) } != 0 {
        return Err(std::io::Error::last_os_error()).context(format!("swapon {}", dev.display()));
    }
    Ok(())
}

/// swapoff(2) on `dev` (also used by the set-up journal's recovery, crate::state).
pub fn swapoff_path(dev: &Path) -> Result<()> {
    swapoff(dev)
}

fn swapoff(dev: &Path) -> Result<()> {
    let c = CString::new(dev.as_os_str().as_encoded_bytes())?;
    // SAFETY: valid NUL-terminated path.
    if unsafe { libc::swapoff(c.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error()).context(format!("swapoff {}", dev.display()));
    }
    Ok(())
}

/// Pick a free zram device: the first existing one with disksize 0 that is not swap, else one
/// hot-added through /sys/class/zram-control (removed again at clean-up). Returns (id,
/// hot-added).
fn free_zram(cleanup: &Cleanup) -> Result<(u32, bool)> {
    let in_use: Vec<String> = active().into_iter().map(|(d, _)| d).collect();
    for id in crate::state::zram_ids() {
        let size =
            std::fs::read_to_string(format!("/sys/block/zram{id}/disksize")).unwrap_or_default();
        if size.trim() == "0" && !in_use.contains(&format!("/dev/zram{id}")) {
            // Journalled before its disksize is set: unlabelled until mkswap.
            crate::state::record(|j| j.zram = Some((id, false)))?;
            return Ok((id, false));
        }
    }
    let ctl = Path::new("/sys/class/zram-control");
    if !ctl.exists() {
        bail!(
            "no free zram device and no /sys/class/zram-control: load the zram module \
             (modprobe zram) or enable swap yourself"
        );
    }
    // The new id is known only once hot_add answers: journal what exists before asking.
    let before = crate::state::zram_ids();
    crate::state::record(|j| {
        j.zram_before = before;
        j.hot_add_started = true;
    })?;
    let slot = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(-1));
    let s2 = slot.clone();
    let (id, _) = cleanup.apply(
        "hot-added zram device",
        || {
            let s = std::fs::read_to_string(ctl.join("hot_add")).context("zram hot_add")?;
            let id = s.trim().parse::<u32>().context("zram hot_add answer")?;
            slot.store(id as i64, std::sync::atomic::Ordering::SeqCst);
            crate::state::record(|j| j.zram = Some((id, true)))?;
            Ok(id)
        },
        move || match s2.load(std::sync::atomic::Ordering::SeqCst) {
            id if id >= 0 => sysfs_write(&ctl.join("hot_remove"), &id.to_string()),
            _ => Ok(()),
        },
    )?;
    Ok((id, true))
}

/// The swap label of a device bench `pid` set up: `rlab-<pid>`, `-h` when hot-added (a swap
/// label has at most 16 bytes).
pub fn swap_label(pid: i32, hot: bool) -> String {
    format!("rlab-{pid}{}", if hot { "-h" } else { "" })
}

/// The label in a swap header (`mkswap -L`): 16 bytes at offset 1052.
pub fn read_swap_label(dev: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(dev).ok()?;
    f.seek(SeekFrom::Start(1052)).ok()?;
    let mut b = [0u8; 16];
    f.read_exact(&mut b).ok()?;
    let end = b.iter().position(|c| *c == 0).unwrap_or(16);
    Some(String::from_utf8_lossy(&b[..end]).into_owned())
}

/// Take down a zram swap device a dead bench left on: swapoff, reset, and hot_remove if it
/// hot-added it.
pub fn take_down_zram(dev: &Path, hot: bool) -> Result<()> {
    let name = dev
        .file_name()
        .and_then(|n| n.to_str())
        .context("zram device name")?;
    let id = name.strip_prefix("zram").context("not a zram device")?;
    swapoff(dev)?;
    sysfs_write(&Path::new("/sys/block").join(name).join("reset"), "1")?;
    if hot {
        sysfs_write(Path::new("/sys/class/zram-control/hot_remove"), id)?;
    }
    Ok(())
}

/// Take down a swap file a dead bench left on: swapoff, then remove it.
pub fn take_down_file(path: &Path) -> Result<()> {
    swapoff(path)?;
    std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))
}

/// Set up `/dev/zramN` of `bytes` as swap. Every step registers its undo: swapoff, reset.
pub fn setup_zram(cleanup: &Cleanup, bytes: u64) -> Result<PathBuf> {
    let (id, hot) = free_zram(cleanup)?;
    let sys = PathBuf::from(format!("/sys/block/zram{id}"));
    let dev = PathBuf::from(format!("/dev/zram{id}"));
    let reset = sys.join("reset");
    cleanup.apply(
        format!("zram{id} disksize"),
        || sysfs_write(&sys.join("disksize"), &bytes.to_string()),
        move || sysfs_write(&reset, "1"),
    )?;
    // The label names us, so a later bench can take the device down if this one is SIGKILLed
    // (see crate::leftovers).
    mkswap(&dev, &swap_label(std::process::id() as i32, hot))?;
    swapon_for_run(cleanup, dev)
}

/// swapon `dev` with swapoff registered as its undo.
fn swapon_for_run(cleanup: &Cleanup, dev: PathBuf) -> Result<PathBuf> {
    let d2 = dev.clone();
    cleanup.apply(
        format!("swapon {}", dev.display()),
        || swapon(&dev),
        move || swapoff(&d2),
    )?;
    Ok(dev)
}

fn mkswap(dev: &Path, label: &str) -> Result<()> {
    let out = std::process::Command::new("mkswap")
        .args(["-L", label])
        .arg(dev)
        .output()
        .context("running mkswap (util-linux)")?;
    if !out.status.success() {
        bail!(
            "mkswap {} failed: {}",
            dev.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// The swap file bench `pid` makes in `dir`: named like its other files, so
/// crate::leftovers finds it by name if bench is SIGKILLed.
pub fn swapfile_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("reclaimlab-{pid}-swap.dat"))
}

/// Whether the filesystem under `dir` keeps its data in RAM (tmpfs, ramfs): no swap there.
fn in_ram(dir: &Path) -> Result<bool> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let c = CString::new(dir.as_os_str().as_encoded_bytes())?;
    // SAFETY: valid NUL-terminated path and a zeroed out-struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error()).context(format!(
            "statfs {} (the swap file's directory)",
            dir.display()
        ));
    }
    let magic = st.f_type as i64;
    Ok(magic == TMPFS_MAGIC || magic == RAMFS_MAGIC)
}

/// Set up a swap file of `bytes` in `dir` (a disk filesystem): a block swap device, written
/// back asynchronously and read with I/O waits (mm/page_io.c's bio paths), unlike zram. Every
/// step registers its undo: swapoff, then the file removed.
pub fn setup_file(cleanup: &Cleanup, bytes: u64, dir: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    if !dir.is_dir() {
        bail!("--swap file: {} is not a directory", dir.display());
    }
    if in_ram(dir)? {
        bail!(
            "--swap file: {} is on tmpfs or ramfs, which cannot hold swap: name a directory \
             on a disk filesystem (file:SIZE:DIR)",
            dir.display()
        );
    }
    let path = swapfile_path(dir, std::process::id());
    let p2 = path.clone();
    let (file, _) = cleanup.apply(
        format!("swap file {}", path.display()),
        || {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .with_context(|| format!("creating {}", path.display()))
        },
        move || std::fs::remove_file(&p2).context("removing the swap file"),
    )?;
    // Real blocks: swapon refuses a file with holes.
    if let Err(e) = crate::workers::allocate(&file, bytes) {
        return Err(e).context(format!(
            "allocating {} bytes for {} (a filesystem without fallocate cannot hold this swap \
             file)",
            bytes,
            path.display()
        ));
    }
    drop(file);
    mkswap(&path, &swap_label(std::process::id() as i32, false))?;
    swapon_for_run(cleanup, path)
}

/// Set up a free `/dev/zramN` of `bytes` as a plain block device (calibrate writes to it
/// directly; no swap on it). Reset (and hot-removed, if hot-added) at clean-up.
pub fn setup_zram_block(cleanup: &Cleanup, bytes: u64) -> Result<PathBuf> {
    let (id, _hot) = free_zram(cleanup)?;
    let sys = PathBuf::from(format!("/sys/block/zram{id}"));
    let reset = sys.join("reset");
    cleanup.apply(
        format!("zram{id} disksize"),
        || sysfs_write(&sys.join("disksize"), &bytes.to_string()),
        move || sysfs_write(&reset, "1"),
    )?;
    Ok(PathBuf::from(format!("/dev/zram{id}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtio_disks_ring_comes_from_its_features_and_tags() {
        let uevent = "DRIVER=virtio_blk\nMODALIAS=virtio:d00000002v00001AF4\n";
        // This machine's vda: bit 28 (VIRTIO_RING_F_INDIRECT_DESC) clear, 128 tags.
        let no_indirect = "0010001001100100000000000000010010000000000000000000000000000000\n";
        assert_eq!(ring_from(uevent, no_indirect, "128\n"), Some((256, false)));
        let mut with = no_indirect.as_bytes().to_vec();
        with[VIRTIO_RING_F_INDIRECT_DESC] = b'1';
        let with = String::from_utf8(with).unwrap();
        assert_eq!(ring_from(uevent, &with, "128\n"), Some((128, true)));
        assert_eq!(ring_from("DRIVER=nvme\n", no_indirect, "1023"), None);
        assert_eq!(
            ring_from(uevent, "0101", "128"),
            None,
            "too few feature bits"
        );
    }

    #[test]
    fn a_swap_device_sysfs_does_not_know_is_not_guessed() {
        assert_eq!(
            queue_attr("/nonexistent/reclaimlab-swap", "rotational"),
            None
        );
        assert_eq!(any_rotational(&["/nonexistent/x".into()]), None);
        assert_eq!(any_rotational(&[]), Some(false));
    }

    #[test]
    fn the_active_scheduler_is_the_bracketed_one() {
        let a = active_scheduler;
        assert_eq!(
            a("none [mq-deadline] kyber bfq\n").as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(a("[none] mq-deadline\n").as_deref(), Some("none"));
        assert_eq!(a("none\n"), None);
    }

    #[test]
    fn parses_proc_swaps() {
        let t = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                 /dev/zram0                              partition\t4194300\t\t0\t\t32767\n";
        assert_eq!(
            parse_proc_swaps(t),
            vec![("/dev/zram0".to_string(), 4194300 * 1024)]
        );
        assert!(parse_proc_swaps("Filename Type Size Used Priority\n").is_empty());
    }

    #[test]
    fn no_swap_error_says_how_to_fix() {
        let m = no_swap_error("stress-vm").to_string();
        assert!(m.contains("--swap zram:4G"), "{m}");
    }
}

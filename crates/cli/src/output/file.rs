//! Output files: checked writable before any work starts, written atomically (a temporary
//! file in the same directory, then rename), so a failure or an interrupt never leaves a
//! truncated result, and an unwritable `--out` costs milliseconds, not a whole run.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The directory a file will be created in ("." for a bare name).
fn parent_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Fail now if `p` cannot be written later: its directory must exist and take a new file
/// (tried with a temporary file, removed at once), and `p` must not be a directory.
pub fn check_writable(p: &Path, what: &str) -> Result<()> {
    if p.is_dir() {
        bail!("{what} {} is a directory, not a file", p.display());
    }
    let dir = parent_of(p);
    if !dir.is_dir() {
        bail!(
            "{what} {}: directory {} does not exist",
            p.display(),
            dir.display()
        );
    }
    tempfile::Builder::new()
        .prefix(".reclaimlab-check-")
        .tempfile_in(&dir)
        .with_context(|| {
            format!(
                "{what} {}: cannot create a file in {}",
                p.display(),
                dir.display()
            )
        })?;
    Ok(())
}

/// Write `bytes` to `p` atomically: a reader sees the old file or the whole new one. A path
/// that exists and is not a regular file (`/dev/null`, a FIFO, `/dev/stdout`) is written
/// through, never replaced: renaming over it would put a regular file in a device's place.
pub fn write_atomic(p: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::metadata(p).is_ok_and(|m| !m.is_file()) {
        return std::fs::OpenOptions::new()
            .write(true)
            .open(p)
            .and_then(|mut f| f.write_all(bytes))
            .with_context(|| format!("cannot write {}", p.display()));
    }
    let dir = parent_of(p);
    let mut tmp = tempfile::Builder::new()
        .prefix(".reclaimlab-")
        .tempfile_in(&dir)
        .with_context(|| {
            format!(
                "cannot write {}: cannot create a file in {}",
                p.display(),
                dir.display()
            )
        })?;
    // A temporary file is created 0600; a result is as readable as `fs::write` would leave it.
    use std::os::unix::fs::PermissionsExt;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))
        .with_context(|| format!("cannot write {}", p.display()))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", p.display()))?;
    tmp.persist(p)
        .with_context(|| format!("cannot write {}", p.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--out /dev/null` (or a FIFO) is written through: the device stays a device.
    #[test]
    fn a_path_that_is_not_a_regular_file_is_written_through_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let reader = {
            let f = fifo.clone();
            std::thread::spawn(move || std::fs::read(f).unwrap())
        };
        write_atomic(&fifo, b"whole").unwrap();
        assert_eq!(reader.join().unwrap(), b"whole");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        write_atomic(Path::new("/dev/null"), b"gone").unwrap();
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
    }

    #[test]
    fn unwritable_paths_fail_fast_and_writes_are_whole() {
        let d = tempfile::tempdir().unwrap();
        assert!(check_writable(Path::new("/nonexistent/dir/x.json"), "--out").is_err());
        assert!(check_writable(d.path(), "--out").is_err());
        let f = d.path().join("x.json");
        check_writable(&f, "--out").unwrap();
        assert!(!f.exists(), "the check leaves nothing behind");
        write_atomic(&f, b"one").unwrap();
        write_atomic(&f, b"two").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        // Only the result is left in the directory (no temporary files).
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}

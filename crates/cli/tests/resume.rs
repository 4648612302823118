//! Fail before the work, keep what finished: an unwritable --out fails at once; a sweep killed
//! half-way keeps its finished simulations and `--resume` gives the uninterrupted result, byte
//! for byte.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reclaimlab"))
}

#[test]
fn unwritable_out_fails_before_simulating() {
    let t = Instant::now();
    let o = bin()
        .args(["sim", "stress-vm", "--out", "/nonexistent/dir/x.json"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("/nonexistent/dir") && err.contains("does not exist"),
        "{err}"
    );
    // A benchmark, not a timing assertion on a loaded machine: generous bound.
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn a_killed_sweep_resumes_to_the_uninterrupted_result() {
    let d = tempfile::tempdir().unwrap();
    let args = [
        "sweep",
        "stress-vm",
        "--vary",
        "machine.cpus=2,4",
        "--vary",
        "run.duration=200ms,400ms,800ms",
        "--after",
        "6.18+batch-dirty-flush",
        "--json",
    ];
    let full = d.path().join("full.json");
    let o = bin().args(args).arg("--out").arg(&full).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let part = d.path().join("int.json");
    let journal = d.path().join("int.json.partial");
    let mut child = bin()
        .args(args)
        .arg("--out")
        .arg(&part)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once some simulations are journalled (header + at least two lines).
    let t = Instant::now();
    loop {
        let lines = std::fs::read_to_string(&journal)
            .map(|s| s.lines().count())
            .unwrap_or(0);
        if lines >= 3 || t.elapsed() > Duration::from_secs(120) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    if part.exists() {
        // The machine was fast enough to finish first: nothing to resume, nothing to check.
        eprintln!("sweep finished before it could be killed");
        return;
    }
    // Without --resume the journal is not overwritten.
    let o = bin().args(args).arg("--out").arg(&part).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--resume"));
    let o = bin()
        .args(args)
        .arg("--out")
        .arg(&part)
        .arg("--resume")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("resuming:"), "{err}");
    assert_eq!(
        std::fs::read(&full).unwrap(),
        std::fs::read(&part).unwrap(),
        "resumed sweep differs from the uninterrupted one"
    );
    assert!(!journal.exists(), "the journal is removed once complete");
    // A journal from a different grid is refused.
    std::fs::write(&journal, "{\"sweep\":\"other\"}\n").unwrap();
    let o = bin()
        .args(args)
        .arg("--out")
        .arg(&part)
        .arg("--resume")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("different run"));
}

//! Every workload's keys: what each of a set of `--set` overrides resolves to (the whole
//! scenario as JSON) or the exact error it gives, compared with `tests/golden/workload_keys.txt`.
//! It pins defaults, checks and their messages while the parsing code moves.
//!
//! A commit that changes a key on purpose regenerates the file with
//!
//! ```text
//! RECLAIMLAB_BLESS=1 cargo test -p reclaimlab-core --test workload_keys
//! ```

use reclaimlab_core::{Scenario, Target};
use std::path::PathBuf;

const HOST: Target = Target::Host {
    cpus: 2,
    memory_bytes: 24 << 30,
};

/// (scenario, overrides, target): defaults, then each key's out-of-range and malformed values.
fn cases() -> Vec<(&'static str, Vec<&'static str>, Target)> {
    let sim = |n: &'static str, sets: &[&'static str]| (n, sets.to_vec(), Target::Sim);
    let host = |n: &'static str, sets: &[&'static str]| (n, sets.to_vec(), HOST);
    vec![
        sim("stress-vm", &[]),
        host("stress-vm", &[]),
        sim("stress-vm", &["workload.workers=0"]),
        sim("stress-vm", &["workload.workers=5000000"]),
        sim("stress-vm", &["workload.bytes=1K"]),
        sim("stress-vm", &["workload.workers=1", "workload.bytes=200T"]),
        sim("stress-vm", &["workload.cpus=0-99"]),
        sim("stress-vm", &["workload.cpus=[]"]),
        sim("stress-vm", &["workload.cpus=a"]),
        sim("stress-vm", &["workload.cpus=[-1]"]),
        sim("stress-vm", &["workload.cpus=1.5"]),
        sim("stress-vm", &["workload.cpus=3"]),
        sim("stress-vm", &["workload.cpus=[1, 2]"]),
        sim(
            "stress-vm",
            &["workload.method=flip", "workload.no_madvise=false"],
        ),
        sim("stress-vm", &["workload.no_madvise=maybe"]),
        sim("file-reclaim", &[]),
        host("file-reclaim", &[]),
        sim("file-reclaim", &["workload.threads=0"]),
        sim(
            "file-reclaim",
            &["workload.threads=3", "workload.file_bytes=8K"],
        ),
        sim("file-reclaim", &["workload.file_bytes=32T"]),
        sim("file-reclaim", &["workload.reclaim_bytes=2G"]),
        sim(
            "file-reclaim",
            &["workload.file_bytes=4G", "workload.reclaim_bytes=1G"],
        ),
        sim("file-reclaim", &["workload.hold=sleep", "workload.cpus=1"]),
        sim("file-reclaim", &["workload.hold=nap"]),
        sim("file-reclaim", &["host.hold=spin"]),
        sim("file-mmap-rw", &[]),
        host("file-mmap-rw", &[]),
        sim("file-mmap-rw", &["workload.pattern=zigzag"]),
        sim(
            "file-mmap-rw",
            &["workload.pattern=random", "workload.write=true"],
        ),
        sim("file-mmap-rw", &["workload.write=3"]),
        sim("file-mmap-rw", &["workload.threads=0"]),
        sim(
            "file-mmap-rw",
            &["workload.file_bytes=4K", "workload.threads=2"],
        ),
        sim("file-mmap-rw", &["workload.dir=/srv"]),
        sim("anon-sweep", &[]),
        host("anon-sweep", &[]),
        sim("anon-sweep", &["workload.write_ratio=1.5"]),
        sim("anon-sweep", &["workload.write_ratio=-0.1"]),
        sim("anon-sweep", &["workload.processes=0"]),
        sim("anon-sweep", &["workload.threads=5000000"]),
        sim(
            "anon-sweep",
            &["workload.processes=4096", "workload.threads=2048"],
        ),
        sim("anon-sweep", &["workload.bytes=4K", "workload.threads=2"]),
        sim("anon-sweep", &["workload.bytes=200T"]),
        sim(
            "anon-sweep",
            &["workload.pattern=random", "workload.cpus=[0, 1]"],
        ),
        sim("ycsb-b", &[]),
        host("ycsb-b", &[]),
        sim("ycsb-b", &["workload.records=0"]),
        sim("ycsb-b", &["workload.record_bytes=3000"]),
        sim("ycsb-b", &["workload.record_bytes=0"]),
        sim("ycsb-b", &["workload.records=9223372036854775807"]),
        sim("ycsb-b", &["workload.read_ratio=2"]),
        sim("ycsb-b", &["workload.zipf_theta=1"]),
        sim(
            "ycsb-b",
            &["workload.zipf_theta=0.5", "workload.access=pread"],
        ),
        sim("ycsb-b", &["workload.access=mmapp"]),
        sim("ycsb-b", &["workload.threads=0"]),
        sim("kswapd-mmap-read", &[]),
        host("kswapd-mmap-read", &[]),
        sim("kswapd-mmap-read", &["memcg.limit=1G"]),
        sim("kswapd-mmap-read", &["workload.file_bytes=1K"]),
        sim(
            "kswapd-mmap-read",
            &["workload.readers=1", "workload.file_bytes=20T"],
        ),
        sim("kswapd-mmap-read", &["workload.readahead_pages=2000"]),
        sim("kswapd-mmap-read", &["workload.readers=0"]),
        sim(
            "kswapd-mmap-read",
            &["workload.sparse=false", "workload.pattern=random"],
        ),
        sim("stress-vm", &["workload.kind=bogus"]),
        sim("stress-vm", &["workload.kind=anon-sweep"]),
        sim("anon-sweep", &["workload.kind=stress-vm"]),
    ]
}

fn resolve(name: &str, sets: &[&str], target: Target) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let r = Scenario::load(name, &sets, target).and_then(|s| {
        s.skip_section("sim");
        s.skip_section("host");
        s.finish()?;
        Ok(s)
    });
    match r {
        Ok(s) => format!("ok {}", s.to_json()),
        Err(e) => format!("error {e}"),
    }
}

#[test]
fn workload_keys_resolve_as_recorded() {
    let mut got = String::new();
    for (name, sets, target) in cases() {
        let t = match target {
            Target::Sim => "sim",
            Target::Host { .. } => "host",
        };
        got += &format!("{name} {t} {sets:?}\n  {}\n", resolve(name, &sets, target));
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/workload_keys.txt");
    if std::env::var_os("RECLAIMLAB_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap();
    for (w, g) in want.lines().zip(got.lines()) {
        assert_eq!(w, g);
    }
    assert_eq!(want.lines().count(), got.lines().count());
}

//! The machine a calibration ran on: CPU model, topology, kernel, date, and the facts that
//! shape its costs (hypervisor, PCID/INVPCID, zram's compressor, readahead).

use reclaimlab_core::profile::{ProfileMachine, Topology};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Facts {
    pub cpu_model: String,
    pub arch: String,
    pub cpus: u32,
    pub sockets: u32,
    pub threads_per_core: u32,
    pub kernel: String,
    pub date: String,
    /// CPU flags that matter to TLB flushing and page clearing, as /proc/cpuinfo lists them.
    pub flags: Vec<String>,
    pub llc: String,
    pub memcg: String,
    pub zram_algorithm: String,
}

fn read(p: &str) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// The first value of `key` in /proc/cpuinfo text.
pub fn cpuinfo_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// YYYY-MM-DD of a Unix time (days-to-civil, proleptic Gregorian).
pub fn ymd(unix_secs: u64) -> String {
    let z = (unix_secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

const FLAGS: [&str; 8] = [
    "hypervisor",
    "pcid",
    "invpcid",
    "invlpgb",
    "x2apic",
    "erms",
    "fsrm",
    "avx512f",
];

pub fn facts(memcg: &str) -> Facts {
    let ci = read("/proc/cpuinfo");
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    let have: BTreeSet<String> = cpuinfo_field(&ci, "flags")
        .or_else(|| cpuinfo_field(&ci, "Features"))
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect();
    let mut packages = BTreeSet::new();
    for c in 0..cpus {
        packages.insert(read(&format!(
            "/sys/devices/system/cpu/cpu{c}/topology/physical_package_id"
        )));
    }
    let siblings = read("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list");
    let threads = siblings
        .trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<u32>().unwrap_or(0) + 1 - a.parse::<u32>().unwrap_or(0),
            None => u32::from(!r.is_empty()),
        })
        .sum::<u32>()
        .max(1);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Facts {
        cpu_model: cpuinfo_field(&ci, "model name").unwrap_or_else(|| "unknown".into()),
        arch: if cfg!(target_arch = "aarch64") {
            "arm64".into()
        } else {
            "x86".into()
        },
        cpus,
        sockets: packages.len().max(1) as u32,
        threads_per_core: threads,
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        date: ymd(now),
        flags: FLAGS
            .iter()
            .filter(|f| have.contains(**f))
            .map(|f| f.to_string())
            .collect(),
        llc: cpuinfo_field(&ci, "cache size").unwrap_or_default(),
        memcg: memcg.into(),
        zram_algorithm: read("/sys/block/zram0/comp_algorithm").trim().to_string(),
    }
}

impl Facts {
    pub fn profile_machine(&self) -> ProfileMachine {
        ProfileMachine {
            cpu_model: self.cpu_model.clone(),
            arch: self.arch.clone(),
            cpus: self.cpus,
            topology: Some(Topology {
                sockets: self.sockets,
                cores_per_socket: (self.cpus / self.sockets / self.threads_per_core).max(1),
                threads_per_core: self.threads_per_core,
            }),
            kernel: self.kernel.clone(),
            date: self.date.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_cpuinfo() {
        assert_eq!(ymd(0), "1970-01-01");
        assert_eq!(ymd(951_782_400), "2000-02-29");
        assert_eq!(ymd(1_795_564_800), "2026-11-25");
        let ci = "processor\t: 0\nmodel name\t: Some CPU @ 2GHz\nflags\t\t: fpu pcid\n";
        assert_eq!(cpuinfo_field(ci, "model name").unwrap(), "Some CPU @ 2GHz");
        assert_eq!(cpuinfo_field(ci, "flags").unwrap(), "fpu pcid");
        assert!(cpuinfo_field(ci, "bogus").is_none());
    }
}

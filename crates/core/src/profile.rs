//! Machine profiles: the machine a set of costs belongs to, and every cost with where its figure
//! comes from (measured on that machine, published, or estimated with a reason).
//!
//! A profile is a TOML file:
//!
//! ```toml
//! [profile]
//! name = "example"
//! description = "what machine, why this profile exists"
//!
//! [machine]
//! cpu_model = "AMD EPYC 7B13"
//! arch = "x86"            # or "arm64"
//! cpus = 2
//! kernel = "6.18.44"
//! date = "2026-11-25"
//! [machine.topology]      # optional
//! sockets = 1
//! cores_per_socket = 2
//! threads_per_core = 1
//!
//! [costs.fault_base]      # a simulator cost (CostTable field name), in ns
//! ns = 812.0
//! provenance = "measured" # measured | published | estimate
//! source = "calibrate anon-fault: median of 5 runs of 65536 first-touch faults"
//! raw = "example.calibrate.json"   # measured: the calibrate output kept beside the profile
//! spread = [790.0, 901.0]          # optional: min and max of the samples
//! samples = 5                      # optional
//! ```
//!
//! `source` is required for every cost: the command and benchmark for a measured figure, the
//! citation for a published one, the reasoning for an estimate.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// Profiles shipped in `profiles/`, compiled in so `--profile NAME` works from any directory.
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "generic-x86",
        include_str!("../../../profiles/generic-x86.toml"),
    ),
    (
        "generic-arm64",
        include_str!("../../../profiles/generic-arm64.toml"),
    ),
    (
        "seed000-x86-16cpu",
        include_str!("../../../profiles/seed000-x86-16cpu.toml"),
    ),
    (
        "seed001-arm64-32core",
        include_str!("../../../profiles/seed001-arm64-32core.toml"),
    ),
    (
        "seed003-x86-4socket",
        include_str!("../../../profiles/seed003-x86-4socket.toml"),
    ),
    (
        "kvm-guest-2vcpu",
        include_str!("../../../profiles/kvm-guest-2vcpu.toml"),
    ),
];

/// A profile as loaded for a run: what the user named, the parsed profile and its text's hash.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedProfile {
    /// `profiles/NAME.toml` for a shipped profile, else the path as given.
    pub origin: String,
    pub profile: Profile,
    /// SHA-256 of the file's text (hex), so a result names the exact costs it ran with.
    pub sha256: String,
}

/// Find a profile by shipped name or by path; returns (origin, text). A value ending in `.toml`
/// or naming an existing file is a path; anything else must be a shipped name.
pub fn locate(name_or_path: &str) -> anyhow::Result<(String, String)> {
    let p = Path::new(name_or_path);
    if p.extension().is_some_and(|e| e == "toml") || p.exists() {
        let text = std::fs::read_to_string(p)
            .map_err(|e| anyhow::anyhow!("profile {name_or_path}: cannot read: {e}"))?;
        return Ok((name_or_path.to_string(), text));
    }
    if let Some((n, t)) = SHIPPED.iter().find(|(n, _)| *n == name_or_path) {
        return Ok((format!("profiles/{n}.toml"), t.to_string()));
    }
    let names: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
    anyhow::bail!(
        "no profile named {name_or_path:?}: give a path to a .toml file or one of {}",
        names.join(", ")
    )
}

/// Locate and parse a profile (`--profile`, `machine.profile`).
pub fn load(name_or_path: &str) -> anyhow::Result<LoadedProfile> {
    let (origin, text) = locate(name_or_path)?;
    let profile = Profile::parse(&text, &origin)?;
    let sha256 = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(LoadedProfile {
        origin,
        profile,
        sha256,
    })
}

impl LoadedProfile {
    /// What a result records about the profile it ran with.
    pub fn summary(&self) -> serde_json::Value {
        let c = self.profile.counts();
        let n = |p| c.get(&p).copied().unwrap_or(0);
        serde_json::json!({
            "name": self.profile.profile.name,
            "origin": self.origin,
            "sha256": self.sha256,
            "cpu_model": self.profile.machine.cpu_model,
            "arch": self.profile.machine.arch,
            "costs": {
                "measured": n(Provenance::Measured),
                "published": n(Provenance::Published),
                "estimate": n(Provenance::Estimate),
            },
        })
    }
}

/// Where a cost's figure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// Measured on the profile's machine (`reclaimlab calibrate`), raw output kept.
    Measured,
    /// A published figure (paper, LKML message, vendor manual), cited in `source`.
    Published,
    /// An estimate, with its reasoning in `source`.
    Estimate,
}

impl Provenance {
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Measured => "measured",
            Provenance::Published => "published",
            Provenance::Estimate => "estimate",
        }
    }
}

/// One cost, in nanoseconds of the profile's machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    pub ns: f64,
    pub provenance: Provenance,
    pub source: String,
    /// A measured cost: the calibrate output (path relative to the profile file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Min and max of the samples behind `ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileMachine {
    pub cpu_model: String,
    /// "x86" or "arm64" (the simulator's `machine.arch`).
    pub arch: String,
    pub cpus: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<Topology>,
    /// The kernel the measurements ran on (or the one the publication used).
    pub kernel: String,
    /// When the figures were taken (YYYY-MM-DD, or YYYY-MM when only the month is known).
    pub date: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileHeader {
    pub name: String,
    pub description: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub profile: ProfileHeader,
    pub machine: ProfileMachine,
    /// Keyed by the simulator's cost name (a `CostTable` field).
    #[serde(default)]
    pub costs: BTreeMap<String, Cost>,
}

impl Profile {
    /// Parse and check a profile's text. `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<Profile> {
        let p: Profile = toml_edit::de::from_str(text).map_err(|e| {
            anyhow::anyhow!(
                "profile {origin}: {}",
                crate::units::clip_lines(e.to_string().trim_end())
            )
        })?;
        p.check()
            .map_err(|e| anyhow::anyhow!("profile {origin}: {e}"))?;
        Ok(p)
    }

    /// The profile as TOML text (what `parse` reads back).
    pub fn to_toml(&self) -> anyhow::Result<String> {
        Ok(toml_edit::ser::to_string_pretty(self)?)
    }

    fn check(&self) -> anyhow::Result<()> {
        if !matches!(self.machine.arch.as_str(), "x86" | "arm64") {
            anyhow::bail!(
                "machine.arch must be \"x86\" or \"arm64\" (got {})",
                crate::units::clip(&self.machine.arch)
            );
        }
        if self.machine.cpus == 0 {
            anyhow::bail!("machine.cpus must be at least 1");
        }
        for (name, c) in &self.costs {
            if !c.ns.is_finite() || c.ns < 0.0 {
                anyhow::bail!(
                    "costs.{name}.ns must be a finite number >= 0 (got {})",
                    c.ns
                );
            }
            if c.source.trim().is_empty() {
                anyhow::bail!(
                    "costs.{name}.source is empty: a {} cost needs {}",
                    c.provenance.as_str(),
                    match c.provenance {
                        Provenance::Measured => "the benchmark and command that measured it",
                        Provenance::Published => "its citation",
                        Provenance::Estimate => "its reasoning",
                    }
                );
            }
            if c.provenance == Provenance::Measured && c.raw.is_none() {
                anyhow::bail!(
                    "costs.{name} is measured but names no raw calibrate output (raw = ...)"
                );
            }
            if let Some([lo, hi]) = c.spread {
                if !lo.is_finite() || !hi.is_finite() || lo > hi {
                    anyhow::bail!("costs.{name}.spread must be [min, max] with min <= max");
                }
            }
        }
        Ok(())
    }

    /// How many costs have each provenance.
    pub fn counts(&self) -> BTreeMap<Provenance, usize> {
        let mut m = BTreeMap::new();
        for c in self.costs.values() {
            *m.entry(c.provenance).or_insert(0) += 1;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
[profile]
name = "t"
description = "test machine"

[machine]
cpu_model = "X"
arch = "x86"
cpus = 2
kernel = "6.18"
date = "2026-11-25"

[machine.topology]
sockets = 1
cores_per_socket = 2
threads_per_core = 1

[costs.fault_base]
ns = 812.5
provenance = "measured"
source = "calibrate anon-fault"
raw = "t.calibrate.json"
spread = [790.0, 901.0]
samples = 5

[costs.ipi_send]
ns = 300
provenance = "published"
source = "a vendor manual"
"#;

    #[test]
    fn parses_round_trips_and_counts() {
        let p = Profile::parse(EXAMPLE, "t.toml").unwrap();
        assert_eq!(p.costs["fault_base"].ns, 812.5);
        assert_eq!(p.costs["ipi_send"].ns, 300.0);
        assert_eq!(p.machine.topology.as_ref().unwrap().cores_per_socket, 2);
        let again = Profile::parse(&p.to_toml().unwrap(), "again").unwrap();
        assert_eq!(p, again);
        let c = p.counts();
        assert_eq!(c[&Provenance::Measured], 1);
        assert_eq!(c[&Provenance::Published], 1);
        assert!(!c.contains_key(&Provenance::Estimate));
    }

    #[test]
    fn refuses_costs_without_provenance_or_source() {
        let no_source = EXAMPLE.replace("source = \"a vendor manual\"", "source = \"  \"");
        let e = Profile::parse(&no_source, "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("costs.ipi_send.source is empty"), "{e}");
        assert!(e.contains("citation"), "{e}");
        let bad_prov = EXAMPLE.replace("\"published\"", "\"guessed\"");
        let e = Profile::parse(&bad_prov, "t.toml").unwrap_err().to_string();
        assert!(e.contains("t.toml"), "{e}");
        let no_raw = EXAMPLE.replace("raw = \"t.calibrate.json\"\n", "");
        let e = Profile::parse(&no_raw, "t.toml").unwrap_err().to_string();
        assert!(e.contains("names no raw"), "{e}");
        let neg = EXAMPLE.replace("ns = 300", "ns = -1");
        assert!(Profile::parse(&neg, "t.toml").is_err());
        let unknown = EXAMPLE.replace("samples = 5", "sample = 5");
        assert!(Profile::parse(&unknown, "t.toml").is_err());
    }
}

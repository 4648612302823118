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
use std::collections::BTreeMap;

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
    /// When the figures were taken (YYYY-MM-DD).
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

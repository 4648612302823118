//! The calibration as a machine profile (reclaimlab_core::profile) and its raw document kept
//! beside it: `FILE.toml` and `FILE.calibrate.json`.

use super::Calibration;
use anyhow::{Context, Result};
use reclaimlab_core::profile::{Cost, Profile, ProfileHeader, Provenance};
use std::path::{Path, PathBuf};

/// `x/name.toml` → `x/name.calibrate.json`.
pub fn raw_path(profile: &Path) -> PathBuf {
    let stem = profile
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "profile".into());
    profile.with_file_name(format!("{stem}.calibrate.json"))
}

/// Three significant decimals are more than the noise allows; keep the file readable.
fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The profile: one measured cost per derived cost, `raw` naming the raw document.
pub fn profile(cal: &Calibration, name: &str, raw_file: &str) -> Profile {
    let costs = cal
        .costs
        .iter()
        .map(|(k, d)| {
            let source = format!(
                "reclaimlab calibrate{} ({}): {}; median of {} samples",
                if cal.quick { " --quick" } else { "" },
                d.from.join(", "),
                d.source,
                d.values.len()
            );
            (
                k.clone(),
                Cost {
                    ns: round(d.ns),
                    provenance: Provenance::Measured,
                    source,
                    raw: Some(raw_file.to_string()),
                    spread: Some([round(d.min), round(d.max)]),
                    samples: Some(d.values.len() as u64),
                },
            )
        })
        .collect();
    let m = &cal.machine;
    Profile {
        profile: ProfileHeader {
            name: name.into(),
            description: format!(
                "{} ({} CPUs{}), Linux {}, memcg {}, zram {}: costs measured by reclaimlab \
                 calibrate; the costs not listed keep the simulator's defaults",
                m.cpu_model,
                m.cpus,
                if m.flags.iter().any(|f| f == "hypervisor") {
                    ", a virtual machine"
                } else {
                    ""
                },
                m.kernel,
                m.memcg,
                m.zram_algorithm
            ),
        },
        machine: m.profile_machine(),
        costs,
    }
}

/// Write the profile to `out` and the raw document beside it. Returns the raw document's path.
pub fn write(cal: &Calibration, out: &Path, name: Option<&str>) -> Result<PathBuf> {
    let raw = raw_path(out);
    let raw_name = raw
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let p = profile(cal, name.unwrap_or(&stem), &raw_name);
    let text = p.to_toml()?;
    // What we write must read back.
    Profile::parse(&text, &out.display().to_string())?;
    std::fs::write(&raw, format!("{}\n", serde_json::to_string_pretty(cal)?))
        .with_context(|| format!("cannot write {}", raw.display()))?;
    std::fs::write(out, text).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::{derive_all, machine, stats::Measurement};

    #[test]
    fn writes_a_profile_that_parses_with_its_raw_beside_it() {
        let ms = vec![
            Measurement::new(
                "anon-read-fault",
                "ns/page",
                "t",
                vec![812.34, 790.0, 901.0],
            )
            .unwrap(),
            Measurement::new("clear-page", "ns/page", "t", vec![150.0]).unwrap(),
            Measurement::new("page-store", "ns/page", "t", vec![300.0]).unwrap(),
        ];
        let (costs, checks, notes) = derive_all(&ms);
        let cal = Calibration {
            schema: crate::calibrate::SCHEMA.into(),
            command: "reclaimlab calibrate --only fault,access".into(),
            quick: true,
            families: vec!["fault".into(), "access".into()],
            machine: machine::Facts {
                cpu_model: "Test CPU".into(),
                arch: "x86".into(),
                cpus: 2,
                sockets: 1,
                threads_per_core: 1,
                kernel: "6.18".into(),
                date: "2026-11-25".into(),
                ..Default::default()
            },
            seconds: 1.0,
            loadavg: vec![],
            measurements: ms,
            costs,
            checks,
            notes,
        };
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("m.toml");
        let raw = write(&cal, &out, None).unwrap();
        assert_eq!(raw, t.path().join("m.calibrate.json"));
        let p = Profile::parse(&std::fs::read_to_string(&out).unwrap(), "m.toml").unwrap();
        assert_eq!(p.profile.name, "m");
        let fb = &p.costs["fault_base"];
        assert_eq!(fb.ns, 812.3);
        assert_eq!(fb.spread, Some([790.0, 901.0]));
        assert_eq!(fb.raw.as_deref(), Some("m.calibrate.json"));
        assert!(fb.source.contains("anon-read-fault"), "{}", fb.source);
        assert_eq!(p.costs.len(), 3);
        let back: Calibration =
            serde_json::from_str(&std::fs::read_to_string(&raw).unwrap()).unwrap();
        assert_eq!(back.measurements.len(), 3);
        assert_eq!(back.costs["zero_page"].ns, 150.0);
    }
}

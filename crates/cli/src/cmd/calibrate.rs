//! `reclaimlab calibrate`: run the host crate's microbenchmarks, write the profile and its raw
//! samples, and show people the measured costs beside the simulator's defaults.

use crate::cli::CalibrateArgs;
use crate::output::{self, CalibrationReport, Format};
use crate::progress::progress_bar;
use anyhow::{bail, Context, Result};
use reclaimlab_host::calibrate::{self, Calibration};
use std::path::PathBuf;
use std::process::ExitCode;

fn load_raw(path: &std::path::Path) -> Result<Calibration> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let cal: Calibration = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a raw calibration document (FILE.calibrate.json)",
            path.display()
        )
    })?;
    if cal.schema != calibrate::SCHEMA {
        bail!(
            "{}: schema {:?}, this reclaimlab reads {:?}",
            path.display(),
            cal.schema,
            calibrate::SCHEMA
        );
    }
    Ok(cal)
}

/// `--from-raw`: the stored measurements with today's derivations. Several documents combine:
/// the first gives the machine facts, a later benchmark replaces an earlier one of the same
/// name, and the notes name every source and the command that combined them.
fn rederive(paths: &[PathBuf], command: &str) -> Result<Calibration> {
    let mut cal = load_raw(&paths[0])?;
    let mut sources = vec![format!("{} ({})", paths[0].display(), cal.command)];
    for p in &paths[1..] {
        let more = load_raw(p)?;
        sources.push(format!("{} ({})", p.display(), more.command));
        for m in more.measurements {
            cal.measurements.retain(|x| x.name != m.name);
            cal.measurements.push(m);
        }
        for f in more.families {
            if !cal.families.contains(&f) {
                cal.families.push(f);
            }
        }
        cal.loadavg.extend(more.loadavg);
        cal.seconds += more.seconds;
    }
    let (costs, checks, mut notes) = calibrate::derive_all(&cal.measurements);
    if paths.len() > 1 {
        notes.push(format!(
            "measurements combined from: {}",
            sources.join("; ")
        ));
        cal.command = command.to_string();
    }
    notes.push(format!(
        "derived again from the stored samples by `{command}`"
    ));
    cal.costs = costs;
    cal.checks = checks;
    cal.notes = notes;
    Ok(cal)
}

pub fn run(a: CalibrateArgs) -> Result<ExitCode> {
    // The command line as run, recorded in the raw document and the profile.
    let command = format!(
        "reclaimlab {}",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    if !a.from_raw.is_empty() {
        let cal = rederive(&a.from_raw, &command)?;
        return finish(cal, &a);
    }
    let bar = progress_bar(a.json, "families");
    if let Some(b) = &bar {
        b.enable_steady_tick(std::time::Duration::from_millis(200));
    }
    let cb = |i: usize, n: usize, fam: &str| {
        if let Some(b) = &bar {
            b.set_length(n as u64);
            b.set_position(i as u64);
            b.set_message(fam.to_string());
        } else if !a.json && i < n {
            eprintln!("reclaimlab calibrate: [{}/{n}] {fam}", i + 1);
        }
    };
    let opts = calibrate::Options {
        quick: a.quick,
        only: a.only.clone(),
        dir: a.dir.clone(),
        progress: Some(&cb),
    };
    let r = calibrate::calibrate(&opts);
    reclaimlab_host::cleanup::park_if_stopping();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut cal = r?;
    cal.command = command;
    finish(cal, &a)
}

/// Write the profile and raw document (--out), then print tables or JSON.
fn finish(cal: Calibration, a: &CalibrateArgs) -> Result<ExitCode> {
    if let Some(out) = &a.out {
        let raw = calibrate::output::write(&cal, out, a.name.as_deref())?;
        if !a.json {
            eprintln!("reclaimlab: wrote {} and {}", out.display(), raw.display());
        }
    }
    let format = if a.json { Format::Json } else { Format::Text };
    output::print(&CalibrationReport(&cal), format)?;
    Ok(ExitCode::SUCCESS)
}

/// What `validate --calibrate` takes from the session's measurement: the flush and shootdown
/// costs, and the reclaim cycle's per-page costs. This guest's per-page time drifts by ±20%
/// between sessions and within one (docs/results/2026-11-26-one-cpu-path.md), so the rows
/// where one CPU does all the work are compared with costs taken minutes, not hours, before.
const SESSION_COSTS: [&str; 18] = [
    "ipi_delivery",
    "ipi_handle",
    "local_flush_all",
    "local_flush_one",
    "flush_tlb_range_fixed",
    "rmap_walk",
    "isolate_folio",
    "shrink_folio",
    "memcg_charge",
    "add_to_swap",
    "swap_writeout",
    "remove_mapping",
    "fault_base",
    "do_swap_page",
    "alloc_anon_folio",
    "touch_line",
    "zram_compress_sparse",
    "zram_decompress_sparse",
];

/// What `validate --calibrate` also takes when the host swaps to a file or a file workload
/// maps a data file: the disk under it (calibrate's blockio family). The guest's disk is not the same device from one boot to
/// the next (its latency and even its queue/rotational changed between two builds,
/// docs/results/2026-11-27-block-swap-rotational.md).
const SESSION_DISK_COSTS: [&str; 9] = [
    "swap_page_transfer",
    "swap_read_latency",
    "swap_write_latency",
    "file_read_latency",
    "file_write_latency",
    "file_read_request",
    "file_write_request",
    "swap_read_request",
    "swap_write_request",
];

/// `validate --calibrate`: measure the flush, shootdown and cycle families now (and with
/// `disk`, the directory of a swap file or a data file, the blockio family on that disk), lay their costs
/// over `base` (a profile NAME or FILE; the built-in table if None) and write the result beside
/// `out` as OUT.session.toml, its raw samples as OUT.session.calibrate.json. Returns the
/// profile's path.
pub fn session_profile(
    base: Option<&str>,
    out: &std::path::Path,
    disk: Option<&std::path::Path>,
) -> Result<String> {
    let mut families = vec!["flush", "shootdown", "cycle"];
    families.extend(disk.map(|_| "blockio"));
    let opts = calibrate::Options {
        quick: false,
        only: Some(families.iter().map(|f| f.to_string()).collect()),
        dir: disk.map_or_else(|| PathBuf::from("/var/tmp"), |d| d.to_path_buf()),
        progress: None,
    };
    eprintln!(
        "reclaimlab: measuring this session's flush, shootdown and reclaim cycle costs{} (calibrate)",
        if disk.is_some() { " and the disk" } else { "" }
    );
    let r = calibrate::calibrate(&opts);
    reclaimlab_host::cleanup::park_if_stopping();
    let mut cal = r?;
    cal.command = format!(
        "reclaimlab validate --calibrate (calibrate --only {})",
        families.join(",")
    );
    let base_profile = base
        .map(|b| reclaimlab_core::profile::load(b).map(|l| l.profile))
        .transpose()?;
    if disk.is_some() {
        // The device's time per request at depth is page + request in the profile simulated:
        // net of the base profile's page costs, not the built-in table's.
        let page = |k: &str| {
            let c = base_profile.as_ref()?.costs.get(k)?;
            Some(calibrate::devrate::PageCost {
                ns: c.ns,
                what: format!("the base profile's, {}", c.provenance.as_str()),
            })
        };
        calibrate::derive_device_requests(
            &mut cal,
            page("file_read_page"),
            page("file_write_page"),
        );
    }
    let taken =
        |k: &str| SESSION_COSTS.contains(&k) || (disk.is_some() && SESSION_DISK_COSTS.contains(&k));
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "validate".into());
    let path = out.with_file_name(format!("{stem}.session.toml"));
    let name = format!("{}+session", base.unwrap_or("builtin"));
    calibrate::output::write(&cal, &path, Some(&name))?;
    if let Some(mut merged) = base_profile {
        // The base profile's costs, with this session's in their place.
        let session = reclaimlab_core::profile::Profile::parse(
            &std::fs::read_to_string(&path)?,
            &path.display().to_string(),
        )?;
        // Only the costs the families isolate directly: the flush family's ranged-flush
        // intercept holds more than the flush (the cycle family's figure replaces it).
        for (k, c) in session.costs {
            if taken(&k) {
                merged.costs.insert(k, c);
            }
        }
        merged.profile.name = name;
        merged.profile.description = format!(
            "{}; flush, shootdown and reclaim cycle costs{} measured in this validation's session",
            merged.profile.description,
            if disk.is_some() {
                " and the disk (blockio)"
            } else {
                ""
            }
        );
        std::fs::write(&path, merged.to_toml()?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    for (k, d) in cal.costs.iter().filter(|(k, _)| taken(k)) {
        eprintln!("reclaimlab: session cost {k} = {:.0} ns", d.ns);
    }
    // A cost the session could not measure keeps the base profile's: say which and why.
    for n in cal.notes.iter().filter(|n| n.contains("not set")) {
        eprintln!("reclaimlab: calibrate: {n}");
    }
    Ok(path.display().to_string())
}

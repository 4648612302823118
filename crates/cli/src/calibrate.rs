//! `reclaimlab calibrate`: run the host crate's microbenchmarks, write the profile and its raw
//! samples, and show people the measured costs beside the simulator's defaults.

use anyhow::{bail, Context, Result};
use comfy_table::{CellAlignment, Table};
use reclaimlab_host::calibrate::{self, Calibration};
use reclaimlab_sim::cost::CostTable;
use std::path::PathBuf;

pub struct Args {
    pub out: Option<PathBuf>,
    pub quick: bool,
    pub json: bool,
    pub only: Option<Vec<String>>,
    pub name: Option<String>,
    pub dir: PathBuf,
    pub from_raw: Vec<PathBuf>,
    pub command: String,
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(crate::render::preset())
        .set_header(header.to_vec());
    for i in 1..header.len() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

fn num(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// The default value of a cost, by its CostTable field name.
fn default_of(name: &str) -> Option<u64> {
    serde_json::to_value(CostTable::x86())
        .ok()?
        .get(name)?
        .as_u64()
}

/// Measurements, costs (beside cost.rs's defaults) and checks, as tables.
pub fn render(cal: &Calibration) -> String {
    let mut m = table(&["benchmark", "median", "min", "max", "unit", "samples"]);
    for x in &cal.measurements {
        m.add_row(vec![
            x.name.clone(),
            num(x.median),
            num(x.min),
            num(x.max),
            x.unit.clone(),
            x.samples.len().to_string(),
        ]);
    }
    let mut c = table(&[
        "cost (ns)",
        "measured",
        "min",
        "max",
        "cost.rs default",
        "from",
    ]);
    for (k, d) in &cal.costs {
        c.add_row(vec![
            k.clone(),
            num(d.ns),
            num(d.min),
            num(d.max),
            default_of(k).map_or("-".into(), |v| v.to_string()),
            d.from.join(", "),
        ]);
    }
    let mut k = table(&[
        "check",
        "measured",
        "sim (defaults)",
        "sim (calibrated)",
        "measured / sim",
        "unit",
    ]);
    for x in &cal.checks {
        k.add_row(vec![
            x.name.clone(),
            num(x.measured),
            num(x.sim_default),
            num(x.sim_calibrated),
            num(x.ratio_calibrated),
            x.unit.clone(),
        ]);
    }
    let mut s = format!("{m}\n\n{c}\n\n{k}\n");
    for n in &cal.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s.push_str(&format!(
        "{:.0} s; load average before each family and at the end: {}\n",
        cal.seconds,
        cal.loadavg
            .iter()
            .map(|l| l.split_whitespace().next().unwrap_or("?"))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    s
}

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

pub fn run(a: Args) -> Result<()> {
    if !a.from_raw.is_empty() {
        let cal = rederive(&a.from_raw, &a.command)?;
        return finish(cal, &a);
    }
    let bar = crate::progress_bar(a.json, "families");
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
    cal.command = a.command.clone();
    finish(cal, &a)
}

/// Write the profile and raw document (--out), then print tables or JSON.
fn finish(cal: Calibration, a: &Args) -> Result<()> {
    if let Some(out) = &a.out {
        let raw = calibrate::output::write(&cal, out, a.name.as_deref())?;
        if !a.json {
            eprintln!("reclaimlab: wrote {} and {}", out.display(), raw.display());
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&cal)?);
    } else {
        print!("{}", render(&cal));
    }
    Ok(())
}

/// What `validate --calibrate` takes from the session's measurement.
const SESSION_COSTS: [&str; 4] = [
    "ipi_delivery",
    "ipi_handle",
    "local_flush_all",
    "local_flush_one",
];

/// `validate --calibrate`: measure the flush and shootdown families now, lay their costs over
/// `base` (a profile NAME or FILE; the built-in table if None) and write the result beside `out`
/// as OUT.session.toml, its raw samples as OUT.session.calibrate.json. Returns the profile's path.
pub fn session_profile(base: Option<&str>, out: &std::path::Path) -> Result<String> {
    let opts = calibrate::Options {
        quick: false,
        only: Some(vec!["flush".into(), "shootdown".into()]),
        dir: PathBuf::from("/var/tmp"),
        progress: None,
    };
    eprintln!("reclaimlab: measuring this session's flush and shootdown costs (calibrate)");
    let r = calibrate::calibrate(&opts);
    reclaimlab_host::cleanup::park_if_stopping();
    let mut cal = r?;
    cal.command = "reclaimlab validate --calibrate (calibrate --only flush,shootdown)".into();
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "validate".into());
    let path = out.with_file_name(format!("{stem}.session.toml"));
    let name = format!("{}+session", base.unwrap_or("builtin"));
    calibrate::output::write(&cal, &path, Some(&name))?;
    if let Some(b) = base {
        // The base profile's costs, with this session's in their place.
        let mut merged = reclaimlab_core::profile::load(b)?.profile;
        let session = reclaimlab_core::profile::Profile::parse(
            &std::fs::read_to_string(&path)?,
            &path.display().to_string(),
        )?;
        // Only the costs the two families isolate directly: the flush family's ranged-flush
        // intercept holds more than the flush (the cycle family's figure stays).
        for (k, c) in session.costs {
            if SESSION_COSTS.contains(&k.as_str()) {
                merged.costs.insert(k, c);
            }
        }
        merged.profile.name = name;
        merged.profile.description = format!(
            "{}; flush and shootdown costs measured in this validation's session",
            merged.profile.description
        );
        std::fs::write(&path, merged.to_toml()?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    for (k, d) in cal
        .costs
        .iter()
        .filter(|(k, _)| SESSION_COSTS.contains(&k.as_str()))
    {
        eprintln!("reclaimlab: session cost {k} = {:.0} ns", d.ns);
    }
    Ok(path.display().to_string())
}

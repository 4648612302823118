//! `reclaimlab._native`: the Rust half of the Python package. Each function takes and returns
//! plain strings and lists (results as their JSON documents), calls the same library functions
//! the CLI calls, and runs with the GIL released. Errors become Python exceptions carrying the
//! CLI's message: `ValueError` for bad input (it names the key), `OSError` for a file that
//! cannot be read, and `RuntimeError` for a panic (a bug), which never unwinds into Python.

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use reclaimlab_core::mismatch::checked_compare;
use reclaimlab_core::policy::KernelPolicy;
use reclaimlab_core::sweep::{grid as sweep_grid, point_sets, Axis, Point};
use reclaimlab_core::{ResultDoc, Scenario, Target};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Why a call failed, decided without the GIL and turned into an exception after.
enum Fail {
    Input(String),
    Io(String),
    Bug(String),
}

impl From<anyhow::Error> for Fail {
    fn from(e: anyhow::Error) -> Fail {
        Fail::Input(format!("{e:#}"))
    }
}

impl From<Fail> for PyErr {
    fn from(f: Fail) -> PyErr {
        match f {
            Fail::Input(m) => PyValueError::new_err(m),
            Fail::Io(m) => PyOSError::new_err(m),
            Fail::Bug(m) => PyRuntimeError::new_err(format!("reclaimlab internal error: {m}")),
        }
    }
}

/// Run `f` without the GIL; a panic inside is caught and reported as a `RuntimeError`.
fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Fail> + Send) -> PyResult<T> {
    py.detach(|| {
        catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into());
            Err(Fail::Bug(msg))
        })
    })
    .map_err(PyErr::from)
}

fn policy(spec: &str) -> Result<KernelPolicy, Fail> {
    KernelPolicy::parse(spec).map_err(Fail::Input)
}

/// `reclaimlab sim`: load the scenario with `sets` (then the policy's, which win), check its
/// `[host]` section as the CLI does, simulate.
fn simulate_doc(scenario: &str, sets: &[String], spec: Option<&str>) -> Result<ResultDoc, Fail> {
    let mut sets = sets.to_vec();
    if let Some(spec) = spec {
        sets.extend(policy(spec)?.scenario_sets());
    }
    let scn = Scenario::load(scenario, &sets, Target::Sim).map_err(anyhow::Error::from)?;
    reclaimlab_host::workload::HostConfig::check_section(&scn)?;
    let res = reclaimlab_sim::run(&scn, &Default::default());
    // As the CLI: a key no backend read is the error to report, whatever the run did.
    scn.finish().map_err(anyhow::Error::from)?;
    Ok(res?)
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, Fail> {
    serde_json::to_string(v).map_err(|e| Fail::Bug(e.to_string()))
}

fn parse_doc(text: &str, what: &str) -> Result<ResultDoc, Fail> {
    ResultDoc::from_json(text)
        .map_err(|e| Fail::Input(format!("{what} is not a reclaimlab result: {e:#}")))
}

/// Simulate `scenario` with `sets` ("KEY=VALUE") under `policy` (PRESET[+PATCH...], or the
/// scenario's kernel); returns the result document as JSON.
#[pyfunction]
#[pyo3(signature = (scenario, sets, policy=None))]
fn simulate(
    py: Python<'_>,
    scenario: String,
    sets: Vec<String>,
    policy: Option<String>,
) -> PyResult<String> {
    detached(py, || {
        to_json(&simulate_doc(&scenario, &sets, policy.as_deref())?)
    })
}

/// Read a result file (host or sim); returns its document as JSON.
#[pyfunction]
fn load(py: Python<'_>, path: String) -> PyResult<String> {
    detached(py, || {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Fail::Io(format!("cannot read {path}: {e}")))?;
        to_json(&parse_doc(&text, &path)?)
    })
}

/// The Before/After table of two result documents (JSON), refused as `compare` refuses;
/// returns the comparison as JSON with `names`, each row's metric named for people.
#[pyfunction]
#[pyo3(signature = (before, after, all=false, allow_mismatch=false))]
fn compare(
    py: Python<'_>,
    before: String,
    after: String,
    all: bool,
    allow_mismatch: bool,
) -> PyResult<String> {
    detached(py, || {
        let (b, a) = (parse_doc(&before, "before")?, parse_doc(&after, "after")?);
        let c = checked_compare(&b, &a, all, allow_mismatch, &[]).map_err(Fail::Input)?;
        let names: Vec<String> = c
            .rows
            .iter()
            .map(|r| reclaimlab_core::compare::readable_name(&r.metric, &c.throughput_unit))
            .collect();
        let mut v = serde_json::to_value(&c).map_err(|e| Fail::Bug(e.to_string()))?;
        v["names"] = names.into();
        to_json(&v)
    })
}

/// Check a policy spec (PRESET[+PATCH...]) without simulating.
#[pyfunction]
fn check_policy(spec: &str) -> PyResult<String> {
    Ok(policy(spec)?.to_string())
}

/// The sweep's grid: every point as (key, value) pairs, first axis varying slowest.
#[pyfunction]
fn grid(axes: Vec<(String, Vec<String>)>) -> Vec<Vec<(String, String)>> {
    let axes: Vec<Axis> = axes
        .into_iter()
        .map(|(key, values)| Axis { key, values })
        .collect();
    sweep_grid(&axes)
}

/// One sweep point: `scenario` with `sets` then the point's, simulated under `before` and
/// `after`, compared as `sweep` compares; returns the point (`at`, `comparison`) as JSON.
#[pyfunction]
fn sweep_point(
    py: Python<'_>,
    scenario: String,
    sets: Vec<String>,
    at: Vec<(String, String)>,
    before: String,
    after: String,
) -> PyResult<String> {
    detached(py, || {
        let mut all = sets;
        all.extend(point_sets(&at));
        let b = simulate_doc(&scenario, &all, Some(&before))?;
        let a = simulate_doc(&scenario, &all, Some(&after))?;
        to_json(&Point::new(at, &b, &a))
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(check_policy, m)?)?;
    m.add_function(wrap_pyfunction!(grid, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_point, m)?)?;
    Ok(())
}

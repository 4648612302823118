//! Key readers the workloads share: task counts, CPU sets, access patterns, file sizes.

use crate::scenario::limits::{MAX_FILE_BYTES, MAX_TASKS, PAGE};
use crate::scenario::{count, parse_cpu_list, AllTag, CpuSet, Pattern};
use crate::source::{ScenarioError, Source};
use crate::units::{clip, fmt_size};
use toml_edit::Value;

pub(super) fn pattern(src: &Source, key: &str) -> Result<Pattern, ScenarioError> {
    match src.str_or(key, "sequential")?.as_str() {
        "sequential" => Ok(Pattern::Sequential),
        "random" => Ok(Pattern::Random),
        o => Err(src.err(key, format!("{}: use sequential or random", clip(o)))),
    }
}

/// A task count within 1..=PID_MAX_LIMIT.
pub(super) fn tasks(src: &Source, key: &str, n: u64) -> Result<u64, ScenarioError> {
    src.check_range(
        key,
        n,
        1,
        MAX_TASKS,
        count,
        "each is a task, and a kernel has at most PID_MAX_LIMIT of them",
    )
}

/// A file workload's file: at least a page per thread, at most ext4's largest file.
pub(super) fn file_per_thread(
    src: &Source,
    file_bytes: u64,
    threads: usize,
) -> Result<(), ScenarioError> {
    tasks(src, "workload.threads", threads as u64)?;
    if file_bytes / PAGE < threads as u64 {
        return Err(src.err(
            "workload.file_bytes",
            format!(
                "{} leaves less than one page (4K) for each of the {threads} threads",
                fmt_size(file_bytes)
            ),
        ));
    }
    if file_bytes > MAX_FILE_BYTES {
        return Err(src.err(
            "workload.file_bytes",
            format!(
                "{} is above ext4's largest file (16T with 4K blocks)",
                fmt_size(file_bytes)
            ),
        ));
    }
    Ok(())
}

pub(super) fn positive(src: &Source, key: &str, default: u64) -> Result<usize, ScenarioError> {
    let v = src.u64_or(key, default)?;
    if v == 0 {
        return Err(src.err(key, "must be at least 1 (got 0)"));
    }
    Ok(v as usize)
}

/// Like [`cpuset`], but when the key is absent each thread is pinned to its own CPU (0, 1, ...).
pub(super) fn cpuset_or_pinned(
    src: &Source,
    key: &str,
    avail: usize,
) -> Result<CpuSet, ScenarioError> {
    if src.has(key) {
        cpuset(src, key, avail)
    } else {
        Ok(CpuSet::List((0..avail).collect()))
    }
}

/// `"all"`, `[0, 1]` or `"0-3,5"`; every CPU must exist on the target machine.
pub(crate) fn cpuset(src: &Source, key: &str, avail: usize) -> Result<CpuSet, ScenarioError> {
    let list = match src.raw(key) {
        None => return Ok(CpuSet::All(AllTag::All)),
        Some(Value::String(s)) if s.value().trim() == "all" => return Ok(CpuSet::All(AllTag::All)),
        Some(Value::String(s)) => parse_cpu_list(s.value()).map_err(|m| src.err(key, m))?,
        Some(Value::Integer(i)) if *i.value() >= 0 => vec![*i.value() as usize],
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::Integer(i) if *i.value() >= 0 => Ok(*i.value() as usize),
                other => Err(src.err(
                    key,
                    format!(
                        "CPU numbers must be whole numbers, got {}",
                        clip(other.to_string().trim())
                    ),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(src.err(
                key,
                format!(
                    "expected \"all\", a list or \"0-3,5\", got {}",
                    clip(other.to_string().trim())
                ),
            ))
        }
    };
    if list.is_empty() {
        return Err(src.err(key, "empty CPU list"));
    }
    if let Some(bad) = list.iter().find(|c| **c >= avail) {
        return Err(src.err(
            key,
            format!(
                "CPU {bad} does not exist: the target machine has {avail} CPUs (0-{})",
                avail - 1
            ),
        ));
    }
    Ok(CpuSet::List(list))
}

//! A scenario's raw key/value pairs with where each came from (file line or `--set`), and typed
//! getters that produce errors naming the key and its origin. Every key must be consumed by
//! someone; whatever is left over is reported as unknown.

use crate::units::{clip, clip_raw, parse_duration_ns, parse_size};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use toml_edit::{ImDocument, Item, Value};

/// Where a value came from, for error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    File { file: String, line: usize },
    Set(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { file, line } => write!(f, "{file}:{line}"),
            Origin::Set(arg) => write!(f, "--set {}", clip_raw(arg)),
        }
    }
}

/// An error in a scenario: the message already names the key and where it was written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ScenarioError(pub String);

#[derive(Clone, Debug)]
struct Entry {
    value: Value,
    origin: Origin,
}

/// Flat, dotted key → value map of one scenario, with overrides applied.
#[derive(Debug)]
pub struct Source {
    file: String,
    entries: BTreeMap<String, Entry>,
    used: RefCell<BTreeSet<String>>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

impl Source {
    /// Parse TOML text. `file` is the name used in messages.
    pub fn parse(file: &str, text: &str) -> Result<Source, ScenarioError> {
        let doc = ImDocument::parse(text.to_string()).map_err(|e| {
            // The parser's message quotes the offending line: keep it short.
            let msg: Vec<String> = e.to_string().lines().map(clip_raw).collect();
            ScenarioError(format!("{file}: not valid TOML: {}", msg.join("\n")))
        })?;
        let mut entries = BTreeMap::new();
        flatten(file, text, "", doc.as_table(), &mut entries)?;
        Ok(Source {
            file: file.to_string(),
            entries,
            used: RefCell::new(BTreeSet::new()),
        })
    }

    /// Apply `key=value`; the value is read as TOML (so `2`, `true`, `[0,1]`, `"x"` work) and
    /// otherwise taken as a bare string (so `256M` and `all` need no quotes).
    pub fn set(&mut self, arg: &str) -> Result<(), ScenarioError> {
        let (k, v) = arg.split_once('=').ok_or_else(|| {
            ScenarioError(format!(
                "--set {}: expected KEY=VALUE, e.g. memcg.limit=256M",
                clip_raw(arg)
            ))
        })?;
        let k = k.trim();
        if k.is_empty() || !k.contains('.') && !matches!(k, "name" | "description") {
            return Err(ScenarioError(format!(
                "--set {}: key must be a dotted path such as workload.workers",
                clip_raw(arg)
            )));
        }
        let v = v.trim();
        let value = v
            .parse::<Value>()
            .unwrap_or_else(|_| Value::from(v.to_string()));
        self.entries.insert(
            k.to_string(),
            Entry {
                value,
                origin: Origin::Set(arg.to_string()),
            },
        );
        Ok(())
    }

    pub fn file(&self) -> &str {
        &self.file
    }

    /// All keys under a section prefix (e.g. "sim"), for backends that own a section.
    pub fn keys_under(&self, prefix: &str) -> Vec<String> {
        let p = format!("{prefix}.");
        self.entries
            .keys()
            .filter(|k| k.starts_with(&p))
            .cloned()
            .collect()
    }

    /// Every key under `prefix` with its value as written (TOML text), for recording in results.
    pub fn section_text(&self, prefix: &str) -> BTreeMap<String, String> {
        let p = format!("{prefix}.");
        self.entries
            .iter()
            .filter(|(k, _)| k.starts_with(&p))
            .map(|(k, e)| (k.clone(), e.value.to_string().trim().to_string()))
            .collect()
    }

    pub fn has(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    pub fn origin(&self, key: &str) -> Option<Origin> {
        self.entries.get(key).map(|e| e.origin.clone())
    }

    /// Build an error about `key`, prefixed with where it was written.
    pub fn err(&self, key: &str, msg: impl fmt::Display) -> ScenarioError {
        let k = clip_raw(key);
        match self.entries.get(key) {
            Some(e) => ScenarioError(format!("{}: {k}: {msg}", e.origin)),
            None => ScenarioError(format!("{}: {k}: {msg}", self.file)),
        }
    }

    /// `v` within `lo..=hi`, else an error naming the key, the bound and `why` it holds.
    pub fn check_range(
        &self,
        key: &str,
        v: u64,
        lo: u64,
        hi: u64,
        show: fn(u64) -> String,
        why: &str,
    ) -> Result<u64, ScenarioError> {
        if v < lo || v > hi {
            return Err(self.err(
                key,
                format!(
                    "must be within {}..={} (got {}): {why}",
                    show(lo),
                    show(hi),
                    show(v)
                ),
            ));
        }
        Ok(v)
    }

    fn take(&self, key: &str) -> Option<&Entry> {
        let e = self.entries.get(key)?;
        self.used.borrow_mut().insert(key.to_string());
        Some(e)
    }

    pub fn str_opt(&self, key: &str) -> Result<Option<String>, ScenarioError> {
        match self.take(key) {
            None => Ok(None),
            Some(e) => match &e.value {
                Value::String(s) => Ok(Some(s.value().clone())),
                // Numbers keep their text as written (`7.0` stays `7.0`, not the float 7).
                Value::Integer(_) | Value::Float(_) => {
                    Ok(Some(e.value.to_string().trim().to_string()))
                }
                other => {
                    Err(self.err(key, format!("expected a string, got {}", other.type_name())))
                }
            },
        }
    }

    pub fn str_or(&self, key: &str, default: &str) -> Result<String, ScenarioError> {
        Ok(self.str_opt(key)?.unwrap_or_else(|| default.to_string()))
    }

    pub fn u64_opt(&self, key: &str) -> Result<Option<u64>, ScenarioError> {
        match self.take(key) {
            None => Ok(None),
            Some(e) => {
                let v = match &e.value {
                    Value::Integer(i) => *i.value(),
                    Value::String(s) => s.value().trim().parse::<i64>().map_err(|_| {
                        self.err(
                            key,
                            format!("expected a whole number, got {}", clip(s.value())),
                        )
                    })?,
                    other => {
                        return Err(self.err(
                            key,
                            format!("expected a whole number, got {}", other.type_name()),
                        ))
                    }
                };
                if v < 0 {
                    return Err(self.err(key, format!("must not be negative (got {v})")));
                }
                Ok(Some(v as u64))
            }
        }
    }

    pub fn u64_or(&self, key: &str, default: u64) -> Result<u64, ScenarioError> {
        Ok(self.u64_opt(key)?.unwrap_or(default))
    }

    /// A whole number that may be negative (a nice level), within `lo..=hi`.
    pub fn i64_in(
        &self,
        key: &str,
        default: i64,
        lo: i64,
        hi: i64,
        why: &str,
    ) -> Result<i64, ScenarioError> {
        let v = match self.take(key) {
            None => default,
            Some(e) => match &e.value {
                Value::Integer(i) => *i.value(),
                Value::String(s) => s.value().trim().parse::<i64>().map_err(|_| {
                    self.err(
                        key,
                        format!("expected a whole number, got {}", clip(s.value())),
                    )
                })?,
                other => {
                    return Err(self.err(
                        key,
                        format!("expected a whole number, got {}", other.type_name()),
                    ))
                }
            },
        };
        if v < lo || v > hi {
            return Err(self.err(key, format!("must be within {lo}..={hi} (got {v}): {why}")));
        }
        Ok(v)
    }

    pub fn f64_or(&self, key: &str, default: f64) -> Result<f64, ScenarioError> {
        let v = match self.take(key) {
            None => return Ok(default),
            Some(e) => match &e.value {
                Value::Integer(i) => *i.value() as f64,
                Value::Float(f) => *f.value(),
                Value::String(s) => s.value().trim().parse().map_err(|_| {
                    self.err(key, format!("expected a number, got {}", clip(s.value())))
                })?,
                other => {
                    return Err(
                        self.err(key, format!("expected a number, got {}", other.type_name()))
                    )
                }
            },
        };
        if !v.is_finite() {
            return Err(self.err(key, format!("must be a finite number (got {v})")));
        }
        Ok(v)
    }

    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, ScenarioError> {
        match self.take(key) {
            None => Ok(default),
            Some(e) => match &e.value {
                Value::Boolean(b) => Ok(*b.value()),
                Value::String(s) if s.value() == "true" => Ok(true),
                Value::String(s) if s.value() == "false" => Ok(false),
                other => Err(self.err(
                    key,
                    format!("expected true or false, got {}", clip(&other.to_string())),
                )),
            },
        }
    }

    /// A size with K/M/G/T suffix, or a plain byte count.
    pub fn size_opt(&self, key: &str) -> Result<Option<u64>, ScenarioError> {
        match self.take(key) {
            None => Ok(None),
            Some(e) => match &e.value {
                Value::Integer(i) if *i.value() >= 0 => Ok(Some(*i.value() as u64)),
                Value::String(s) => parse_size(s.value())
                    .map(Some)
                    .map_err(|m| self.err(key, m)),
                other => Err(self.err(
                    key,
                    format!(
                        "expected a size such as \"512M\", got {}",
                        clip(other.to_string().trim())
                    ),
                )),
            },
        }
    }

    pub fn size_or(&self, key: &str, default: u64) -> Result<u64, ScenarioError> {
        Ok(self.size_opt(key)?.unwrap_or(default))
    }

    /// A duration with unit (ns/us/ms/s/m); a bare number is seconds.
    pub fn duration_ns_or(&self, key: &str, default: u64) -> Result<u64, ScenarioError> {
        match self.take(key) {
            None => Ok(default),
            Some(e) => match &e.value {
                // A bare number is seconds; the text form applies the same checks (finite,
                // non-negative, fits in 64 bits of ns) instead of saturating.
                Value::Integer(i) => seconds_to_ns(*i.value() as f64).map_err(|m| self.err(key, m)),
                Value::Float(f) => seconds_to_ns(*f.value()).map_err(|m| self.err(key, m)),
                Value::String(s) => parse_duration_ns(s.value()).map_err(|m| self.err(key, m)),
                other => Err(self.err(
                    key,
                    format!(
                        "expected a duration such as \"20s\", got {}",
                        clip(other.to_string().trim())
                    ),
                )),
            },
        }
    }

    /// A list of strings (TOML array, or a comma-separated string).
    pub fn str_list_or(&self, key: &str, default: &[&str]) -> Result<Vec<String>, ScenarioError> {
        match self.take(key) {
            None => Ok(default.iter().map(|s| s.to_string()).collect()),
            Some(e) => match &e.value {
                Value::Array(a) => a
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => Ok(s.value().clone()),
                        other => Err(self.err(
                            key,
                            format!("expected strings, got {}", clip(other.to_string().trim())),
                        )),
                    })
                    .collect(),
                Value::String(s) => Ok(s
                    .value()
                    .split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect()),
                other => Err(self.err(
                    key,
                    format!(
                        "expected a list of strings, got {}",
                        clip(other.to_string().trim())
                    ),
                )),
            },
        }
    }

    /// Raw access for CPU lists and other special forms.
    pub fn raw(&self, key: &str) -> Option<Value> {
        self.take(key).map(|e| e.value.clone())
    }

    /// Error for every key nobody consumed.
    pub fn check_all_used(&self) -> Result<(), ScenarioError> {
        let used = self.used.borrow();
        let unknown: Vec<String> = self
            .entries
            .iter()
            .filter(|(k, _)| !used.contains(*k))
            .map(|(k, e)| format!("{}: unknown key {}", e.origin, clip_raw(k)))
            .collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(ScenarioError(unknown.join("\n")))
        }
    }
}

/// A bare number of seconds in ns, refusing what would saturate (inf, NaN, negative, >= 2^64 ns).
fn seconds_to_ns(secs: f64) -> Result<u64, String> {
    let ns = secs * 1e9;
    if !ns.is_finite() || ns < 0.0 || ns.round() >= u64::MAX as f64 {
        return Err(format!(
            "bad duration {secs}: seconds must be finite, non-negative and below 2^64 ns"
        ));
    }
    Ok(ns.round() as u64)
}

fn flatten(
    file: &str,
    text: &str,
    prefix: &str,
    table: &toml_edit::Table,
    out: &mut BTreeMap<String, Entry>,
) -> Result<(), ScenarioError> {
    for (k, item) in table.iter() {
        let key = if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        };
        match item {
            Item::Table(t) => flatten(file, text, &key, t, out)?,
            Item::Value(Value::InlineTable(t)) => {
                let line = t.span().map(|s| line_of(text, s.start)).unwrap_or(0);
                for (ik, iv) in t.iter() {
                    out.insert(
                        format!("{key}.{ik}"),
                        Entry {
                            value: iv.clone(),
                            origin: Origin::File {
                                file: file.to_string(),
                                line,
                            },
                        },
                    );
                }
            }
            Item::Value(v) => {
                let line = v.span().map(|s| line_of(text, s.start)).unwrap_or(0);
                out.insert(
                    key,
                    Entry {
                        value: v.clone(),
                        origin: Origin::File {
                            file: file.to_string(),
                            line,
                        },
                    },
                );
            }
            Item::ArrayOfTables(_) => {
                return Err(ScenarioError(format!(
                    "{file}: {key}: arrays of tables are not used in scenarios"
                )))
            }
            Item::None => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "name = \"x\"\n[workload]\nkind = \"stress-vm\"\nworkers = 16\nbytes = \"2G\"\n[memcg]\nlimit = \"512M\"\n";

    #[test]
    fn lines_and_overrides() {
        let mut s = Source::parse("x.toml", T).unwrap();
        assert_eq!(
            s.origin("workload.workers"),
            Some(Origin::File {
                file: "x.toml".into(),
                line: 4
            })
        );
        s.set("memcg.limit=256M").unwrap();
        assert_eq!(s.size_or("memcg.limit", 0).unwrap(), 256 << 20);
        assert_eq!(s.u64_or("workload.workers", 0).unwrap(), 16);
        s.set("workload.workers=x").unwrap();
        let e = s.u64_or("workload.workers", 0).unwrap_err().to_string();
        assert!(e.contains("--set workload.workers=x"), "{e}");
    }

    #[test]
    fn unknown_keys_name_their_line() {
        let s = Source::parse("x.toml", T).unwrap();
        s.str_or("name", "").unwrap();
        s.str_or("workload.kind", "").unwrap();
        s.u64_or("workload.workers", 0).unwrap();
        s.size_or("workload.bytes", 0).unwrap();
        let e = s.check_all_used().unwrap_err().to_string();
        assert_eq!(e, "x.toml:7: unknown key memcg.limit");
    }

    #[test]
    fn bad_unit_names_key_and_line() {
        let s = Source::parse("x.toml", "[memcg]\n\nlimit = \"5Q\"\n").unwrap();
        let e = s.size_or("memcg.limit", 0).unwrap_err().to_string();
        assert!(e.starts_with("x.toml:3: memcg.limit: bad size unit"), "{e}");
    }

    #[test]
    fn set_rejects_malformed() {
        let mut s = Source::parse("x.toml", T).unwrap();
        assert!(s.set("workload.workers").is_err());
        assert!(s.set("=3").is_err());
    }
}

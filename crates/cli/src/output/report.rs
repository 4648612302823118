//! What each command reports, as [`Report`]s: the formats a command offers and which
//! renderer gives each.

use super::{json_text, mail, markdown, text, Report};
use crate::cmd::validate::suite::ConfigResult;
use anyhow::Result;
use reclaimlab_core::compare::Comparison;
use reclaimlab_core::foreign::BackgroundFromHost;
use reclaimlab_core::profile::LoadedProfile;
use reclaimlab_core::sweep::Point;
use reclaimlab_core::validate::RatioRow;
use reclaimlab_core::ResultDoc;
use reclaimlab_host::calibrate::Calibration;

/// `sim` and `bench`: one result.
pub struct ResultReport<'a> {
    pub doc: &'a ResultDoc,
    /// Every non-zero counter, not just the headline ones.
    pub all: bool,
    /// `--format mail`: rows named by their /proc/vmstat keys.
    pub raw_names: bool,
}

impl Report for ResultReport<'_> {
    fn text(&self) -> String {
        format!("{}\n", text::result_table(self.doc, self.all))
    }
    fn json(&self) -> Result<String> {
        json_text(self.doc)
    }
    fn markdown(&self) -> String {
        markdown::result(self.doc, self.all)
    }
    fn mail(&self) -> String {
        let o = mail::MailOpts {
            all: self.all,
            raw_names: self.raw_names,
        };
        let keys = super::result_keys(self.doc, self.all);
        format!("{}\n", mail::result_mail(self.doc, &keys, o).trim_end())
    }
}

/// `compare`: the comparison and the two results it was made from.
pub struct CompareReport<'a> {
    pub c: &'a Comparison,
    pub before: &'a ResultDoc,
    pub after: &'a ResultDoc,
    /// `--format mail`: the wall-clock row too.
    pub all: bool,
    /// `--format mail`: rows named by their /proc/vmstat keys.
    pub raw_names: bool,
}

impl Report for CompareReport<'_> {
    fn text(&self) -> String {
        format!("{}\n", text::compare_table(self.c))
    }
    fn json(&self) -> Result<String> {
        json_text(self.c)
    }
    fn markdown(&self) -> String {
        markdown::comparison(self.c)
    }
    fn mail(&self) -> String {
        let o = mail::MailOpts {
            all: self.all,
            raw_names: self.raw_names,
        };
        let m = mail::compare_mail(self.c, self.before, self.after, o);
        format!("{}\n", m.trim_end())
    }
}

/// `validate SCENARIO`: the ratio rows, and what the simulation took from the host runs.
pub struct ValidateReport<'a> {
    pub rows: &'a [RatioRow],
    pub host: &'a ResultDoc,
    pub sim: &'a ResultDoc,
    /// `--placement-from-host`: each valid host run's start placement.
    pub placements: Option<&'a [String]>,
    /// `--background-from-host` (None: off): the load derived, if any foreign task ran.
    pub background: Option<Option<&'a BackgroundFromHost>>,
}

impl ValidateReport<'_> {
    /// The lines above the table: what the simulation was given from the host.
    fn given(&self) -> String {
        let mut s = String::new();
        if let Some(p) = self.placements {
            s.push_str(&text::placement_lines(Some((self.host, self.sim)), p));
        }
        if let Some(b) = self.background {
            let line = b.map_or(
                "background load from host: no foreign user task ran (a quiet model)".into(),
                |b| b.summary(),
            );
            s.push_str(&format!("{line}\n"));
        }
        s
    }
}

impl Report for ValidateReport<'_> {
    fn text(&self) -> String {
        format!("{}{}\n", self.given(), text::validate_table(self.rows))
    }
    fn json(&self) -> Result<String> {
        json_text(self.rows)
    }
    fn markdown(&self) -> String {
        format!("{}{}\n", self.given(), markdown::validate(self.rows))
    }
}

/// `validate --suite`, at its end: the summary document and each configuration's outcome.
/// Its text is empty: each configuration's table is printed as it finishes
/// (`text::suite_config`).
pub struct SuiteReport<'a> {
    pub doc: &'a serde_json::Value,
    pub results: &'a [ConfigResult],
}

impl Report for SuiteReport<'_> {
    fn text(&self) -> String {
        String::new()
    }
    fn json(&self) -> Result<String> {
        json_text(self.doc)
    }
    fn markdown(&self) -> String {
        markdown::suite(self.results)
    }
}

/// `sweep`: one point per grid point.
pub struct SweepReport<'a>(pub &'a [Point]);

impl Report for SweepReport<'_> {
    fn text(&self) -> String {
        format!("{}\n", text::sweep_table(self.0))
    }
    fn json(&self) -> Result<String> {
        json_text(self.0)
    }
}

/// `check`: the search's verdict (and counterexample).
pub struct CheckReport<'a>(pub &'a reclaimlab_check::CheckReport);

impl Report for CheckReport<'_> {
    fn text(&self) -> String {
        self.0.to_string()
    }
    fn json(&self) -> Result<String> {
        json_text(self.0)
    }
}

/// `profiles`: the shipped list, or one profile in full.
pub enum ProfilesReport<'a> {
    List(&'a [LoadedProfile]),
    One(&'a LoadedProfile),
}

/// A profile's JSON summary (the list's rows; one profile adds `costs_detail`).
fn profile_row(p: &LoadedProfile) -> serde_json::Value {
    let m = &p.profile.machine;
    serde_json::json!({
        "name": p.profile.profile.name,
        "origin": p.origin,
        "description": p.profile.profile.description,
        "cpu_model": m.cpu_model,
        "arch": m.arch,
        "cpus": m.cpus,
        "kernel": m.kernel,
        "date": m.date,
        "costs": p.summary()["costs"].clone(),
        "sha256": p.sha256,
    })
}

impl Report for ProfilesReport<'_> {
    fn text(&self) -> String {
        match self {
            ProfilesReport::List(all) => text::profile_list(all),
            ProfilesReport::One(p) => text::profile_detail(p),
        }
    }
    fn json(&self) -> Result<String> {
        match self {
            ProfilesReport::List(all) => {
                json_text(&all.iter().map(profile_row).collect::<Vec<_>>())
            }
            ProfilesReport::One(p) => {
                let mut v = profile_row(p);
                v["costs_detail"] = serde_json::to_value(&p.profile.costs)?;
                json_text(&v)
            }
        }
    }
}

/// `calibrate`: the measurements, the costs derived from them and their checks.
pub struct CalibrationReport<'a>(pub &'a Calibration);

impl Report for CalibrationReport<'_> {
    fn text(&self) -> String {
        text::calibration(self.0)
    }
    fn json(&self) -> Result<String> {
        json_text(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> RatioRow {
        RatioRow {
            ratio: "a/b".into(),
            host_median: Some(0.5),
            host_min: Some(0.4),
            host_max: Some(0.6),
            sim: Some(0.55),
            sim_min: None,
            sim_max: None,
            error_pct: Some(10.0),
            within_25pct: Some(true),
        }
    }

    #[test]
    fn validate_prints_what_the_model_was_given_above_its_table_in_every_format() {
        let (rows, doc) = (vec![row()], ResultDoc::default());
        let r = ValidateReport {
            rows: &rows,
            host: &doc,
            sim: &doc,
            placements: None,
            background: Some(None),
        };
        let quiet = "background load from host: no foreign user task ran (a quiet model)\n";
        let md = r.markdown();
        assert!(
            md.starts_with(&format!("{quiet}| ratio | host median")),
            "{md}"
        );
        assert!(
            md.ends_with("|\n\n"),
            "one blank line after the table: {md:?}"
        );
        assert!(r.text().starts_with(quiet));
        // validate has no mail form: it prints its text (ASCII, by the style).
        assert_eq!(r.mail(), r.text());
        assert_eq!(r.json().unwrap(), json_text(&rows).unwrap());
        let off = ValidateReport {
            background: None,
            ..r
        };
        assert!(off.text().starts_with(&text::validate_table(&rows)));
    }

    #[test]
    fn a_suite_prints_nothing_at_its_end_as_text() {
        let doc = serde_json::json!({"configs": []});
        let r = SuiteReport {
            doc: &doc,
            results: &[],
        };
        assert_eq!(r.text(), "");
        assert_eq!(r.json().unwrap(), "{\n  \"configs\": []\n}\n");
        assert!(r.markdown().starts_with("| configuration | ratio |"));
    }
}

//! Plots of `compare` (one bar per metric: its delta %) and `sweep` (one panel per metric: its
//! delta % against the first varied key, one line per combination of the other keys), as SVG or
//! PNG by the file's extension. Text is set in DejaVu Sans compiled into the binary (the `dejavu`
//! crate, registered with plotters' ab_glyph backend), so a PNG needs no system font library and
//! both formats lay text out with the same metrics.

use anyhow::{bail, Context, Result};
use plotters::coord::ranged1d::SegmentValue;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::register_font;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use reclaimlab_core::compare::{higher_is_better, Comparison};
use reclaimlab_core::sweep::Point;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

const METRICS: &[&str] = &[
    "throughput",
    "tlb_shootdowns",
    "function_call_interrupts",
    "pgsteal_anon",
];

/// Bars of a change for the better / worse, and of a metric with no better direction
/// (`higher_is_better`).
const BETTER: RGBColor = RGBColor(44, 160, 44);
const WORSE: RGBColor = RGBColor(214, 39, 40);
const NEUTRAL: RGBColor = RGBColor(127, 127, 127);
/// A sweep panel's background on the side of zero that is better.
const BETTER_SIDE: RGBColor = RGBColor(234, 246, 234);

/// Sweep lines, one per combination of the other keys: no red or green, which mean worse
/// and better here.
const SERIES: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(64, 64, 64),
];

/// The colour of a change of `delta` percent in `metric`.
fn change_colour(metric: &str, unit: &str, delta: f64) -> RGBColor {
    match higher_is_better(metric, unit) {
        _ if delta == 0.0 => NEUTRAL,
        Some(up) if up == (delta > 0.0) => BETTER,
        Some(_) => WORSE,
        None => NEUTRAL,
    }
}

/// "(higher is better)" and the like, for a caption.
fn direction(metric: &str, unit: &str) -> &'static str {
    match higher_is_better(metric, unit) {
        Some(true) => " (higher is better)",
        Some(false) => " (lower is better)",
        None => "",
    }
}

/// The output format, chosen by `--plot FILE`'s extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

impl Format {
    /// Checked before any simulation runs, so a typo in the name costs nothing.
    pub fn of(path: &Path) -> Result<Format> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("svg") => Ok(Format::Svg),
            Some("png") => Ok(Format::Png),
            _ => bail!(
                "--plot {}: unsupported file type; the name must end in .svg or .png",
                path.display()
            ),
        }
    }
}

/// An axis label in percent, with as many decimals as an axis spanning `span` points needs
/// to tell its ticks apart (and no "-0%").
fn pct_label(v: f64, span: f64) -> String {
    let dec = if span >= 20.0 {
        0
    } else if span >= 2.0 {
        1
    } else {
        2
    };
    let scale = 10f64.powi(dec as i32);
    let v = (v * scale).round() / scale;
    let v = if v == 0.0 { 0.0 } else { v };
    format!("{v:+.dec$}%")
}

/// Register the embedded font under the one family name the charts use.
fn fonts() -> Result<()> {
    static OK: OnceLock<bool> = OnceLock::new();
    let ok = *OK.get_or_init(|| {
        register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular()).is_ok()
            && register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold()).is_ok()
    });
    if !ok {
        bail!("cannot load the embedded DejaVu Sans font");
    }
    Ok(())
}

/// `compare --plot`: a horizontal bar per metric with a delta %, in the table's order.
pub fn compare_plot(c: &Comparison, title: &str, path: &Path) -> Result<()> {
    let fmt = Format::of(path)?;
    fonts()?;
    let n = c.rows.iter().filter(|r| r.delta_pct.is_some()).count();
    let size = (960, 140 + 44 * n.max(1) as u32);
    match fmt {
        Format::Svg => draw_compare(SVGBackend::new(path, size).into_drawing_area(), c, title),
        Format::Png => draw_compare(BitMapBackend::new(path, size).into_drawing_area(), c, title),
    }
    .with_context(|| format!("cannot write {}", path.display()))
}

/// `sweep --plot`: one panel per headline metric; `policies` ("AFTER vs BEFORE") goes in
/// each panel's caption.
pub fn sweep_plot(points: &[Point], policies: &str, path: &Path) -> Result<()> {
    let fmt = Format::of(path)?;
    fonts()?;
    let panels = sweep_metrics(points).len().max(1) as u32;
    let size = (960, 340 * panels);
    match fmt {
        Format::Svg => draw_sweep(
            SVGBackend::new(path, size).into_drawing_area(),
            points,
            policies,
        ),
        Format::Png => draw_sweep(
            BitMapBackend::new(path, size).into_drawing_area(),
            points,
            policies,
        ),
    }
    .with_context(|| format!("cannot write {}", path.display()))
}

fn draw_compare<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    c: &Comparison,
    title: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    // Top to bottom in the table's order; a metric that was 0 before has no delta % to draw.
    let rows: Vec<(String, f64, bool, RGBColor)> = c
        .rows
        .iter()
        .filter_map(|r| {
            let d = r.delta_pct?;
            Some((
                c.metric_label(&r.metric),
                d,
                !r.not_significant(),
                change_colour(&r.metric, &c.throughput_unit, d),
            ))
        })
        .collect();
    let n = rows.len();
    let label_font: TextStyle = ("sans-serif", 15).into();
    let mut label_w = 0;
    for (name, ..) in &rows {
        label_w = label_w.max(root.estimate_text_size(name, &label_font)?.0);
    }
    let (lo, hi) = rows.iter().fold((0.0f64, 0.0f64), |(a, b), (_, d, ..)| {
        (a.min(*d), b.max(*d))
    });
    // Room beside the longest bar for its value label.
    let span = (hi - lo).max(1.0);
    let (lo, hi) = (
        if lo < 0.0 { lo - 0.2 * span } else { lo },
        if hi > 0.0 { hi + 0.2 * span } else { hi },
    );
    let (lo, hi) = if hi - lo < 1e-9 {
        (-1.0, 1.0)
    } else {
        (lo, hi)
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(label_w + 16)
        .build_cartesian_2d(lo..hi, (0..n.max(1) as i32 - 1).into_segmented())?;
    let names: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .y_labels(n.max(1))
        .y_label_style(label_font.clone())
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) if (*i as usize) < n => names[n - 1 - *i as usize].clone(),
            _ => String::new(),
        })
        .x_label_style(("sans-serif", 14))
        .x_label_formatter(&|x| pct_label(*x, hi - lo))
        .x_desc("delta % (after vs before): green better, red worse, grey either way")
        .axis_desc_style(("sans-serif", 15))
        .draw()?;
    if n == 0 {
        root.draw(&Text::new(
            "no metric has a delta % (all were 0 before)",
            (40, 60),
            ("sans-serif", 16),
        ))?;
    }
    chart.draw_series(rows.iter().enumerate().map(|(i, (_, d, sig, color))| {
        let y = (n - 1 - i) as i32;
        // Not significant (min–max ranges overlap): drawn pale.
        let style = if *sig {
            color.filled()
        } else {
            color.mix(0.35).filled()
        };
        let mut bar = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(y)),
                (*d, SegmentValue::Exact(y + 1)),
            ],
            style,
        );
        bar.set_margin(7, 7, 0, 0);
        bar
    }))?;
    chart.draw_series(rows.iter().enumerate().map(|(i, (_, d, sig, _))| {
        let y = (n - 1 - i) as i32;
        let text = format!(
            "{}{d:.1}%{}",
            if *d >= 0.0 { "+" } else { "" },
            if *sig { "" } else { " n.s." }
        );
        let (h, dx) = if *d < 0.0 {
            (HPos::Right, -6)
        } else {
            (HPos::Left, 6)
        };
        let style = ("sans-serif", 14)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(h, VPos::Center));
        EmptyElement::at((*d, SegmentValue::CenterOf(y))) + Text::new(text, (dx, 0), style)
    }))?;
    // The zero line, over the bars' inner ends.
    chart.draw_series(std::iter::once(PathElement::new(
        vec![
            (0.0, SegmentValue::Exact(0)),
            (0.0, SegmentValue::Exact(n.max(1) as i32)),
        ],
        BLACK.stroke_width(1),
    )))?;
    root.present()?;
    Ok(())
}

fn sweep_metrics(points: &[Point]) -> Vec<&'static str> {
    METRICS
        .iter()
        .copied()
        .filter(|m| {
            points
                .iter()
                .any(|p| p.comparison.rows.iter().any(|r| r.metric == *m))
        })
        .collect()
}

/// The sweep panels' x axis: the first varied key's values, placed by value when numeric (on
/// a log2 scale for CPU counts that double), else by their order in the sweep.
struct XAxis {
    key: String,
    values: Vec<String>,
    numeric: bool,
    log2: bool,
}

impl XAxis {
    fn of(first: &Point, points: &[Point]) -> XAxis {
        let key = first.at[0].0.clone();
        let mut values: Vec<String> = Vec::new();
        for p in points {
            if !values.contains(&p.at[0].1) {
                values.push(p.at[0].1.clone());
            }
        }
        let numeric = values.iter().all(|x| x.parse::<f64>().is_ok());
        // CPU counts that double (2, 4, ... 64) are evenly spaced on a log2 axis.
        let log2 = numeric
            && key.ends_with("cpus")
            && values.len() > 2
            && values
                .iter()
                .all(|x| x.parse::<u64>().is_ok_and(|v| v.is_power_of_two()));
        XAxis {
            key,
            values,
            numeric,
            log2,
        }
    }

    /// x position: the value if numeric, else its index in the sweep.
    fn pos(&self, v: &str) -> f64 {
        if self.log2 {
            v.parse::<f64>().unwrap().log2()
        } else if self.numeric {
            v.parse().unwrap()
        } else {
            self.values.iter().position(|x| x == v).unwrap() as f64
        }
    }

    /// One x range for every panel, so a value sits at the same place in each.
    fn range(&self) -> std::ops::Range<f64> {
        let (xmin, xmax) = self.values.iter().fold((f64::MAX, f64::MIN), |(a, b), x| {
            (a.min(self.pos(x)), b.max(self.pos(x)))
        });
        if !self.numeric || self.log2 {
            xmin - 0.5..xmax + 0.5
        } else if xmax > xmin {
            let m = (xmax - xmin) * 0.03;
            xmin - m..xmax + m
        } else {
            xmin - 1.0..xmax + 1.0
        }
    }

    /// The tick label at `x`.
    fn label(&self, x: f64) -> String {
        if self.log2 {
            // Only the swept values, at whole powers of two.
            let v = 2f64.powf(x);
            match self.values.iter().find(|l| (self.pos(l) - x).abs() < 1e-6) {
                Some(_) => format!("{}", v.round()),
                None => String::new(),
            }
        } else if self.numeric {
            format!("{x}")
        } else {
            // Only whole positions name a value of a non-numeric key.
            let i = x.round();
            match self.values.get(i as usize) {
                Some(l) if (x - i).abs() < 1e-6 && i >= 0.0 => l.clone(),
                _ => String::new(),
            }
        }
    }
}

/// A metric's lines: series label (the other keys' values) -> [(x, delta %)].
fn sweep_series(points: &[Point], metric: &str, x: &XAxis) -> BTreeMap<String, Vec<(f64, f64)>> {
    let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for p in points {
        let Some(r) = p.comparison.rows.iter().find(|r| r.metric == metric) else {
            continue;
        };
        let Some(d) = r.delta_pct else { continue };
        let label: Vec<String> = p.at[1..].iter().map(|(k, v)| format!("{k}={v}")).collect();
        series
            .entry(label.join(" "))
            .or_default()
            .push((x.pos(&p.at[0].1), d));
    }
    series
}

fn draw_sweep<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    points: &[Point],
    policies: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let Some(first) = points.first() else {
        root.present()?;
        return Ok(());
    };
    let x = XAxis::of(first, points);
    let metrics = sweep_metrics(points);
    let panels = root.split_evenly((metrics.len().max(1), 1));
    for (panel, metric) in panels.iter().zip(&metrics) {
        let series = sweep_series(points, metric, &x);
        let title = format!(
            "{metric}: delta % vs {}, {policies}{}",
            x.key,
            direction(metric, &first.comparison.throughput_unit)
        );
        let better = higher_is_better(metric, &first.comparison.throughput_unit);
        draw_sweep_panel(panel, &title, better, series, &x)?;
    }
    root.present()?;
    Ok(())
}

/// One metric's panel: its lines (legend right of the chart when several), the better side
/// of zero shaded.
fn draw_sweep_panel<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    title: &str,
    better_up: Option<bool>,
    series: BTreeMap<String, Vec<(f64, f64)>>,
    x: &XAxis,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let all: Vec<(f64, f64)> = series.values().flatten().copied().collect();
    if all.is_empty() {
        return Ok(());
    }
    let (ymin, ymax) = all
        .iter()
        .fold((0.0f64, 0.0f64), |(a, b), (_, y)| (a.min(*y), b.max(*y)));
    let pad = ((ymax - ymin) * 0.1).max(1.0);
    let xrange = x.range();
    // Several series: their legend goes in a strip right of the chart, never over a line.
    let legend_font: TextStyle = ("sans-serif", 13).into();
    let mut legend_w = 0;
    if series.len() > 1 {
        for label in series.keys() {
            legend_w = legend_w.max(panel.estimate_text_size(label, &legend_font)?.0 + 52);
        }
    }
    let (chart_area, legend_area) = panel.split_horizontally(panel.dim_in_pixel().0 - legend_w);
    let mut chart = ChartBuilder::on(&chart_area)
        .caption(title, ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(xrange.clone(), (ymin - pad)..(ymax + pad))?;
    // The better side of zero, shaded.
    if let Some(up) = better_up {
        let (lo, hi) = if up {
            (0.0, ymax + pad)
        } else {
            (ymin - pad, 0.0)
        };
        chart.draw_series(std::iter::once(Rectangle::new(
            [(xrange.start, lo), (xrange.end, hi)],
            BETTER_SIDE.filled(),
        )))?;
    }
    chart
        .configure_mesh()
        .light_line_style(RGBColor(240, 240, 240))
        .x_labels(if x.numeric && !x.log2 {
            10
        } else {
            x.values.len()
        })
        .x_label_formatter(&|v| x.label(*v))
        .y_label_formatter(&|y| pct_label(*y, ymax - ymin + 2.0 * pad))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .x_desc(if x.log2 {
            format!("{} (log2 scale)", x.key)
        } else {
            x.key.clone()
        })
        .y_desc("delta %")
        .draw()?;
    let several = series.len() > 1;
    for (i, (label, mut pts)) in series.into_iter().enumerate() {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = SERIES[i % SERIES.len()];
        chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
        if several {
            let y = 48 + 22 * i as i32;
            legend_area.draw(&PathElement::new(
                vec![(4, y), (28, y)],
                color.stroke_width(3),
            ))?;
            legend_area.draw(&Text::new(
                label,
                (34, y),
                legend_font.pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reclaimlab_core::compare::{Comparison, Row};
    use reclaimlab_core::sweep::Point;

    fn point(cpus: &str, d: f64) -> Point {
        Point {
            at: vec![("machine.cpus".into(), cpus.into())],
            comparison: Comparison {
                before: "b".into(),
                after: "a".into(),
                throughput_unit: "x".into(),
                rows: vec![Row {
                    metric: "tlb_shootdowns".into(),
                    before: 100.0,
                    after: 100.0 + d,
                    delta: d,
                    delta_pct: Some(d),
                    significant: true,
                    assessed: true,
                }],
                end_methods: None,
                notes: Vec::new(),
                differences: vec![],
            },
        }
    }

    #[test]
    fn writes_an_svg_panel_per_metric() {
        let dir = std::env::temp_dir().join(format!("rl-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.svg");
        sweep_plot(
            &[point("2", -10.0), point("4", -40.0), point("8", -60.0)],
            "7.0 vs 6.18",
            &p,
        )
        .unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..50]);
        assert!(
            svg.contains("tlb_shootdowns: delta % vs machine.cpus, 7.0 vs 6.18 (lower is better)")
        );
        assert!(svg.contains("machine.cpus (log2 scale)"));
        assert!(!svg.contains("throughput: delta"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn colours_follow_the_better_direction() {
        assert_eq!(change_colour("tlb_shootdowns", "", -5.0), BETTER);
        assert_eq!(change_colour("tlb_shootdowns", "", 5.0), WORSE);
        assert_eq!(change_colour("throughput", "bogo_ops_per_sec", 5.0), BETTER);
        assert_eq!(change_colour("throughput", "reclaim_seconds", 5.0), WORSE);
        assert_eq!(change_colour("pgsteal_anon", "", 5.0), NEUTRAL);
    }

    #[test]
    fn percent_labels() {
        assert_eq!(pct_label(-0.001, 1.0), "+0.00%");
        assert_eq!(pct_label(0.4, 1.5), "+0.40%");
        assert_eq!(pct_label(-12.34, 5.0), "-12.3%");
        assert_eq!(pct_label(40.0, 100.0), "+40%");
    }

    #[test]
    fn format_by_extension() {
        assert_eq!(Format::of(Path::new("a/b.svg")).unwrap(), Format::Svg);
        assert_eq!(Format::of(Path::new("B.PNG")).unwrap(), Format::Png);
        for bad in ["x.pdf", "x", "svg"] {
            let e = Format::of(Path::new(bad)).unwrap_err().to_string();
            assert!(e.contains(".svg or .png"), "{e}");
        }
    }
}

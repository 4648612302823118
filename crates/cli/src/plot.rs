//! SVG plots of a sweep: one panel per metric, its delta (%) against the first varied key,
//! one line per combination of the other keys.

use crate::sweep::Point;
use anyhow::{Context, Result};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

const METRICS: &[&str] = &[
    "throughput",
    "tlb_shootdowns",
    "function_call_interrupts",
    "pgsteal_anon",
];

pub fn sweep_svg(points: &[Point], path: &Path) -> Result<()> {
    let Some(first) = points.first() else {
        return Ok(());
    };
    let xkey = first.at[0].0.clone();
    // x position: the value if numeric, else its index in the sweep.
    let mut xs: Vec<String> = Vec::new();
    for p in points {
        if !xs.contains(&p.at[0].1) {
            xs.push(p.at[0].1.clone());
        }
    }
    let numeric = xs.iter().all(|x| x.parse::<f64>().is_ok());
    let xpos = |v: &str| -> f64 {
        if numeric {
            v.parse().unwrap()
        } else {
            xs.iter().position(|x| x == v).unwrap() as f64
        }
    };
    let metrics: Vec<&str> = METRICS
        .iter()
        .copied()
        .filter(|m| {
            points
                .iter()
                .any(|p| p.comparison.rows.iter().any(|r| r.metric == *m))
        })
        .collect();
    let root = SVGBackend::new(path, (900, 320 * metrics.len().max(1) as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((metrics.len().max(1), 1));
    for (panel, metric) in panels.iter().zip(&metrics) {
        // series label (other axes) -> [(x, delta%)]
        let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for p in points {
            let Some(r) = p.comparison.rows.iter().find(|r| r.metric == *metric) else {
                continue;
            };
            let Some(d) = r.delta_pct else { continue };
            let label: Vec<String> = p.at[1..].iter().map(|(k, v)| format!("{k}={v}")).collect();
            series
                .entry(label.join(" "))
                .or_default()
                .push((xpos(&p.at[0].1), d));
        }
        let all: Vec<(f64, f64)> = series.values().flatten().copied().collect();
        if all.is_empty() {
            continue;
        }
        let (xmin, xmax) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), (x, _)| {
            (a.min(*x), b.max(*x))
        });
        let (ymin, ymax) = all
            .iter()
            .fold((0.0f64, 0.0f64), |(a, b), (_, y)| (a.min(*y), b.max(*y)));
        let pad = ((ymax - ymin) * 0.1).max(1.0);
        let xr = if xmax > xmin {
            xmin..xmax
        } else {
            xmin - 1.0..xmax + 1.0
        };
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{metric}: delta (%) vs {xkey}"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(xr, (ymin - pad)..(ymax + pad))?;
        chart
            .configure_mesh()
            .x_desc(xkey.as_str())
            .y_desc("delta %")
            .draw()?;
        for (i, (label, mut pts)) in series.into_iter().enumerate() {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let color = Palette99::pick(i).to_rgba();
            let name = if label.is_empty() {
                metric.to_string()
            } else {
                label
            };
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Point;
    use reclaimlab_core::compare::{Comparison, Row};

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
                }],
            },
        }
    }

    #[test]
    fn writes_an_svg_panel_per_metric() {
        let dir = std::env::temp_dir().join(format!("rl-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.svg");
        sweep_svg(
            &[point("2", -10.0), point("4", -40.0), point("8", -60.0)],
            &p,
        )
        .unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..50]);
        assert!(svg.contains("tlb_shootdowns: delta (%) vs machine.cpus"));
        assert!(!svg.contains("throughput: delta"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

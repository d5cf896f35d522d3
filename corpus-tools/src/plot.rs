//! Curves as SVG: the pruner's (recall retention against compression) and
//! the judgment-budget sweep's (Hit@1 and judged recall against candidates
//! judged), one line per strategy or system. SVG, not PNG: the viewer draws
//! the labels in its own fonts (no font file to find) and no image codec
//! is compiled in (#67 row 6: ≈ 48 s of CPU of a cold build).

use anyhow::{Context, Result};
use plotters::prelude::*;
use std::path::Path;
use treenav::eval::prune_curve::Curve;

/// One chart: named lines of (x, y) points.
pub struct Panel {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub x_range: std::ops::Range<f64>,
    pub y_range: std::ops::Range<f64>,
    pub lines: Vec<(String, Vec<(f64, f64)>)>,
}

/// Draws panels side by side into one SVG (800×600 each), written through
/// a temporary file and a rename.
pub fn draw(panels: &[Panel], path: &Path) -> Result<()> {
    let width = 800 * panels.len().max(1) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 600)).into_drawing_area();
        root.fill(&WHITE).context("drawing the plot")?;
        let areas = root.split_evenly((1, panels.len().max(1)));
        for (panel, area) in panels.iter().zip(&areas) {
            draw_panel(panel, area)?;
        }
        root.present().context("drawing the plot")?;
    }
    treenav::files::atomic::write(path, svg.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

fn draw_panel(
    panel: &Panel,
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
) -> Result<()> {
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(20)
        .caption(&panel.title, ("sans-serif", 22))
        .x_label_area_size(45)
        .y_label_area_size(60);
    let mut chart = builder
        .build_cartesian_2d(panel.x_range.clone(), panel.y_range.clone())
        .context("drawing the plot")?;
    chart
        .configure_mesh()
        .x_desc(panel.x_desc.as_str())
        .y_desc(panel.y_desc.as_str())
        .draw()
        .context("drawing the plot")?;
    let colors = [RED, BLUE, GREEN, BLACK, MAGENTA, CYAN];
    for (i, (name, points)) in panel.lines.iter().enumerate() {
        let color = colors[i % colors.len()];
        let mut pts = points.clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let series = chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .context("drawing the plot")?;
        series.label(name.clone()).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
        });
        chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
            .context("drawing the plot")?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .label_font(("sans-serif", 16))
        .draw()
        .context("drawing the plot")?;
    Ok(())
}

/// The pruner's curve: recall retention (y) against compression (x), one
/// line per strategy, zoomed on the retention range the curves use.
pub fn curve_svg(curve: &Curve, title: &str, path: &Path) -> Result<()> {
    let low = curve
        .points
        .iter()
        .map(|p| p.recall_retention)
        .fold(1.0f64, f64::min);
    let y_min = ((low - 0.05) * 20.0).floor().clamp(0.0, 18.0) / 20.0;
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for p in &curve.points {
        let point = (p.compression, p.recall_retention);
        match lines.iter_mut().find(|(n, _)| n == p.strategy) {
            Some((_, pts)) => pts.push(point),
            None => lines.push((p.strategy.to_string(), vec![point])),
        }
    }
    let panel = Panel {
        title: title.to_string(),
        x_desc: "compression (share of retrieved chunks dropped)".into(),
        y_desc: "recall retention".into(),
        x_range: 0.0..1.0,
        y_range: y_min..1.01,
        lines,
    };
    draw(&[panel], path)
}

/// The judgment-budget sweep: document Hit@1 and the gold's recall among
/// the judged candidates (y) against candidates judged per query (x), one
/// line per system.
pub fn sweep_svg(
    budgets: &[treenav::eval::sweep::BudgetReport],
    title: &str,
    path: &Path,
) -> Result<()> {
    let x_max = budgets.iter().map(|b| b.budget).max().unwrap_or(1) as f64 * 1.05;
    let series = |f: &dyn Fn(&treenav::eval::bench::SystemReport) -> f64| {
        treenav::eval::sweep::SYSTEMS
            .iter()
            .map(|name| {
                let pts = budgets
                    .iter()
                    .filter_map(|b| b.systems.get(*name))
                    .map(|s| (s.candidates_judged, f(s)))
                    .collect();
                (name.to_string(), pts)
            })
            .collect::<Vec<_>>()
    };
    let panels = [
        Panel {
            title: format!("{title}: document Hit@1"),
            x_desc: "candidates judged per query".into(),
            y_desc: "document Hit@1".into(),
            x_range: 0.0..x_max,
            y_range: 0.0..1.01,
            lines: series(&|s| s.document.hit_at_1),
        },
        Panel {
            title: format!("{title}: gold among judged"),
            x_desc: "candidates judged per query".into(),
            y_desc: "recall of gold documents among the judged".into(),
            x_range: 0.0..x_max,
            y_range: 0.0..1.01,
            lines: series(&|s| s.document.judged_recall.unwrap_or(0.0)),
        },
    ];
    draw(&panels, path)
}

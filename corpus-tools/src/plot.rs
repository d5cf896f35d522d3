//! The pruner's curve as a PNG: recall retention (y) against compression
//! (x), one line per strategy.

use anyhow::{Context, Result};
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use treenav_eval::prune_curve::Curve;

/// Fonts tried for the labels when --font is not given.
const FONTS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

/// Registers a font for the labels; false when none is found (the plot is
/// then drawn without text).
fn register_font(font: Option<&Path>) -> Result<bool> {
    let candidates: Vec<PathBuf> = match font {
        Some(f) => vec![f.to_path_buf()],
        None => FONTS.iter().map(PathBuf::from).collect(),
    };
    for path in candidates {
        if let Ok(bytes) = std::fs::read(&path) {
            // plotters keeps registered fonts for the life of the process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if register_font_bytes(bytes) {
                return Ok(true);
            }
        } else if font.is_some() {
            anyhow::bail!("cannot read font {}", path.display());
        }
    }
    Ok(false)
}

fn register_font_bytes(bytes: &'static [u8]) -> bool {
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
}

/// Draws the curve to `path` (800×600 PNG).
pub fn png(curve: &Curve, title: &str, path: &Path, font: Option<&Path>) -> Result<()> {
    let text = register_font(font)?;
    if !text {
        eprintln!(
            "no font found (use --font FILE.ttf): the plot has no labels; the CSV has the numbers"
        );
    }
    let root = BitMapBackend::new(path, (800, 600)).into_drawing_area();
    root.fill(&WHITE).context("drawing the plot")?;
    let mut builder = ChartBuilder::on(&root);
    builder.margin(20);
    if text {
        builder
            .caption(title, ("sans-serif", 22))
            .x_label_area_size(45)
            .y_label_area_size(60);
    }
    // Zoom on the retention range the curves use.
    let low = curve
        .points
        .iter()
        .map(|p| p.recall_retention)
        .fold(1.0f64, f64::min);
    let y_min = ((low - 0.05) * 20.0).floor().clamp(0.0, 18.0) / 20.0;
    let mut chart = builder
        .build_cartesian_2d(0.0f64..1.0f64, y_min..1.01f64)
        .context("drawing the plot")?;
    let mut mesh = chart.configure_mesh();
    if text {
        mesh.x_desc("compression (share of retrieved chunks dropped)")
            .y_desc("recall retention");
    } else {
        mesh.disable_x_axis().disable_y_axis();
    }
    mesh.draw().context("drawing the plot")?;
    let colors = [RED, BLUE, GREEN, BLACK, MAGENTA, CYAN];
    let mut names: Vec<&str> = Vec::new();
    for p in &curve.points {
        if !names.contains(&p.strategy) {
            names.push(p.strategy);
        }
    }
    for (i, name) in names.iter().enumerate() {
        let color = colors[i % colors.len()];
        let mut pts: Vec<(f64, f64)> = curve
            .points
            .iter()
            .filter(|p| p.strategy == *name)
            .map(|p| (p.compression, p.recall_retention))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let series = chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .context("drawing the plot")?;
        if text {
            let label = name.to_string();
            series.label(label).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        }
        chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
            .context("drawing the plot")?;
    }
    if text {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerLeft)
            .label_font(("sans-serif", 16))
            .draw()
            .context("drawing the plot")?;
    }
    root.present()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

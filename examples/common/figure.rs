//! SVG figures with plotters: panels of lines with optional bands (interquartile ranges,
//! mean ± sd), on linear or logarithmic axes. SVG backend only: text is left to the viewer's
//! fonts, so nothing here needs fontconfig or freetype.

use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

/// One point of a series; `band` is drawn as a shaded area around the line.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub band: Option<(f64, f64)>,
}

impl Point {
    pub fn new(x: f64, y: f64) -> Self {
        Point { x, y, band: None }
    }

    pub fn with_band(x: f64, y: f64, lower: f64, upper: f64) -> Self {
        Point {
            x,
            y,
            band: Some((lower, upper)),
        }
    }
}

/// A named series of points.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
    pub draw: Draw,
    /// A dashed line (with [`Legend::Outside`]): sets apart a curve that runs on top of another.
    pub dashed: bool,
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Draw {
    /// A line with a marker at every point (few points: results against ε).
    #[default]
    LineAndMarkers,
    /// Markers only (points that do not form a curve).
    Markers,
    /// A plain line (many points: a density).
    Line,
}

/// One plot: its series, axes and optional horizontal guides.
#[derive(Clone, Debug, Default)]
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub log_y: bool,
    /// Fixed y range; otherwise the data's (bands included), with a margin.
    pub y_range: Option<(f64, f64)>,
    pub series: Vec<Series>,
    /// Horizontal lines with a legend entry (none when the name is empty), e.g. nominal levels.
    pub guides: Vec<(String, f64)>,
    /// A shaded horizontal strip with a legend entry, e.g. a target interval.
    pub target: Option<(String, f64, f64)>,
    /// Where the legend goes, clear of the data.
    pub legend: Legend,
}

/// Legend corner.
#[derive(Clone, Copy, Debug, Default)]
pub enum Legend {
    #[default]
    UpperRight,
    LowerRight,
    UpperLeft,
    LowerLeft,
    MiddleRight,
    /// In a strip right of the plot, never over the data.
    Outside,
}

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Writes `panels` as one SVG, `columns` panels per row, each `panel_size` pixels.
pub fn write_svg(
    path: &Path,
    panels: &[Panel],
    columns: usize,
    panel_size: (u32, u32),
) -> Result<(), String> {
    if panels.is_empty() || columns == 0 {
        return Err("a figure needs at least one panel and one column".into());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let columns = columns.min(panels.len());
    let rows = panels.len().div_ceil(columns);
    let size = (panel_size.0 * columns as u32, panel_size.1 * rows as u32);
    let root = SVGBackend::new(path, size).into_drawing_area();
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    for (area, panel) in root.split_evenly((rows, columns)).iter().zip(panels) {
        draw_panel(area, panel).map_err(|e| fail(&e))?;
    }
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Width of the legend strip of [`Legend::Outside`].
const KEY_WIDTH: u32 = 118;

fn draw_panel(area: &Area, panel: &Panel) -> DrawResult {
    if matches!(panel.legend, Legend::Outside) {
        let width = area.dim_in_pixel().0;
        let (plot, key) = area.split_horizontally(width.saturating_sub(KEY_WIDTH));
        draw_key(&key, panel)?;
        return draw_plot(&plot, panel);
    }
    draw_plot(area, panel)
}

/// The legend of [`Legend::Outside`]: one row per series (its line and marker as drawn), then
/// the guides, top-aligned with the plot.
fn draw_key(area: &Area, panel: &Panel) -> DrawResult {
    let font = ("sans-serif", 11).into_font();
    let mut y = 40;
    for (i, series) in panel.series.iter().enumerate() {
        let style = SeriesStyle::of(i, series);
        if series.draw != Draw::Markers {
            let path = [(4, y), (30, y)];
            if style.dashed {
                area.draw(&PathElement::new(
                    [(4, y), (11, y)],
                    style.colour.stroke_width(2),
                ))?;
                area.draw(&PathElement::new(
                    [(16, y), (23, y)],
                    style.colour.stroke_width(2),
                ))?;
            } else {
                area.draw(&PathElement::new(path, style.colour.stroke_width(2)))?;
            }
        }
        if series.draw != Draw::Line {
            style.draw_marker_px(area, (17, y))?;
        }
        area.draw(&Text::new(series.name.clone(), (36, y - 6), font.clone()))?;
        y += 18;
    }
    for (name, _) in panel.guides.iter().filter(|g| !g.0.is_empty()) {
        area.draw(&PathElement::new(
            [(4, y), (30, y)],
            BLACK.mix(0.6).stroke_width(1),
        ))?;
        area.draw(&Text::new(name.clone(), (36, y - 6), font.clone()))?;
        y += 18;
    }
    Ok(())
}

/// Colour, marker and dash of the i-th series: neighbours differ in colour and marker, and a
/// series that runs on top of another is drawn dashed, so close curves (TA and DDP) stay
/// distinguishable in print and for colour-blind readers.
#[derive(Clone, Copy)]
struct SeriesStyle {
    colour: RGBColor,
    marker: usize,
    dashed: bool,
}

impl SeriesStyle {
    fn of(i: usize, series: &Series) -> Self {
        SeriesStyle {
            colour: COLOURS[i % COLOURS.len()],
            marker: i % 4,
            dashed: series.dashed,
        }
    }

    /// The marker at pixel `at` of `area`.
    fn draw_marker_px(self, area: &Area, at: (i32, i32)) -> DrawResult {
        let fill = self.colour.filled();
        match self.marker {
            0 => area.draw(&Circle::new(at, 3, fill)),
            1 => area.draw(&TriangleMarker::new(at, 4, fill)),
            2 => area.draw(&Rectangle::new(
                [(at.0 - 3, at.1 - 3), (at.0 + 3, at.1 + 3)],
                fill,
            )),
            _ => area.draw(&Cross::new(at, 4, self.colour.stroke_width(2))),
        }
    }
}

fn draw_plot(area: &Area, panel: &Panel) -> DrawResult {
    let (x_lo, x_hi) = padded_range(
        panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.x)),
        panel.log_x,
    );
    let (y_lo, y_hi) = panel.y_range.unwrap_or_else(|| {
        let ys = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .flat_map(|p| [Some(p.y), p.band.map(|b| b.0), p.band.map(|b| b.1)])
            .flatten()
            .chain(panel.guides.iter().map(|g| g.1));
        padded_range(ys, panel.log_y)
    });
    // On a log x axis (ε) the ticks are the data's own x values: plotters' automatic log ticks
    // skip values below 1.
    let mut x_ticks: Vec<f64> = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    x_ticks.sort_by(f64::total_cmp);
    x_ticks.dedup();
    let log_x = || (x_lo..x_hi).log_scale().with_key_points(x_ticks.clone());
    // Within one decade plotters' log axis labels no tick at all: such a range reads better on
    // a linear axis.
    let log_y = panel.log_y && y_hi / y_lo >= 10.0;
    match (panel.log_x, log_y) {
        (true, true) => draw_on(area, panel, log_x(), (y_lo..y_hi).log_scale()),
        (true, false) => draw_on(area, panel, log_x(), y_lo..y_hi),
        (false, true) => draw_on(area, panel, x_lo..x_hi, (y_lo..y_hi).log_scale()),
        (false, false) => draw_on(area, panel, x_lo..x_hi, y_lo..y_hi),
    }
}

/// The data's range with a margin (multiplicative on a log axis). Non-positive values cannot
/// sit on a log axis and are left out of its range.
fn padded_range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && (!log || *v > 0.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return if log { (0.1, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        (lo / 1.25, hi * 1.25)
    } else {
        let pad = if hi > lo { 0.05 * (hi - lo) } else { 0.5 };
        (lo - pad, hi + pad)
    }
}

/// Short tick labels: 0.5, 1, 2, 1000, 1e6.
fn tick(v: &f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e5).contains(&a) {
        format!("{v:.0e}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn draw_on<X, Y>(area: &Area, panel: &Panel, x: X, y: Y) -> DrawResult
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc(panel.x_label.as_str())
        .y_desc(panel.y_label.as_str())
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .light_line_style(WHITE.mix(0.0))
        .label_style(("sans-serif", 12))
        .draw()?;
    if let Some((name, lo, hi)) = &panel.target {
        let (x_lo, x_hi) = (chart.x_range().start, chart.x_range().end);
        let fill = RGBColor(160, 210, 160).mix(0.5);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x_lo, *lo), (x_hi, *hi)],
                fill.filled(),
            )))?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], fill.filled()));
    }
    for (name, level) in &panel.guides {
        let (x_lo, x_hi) = (chart.x_range().start, chart.x_range().end);
        let style = BLACK.mix(0.6).stroke_width(1);
        let drawn = chart.draw_series(LineSeries::new([(x_lo, *level), (x_hi, *level)], style))?;
        // An unnamed guide shares the legend entry of the one before it.
        if !name.is_empty() {
            drawn
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], style));
        }
    }
    let outside = matches!(panel.legend, Legend::Outside);
    for (i, series) in panel.series.iter().enumerate() {
        let style = SeriesStyle::of(i, series);
        let colour = style.colour;
        let banded: Vec<(f64, f64, f64)> = series
            .points
            .iter()
            .filter_map(|p| p.band.map(|(lo, hi)| (p.x, lo, hi)))
            .collect();
        if banded.len() >= 2 {
            let outline: Vec<(f64, f64)> = banded
                .iter()
                .map(|&(x, _, hi)| (x, hi))
                .chain(banded.iter().rev().map(|&(x, lo, _)| (x, lo)))
                .collect();
            chart.draw_series(std::iter::once(Polygon::new(outline, colour.mix(0.12))))?;
        }
        let line: Vec<(f64, f64)> = series.points.iter().map(|p| (p.x, p.y)).collect();
        if series.draw != Draw::Markers {
            let drawn = if style.dashed && outside {
                chart.draw_series(DashedLineSeries::new(
                    line.clone(),
                    7,
                    5,
                    colour.stroke_width(2),
                ))?
            } else {
                chart.draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))?
            };
            if !outside {
                drawn.label(series.name.as_str()).legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2))
                });
            }
        }
        if series.draw != Draw::Line {
            if outside {
                let fill = colour.filled();
                let points = line.iter().copied();
                match style.marker {
                    0 => chart.draw_series(points.map(|c| Circle::new(c, 3, fill)))?,
                    1 => chart.draw_series(points.map(|c| TriangleMarker::new(c, 4, fill)))?,
                    2 => {
                        chart.draw_series(points.map(|c| {
                            EmptyElement::at(c) + Rectangle::new([(-3, -3), (3, 3)], fill)
                        }))?
                    }
                    _ => chart
                        .draw_series(points.map(|c| Cross::new(c, 4, colour.stroke_width(2))))?,
                };
            } else {
                let markers = chart.draw_series(
                    line.iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, colour.filled())),
                )?;
                if series.draw == Draw::Markers {
                    markers
                        .label(series.name.as_str())
                        .legend(move |(x, y)| Circle::new((x + 8, y), 3, colour.filled()));
                }
            }
        }
    }
    if outside {
        return Ok(());
    }
    chart
        .configure_series_labels()
        .position(match panel.legend {
            Legend::UpperRight => SeriesLabelPosition::UpperRight,
            Legend::LowerRight => SeriesLabelPosition::LowerRight,
            Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
            Legend::LowerLeft => SeriesLabelPosition::LowerLeft,
            Legend::MiddleRight => SeriesLabelPosition::MiddleRight,
            Legend::Outside => unreachable!("drawn by draw_key"),
        })
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 11))
        .draw()?;
    Ok(())
}

//! Exporting the timeline (feature `trace-export`): Chrome trace-event JSON (Perfetto,
//! chrome://tracing) with serde_json, and SVG plots with plotters.

use std::path::Path;

use serde_json::{json, Value};

use super::trace::{Event, Trace};
use crate::types::error::{Error, Result};

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| Error::Io {
        what: format!("writing {}", path.display()),
        source,
    })
}

impl Trace {
    /// Chrome trace-event JSON: a counter track per memory kind (`in use`, `reserved`), one for
    /// the totals with the budget, and an instant event per entry with its label and bytes.
    /// Opens in <https://ui.perfetto.dev> and chrome://tracing.
    pub fn to_chrome_json(&self) -> String {
        let us = |ns: u64| ns as f64 / 1000.0;
        let mut out: Vec<Value> = vec![
            json!({"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
                   "args": {"name": format!("vramkit: {}", self.device)}}),
            json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": 1,
                   "args": {"name": "memory events"}}),
        ];
        let total = |e: &Event| {
            let mut args = json!({"in use": e.in_use, "reserved": e.reserved});
            if let Some(b) = self.budget {
                args["budget"] = json!(b);
            }
            json!({"name": "memory (all kinds)", "ph": "C", "ts": us(e.at_ns), "pid": 1,
                   "args": args})
        };
        if let Some(first) = self.events.first() {
            out.push(total(&Event {
                at_ns: 0,
                ..first.clone()
            }));
        }
        for e in &self.events {
            out.push(json!({
                "name": format!("{:?} memory", e.kind),
                "ph": "C", "ts": us(e.at_ns), "pid": 1,
                "args": {"in use": e.kind_in_use, "reserved": e.kind_reserved},
            }));
            out.push(total(e));
            out.push(json!({
                "name": e.what.name(), "cat": "memory", "ph": "i", "s": "t",
                "ts": us(e.at_ns), "pid": 1, "tid": 1,
                "args": {"label": e.label, "bytes": e.bytes, "kind": format!("{:?}", e.kind)},
            }));
        }
        json!({
            "traceEvents": out,
            "displayTimeUnit": "ms",
            "otherData": {"dropped events": self.dropped, "device": self.device},
        })
        .to_string()
    }

    /// Writes [`to_chrome_json`](Self::to_chrome_json) to `path`.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn write_chrome_json(&self, path: impl AsRef<Path>) -> Result<()> {
        write(path.as_ref(), &self.to_chrome_json())
    }

    /// An SVG plot of memory over time: reserved and in-use bytes (all kinds) as steps, and the
    /// budget as a line.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a size below 200×150.
    pub fn to_svg(&self, width: u32, height: u32) -> Result<String> {
        use plotters::prelude::*;
        if width < 200 || height < 150 {
            return Err(Error::InvalidParameter {
                name: "plot size",
                value: format!("{width}x{height}"),
                reason: "a plot needs at least 200×150 pixels",
            });
        }
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let ms = |ns: u64| ns as f64 / 1e6;
        let end = self.events.last().map_or(1.0, |e| ms(e.at_ns)).max(1e-3);
        let peak = self
            .events
            .iter()
            .map(|e| e.reserved)
            .chain(self.budget)
            .max()
            .unwrap_or(0);
        let top = (mib(peak) * 1.1).max(1.0);
        let mut svg = String::new();
        let drawn = (|| -> std::result::Result<(), Box<dyn std::error::Error>> {
            let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(
                    format!("vramkit memory: {}", self.device),
                    ("sans-serif", 16),
                )
                .margin(10)
                .x_label_area_size(35)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..end, 0.0..top)?;
            chart
                .configure_mesh()
                .x_desc("time (ms)")
                .y_desc("MiB")
                .draw()?;
            let steps = |f: &dyn Fn(&Event) -> u64| {
                let mut pts = vec![(0.0, 0.0)];
                let mut last = 0.0;
                for e in &self.events {
                    let (t, v) = (ms(e.at_ns), mib(f(e)));
                    pts.push((t, last));
                    pts.push((t, v));
                    last = v;
                }
                pts.push((end, last));
                pts
            };
            chart
                .draw_series(LineSeries::new(steps(&|e| e.reserved), &BLUE))?
                .label("reserved")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
            chart
                .draw_series(LineSeries::new(steps(&|e| e.in_use), &GREEN))?
                .label("in use")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], GREEN));
            if let Some(b) = self.budget {
                chart
                    .draw_series(LineSeries::new([(0.0, mib(b)), (end, mib(b))], &RED))?
                    .label("budget")
                    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
            }
            chart
                .configure_series_labels()
                .border_style(BLACK)
                .background_style(WHITE.mix(0.8))
                .draw()?;
            root.present()?;
            Ok(())
        })();
        drawn.map_err(|e| Error::Backend {
            message: format!("plotting failed: {e}"),
        })?;
        Ok(svg)
    }

    /// Writes [`to_svg`](Self::to_svg) (960×540) to `path`.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn write_svg(&self, path: impl AsRef<Path>) -> Result<()> {
        write(path.as_ref(), &self.to_svg(960, 540)?)
    }
}

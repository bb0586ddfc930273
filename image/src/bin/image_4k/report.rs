//! The end of a run: the table of frames (failures listed with their reasons, each file's
//! device), where the memory went, the frames each device made, the trace and plot files, the
//! JSON report, and the exit code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytesize::ByteSize;
use serde_json::{json, Value};
use vramkit::backend::Backend;
use vramkit::{Context, MemoryKind};
use vramkit_image::{frame_bytes, PixelFormat};

use crate::batch::{Done, Job};
use crate::{Args, Failure};

/// A file's name in the table and in messages.
fn input_name(job: &Job, i: usize) -> String {
    job.items[i]
        .input
        .as_ref()
        .map_or("test chart".into(), |p| p.display().to_string())
}

/// How many frames each of `n` devices wrote.
fn frames_per_device(job: &Job, n: usize) -> Vec<usize> {
    let mut count = vec![0; n];
    for (o, d) in job.outcomes.iter().zip(&job.device_of) {
        if let (Some(Ok(_)), Some(d)) = (o, d) {
            if let Some(c) = count.get_mut(*d) {
                *c += 1;
            }
        }
    }
    count
}

/// The JSON report: per file its input, output, device, sizes, tiles, seconds and error; per
/// device its name, frames and memory; the totals (peaks: the highest of any one device, each
/// against its own budget).
fn json_report<B: Backend>(job: &Job, devices: &[Arc<Context<B>>], code: u8) -> Value {
    let size = |s: [u32; 2]| json!({ "width": s[0], "height": s[1] });
    let files: Vec<Value> = job
        .items
        .iter()
        .zip(&job.outcomes)
        .zip(&job.device_of)
        .map(|((item, outcome), device)| {
            let mut v = json!({
                "input": item.input.as_ref().map(|p| p.display().to_string()),
                "output": item.output.display().to_string(),
                "device": device,
            });
            let fields = match outcome {
                Some(Ok(d)) => json!({
                    "written": true,
                    "input_size": size(d.size),
                    "output_size": size(d.out_size),
                    "bits": d.bits,
                    "output_bytes": d.file_bytes,
                    "tiles": d.report.tiles,
                    "tile": size(d.report.tile),
                    "seconds": d.report.seconds,
                    "warning": d.warning,
                    "error": null,
                }),
                Some(Err(f)) => json!({
                    "written": false,
                    "error": { "code": f.code(), "message": f.message() },
                }),
                None => json!({
                    "written": false,
                    "error": { "code": 1, "message": "not processed: an earlier failure stopped the run" },
                }),
            };
            if let (Some(v), Value::Object(f)) = (v.as_object_mut(), fields) {
                v.extend(f);
            }
            v
        })
        .collect();
    let written = job
        .outcomes
        .iter()
        .filter(|o| matches!(o, Some(Ok(_))))
        .count();
    let stats: Vec<_> = devices.iter().map(|c| c.stats()).collect();
    let names: Vec<String> = devices
        .iter()
        .map(|c| c.adapter_info().to_string())
        .collect();
    let frames = frames_per_device(job, devices.len());
    let per_device: Vec<Value> = (0..devices.len())
        .map(|d| {
            json!({
                "index": d,
                "device": names[d],
                "frames": frames[d],
                "peak_reserved_bytes": stats[d].peak_reserved,
                "peak_in_use_bytes": stats[d].peak_in_use,
                "budget_bytes": stats[d].budget,
            })
        })
        .collect();
    json!({
        "files": files,
        "devices": per_device,
        "totals": {
            "files": job.items.len(),
            "written": written,
            "failed": job.items.len() - written,
            "skipped_existing": job.skipped.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "seconds": job.seconds,
            "device": (!names.is_empty()).then(|| names.join("; ")),
            "peak_reserved_bytes": stats.iter().map(|s| s.peak_reserved).max(),
            "peak_in_use_bytes": stats.iter().map(|s| s.peak_in_use).max(),
            "budget_bytes": stats.first().and_then(|s| s.budget),
        },
        "exit_code": code,
    })
}

/// Where the memory went, for the last frame written.
fn resources<B: Backend>(
    out: &mut dyn Write,
    d: &Done,
    ctx: &Context<B>,
    header: &str,
) -> std::io::Result<()> {
    let b = |x: u64| ByteSize(x).to_string();
    let stats = ctx.stats();
    let [w, h] = d.size;
    let [ow, oh] = d.out_size;
    // RGBA8 bytes, twice that for a 16-bit frame.
    let host_frame = |w, h| b(frame_bytes(w, h, PixelFormat::Rgba8) * u64::from(d.bits / 8));
    let (frame_in, frame_out) = if d.bits == 16 {
        ("frame in (RGBA16, host)", "frame out (RGBA16, host)")
    } else {
        ("frame in (RGBA8, host)", "frame out (RGBA8, host)")
    };
    writeln!(out)?;
    for (what, bytes) in [
        (header, "bytes".to_string()),
        (frame_in, host_frame(w, h)),
        (frame_out, host_frame(ow, oh)),
        ("run buffers (host, peak)", b(d.report.host_bytes)),
        ("tile working set (device, plan)", b(d.report.planned_bytes)),
        (
            "staging (device, at most)",
            b(ctx.transfers().staging_capacity()),
        ),
        (
            "textures (device, peak)",
            b(stats.kind(MemoryKind::Texture).peak_reserved),
        ),
        ("peak reserved (device)", b(stats.peak_reserved)),
        ("peak in use (device)", b(stats.peak_in_use)),
        ("budget", stats.budget.map_or("none".into(), b)),
    ] {
        writeln!(out, "{what:<32} {bytes:>12}")?;
    }
    Ok(())
}

/// The table of frames, the resources, the frames per device, the failures and the files
/// written, to `out`.
fn table<B: Backend>(
    out: &mut dyn Write,
    job: &Job,
    devices: &[Arc<Context<B>>],
) -> std::io::Result<()> {
    if job.items.is_empty() {
        return writeln!(
            out,
            "nothing to do: every output exists ({} skipped with --skip-existing)",
            job.skipped.len()
        );
    }
    let width = (0..job.items.len())
        .map(|i| input_name(job, i).len())
        .max()
        .unwrap_or(0)
        .max(14);
    writeln!(
        out,
        "{:<width$} {:>12} {:>12} {:>8} {:>10} {:>9} {:>6}",
        "frame", "input", "output", "tiles", "tile", "time", "device"
    )?;
    for (i, outcome) in job.outcomes.iter().enumerate() {
        let name = input_name(job, i);
        match outcome {
            Some(Ok(d)) => writeln!(
                out,
                "{name:<width$} {:>12} {:>12} {:>8} {:>10} {:>8.2}s {:>6}",
                format!("{}x{}", d.size[0], d.size[1]),
                format!("{}x{}", d.out_size[0], d.out_size[1]),
                d.report.tiles,
                format!("{}x{}", d.report.tile[0], d.report.tile[1]),
                d.report.seconds,
                job.device_of[i].map_or("-".into(), |d| d.to_string())
            )?,
            Some(Err(f)) => writeln!(out, "{name:<width$} failed (exit code {})", f.code())?,
            None => writeln!(out, "{name:<width$} not processed")?,
        }
    }
    let done: Vec<(&Done, Option<usize>)> = job
        .outcomes
        .iter()
        .zip(&job.device_of)
        .filter_map(|(o, d)| Some((o.as_ref()?.as_ref().ok()?, *d)))
        .collect();
    if let Some(&(d, Some(device))) = done.last() {
        if let Some(ctx) = devices.get(device) {
            let header = if devices.len() > 1 {
                format!("resource (device {device})")
            } else {
                "resource".into()
            };
            resources(out, d, ctx, &header)?;
        }
    }
    let n = done.len();
    if n > 0 {
        writeln!(
            out,
            "{n} frame(s) in {:.2} s: {:.2} s per frame, {:.3} frames/s",
            job.seconds,
            job.seconds / n as f64,
            n as f64 / job.seconds
        )?;
    }
    if devices.len() > 1 {
        for (d, frames) in frames_per_device(job, devices.len()).iter().enumerate() {
            writeln!(
                out,
                "device {d} ({}): {frames} frame(s)",
                devices[d].adapter_info()
            )?;
        }
    }
    for (item, o) in job.items.iter().zip(&job.outcomes) {
        if let Some(Ok(_)) = o {
            writeln!(out, "wrote {}", item.output.display())?;
        }
    }
    let failed = job.items.len() - n;
    if failed > 0 {
        writeln!(out, "failed: {failed} of {} file(s)", job.items.len())?;
        for (i, o) in job.outcomes.iter().enumerate() {
            match o {
                Some(Err(f)) => writeln!(out, "  {}", f.message())?,
                None => writeln!(
                    out,
                    "  {}: not processed: an earlier failure stopped the run",
                    input_name(job, i)
                )?,
                Some(Ok(_)) => {}
            }
        }
    }
    Ok(())
}

/// Prints the table (to stdout, or to stderr when the JSON report goes to stdout), writes the
/// trace, plot and JSON report, prints each failure to stderr, and returns the exit code: 0, or
/// that of the first file that failed.
///
/// # Errors
/// A trace, plot or report that cannot be written.
pub fn finish<B: Backend>(
    args: &Args,
    job: &Job,
    devices: &[Arc<Context<B>>],
) -> Result<u8, Failure> {
    let json_to_stdout = args.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let mut out: Box<dyn Write> = if json_to_stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let failed = |e: std::io::Error| Failure::Other(format!("cannot print the report: {e}"));
    table(&mut *out, job, devices).map_err(failed)?;
    for (d, ctx) in devices.iter().enumerate() {
        let Some(trace) = ctx.observe().stop_trace() else {
            continue;
        };
        if let Some(p) = &args.trace {
            let p = per_device(p, d, devices.len());
            trace.write_chrome_json(&p)?;
            let events = trace.events.len();
            writeln!(out, "wrote {} ({events} memory events)", p.display()).map_err(failed)?;
        }
        if let Some(p) = &args.plot {
            let p = per_device(p, d, devices.len());
            trace.write_svg(&p)?;
            writeln!(out, "wrote {}", p.display()).map_err(failed)?;
        }
    }
    let code = job
        .outcomes
        .iter()
        .find_map(|o| match o {
            Some(Err(f)) => Some(f.code()),
            None => Some(1),
            Some(Ok(_)) => None,
        })
        .unwrap_or(0);
    if let Some(p) = &args.json {
        let text = serde_json::to_string_pretty(&json_report(job, devices, code))
            .map_err(|e| Failure::Other(format!("cannot write the JSON report: {e}")))?;
        if json_to_stdout {
            println!("{text}");
        } else {
            std::fs::write(p, text + "\n")
                .map_err(|e| Failure::Output(format!("{}: cannot write: {e}", p.display())))?;
        }
    }
    for f in job
        .outcomes
        .iter()
        .flatten()
        .filter_map(|o| o.as_ref().err())
    {
        eprintln!("error: {}", f.message());
    }
    Ok(code)
}

/// The trace or plot file of device `d` of `n`: `path` itself for one device, else
/// `NAME.device<d>.EXT` beside it.
fn per_device(path: &Path, d: usize, n: usize) -> PathBuf {
    if n <= 1 {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map_or("trace".into(), |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}.device{d}.{}", ext.to_string_lossy()),
        None => format!("{stem}.device{d}"),
    };
    path.with_file_name(name)
}

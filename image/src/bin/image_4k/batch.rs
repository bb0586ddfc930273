//! A run over many files: what each input writes, the first frame decoded while the devices
//! open, and the workers that process the rest on one or several devices, recording each
//! file's outcome and device so that one bad file is listed and the others go on.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use vramkit::backend::Backend;
use vramkit::Context;
use vramkit_image::{test_chart, FrameReport, Op, Pipeline, PixelFormat, Rect};

use crate::ahead::Ahead;
use crate::early::{self, Early};
use crate::input::metadata::Metadata;
use crate::input::{self, InputLimits, Samples};
use crate::output::{self, OutFormat};
use crate::paths::{self, Existing};
use crate::{aspect, colour, walk, Args, Failure, Format};

/// One frame to make: its input (`None`: the built-in chart) and where its output goes.
#[derive(Clone)]
pub struct Item {
    pub input: Option<PathBuf>,
    pub output: PathBuf,
}

/// What a written frame was.
pub struct Done {
    /// Input size.
    pub size: [u32; 2],
    /// Bits a sample of the input and output frames (8 or 16).
    pub bits: u32,
    /// Output size.
    pub out_size: [u32; 2],
    /// How the pipeline ran it.
    pub report: FrameReport,
    /// Bytes of the output file.
    pub file_bytes: u64,
    /// What the user should know about the input or output (a JPEG without its end marker,
    /// alpha composited for JPEG).
    pub warning: Option<String>,
}

/// A file's outcome: `None` while (or if never) processed.
pub type Outcome = Option<Result<Done, Failure>>;

/// A decoded frame.
pub struct Frame {
    /// Width and height.
    pub size: [u32; 2],
    /// The decoded samples.
    pub samples: Samples,
    /// Its colour profile, EXIF and XMP, for the output.
    meta: Metadata,
    /// Where its profile's curve is not sRGB's: the conversions the chain runs between.
    working: Option<std::sync::Arc<colour::Working>>,
    /// What the user was told about the input (said on stderr as it was decoded).
    warning: Option<String>,
}

/// The run: its frames, their outcomes, and the first good frame, decoded while the devices
/// open ([`early::decode_first`]; `None` before, and when every input failed).
pub struct Job {
    pub chain: Vec<Op>,
    pub items: Vec<Item>,
    pub format: OutFormat,
    pub outcomes: Vec<Outcome>,
    /// The device (index in the run's devices) each file was run on; `None` for a file that
    /// never reached one (not processed, or failed to decode).
    pub device_of: Vec<Option<usize>>,
    pub first: Option<(usize, Frame)>,
    /// How many frames like the first the host's memory holds at once.
    pub held: usize,
    /// Outputs that exist, whose inputs were skipped (`--skip-existing`).
    pub skipped: Vec<PathBuf>,
    /// Wall time of the processing, seconds.
    pub seconds: f64,
}

impl From<Format> for PixelFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Rgba8 => PixelFormat::Rgba8,
            Format::Rgba32f => PixelFormat::Rgba32F,
        }
    }
}

/// The frame of `item`, decoded within `--max-pixels`.
pub fn load(item: &Item, max_pixels: u64) -> Result<Frame, Failure> {
    let Some(path) = &item.input else {
        return Ok(Frame {
            size: [3840, 2160],
            samples: Samples::Rgba8(test_chart(3840, 2160)),
            meta: Metadata::default(),
            working: None,
            warning: None,
        });
    };
    let limits = InputLimits {
        max_pixels,
        ..InputLimits::TOOL
    };
    let img = input::load(path, &limits).map_err(Failure::Input)?;
    let mut meta = img.meta;
    // A profile that makes the colour code panic is left out, not the run.
    let (working, colour) =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| colour::working(&mut meta)))
            .unwrap_or_else(|_| {
                meta.icc = None;
                (
                    None,
                    Some("its colour profile could not be read: left out".into()),
                )
            });
    let warning = match (img.warning, colour) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
    .map(|w| format!("{}: {w}", path.display()));
    if let Some(w) = &warning {
        eprintln!("warning: {w}");
    }
    Ok(Frame {
        size: img.size,
        samples: img.samples,
        meta,
        working,
        warning,
    })
}

/// The frames and outputs, checked (no frame decoded yet: [`early::decode_first`]).
///
/// # Errors
/// A usage error for outputs that would overwrite an input, each other or an earlier output,
/// or a `--out` file given for several inputs; an input error for a directory without images.
pub fn prepare(args: &Args, chain: Vec<Op>) -> Result<Job, Failure> {
    let found = walk::inputs(&args.inputs, args.recursive, &args.out).map_err(Failure::Input)?;
    for line in found.skipped_lines() {
        eprintln!("{line}");
    }
    let files: Vec<PathBuf> = found.files.iter().map(|i| i.path.clone()).collect();
    paths::check_out(&args.out).map_err(Failure::Usage)?;
    let named = OutFormat::from_path(&args.out).filter(|_| !args.out.is_dir());
    let (format, outputs) = match named {
        Some(by_name) => {
            if files.len() > 1 {
                return Err(Failure::Usage(format!(
                    "--out {} names one file, but there are {} inputs; give a directory",
                    args.out.display(),
                    files.len()
                )));
            }
            if let Some(f) = args.out_format.filter(|f| *f != by_name) {
                return Err(Failure::Usage(format!(
                    "--out-format {} disagrees with the extension of --out {}; drop one",
                    f.extension(),
                    args.out.display()
                )));
            }
            (by_name, vec![args.out.clone()])
        }
        None => {
            let format = args.out_format.unwrap_or(OutFormat::Png);
            let names = if files.is_empty() {
                vec![PathBuf::from(format!("test_chart.{}", format.extension()))]
            } else {
                paths::output_names(&found.files, format.extension())
            };
            (format, names.iter().map(|n| args.out.join(n)).collect())
        }
    };
    let existing = match (args.force, args.skip_existing) {
        (true, _) => Existing::Replace,
        (false, true) => Existing::Skip,
        (false, false) => Existing::Refuse,
    };
    // The built-in chart is made again identically: its output in a directory is replaced; an
    // --out file is treated as any output.
    let skip = if files.is_empty() {
        let exists = named.is_some() && std::fs::symlink_metadata(&outputs[0]).is_ok();
        match (exists, existing) {
            (true, Existing::Refuse) => {
                return Err(Failure::Usage(format!(
                    "{}: the output exists already; give --skip-existing to leave it, --force \
                     to replace it, or another --out",
                    outputs[0].display()
                )))
            }
            (true, Existing::Skip) => vec![true],
            _ => vec![false],
        }
    } else {
        paths::check_outputs(&files, &outputs, existing).map_err(Failure::Usage)?
    };
    let mut skipped = Vec::new();
    let mut items = Vec::with_capacity(outputs.len());
    for (i, (output, skip)) in outputs.into_iter().zip(skip).enumerate() {
        if skip {
            skipped.push(output);
        } else {
            items.push(Item {
                input: files.get(i).cloned(),
                output,
            });
        }
    }
    if let Some(first) = skipped.first() {
        eprintln!(
            "skipped {} input(s) whose output exists (--skip-existing), the first: {}",
            skipped.len(),
            first.display()
        );
    }
    Ok(Job {
        chain,
        device_of: vec![None; items.len()],
        outcomes: (0..items.len()).map(|_| None).collect(),
        skipped,
        items,
        format,
        first: None,
        held: 1,
        seconds: 0.0,
    })
}

/// Runs `frame` through the chain and writes the output of `item`.
fn make<B: Backend>(
    args: &Args,
    job: &Job,
    ctx: &Context<B>,
    item: &Item,
    frame: Frame,
) -> Result<Done, Failure> {
    let what = item
        .input
        .as_ref()
        .map_or("test chart".into(), |p| p.display().to_string());
    let pipeline = Pipeline::new(job.chain.clone(), frame.size)
        .map_err(|e| Failure::from(e).about(&what))?
        .with_working_format(args.format.into());
    // 16-bit inputs stay 16-bit: in, through the pipeline (RGBA32F between operations) and out.
    // A profile with its own curve runs in its working encoding, 16 bits, and comes back.
    let ran = match (&frame.working, &frame.samples) {
        (Some(w), samples) => {
            let wide = w
                .to_working(samples)
                .map_err(|m| Failure::Other(format!("{what}: {m}")))?;
            let (out, report) = pipeline
                .run_rgba16(ctx, &wide)
                .map_err(|e| Failure::from(e).about(&what))?;
            let out = w
                .back(&out, samples.bits())
                .map_err(|m| Failure::Other(format!("{what}: {m}")))?;
            Ok((out, report))
        }
        (None, Samples::Rgba8(rgba)) => pipeline
            .run(ctx, rgba)
            .map(|(out, report)| (Samples::Rgba8(out), report)),
        (None, Samples::Rgba16(rgba)) => pipeline
            .run_rgba16(ctx, rgba)
            .map(|(out, report)| (Samples::Rgba16(out), report)),
    };
    let (out, report) = ran.map_err(|e| Failure::from(e).about(&what))?;
    let out_size = pipeline.output_size();
    // The chart's output in a directory is replaced (see `prepare`).
    let named = OutFormat::from_path(&args.out).is_some() && !args.out.is_dir();
    let force = args.force || (item.input.is_none() && !named);
    let how = output::Encoding {
        format: job.format,
        quality: args.quality,
        background: args.background,
    };
    let warning = output::write(&item.output, &how, &frame.meta, &out, out_size, force)
        .map_err(|m| Failure::Output(format!("{}: {m}", item.output.display())))?
        .map(|w| format!("{what}: {w}"));
    if let Some(w) = &warning {
        eprintln!("warning: {w}");
    }
    let stretch = aspect::stretched(&job.chain, frame.size).map(|w| format!("{what}: {w}"));
    if let Some(w) = &stretch {
        eprintln!("warning: {w}");
    }
    let warning = [frame.warning, stretch, warning]
        .into_iter()
        .flatten()
        .reduce(|a, b| format!("{a}; {b}"));
    let file_bytes = std::fs::metadata(&item.output).map_or(0, |m| m.len());
    Ok(Done {
        size: frame.size,
        bits: frame.samples.bits(),
        out_size,
        report,
        file_bytes,
        warning,
    })
}

/// A device's first frame: its index, and the frame when it is decoded already.
type FirstFrame = (usize, Option<Frame>);

/// How many frames device `ctx` runs at once: as many as whole working sets fit its budget now,
/// at most `cap` (the device's share of the CPU cores, which decode and encode) and `left`.
///
/// # Errors
/// The device cannot say how many fit.
fn at_once<B: Backend>(
    args: &Args,
    job: &Job,
    ctx: &Context<B>,
    size: [u32; 2],
    cap: usize,
    left: usize,
) -> Result<usize, Failure> {
    Ok(match Pipeline::new(job.chain.clone(), size) {
        Ok(p) => {
            let p = p.with_working_format(args.format.into());
            let [fw, fh] = p.output_size();
            (ctx.memory().max_batch(p.tile_bytes(Rect::full(fw, fh)))? as usize)
                .clamp(1, cap.max(1))
                .min(left)
        }
        Err(_) => 1,
    })
}

/// Processes every frame of `job` on `devices`, all working at once, each running several
/// frames at once when its budget holds several working sets, and records each outcome and
/// device. Each device's workers take the next frame from one shared queue; device `d` starts
/// with the `d`-th frame (device 0 with the one decoded already), so that every device gets a
/// frame when there are as many. A lost device stops its frames not yet started; the other
/// devices go on.
///
/// # Errors
/// Only what stops the whole run: the output directory cannot be made, a device cannot say
/// how many frames fit.
pub fn process<B: Backend>(
    args: &Args,
    job: &mut Job,
    devices: &[Arc<Context<B>>],
    early: &Early,
) -> Result<(), Failure> {
    let Some((start_at, first)) = job.first.take() else {
        return Ok(());
    };
    let several = devices.len() > 1;
    for (d, ctx) in devices.iter().enumerate() {
        if args.trace.is_some() || args.plot.is_some() {
            ctx.observe().start_trace(1 << 20);
        }
        if several {
            eprintln!("device {d}: {}", ctx.adapter_info());
        } else {
            eprintln!("device: {}", ctx.adapter_info());
        }
    }
    for dir in job.items.iter().filter_map(|i| i.output.parent()) {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Failure::Output(format!("{}: cannot create: {e}", dir.display())))?;
        }
    }
    let frames = job.items.len();
    let bar = ProgressBar::new(frames as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_position(start_at as u64);
    let start = Instant::now();
    // Decoding and encoding run on the CPU, one frame a worker: each device gets its share of
    // the cores, and of the frames the host's memory holds (sized by the first frame).
    let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
    let held = job.held;
    let cap = cores.min(held) / devices.len();
    // Each device runs at least one frame.
    let most = cap.max(1) * devices.len();
    if held < cores && frames - start_at > most {
        eprintln!("at most {most} frame(s) at once: the host's memory holds no more");
    }
    let mut jobs = Vec::with_capacity(devices.len());
    for (d, ctx) in devices.iter().enumerate() {
        let n = at_once(args, job, ctx, first.size, cap, frames - start_at)?;
        match (n, several) {
            (1, _) => {}
            (n, false) => eprintln!("{n} frames at once"),
            (n, true) => eprintln!("device {d}: {n} frames at once"),
        }
        jobs.push(n);
    }
    // Each device's first frame, taken by the first of its workers to ask: device d's is the
    // d-th from `start_at`, device 0's already decoded. The rest come from `next`.
    let mut firsts: Vec<Mutex<Option<FirstFrame>>> = (0..devices.len())
        .map(|d| {
            Mutex::new(
                Some(start_at + d)
                    .filter(|&i| i < frames)
                    .map(|i| (i, None)),
            )
        })
        .collect();
    // The first frame's kernels, built ahead on each device that gets a frame (ahead.rs).
    let wide = first.working.is_some() || matches!(first.samples, Samples::Rgba16(_));
    let prepared = Pipeline::new(job.chain.clone(), first.size)
        .ok()
        .map(|p| p.with_working_format(args.format.into()));
    let ahead = Ahead::new(devices.len());
    let builds: Vec<usize> = (0..devices.len())
        .filter(|&d| prepared.is_some() && start_at + d < frames)
        .collect();
    for d in (0..devices.len()).filter(|d| !builds.contains(d)) {
        ahead.open(d);
    }
    firsts[0] = Mutex::new(Some((start_at, Some(first))));
    let next = AtomicUsize::new(start_at + devices.len());
    let stop: Vec<AtomicBool> = devices.iter().map(|_| AtomicBool::new(false)).collect();
    let record = Mutex::new((
        std::mem::take(&mut job.outcomes),
        std::mem::take(&mut job.device_of),
    ));
    let shared = &*job;
    // A frame decoded ahead (early.rs), or now.
    let decode = |i: usize| {
        early.take(i).unwrap_or_else(|| {
            let frame = load(&shared.items[i], args.max_pixels);
            log::debug!("frame {i} decoded{}", early::failed(&frame));
            frame
        })
    };
    let work = |d: usize| loop {
        let mine = firsts[d].lock().unwrap_or_else(|e| e.into_inner()).take();
        let (i, frame) = match mine {
            Some((i, Some(f))) => (i, Ok(f)),
            Some((i, None)) => (i, decode(i)),
            None => {
                // A stopped device takes no more frames: the others may still make them.
                if stop[d].load(Ordering::Relaxed) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= frames {
                    return;
                }
                (i, decode(i))
            }
        };
        let item = &shared.items[i];
        bar.set_message(item.output.display().to_string());
        let ran = frame.is_ok();
        let outcome = frame.and_then(|f| {
            ahead.wait(d);
            make(args, shared, &devices[d], item, f)
        });
        log::debug!("frame {i} done on device {d}");
        if matches!(outcome, Err(Failure::NoGpu(_))) {
            stop[d].store(true, Ordering::Relaxed);
        }
        {
            let mut r = record.lock().unwrap_or_else(|e| e.into_inner());
            r.0[i] = Some(outcome);
            r.1[i] = ran.then_some(d);
        }
        bar.inc(1);
    };
    std::thread::scope(|s| {
        for (&d, p) in builds.iter().zip(prepared.iter().cycle()) {
            let (ahead, ctx) = (&ahead, &devices[d]);
            let spawned =
                std::thread::Builder::new().spawn_scoped(s, move || ahead.build(d, p, wide, ctx));
            // Without a thread of its own, the first frame builds them as it runs.
            if spawned.is_err() {
                ahead.open(d);
            }
        }
        for (d, &n) in jobs.iter().enumerate() {
            for _ in 0..n {
                s.spawn(move || work(d));
            }
        }
    });
    bar.finish_and_clear();
    job.seconds = start.elapsed().as_secs_f64();
    (job.outcomes, job.device_of) = record.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(())
}

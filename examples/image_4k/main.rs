//! The 4K image tool: runs an operation chain on image files (or a built-in 4K test chart)
//! inside a device-memory budget, tiling frames that do not fit, and reports where the memory
//! went.
//!
//! `cargo run --release --example image_4k -- --budget 256MiB --out out`
//!
//! Everything that needs no device is checked first: the chain, the inputs (each decoded only
//! when its turn comes, but the first before a device is looked for) and the outputs, which
//! never overwrite an input.

mod input;
mod paths;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bytesize::ByteSize;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use vramkit::backend::Backend;
use vramkit::image::{frame_bytes, parse_chain, test_chart, Op, Pipeline, PixelFormat, Rect};
use vramkit::{Context, ContextDesc, Error};

use input::InputLimits;

#[derive(Parser, Debug)]
#[command(about = "Process 4K images on the GPU inside a memory budget", version)]
struct Args {
    /// PNG or JPEG files, or directories of them. None: a built-in 3840×2160 test chart.
    inputs: Vec<PathBuf>,
    /// Operation chain: linear, srgb, luma, blur:sigma=S, box:radius=R, resize:WxH[:area],
    /// adjust:brightness=B;contrast=C;gamma=G.
    #[arg(long, default_value = "linear,blur:sigma=3,resize:1920x1080:area,srgb")]
    ops: String,
    /// Format frames are held in between operations: rgba32f (full precision) or rgba8 (a
    /// quarter of the bytes, rounded to 8 bits after each operation).
    #[arg(long, value_enum, default_value_t = Format::Rgba32f)]
    format: Format,
    /// Device-memory budget, e.g. 256MiB or 1GiB. None: the device's limit.
    #[arg(long)]
    budget: Option<ByteSize>,
    /// Where the PNG outputs go.
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Write the memory timeline as Chrome trace-event JSON (open in ui.perfetto.dev).
    #[arg(long, value_name = "FILE.json")]
    trace: Option<PathBuf>,
    /// Plot memory over time, with the budget, as SVG.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Backend: wgpu (Vulkan, Metal, DX12; lavapipe without a GPU), or cuda (NVIDIA; a build
    /// with `--features cuda`).
    #[arg(long, default_value = "wgpu")]
    backend: String,
}

/// The working format, as the command line spells it.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Format {
    Rgba8,
    Rgba32f,
}

impl From<Format> for PixelFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Rgba8 => PixelFormat::Rgba8,
            Format::Rgba32f => PixelFormat::Rgba32F,
        }
    }
}

/// Exit codes a script can act on.
enum Failure {
    Usage(String),
    Input(String),
    Budget(String),
    NoGpu(String),
    Other(String),
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Input(_) => 3,
            Failure::Budget(_) => 4,
            Failure::NoGpu(_) => 5,
            Failure::Other(_) => 1,
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        match e {
            Error::OverBudget {
                requested, limit, ..
            } => Failure::Budget(format!(
                "the budget of {} is too small even for the smallest tile: at least {} is needed \
                 (try --budget {})",
                ByteSize(limit),
                ByteSize(requested),
                ByteSize(requested.next_multiple_of(1 << 20))
            )),
            Error::NoAdapter { .. } | Error::DeviceLost { .. } => Failure::NoGpu(e.to_string()),
            Error::HostOutOfMemory { .. } => Failure::Other(e.to_string()),
            Error::InvalidParameter { .. }
            | Error::ShapeMismatch { .. }
            | Error::TooLarge { .. } => Failure::Usage(e.to_string()),
            Error::Io { .. } => Failure::Input(e.to_string()),
            e => Failure::Other(e.to_string()),
        }
    }
}

/// An input frame: its name (which names its output) and its RGBA8 pixels.
struct Frame {
    name: String,
    size: [u32; 2],
    rgba: Vec<u8>,
}

/// What was checked before a device is looked for.
struct Job {
    chain: Vec<Op>,
    files: Vec<PathBuf>,
    first: Frame,
}

/// The frame of input `i` (the built-in chart when there are no inputs).
fn frame_at(files: &[PathBuf], i: usize) -> Result<Frame, Failure> {
    match files.get(i) {
        Some(f) => {
            let img = input::load(f, &InputLimits::TOOL).map_err(Failure::Input)?;
            Ok(Frame {
                name: paths::output_name(f),
                size: img.size,
                rgba: img.rgba,
            })
        }
        None => Ok(Frame {
            name: "test_chart".into(),
            size: [3840, 2160],
            rgba: test_chart(3840, 2160),
        }),
    }
}

/// Checks the chain, the inputs, the outputs and the first frame.
fn prepare(args: &Args) -> Result<Job, Failure> {
    let chain = parse_chain(&args.ops)?;
    let files = paths::inputs(&args.inputs).map_err(Failure::Input)?;
    paths::check_outputs(&files, &args.out).map_err(Failure::Usage)?;
    let first = frame_at(&files, 0)?;
    Pipeline::new(chain.clone(), first.size)?;
    Ok(Job {
        chain,
        files,
        first,
    })
}

fn run(args: &Args) -> Result<(), Failure> {
    let backends: &[&str] = if cfg!(feature = "cuda") {
        &["wgpu", "cuda"]
    } else {
        &["wgpu"]
    };
    if !backends.contains(&args.backend.as_str()) {
        return Err(Failure::Usage(format!(
            "backend `{}` is not available in this build; use --backend wgpu{}",
            args.backend,
            if cfg!(feature = "cuda") {
                " or cuda"
            } else {
                " (or build with --features cuda for --backend cuda)"
            }
        )));
    }
    let job = prepare(args)?;
    let budget = args.budget.map(|b| b.as_u64());
    // Staging takes at most 1/8 of the budget (four buffers of 1/32), so frames keep the rest.
    let staging_chunk = budget.map_or(4 << 20, |b| (b / 32).clamp(64 << 10, 4 << 20) / 4096 * 4096);
    let desc = ContextDesc {
        budget,
        staging_chunk,
        staging_slots: 2,
        ..Default::default()
    };
    match args.backend.as_str() {
        #[cfg(feature = "cuda")]
        "cuda" => process(args, job, &Context::cuda(0, desc)?),
        _ => process(args, job, &Context::new(desc)?),
    }
}

/// Processes every input on `ctx`.
fn process<B: Backend>(args: &Args, job: Job, ctx: &Context<B>) -> Result<(), Failure> {
    let Job {
        chain,
        files,
        first,
    } = job;
    if args.trace.is_some() || args.plot.is_some() {
        ctx.start_trace(1 << 20);
    }
    eprintln!("device: {}", ctx.adapter_info());
    std::fs::create_dir_all(&args.out)
        .map_err(|e| Failure::Input(format!("{}: cannot create: {e}", args.out.display())))?;

    let bar = ProgressBar::new(files.len().max(1) as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let frames = files.len().max(1);
    // As many frames at once as whole working sets fit the budget now (at most 4).
    let whole = Pipeline::new(chain.clone(), first.size)?.with_working_format(args.format.into());
    let [fw, fh] = whole.output_size();
    let jobs = (ctx.max_batch(whole.tile_bytes(Rect::full(fw, fh)))? as usize)
        .clamp(1, 4)
        .min(frames);
    if jobs > 1 {
        eprintln!("{jobs} frames at once");
    }
    let next = AtomicUsize::new(1);
    let failed = AtomicBool::new(false);
    let rows = Mutex::new(Vec::new());
    let first = Mutex::new(Some(first));
    let work = || -> Result<(), Failure> {
        loop {
            let taken = first
                .lock()
                .map_err(|_| Failure::Other("a worker panicked".into()))?
                .take();
            let frame = match taken {
                Some(f) => f,
                None => {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= frames || failed.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                    frame_at(&files, i)?
                }
            };
            bar.set_message(frame.name.clone());
            let pipeline =
                Pipeline::new(chain.clone(), frame.size)?.with_working_format(args.format.into());
            let (out, report) = pipeline.run(ctx, &frame.rgba)?;
            let [ow, oh] = pipeline.output_size();
            let path = args.out.join(format!("{}.png", frame.name));
            image::save_buffer(&path, &out, ow, oh, image::ExtendedColorType::Rgba8)
                .map_err(|e| Failure::Input(format!("{}: cannot write: {e}", path.display())))?;
            rows.lock()
                .map_err(|_| Failure::Other("a worker panicked".into()))?
                .push((frame.name, frame.size, [ow, oh], report, path));
            bar.inc(1);
        }
    };
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                s.spawn(|| {
                    let r = work();
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(Failure::Other("a worker panicked".into())))
            })
            .collect::<Result<Vec<()>, Failure>>()
    })?;
    let mut rows = rows
        .into_inner()
        .map_err(|_| Failure::Other("a worker panicked".into()))?;
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    bar.finish_and_clear();
    let elapsed = start.elapsed().as_secs_f64();
    let stats = ctx.stats();

    let b = |x: u64| ByteSize(x).to_string();
    println!(
        "{:<14} {:>14} {:>14} {:>10} {:>8} {:>10}",
        "frame", "input", "output", "tiles", "tile", "time"
    );
    for (name, [w, h], [ow, oh], r, _) in &rows {
        println!(
            "{:<14} {:>14} {:>14} {:>10} {:>8} {:>9.2}s",
            name,
            format!("{w}x{h}"),
            format!("{ow}x{oh}"),
            r.tiles,
            format!("{}x{}", r.tile[0], r.tile[1]),
            r.seconds
        );
    }
    let Some((_, [w, h], [ow, oh], report, _)) = rows.last() else {
        return Err(Failure::Other("no frame was processed".into()));
    };
    println!();
    println!("{:<32} {:>12}", "resource", "bytes");
    println!(
        "{:<32} {:>12}",
        "frame in (RGBA8, host)",
        b(frame_bytes(*w, *h, PixelFormat::Rgba8))
    );
    println!(
        "{:<32} {:>12}",
        "frame out (RGBA8, host)",
        b(frame_bytes(*ow, *oh, PixelFormat::Rgba8))
    );
    println!(
        "{:<32} {:>12}",
        "run buffers (host, peak)",
        b(report.host_bytes)
    );
    println!(
        "{:<32} {:>12}",
        "tile working set (device, plan)",
        b(report.planned_bytes)
    );
    println!(
        "{:<32} {:>12}",
        "staging (device, at most)",
        b(ctx.staging_capacity())
    );
    println!("{:<32} {:>12}", "textures", b(0));
    println!(
        "{:<32} {:>12}",
        "peak reserved (device)",
        b(stats.peak_reserved)
    );
    println!(
        "{:<32} {:>12}",
        "peak in use (device)",
        b(stats.peak_in_use)
    );
    println!(
        "{:<32} {:>12}",
        "budget",
        stats.budget.map_or("none".into(), b)
    );
    println!(
        "{} frame(s) in {:.2} s: {:.2} s per frame, {:.3} frames/s",
        rows.len(),
        elapsed,
        elapsed / rows.len() as f64,
        rows.len() as f64 / elapsed
    );
    for (_, _, _, _, path) in &rows {
        println!("wrote {}", path.display());
    }
    if let Some(trace) = ctx.stop_trace() {
        if let Some(p) = &args.trace {
            trace.write_chrome_json(p)?;
            println!(
                "wrote {} ({} memory events)",
                p.display(),
                trace.events.len()
            );
        }
        if let Some(p) = &args.plot {
            trace.write_svg(p)?;
            println!("wrote {}", p.display());
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    env_logger::init();
    // A decoder that panics on a damaged file is reported as an input error, not a crash.
    input::quiet_decoder_panics();
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            let (Failure::Usage(m)
            | Failure::Input(m)
            | Failure::Budget(m)
            | Failure::NoGpu(m)
            | Failure::Other(m)) = &f;
            eprintln!("error: {m}");
            ExitCode::from(f.code())
        }
    }
}

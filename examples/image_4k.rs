//! The 4K image tool: runs an operation chain on image files (or a built-in 4K test chart)
//! inside a device-memory budget, tiling frames that do not fit, and reports where the memory
//! went.
//!
//! `cargo run --release --example image_4k -- --budget 256MiB --out out`

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bytesize::ByteSize;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use vramkit::backend::Backend;
use vramkit::image::{frame_bytes, parse_chain, test_chart, Pipeline, PixelFormat, Rect};
use vramkit::{Context, ContextDesc, Error};

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
            Error::InvalidParameter { .. } | Error::ShapeMismatch { .. } => {
                Failure::Usage(e.to_string())
            }
            Error::Io { .. } => Failure::Input(e.to_string()),
            e => Failure::Other(e.to_string()),
        }
    }
}

struct Frame {
    name: String,
    size: [u32; 2],
    rgba: Vec<u8>,
}

fn load(path: &Path) -> Result<Frame, Failure> {
    let img = image::ImageReader::open(path)
        .and_then(|r| r.with_guessed_format())
        .map_err(|e| Failure::Input(format!("{}: cannot read: {e}", path.display())))?
        .decode()
        .map_err(|e| {
            Failure::Input(format!(
                "{}: not a PNG or JPEG image vramkit can decode: {e}",
                path.display()
            ))
        })?;
    let rgba = match img {
        image::DynamicImage::ImageRgb8(_) | image::DynamicImage::ImageRgba8(_) => img.to_rgba8(),
        other => {
            return Err(Failure::Input(format!(
                "{}: {:?} pixels are not supported; use 8-bit RGB or RGBA",
                path.display(),
                other.color()
            )))
        }
    };
    let name = path
        .file_stem()
        .map_or("frame".into(), |s| s.to_string_lossy().into_owned());
    Ok(Frame {
        name,
        size: [rgba.width(), rgba.height()],
        rgba: rgba.into_raw(),
    })
}

fn inputs(args: &Args) -> Result<Vec<PathBuf>, Failure> {
    let mut files = Vec::new();
    for p in &args.inputs {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| Failure::Input(format!("{}: {e}", p.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    f.extension().and_then(|x| x.to_str()).is_some_and(|x| {
                        ["png", "jpg", "jpeg"].contains(&x.to_lowercase().as_str())
                    })
                })
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

fn run(args: &Args) -> Result<(), Failure> {
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
        "wgpu" => process(args, &Context::new(desc)?),
        #[cfg(feature = "cuda")]
        "cuda" => process(args, &Context::cuda(0, desc)?),
        other => Err(Failure::Usage(format!(
            "backend `{other}` is not available in this build; use --backend wgpu{}",
            if cfg!(feature = "cuda") {
                " or cuda"
            } else {
                " (or build with --features cuda for --backend cuda)"
            }
        ))),
    }
}

/// Processes every input on `ctx`.
fn process<B: Backend>(args: &Args, ctx: &Context<B>) -> Result<(), Failure> {
    let chain = parse_chain(&args.ops)?;
    if args.trace.is_some() || args.plot.is_some() {
        ctx.start_trace(1 << 20);
    }
    eprintln!("device: {}", ctx.adapter_info());
    std::fs::create_dir_all(&args.out)
        .map_err(|e| Failure::Input(format!("{}: cannot create: {e}", args.out.display())))?;

    let files = inputs(args)?;
    let bar = ProgressBar::new(files.len().max(1) as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let frames = files.len().max(1);
    let frame_at = |i: usize| -> Result<Frame, Failure> {
        match files.get(i) {
            Some(f) => load(f),
            None => Ok(Frame {
                name: "test_chart".into(),
                size: [3840, 2160],
                rgba: test_chart(3840, 2160),
            }),
        }
    };
    // As many frames at once as whole working sets fit the budget now (at most 4).
    let first = frame_at(0)?;
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
                    frame_at(i)?
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
    let (name, [w, h], [ow, oh], report, _) = &rows[rows.len() - 1];
    let _ = name;
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

//! The 4K image tool: runs an operation chain on image files (or a built-in 4K test chart)
//! inside a device-memory budget, tiling frames that do not fit, and reports where the memory
//! went.
//!
//! `cargo run --release -p vramkit-image -- photos/ --budget 256MiB --out out` (or `--chart`
//! for the built-in chart in place of files)
//!
//! `--devices all` (or `--devices 0,1`) spreads the frames over several devices of the backend,
//! one context each with its own `--budget`, working at the same time: each device's workers
//! take the next frame from one shared queue (device `d` starts with the `d`-th frame, so that
//! each device gets one when there are as many frames). An index given twice (`0,0`) opens two
//! contexts on one device, which is how the flag is tried with one GPU or on lavapipe. Outputs
//! are those of a one-device run; the table and the JSON report say which device made each
//! file, and the summary how many frames each made.
//!
//! Everything that needs no device is checked first: the chain, the inputs and the outputs,
//! which never overwrite an input, each other or (without `--force`) an existing file. Then the
//! devices open while the first frame decodes, and the frames after it, as many as the cores
//! and the host's memory take (each other frame is decoded when its turn comes). A file that
//! fails is listed with its reason and the others go on.
//!
//! Exit codes: 0 every file written; 1 other failure; 2 bad arguments or outputs refused;
//! 3 an unreadable, damaged or unsupported input; 4 budget too small; 5 no GPU; 6 an output
//! that could not be written. When some files fail, the run ends with the code of the first
//! failing file (in input order).

mod ahead;
mod aspect;
mod batch;
mod colour;
mod devices;
mod early;
mod embed;
mod flatten;
mod host_memory;
mod input;
mod output;
mod paths;
mod report;
mod walk;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use bytesize::ByteSize;
use clap::Parser;
use vramkit::backend::Backend;
use vramkit::devices::DeviceSet;
use vramkit::{ContextDesc, Error};
use vramkit_image::{parse_chain, Op, MAX_FRAME_PIXELS};

use output::OutFormat;

/// The default of `--max-pixels`: 16384×16384, a 1 GiB RGBA8 frame.
const DEFAULT_MAX_PIXELS: u64 = 1 << 28;

#[derive(Parser, Debug)]
#[command(about = "Process 4K images on the GPU inside a memory budget", version)]
struct Args {
    /// PNG or JPEG files, or directories of them (their .png, .jpg, .jpeg, .jpe and .jfif
    /// files, any case; with --recursive, their folders too).
    inputs: Vec<PathBuf>,
    /// Process the built-in 3840×2160 test chart (written as `test_chart.EXT`) instead of
    /// files.
    #[arg(long, conflicts_with_all = ["inputs", "recursive"])]
    chart: bool,
    /// Look for images in the folders of each directory too. Outputs mirror the folders under
    /// --out, each directory keeping its own name (`DCIM/100CANON/IMG_0001.JPG` →
    /// `OUT/DCIM/100CANON/IMG_0001.png`), so equal names in different folders do not meet.
    /// Hidden folders and links to folders are skipped, and said so.
    #[arg(long, short = 'r')]
    recursive: bool,
    /// Operation chain: linear, srgb, luma, blur:sigma=S, box:radius=R, resize:WxH[:area],
    /// adjust:brightness=B;contrast=C;gamma=G.
    #[arg(long, default_value = "linear,blur:sigma=3,resize:1920x1080:area,srgb")]
    ops: String,
    /// Format frames are held in between operations: rgba32f (full precision) or rgba8 (a
    /// quarter of the bytes, rounded to 8 bits after each operation, except the stages from
    /// linear to srgb, held in rgba32f). 16-bit inputs always use rgba32f.
    #[arg(long, value_enum, default_value_t = Format::Rgba32f)]
    format: Format,
    /// Device-memory budget of each device (with --devices, every device has this budget),
    /// e.g. 256MiB or 1GiB. None: the device's limit.
    #[arg(long, value_parser = parse_budget)]
    budget: Option<ByteSize>,
    /// Where outputs go: a directory (`<name>.<ext>` per input), or, for one input, a file
    /// whose extension (.png, .jpg, .jpeg, .webp) gives the format.
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Output file format (default: the --out file's extension, else png).
    #[arg(long, value_enum)]
    out_format: Option<OutFormat>,
    /// The colour JPEG outputs composite transparent pixels over (JPEG has no alpha):
    /// #RRGGBB, #RGB, or a name (any case): white, black, grey/gray, silver, red, maroon, green,
    /// lime, blue, navy, yellow, olive, cyan/aqua, teal, magenta/fuchsia or purple (CSS's
    /// values). None: white, with a warning for each such file.
    /// PNG and WebP keep alpha.
    #[arg(long, value_name = "COLOUR", value_parser = flatten::parse_colour)]
    background: Option<[u8; 3]>,
    /// JPEG quality, 1 to 100.
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u8).range(1..=100))]
    quality: u8,
    /// Replace outputs that exist (never an input).
    #[arg(long, conflicts_with = "skip_existing")]
    force: bool,
    /// Leave outputs that exist as they are and process the other inputs (to add new photos
    /// to a processed folder).
    #[arg(long)]
    skip_existing: bool,
    /// The most pixels an input or any frame of the chain may have (at most 1073741824,
    /// vramkit's limit).
    #[arg(long, default_value_t = DEFAULT_MAX_PIXELS)]
    max_pixels: u64,
    /// Write a JSON report (per file: input, output, device, sizes, tiles, seconds, error; per
    /// device: frames, peak memory; totals) to FILE; `-` prints it to stdout and the table to
    /// stderr.
    #[arg(long, value_name = "FILE.json")]
    json: Option<PathBuf>,
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
    /// Spread the frames over several devices of --backend, working at once: `all` (every
    /// wgpu adapter, CPU ones such as lavapipe only where there is no GPU; or every CUDA device)
    /// or device indices in that order, e.g. `0,1`. An index given twice (`0,0`) opens two
    /// contexts on one device (with one GPU, or on lavapipe, this tries the flag). --budget is
    /// per device. None: the one device the tool picks (WGPU_ADAPTER_NAME; CUDA device 0).
    /// With several devices, --trace and --plot write one file per device
    /// (`NAME.device1.json`, ...).
    #[arg(long, value_name = "all|0,1")]
    devices: Option<String>,
}

/// The working format, as the command line spells it.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Format {
    Rgba8,
    Rgba32f,
}

/// What went wrong, by the exit code a script can act on.
#[derive(Clone, Debug)]
enum Failure {
    Usage(String),
    Input(String),
    Budget(String),
    NoGpu(String),
    Output(String),
    Other(String),
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Input(_) => 3,
            Failure::Budget(_) => 4,
            Failure::NoGpu(_) => 5,
            Failure::Output(_) => 6,
            Failure::Other(_) => 1,
        }
    }

    fn message(&self) -> &str {
        let (Failure::Usage(m)
        | Failure::Input(m)
        | Failure::Budget(m)
        | Failure::NoGpu(m)
        | Failure::Output(m)
        | Failure::Other(m)) = self;
        m
    }

    /// The same failure, its message prefixed with `what: `.
    fn about(self, what: &str) -> Self {
        let m = |m: String| format!("{what}: {m}");
        match self {
            Failure::Usage(s) => Failure::Usage(m(s)),
            Failure::Input(s) => Failure::Input(m(s)),
            Failure::Budget(s) => Failure::Budget(m(s)),
            Failure::NoGpu(s) => Failure::NoGpu(m(s)),
            Failure::Output(s) => Failure::Output(m(s)),
            Failure::Other(s) => Failure::Other(m(s)),
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

/// The chain, with every frame it makes within `--max-pixels`. Limits that are vramkit's own
/// (MAX_SIDE, MAX_FRAME_PIXELS) are said to be so: no flag raises them.
fn chain(args: &Args) -> Result<Vec<Op>, Failure> {
    let chain = parse_chain(&args.ops).map_err(|e| {
        let text = e.to_string();
        Failure::Usage(if text.contains("vramkit_image::MAX_") {
            format!("{text} (that is vramkit's own limit: no flag raises it)")
        } else {
            text
        })
    })?;
    for op in &chain {
        if let Op::Resize { width, height, .. } = op {
            let pixels = u64::from(*width) * u64::from(*height);
            if pixels > args.max_pixels {
                return Err(Failure::Usage(format!(
                    "`{op}` makes a {width}x{height} frame: {pixels} pixels, more than the limit \
                     of {} pixels (--max-pixels); raise it with --max-pixels {pixels}",
                    args.max_pixels
                )));
            }
        }
    }
    Ok(chain)
}

/// Checks the flags that need neither inputs nor a device.
fn check_args(args: &Args) -> Result<(), Failure> {
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
    if args.max_pixels == 0 || args.max_pixels > MAX_FRAME_PIXELS {
        return Err(Failure::Usage(format!(
            "--max-pixels {} is outside 1 to {MAX_FRAME_PIXELS} (vramkit_image::MAX_FRAME_PIXELS, \
             the most a frame can have; no flag raises it)",
            args.max_pixels
        )));
    }
    if args.inputs.is_empty() && !args.chart {
        return Err(Failure::Usage(
            "no input given: name PNG or JPEG files or directories of them (image_4k photos/ \
             --out out), or give --chart to process the built-in 4K test chart"
                .into(),
        ));
    }
    Ok(())
}

/// Runs `chain` on the inputs, on the devices `open` opens. The inputs and outputs are checked
/// first, with no device; then the devices open on a thread of their own while the first frame
/// and those after it decode ([`early`]). A run whose every input fails ends with their errors
/// once the devices have opened (or failed to).
fn on<B: Backend>(
    args: &Args,
    chain: Vec<Op>,
    open: impl Fn() -> Result<DeviceSet<B>, Failure> + Sync,
) -> Result<u8, Failure> {
    let mut job = batch::prepare(args, chain)?;
    let without_device = |job: &batch::Job| report::finish::<B>(args, job, &[]);
    if job.items.is_empty() {
        // Every input skipped (--skip-existing): nothing needs a device.
        return without_device(&job);
    }
    let start = Instant::now();
    let open = || {
        let set = open();
        let ms = start.elapsed().as_millis();
        match &set {
            Ok(_) => log::debug!("devices open after {ms} ms"),
            Err(f) => log::debug!("devices failed to open after {ms} ms: {}", f.message()),
        }
        set
    };
    let (set, early) = std::thread::scope(|s| {
        let opening = std::thread::Builder::new()
            .name("image_4k-open".into())
            .spawn_scoped(s, open);
        early::decode_first(&mut job, args.max_pixels);
        let early = early::ahead_of_workers(&job, args.max_pixels);
        let set = opening.ok().map(|t| {
            t.join().unwrap_or_else(|_| {
                Err(Failure::Other(
                    "opening the device panicked (a driver or vramkit bug; please report it)"
                        .into(),
                ))
            })
        });
        (set, early)
    });
    if job.first.is_none() {
        // Every input failed: the device is not needed.
        return without_device(&job);
    }
    // Without a thread of their own, the devices open now.
    let set = set.unwrap_or_else(open)?;
    batch::process(args, &mut job, set.devices(), &early)?;
    let code = report::finish(args, &job, set.devices());
    log::debug!("report written after {} ms", start.elapsed().as_millis());
    for ctx in set.devices() {
        for leak in ctx.observe().leaks() {
            eprintln!(
                "warning: {}: `{}` ({} B) still allocated at the end (an image_4k bug: please \
                 report it)",
                ctx.adapter_info(),
                leak.label,
                leak.size
            );
        }
        // The device's memory given back in the background is unmapped now, so no thread of
        // the backend calls the driver while the process exits.
        ctx.backend().finish_unmaps();
    }
    // Every output is written and closed, and the report with them: the process ends now, and
    // the driver takes the devices back as it exits. On CUDA, a teardown first (each segment
    // freed, the context released) made the run 20-70 ms longer on a 32-frame folder.
    std::mem::forget(set);
    code
}

fn run(args: &Args) -> Result<u8, Failure> {
    check_args(args)?;
    let wanted = devices::parse(args.devices.as_deref())?;
    let chain = chain(args)?;
    let budget = args.budget.map(|b| b.as_u64());
    // Staging takes at most 1/8 of the budget (four buffers of 1/32), so frames keep the rest.
    let staging_chunk = budget.map_or(4 << 20, |b| (b / 32).clamp(64 << 10, 4 << 20) / 4096 * 4096);
    let desc = ContextDesc {
        budget,
        staging_chunk,
        staging_slots: 2,
        // VRAMKIT_BACKTRACE=1, VRAMKIT_LOG_ALLOCATIONS=1, ... (see DebugSettings::from_env).
        debug: vramkit::DebugSettings::from_env(),
        ..Default::default()
    };
    match args.backend.as_str() {
        #[cfg(feature = "cuda")]
        "cuda" => on(args, chain, || devices::open_cuda(&wanted, &desc)),
        _ => on(args, chain, || devices::open_wgpu(&wanted, &desc)),
    }
}

/// A `--budget`: a size with its unit, said plainly when it is not one.
fn parse_budget(text: &str) -> Result<ByteSize, String> {
    text.trim().parse::<ByteSize>().map_err(|_| {
        format!("`{text}` is not a size: write a number and a unit, e.g. 256MiB, 1GiB or 512MB")
    })
}

fn main() -> ExitCode {
    // RUST_LOG=image_4k=debug says when each frame is decoded and done, to the millisecond.
    env_logger::Builder::from_default_env()
        .format_timestamp_millis()
        .init();
    // A decoder that panics on a damaged file is reported as an input error, not a crash.
    input::quiet_decoder_panics();
    output::remove_unfinished_on_signals();
    let args = Args::parse();
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("error: {}", f.message());
            ExitCode::from(f.code())
        }
    }
}

//! `ContextDesc::debug`: each setting takes effect from the descriptor alone, with no
//! environment variable. Allocation logging is checked on every backend with a logger that
//! keeps vramkit's records; the vendor-BLAS and cooperative-matrix opt-outs on a backend that
//! has both (host memory under a stand-in BLAS that counts its calls and a listed 16×16×16
//! cooperative matrix), since neither lavapipe nor the host has them.
//! (`DebugSettings::backtraces` is checked by `tests/observability.rs`.)

mod common;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use common::Mk;
use vramkit::backend::host::{HostBackend, HostBlock, HostTexture};
use vramkit::backend::{
    Backend, BackendLimits, BlockRange, Compute, Constants, CooperativeMatrix, CooperativeScalar,
    DeviceInfo, KernelSource, MemoryInfo, QueueIndex, Storage,
};
use vramkit::texture::TextureCopy;
use vramkit::texture::{TextureDesc, TextureFormat};
use vramkit::{AllocDesc, Context, ContextDesc, DebugSettings, Error, MemoryKind};
use vramkit_kernels::{matmul_f16_kernel, matmul_with, MatmulDims, MatmulKernel};

backend_tests!(allocations_are_logged_at_info_only_when_asked);

/// vramkit's log records (level, message), kept by [`Keep`].
static RECORDS: Mutex<Vec<(log::Level, String)>> = Mutex::new(Vec::new());

/// A logger that keeps every record vramkit writes, at every level.
struct Keep;

impl log::Log for Keep {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.target().starts_with("vramkit")
    }

    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            let mut v = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
            v.push((r.level(), r.args().to_string()));
        }
    }

    fn flush(&self) {}
}

static LOGGER: Keep = Keep;

/// The levels of the kept records that mention `needle`.
fn levels_of(needle: &str) -> Vec<log::Level> {
    let v = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
    v.iter()
        .filter(|(_, m)| m.contains(needle))
        .map(|(l, _)| *l)
        .collect()
}

/// A label no other test of this binary uses.
fn unique(what: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{what}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn allocations_are_logged_at_info_only_when_asked<B: Backend>(mk: Mk<B>) {
    // Another test of this binary may have installed it already.
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(log::LevelFilter::Trace);
    let info = log::Level::Info;
    for on in [true, false] {
        let ctx = mk(ContextDesc {
            debug: DebugSettings {
                log_allocations: on,
                ..Default::default()
            },
            ..Default::default()
        });
        let (buffer, texture) = (unique("logged-buffer"), unique("logged-texture"));
        let h = ctx
            .alloc(AllocDesc::new(buffer.clone(), 1000))
            .expect("alloc");
        ctx.release(h).expect("release");
        let t = ctx
            .textures()
            .alloc(TextureDesc::new(
                texture.clone(),
                16,
                8,
                TextureFormat::Rgba8Unorm,
            ))
            .expect("texture");
        ctx.textures().release(t).expect("release texture");

        let alloc = levels_of(&format!("alloc `{buffer}` 1000 B"));
        let release = levels_of(&format!("release `{buffer}` 1000 B"));
        let tex = levels_of(&format!("texture `{texture}`"));
        let tex_release = levels_of(&format!("release texture `{texture}`"));
        if on {
            assert_eq!(alloc, [info], "one info line for the allocation");
            assert_eq!(release, [info], "one info line for the release");
            // "texture `…`" also matches the release line.
            assert_eq!(tex, [info, info], "texture allocation and release");
            assert_eq!(tex_release, [info]);
        } else {
            // The same lines, at trace level only.
            let trace = log::Level::Trace;
            assert_eq!(alloc, [trace]);
            assert_eq!(release, [trace]);
            assert_eq!(tex, [trace, trace]);
            assert_eq!(tex_release, [trace]);
        }
    }
}

/// Host memory with a stand-in vendor BLAS (a plain f32 matmul on the host blocks, counted)
/// and a listed cooperative matrix: what `DebugSettings` can turn off.
struct Vendor {
    host: HostBackend,
    blas: bool,
    coop: Vec<CooperativeMatrix>,
    calls: AtomicUsize,
}

impl Vendor {
    fn new(blas: bool, coop: bool) -> Self {
        let tile = CooperativeMatrix {
            m: 16,
            n: 16,
            k: 16,
            inputs: CooperativeScalar::F16,
            accumulator: CooperativeScalar::F32,
        };
        Self {
            host: HostBackend::default(),
            blas,
            coop: if coop { vec![tile] } else { Vec::new() },
            calls: AtomicUsize::new(0),
        }
    }
}

// SAFETY: every method passes its arguments, and with them the caller's contract, to the host
// backend, which keeps the promises of `Storage`.
unsafe impl Storage for Vendor {
    type Block = HostBlock;
    type Texture = HostTexture;

    fn device_info(&self) -> DeviceInfo {
        self.host.device_info()
    }
    fn limits(&self) -> &BackendLimits {
        self.host.limits()
    }
    fn memory_info(&self) -> Option<MemoryInfo> {
        self.host.memory_info()
    }
    fn check_device(&self) -> vramkit::Result<()> {
        self.host.check_device()
    }
    fn supports(&self, kind: MemoryKind) -> vramkit::Result<()> {
        self.host.supports(kind)
    }
    fn alloc_block(&self, size: u64, kind: MemoryKind) -> vramkit::Result<HostBlock> {
        self.host.alloc_block(size, kind)
    }
    unsafe fn free_block(&self, block: HostBlock) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.host.free_block(block) }
    }
    unsafe fn write_host(
        &self,
        block: &HostBlock,
        offset: u64,
        data: &[u8],
    ) -> vramkit::Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.host.write_host(block, offset, data) }
    }
    unsafe fn read_host(
        &self,
        block: &HostBlock,
        offset: u64,
        out: &mut [u8],
    ) -> vramkit::Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.host.read_host(block, offset, out) }
    }
    unsafe fn copy(
        &self,
        src: &HostBlock,
        src_offset: u64,
        dst: &HostBlock,
        dst_offset: u64,
        size: u64,
    ) -> vramkit::Result<QueueIndex> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.host.copy(src, src_offset, dst, dst_offset, size) }
    }
    unsafe fn clear(
        &self,
        block: &HostBlock,
        offset: u64,
        size: u64,
    ) -> vramkit::Result<QueueIndex> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.host.clear(block, offset, size) }
    }
    fn alloc_texture(&self, desc: &TextureDesc) -> vramkit::Result<(HostTexture, Option<u64>)> {
        self.host.alloc_texture(desc)
    }
    unsafe fn free_texture(&self, texture: HostTexture) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.host.free_texture(texture) }
    }
    unsafe fn copy_to_texture(
        &self,
        src: &HostBlock,
        offset: u64,
        dst: &HostTexture,
        copy: TextureCopy,
    ) -> vramkit::Result<QueueIndex> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.host.copy_to_texture(src, offset, dst, copy) }
    }
    unsafe fn copy_from_texture(
        &self,
        src: &HostTexture,
        copy: TextureCopy,
        dst: &HostBlock,
        offset: u64,
    ) -> vramkit::Result<QueueIndex> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.host.copy_from_texture(src, copy, dst, offset) }
    }
    fn submit(&self) -> vramkit::Result<QueueIndex> {
        self.host.submit()
    }
    fn is_done(&self, index: QueueIndex) -> vramkit::Result<bool> {
        self.host.is_done(index)
    }
    fn wait(&self, index: QueueIndex) -> vramkit::Result<()> {
        self.host.wait(index)
    }
}

// SAFETY: kernels are the host backend's (none); the stand-in BLAS touches only the ranges it
// is given, synchronously.
unsafe impl Compute for Vendor {
    type Kernel = ();

    fn compile(&self, source: &KernelSource, constants: Constants<'_>) -> vramkit::Result<()> {
        self.host.compile(source, constants)
    }

    unsafe fn dispatch(
        &self,
        kernel: &(),
        bindings: &[BlockRange<'_, HostBlock>],
        params: &[u8],
        workgroups: [u32; 3],
    ) -> vramkit::Result<QueueIndex> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.host.dispatch(kernel, bindings, params, workgroups) }
    }

    fn has_vendor_matmul(&self) -> bool {
        self.blas
    }

    unsafe fn vendor_matmul(
        &self,
        bindings: &[BlockRange<'_, HostBlock>],
        [m, n, k]: [u32; 3],
    ) -> vramkit::Result<QueueIndex> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let (m, n, k) = (m as usize, n as usize, k as usize);
        let read = |r: &BlockRange<'_, HostBlock>, len: usize| {
            let mut bytes = vec![0u8; len * 4];
            // SAFETY: the caller's contract: the range holds `len` f32 values.
            unsafe { self.host.read_host(r.block, r.offset, &mut bytes) }?;
            Ok::<_, Error>(bytemuck::pod_collect_to_vec::<u8, f32>(&bytes))
        };
        let (a, b) = (read(&bindings[0], m * k)?, read(&bindings[1], k * n)?);
        let mut c = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum();
            }
        }
        // SAFETY: the caller's contract: C holds `m·n` f32 values and overlaps neither input.
        unsafe {
            self.host.write_host(
                bindings[2].block,
                bindings[2].offset,
                bytemuck::cast_slice(&c),
            )
        }?;
        self.host.submit()
    }

    fn cooperative_matrices(&self) -> &[CooperativeMatrix] {
        &self.coop
    }
}

fn with(backend: Vendor, debug: DebugSettings) -> Context<Vendor> {
    Context::with_backend(
        backend,
        ContextDesc {
            debug,
            ..Default::default()
        },
    )
}

/// The reason of an [`Error::Unsupported`].
fn unsupported(e: Error) -> String {
    match e {
        Error::Unsupported { reason, .. } => reason,
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn no_vendor_blas_keeps_matmul_off_the_vendor_blas() {
    let d = MatmulDims { m: 2, n: 2, k: 2 };
    let run = |ctx: &Context<Vendor>, kernel| {
        let [a, b, c] = ["a", "b", "c"].map(|l| ctx.alloc(AllocDesc::new(l, 16)).expect("alloc"));
        ctx.upload(a, bytemuck::cast_slice(&[1.0f32, 2.0, 3.0, 4.0]))
            .expect("upload");
        ctx.upload(b, bytemuck::cast_slice(&[5.0f32, 6.0, 7.0, 8.0]))
            .expect("upload");
        let done = matmul_with(ctx, a, b, c, d, kernel);
        let out = ctx.download(c).expect("download");
        for h in [a, b, c] {
            ctx.release(h).expect("release");
        }
        done.map(|_| bytemuck::pod_collect_to_vec::<u8, f32>(&out))
    };

    // By default, Auto takes the vendor BLAS.
    let ctx = with(Vendor::new(true, false), DebugSettings::default());
    assert_eq!(
        run(&ctx, MatmulKernel::Auto).expect("vendor matmul"),
        [19.0, 22.0, 43.0, 50.0]
    );
    assert_eq!(ctx.backend().calls.load(Ordering::Relaxed), 1);
    assert_eq!(
        matmul_f16_kernel(&ctx, MatmulKernel::Auto).expect("kernel"),
        MatmulKernel::Vendor
    );

    // With the setting, never: Auto picks vramkit's own kernel (which the host cannot run),
    // and asking for the vendor's is refused with the setting named.
    let off = DebugSettings {
        no_vendor_blas: true,
        ..Default::default()
    };
    let ctx = with(Vendor::new(true, false), off);
    assert_eq!(ctx.observe().debug_settings(), off);
    let auto = run(&ctx, MatmulKernel::Auto).expect_err("the host runs no shaders");
    assert!(
        unsupported(auto).contains("no shaders"),
        "Auto went to the tiled kernel"
    );
    let vendor = run(&ctx, MatmulKernel::Vendor).expect_err("vendor BLAS off");
    assert!(unsupported(vendor).contains("no_vendor_blas"));
    assert_eq!(
        matmul_f16_kernel(&ctx, MatmulKernel::Auto).expect("kernel"),
        MatmulKernel::Tiled
    );
    let f16 = matmul_f16_kernel(&ctx, MatmulKernel::Vendor).expect_err("vendor BLAS off");
    assert!(unsupported(f16).contains("no_vendor_blas"));
    assert_eq!(
        ctx.backend().calls.load(Ordering::Relaxed),
        0,
        "the vendor BLAS never ran"
    );
}

#[test]
fn no_cooperative_matrix_keeps_the_f16_matmul_off_tensor_cores() {
    let ctx = with(Vendor::new(false, true), DebugSettings::default());
    assert_eq!(
        matmul_f16_kernel(&ctx, MatmulKernel::Auto).expect("kernel"),
        MatmulKernel::Cooperative
    );
    let ctx = with(
        Vendor::new(false, true),
        DebugSettings {
            no_cooperative_matrix: true,
            ..Default::default()
        },
    );
    assert_eq!(
        matmul_f16_kernel(&ctx, MatmulKernel::Auto).expect("kernel"),
        MatmulKernel::Tiled
    );
    assert!(matches!(
        matmul_f16_kernel(&ctx, MatmulKernel::Cooperative),
        Err(Error::Unsupported { .. })
    ));
}

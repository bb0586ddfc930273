//! Safe calls cannot write outside an allocation: a safe dispatch of a shipped kernel with params
//! past its bindings, on every GPU backend, leaves the neighbours in the same block untouched.
//! (Measured before the fix on the H200: `SCALE` with `n = 512` over 256-float buffers overwrote
//! all 256 values of the next allocation on the CUDA backend.)

mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc};
use vramkit_kernels as kernels;
use vramkit_kernels::shaders;

gpu_tests!(
    scale_past_its_buffers_stays_inside_them,
    every_shipped_kernel_with_wild_params_stays_inside_its_bindings,
    elementwise_kernels_run_in_place,
);

/// `n` neighbours of `bytes` each around the allocations under test, all in one block.
struct Fence {
    handles: Vec<BufferHandle>,
    contents: Vec<Vec<u8>>,
}

impl Fence {
    fn new<B: Backend>(ctx: &Context<B>, n: usize, bytes: u64, seed: u64) -> Self {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                ctx.alloc(AllocDesc::new(format!("neighbour {i}"), bytes))
                    .expect("alloc")
            })
            .collect();
        let contents: Vec<_> = (0..n)
            .map(|i| random_bytes(bytes as usize, seed + i as u64))
            .collect();
        for (h, c) in handles.iter().zip(&contents) {
            ctx.upload(*h, c).expect("upload");
        }
        Self { handles, contents }
    }

    fn check<B: Backend>(&self, ctx: &Context<B>, what: &str) {
        for (i, (h, c)) in self.handles.iter().zip(&self.contents).enumerate() {
            assert!(
                ctx.download(*h).expect("download") == *c,
                "{what}: neighbour {i} changed"
            );
        }
    }
}

/// Allocates `sizes` between neighbours, in one block; fills them with random bytes.
fn sandwich<B: Backend>(ctx: &Context<B>, sizes: &[u64], seed: u64) -> (Vec<BufferHandle>, Fence) {
    let before = Fence::new(ctx, 2, 4096, seed);
    let inner: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let h = ctx
                .alloc(AllocDesc::new(format!("operand {i}"), s))
                .expect("alloc");
            ctx.upload(h, &random_bytes(s as usize, seed + 100 + i as u64))
                .expect("upload");
            h
        })
        .collect();
    let after = Fence::new(ctx, 2, 4096, seed + 50);
    let mut fence = before;
    fence.handles.extend(after.handles);
    fence.contents.extend(after.contents);
    let block = ctx.observe().allocation_info(inner[0]).expect("info").block;
    for h in fence.handles.iter().chain(&inner) {
        assert_eq!(
            ctx.observe().allocation_info(*h).expect("info").block,
            block,
            "the test needs its allocations in one block"
        );
    }
    (inner, fence)
}

fn scale_past_its_buffers_stays_inside_them<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let (h, fence) = sandwich(&ctx, &[1024, 1024], 1);
    let (x, y) = (h[0], h[1]);
    let xs: Vec<f32> = bytemuck::cast_slice(&ctx.download(x).expect("download")).to_vec();
    let xs: Vec<f32> = xs
        .iter()
        .map(|v| if v.is_finite() { *v } else { 1.0 })
        .collect();
    ctx.upload(x, bytemuck::cast_slice(&xs)).expect("upload");
    // n = 512 over buffers of 256 floats.
    let params = [2f32.to_bits(), 1f32.to_bits(), 512, 0];
    ctx.dispatch(
        &shaders::SCALE,
        &[x, y],
        bytemuck::cast_slice(&params),
        [2, 1, 1],
    )
    .expect("a safe dispatch with wrong params runs, bounds-checked");
    ctx.wait().expect("wait");
    fence.check(&ctx, "scale with n = 512 over 256 values");
    // Indices past the end are clamped to the last value (WGSL's policy, and `BUF` on CUDA):
    // every extra thread writes y[255] = 2 x[255] + 1, what the thread of 255 writes.
    let ys: Vec<f32> = bytemuck::cast_slice(&ctx.download(y).expect("download")).to_vec();
    assert_eq!(ys, kernels::scale_cpu(&xs, 2.0, 1.0));
    // The typed function runs the unchecked build over the right sizes: same result.
    kernels::scale(&ctx, x, y, 2.0, 1.0).expect("scale");
    let ys: Vec<f32> = bytemuck::cast_slice(&ctx.download(y).expect("download")).to_vec();
    assert_eq!(ys, kernels::scale_cpu(&xs, 2.0, 1.0));
}

fn every_shipped_kernel_with_wild_params_stays_inside_its_bindings<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    // Sizes past every binding; in the first set the resize's full source is empty (its area
    // loop once wrapped to 2³² iterations per pixel), in the second the blur's radius is
    // u32::MAX (its loop once ran 2³² times over 256 weights). Both hung the CUDA backend.
    // Words as the image kernels read them (`ImageParams`: sizes, origin, radius, the resize's
    // origins and full source, scales); other kernels read the first few.
    let empty_source = [
        300u32, 300, 600, 300, 300, 600, 10, 10, 40, 0, 0, 0, 0, 0, 0, 64, 64, 0, 0, 0,
    ];
    let mut huge_radius = empty_source;
    huge_radius[8] = u32::MAX;
    huge_radius[13] = 300;
    huge_radius[14] = 300;
    let constants = [("WG_X", 8.0), ("WG_Y", 8.0)];
    for (k, wild) in shaders::ALL
        .iter()
        .flat_map(|k| [(k, empty_source), (k, huge_radius)])
    {
        let (h, fence) = sandwich(&ctx, &[1024, 1024, 1024], 7);
        let mut params = wild.to_vec();
        if k.label().starts_with("scale") || k.label().starts_with("axpy") {
            params[0] = 1f32.to_bits();
        }
        let bindings: Vec<vramkit::Binding> = h.iter().map(|&b| b.into()).collect();
        let n = kernel_bindings(k);
        let constants: &[(&str, f64)] = if k.label() == "matmul_register" {
            &constants
        } else {
            &[]
        };
        let bytes = uniform_bytes(k);
        ctx.dispatch_with(
            k,
            constants,
            &bindings[..n],
            &bytemuck::cast_slice(&params)[..bytes],
            [8, 8, 1],
        )
        .unwrap_or_else(|e| panic!("{}: {e}", k.label()));
        ctx.wait().expect("wait");
        fence.check(&ctx, k.label());
        for x in h.into_iter().chain(fence.handles) {
            ctx.release(x).expect("release");
        }
    }
}

/// Storage bindings the kernel's entry point uses (all of group 0 but the uniform).
fn kernel_bindings(k: &vramkit::backend::KernelSource) -> usize {
    let module = naga::front::wgsl::parse_str(k.wgsl()).expect("valid");
    module
        .global_variables
        .iter()
        .filter(|(_, v)| matches!(v.space, naga::AddressSpace::Storage { .. }))
        .count()
}

/// Bytes of the kernel's params struct.
fn uniform_bytes(k: &vramkit::backend::KernelSource) -> usize {
    let module = naga::front::wgsl::parse_str(k.wgsl()).expect("valid");
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("layout");
    let bytes = module
        .global_variables
        .iter()
        .find(|(_, v)| v.space == naga::AddressSpace::Uniform)
        .map_or(0, |(_, v)| layouter[v.ty].size as usize);
    bytes
}

/// The elementwise kernels read each value before the same invocation writes it, so an output
/// may be an input (as documented on them).
fn elementwise_kernels_run_in_place<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let xs: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5 - 100.0).collect();
    let x = ctx.alloc(AllocDesc::new("x", 4000)).expect("alloc");
    ctx.upload(x, bytemuck::cast_slice(&xs)).expect("upload");
    kernels::scale(&ctx, x, x, 3.0, 1.0).expect("scale in place");
    let once = kernels::scale_cpu(&xs, 3.0, 1.0);
    let got: Vec<f32> = bytemuck::cast_slice(&ctx.download(x).expect("download")).to_vec();
    assert_eq!(got, once);
    kernels::axpy(&ctx, 2.0, x, x).expect("axpy in place");
    kernels::add(&ctx, x, x, x).expect("add in place");
    let want: Vec<f32> = kernels::add_cpu(
        &kernels::axpy_cpu(2.0, &once, &once),
        &kernels::axpy_cpu(2.0, &once, &once),
    );
    let got: Vec<f32> = bytemuck::cast_slice(&ctx.download(x).expect("download")).to_vec();
    assert_eq!(got, want);
    ctx.release(x).expect("release");
}

//! The edges of interop with an application that owns its wgpu device: bindings are leases
//! (a released or dropped context's range stays the application's while it holds the binding),
//! a block ever bound is never trusted to read as zeros, `submit_with` orders vramkit's work
//! and the application's in one submission, the application's error handler keeps its own
//! errors, and a submission the device refuses loses no data silently.

use vramkit::backend::wgpu::WgpuBackend;
use vramkit::backend::KernelSource;
use vramkit::interop::WgpuBinding;
use vramkit::{wgpu, AllocDesc, BufferHandle, Context, ContextDesc};

mod app;

use app::{app_device, app_pipeline, bytes_of, floats_of, DOUBLE};

fn context(test: &str) -> Option<(Context<WgpuBackend>, wgpu::Device, wgpu::Queue)> {
    let (adapter, device, queue) = app_device(test)?;
    let backend =
        WgpuBackend::from_device(adapter, device.clone(), queue.clone()).expect("backend");
    Some((
        Context::with_backend(backend, ContextDesc::default()),
        device,
        queue,
    ))
}

/// Records the app's pipeline `op` over `resource` (n values) into a command buffer.
fn app_pass(
    device: &wgpu::Device,
    op: &str,
    resource: wgpu::BindingResource<'_>,
    n: usize,
) -> wgpu::CommandBuffer {
    let pipeline = app_pipeline(device, op);
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("the app's bind group"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource,
        }],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups((n as u32).div_ceil(64), 1, 1);
    }
    encoder.finish()
}

/// The f32 values of a binding's range, read with the app's own readback.
fn read_binding(device: &wgpu::Device, queue: &wgpu::Queue, binding: &WgpuBinding) -> Vec<f32> {
    let size = binding.size;
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("the app's readback"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&binding.buffer, binding.offset, &staging, 0, size);
    queue.submit([encoder.finish()]);
    staging
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.expect("map"));
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("poll");
    let bytes = staging
        .slice(..)
        .get_mapped_range()
        .expect("mapped range")
        .to_vec();
    floats_of(&bytes)
}

fn upload_floats(ctx: &Context<WgpuBackend>, label: &str, v: &[f32]) -> BufferHandle {
    let h = ctx
        .alloc(AllocDesc::new(label.to_string(), 4 * v.len() as u64))
        .expect("alloc");
    ctx.upload(h, &bytes_of(v)).expect("upload");
    h
}

/// A binding outlives `release`: the range is not handed out again while the binding lives,
/// so the app's later pass over it cannot reach the next owner; once the binding is dropped,
/// the range is reused.
#[test]
fn a_released_allocation_stays_out_of_reuse_while_its_binding_lives() {
    let Some((ctx, device, queue)) = context("binding outlives release") else {
        return;
    };
    let n = 1024;
    let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let h = upload_floats(&ctx, "bound", &data);
    let binding = ctx.interop().wgpu_binding(h).expect("binding");
    ctx.release(h).expect("release");
    ctx.wait().expect("wait");
    let next: Vec<f32> = (0..n).map(|i| -(i as f32)).collect();
    let other = upload_floats(&ctx, "next owner", &next);
    let o = ctx
        .interop()
        .wgpu_binding(other)
        .expect("binding of the next owner");
    assert!(
        o.buffer != binding.buffer
            || o.offset + o.size <= binding.offset
            || o.offset >= binding.offset + binding.size,
        "the next owner overlaps a live binding"
    );
    drop(o);
    queue.submit([app_pass(
        &device,
        "data[id.x] * 2.0",
        binding.as_binding(),
        n,
    )]);
    ctx.wait().expect("wait");
    assert_eq!(floats_of(&ctx.download(other).expect("download")), next);
    let doubled = read_binding(&device, &queue, &binding);
    assert_eq!(doubled, data.iter().map(|x| x * 2.0).collect::<Vec<_>>());
    // The binding's end gives the range back.
    let (buffer, offset) = (binding.buffer.clone(), binding.offset);
    drop(binding);
    ctx.wait().expect("wait");
    let reused = (0..8).any(|i| {
        let h = upload_floats(&ctx, &format!("after {i}"), &next);
        let b = ctx.interop().wgpu_binding(h).expect("binding");
        b.buffer == buffer && b.offset == offset
    });
    assert!(
        reused,
        "the range is handed out again once the binding is dropped"
    );
    ctx.release(other).expect("release");
}

/// A context dropped while the app holds a binding leaves the buffer alive: the app's pass
/// still runs on it and reads its values.
#[test]
fn a_binding_outlives_its_context() {
    let Some((ctx, device, queue)) = context("binding outlives context") else {
        return;
    };
    let n = 512;
    let data: Vec<f32> = (0..n).map(|i| 1.0 + i as f32).collect();
    let h = upload_floats(&ctx, "kept", &data);
    let binding = ctx.interop().wgpu_binding(h).expect("binding");
    drop(ctx);
    queue.submit([app_pass(
        &device,
        "data[id.x] * 2.0",
        binding.as_binding(),
        n,
    )]);
    let doubled = read_binding(&device, &queue, &binding);
    assert_eq!(doubled, data.iter().map(|x| x * 2.0).collect::<Vec<_>>());
}

/// An app that binds the whole buffer writes beside its range: the block is never trusted to
/// read as zeros again, so a later zeroed allocation in it is cleared.
#[test]
fn a_block_ever_bound_is_never_trusted_clean() {
    let Some((ctx, device, queue)) = context("bound block never clean") else {
        return;
    };
    let h = upload_floats(&ctx, "bound", &[1.0; 64]);
    let binding = ctx.interop().wgpu_binding(h).expect("binding");
    let whole = binding.buffer.size() / 4;
    // Sets every value of the whole buffer to 7.
    queue.submit([app_pass(
        &device,
        "7.0",
        binding.buffer.as_entire_binding(),
        whole as usize,
    )]);
    ctx.wait().expect("wait");
    let block = ctx.observe().allocation_info(h).expect("info").block;
    let mut zeroed = Vec::new();
    for i in 0..64 {
        let z = ctx
            .alloc(AllocDesc::new(format!("zeroed {i}"), 4096))
            .expect("alloc");
        if ctx.observe().allocation_info(z).expect("info").block == block {
            let bytes = ctx.download(z).expect("download");
            assert!(
                bytes.iter().all(|&b| b == 0),
                "a zeroed allocation in a bound block holds the app's writes"
            );
            zeroed.push(z);
        }
    }
    assert!(
        !zeroed.is_empty(),
        "the test needs zeroed allocations in the bound block"
    );
}

/// `submit_with` submits vramkit's recorded work, then the app's, and records that it uses the
/// handles: vramkit's kernel runs first; a refused app buffer loses none of vramkit's work.
#[test]
fn submit_with_orders_vramkit_work_before_the_apps() {
    let Some((ctx, device, _queue)) = context("submit_with") else {
        return;
    };
    let n = 1000;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let x = upload_floats(&ctx, "x", &xs);
    let y = ctx.alloc(AllocDesc::new("y", 4 * n as u64)).expect("alloc");
    let binding = ctx.interop().wgpu_binding(y).expect("binding");
    let times3 = KernelSource::owned("times3", TIMES3, "times3");
    ctx.dispatch(&times3, &[x, y], &[], [(n as u32).div_ceil(64), 1, 1])
        .expect("times3");
    let index = ctx
        .interop()
        .submit_with(
            [app_pass(
                &device,
                "data[id.x] + 1.0",
                binding.as_binding(),
                n,
            )],
            &[y],
        )
        .expect("submit_with");
    ctx.wait_for(index).expect("wait_for");
    let ys = floats_of(&ctx.download(y).expect("download"));
    assert_eq!(ys, xs.iter().map(|v| 3.0 * v + 1.0).collect::<Vec<_>>());

    // An application buffer the device refuses takes none of vramkit's work with it: z,
    // written by vramkit's kernel, holds its values; y, which the refused buffer used, refuses
    // stale downloads.
    let z = ctx.alloc(AllocDesc::new("z", 4 * n as u64)).expect("alloc");
    ctx.dispatch(&times3, &[x, z], &[], [(n as u32).div_ceil(64), 1, 1])
        .expect("times3");
    let gone = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("destroyed"),
        size: 256,
        usage: wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&gone, 0, &binding.buffer, binding.offset, 256);
    gone.destroy();
    let refused = ctx.interop().submit_with([encoder.finish()], &[y]);
    assert!(
        refused.is_err(),
        "a buffer using a destroyed buffer: {refused:?}"
    );
    let zs = floats_of(&ctx.download(z).expect("vramkit's work ran"));
    assert_eq!(zs, xs.iter().map(|v| 3.0 * v).collect::<Vec<_>>());
    assert!(ctx.download(y).is_err(), "y's last writes were refused");
}

/// The app's uncaptured-error handler is not replaced: it keeps getting the app's errors, and
/// vramkit's calls do not return them.
#[test]
fn the_apps_error_handler_keeps_its_errors() {
    let Some((adapter, device, queue)) = app_device("error handler") else {
        return;
    };
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = std::sync::Arc::clone(&seen);
    device.on_uncaptured_error(std::sync::Arc::new(move |e: wgpu::Error| {
        sink.lock().expect("lock").push(e.to_string());
    }));
    let backend =
        WgpuBackend::from_device(adapter, device.clone(), queue.clone()).expect("backend");
    let ctx = Context::with_backend(backend, ContextDesc::default());
    // The app's own mistake: a mappable storage buffer without the feature.
    let _bad = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("the app's bad buffer"),
        size: 256,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let h = upload_floats(&ctx, "after", &[2.0; 16]);
    assert_eq!(
        floats_of(
            &ctx.download(h)
                .expect("vramkit's call is not failed by the app's error")
        ),
        vec![2.0; 16]
    );
    ctx.wait().expect("wait");
    assert_eq!(
        seen.lock().expect("lock").len(),
        1,
        "the app's handler got its error"
    );
}

/// `y[i] = 3 x[i]`, launched through vramkit.
const TIMES3: &str = r"
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn times3(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&y)) {
        y[id.x] = 3.0 * x[id.x];
    }
}
";

/// A submission the device refuses only when it is submitted (here: the app destroyed a buffer
/// that work vramkit recorded uses) is reported once, naming the launches it held; a download
/// of what that work should have written fails instead of returning stale data; `wait` works
/// afterwards; launching the work again recovers the right values.
#[test]
fn a_refused_submission_is_reported_and_no_stale_data_is_returned() {
    let Some((adapter, device, queue)) = app_device("refused submission") else {
        return;
    };
    let backend = WgpuBackend::from_device(adapter, device, queue).expect("backend");
    let ctx = Context::with_backend(backend, ContextDesc::default());
    let n = 1024usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 + 0.5).collect();
    let x = ctx.alloc(AllocDesc::new("x", 4 * n as u64)).expect("alloc");
    let y = ctx.alloc(AllocDesc::new("y", 4 * n as u64)).expect("alloc");
    ctx.upload_slice(x, &xs).expect("upload");
    // Large enough for a block of its own, so destroying it leaves x and y alone.
    let victim = ctx
        .alloc(AllocDesc::new("victim", 96 << 20))
        .expect("alloc");
    let block = |h| ctx.observe().allocation_info(h).expect("info").block;
    assert_ne!(
        block(victim),
        block(x),
        "the test needs the victim in a block of its own"
    );
    let binding = ctx.interop().wgpu_binding(victim).expect("binding");
    let times3 = KernelSource::owned("times3", TIMES3, "times3");
    let double = KernelSource::owned("double", DOUBLE, "main");
    let groups = [(n as u32).div_ceil(64), 1, 1];
    ctx.dispatch(&times3, &[x, y], &[], groups).expect("times3");
    ctx.dispatch(&double, &[victim], &[], [1, 1, 1])
        .expect("double");
    // The app breaks rule 3: the whole submission is refused.
    binding.buffer.destroy();
    let e = ctx
        .submit()
        .expect_err("a submission using a destroyed buffer");
    let message = e.to_string();
    assert!(
        message.contains("times3") && message.contains("double"),
        "the refusal names its launches: {message}"
    );
    let stale = ctx.download_vec::<f32>(y);
    assert!(
        matches!(&stale, Err(e) if e.to_string().contains("unknown data")),
        "a download of what the refused work wrote fails: {stale:?}"
    );
    ctx.wait().expect("wait works after a refusal");
    ctx.wait().expect("and again");
    // x was bound writable in the refused work too: unknown until written again, and a
    // launch binding it passes that on to what it writes.
    ctx.dispatch(&times3, &[x, y], &[], groups)
        .expect("times3 again");
    assert!(ctx.download(y).is_err(), "computed from unknown data");
    ctx.upload(x, &bytes_of(&xs)).expect("upload x again");
    ctx.dispatch(&times3, &[x, y], &[], groups)
        .expect("times3 again");
    let ys: Vec<f32> = ctx.download_vec(y).expect("download after the work ran");
    let want: Vec<f32> = xs.iter().map(|v| 3.0 * v).collect();
    assert_eq!(ys, want);
    ctx.release(victim).expect("release");
}

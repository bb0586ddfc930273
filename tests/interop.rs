//! An application that owns its wgpu device adopts vramkit, as an outside crate would: only the
//! public API, its own instance, adapter, device, queue and compute pipeline.
//!
//! The app picks a Vulkan adapter (the one `WGPU_ADAPTER_NAME` names, else wgpu's default),
//! hands its device to vramkit, allocates, uploads f32 data, binds the allocation in its own
//! pipeline that doubles every value, submits on its own queue, and reads the result back through
//! vramkit; exact values. Skips (printing why) where there is no adapter, unless
//! `VRAMKIT_REQUIRE_GPU=1`.

use vramkit::backend::wgpu::WgpuBackend;
use vramkit::texture::{TextureDesc, TextureFormat};
use vramkit::{wgpu, AllocDesc, Context, ContextDesc, Error};

mod app;

use app::{app_device, app_pipeline, bytes_of, floats, floats_of};

#[test]
fn an_app_binds_a_vramkit_allocation_in_its_own_pipeline() {
    let Some((adapter, device, queue)) = app_device("interop_doubling") else {
        return;
    };
    let backend = WgpuBackend::from_device(adapter, device.clone(), queue.clone())
        .expect("vramkit takes the app's device");
    assert_eq!(
        vramkit::backend::Storage::limits(&backend).max_block_size,
        device.limits().max_buffer_size,
        "the backend takes the device's own limits"
    );
    let ctx = Context::with_backend(backend, ContextDesc::default());

    // A neighbour first, so that the bound allocation sits past the start of its block.
    let n = 1000;
    let neighbour_data = floats(64, 7.0);
    let neighbour = ctx.alloc(AllocDesc::new("neighbour", 256)).unwrap();
    ctx.upload(neighbour, &bytes_of(&neighbour_data)).unwrap();
    let data = floats(n, 0.5);
    let h = ctx.alloc(AllocDesc::new("data", 4 * n as u64)).unwrap();
    ctx.upload(h, &bytes_of(&data)).unwrap();

    let binding = ctx.interop().wgpu_binding(h).unwrap();
    assert_eq!(binding.size, 4 * n as u64);
    assert!(binding.offset > 0, "the allocation shares its block");
    assert_eq!(
        binding.offset % u64::from(device.limits().min_storage_buffer_offset_alignment),
        0
    );
    assert!(
        !ctx.observe().allocation_info(h).unwrap().movable,
        "a bound allocation stays put"
    );

    let pipeline = app_pipeline(&device, "data[id.x] * 2.0");
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("the app's bind group"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: binding.as_binding(),
        }],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups((n as u32).div_ceil(64), 1, 1);
    }
    let submission = queue.submit([encoder.finish()]);
    ctx.interop().track_external(h, &submission).unwrap();

    let doubled = floats_of(&ctx.download(h).unwrap());
    let expected: Vec<f32> = data.iter().map(|x| x * 2.0).collect();
    assert_eq!(doubled, expected, "every value doubled, exactly");
    assert_eq!(
        floats_of(&ctx.download(neighbour).unwrap()),
        neighbour_data,
        "the neighbour in the same buffer is untouched"
    );

    ctx.release(h).unwrap();
    ctx.release(neighbour).unwrap();
    ctx.wait().unwrap();
    assert_eq!(ctx.stats().in_use, 0);
}

#[test]
fn vramkit_kernels_and_the_apps_passes_take_turns_on_one_queue() {
    let Some((adapter, device, queue)) = app_device("interop_turns") else {
        return;
    };
    let ctx = Context::with_backend(
        WgpuBackend::from_device(adapter, device.clone(), queue.clone()).unwrap(),
        ContextDesc::default(),
    );
    let n = 4096;
    // Memory used and released before: the next allocation reuses it, so vramkit records its
    // clearing (to zeros), which must reach the queue before the app's pass.
    let junk = ctx.alloc(AllocDesc::new("junk", 4 * n as u64)).unwrap();
    ctx.upload(junk, &bytes_of(&vec![f32::NAN; n])).unwrap();
    ctx.release(junk).unwrap();
    let h = ctx.alloc(AllocDesc::new("x", 4 * n as u64)).unwrap();
    let b = ctx.interop().wgpu_binding(h).unwrap();
    let pipeline = app_pipeline(&device, "data[id.x] * 2.0 + 1.0");
    let run_app = || {
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: b.as_binding(),
            }],
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups((n as u32).div_ceil(64), 1, 1);
        }
        queue.submit([encoder.finish()])
    };
    let s = run_app();
    ctx.interop().track_external(h, &s).unwrap();
    assert!(floats_of(&ctx.download(h).unwrap())
        .iter()
        .all(|&x| x == 1.0));

    // vramkit writes, the app maps x to 2x + 1, vramkit adds 1 with its own kernel (after a
    // submit), the app maps again: ((2x + 1) + 1) · 2 + 1.
    let data = floats(n, 3.0);
    ctx.upload(h, &bytes_of(&data)).unwrap();
    let s = run_app();
    ctx.interop().track_external(h, &s).unwrap();
    let one = ctx.alloc(AllocDesc::new("ones", 4 * n as u64)).unwrap();
    ctx.upload(one, &bytes_of(&vec![1.0; n])).unwrap();
    vramkit_kernels::axpy(&ctx, 1.0, one, h).unwrap();
    ctx.submit().unwrap();
    let s = run_app();
    ctx.interop().track_external(h, &s).unwrap();
    let got = floats_of(&ctx.download(h).unwrap());
    let want: Vec<f32> = data.iter().map(|x| (x * 2.0 + 2.0) * 2.0 + 1.0).collect();
    assert_eq!(got, want);
}

#[test]
fn a_bound_allocation_is_not_moved_by_compaction() {
    let Some((adapter, device, queue)) = app_device("interop_compaction") else {
        return;
    };
    let ctx = Context::with_backend(
        WgpuBackend::from_device(adapter, device, queue).unwrap(),
        ContextDesc::default(),
    );
    // Twice: without a binding the second allocation slides down over the freed first one (so
    // the test can tell), with one it stays where the app's binding says.
    for bind in [false, true] {
        let a = ctx.alloc(AllocDesc::new("a", 1 << 20)).unwrap();
        let b = ctx.alloc(AllocDesc::new("b", 1 << 20)).unwrap();
        let data = floats(1 << 18, 9.0);
        ctx.upload(b, &bytes_of(&data)).unwrap();
        let before = ctx.observe().allocation_info(b).unwrap();
        let binding = bind.then(|| ctx.interop().wgpu_binding(b).unwrap());
        ctx.release(a).unwrap();
        ctx.wait().unwrap();
        ctx.memory().compact(u64::MAX).unwrap();
        let after = ctx.observe().allocation_info(b).unwrap();
        if let Some(binding) = binding {
            assert_eq!((after.block, after.offset), (before.block, before.offset));
            assert_eq!(binding.offset, after.offset);
        } else {
            assert_ne!(
                (after.block, after.offset),
                (before.block, before.offset),
                "compaction moves an unbound allocation (else this test shows nothing)"
            );
        }
        assert_eq!(floats_of(&ctx.download(b).unwrap()), data);
        ctx.release(b).unwrap();
        ctx.wait().unwrap();
        ctx.memory().trim().unwrap();
    }
}

#[test]
fn an_app_writes_a_vramkit_texture_and_vramkit_reads_it() {
    let Some((adapter, device, queue)) = app_device("interop_texture") else {
        return;
    };
    let ctx = Context::with_backend(
        WgpuBackend::from_device(adapter, device, queue.clone()).unwrap(),
        ContextDesc::default(),
    );
    let (w, h) = (37, 11);
    let t = ctx
        .textures()
        .alloc(TextureDesc::new(
            "app-written",
            w,
            h,
            TextureFormat::Rgba8Unorm,
        ))
        .unwrap();
    let texture = ctx.interop().wgpu_texture(t).unwrap();
    assert_eq!((texture.width(), texture.height()), (w, h));
    let texels: Vec<u8> = (0..w * h * 4).map(|i| (i * 7 % 251) as u8).collect();
    queue.write_texture(
        texture.as_image_copy(),
        &texels,
        wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(4 * w),
            rows_per_image: Some(h),
        },
        wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
    );
    let s = queue.submit([]);
    ctx.interop().track_external_texture(t, &s).unwrap();
    assert_eq!(ctx.textures().download(t).unwrap(), texels);
    ctx.textures().release(t).unwrap();
    ctx.wait().unwrap();
}

#[test]
fn bad_interop_calls_are_typed_errors() {
    let Some((adapter, device, queue)) = app_device("interop_errors") else {
        return;
    };
    let ctx = Context::with_backend(
        WgpuBackend::from_device(adapter.clone(), device, queue).unwrap(),
        ContextDesc::default(),
    );
    let h = ctx.alloc(AllocDesc::new("h", 64)).unwrap();
    // An index from another device, past every submission of this one.
    let (_other_device, other_queue) =
        pollster::block_on(adapter.request_device(&Default::default())).unwrap();
    let mut far = other_queue.submit([]);
    for _ in 0..8 {
        far = other_queue.submit([]);
    }
    assert!(matches!(
        ctx.interop().track_external(h, &far),
        Err(Error::InvalidParameter { .. })
    ));
    ctx.release(h).unwrap();
    assert!(matches!(
        ctx.interop().wgpu_binding(h),
        Err(Error::StaleHandle { .. })
    ));
    assert!(matches!(
        ctx.interop().track_external(h, &other_queue.submit([])),
        Err(Error::StaleHandle { .. })
    ));
}

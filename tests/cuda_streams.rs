//! Memory used on the caller's CUDA streams (skipped without CUDA): memory released on stream A
//! while A's kernel still writes it is not handed to stream B before A has passed the release.
//! A sentinel kernel spins on A for a while and then writes; B gets the memory, writes its own
//! value, and the final contents must be B's.
#![cfg(feature = "cuda")]

mod common;

use common::try_cuda;
use vramkit::backend::cuda::cudarc;
use vramkit::backend::ForeignStream;
use vramkit::{AllocDesc, ContextDesc};

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};

const KERNELS: &str = r#"
extern "C" __global__ void spin_then_fill(unsigned int *p, unsigned int n, unsigned int v,
                                          long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += gridDim.x * blockDim.x) p[i] = v;
}
"#;

#[test]
fn memory_freed_on_a_busy_stream_reaches_another_only_after_it_passed() -> anyhow::Result<()> {
    let Some(vk) = try_cuda("cuda_streams", ContextDesc::default()) else {
        return Ok(());
    };
    let cu = CudaContext::new(0)?;
    let (a, b) = (cu.new_stream()?, cu.new_stream()?);
    // SAFETY: streams of device 0's primary context (cudarc's context is it), alive until
    // the end of the test, after the context forgot them.
    let (sa, sb) = unsafe {
        (
            ForeignStream::from_raw(a.cu_stream() as u64),
            ForeignStream::from_raw(b.cu_stream() as u64),
        )
    };
    let module = cu.load_module(cudarc::nvrtc::compile_ptx(KERNELS)?)?;
    let f = module.load_function("spin_then_fill")?;
    let n: u32 = 1 << 22;
    let bytes = u64::from(n) * 4;
    let cfg = LaunchConfig::for_num_elems(n);
    for round in 0..5 {
        let (h, p) = vk
            .interop()
            .alloc_on(AllocDesc::new("sentinel", bytes).uninit(), sa)?;
        // About 50 ms of spinning at 2 GHz, then the sentinel.
        let (sentinel, cycles) = (0xdead_0000u32 + round, 100_000_000i64);
        let mut launch = a.launch_builder(&f);
        launch.arg(&p.address).arg(&n).arg(&sentinel).arg(&cycles);
        // SAFETY: the kernel writes `n` u32 at the pointer, which holds `bytes` = 4n bytes and
        // is released only after the launch is issued (on A, in A's order).
        unsafe { launch.launch(cfg) }?;
        vk.release(h)?;
        let (h2, p2) = vk
            .interop()
            .alloc_on(AllocDesc::new("other", bytes).uninit(), sb)?;
        if p2.address == p.address {
            // SAFETY: querying a live stream.
            let a_done = unsafe { cudarc::driver::sys::cuStreamQuery(a.cu_stream()) };
            assert_eq!(
                a_done,
                cudarc::driver::sys::CUresult::CUDA_SUCCESS,
                "stream B got memory stream A's kernel still writes"
            );
        }
        let mine = 0x600d_0000u32 + round;
        let mut launch = b.launch_builder(&f);
        launch.arg(&p2.address).arg(&n).arg(&mine).arg(&0i64);
        // SAFETY: as above, for the second allocation.
        unsafe { launch.launch(cfg) }?;
        b.synchronize()?;
        a.synchronize()?;
        let got: Vec<u32> = vk.download_vec(h2)?;
        let wrong = got.iter().filter(|&&x| x != mine).count();
        assert_eq!(wrong, 0, "round {round}: {wrong} words are not stream B's");
        vk.release(h2)?;
    }
    vk.observe().audit().check()?;
    vk.interop().forget_stream(sa)?;
    vk.interop().forget_stream(sb)?;
    Ok(())
}

#[test]
fn the_same_stream_reuses_at_once_without_waiting() -> anyhow::Result<()> {
    let Some(vk) = try_cuda("cuda_streams", ContextDesc::default()) else {
        return Ok(());
    };
    let cu = CudaContext::new(0)?;
    let a = cu.new_stream()?;
    // SAFETY: a stream of device 0's primary context, alive until the end of the test, after
    // the context forgot it.
    let sa = unsafe { ForeignStream::from_raw(a.cu_stream() as u64) };
    let module = cu.load_module(cudarc::nvrtc::compile_ptx(KERNELS)?)?;
    let f = module.load_function("spin_then_fill")?;
    let n: u32 = 1 << 20;
    let (h, p) = vk
        .interop()
        .alloc_on(AllocDesc::new("x", u64::from(n) * 4).uninit(), sa)?;
    let mut launch = a.launch_builder(&f);
    launch
        .arg(&p.address)
        .arg(&n)
        .arg(&1u32)
        .arg(&100_000_000i64);
    // SAFETY: `n` u32 at a pointer of 4n bytes, released after the launch in A's order.
    unsafe { launch.launch(LaunchConfig::for_num_elems(n)) }?;
    vk.release(h)?;
    let (h2, p2) = vk
        .interop()
        .alloc_on(AllocDesc::new("y", u64::from(n) * 4).uninit(), sa)?;
    assert_eq!(p2.address, p.address, "same stream: reused at once");
    // SAFETY: querying a live stream.
    let busy = unsafe { cudarc::driver::sys::cuStreamQuery(a.cu_stream()) };
    assert_eq!(
        busy,
        cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_READY,
        "the allocation waited for the stream"
    );
    a.synchronize()?;
    vk.release(h2)?;
    vk.interop().forget_stream(sa)?;
    Ok(())
}

/// With the unmapping thread, pages that stream A released while its kernel still writes them
/// move to A's next request without the host waiting: A's order keeps the new kernel after the
/// old one, and the old place is unmapped only once A passed. Checked with data: the moved
/// pages end holding the new kernel's value, not the old one's, and the old kernel's writes
/// to its place (unmapped later) do not fault.
#[test]
fn pages_a_busy_stream_released_move_to_its_next_request_without_a_wait() -> anyhow::Result<()> {
    use vramkit::backend::cuda::{CudaBackend, CudaConfig};
    use vramkit::memory::CompactionDesc;
    const MIB: u64 = 1 << 20;
    let Some(probe) = try_cuda("cuda_streams", ContextDesc::default()) else {
        return Ok(());
    };
    drop(probe);
    let config = CudaConfig {
        background_unmap: true,
        page_growth: false,
        ..Default::default()
    };
    // As the C ABI's contexts: pages follow the live set, nothing moves allocations.
    let desc = ContextDesc {
        follow_live: true,
        compaction: CompactionDesc {
            before_growth: false,
            ..Default::default()
        },
        ..Default::default()
    };
    let vk = vramkit::Context::with_backend(
        CudaBackend::with_config(0, config)?,
        common::with_env(desc),
    );
    let cu = CudaContext::new(0)?;
    let a = cu.new_stream()?;
    // SAFETY: a stream of device 0's primary context, alive until the end of the test, after
    // the context forgot it.
    let sa = unsafe { ForeignStream::from_raw(a.cu_stream() as u64) };
    let module = cu.load_module(cudarc::nvrtc::compile_ptx(KERNELS)?)?;
    let f = module.load_function("spin_then_fill")?;
    let alloc = |mib: u64| {
        vk.interop()
            .alloc_on(AllocDesc::new("t", mib * 32 * MIB).uninit(), sa)
    };
    // [K0][W][K1][Y][K2] on A, in 32 MiB units (16 pages of 2 MiB).
    let (k0, _) = alloc(1)?;
    let (w, _) = alloc(8)?;
    let (k1, _) = alloc(1)?;
    let (y, py) = alloc(4)?;
    let (k2, _) = alloc(1)?;
    a.synchronize()?;
    // W goes; a request that fits no hole grows the segment, and W's pages move to its end.
    vk.release(w)?;
    let (g, _) = alloc(9)?;
    let before = vk.stats().pages;
    // A's kernel spins (about 50 ms), then writes Y; Y is released behind it.
    let n = u32::try_from(4 * 32 * MIB / 4)?;
    let mut launch = a.launch_builder(&f);
    launch
        .arg(&py.address)
        .arg(&n)
        .arg(&0xdead_beefu32)
        .arg(&100_000_000i64);
    // SAFETY: `n` u32 at Y's pointer, which holds 4n bytes, released after the launch in A's
    // order.
    unsafe { launch.launch(LaunchConfig::for_num_elems(n)) }?;
    vk.release(y)?;
    // 6 units fit only W's place, without memory now: Y's pages move there.
    let (z, pz) = alloc(6)?;
    // SAFETY: querying a live stream.
    let busy = unsafe { cudarc::driver::sys::cuStreamQuery(a.cu_stream()) };
    let moved = vk.stats().pages.moved_bytes - before.moved_bytes;
    assert!(
        moved >= 2 * 32 * MIB,
        "Y's pages did not move ({moved} bytes moved)"
    );
    assert_eq!(
        busy,
        cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_READY,
        "the allocation waited for stream A"
    );
    let nz = u32::try_from(6 * 32 * MIB / 4)?;
    let mut launch = a.launch_builder(&f);
    launch.arg(&pz.address).arg(&nz).arg(&0x600du32).arg(&0i64);
    // SAFETY: `nz` u32 at Z's pointer, which holds 4nz bytes.
    unsafe { launch.launch(LaunchConfig::for_num_elems(nz)) }?;
    a.synchronize()?;
    let got: Vec<u32> = vk.download_vec(z)?;
    let wrong = got.iter().filter(|&&x| x != 0x600d).count();
    assert_eq!(
        wrong, 0,
        "{wrong} words of the moved pages are not the new kernel's"
    );
    for h in [k0, k1, k2, g, z] {
        vk.release(h)?;
    }
    vk.observe().audit().check()?;
    vk.interop().forget_stream(sa)?;
    Ok(())
}

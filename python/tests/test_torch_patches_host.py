"""What vramkit.torch patches, checked on the host backend without PyTorch: PyTorch's memory
statistics served from vramkit's figures (vramkit._torch_stats: the nested dict has every key
``torch.cuda.memory_summary`` reads, its figures follow a model of what was allocated, peaks
and accumulated counts restart, and install() replaces exactly the functions a ``torch._C``
has), and CUDA graph capture refused with its reason (vramkit._torch_graphs)."""

import types

import pytest

import vramkit
from vramkit import _torch_stats

#: What torch.cuda.memory_summary reads of the flattened stats (torch/cuda/memory.py).
SUMMARY_METRICS = (
    "allocated_bytes",
    "active_bytes",
    "requested_bytes",
    "reserved_bytes",
    "inactive_split_bytes",
    "allocation",
    "active",
    "segment",
    "inactive_split",
)
SUMMARY_FLAT = ("oversize_allocations", "oversize_segments")
KEYS = ("current", "peak", "allocated", "freed")


def flatten(nested, prefix=""):
    """As torch.cuda.memory_stats flattens the nested dict."""
    out = {}
    for key, value in nested.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def test_every_key_the_summary_reads_is_there(no_budget):
    flat = flatten(_torch_stats.nested_stats(0))
    pools = ("all", "large_pool", "small_pool")
    wanted = {f"{m}.{pool}.{k}" for m in SUMMARY_METRICS for pool in pools for k in KEYS}
    wanted |= {f"{m}.{k}" for m in SUMMARY_FLAT for k in KEYS}
    wanted |= {"num_ooms", "num_alloc_retries"}
    assert wanted <= set(flat), sorted(wanted - set(flat))
    assert all(isinstance(v, int) for v in flat.values())
    assert _torch_stats.flat_stats(0) == flatten(_torch_stats.nested_stats(0))
    for metric in SUMMARY_METRICS:
        assert flat[f"{metric}.all.peak"] >= flat[f"{metric}.all.current"], metric


def test_figures_follow_a_model_and_peaks_and_counts_restart(no_budget):
    _torch_stats.reset_accumulated(0)
    in_use_at_reset = vramkit.stats(0)["in_use"]
    big = vramkit.malloc(8 << 20)
    vramkit.free(big)
    vramkit.reset_peaks(0)
    sizes = [1 << 20, 3000, 4 << 20]
    ptrs = [vramkit.malloc(n) for n in sizes]
    s = vramkit.stats(0)
    flat = flatten(_torch_stats.nested_stats(0))
    assert flat["allocated_bytes.all.current"] == s["in_use"]
    assert flat["allocated_bytes.all.peak"] == s["in_use"], "the peak restarted below the 8 MiB"
    assert flat["requested_bytes.all.peak"] == s["requested"]
    assert flat["reserved_bytes.all.current"] == s["reserved"]
    assert flat["allocation.all.current"] == s["live"]
    # Counted since the reset of accumulated figures: the 8 MiB block and the three.
    assert flat["allocation.all.allocated"] == 4
    assert flat["allocation.all.freed"] == 1
    assert flat["allocated_bytes.all.allocated"] >= (8 << 20) + sum(sizes)
    assert flat["allocated_bytes.all.freed"] >= 8 << 20
    assert (
        flat["allocated_bytes.all.allocated"] - flat["allocated_bytes.all.freed"]
        == flat["allocated_bytes.all.current"] - in_use_at_reset
    )
    assert flat["allocated_bytes.large_pool.current"] == s["in_use"]
    assert flat["allocated_bytes.small_pool.current"] == 0
    assert flat["segment.all.current"] == s["segments"] >= 1
    for p in ptrs:
        vramkit.free(p)
    vramkit.reset_peaks(0)
    flat = flatten(_torch_stats.nested_stats(0))
    assert flat["allocated_bytes.all.peak"] == flat["allocated_bytes.all.current"]
    assert flat["allocation.all.peak"] == flat["allocation.all.current"]
    _torch_stats.reset_accumulated(0)
    flat = flatten(_torch_stats.nested_stats(0))
    assert flat["allocation.all.allocated"] == flat["allocation.all.freed"] == 0
    assert flat["allocated_bytes.all.allocated"] == 0


def test_install_replaces_the_functions_a_torch_c_has():
    def memory_stats(device):
        raise RuntimeError("CUDAPluggableAllocator does not yet support getDeviceStats")

    def reset_peak(device):
        raise RuntimeError("CUDAPluggableAllocator does not yet support resetPeakStats")

    fake = types.SimpleNamespace(
        _cuda_memoryStats=memory_stats,
        _cuda_resetPeakMemoryStats=reset_peak,
        _cuda_getDevice=lambda: 0,
    )
    _torch_stats.install(fake)
    assert fake._cuda_memoryStats.__wrapped__ is memory_stats
    assert fake._cuda_resetPeakMemoryStats.__wrapped__ is reset_peak
    assert not hasattr(fake, "_accelerator_getDeviceStats"), "only what this torch has"
    assert not hasattr(fake, "_cuda_resetAccumulatedMemoryStats")
    nested = fake._cuda_memoryStats(0)
    assert nested["allocated_bytes"]["all"]["current"] == vramkit.stats(0)["in_use"]
    assert fake._cuda_memoryStats(None)["allocation"]["all"]["current"] == vramkit.stats(0)["live"]
    p = vramkit.malloc(1 << 20)
    vramkit.free(p)
    fake._cuda_resetPeakMemoryStats(0)
    assert vramkit.stats(0)["peak_in_use"] == vramkit.stats(0)["in_use"]
    replaced = fake._cuda_memoryStats
    _torch_stats.install(fake)
    assert fake._cuda_memoryStats is replaced, "installed once"


def test_reset_peaks_of_every_device_and_a_bad_device(no_budget):
    p = vramkit.malloc(16 << 20)
    vramkit.free(p)
    assert vramkit.stats(0)["peak_in_use"] >= vramkit.stats(0)["in_use"] + (16 << 20)
    vramkit.reset_peaks()
    s = vramkit.stats(0)
    assert (s["peak_in_use"], s["peak_requested"], s["peak_live"]) == (s["in_use"], s["requested"], s["live"])
    with pytest.raises(vramkit.VramkitError):
        vramkit.reset_peaks(64)


def test_graph_capture_is_refused_with_the_reason():
    from vramkit import _torch_graphs

    entered = []

    class CUDAGraph:
        def capture_begin(self, pool=None, capture_error_mode="global"):
            entered.append("capture")

    class graph:
        def __init__(self, cuda_graph):
            self.cuda_graph = cuda_graph

        def __enter__(self):
            entered.append("side stream")  # PyTorch switches streams here, then captures
            self.cuda_graph.capture_begin()

        def __exit__(self, *exc):
            return False

    def check_pool(device, pool, storages):
        return True

    def make_graphed_callables(callables, sample_args):
        entered.append("warm-up on a side stream")

    graphs = types.SimpleNamespace(
        CUDAGraph=CUDAGraph, graph=graph, make_graphed_callables=make_graphed_callables
    )
    fake = types.SimpleNamespace(
        cuda=types.SimpleNamespace(graphs=graphs, make_graphed_callables=make_graphed_callables),
        _C=types.SimpleNamespace(_cuda_checkPoolLiveAllocations=check_pool),
    )
    original = CUDAGraph.capture_begin
    _torch_graphs.install(fake)
    with pytest.raises(_torch_graphs.CudaGraphsUnsupportedError) as e:
        with graph(CUDAGraph()):
            pass
    assert entered == [], "refused before the stream was switched"
    assert "max-autotune-no-cudagraphs" in str(e.value)
    assert isinstance(e.value, RuntimeError)
    with pytest.raises(_torch_graphs.CudaGraphsUnsupportedError):
        CUDAGraph().capture_begin(capture_error_mode="thread_local")
    with pytest.raises(_torch_graphs.CudaGraphsUnsupportedError):
        fake._C._cuda_checkPoolLiveAllocations(0, (0, 1), [])
    for f in (fake.cuda.make_graphed_callables, fake.cuda.graphs.make_graphed_callables):
        with pytest.raises(_torch_graphs.CudaGraphsUnsupportedError):
            f((lambda x: x,), ((1,),))
    assert not hasattr(fake._C, "_cuda_beginAllocateCurrentThreadToPool"), "only what it has"
    assert CUDAGraph.capture_begin.__wrapped__ is original
    refused = CUDAGraph.capture_begin
    _torch_graphs.install(fake)
    assert CUDAGraph.capture_begin is refused, "installed once"
    assert entered == []


def test_a_device_never_used_reads_zero_and_stays_closed():
    from vramkit import _lib

    lib = _lib.load()
    vramkit.stats(0)  # opens device 0, whichever test ran before
    assert lib.vramkit_device_open(0) == 1
    assert lib.vramkit_device_open(40) == 0
    flat = flatten(_torch_stats.nested_stats(40))
    assert flat["allocated_bytes.all.current"] == flat["reserved_bytes.all.peak"] == 0
    assert set(flat) == set(flatten(_torch_stats.nested_stats(0))), "the same shape"
    _torch_stats.reset_peaks_if_open(40)
    _torch_stats.reset_accumulated(40)
    assert lib.vramkit_device_open(40) == 0, "reading and resetting opened nothing"
    assert lib.vramkit_device_open(64) == -1

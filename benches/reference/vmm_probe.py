"""What the CUDA driver's memory calls cost on this GPU, to choose how the CUDA backend grows
its pools: cuMemAlloc/cuMemFree at several sizes, and the virtual-memory calls
(cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease) that
growable segments need, per 2 MiB page and per 64 MiB, and unmapping 32 adjacent pages with
one call against one call each. Also a 256 MiB device-to-device copy
(what a compaction pass of that size costs the GPU). Prints one JSON object.
"""
import json
import time

from cuda.bindings import driver as cu


def ok(r):
    err = r[0]
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(str(err))
    return r[1] if len(r) == 2 else r[1:]


def timed(fn, reps):
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e6


def main():
    ok(cu.cuInit(0))
    dev = ok(cu.cuDeviceGet(0))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
    ok(cu.cuCtxSetCurrent(ctx))
    out = {"device": ok(cu.cuDeviceGetName(64, dev)).decode().strip("\x00")}
    for size in [2 << 20, 20 << 20, 64 << 20, 256 << 20, 1 << 30]:
        def pair():
            p = ok(cu.cuMemAlloc(size))
            ok(cu.cuMemFree(p))
        out[f"cuMemAlloc+cuMemFree_{size >> 20}MiB_us"] = round(timed(pair, 20), 1)

    prop = cu.CUmemAllocationProp()
    prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = 0
    gran = ok(cu.cuMemGetAllocationGranularity(
        prop, cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM))
    out["granularity"] = gran
    access = cu.CUmemAccessDesc()
    access.location = prop.location
    access.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    va_size = 64 << 30
    va = ok(cu.cuMemAddressReserve(va_size, 0, 0, 0))
    for size in [gran, 64 << 20]:
        t = {"create": [], "map": [], "access": [], "unmap": [], "release": []}
        for _ in range(20):
            s = time.perf_counter()
            h = ok(cu.cuMemCreate(size, prop, 0))
            t["create"].append(time.perf_counter() - s)
            s = time.perf_counter()
            ok(cu.cuMemMap(va, size, 0, h, 0))
            t["map"].append(time.perf_counter() - s)
            s = time.perf_counter()
            ok(cu.cuMemSetAccess(va, size, [access], 1))
            t["access"].append(time.perf_counter() - s)
            s = time.perf_counter()
            ok(cu.cuMemUnmap(va, size))
            t["unmap"].append(time.perf_counter() - s)
            s = time.perf_counter()
            ok(cu.cuMemRelease(h))
            t["release"].append(time.perf_counter() - s)
        for k, v in t.items():
            out[f"vmm_{k}_{size >> 20}MiB_us"] = round(min(v) * 1e6, 1)
    # A run of 32 pages, one handle each, mapped side by side: unmapped with one call for the
    # whole range against one call per page.
    pages = 32
    base = int(va)
    for how in ["one_call", "per_page"]:
        best = float("inf")
        for _ in range(10):
            hs = [ok(cu.cuMemCreate(gran, prop, 0)) for _ in range(pages)]
            for i, h in enumerate(hs):
                ok(cu.cuMemMap(base + i * gran, gran, 0, h, 0))
            ok(cu.cuMemSetAccess(va, pages * gran, [access], 1))
            s = time.perf_counter()
            if how == "one_call":
                ok(cu.cuMemUnmap(va, pages * gran))
            else:
                for i in range(pages):
                    ok(cu.cuMemUnmap(base + i * gran, gran))
            best = min(best, time.perf_counter() - s)
            for h in hs:
                ok(cu.cuMemRelease(h))
        out[f"vmm_unmap_{pages}_pages_{how}_us"] = round(best * 1e6, 1)
    ok(cu.cuMemAddressFree(va, va_size))

    stream = ok(cu.cuStreamCreate(1))
    size = 256 << 20
    a = ok(cu.cuMemAlloc(size))
    b = ok(cu.cuMemAlloc(size))
    start, stop = ok(cu.cuEventCreate(0)), ok(cu.cuEventCreate(0))
    best = float("inf")
    for _ in range(10):
        ok(cu.cuEventRecord(start, stream))
        ok(cu.cuMemcpyDtoDAsync(b, a, size, stream))
        ok(cu.cuEventRecord(stop, stream))
        ok(cu.cuEventSynchronize(stop))
        best = min(best, ok(cu.cuEventElapsedTime(start, stop)))
    out["dtod_256MiB_ms"] = round(best, 4)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

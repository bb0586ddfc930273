"""What the CUDA driver's page calls cost while the GPU is busy, and whether they wait for it:
the costs that decide how pages can follow a live set on a device that runs a program's
kernels. Each call is timed on an idle device and while a spinning kernel (PyTorch's
`torch.cuda._sleep`, on a stream of its own) runs for about 50 ms; `waited` says whether the
kernel had finished when the call returned. Also: one physical handle mapped at a second
address while still mapped at the first (the two addresses see the same bytes), and access set
for 32 pages mapped one handle each with one call against one call a page. Prints one JSON
object.
"""
import json
import time

import torch
from cuda.bindings import driver as cu


def ok(r):
    err = r[0]
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(str(err))
    return r[1] if len(r) == 2 else r[1:]


def spin_cycles(ms):
    """Clock cycles `torch.cuda._sleep` needs for about `ms` milliseconds."""
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        torch.cuda._sleep(10_000_000)
        e1.record()
    e1.synchronize()
    per_ms = 10_000_000 / e0.elapsed_time(e1)
    return int(per_ms * ms), s


def main():
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    ok(cu.cuInit(0))
    dev = ok(cu.cuDeviceGet(0))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
    ok(cu.cuCtxSetCurrent(ctx))
    out = {"device": ok(cu.cuDeviceGetName(64, dev)).decode().strip("\x00")}
    cycles, busy_stream = spin_cycles(50)

    prop = cu.CUmemAllocationProp()
    prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = 0
    page = ok(cu.cuMemGetAllocationGranularity(
        prop, cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM))
    access = cu.CUmemAccessDesc()
    access.location = prop.location
    access.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    va_size = 1 << 30
    va = int(ok(cu.cuMemAddressReserve(va_size, 0, 0, 0)))

    def busy():
        with torch.cuda.stream(busy_stream):
            done = torch.cuda.Event()
            torch.cuda._sleep(cycles)
            done.record()
        return done

    def timed(call, under_load):
        """Best of 5: host microseconds, and whether the spinning kernel had finished."""
        best, waited = float("inf"), False
        for _ in range(5):
            done = busy() if under_load else None
            s = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - s)
            if done is not None:
                waited |= done.query()
                done.synchronize()
        return round(best * 1e6, 1), waited

    for load in ["idle", "busy"]:
        under = load == "busy"
        h = [None]
        res = {}
        res["create"] = timed(lambda: h.__setitem__(0, ok(cu.cuMemCreate(page, prop, 0))), under)
        ok(cu.cuMemRelease(h[0]))

        # Each call timed alone, the others done outside the timer.
        times = {"map": [], "access": [], "unmap": [], "release": []}
        waited = {k: False for k in times}
        for _ in range(5):
            hh = ok(cu.cuMemCreate(page, prop, 0))
            done = busy() if under else None
            s = time.perf_counter()
            ok(cu.cuMemMap(va, page, 0, hh, 0))
            times["map"].append(time.perf_counter() - s)
            waited["map"] |= bool(done and done.query())
            s = time.perf_counter()
            ok(cu.cuMemSetAccess(va, page, [access], 1))
            times["access"].append(time.perf_counter() - s)
            waited["access"] |= bool(done and done.query())
            if done:
                done.synchronize()
            done = busy() if under else None
            s = time.perf_counter()
            ok(cu.cuMemUnmap(va, page))
            times["unmap"].append(time.perf_counter() - s)
            waited["unmap"] |= bool(done and done.query())
            s = time.perf_counter()
            ok(cu.cuMemRelease(hh))
            times["release"].append(time.perf_counter() - s)
            waited["release"] |= bool(done and done.query())
            if done:
                done.synchronize()
        for k, v in times.items():
            res[k] = (round(min(v) * 1e6, 1), waited[k])
        out[load] = {k: {"us": v[0], "waited_for_kernel": v[1]} for k, v in res.items()}

    # One handle at two addresses: map it at a second place while the first mapping stays.
    hh = ok(cu.cuMemCreate(page, prop, 0))
    first, second = va, va + 64 * page
    ok(cu.cuMemMap(first, page, 0, hh, 0))
    ok(cu.cuMemSetAccess(first, page, [access], 1))
    alias = {}
    for load in ["idle", "busy"]:
        best, waited = float("inf"), False
        for _ in range(5):
            done = busy() if load == "busy" else None
            s = time.perf_counter()
            ok(cu.cuMemMap(second, page, 0, hh, 0))
            ok(cu.cuMemSetAccess(second, page, [access], 1))
            best = min(best, time.perf_counter() - s)
            waited |= bool(done and done.query())
            if done:
                done.synchronize()
            ok(cu.cuMemUnmap(second, page))
        alias[load] = {"map_and_access_us": round(best * 1e6, 1), "waited_for_kernel": waited}
    ok(cu.cuMemMap(second, page, 0, hh, 0))
    ok(cu.cuMemSetAccess(second, page, [access], 1))
    ok(cu.cuMemsetD8(first, 0x5A, page))
    ok(cu.cuCtxSynchronize())
    back = bytearray(page)
    ok(cu.cuMemcpyDtoH(back, second, page))
    alias["second_sees_first"] = all(b == 0x5A for b in back[:: 4096])
    ok(cu.cuMemUnmap(second, page))
    ok(cu.cuMemUnmap(first, page))
    ok(cu.cuMemRelease(hh))
    out["alias"] = alias

    # Access for 32 pages, one handle each, mapped side by side: one call against one a page.
    pages = 32
    for how in ["one_call", "per_page"]:
        best = float("inf")
        for _ in range(5):
            hs = [ok(cu.cuMemCreate(page, prop, 0)) for _ in range(pages)]
            for i, x in enumerate(hs):
                ok(cu.cuMemMap(va + i * page, page, 0, x, 0))
            s = time.perf_counter()
            if how == "one_call":
                ok(cu.cuMemSetAccess(va, pages * page, [access], 1))
            else:
                for i in range(pages):
                    ok(cu.cuMemSetAccess(va + i * page, page, [access], 1))
            best = min(best, time.perf_counter() - s)
            ok(cu.cuMemUnmap(va, pages * page))
            for x in hs:
                ok(cu.cuMemRelease(x))
        out[f"access_{pages}_pages_{how}_us"] = round(best * 1e6, 1)
    ok(cu.cuMemAddressFree(va, va_size))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

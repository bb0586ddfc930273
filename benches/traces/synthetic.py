"""Synthetic allocation traces, in the format of `capture.py`, shaped like programs no stored
trace comes from, to check reserved ÷ live on patterns the live workloads do not show:

* `moe`: a mixture of experts whose top-2 routing changes every step (tokens per expert drawn
  from a Pareto law, so a few experts take most), odd seeds with a varying batch;
* `varlen`: a transformer on batches of random sequence length (attention scores grow with
  its square);
* `kv`: serving, each request's cache reallocated larger as it grows, requests ending at
  random;
* `scatter`: many small tensors a step, one in twenty kept for up to twenty steps, so
  stragglers pin pages among the freed ones;
* `phases`: big activations, then thousands of small allocations, alternating.

Sizes are rounded to 512 bytes as PyTorch's are. Usage:

    python3 benches/traces/synthetic.py OUTDIR
    cd capi && VRAMKIT_BACKEND=null VRAMKIT_TRACES=OUTDIR cargo bench --bench replay_capi
"""

import gzip
import json
import os
import random
import sys


def r512(n):
    return max(512, (n + 511) // 512 * 512)


class T:
    def __init__(self):
        self.ev = []
        self.n = 0
        self.live = {}
        self.cur = 0
        self.peak = 0

    def a(self, size):
        size = r512(int(size))
        i = self.n
        self.n += 1
        self.ev.append(f"a {size}")
        self.live[i] = size
        self.cur += size
        self.peak = max(self.peak, self.cur)
        return i

    def f(self, i):
        self.ev.append(f"f {i}")
        self.cur -= self.live.pop(i)

    def write(self, path, name):
        with gzip.open(path, "wt") as g:
            g.write(
                "# "
                + json.dumps(
                    {
                        "workload": name,
                        "doc": "synthetic",
                        "allocations": self.n,
                        "releases": self.n - len(self.live),
                        "live_peak_bytes": self.peak,
                    }
                )
                + "\n"
            )
            g.write("\n".join(self.ev) + "\n")


def moe(seed, steps=12, layers=8, experts=16, hidden=2048, tokens=8192, skew=1.5):
    rng = random.Random(seed)
    t = T()
    # bf16 expert weights, one block a layer, and the optimizer's state: live throughout.
    params = [t.a(hidden * hidden * 4 * 2 * experts // 4) for _ in range(layers)]
    for _ in range(layers):
        t.a(hidden * hidden * 4 * 2 * experts // 4 * 2)
    for step in range(steps):
        b = rng.choice([4096, 6144, 8192, 12288]) if seed % 2 else tokens
        saved = []
        x = t.a(b * hidden * 2)
        for l in range(layers):
            logits = t.a(b * experts * 4)
            probs = t.a(b * experts * 4)
            w = [rng.paretovariate(skew) for _ in range(experts)]
            s = sum(w)
            counts = [int(b * 2 * wi / s) for wi in w]  # top-2 routing
            idx = t.a(b * 2 * 8)
            t.f(logits)
            outs = []
            for e, c in enumerate(counts):
                if c == 0:
                    continue
                xin = t.a(c * hidden * 2)
                h = t.a(c * hidden * 4 * 2)
                act = t.a(c * hidden * 4 * 2)
                y = t.a(c * hidden * 2)
                saved += [xin, h, act]
                t.f(act) if rng.random() < 0.3 else None
                outs.append(y)
            comb = t.a(b * hidden * 2)
            for y in outs:
                t.f(y)
            saved += [probs, idx, x]
            x = comb
        loss = t.a(4096)
        # backward: free saved in reverse, with gradient buffers
        g = t.a(b * hidden * 2)
        for i in reversed(saved):
            if i in t.live:
                gi = t.a(t.live[i])
                t.f(i)
                t.f(gi)
        t.f(g)
        t.f(loss)
        t.f(x)
        grads = [t.a(t.live[p]) for p in params]
        for gr in grads:
            t.f(gr)
    return t


def varlen(seed, steps=30, layers=12, hidden=1024, heads=16):
    rng = random.Random(seed)
    t = T()
    for _ in range(layers):  # weights, live throughout
        t.a(hidden * hidden * 12 * 2)
    for step in range(steps):
        bsz = rng.choice([8, 16, 32])
        L = rng.randrange(32, 1024)
        saved = []
        x = t.a(bsz * L * hidden * 2)
        for l in range(layers):
            q = t.a(bsz * L * hidden * 2)
            k = t.a(bsz * L * hidden * 2)
            v = t.a(bsz * L * hidden * 2)
            s = t.a(bsz * heads * L * L * 2)
            p = t.a(bsz * heads * L * L * 2)
            t.f(s)
            o = t.a(bsz * L * hidden * 2)
            ff = t.a(bsz * L * hidden * 4 * 2)
            y = t.a(bsz * L * hidden * 2)
            saved += [q, k, v, p, o, ff, x]
            x = y
        for i in reversed(saved):
            gi = t.a(t.live[i])
            t.f(i)
            t.f(gi)
        t.f(x)
    return t


def kv(seed, requests=60, layers=16, hidden=2048):
    rng = random.Random(seed)
    t = T()
    for _ in range(layers):  # weights, live throughout
        t.a(hidden * hidden * 12 * 2)
    cache = {}
    for r in range(requests):
        # start a request, grow others' caches by reallocating (cat), end some
        cache[r] = [t.a(rng.randrange(16, 512) * hidden * 2 * 2) for _ in range(layers)]
        for q in list(cache):
            if rng.random() < 0.15:
                for i in cache.pop(q):
                    t.f(i)
                continue
            new = []
            for i in cache[q]:
                n = t.a(t.live[i] + hidden * 2 * 2 * rng.randrange(1, 8))
                t.f(i)
                new.append(n)
            cache[q] = new
            tmp = t.a(rng.randrange(1, 64) * hidden * 4 * 2)
            t.f(tmp)
    return t


def scatter(seed, steps=40):
    """Small tensors, some kept for many steps among many freed: pages pinned by stragglers."""
    rng = random.Random(seed)
    t = T()
    kept = []
    for _ in range(8):  # weights, live throughout
        t.a(256 << 20)
    for step in range(steps):
        tmp = []
        for i in range(1500):
            n = t.a(
                rng.choice([4096, 65536, 262144, 1 << 20, 3 << 20, rng.randrange(512, 8 << 20)])
            )
            (kept if rng.random() < 0.05 else tmp).append((n, step + rng.randrange(1, 20)))
        act = [t.a(rng.randrange(16, 256) << 20) for _ in range(6)]
        for n, _ in tmp:
            t.f(n)
        for a in act:
            t.f(a)
        for n, until in list(kept):
            if until <= step:
                t.f(n)
                kept.remove((n, until))
    return t


def phases(seed):
    """A training phase of big activations, then an eval phase of many small ones, alternating."""
    rng = random.Random(seed)
    t = T()
    keep = []
    for cycle in range(6):
        acts = [t.a(rng.randrange(64, 512) << 20) for _ in range(20)]
        for a in acts:
            t.f(a)
        for i in range(4000):
            n = t.a(rng.randrange(512, 2 << 20))
            if rng.random() < 0.02:
                keep.append(n)
            else:
                t.f(n)
        if len(keep) > 200:
            for n in keep[:100]:
                t.f(n)
            keep = keep[100:]
    return t


KINDS = {"moe": moe, "varlen": varlen, "kv": kv, "scatter": scatter, "phases": phases}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: synthetic.py OUTDIR")
    os.makedirs(sys.argv[1], exist_ok=True)
    for name, fn in KINDS.items():
        for seed in (1, 2, 3):
            t = fn(seed)
            t.write(f"{sys.argv[1]}/synth_{name}{seed}.trace.gz", f"synth_{name}{seed}")
            print(f"synth_{name}{seed}: {t.n} allocations, live peak {t.peak / 1e9:.2f} GB")


if __name__ == "__main__":
    main()

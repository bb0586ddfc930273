"""Capture real allocation traces from PyTorch training and inference runs on a CUDA GPU.

Each workload runs in a fresh process with PyTorch's memory history on
(`torch.cuda.memory._record_memory_history`), then the snapshot's trace is written as a
vramkit trace: gzip'd text, one event per line:

    # {"workload": ..., "torch": {...PyTorch's own figures...}}     header lines (JSON)
    a SIZE      allocation number i (i counts 'a' lines from 0) of SIZE bytes
    f I         release of allocation number I

Sizes are the sizes PyTorch's allocator was asked for after its own rounding (multiples of
512 bytes). Frees are the moments the memory went back to PyTorch's pool (`free_completed`).
Allocations made before recording started are left out; allocations still live when the
workload ends stay live (the replay releases them at the end).

Usage (on the GPU machine):
    python3 benches/traces/capture.py OUTDIR            # every workload
    python3 benches/traces/capture.py OUTDIR gpt_train   # one
The live benchmark's workloads (benches/torch/workloads.py: lora_llama, moe, convnext,
llama_serving, bert_varlen) are captured too when named, as `live_NAME`: 13 steps (3 warm-up
and 10 timed, as the benchmark's shorter runs), with the workloads' default kernels (not
run_one.py's deterministic settings, under which cuBLAS's workspaces may differ).
Models are built with random weights (no downloads); data is random.
"""
import gzip
import json
import os
import random
import subprocess
import sys
import time

WORKLOADS = ["gpt_train", "unet_train", "resnet_train", "vit_infer", "gpt_generate"]


def gpt_train(torch):
    """GPT-2 small (124M) trained with AdamW under bf16 autocast on batches of variable
    sequence length (64..1024 tokens), as a language-model fine-tune with dynamic padding."""
    from transformers import GPT2Config, GPT2LMHeadModel

    rng = random.Random(1)
    cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024)
    model = GPT2LMHeadModel(cfg).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(24):
        seq = rng.randint(64, 1024)
        ids = torch.randint(0, cfg.vocab_size, (4, seq), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def unet(torch):
    """A diffusion UNet (DDPM-style): residual blocks with GroupNorm and a timestep embedding,
    self-attention at the two lowest resolutions, skip connections."""
    nn = torch.nn
    F = torch.nn.functional

    class Res(nn.Module):
        def __init__(self, cin, cout, temb):
            super().__init__()
            self.n1 = nn.GroupNorm(32, cin)
            self.c1 = nn.Conv2d(cin, cout, 3, padding=1)
            self.t = nn.Linear(temb, cout)
            self.n2 = nn.GroupNorm(32, cout)
            self.c2 = nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x, t):
            h = self.c1(F.silu(self.n1(x)))
            h = h + self.t(t)[:, :, None, None]
            h = self.c2(F.silu(self.n2(h)))
            return h + self.skip(x)

    class Attn(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.n = nn.GroupNorm(32, c)
            self.qkv = nn.Conv2d(c, 3 * c, 1)
            self.o = nn.Conv2d(c, c, 1)

        def forward(self, x):
            b, c, hh, ww = x.shape
            q, k, v = self.qkv(self.n(x)).reshape(b, 3, 4, c // 4, hh * ww).unbind(1)
            a = F.scaled_dot_product_attention(q.transpose(-1, -2), k.transpose(-1, -2),
                                               v.transpose(-1, -2))
            return x + self.o(a.transpose(-1, -2).reshape(b, c, hh, ww))

    class UNet(nn.Module):
        def __init__(self, ch=(128, 256, 256, 512), temb=512):
            super().__init__()
            self.temb = nn.Sequential(nn.Linear(128, temb), nn.SiLU(), nn.Linear(temb, temb))
            self.inp = nn.Conv2d(4, ch[0], 3, padding=1)
            self.down = nn.ModuleList()
            self.up = nn.ModuleList()
            c = ch[0]
            skips = [c]
            for i, co in enumerate(ch):
                for _ in range(2):
                    self.down.append(nn.ModuleList([Res(c, co, temb),
                                                    Attn(co) if i >= 2 else nn.Identity()]))
                    c = co
                    skips.append(c)
                if i < len(ch) - 1:
                    self.down.append(nn.Conv2d(c, c, 3, stride=2, padding=1))
                    skips.append(c)
            self.mid = nn.ModuleList([Res(c, c, temb), Attn(c), Res(c, c, temb)])
            for i, co in reversed(list(enumerate(ch))):
                for _ in range(3):
                    self.up.append(nn.ModuleList([Res(c + skips.pop(), co, temb),
                                                  Attn(co) if i >= 2 else nn.Identity()]))
                    c = co
                if i > 0:
                    self.up.append(nn.Upsample(scale_factor=2))
            self.out = nn.Sequential(nn.GroupNorm(32, c), nn.SiLU(), nn.Conv2d(c, 4, 3, padding=1))

        def forward(self, x, t):
            half = 64
            f = torch.exp(-torch.arange(half, device=x.device) * (9.21 / half))
            e = t[:, None].float() * f[None]
            t = self.temb(torch.cat([e.sin(), e.cos()], 1))
            h = self.inp(x)
            hs = [h]
            for m in self.down:
                if isinstance(m, nn.ModuleList):
                    h = m[1](m[0](h, t))
                else:
                    h = m(h)
                hs.append(h)
            h = self.mid[2](self.mid[1](self.mid[0](h, t)), t)
            for m in self.up:
                if isinstance(m, nn.ModuleList):
                    h = m[1](m[0](torch.cat([h, hs.pop()], 1), t))
                else:
                    h = m(h)
            return self.out(h)

    return UNet()


def unet_train(torch):
    """Latent-diffusion UNet training: 64x64x4 latents, batch 24, noise-prediction MSE loss,
    AdamW, bf16 autocast."""
    model = unet(torch).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(12):
        x = torch.randn(24, 4, 64, 64, device="cuda")
        t = torch.randint(0, 1000, (24,), device="cuda")
        noise = torch.randn_like(x)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            pred = model(x + noise, t)
            loss = torch.nn.functional.mse_loss(pred.float(), noise)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def resnet_train(torch):
    """ResNet-50 image classification training (torchvision), batch 64 at 224x224, SGD with
    momentum, fp16 autocast with a gradient scaler, channels-last."""
    import torchvision

    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(12):
        x = torch.randn(64, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (64,), device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def vit_infer(torch):
    """ViT-B/16 inference (torchvision) in fp16, requests batched as they arrive: batch sizes
    1..64, plus the softmax and top-5 a server computes."""
    import torchvision

    rng = random.Random(3)
    model = torchvision.models.vit_b_16().cuda().half().eval()
    with torch.inference_mode():
        for _ in range(60):
            b = rng.randint(1, 64)
            x = torch.randn(b, 3, 224, 224, device="cuda", dtype=torch.float16)
            probs = model(x).float().softmax(-1)
            top = probs.topk(5, dim=-1)
            top.indices.cpu()
    torch.cuda.synchronize()


def gpt_generate(torch):
    """Autoregressive generation with a KV cache (GPT-2 medium, 355M, fp16): rounds of batch
    1..16, prompts of 16..512 tokens, 32..160 new tokens; the cache grows by one token a step."""
    from transformers import GPT2Config, GPT2LMHeadModel

    rng = random.Random(4)
    cfg = GPT2Config(n_layer=24, n_embd=1024, n_head=16, vocab_size=50257, n_positions=1024)
    model = GPT2LMHeadModel(cfg).cuda().half().eval()
    with torch.inference_mode():
        for _ in range(10):
            b, prompt, new = rng.randint(1, 16), rng.randint(16, 512), rng.randint(32, 160)
            ids = torch.randint(0, cfg.vocab_size, (b, prompt), device="cuda")
            out = model(input_ids=ids, use_cache=True)
            past, tokens = out.past_key_values, [ids]
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            for _ in range(new):
                tokens.append(nxt)
                out = model(input_ids=nxt, past_key_values=past, use_cache=True)
                past = out.past_key_values
                nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            torch.cat(tokens, 1).cpu()
            del out, past, tokens, nxt
    torch.cuda.synchronize()


LIVE_STEPS = 13


def live_workload(name):
    """The live benchmark's workload `name` (benches/torch/workloads.py), built and stepped
    LIVE_STEPS times."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch"))
    import workloads

    def run(torch):
        w = workloads.WORKLOADS[name]()
        for _ in range(LIVE_STEPS):
            w.step()
        torch.cuda.synchronize()

    run.__doc__ = f"The live benchmark's {name} workload (benches/torch/workloads.py), " \
        f"{LIVE_STEPS} steps."
    return run


def workload(name):
    """The function that runs workload `name` (`live_NAME`: the live benchmark's)."""
    if name.startswith("live_"):
        return live_workload(name[len("live_"):])
    return globals()[name]


def torch_figures(torch, seconds):
    s = torch.cuda.memory_stats()
    keys = [
        "allocated_bytes.all.peak", "reserved_bytes.all.peak", "requested_bytes.all.peak",
        "segment.all.allocated", "segment.all.peak", "segment.large_pool.allocated",
        "segment.small_pool.allocated", "num_alloc_retries", "num_ooms", "num_device_alloc",
        "num_device_free", "allocation.all.allocated",
    ]
    fig = {k: s[k] for k in keys if k in s}
    fig["torch_version"] = torch.__version__
    fig["device"] = torch.cuda.get_device_name()
    fig["run_seconds"] = round(seconds, 2)
    fig["allocator_conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    return fig


def convert(snapshot):
    """The snapshot's trace as ('a', size) / ('f', index) events, and its segment count."""
    events, live, segments, next_id = [], {}, 0, 0
    for e in snapshot["device_traces"][0]:
        action = e["action"]
        if action == "alloc":
            live[e["addr"]] = next_id
            next_id += 1
            events.append(("a", int(e["size"])))
        elif action == "free_completed":
            idx = live.pop(e["addr"], None)
            if idx is not None:
                events.append(("f", idx))
        elif action == "segment_alloc":
            segments += 1
    return events, segments


def run_one(name, outdir):
    import torch

    torch.manual_seed(0)
    torch.cuda.init()
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                             max_entries=20_000_000)
    t = time.time()
    run = workload(name)
    run(torch)
    seconds = time.time() - t
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    figures = torch_figures(torch, seconds)
    events, segments = convert(snap)
    figures["trace_segment_allocs"] = segments
    live = peak = 0
    sizes = {}
    for i, (kind, v) in enumerate(events):
        if kind == "a":
            sizes[len(sizes)] = v
            live += v
            peak = max(peak, live)
        else:
            live -= sizes[v]
    allocs = len(sizes)
    header = {
        "workload": name,
        "doc": run.__doc__.split("\n\n")[0].replace("\n", " "),
        "allocations": allocs,
        "releases": len(events) - allocs,
        "live_peak_bytes": peak,
        "torch": figures,
    }
    path = os.path.join(outdir, f"{name}.trace.gz")
    with gzip.open(path, "wt", compresslevel=9) as f:
        f.write("# " + json.dumps(header) + "\n")
        for kind, v in events:
            f.write(f"{kind} {v}\n")
    print(json.dumps(header), flush=True)


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    names = sys.argv[2:] or WORKLOADS
    if len(names) == 1:
        return run_one(names[0], outdir)
    for name in names:
        r = subprocess.run([sys.executable, __file__, outdir, name])
        if r.returncode != 0:
            print(f"workload {name} failed with exit code {r.returncode}", flush=True)


if __name__ == "__main__":
    main()

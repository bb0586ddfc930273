"""The PyTorch workloads of the allocator benchmark (run_one.py runs one of them).

Each workload is a function ``(batch_size, seed) -> object`` whose ``step()`` runs one
training (or serving) step on the benchmark device and returns the loss as a Python float
(a checksum of the generated tokens and logits for serving). ``batch_size=None`` takes the
workload's default for the current scale. Shapes that vary from step to step are drawn
from ``random.Random(seed)`` and the data from a device generator seeded with ``seed``, so
the same seed gives the same sequence of shapes and the same data under every allocator.

Models are built from configs (no weights, no downloads), directly on the device.

Environment:
  VRAMKIT_BENCH_DEVICE  the device (default ``cuda:0``; ``cpu`` only for dry runs)
  VRAMKIT_BENCH_SCALE   ``full`` (the benchmark, default), ``small`` (the sanitizer pass)
                        or ``tiny`` (CPU dry runs)
  VRAMKIT_BENCH_ATTN    attention of the three training workloads: ``eager`` (default;
                        deterministic backward) or ``sdpa`` (fused kernels, whose
                        backward is not deterministic under warn_only determinism);
                        serving always uses ``sdpa`` (forward only)

Dry run: ``VRAMKIT_BENCH_DEVICE=cpu VRAMKIT_BENCH_SCALE=tiny python workloads.py [NAME...]``
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SCALES = ("full", "small", "tiny")


def bench_device() -> torch.device:
    return torch.device(os.environ.get("VRAMKIT_BENCH_DEVICE", "cuda:0"))


def bench_scale() -> str:
    scale = os.environ.get("VRAMKIT_BENCH_SCALE", "full")
    if scale not in SCALES:
        raise ValueError(f"VRAMKIT_BENCH_SCALE={scale!r}: use one of {SCALES}")
    return scale


def training_attn() -> str:
    attn = os.environ.get("VRAMKIT_BENCH_ATTN", "eager")
    if attn not in ("eager", "sdpa"):
        raise ValueError(f"VRAMKIT_BENCH_ATTN={attn!r}: use eager or sdpa")
    return attn


def configure_determinism() -> None:
    """What makes the losses repeatable across processes and allocators.

    CUBLAS_WORKSPACE_CONFIG must already be in the environment before CUDA starts
    (run_one.py sets it). Uninitialised memory is not filled: filling would add a kernel
    per allocation and hide what the allocator hands out.
    """
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = False
    torch.backends.cudnn.benchmark = False


@contextlib.contextmanager
def _building(device: torch.device, dtype: torch.dtype):
    """Parameters made inside are made on ``device`` in ``dtype`` (no host copy)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            yield
    finally:
        torch.set_default_dtype(old)


def _generator(device: torch.device, seed: int) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


def _autocast(device: torch.device):
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def _jitter(rng: random.Random, batch: int) -> int:
    """``batch`` varied by up to ±50 %."""
    return max(1, round(batch * rng.uniform(0.5, 1.5)))


def _count(params) -> int:
    return sum(p.numel() for p in params)


# ---------------------------------------------------------------- Llama (LoRA, serving)

LLAMA = {
    # ~1B parameters: 16 layers of 2048, intermediate 5632, vocab 32000.
    "full": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=16,
                 num_key_value_heads=16, intermediate_size=5632, vocab_size=32000),
    "small": dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
                  num_key_value_heads=8, intermediate_size=1408, vocab_size=32000),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=4, intermediate_size=128, vocab_size=512),
}
LORA_SEQ = {"full": (256, 1024), "small": (64, 256), "tiny": (8, 32)}
LORA_BATCH = {"full": 4, "small": 1, "tiny": 2}
SERVE_PROMPT = {"full": (64, 512), "small": (16, 128), "tiny": (4, 16)}
SERVE_NEW = {"full": (8, 20), "small": (2, 4), "tiny": (2, 4)}
SERVE_BATCH = {"full": 24, "small": 2, "tiny": 3}


def _llama(attn: str):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(**LLAMA[bench_scale()], max_position_embeddings=2048,
                      tie_word_embeddings=False, attn_implementation=attn)
    cfg._attn_implementation = attn
    return cfg, LlamaForCausalLM


class LoraLlama:
    """LoRA fine-tuning (q_proj, v_proj) of a bf16 Llama with gradient checkpointing;
    sequence length drawn per step."""

    name = "lora_llama"

    def __init__(self, batch_size=None, seed=0):
        from peft import LoraConfig, get_peft_model

        scale = bench_scale()
        self.device = bench_device()
        self.batch = batch_size or LORA_BATCH[scale]
        self.seq = LORA_SEQ[scale]
        self.attn = training_attn()
        self.rng = random.Random(seed)
        self.gen = _generator(self.device, seed + 1)
        cfg, cls = _llama(self.attn)
        cfg.use_cache = False
        self.vocab = cfg.vocab_size
        torch.manual_seed(seed)
        with _building(self.device, torch.bfloat16):
            base = cls(cfg)
        base.config.use_cache = False
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05,
                          target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
        self.model = get_peft_model(base, lora)
        self.model.train()
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.opt = torch.optim.AdamW(self.params, lr=1e-4)
        self.info = dict(params=_count(self.model.parameters()), trainable=_count(self.params),
                         seq_range=list(self.seq), attn=self.attn)

    def step(self) -> float:
        seq = self.rng.randint(*self.seq)
        ids = torch.randint(0, self.vocab, (self.batch, seq), device=self.device, generator=self.gen)
        loss = self.model(input_ids=ids, labels=ids).loss
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return float(loss.detach().float().item())


class LlamaServing:
    """Batched greedy generation with a bf16 Llama: per step a new batch of requests
    (size drawn around ``batch_size``, prompt lengths drawn per request, left-padded),
    a prefill, then a drawn number of decode steps growing the KV cache."""

    name = "llama_serving"

    def __init__(self, batch_size=None, seed=0):
        import inspect

        scale = bench_scale()
        self.device = bench_device()
        self.batch = batch_size or SERVE_BATCH[scale]
        self.prompt = SERVE_PROMPT[scale]
        self.new = SERVE_NEW[scale]
        self.rng = random.Random(seed)
        self.gen = _generator(self.device, seed + 1)
        cfg, cls = _llama("sdpa")
        self.vocab = cfg.vocab_size
        torch.manual_seed(seed)
        with _building(self.device, torch.bfloat16):
            self.model = cls(cfg)
        self.model.eval()
        # transformers renamed past_key_values to cache in 5.x; take whichever it has.
        names = inspect.signature(self.model.forward).parameters
        self.cache_kw = "past_key_values" if "past_key_values" in names else "cache"
        self.info = dict(params=_count(self.model.parameters()), prompt_range=list(self.prompt),
                         new_tokens_range=list(self.new), batch_range=[max(1, round(self.batch * 0.5)),
                                                                       round(self.batch * 1.5)],
                         attn="sdpa", cache_kw=self.cache_kw)

    def _cache(self, out):
        return getattr(out, self.cache_kw)

    def step(self) -> float:
        batch = _jitter(self.rng, self.batch)
        lens = [self.rng.randint(*self.prompt) for _ in range(batch)]
        new = self.rng.randint(*self.new)
        width = max(lens)
        mask = torch.zeros(batch, width, dtype=torch.long)
        for i, n in enumerate(lens):
            mask[i, width - n:] = 1
        mask = mask.to(self.device)
        ids = torch.randint(1, self.vocab, (batch, width), device=self.device, generator=self.gen) * mask
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        tokens = []
        with torch.no_grad():
            out = self.model(input_ids=ids, attention_mask=mask, position_ids=pos,
                             use_cache=True, logits_to_keep=1)
            tok = out.logits[:, -1].argmax(-1)
            tokens.append(tok)
            for _ in range(new):
                cache = self._cache(out)
                mask = torch.cat([mask, mask.new_ones(batch, 1)], dim=1)
                pos = pos[:, -1:] + 1
                out = self.model(input_ids=tok[:, None], attention_mask=mask, position_ids=pos,
                                 use_cache=True, **{self.cache_kw: cache})
                tok = out.logits[:, -1].argmax(-1)
                tokens.append(tok)
            gen = torch.stack(tokens, dim=1)
            weights = torch.arange(1, gen.shape[1] + 1, device=self.device)
            token_sum = int((gen * weights).sum().item())
            logit_sum = float(out.logits.float().sum().item())
        return logit_sum + token_sum


# ---------------------------------------------------------------- mixture of experts

MOE = {
    "full": dict(d=1024, heads=16, layers=6, experts=8, ffn=4096, vocab=8192, seq=512),
    "small": dict(d=256, heads=4, layers=2, experts=4, ffn=512, vocab=1024, seq=128),
    "tiny": dict(d=32, heads=4, layers=2, experts=4, ffn=64, vocab=128, seq=16),
}
MOE_BATCH = {"full": 8, "small": 1, "tiny": 2}


def _attention(q, k, v, attn: str):
    if attn == "sdpa":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.MATH]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Experts(nn.Module):
    """Top-2 routed feed-forward experts. The (token, choice) slots are sorted by expert,
    gathered with index_select and run as one variable-sized batch per expert."""

    def __init__(self, d, ffn, experts):
        super().__init__()
        self.experts = experts
        self.router = nn.Linear(d, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, d, ffn) * d ** -0.5)
        self.w2 = nn.Parameter(torch.randn(experts, ffn, d) * ffn ** -0.5)

    def forward(self, x):
        tokens, d = x.shape
        probs = self.router(x).float().softmax(dim=-1)
        weight, expert = probs.topk(2, dim=-1)
        weight = weight / weight.sum(dim=-1, keepdim=True)
        slots = expert.reshape(-1)                    # slot s belongs to token s // 2
        order = torch.argsort(slots, stable=True)
        counts = torch.bincount(slots, minlength=self.experts)
        sizes = counts.tolist()                       # data-dependent: a sync, as in real MoE code
        gathered = x.index_select(0, order // 2)
        outs = []
        for e, chunk in enumerate(torch.split(gathered, sizes)):
            outs.append(F.gelu(chunk @ self.w1[e]) @ self.w2[e])
        back = torch.cat(outs).index_select(0, torch.argsort(order))
        y = (back.view(tokens, 2, d) * weight.unsqueeze(-1).to(back.dtype)).sum(dim=1)
        balance = self.experts * (counts.float() / slots.numel() * probs.mean(dim=0)).sum()
        return y, balance, sizes


class MoEBlock(nn.Module):
    def __init__(self, d, heads, ffn, experts, attn):
        super().__init__()
        self.heads, self.attn = heads, attn
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.norm2 = nn.LayerNorm(d)
        self.moe = Experts(d, ffn, experts)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = _attention(q, k, v, self.attn).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(a)
        y, balance, sizes = self.moe(self.norm2(x).reshape(b * s, d))
        return x + y.view(b, s, d), balance, sizes


class MoEModel(nn.Module):
    def __init__(self, d, heads, layers, experts, ffn, vocab, attn):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(MoEBlock(d, heads, ffn, experts, attn) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        balance, sizes = 0.0, []
        for block in self.blocks:
            x, bal, sz = block(x)
            balance = balance + bal
            sizes.append(sz)
        return self.head(self.norm(x)), balance, sizes


class MoE:
    """A plain-PyTorch MoE language model (fp32 weights, bf16 autocast, AdamW) trained on
    random tokens: every layer routes each token to 2 of its experts, so the experts'
    batch sizes (and so the allocation sizes) change from step to step and layer to layer."""

    name = "moe"

    def __init__(self, batch_size=None, seed=0):
        scale = bench_scale()
        self.cfg = dict(MOE[scale])
        self.device = bench_device()
        self.batch = batch_size or MOE_BATCH[scale]
        self.attn = training_attn()
        self.gen = _generator(self.device, seed + 1)
        c = self.cfg
        torch.manual_seed(seed)
        with _building(self.device, torch.float32):
            self.model = MoEModel(c["d"], c["heads"], c["layers"], c["experts"], c["ffn"], c["vocab"], self.attn)
        self.model.train()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=3e-4)
        self.last_sizes = None
        self.info = dict(params=_count(self.model.parameters()), attn=self.attn, **c)

    def step(self) -> float:
        c = self.cfg
        ids = torch.randint(0, c["vocab"], (self.batch, c["seq"] + 1), device=self.device, generator=self.gen)
        with _autocast(self.device):
            logits, balance, self.last_sizes = self.model(ids[:, :-1])
            loss = F.cross_entropy(logits.float().reshape(-1, c["vocab"]), ids[:, 1:].reshape(-1))
            loss = loss + 0.01 * balance
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return float(loss.detach().float().item())


# ---------------------------------------------------------------- ConvNeXt

CONV_RES = {"full": (160, 192, 224, 256), "small": (64, 96), "tiny": (32, 48, 64)}
CONV_BATCH = {"full": 96, "small": 2, "tiny": 4}


class ConvNext:
    """timm convnext_tiny training (channels_last, bf16 autocast, AdamW); each step draws
    a resolution and a batch size within ±50 % of ``batch_size``."""

    name = "convnext"

    def __init__(self, batch_size=None, seed=0):
        import timm

        scale = bench_scale()
        self.device = bench_device()
        self.batch = batch_size or CONV_BATCH[scale]
        self.res = CONV_RES[scale]
        self.rng = random.Random(seed)
        self.gen = _generator(self.device, seed + 1)
        torch.manual_seed(seed)
        with _building(self.device, torch.float32):
            model = timm.create_model("convnext_tiny", pretrained=False, num_classes=1000)
        self.model = model.to(self.device, memory_format=torch.channels_last)
        self.model.train()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3, weight_decay=0.05)
        self.info = dict(params=_count(self.model.parameters()), resolutions=list(self.res),
                         batch_range=[max(1, round(self.batch * 0.5)), round(self.batch * 1.5)])

    def step(self) -> float:
        batch = _jitter(self.rng, self.batch)
        res = self.rng.choice(self.res)
        x = torch.randn(batch, 3, res, res, device=self.device, generator=self.gen)
        x = x.contiguous(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (batch,), device=self.device, generator=self.gen)
        with _autocast(self.device):
            out = self.model(x)
        loss = F.cross_entropy(out.float(), y)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return float(loss.detach().item())


# ---------------------------------------------------------------- BERT

BERT = {
    "full": dict(),  # BertConfig's defaults: bert-base (768 hidden, 12 layers, 12 heads)
    "small": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
    "tiny": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                 vocab_size=512),
}
BERT_SEQ = {"full": (64, 512), "small": (32, 128), "tiny": (8, 32)}
BERT_BATCH = {"full": 32, "small": 2, "tiny": 4}


class BertVarlen:
    """BertForSequenceClassification (base, 4 labels) fine-tuning with fp32 weights, bf16
    autocast and AdamW; each step draws a padded length and per-sequence lengths in
    [length/2, length] (attention mask on the padding)."""

    name = "bert_varlen"

    def __init__(self, batch_size=None, seed=0):
        from transformers import BertConfig, BertForSequenceClassification

        scale = bench_scale()
        self.device = bench_device()
        self.batch = batch_size or BERT_BATCH[scale]
        self.seq = BERT_SEQ[scale]
        self.attn = training_attn()
        self.rng = random.Random(seed)
        self.gen = _generator(self.device, seed + 1)
        cfg = BertConfig(**BERT[scale], num_labels=4, attn_implementation=self.attn)
        cfg._attn_implementation = self.attn
        self.vocab = cfg.vocab_size
        torch.manual_seed(seed)
        with _building(self.device, torch.float32):
            self.model = BertForSequenceClassification(cfg)
        self.model.train()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=2e-5)
        self.info = dict(params=_count(self.model.parameters()), seq_range=list(self.seq), attn=self.attn)

    def step(self) -> float:
        width = self.rng.randint(*self.seq)
        lens = [self.rng.randint(max(1, width // 2), width) for _ in range(self.batch)]
        mask = torch.zeros(self.batch, width, dtype=torch.long)
        for i, n in enumerate(lens):
            mask[i, :n] = 1
        mask = mask.to(self.device)
        ids = torch.randint(1, self.vocab, (self.batch, width), device=self.device, generator=self.gen) * mask
        labels = torch.randint(0, 4, (self.batch,), device=self.device, generator=self.gen)
        with _autocast(self.device):
            loss = self.model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return float(loss.detach().float().item())


# ---------------------------------------------------------------- registry


def lora_llama(batch_size=None, seed=0):
    return LoraLlama(batch_size, seed)


def moe(batch_size=None, seed=0):
    return MoE(batch_size, seed)


def convnext(batch_size=None, seed=0):
    return ConvNext(batch_size, seed)


def llama_serving(batch_size=None, seed=0):
    return LlamaServing(batch_size, seed)


def bert_varlen(batch_size=None, seed=0):
    return BertVarlen(batch_size, seed)


WORKLOADS = {
    "lora_llama": lora_llama,
    "moe": moe,
    "convnext": convnext,
    "llama_serving": llama_serving,
    "bert_varlen": bert_varlen,
}


DEFAULT_BATCH = {
    "lora_llama": LORA_BATCH,
    "moe": MOE_BATCH,
    "convnext": CONV_BATCH,
    "llama_serving": SERVE_BATCH,
    "bert_varlen": BERT_BATCH,
}

_PRELOAD = {
    "lora_llama": ("transformers:LlamaForCausalLM", "peft:LoraConfig"),
    "llama_serving": ("transformers:LlamaForCausalLM",),
    "bert_varlen": ("transformers:BertForSequenceClassification",),
    "convnext": ("timm:create_model",),
    "moe": (),
}


def default_batch(name: str) -> int:
    return DEFAULT_BATCH[name][bench_scale()]


def preload(name: str) -> None:
    """Imports what the workload needs (no CUDA), so that forked probes start faster."""
    import importlib

    for item in _PRELOAD[name]:
        module, attr = item.split(":")
        getattr(importlib.import_module(module), attr)


def _dry_run(names, steps):
    configure_determinism()
    for name in names:
        t = time.perf_counter()
        w = WORKLOADS[name](None, 0)
        built = time.perf_counter() - t
        losses = []
        for _ in range(steps):
            losses.append(w.step())
        print(f"{name}: batch {w.batch}, built in {built:.1f} s, {steps} steps in "
              f"{time.perf_counter() - t - built:.1f} s, losses {losses}, {w.info}")


if __name__ == "__main__":
    chosen = [a for a in sys.argv[1:] if not a.isdigit()] or list(WORKLOADS)
    count = next((int(a) for a in sys.argv[1:] if a.isdigit()), 3)
    _dry_run(chosen, count)

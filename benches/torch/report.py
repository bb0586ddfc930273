"""Markdown tables for BENCHMARKS.md from the JSON lines of run_one.py / run_all.sh.

  python report.py RESULTS.jsonl          the tables
  python report.py --last RESULTS.jsonl   one line on the file's last record

Targets (vramkit rows; each shown met / not met with its figure):
  reserved <= 1.02 x allocated   peak reserved / peak requested
  median step <= 1.01 x default  median step time / the default allocator's, same workload
  malloc+free <= 1000 ns         (malloc_ns + free_ns) / malloc_calls over the whole run
  max batch >= expandable's      in the max-batch table
When a workload has several records of one mode, the last one counts.
"""

from __future__ import annotations

import json
import sys

GiB = 2**30
MODES = ("default", "expandable", "vramkit")
RESERVED_TARGET = 1.02
TIME_TARGET = 1.01
NS_TARGET = 1000.0


def load(path):
    records = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                print(f"<!-- line {n} skipped: {e} -->")
    return records


def clean(text) -> str:
    """Text fit for one Markdown table cell or list line."""
    return " ".join(str(text).split()).replace("|", "\\|")


def gib(v):
    return "—" if v is None else f"{v / GiB:.2f}"


def num(v, fmt="{:.1f}"):
    return "—" if v is None else fmt.format(v)


def target(value, limit, fmt):
    if value is None:
        return "—"
    return f"{'met' if value <= limit else 'not met'} ({fmt.format(value)})"


def same_losses(a, b):
    """'yes (n/n)', 'no (first differs at step i)', or '—' when there is nothing to compare."""
    la, lb = a.get("losses") or [], b.get("losses") or []
    if not la or not lb:
        return "—"
    n = min(len(la), len(lb))
    for i in range(n):
        if la[i] != lb[i] and not (la[i] != la[i] and lb[i] != lb[i]):  # NaN equals NaN here
            return f"no (step {i} of {n} differs)"
    if len(la) != len(lb):
        return f"first {n} equal ({len(la)} vs {len(lb)} steps)"
    return f"yes ({n}/{n})"


def order(names, preferred):
    return [w for w in preferred if w in names] + sorted(w for w in names if w not in preferred)


WORKLOAD_ORDER = ("lora_llama", "moe", "convnext", "llama_serving", "bert_varlen")


def header(records):
    first = next((r for r in records if r.get("gpu")), None) or (records[0] if records else {})
    facts = [f"{k} {first.get(k)}" for k in ("gpu", "torch", "cuda", "transformers", "timm", "peft")
             if first.get(k)]
    runs = [r for r in records if r.get("kind") == "run" and not r.get("sanitize")]
    steps = sorted({(r.get("warmup"), r.get("steps")) for r in runs if r.get("steps") is not None})
    scales = sorted({r.get("scale") for r in records if r.get("scale")})
    out = ["Machine and software: " + (", ".join(facts) or "unknown") + "."]
    if steps:
        out.append("Steps: " + "; ".join(f"{w} warm-up + {s} timed" for w, s in steps)
                   + f"; scale {', '.join(scales)}.")
    return out


def runs_table(records):
    runs = {}
    for r in records:
        if r.get("kind") == "run" and not r.get("sanitize"):
            runs[(r["workload"], r["mode"])] = r
    if not runs:
        return []
    out = [
        "| workload | mode | batch | peak reserved (GiB) | peak allocated (GiB) | reserved / allocated "
        "| vramkit peak in_use (GiB) | device used (GiB) | median step (ms) | mean step (ms) "
        "| median vs default | losses = default's | malloc+free (ns) "
        f"| reserved ≤ {RESERVED_TARGET}× allocated | median ≤ {TIME_TARGET}× default "
        f"| malloc+free ≤ {NS_TARGET:.0f} ns |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | --- | --- |",
    ]
    errors = []
    for w in order({w for w, _ in runs}, WORKLOAD_ORDER):
        base = runs.get((w, "default"))
        for m in order({m for ww, m in runs if ww == w}, MODES):
            r = runs[(w, m)]
            if r.get("error"):
                errors.append(f"- {w} / {m}: {clean(r['error'])}")
            med = r.get("median_ms")
            base_med = base.get("median_ms") if base else None
            t_ratio = med / base_med if med is not None and base_med else None
            losses = "(reference)" if m == "default" else (same_losses(r, base) if base else "—")
            vk = m == "vramkit"
            ns = r.get("vramkit_malloc_free_ns") if vk else None
            res_ratio = r.get("ratio_reserved_allocated")
            out.append("| " + " | ".join([
                w, m, str(r.get("batch", "—")),
                gib(r.get("peak_reserved")), gib(r.get("peak_allocated")),
                num(res_ratio, "{:.3f}"),
                gib(r.get("peak_in_use")) if vk else "—",
                gib(r.get("device_used_peak")),
                num(med), num(r.get("mean_ms")),
                num(t_ratio, "{:.3f}") if m != "default" else "1",
                losses,
                num(ns, "{:.0f}"),
                target(res_ratio, RESERVED_TARGET, "{:.3f}") if vk else "—",
                target(t_ratio, TIME_TARGET, "{:.3f}") if vk else "—",
                target(ns, NS_TARGET, "{:.0f} ns") if vk else "—",
            ]) + " |")
    nulls = sorted(f"{w}" for (w, m), r in runs.items() if m == "vramkit" and r.get("vramkit_oom") == "null")
    if nulls:
        out += ["", "vramkit ran with enable(oom=\"null\") (no OOM shim) in: " + ", ".join(nulls) + "."]
    if errors:
        out += ["", "Runs that failed (their figures cover the steps done):", *errors]
    return out


def cell(r):
    if r is None:
        return "—"
    if r.get("error") and r.get("max_batch") is None:
        return "error"
    lo, hi = r.get("max_batch"), r.get("first_failing")
    if r.get("complete"):
        return f"{lo}" + (" (limit)" if r.get("reached_limit") else "")
    return f"≥ {lo}, < {hi} (search cut short)" if hi is not None else f"≥ {lo} (search cut short)"


def max_batch_table(records):
    found = {}
    for r in records:
        if r.get("kind") == "max_batch":
            found[(r["workload"], r.get("cap_gib"), r["mode"])] = r
    if not found:
        return []
    out = [
        "| workload | GiB free | default | expandable | vramkit | vramkit ≥ expandable | probes (default / expandable / vramkit) |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    notes = []
    for w in order({k[0] for k in found}, WORKLOAD_ORDER):
        for cap in sorted({k[1] for k in found if k[0] == w}):
            rs = {m: found.get((w, cap, m)) for m in MODES}
            e, v = rs["expandable"], rs["vramkit"]
            if e and v and e.get("max_batch") is not None and v.get("max_batch") is not None:
                met = "met" if v["max_batch"] >= e["max_batch"] else "not met"
                if not (e.get("complete") and v.get("complete")):
                    met += " (a search was cut short)"
            else:
                met = "—"
            probes = " / ".join(str(len(rs[m]["probes"])) if rs[m] else "—" for m in MODES)
            out.append(f"| {w} | {cap:g} | {cell(rs['default'])} | {cell(e)} | {cell(v)} | {met} | {probes} |")
            for m in MODES:
                r = rs[m]
                if not r:
                    continue
                if r.get("error"):
                    notes.append(f"- {w} / {m}: {clean(r['error'])}")
                kinds = set(r.get("failures") or [])
                if kinds - {"oom"}:
                    odd = [p for p in r.get("probes", []) if not p.get("ok") and p.get("reason") != "oom"]
                    notes.append(f"- {w} / {m}: failures other than out-of-memory: "
                                 + "; ".join(f"batch {p['batch']}: {clean(p.get('error', ''))[:160]}" for p in odd[:3]))
    if notes:
        out += ["", *notes]
    return out


def sanitizer_table(records):
    sans = [r for r in records if r.get("kind") == "sanitizer"]
    runs = {r["workload"]: r for r in records if r.get("kind") == "run" and r.get("sanitize")}
    if not sans:
        return []
    out = ["| workload | scale | compute-sanitizer memcheck | exit status | step |",
           "| --- | --- | --- | ---: | --- |"]
    for s in sans:
        r = runs.get(s["workload"], {})
        step = "—" if not r else ("ran" if not r.get("error") and r.get("losses") else f"failed: {clean(r.get('error'))}")
        out.append(f"| {s['workload']} | {s.get('scale', '—')} | {clean(s.get('summary') or 'no summary line')} "
                   f"| {s.get('rc')} | {step} |")
    return out


def last_line(records):
    if not records:
        return "   (no result line)"
    r = records[-1]
    if r.get("kind") == "max_batch":
        return (f"   max batch {cell(r)} (first failing {r.get('first_failing')}, "
                f"{len(r.get('probes') or [])} probes via {r.get('probe_via')}, "
                f"{num(r.get('wall_s'), '{:.0f}')} s){' ' + clean(r['error'])[:300] if r.get('error') else ''}")
    if r.get("kind") == "sanitizer":
        return f"   sanitizer: {r.get('summary')}"
    return (f"   reserved {gib(r.get('peak_reserved'))} GiB, allocated {gib(r.get('peak_allocated'))} GiB, "
            f"device {gib(r.get('device_used_peak'))} GiB, median {num(r.get('median_ms'))} ms, "
            f"{r.get('steps_done', 0)} steps" + (f", {clean(r['error'])[:300]}" if r.get("error") else ""))


def main(argv):
    if argv and argv[0] == "--last":
        print(last_line(load(argv[1])))
        return 0
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    records = load(argv[0])
    parts = [header(records)]
    runs = runs_table(records)
    if runs:
        parts.append(["### Peak memory and step time per workload and allocator", "", *runs])
    mb = max_batch_table(records)
    if mb:
        parts.append(["### Largest batch that runs with a capped amount of free GPU memory", "", *mb])
    san = sanitizer_table(records)
    if san:
        parts.append(["### compute-sanitizer memcheck, one step with vramkit", "", *san])
    print("\n\n".join("\n".join(p) for p in parts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The page-size comparison of tools/device/pages.sh as one Markdown table.

  python pages_table.py RESULTS.jsonl ...

Each file holds runs of one workload: PyTorch's default allocator, or vramkit with the page
size its ``vramkit_env`` names (``VRAMKIT_PAGE_SIZE``; none: the device's granularity) and
whether pages grow with the offset (``VRAMKIT_PAGE_GROWTH``; on unless ``off``) and are
unmapped by the library's thread (``VRAMKIT_BACKGROUND_UNMAP``; off unless ``on``).
Per run: peak reserved / peak allocated, median step and its ratio to the default's median of
the same workload, malloc + free per malloc over the timed steps and the whole run, the page
calls' and stream waits' time per malloc, and the bytes moved, given back and mapped again.
"""

from __future__ import annotations

import sys

from report import load, num


def label(r):
    if r.get("mode") != "vramkit":
        return r.get("mode", "?")
    env = r.get("vramkit_env") or {}
    off = ("off", "0", "false", "no")
    growth = "fixed" if env.get("VRAMKIT_PAGE_GROWTH", "on").lower() in off else "growing"
    unmap = "" if env.get("VRAMKIT_BACKGROUND_UNMAP", "off").lower() in off else ", unmapping thread"
    return f"vramkit {env.get('VRAMKIT_PAGE_SIZE', 'granularity')} {growth}{unmap}"


def ns_pair(r, key):
    per = r.get(key) or {}
    if not per:
        return None
    return (per.get("malloc_ns", 0) + per.get("free_ns", 0)) / 1e3


def main(paths):
    runs = [r for p in paths for r in load(p) if r.get("kind") == "run"]
    default = {r["workload"]: r.get("median_ms") for r in runs if r.get("mode") == "default"}
    print("| workload | allocator | reserved ÷ allocated | median step (ms) | vs default "
          "| malloc + free, timed (whole run) µs | page calls and stream waits per malloc, timed µs "
          "| moved / given back / mapped again (GB) | pages | losses = default's |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    losses = {r["workload"]: r.get("losses") for r in runs if r.get("mode") == "default"}
    for r in runs:
        w = r["workload"]
        if r.get("error"):
            print(f"| {w} | {label(r)} | {r['error'][:80]} ||||||||")
            continue
        med, base = r.get("median_ms"), default.get(w)
        vs = num(med / base, "{:.3f}") if med and base else "—"
        s = r.get("vramkit_stats") or {}
        timed = r.get("vramkit_per_malloc_ns_timed") or {}
        pages = sum(timed.get(k, 0) for k in ("page_ns", "give_back_ns", "stream_wait_ns"))
        traffic = "—"
        if s:
            traffic = " / ".join(f"{s.get(k, 0) / 1e9:.2f}"
                                 for k in ("moved_bytes", "unmapped_bytes", "mapped_bytes"))
        same = "—"
        if r.get("mode") != "default" and losses.get(w):
            same = "yes" if r.get("losses") == losses[w] else "no"
        print(f"| {w} | {label(r)} | {num(r.get('ratio_reserved_allocated'), '{:.3f}')} "
              f"| {num(med)} | {vs} | {num(ns_pair(r, 'vramkit_per_malloc_ns_timed'), '{:.2f}')} "
              f"({num(ns_pair(r, 'vramkit_per_malloc_ns'), '{:.2f}')}) "
              f"| {num(pages / 1e3 if s else None, '{:.2f}')} | {traffic} "
              f"| {s.get('pages', '—') if s else '—'} | {same} |")


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/env bash
# Runs every workload under every allocator mode, then the max-batch search, collecting the
# JSON lines of run_one.py into one file, then prints report.py's tables.
#
#   bash benches/torch/run_all.sh [RESULTS.jsonl]   (default: $TMPDIR/vramkit-torch.jsonl)
#
# From the repository root on the GPU machine, with vramkit importable (PYTHONPATH=python)
# and its library named by VRAMKIT_LIBRARY. Beside RESULTS.jsonl it writes RESULTS.log (the
# runs' stderr, one section per run) and RESULTS.md (the tables).
#
# Environment (defaults in brackets):
#   BUDGET_S [470]        seconds for everything; the max-batch search gets what the runs left
#   STEPS [20] WARMUP [3] timed and warm-up steps per run
#   WORKLOADS ["lora_llama moe convnext llama_serving bert_varlen"]
#   MODES ["default expandable vramkit"]
#   MAXBATCH_WORKLOADS ["lora_llama convnext"]   ("" skips the search)
#   CAP_GIB [20]          GiB left free for the max-batch search
#   RUN_TIMEOUT [150]     seconds per run
#   RUN_ARGS, MAXBATCH_ARGS  extra arguments of run_one.py for the runs / the search
#   SANITIZE [0]          1: after the rest, one step of each workload under
#                         compute-sanitizer memcheck with vramkit (VRAMKIT_BENCH_SCALE=
#                         $SANITIZE_SCALE [small], $SANITIZE_TIMEOUT [300] s each)
#   SANITIZE_WORKLOADS [$WORKLOADS]   the workloads the sanitizer steps
#   SKIP_RUNS [0]         1: no workload x mode runs (e.g. with SANITIZE=1 alone)
#   PYTHON [python3]
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUTFILE=${1:-${TMPDIR:-/tmp}/vramkit-torch.jsonl}
BASE=${OUTFILE%.jsonl}
LOG=$BASE.log
MD=$BASE.md
PY=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-470}
STEPS=${STEPS:-20}
WARMUP=${WARMUP:-3}
WORKLOADS=${WORKLOADS:-lora_llama moe convnext llama_serving bert_varlen}
MODES=${MODES:-default expandable vramkit}
MAXBATCH_WORKLOADS=${MAXBATCH_WORKLOADS-lora_llama convnext}
CAP_GIB=${CAP_GIB:-20}
RUN_TIMEOUT=${RUN_TIMEOUT:-150}
SANITIZE=${SANITIZE:-0}
SANITIZE_SCALE=${SANITIZE_SCALE:-small}
SANITIZE_TIMEOUT=${SANITIZE_TIMEOUT:-300}
SANITIZE_WORKLOADS=${SANITIZE_WORKLOADS:-$WORKLOADS}
SKIP_RUNS=${SKIP_RUNS:-0}
RUN_ARGS=${RUN_ARGS:-}
MAXBATCH_ARGS=${MAXBATCH_ARGS:-}
export PYTHONUNBUFFERED=1

START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( BUDGET_S - $(elapsed) )); }

mkdir -p "$(dirname "$OUTFILE")"
: >"$OUTFILE"
: >"$LOG"

echo "== vramkit PyTorch benchmark: results to $OUTFILE, logs to $LOG, budget ${BUDGET_S}s"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"
$PY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
echo "PYTHONPATH=${PYTHONPATH:-} VRAMKIT_LIBRARY=${VRAMKIT_LIBRARY:-}"
if ! $PY -c 'import vramkit, vramkit.torch' >>"$LOG" 2>&1; then
    echo "WARNING: 'import vramkit.torch' fails (see $LOG); vramkit runs will record the error"
elif [[ " $MODES " == *" vramkit "* ]] && [ -z "${VRAMKIT_BENCH_OOM:-}" ]; then
    # enable() compiles its OOM shim once (cached): do it here, outside the timed runs.
    t0=$(date +%s)
    echo "##### vramkit.torch.build_shim()" >>"$LOG"
    if $PY -c 'import vramkit.torch as t; print(t.build_shim())' >>"$LOG" 2>&1; then
        echo "-- vramkit's PyTorch shim ready in $(( $(date +%s) - t0 ))s"
    else
        echo "WARNING: vramkit's PyTorch shim does not build (see $LOG): vramkit runs use"
        echo "         enable(oom=\"null\") (VRAMKIT_BENCH_OOM=null; records say so)"
        tail -n 5 "$LOG" | sed 's/^/   | /'
        export VRAMKIT_BENCH_OOM=null
    fi
fi

# One line on the last result.
brief() { $PY "$HERE/report.py" --last "$OUTFILE" || echo "   (no result line)"; }

# ---- every workload x mode
if [ "$SKIP_RUNS" != 1 ]; then
    for w in $WORKLOADS; do
        for m in $MODES; do
            if [ "$(left)" -lt 20 ]; then
                echo "-- $w/$m skipped: budget spent ($(elapsed)s)"
                continue
            fi
            t0=$(date +%s)
            lines=$(wc -l <"$OUTFILE")
            echo "##### run $w $m" >>"$LOG"
            timeout -k 10 "$RUN_TIMEOUT" $PY "$HERE/run_one.py" "$w" --mode "$m" \
                --steps "$STEPS" --warmup "$WARMUP" $RUN_ARGS >>"$OUTFILE" 2>>"$LOG"
            rc=$?
            echo "-- $w/$m: rc $rc, $(( $(date +%s) - t0 ))s (total $(elapsed)s)"
            if [ $rc -ne 0 ]; then
                tail -n 5 "$LOG" | sed 's/^/   | /'
            fi
            if [ "$(wc -l <"$OUTFILE")" -eq "$lines" ]; then
                # No line came (killed, crashed before printing): record that it failed.
                echo "{\"kind\": \"run\", \"workload\": \"$w\", \"mode\": \"$m\", \"error\": \"error: no result (exit status $rc; 124/137: timed out)\", \"losses\": [], \"step_ms\": []}" >>"$OUTFILE"
            fi
            brief
        done
    done
fi

# ---- max batch under a cap, each config a share of the budget left
set -- $MAXBATCH_WORKLOADS
nmb=$(( $# * $(echo $MODES | wc -w) ))
for w in $MAXBATCH_WORKLOADS; do
    for m in $MODES; do
        remaining=$(left)
        if [ "$remaining" -lt 15 ]; then
            echo "-- max batch $w/$m skipped: budget spent ($(elapsed)s)"
            nmb=$(( nmb - 1 ))
            continue
        fi
        share=$(( remaining / nmb ))
        deadline=$(( $(date +%s) + share ))
        t0=$(date +%s)
        echo "##### max_batch $w $m cap ${CAP_GIB} GiB share ${share}s" >>"$LOG"
        lines=$(wc -l <"$OUTFILE")
        timeout -k 10 $(( share + 200 )) $PY "$HERE/run_one.py" "$w" --mode "$m" \
            --max-batch "$CAP_GIB" --deadline "$deadline" $MAXBATCH_ARGS >>"$OUTFILE" 2>>"$LOG"
        rc=$?
        if [ "$(wc -l <"$OUTFILE")" -eq "$lines" ]; then
            echo "{\"kind\": \"max_batch\", \"workload\": \"$w\", \"mode\": \"$m\", \"cap_gib\": $CAP_GIB, \"error\": \"error: no result (exit status $rc; 124/137: timed out)\", \"max_batch\": null, \"probes\": []}" >>"$OUTFILE"
        fi
        echo "-- max batch $w/$m (cap ${CAP_GIB} GiB, ${share}s share): rc $rc, $(( $(date +%s) - t0 ))s (total $(elapsed)s)"
        [ $rc -ne 0 ] && tail -n 5 "$LOG" | sed 's/^/   | /'
        brief
        nmb=$(( nmb - 1 ))
    done
done

# ---- sanitizer: one step of each workload with vramkit under memcheck
if [ "$SANITIZE" = 1 ]; then
    if ! command -v compute-sanitizer >/dev/null; then
        echo "-- sanitizer skipped: no compute-sanitizer on PATH"
    else
        for w in $SANITIZE_WORKLOADS; do
            t0=$(date +%s)
            slog=$(mktemp)
            echo "##### sanitize $w" >>"$LOG"
            VRAMKIT_BENCH_SCALE=$SANITIZE_SCALE timeout -k 10 "$SANITIZE_TIMEOUT" \
                compute-sanitizer --tool memcheck --print-limit 20 --log-file "$slog" \
                $PY "$HERE/run_one.py" "$w" --sanitize --mode vramkit >>"$OUTFILE" 2>>"$LOG"
            rc=$?
            cat "$slog" >>"$LOG"
            summary=$(grep -h "ERROR SUMMARY" "$slog" | tail -n 1 | sed 's/^=* *//')
            rm -f "$slog"
            echo "-- sanitize $w: rc $rc, $(( $(date +%s) - t0 ))s: ${summary:-no ERROR SUMMARY line}"
            $PY -c 'import json, sys; print(json.dumps({"kind": "sanitizer", "workload": sys.argv[1], "rc": int(sys.argv[2]), "summary": sys.argv[3] or None, "scale": sys.argv[4]}))' \
                "$w" "$rc" "$summary" "$SANITIZE_SCALE" >>"$OUTFILE"
        done
    fi
fi

echo "== done in $(elapsed)s; $(wc -l <"$OUTFILE") result lines in $OUTFILE"
$PY "$HERE/report.py" "$OUTFILE" | tee "$MD"

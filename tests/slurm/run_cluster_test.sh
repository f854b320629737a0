#!/usr/bin/env bash
# The quick preset through a real Slurm: start a one-node cluster on localhost (tests/slurm/cluster.sh),
# run the quick preset with the `slurm` profile in a temporary copy of the workflow, check that every job ran
# inside a Slurm job, that Slurm recorded the jobs, and that each training job got a GPU on partition `gpu` (the
# cluster's GPUs are stand-ins without CUDA, so device `auto` trains on the CPU), compare the results with a
# local run's (bit for bit: CPU training is deterministic), send one training run through the `slurm-cpu`
# profile, then stop every daemon by its PID. Prints a summary with the job ids and times.
#
# Usage (as root, Debian/Ubuntu; installs munge and Slurm with apt-get if missing):
#   tests/slurm/run_cluster_test.sh [--reference DIR]
# --reference DIR: a workflow folder holding a finished local quick run (DIR/results) to compare with;
#                  without it the script makes one first (a few minutes more).
# Env: ONENN_RUN_LIMIT (seconds per Snakemake run, default 900), ONENN_KEEP=1 keeps the temporary folder,
#      and cluster.sh's ONENN_SLURM_* settings.
# Run it under `timeout -k 30 <seconds>`: a hung Snakemake ignores SIGTERM, and the EXIT trap still stops
# the cluster when this script is told to stop.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CLUSTER="$ROOT/tests/slurm/cluster.sh"
STATE_DIR="${ONENN_SLURM_DIR:-/tmp/onenn-slurm}"
LIMIT="${ONENN_RUN_LIMIT:-900}"
QUICK=(--configfile config.yaml workflow/presets/quick.yaml)
REFERENCE=""
if [[ "${1:-}" == "--reference" ]]; then
    REFERENCE="$(cd "$2" && pwd)"
fi

say() { printf '[cluster-test] %s\n' "$*"; }
T0=$SECONDS
WORK="$(mktemp -d /tmp/onenn-cluster-test.XXXXXX)"
CHILD=""

cleanup() {
    local rc=$?
    set +e
    if [[ -n "$CHILD" ]] && kill -0 "$CHILD" 2>/dev/null; then
        say "stopping Snakemake (process group $CHILD)"
        kill -KILL -- "-$CHILD" 2>/dev/null
    fi
    "$CLUSTER" stop >"$WORK/cluster-stop.log" 2>&1
    if [[ "${ONENN_KEEP:-0}" == 1 ]]; then say "kept $WORK"; else rm -rf "$WORK"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 143' TERM INT

copy_workflow() {
    mkdir -p "$1"
    cp "$ROOT/Snakefile" "$ROOT/config.yaml" "$1/"
    cp -r "$ROOT/workflow" "$ROOT/onenn" "$1/"
    find "$1" -name __pycache__ -prune -exec rm -rf {} +
}

# run_snakemake DIR LOG ARGS...: Snakemake in DIR, in its own process group (so that cleanup can end it and
# everything it started), under a time limit; its output goes to LOG.
run_snakemake() {
    local dir="$1" log="$2"; shift 2
    (cd "$dir" && exec setsid timeout -k 30 "$LIMIT" python -m snakemake "$@") >"$log" 2>&1 9>&- &
    CHILD=$!
    local rc=0
    wait "$CHILD" || rc=$?
    CHILD=""
    if ((rc != 0)); then
        tail -n 60 "$log"
        say "Snakemake failed (exit $rc); its output: $log"
        return "$rc"
    fi
}

if [[ -z "$REFERENCE" ]]; then
    say "local reference run of the quick preset"
    REFERENCE="$WORK/local"
    copy_workflow "$REFERENCE"
    t=$SECONDS
    run_snakemake "$REFERENCE" "$WORK/local.log" --cores all "${QUICK[@]}"
    say "local run: $((SECONDS - t)) s"
fi
[[ -d "$REFERENCE/results" ]] || { say "no results in $REFERENCE"; exit 1; }

# One test at a time: the cluster (state dir, ports, /etc/slurm/slurm.conf) is shared, and stopping it ends
# every job on it. A second test waits for the first (the lock goes with this process).
exec 9>"$STATE_DIR.lock"  # children get `9>&-`: a daemon left running must not keep the lock
if ! flock -n 9; then
    say "another cluster test holds $STATE_DIR.lock; waiting for it"
    flock -w "$LIMIT" 9 || { say "gave up waiting for $STATE_DIR.lock"; exit 1; }
fi
say "starting the cluster"
"$CLUSTER" start 2>"$WORK/cluster-start.log" 9>&- || { cat "$WORK/cluster-start.log"; exit 1; }
declare -A DAEMON_PIDS=(
    [munged]="$(cat "$STATE_DIR/munge/munged.pid" 2>/dev/null || true)"
    [slurmctld]="$(cat "$STATE_DIR/run/slurmctld.pid")"
    [slurmd]="$(cat "$STATE_DIR/run/slurmd.pid")"
)
NODE_CPUS="$(sinfo -h -N -o '%c' | head -n 1)"
say "cluster up: node $(hostname -s), $NODE_CPUS CPUs, partitions $(sinfo -h -o '%P' | tr '\n' ' ')"

say "quick preset through the slurm profile"
copy_workflow "$WORK/slurm"
t=$SECONDS
run_snakemake "$WORK/slurm" "$WORK/slurm.log" --workflow-profile workflow/profiles/slurm "${QUICK[@]}"
SLURM_SECONDS=$((SECONDS - t))
say "slurm run: $SLURM_SECONDS s"

say "one training run through the slurm-cpu profile"
# a run of rule train (experiment 1, convergence: always in the config)
TARGET="$(cd "$REFERENCE" && find results/runs/convergence -name weights.npz | sort | head -n 1)"
[[ -n "$TARGET" ]] || { say "no convergence run in $REFERENCE/results"; exit 1; }
copy_workflow "$WORK/cpu"
t=$SECONDS
run_snakemake "$WORK/cpu" "$WORK/cpu.log" "$TARGET" --workflow-profile workflow/profiles/slurm-cpu "${QUICK[@]}"
CPU_SECONDS=$((SECONDS - t))
say "slurm-cpu run: $CPU_SECONDS s"

CHECKS=0
python "$ROOT/tests/slurm/check_cluster_run.py" --run "$WORK/slurm" --log "$WORK/slurm.log" \
    --reference "$REFERENCE" --jobcomp "$STATE_DIR/log/jobcomp.txt" \
    --cpu-run "$WORK/cpu" --cpu-log "$WORK/cpu.log" >"$WORK/checks.txt" || CHECKS=$?

"$CLUSTER" stop >"$WORK/cluster-stop.log" 2>&1
STOPPED=()
for name in munged slurmctld slurmd; do
    pid="${DAEMON_PIDS[$name]}"
    [[ -z "$pid" ]] && { STOPPED+=("$name (not ours)"); continue; }
    if kill -0 "$pid" 2>/dev/null; then STOPPED+=("$name pid $pid STILL RUNNING"); CHECKS=1
    else STOPPED+=("$name pid $pid stopped"); fi
done

echo
echo "=== Slurm cluster test: quick preset ==="
cat "$WORK/checks.txt"
echo "  daemons: ${STOPPED[*]}"
echo "  time: slurm run ${SLURM_SECONDS} s, slurm-cpu run ${CPU_SECONDS} s, whole test $((SECONDS - T0)) s"
if ((CHECKS != 0)); then
    echo "=== FAILED ==="
    ONENN_KEEP=1
    exit 1
fi
echo "=== PASSED ==="

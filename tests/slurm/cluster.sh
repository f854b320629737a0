#!/usr/bin/env bash
# Start/stop a throw-away single-node Slurm cluster on localhost, for testing
# the Slurm Snakemake profiles (workflow/profiles/slurm, slurm-cpu) without a real HPC.
#
# Usage (as root; Debian/Ubuntu with apt):
#   tests/slurm/cluster.sh start    # install (once), start munged, slurmctld, slurmd
#   eval "$(tests/slurm/cluster.sh env)"   # optional: export SLURM_CONF=...
#   snakemake --workflow-profile workflow/profiles/slurm ...
#   tests/slurm/cluster.sh stop     # idempotent, safe from a trap
#   tests/slurm/cluster.sh status   # show daemons / sinfo
#   tests/slurm/cluster.sh env      # print `export SLURM_CONF=...`
#
# Everything (slurm.conf, pid files, logs, spool/state) lives in the state
# directory $ONENN_SLURM_DIR (default /tmp/onenn-slurm).  SLURM_CONF alone is
# NOT enough: snakemake-executor-plugin-slurm-jobstep strips all SLURM_* vars
# (SLURM_CONF included) before its nested `srun`, which then fails with
# "fetch_config: DNS SRV lookup failed".  So `start` also symlinks
# /etc/slurm/slurm.conf -> $ONENN_SLURM_DIR/slurm.conf (a pre-existing real
# file is moved to slurm.conf.onenn-backup and restored by `stop`).
# The cluster has one node (this host, `hostname -s`) and two partitions on it:
# `cpu` (Default=YES) and `gpu`. The node declares $ONENN_SLURM_FAKE_GPUS
# (default 2) GRES GPUs backed by character devices such as /dev/null: Slurm
# schedules and accounts them (sbatch --gpus=1 works, CUDA_VISIBLE_DEVICES is
# set) but no CUDA device exists, so device `auto` trains on the CPU. That
# exercises the slurm profile's GPU submission path on a machine without GPUs.
# Every finished job is recorded in $ONENN_SLURM_DIR/log/jobcomp.txt (a
# completion log; there is no slurmdbd, so no sacct), and `scontrol show job`
# knows it for an hour (MinJobAge).
#
# Tunables (env): ONENN_SLURM_DIR, ONENN_SLURM_TIMEOUT (seconds to wait for
# each daemon, default 60), ONENN_SLURM_PORT_BASE (slurmctld port, default
# 6817; slurmd uses base+1), ONENN_SLURM_FAKE_GPUS (GRES GPUs of the node,
# default 2, at most 4; 0 for none).
set -euo pipefail

STATE_DIR="${ONENN_SLURM_DIR:-/tmp/onenn-slurm}"
TIMEOUT="${ONENN_SLURM_TIMEOUT:-60}"
PORT_BASE="${ONENN_SLURM_PORT_BASE:-6817}"
FAKE_GPUS="${ONENN_SLURM_FAKE_GPUS:-2}"
GPU_FILES=(/dev/null /dev/zero /dev/full /dev/urandom)  # stand-in device files, one per GPU
((FAKE_GPUS <= ${#GPU_FILES[@]})) || { echo "ONENN_SLURM_FAKE_GPUS: at most ${#GPU_FILES[@]}, got $FAKE_GPUS" >&2; exit 2; }
CONF="$STATE_DIR/slurm.conf"
RUN_DIR="$STATE_DIR/run"
LOG_DIR="$STATE_DIR/log"
MUNGE_DIR="$STATE_DIR/munge"
MUNGE_SOCKET="/run/munge/munge.socket.2"   # default socket; auth/munge uses it
MUNGE_KEY="/etc/munge/munge.key"
PID_MUNGED="$MUNGE_DIR/munged.pid"
PID_SLURMCTLD="$RUN_DIR/slurmctld.pid"
PID_SLURMD="$RUN_DIR/slurmd.pid"
ETC_CONF="/etc/slurm/slurm.conf"
ETC_BACKUP="$ETC_CONF.onenn-backup"

export SLURM_CONF="$CONF"

log() { printf '[onenn-slurm] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# pid from a pid file if that process is alive, else empty
live_pid() {
    local f="$1" pid
    [[ -s "$f" ]] || return 0
    pid="$(tr -dc '0-9' <"$f" 2>/dev/null || true)"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        printf '%s\n' "$pid"
    fi
}

# wait_for <seconds> <description> <command...>: poll until command succeeds
wait_for() {
    local secs="$1" what="$2"; shift 2
    local deadline=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            log "timed out after ${secs}s waiting for $what"
            return 1
        fi
        sleep 1
    done
}

# ---------------------------------------------------------------- install ---
install_packages() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
        && command -v sbatch >/dev/null && command -v munged >/dev/null; then
        return 0
    fi
    [[ $EUID -eq 0 ]] || die "Slurm is not installed and we are not root"
    command -v apt-get >/dev/null || die "Slurm is not installed and apt-get is unavailable"
    local pkgs=(munge slurmctld slurmd slurm-client)
    log "installing ${pkgs[*]} (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y --no-install-recommends "${pkgs[@]}"; then
        log "apt-get install failed; running apt-get update and retrying"
        apt-get update
        apt-get install -y --no-install-recommends "${pkgs[@]}"
    fi
    # The Debian packages may try to start the system services (which would
    # read /etc/slurm/slurm.conf); we manage our own daemons instead.
}

# ------------------------------------------------------------------ munge ---
munge_works() {
    [[ -S "$MUNGE_SOCKET" ]] && munge -n -S "$MUNGE_SOCKET" 2>/dev/null \
        | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1
}

start_munge() {
    if [[ ! -s "$MUNGE_KEY" ]]; then
        log "creating munge key $MUNGE_KEY"
        install -d -o munge -g munge -m 0700 "$(dirname "$MUNGE_KEY")"
        if command -v mungekey >/dev/null; then
            mungekey --create --keyfile="$MUNGE_KEY"
        else
            dd if=/dev/urandom bs=1 count=1024 of="$MUNGE_KEY" status=none
        fi
        chown munge:munge "$MUNGE_KEY"
        chmod 0400 "$MUNGE_KEY"
    fi
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0755 "$MUNGE_DIR"
    install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge

    if [[ -n "$(live_pid "$PID_MUNGED")" ]]; then
        log "munged already running (pid $(live_pid "$PID_MUNGED"))"
    elif munge_works; then
        log "a munged not started by us is already serving $MUNGE_SOCKET; using it"
    else
        rm -f "$PID_MUNGED"
        log "starting munged"
        # --force: take over a stale socket left by a killed munged
        runuser -u munge -- munged --force \
            --socket="$MUNGE_SOCKET" --key-file="$MUNGE_KEY" \
            --pid-file="$PID_MUNGED" --log-file="$MUNGE_DIR/munged.log"
    fi
    wait_for "$TIMEOUT" "munged" munge_works \
        || die "munge does not work; see $MUNGE_DIR/munged.log"
    log "munge OK"
}

# ------------------------------------------------------------ slurm.conf ---
write_conf() {
    local host node_line
    host="$(hostname -s)"
    # Node definition exactly as slurmd detects it (overstating RealMemory or
    # CPUs would get the node DRAINED). Drop UpTime= and the 2nd line.
    node_line="$(slurmd -C | head -n1 | sed -E 's/[[:space:]]*UpTime=[^[:space:]]*//')"
    [[ "$node_line" == NodeName="$host"* ]] \
        || die "unexpected 'slurmd -C' output: $node_line (hostname -s: $host)"

    local gres_types="" node_gres=""
    if ((FAKE_GPUS > 0)); then
        gres_types="GresTypes=gpu"
        node_gres=" Gres=gpu:$FAKE_GPUS"
    fi
    install -d -m 0755 "$STATE_DIR" "$RUN_DIR" "$LOG_DIR" \
        "$STATE_DIR/spool/ctld" "$STATE_DIR/spool/d"
    cat >"$CONF.tmp" <<EOF
# Generated by tests/slurm/cluster.sh -- single-node test cluster. Do not edit.
ClusterName=onenn
SlurmctldHost=$host
SlurmctldPort=$PORT_BASE
SlurmdPort=$((PORT_BASE + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
# a plain sbatch without --mem would otherwise reserve the whole node memory
DefMemPerCPU=1000
ReturnToService=2
# squeue-based status checks need a finished job visible until the next poll:
# MinJobAge >= 180 s (the plugin's longest poll interval) and >= 3 x slurm-init-seconds-before-status-checks;
# an hour here, so that the test's checks can read every job's record (partition, GPUs) with scontrol
MinJobAge=3600
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOG_DIR/jobcomp.txt
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
Waittime=0
StateSaveLocation=$STATE_DIR/spool/ctld
SlurmdSpoolDir=$STATE_DIR/spool/d
SlurmctldPidFile=$PID_SLURMCTLD
SlurmdPidFile=$PID_SLURMD
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
$gres_types
$node_line$node_gres State=UNKNOWN
# Jobs with no slurm_partition land in 'cpu'; 'gpu' is the same node (training jobs of the slurm profile).
PartitionName=cpu Nodes=$host Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$host MaxTime=INFINITE State=UP
EOF
    mv -f "$CONF.tmp" "$CONF"
    # gres.conf sits beside slurm.conf; /dev/null etc. stand in for the GPU device files (no CUDA behind them).
    : >"$STATE_DIR/gres.conf"
    for ((i = 0; i < FAKE_GPUS; i++)); do
        printf 'NodeName=%s Name=gpu File=%s\n' "$host" "${GPU_FILES[i]}" >>"$STATE_DIR/gres.conf"
    done
    log "wrote $CONF ($node_line)"
    link_etc_conf
}

# /etc/slurm/slurm.conf -> $CONF (needed by srun inside jobs, see header)
link_etc_conf() {
    install -d -m 0755 "$(dirname "$ETC_CONF")"
    if [[ -L "$ETC_CONF" && "$(readlink "$ETC_CONF")" == "$CONF" ]]; then
        return 0
    fi
    if [[ -e "$ETC_CONF" || -L "$ETC_CONF" ]]; then
        if [[ -e "$ETC_BACKUP" || -L "$ETC_BACKUP" ]]; then
            log "replacing $ETC_CONF (backup $ETC_BACKUP already exists, keeping it)"
            rm -f "$ETC_CONF"
        else
            log "moving existing $ETC_CONF to $ETC_BACKUP"
            mv -f "$ETC_CONF" "$ETC_BACKUP"
        fi
    fi
    ln -s "$CONF" "$ETC_CONF"
    log "linked $ETC_CONF -> $CONF"
}

unlink_etc_conf() {
    if [[ -L "$ETC_CONF" && "$(readlink "$ETC_CONF")" == "$CONF" ]]; then
        rm -f "$ETC_CONF"
        log "removed link $ETC_CONF"
        if [[ -e "$ETC_BACKUP" || -L "$ETC_BACKUP" ]]; then
            mv -f "$ETC_BACKUP" "$ETC_CONF"
            log "restored $ETC_CONF from $ETC_BACKUP"
        fi
    fi
}

# ------------------------------------------------------------------ slurm ---
ctld_up() { timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; }
node_state() { timeout 10 sinfo -h -N -n "$(hostname -s)" -o '%t' 2>/dev/null | head -n1; }
node_idle() { [[ "$(node_state)" == idle* || "$(node_state)" == mix* || "$(node_state)" == alloc* ]]; }

start_slurmctld() {
    if [[ -n "$(live_pid "$PID_SLURMCTLD")" ]]; then
        log "slurmctld already running (pid $(live_pid "$PID_SLURMCTLD"))"
    else
        rm -f "$PID_SLURMCTLD"
        log "starting slurmctld"
        # -c: start from a clean state (no jobs from a previous test run)
        slurmctld -c -f "$CONF"
    fi
    wait_for "$TIMEOUT" "slurmctld (scontrol ping)" ctld_up \
        || { tail -n 20 "$LOG_DIR/slurmctld.log" >&2 || true; die "slurmctld is not UP"; }
    log "slurmctld is UP"
}

start_slurmd() {
    if [[ -n "$(live_pid "$PID_SLURMD")" ]]; then
        log "slurmd already running (pid $(live_pid "$PID_SLURMD"))"
    else
        rm -f "$PID_SLURMD"
        log "starting slurmd"
        slurmd -f "$CONF"
    fi
    if ! wait_for "$TIMEOUT" "node $(hostname -s) to become idle" node_idle; then
        local st; st="$(node_state)"
        if [[ "$st" == drain* || "$st" == down* ]]; then
            log "node is '$st' ($(timeout 10 sinfo -h -R 2>/dev/null || true)); resuming it"
            timeout 10 scontrol update NodeName="$(hostname -s)" State=RESUME || true
            wait_for 20 "node to become idle after resume" node_idle || true
        fi
        node_idle || { tail -n 20 "$LOG_DIR/slurmd.log" >&2 || true; die "node is not idle (state: $(node_state))"; }
    fi
    log "node $(hostname -s) is $(node_state)"
}

cmd_start() {
    install_packages
    start_munge
    write_conf
    start_slurmctld
    start_slurmd
    timeout 10 sinfo >&2 || true
    log "cluster ready (config: $CONF, linked from $ETC_CONF)"
}

# ------------------------------------------------------------------- stop ---
stop_pidfile() {
    local name="$1" f="$2" pid deadline
    pid="$(live_pid "$f")"
    if [[ -z "$pid" ]]; then
        [[ -e "$f" ]] && { log "$name: removing stale pid file $f"; rm -f "$f"; }
        log "$name: not running"
        return 0
    fi
    log "$name: stopping pid $pid"
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 20))
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            log "$name: still alive after 20s, sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 1
            break
        fi
        sleep 0.5
    done
    rm -f "$f"
    log "$name: stopped"
}

cmd_stop() {
    set +e   # best effort; safe from an EXIT trap
    if [[ -n "$(live_pid "$PID_SLURMCTLD")" ]] && [[ -f "$CONF" ]]; then
        local jobs
        jobs="$(timeout 10 squeue -h -t PD,R,CG,S -o '%i' 2>/dev/null | tr '\n' ' ')"
        if [[ -n "${jobs// /}" ]]; then
            log "cancelling jobs: $jobs"
            # shellcheck disable=SC2086
            timeout 10 scancel $jobs 2>/dev/null
            # shellcheck disable=SC2016  # expanded by the inner bash
            wait_for 20 "jobs to finish" \
                bash -c '[[ -z "$(timeout 10 squeue -h -t PD,R,CG,S -o %i 2>/dev/null)" ]]'
        fi
    fi
    stop_pidfile slurmd "$PID_SLURMD"
    stop_pidfile slurmctld "$PID_SLURMCTLD"
    stop_pidfile munged "$PID_MUNGED"
    unlink_etc_conf
    set -e
    log "cluster stopped"
    return 0
}

cmd_status() {
    local rc=0
    for d in munged:"$PID_MUNGED" slurmctld:"$PID_SLURMCTLD" slurmd:"$PID_SLURMD"; do
        local p; p="$(live_pid "${d#*:}")"
        if [[ -n "$p" ]]; then log "${d%%:*}: running (pid $p)"; else log "${d%%:*}: not running"; rc=1; fi
    done
    [[ -f "$CONF" ]] && { timeout 10 sinfo >&2 || rc=1; }
    return "$rc"
}

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    env) printf 'export SLURM_CONF=%q\n' "$CONF" ;;
    *) echo "usage: $0 {start|stop|status|env}   (state dir: \$ONENN_SLURM_DIR=$STATE_DIR)" >&2; exit 2 ;;
esac

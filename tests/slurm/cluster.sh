#!/usr/bin/env bash
# A throw-away single-node SLURM cluster on localhost, from Debian's packages.
#
#   tests/slurm/cluster.sh start DIR   install slurm-wlm + munge if missing, write DIR/slurm.conf
#                                      for this machine (its real CPUs and memory), start munged,
#                                      slurmctld and slurmd, wait until `sinfo` shows the node idle
#   tests/slurm/cluster.sh stop DIR    stop the three daemons started from DIR (by their pid files)
#
# Everything (config, keys, sockets, state, logs, pid files) lives under DIR, so the machine's own
# /etc/slurm, /etc/munge and system services are left alone and two clusters never share state.
# Clients find the cluster through `export SLURM_CONF=DIR/slurm.conf PATH=DIR/bin:$PATH`.
# DIR/bin/srun is a shim that sets SLURM_CONF again: snakemake-executor-plugin-slurm-jobstep
# removes every SLURM_* variable (SLURM_CONF included) before its `srun` inside the batch job,
# so without the shim that srun looks for /etc/slurm/slurm.conf and fails with
# "fetch_config: DNS SRV lookup failed ... Could not establish a configuration source".
#
# Why these settings: no slurmdbd (AccountingStorageType=accounting_storage/none), so job status
# comes from squeue, kept queryable for MinJobAge seconds after a job ends; finished jobs are also
# written to DIR/log/jobcomp.txt (JobCompType=jobcomp/filetxt) as a record the test can read.
# proctrack/linuxproc + task/none need no cgroup mounts, so it runs as root inside a container.
# The node offers one stand-in GPU GRES (a link to /dev/null named like a device) so that
# `--gpus=1` requests are accepted and scheduled; nothing runs on a real GPU here.
set -euo pipefail

CMD=${1:?usage: cluster.sh start|stop DIR}
DIR=$(realpath -m "${2:?usage: cluster.sh start|stop DIR}")
CTLD_PORT=${SLURMCTLD_PORT:-16817}
SLURMD_PORT=${SLURMD_PORT:-16818}

install_if_missing() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
        && command -v munged >/dev/null && command -v sbatch >/dev/null; then
        return
    fi
    echo "installing slurm-wlm and munge from Debian's packages" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
}

write_conf() {
    local node cpus_line
    node=$(hostname -s)
    # `slurmd -C` prints this machine's NodeName line: CPUs, sockets, cores, threads, RealMemory.
    cpus_line=$(slurmd -C | head -n 1 | sed -e "s/^NodeName=[^ ]*/NodeName=$node/")
    cat >"$DIR/slurm.conf" <<EOF
ClusterName=sharpness-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
MinJobAge=600
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
$cpus_line Gres=gpu:1 NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    # Slurm drops file-less GPUs, so the one GPU is a link named like a device to /dev/null.
    mkdir -p "$DIR/dev"
    ln -sfn /dev/null "$DIR/dev/nvidia0"
    echo "Name=gpu File=$DIR/dev/nvidia0" >"$DIR/gres.conf"
}

write_srun_shim() {
    mkdir -p "$DIR/bin"
    printf '#!/bin/sh\nexport SLURM_CONF="%s"\nexec %s "$@"\n' "$DIR/slurm.conf" \
        "$(command -v srun)" >"$DIR/bin/srun"
    chmod 755 "$DIR/bin/srun"
}

start_munge() {
    mkdir -p "$DIR/munge"
    chmod 755 "$DIR/munge"  # clients must reach the socket; the key itself is mode 600
    [ -f "$DIR/munge/munge.key" ] || mungekey --create --keyfile="$DIR/munge/munge.key"
    munged --force --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
        --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
        --seed-file="$DIR/munge/munged.seed"
}

wait_idle() {
    # Up to 90 s for the node to register; give up early if a daemon died or the node is invalid.
    local node state="" deadline=$((SECONDS + 90)) daemon
    node=$(hostname -s)
    while [ "$SECONDS" -lt "$deadline" ]; do
        for daemon in slurmctld slurmd; do
            if ! kill -0 "$(cat "$DIR/run/$daemon.pid" 2>/dev/null || echo 0)" 2>/dev/null; then
                state="$daemon not running"
                break 2
            fi
        done
        state=$(timeout 5 sinfo --noheader --nodes="$node" --format=%T 2>/dev/null || true)
        case "$state" in
        idle)
            echo "SLURM node $node is idle (SLURM_CONF=$DIR/slurm.conf)" >&2
            return 0
            ;;
        inval* | drain* | down*) if [ $((deadline - SECONDS)) -lt 80 ]; then break; fi ;;
        esac
        sleep 1
    done
    echo "SLURM node $node did not become idle (state: '${state:-none}'); logs:" >&2
    tail -n 20 "$DIR"/log/*.log >&2 || true
    return 1
}

stop_pidfile() {
    local file=$1 pid i
    [ -f "$file" ] || return 0
    pid=$(cat "$file")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for i in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$file"
}

case "$CMD" in
start)
    install_if_missing
    mkdir -p "$DIR"/{state,spool,log,run}
    chmod 755 "$DIR"
    write_conf
    write_srun_shim
    export SLURM_CONF="$DIR/slurm.conf"
    start_munge
    slurmctld -f "$SLURM_CONF"
    slurmd -f "$SLURM_CONF"
    wait_idle
    ;;
stop)
    # slurmd first (its running job steps end with it), then the controller, then munge.
    stop_pidfile "$DIR/run/slurmd.pid"
    stop_pidfile "$DIR/run/slurmctld.pid"
    stop_pidfile "$DIR/run/munged.pid"
    ;;
*)
    echo "usage: cluster.sh start|stop DIR" >&2
    exit 2
    ;;
esac

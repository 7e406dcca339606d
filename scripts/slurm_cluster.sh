#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for the SLURM sweep test (tests/test_slurm.py)
# and for trying `ckam-bench -m hydra/launcher=slurm ...` without a real cluster.
#
#   sudo scripts/slurm_cluster.sh          # install (Debian packages), configure, start
#   sudo scripts/slurm_cluster.sh stop     # stop slurmd, slurmctld and munged
#
# Root is required. Idempotent: a cluster already up (`sinfo` answers) is left as it is.
# The node gets this machine's real CPU count and memory; one partition `debug` (default).
# Accounting is off (no slurmdbd, no database): AccountingStorageType=accounting_storage/none
# and JobAcctGatherType=jobacct_gather/none. `sacct` then fails; ckam-bench's Hydra callback
# (ckam_bench/commands/slurm.py) has submitit read job states with `squeue` instead on such a cluster
# (docs/papers/ckam.md, "Sweeps on one machine and on a SLURM cluster").
set -euo pipefail

CONF_DIR=/etc/slurm
SPOOL=/var/spool
LOG_DIR=/var/log/slurm
RUN_DIR=/run/slurm

need_root() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "slurm_cluster.sh: root is required" >&2
        exit 1
    fi
}

stop_cluster() {
    for name in slurmd slurmctld munged; do
        pidfile=""
        case $name in
            slurmd) pidfile=$RUN_DIR/slurmd.pid ;;
            slurmctld) pidfile=$RUN_DIR/slurmctld.pid ;;
            munged) pidfile=/run/munge/munged.pid ;;
        esac
        pid=$(cat "$pidfile" 2>/dev/null || true)
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid"
            for _ in $(seq 50); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
        fi
        rm -f "$pidfile"
    done
    echo "slurm_cluster.sh: stopped"
}

cluster_up() {
    command -v sinfo >/dev/null 2>&1 || return 1
    timeout 10 sinfo -h -N -o '%T' 2>/dev/null | grep -Eq '^(idle|mixed|allocated)'
}

install_packages() {
    if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 \
        || ! command -v munged >/dev/null 2>&1 || ! command -v sacct >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        # slurm-client brings sinfo/squeue/scancel/sbatch/sacct.
        apt-get install -y -q --no-install-recommends slurm-wlm slurmctld slurmd slurm-client munge
    fi
}

start_munge() {
    mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
    if [ ! -s /etc/munge/munge.key ]; then
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
    chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge
    chmod 0700 /etc/munge /var/lib/munge /var/log/munge
    chmod 0755 /run/munge
    chmod 0400 /etc/munge/munge.key
    if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        runuser -u munge -- /usr/sbin/munged --force
        for _ in $(seq 50); do
            munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
            sleep 0.1
        done
    fi
}

write_conf() {
    local host cpus mem_mb
    host=$(hostname -s)
    cpus=$(nproc --all)
    # Leave 5% of the memory to the system (slurmd refuses a RealMemory above what it sees).
    mem_mb=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.95}' /proc/meminfo)
    mkdir -p "$CONF_DIR" "$SPOOL/slurmctld" "$SPOOL/slurmd" "$LOG_DIR" "$RUN_DIR"
    cat > "$CONF_DIR/slurm.conf" <<CONF
# Written by ckam-bench's scripts/slurm_cluster.sh: a one-node test cluster.
ClusterName=ckam-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
StateSaveLocation=$SPOOL/slurmctld
SlurmdSpoolDir=$SPOOL/slurmd
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# No accounting database: sacct is unavailable (submitit falls back, see the header).
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# Quick turnaround for tests.
SchedulerParameters=batch_sched_delay=0
MinJobAge=300
KillWait=5
InactiveLimit=0
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
}

start_daemons() {
    if ! { [ -s $RUN_DIR/slurmctld.pid ] && kill -0 "$(cat $RUN_DIR/slurmctld.pid)" 2>/dev/null; }; then
        /usr/sbin/slurmctld
    fi
    if ! { [ -s $RUN_DIR/slurmd.pid ] && kill -0 "$(cat $RUN_DIR/slurmd.pid)" 2>/dev/null; }; then
        /usr/sbin/slurmd
    fi
    for _ in $(seq 100); do
        cluster_up && return 0
        sleep 0.2
    done
    # A node left DOWN/DRAIN from an earlier start: bring it back.
    scontrol update nodename="$(hostname -s)" state=resume 2>/dev/null || true
    for _ in $(seq 50); do
        cluster_up && return 0
        sleep 0.2
    done
    echo "slurm_cluster.sh: the node did not come up; see $LOG_DIR/slurmctld.log and slurmd.log" >&2
    sinfo -N >&2 || true
    exit 1
}

need_root
if [ "${1:-start}" = stop ]; then
    stop_cluster
    exit 0
fi
if cluster_up; then
    sinfo -N
    exit 0
fi
install_packages
start_munge
write_conf
start_daemons
sinfo -N

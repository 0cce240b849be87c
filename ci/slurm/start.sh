#!/usr/bin/env bash
# Start a single-node SLURM cluster on localhost (Debian slurm-wlm 22.05 + munge), for testing the workflow's
# SLURM profile for real. Writes its state under $SLURM_TEST_DIR (default /tmp/isoflow-slurm); prints the
# `export SLURM_CONF=...` line to use. Stop it with ci/slurm/stop.sh. Needs root (installs with apt if missing).
set -euo pipefail
DIR=${SLURM_TEST_DIR:-/tmp/isoflow-slurm}
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
mkdir -p "$DIR"/{state,spool,log,run}
# munge: a key, then the daemon (as root, told that this is deliberate).
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge && dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
fi
chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge && chmod 755 /run/munge
pgrep -x munged >/dev/null || munged --force
cat > "$DIR/slurm.conf" <<CONF
ClusterName=isoflow-test
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
MinJobAge=300
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
GresTypes=gpu
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 RealMemory=16000 Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
cat > "$DIR/gres.conf" <<CONF
AutoDetect=off
NodeName=localhost Name=gpu File=/dev/null
CONF
# Job steps (srun inside sbatch) read the default location, not $SLURM_CONF: link it there.
mkdir -p /etc/slurm
ln -sf "$DIR/slurm.conf" /etc/slurm/slurm.conf
ln -sf "$DIR/gres.conf" /etc/slurm/gres.conf
export SLURM_CONF=$DIR/slurm.conf
slurmctld -f "$SLURM_CONF"
slurmd -N localhost -f "$SLURM_CONF"
for _ in $(seq 1 30); do
  if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 1
done
echo "SLURM did not come up; see $DIR/log" >&2
sinfo >&2 || true
exit 1

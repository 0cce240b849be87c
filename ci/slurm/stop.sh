#!/usr/bin/env bash
# Stop the test cluster started by ci/slurm/start.sh (by the PIDs it recorded) and remove its state.
DIR=${SLURM_TEST_DIR:-/tmp/isoflow-slurm}
for pidfile in "$DIR/run/slurmd.pid" "$DIR/run/slurmctld.pid"; do
  [ -s "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
done
sleep 1
for f in /etc/slurm/slurm.conf /etc/slurm/gres.conf; do [ "$(readlink "$f")" = "$DIR/$(basename "$f")" ] && rm -f "$f"; done
rm -rf "$DIR"

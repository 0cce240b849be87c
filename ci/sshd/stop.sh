#!/usr/bin/env bash
# Stop the test sshd started by ci/sshd/start.sh (by its PID file) and remove its directory.
set -uo pipefail
DIR=${SSHD_TEST_DIR:-/tmp/isoflow-sshd}
if [ -f "$DIR/sshd.pid" ]; then
  kill "$(cat "$DIR/sshd.pid")" 2>/dev/null || true
fi
rm -rf "$DIR"

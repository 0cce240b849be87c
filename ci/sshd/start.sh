#!/usr/bin/env bash
# Start an sshd on 127.0.0.1 (port $SSHD_TEST_PORT, default 2222) with key-only auth, to test the DVC SSH remote
# for real. Everything lives under $SSHD_TEST_DIR (default /tmp/isoflow-sshd): host key, client key
# ($DIR/client_key), config, pid file, log. Stop it with ci/sshd/stop.sh. Installs openssh-server with apt if
# missing (needs root for that, and to log in as root).
set -euo pipefail
DIR=${SSHD_TEST_DIR:-/tmp/isoflow-sshd}
PORT=${SSHD_TEST_PORT:-2222}
if [ ! -x /usr/sbin/sshd ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null
fi
mkdir -p "$DIR" /run/sshd && chmod 700 "$DIR"
[ -f "$DIR/host_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$DIR/host_key"
[ -f "$DIR/client_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$DIR/client_key"
cp "$DIR/client_key.pub" "$DIR/authorized_keys" && chmod 600 "$DIR/authorized_keys"
# known_hosts for clients (asyncssh, used by dvc-ssh, checks it).
echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$DIR/host_key.pub")" > "$DIR/known_hosts"
cat > "$DIR/sshd_config" <<CONF
Port $PORT
ListenAddress 127.0.0.1
HostKey $DIR/host_key
PidFile $DIR/sshd.pid
AuthorizedKeysFile $DIR/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
Subsystem sftp internal-sftp
CONF
if [ -f "$DIR/sshd.pid" ] && kill -0 "$(cat "$DIR/sshd.pid")" 2>/dev/null; then
  kill "$(cat "$DIR/sshd.pid")"; sleep 0.5
fi
/usr/sbin/sshd -f "$DIR/sshd_config" -E "$DIR/sshd.log"
for _ in $(seq 50); do
  if ssh -q -p "$PORT" -i "$DIR/client_key" -o BatchMode=yes -o UserKnownHostsFile="$DIR/known_hosts" \
       "$(id -un)@127.0.0.1" true 2>/dev/null; then
    echo "sshd on 127.0.0.1:$PORT; client key $DIR/client_key; known_hosts $DIR/known_hosts"
    exit 0
  fi
  sleep 0.2
done
if grep -q "Address already in use" "$DIR/sshd.log" 2>/dev/null; then
  echo "port $PORT is taken (another sshd?); stop it or set SSHD_TEST_PORT" >&2
else
  echo "sshd did not accept the test key; see $DIR/sshd.log" >&2
fi
exit 1

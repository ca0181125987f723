#!/usr/bin/env bash
# Start a local Prefect server on 127.0.0.1 and serve the veiltune pipeline as a deployment,
# so runs can be started from the UI with parameters. Ctrl-C stops both (serve first).
# The API requires the workspace's basic-auth string (.prefect/auth, made on first use).
# Extra arguments go to `veiltune serve`, e.g. --allow-overrides gate,anonymize.
set -euo pipefail
port="${1:-4200}"
shift || true
export PREFECT_HOME="${PREFECT_HOME:-$PWD/.prefect}"
mkdir -p "$PREFECT_HOME"
export PREFECT_API_URL="http://127.0.0.1:${port}/api"
export PREFECT_SERVER_ANALYTICS_ENABLED=false

auth_file="$PWD/.prefect/auth"
python -m flows.prefect_auth "$auth_file"  # 0600 in a 0700 folder; reused once made
auth="$(cat "$auth_file")"

PREFECT_SERVER_API_AUTH_STRING="$auth" \
  prefect server start --host 127.0.0.1 --port "$port" > "$PREFECT_HOME/server.log" 2>&1 &
server=$!
serve=""
stop() {  # never fails: under set -e a failing wait here would replace the exit status
  if [ -n "$serve" ]; then kill "$serve" 2>/dev/null && wait "$serve" 2>/dev/null || true; fi
  kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
}
trap stop EXIT INT TERM

for _ in $(seq 1 120); do
  curl -fsS "$PREFECT_API_URL/health" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { echo "prefect server failed; see $PREFECT_HOME/server.log" >&2; exit 1; }
  sleep 1
done
echo "Prefect UI: http://127.0.0.1:${port}  (deployment: veiltune-pipeline/veiltune-pipeline)"
echo "Log in with the whole user:password line of $auth_file (delete the file to rotate it)."
PREFECT_API_AUTH_STRING="$auth" veiltune serve "$@" &
serve=$!
wait "$serve"

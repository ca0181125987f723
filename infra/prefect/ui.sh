#!/usr/bin/env bash
# Start a local Prefect server on 127.0.0.1 and serve the veiltune pipeline as a deployment,
# so runs can be started from the UI with parameters. Ctrl-C stops both (serve first).
set -euo pipefail
port="${1:-4200}"
export PREFECT_HOME="${PREFECT_HOME:-$PWD/.prefect}"
mkdir -p "$PREFECT_HOME"
export PREFECT_API_URL="http://127.0.0.1:${port}/api"
export PREFECT_SERVER_ANALYTICS_ENABLED=false

prefect server start --host 127.0.0.1 --port "$port" > "$PREFECT_HOME/server.log" 2>&1 &
server=$!
serve=""
stop() {
  [ -n "$serve" ] && kill "$serve" 2>/dev/null && wait "$serve" 2>/dev/null
  kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
}
trap stop EXIT INT TERM

for _ in $(seq 1 120); do
  curl -fsS "$PREFECT_API_URL/health" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { echo "prefect server failed; see $PREFECT_HOME/server.log" >&2; exit 1; }
  sleep 1
done
echo "Prefect UI: http://127.0.0.1:${port}  (deployment: veiltune-pipeline/veiltune-pipeline)"
veiltune serve &
serve=$!
wait "$serve"

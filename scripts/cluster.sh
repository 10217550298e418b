#!/usr/bin/env bash
# Three instances of the demo server behind nginx (round-robin), sharing one Redis: the set-up of
# test/deploy/cluster.test.ts, by hand. Everything runs on 127.0.0.1 from a temp dir and stops on Ctrl-C.
#
#   npm run build && bash scripts/cluster.sh          # start, show a few cross-instance requests, stay up
#   bash scripts/cluster.sh --check                   # the same, then stop (exit status = the checks)
#
# Needs redis-server, nginx, curl and jq (Debian: apt-get install -y redis-server nginx curl jq).
set -euo pipefail
cd "$(dirname "$0")/.."

for bin in redis-server nginx curl jq; do
  command -v "$bin" >/dev/null || [ -x "/usr/sbin/$bin" ] || { echo "cluster.sh: $bin is not installed (apt-get install -y redis-server nginx curl jq)" >&2; exit 1; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -f dist/src/main.js ] || { echo "cluster.sh: run npm run build first" >&2; exit 1; }

DIR=$(mktemp -d /tmp/mcp-cluster.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
wait_http() { for _ in $(seq 100); do curl -sf "$1" >/dev/null && return 0; sleep 0.1; done; echo "cluster.sh: $1 did not answer" >&2; exit 1; }

REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" >"$DIR/redis.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

LB_PORT=$(free_port)
export MCP_REDIS_URL="redis://127.0.0.1:$REDIS_PORT" MCP_REDIS_PREFIX="cluster:" LOG_LEVEL=warn
export MCP_STATE_KEYS="k1:$(node -e "console.log(require('crypto').randomBytes(32).toString('base64url'))")"
export MCP_ALLOWED_HOSTS="127.0.0.1:$LB_PORT" MCP_TRUST_PROXY=127.0.0.1
UPSTREAMS=""
for n in 1 2 3; do
  PORT=$(free_port)
  PORT=$PORT node dist/src/main.js >"$DIR/instance-$n.log" 2>&1 &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$PORT/health"
  UPSTREAMS+="    server 127.0.0.1:$PORT max_fails=1 fail_timeout=30s;"$'\n'
  echo "instance $n: http://127.0.0.1:$PORT (pid $!)"
done

cat >"$DIR/nginx.conf" <<EOF
worker_processes 1;
pid $DIR/nginx.pid;
error_log $DIR/nginx-error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path $DIR/body; proxy_temp_path $DIR/proxy;
  fastcgi_temp_path $DIR/fastcgi; uwsgi_temp_path $DIR/uwsgi; scgi_temp_path $DIR/scgi;
  upstream mcp {
$UPSTREAMS    keepalive 16;
  }
  server {
    listen 127.0.0.1:$LB_PORT;
    client_max_body_size 1m;
    location / {
      proxy_pass http://mcp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_read_timeout 300s;
      proxy_buffering off;
      add_header X-Upstream \$upstream_addr always;
    }
  }
}
EOF
"$NGINX" -p "$DIR" -e "$DIR/nginx-error.log" -c "$DIR/nginx.conf" -g 'daemon off;' &
PIDS+=($!)
LB="http://127.0.0.1:$LB_PORT"
wait_http "$LB/health"
echo "nginx: $LB    redis: $MCP_REDIS_URL    logs: $DIR"

upstream() { grep -i '^x-upstream:' | tr -d '\r' | cut -d' ' -f2; }
echo "== round-robin: three requests, three instances"
for _ in 1 2 3; do curl -si "$LB/discover" | upstream; done

echo "== MRTR: update_work_item, round 1 and round 2 on different instances"
ARGS='{"workItemId":4522,"fields":{"System.State":"Resolved"}}'
META='{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}'
R1=$(curl -s "$LB/tools/update_work_item/calls" -H 'Content-Type: application/json' -d "{\"arguments\":$ARGS,\"_meta\":$META}")
curl -si "$LB/tools/update_work_item/calls" -H 'Content-Type: application/json' -d "$(jq -n --argjson a "$ARGS" --argjson m "$META" \
  --arg s "$(jq -r .requestState <<<"$R1")" '{arguments:$a,_meta:$m,requestState:$s,inputResponses:{resolution:{action:"accept",content:{resolution:"Fixed"}}}}')" \
  | tee "$DIR/mrtr.txt" | upstream
tail -1 "$DIR/mrtr.txt"; echo
grep -q 'resolved as Fixed' "$DIR/mrtr.txt"

echo "== notifications: delivered by one instance, acknowledged through the next"
curl -s "$LB/tools/slow_compute/calls" -H 'Content-Type: application/json' -d '{"arguments":{"n":2},"_meta":{"progressToken":"p1"}}' >/dev/null
curl -si "$LB/notifications" >"$DIR/notes.txt"
GROUP=$(grep -i '^mcp-message-group:' "$DIR/notes.txt" | tr -d '\r' | cut -d' ' -f2)
echo "group $GROUP from $(upstream <"$DIR/notes.txt")"
echo "ack through $(curl -si -X POST "$LB/notifications" -H "Mcp-Message-Group: $GROUP" | upstream)"
[ "$(curl -s "$LB/notifications")" = "[]" ]

echo "== all checks passed"
if [ "${1:-}" = "--check" ]; then exit 0; fi
echo "Up. Try: curl -si $LB/tools | grep -i x-upstream. Kill an instance with kill -9 <pid> and keep going. Ctrl-C stops everything."
wait

#!/usr/bin/env bash
# The memory inspector on a long session: a 100,000-message log appended
# through the HTTP API (100 requests of 1,000 messages, a tool call and its
# result in every tenth turn), then the timeline's last page and the page
# of a message in the middle (GET /v1/inspect/sessions/KEY), timed with
# farm-bench against reading the whole session (GET
# /v1/sessions/KEY/messages) beside it.
# usage: scripts/bench-inspector.sh [MNEMO_BINARY]   (default: target/release/mnemo)
set -euo pipefail
BIN="${1:-target/release/mnemo}"
WS="$(mktemp -d)"
PORT="${MNEMO_BENCH_PORT:-18931}"
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$WS"' EXIT
"$BIN" --workspace "$WS" init >/dev/null
"$BIN" --workspace "$WS" --set embedder.kind=none serve --http "127.0.0.1:$PORT" 2>/dev/null &
SERVER=$!
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.1; done
python3 - "$PORT" <<'PY'
import http.client, json, sys
port = int(sys.argv[1])
for batch in range(100):
    msgs = []
    for i in range(batch * 1000, (batch + 1) * 1000, 2):
        if i % 20 == 0:
            call = f"call_{i}"
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"notes/{i}.md"})}}]})
            msgs.append({"role": "tool", "tool_call_id": call, "name": "read_file", "content": f"note {i}: " + "lorem ipsum " * 40})
        else:
            msgs.append({"role": "user", "content": f"message {i}: what did we decide about item {i % 97}?"})
            msgs.append({"role": "assistant", "content": f"reply {i + 1}: item {i % 97} stays as planned, see the notes."})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/v1/sessions/long/messages", body=json.dumps({"messages": msgs}),
              headers={"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    assert r.status == 201, r.status
PY
ls -l "$WS/sessions/"
BASE="http://127.0.0.1:$PORT/v1"
echo "last page of the timeline vs the whole session:"
farm-bench -n 10 --timeout 600 --vs "curl -sf -o /dev/null $BASE/sessions/long/messages" -- curl -sf -o /dev/null "$BASE/inspect/sessions/long"
echo "the page of message 50000 vs the whole session:"
farm-bench -n 10 --timeout 600 --vs "curl -sf -o /dev/null $BASE/sessions/long/messages" -- curl -sf -o /dev/null "$BASE/inspect/sessions/long?message=50000"
curl -s "$BASE/inspect/sessions/long?message=50000" | python3 -c 'import json,sys; v=json.load(sys.stdin); print("page from line", v["from"], "of", v["total_lines"], "lines,", v["messages"], "messages,", len(v["chart"]), "chart points,", len(json.dumps(v)), "bytes")'

#!/usr/bin/env python3
"""A scripted model server on 127.0.0.1 for generating the peer fixtures.

It speaks OpenAI chat completions (/v1/chat/completions) and Anthropic
messages (/v1/messages), both with and without streaming: OpenClaw and
Claude Code only ever stream, which mnemo-test-support's scripted server
does not do, so the fixtures are generated against this one instead.

Usage: loopback_model.py SCRIPT.json REQUEST_LOG.jsonl
Prints the port on stdout, then serves until killed.

SCRIPT is a list of replies {"when", "text"?, "calls"?: [{"id","name","arguments"}]}.
A request gets the first unused reply whose `when` occurs in the JSON of its
messages (so side requests a tool makes, such as titles, cannot take a
reply meant for a turn); a request no reply matches gets the text "ok".
Every request is appended to REQUEST_LOG with the `when` it got. `{{TODAY}}`
in SCRIPT stands for today's local date, `{{HOME}}` for $HOME.
"""
import http.server
import json
import os
import sys
import threading
import time
import uuid

# `{{TODAY}}` in a reply is the local date (for the daily logs tools keep),
# `{{HOME}}` the home folder the tools run with.
SCRIPT = json.loads(
    open(sys.argv[1], encoding="utf-8").read()
    .replace("{{TODAY}}", time.strftime("%Y-%m-%d"))
    .replace("{{HOME}}", os.environ.get("HOME", ""))
)
LOG = open(sys.argv[2], "a", encoding="utf-8")
LOCK = threading.Lock()
USAGE_OPENAI = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
USAGE_ANTHROPIC = {
    "input_tokens": 100,
    "output_tokens": 10,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


def pick(request):
    seen = json.dumps(request.get("messages") or [], ensure_ascii=False)
    with LOCK:
        for reply in SCRIPT:
            if not reply.get("used") and reply["when"] in seen:
                reply["used"] = True
                return reply
    return {"when": None, "text": "ok"}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, entry):
        with LOCK:
            LOG.write(json.dumps(entry, ensure_ascii=False) + "\n")
            LOG.flush()

    def send_json(self, obj, status=200):
        body = json.dumps(obj, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.record({"method": "GET", "path": self.path})
        self.send_json({"object": "list", "data": [{"id": "scripted-model", "object": "model"}]})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            request = json.loads(raw)
        except ValueError:
            request = {}
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            self.record({"method": "POST", "path": path})
            return self.send_json({"input_tokens": 100})
        reply = pick(request)
        self.record({"method": "POST", "path": path, "when": reply["when"], "body": request})
        if path.endswith("/messages"):
            return self.anthropic(request, reply)
        if path.endswith("/chat/completions"):
            return self.openai(request, reply)
        return self.send_json({"error": {"message": "unknown path " + path}}, 404)

    def start_stream(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def openai(self, request, reply):
        calls = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"], ensure_ascii=False)},
            }
            for c in reply.get("calls") or []
        ]
        finish = "tool_calls" if calls else "stop"
        ident = "chatcmpl-" + uuid.uuid4().hex[:12]
        if not request.get("stream"):
            message = {"role": "assistant", "content": reply.get("text")}
            if calls:
                message["tool_calls"] = calls
            return self.send_json({
                "id": ident, "object": "chat.completion", "created": int(time.time()),
                "model": request.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": USAGE_OPENAI,
            })
        self.start_stream()
        base = {"id": ident, "object": "chat.completion.chunk", "created": int(time.time()), "model": request.get("model")}

        def chunk(delta, finish_reason=None, **extra):
            data = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}], **extra}
            self.wfile.write(b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n")
            self.wfile.flush()

        chunk({"role": "assistant"})
        if reply.get("text"):
            chunk({"content": reply["text"]})
        for i, call in enumerate(calls):
            chunk({"tool_calls": [{"index": i, **call}]})
        chunk({}, finish, usage=USAGE_OPENAI)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def anthropic(self, request, reply):
        content = []
        if reply.get("text"):
            content.append({"type": "text", "text": reply["text"]})
        for c in reply.get("calls") or []:
            content.append({"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]})
        stop = "tool_use" if reply.get("calls") else "end_turn"
        ident = "msg_" + uuid.uuid4().hex[:24]
        if not request.get("stream"):
            return self.send_json({
                "id": ident, "type": "message", "role": "assistant", "model": request.get("model"),
                "content": content, "stop_reason": stop, "stop_sequence": None, "usage": USAGE_ANTHROPIC,
            })
        self.start_stream()

        def event(name, data):
            self.wfile.write(("event: %s\ndata: %s\n\n" % (name, json.dumps(data, ensure_ascii=False))).encode())
            self.wfile.flush()

        event("message_start", {"type": "message_start", "message": {
            "id": ident, "type": "message", "role": "assistant", "model": request.get("model"), "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {**USAGE_ANTHROPIC, "output_tokens": 1}}})
        for i, block in enumerate(content):
            if block["type"] == "text":
                event("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
                event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}})
            else:
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                event("content_block_start", {"type": "content_block_start", "index": i, "content_block": start})
                partial = json.dumps(block["input"], ensure_ascii=False)
                event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": partial}})
            event("content_block_stop", {"type": "content_block_stop", "index": i})
        event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 10}})
        event("message_stop", {"type": "message_stop"})


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()

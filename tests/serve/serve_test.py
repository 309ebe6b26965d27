#!/usr/bin/env python3
"""atlas serve against real server processes on loopback (ephemeral ports).

Every wait is bounded in count and time; a server that does not answer
fails the test, never hangs it. Needs only Python's standard library.
  serve_test.py ATLAS MAKE_CHECKPOINT TOKENIZER_JSON [CASE...]
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ATLAS, MAKE_CHECKPOINT, TOKENIZER = sys.argv[1:4]
ONLY = set(sys.argv[4:])
TMP = tempfile.mkdtemp(prefix="atlas_serve.", dir=os.environ.get("TEST_TMPDIR"))
KEY = "s3cret-key"
TEMPLATE = {
    "bos_token": "<|bos|>", "eos_token": "<|eos|>",
    "chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n"
                     "{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}"
                     "<|im_start|>assistant\n{% endif %}"}
FAILS = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f"  [{detail}]"),
          flush=True)
    if not cond:
        FAILS.append(name)


def checkpoint(name, seed, max_pos=128):
    d = os.path.join(TMP, name)
    subprocess.run([MAKE_CHECKPOINT, "--out", d, "--seed", str(seed), "--preset", "tiny",
                    "--vocab", "665", "--max-pos", str(max_pos), "--dtype", "f32"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(TOKENIZER, "rb") as f, open(os.path.join(d, "tokenizer.json"), "wb") as g:
        g.write(f.read())
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(TEMPLATE, f)
    return d


class Server:
    def __init__(self, model, *args, env=None):
        self.log = open(os.path.join(TMP, f"server{time.monotonic_ns()}.err"), "w+")
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen([ATLAS, "serve", "--model", model, "--port", "0",
                                      "--backend", "host", *args],
                                     stdout=subprocess.PIPE, stderr=self.log, env=e, text=True)
        line = self.proc.stdout.readline()  # the server says where it listens
        m = re.search(r":(\d+)$", line.strip())
        if not m:
            self.proc.kill()
            raise RuntimeError(f"server did not start: {line!r} {self.stderr()}")
        self.port = int(m.group(1))

    def stderr(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = self.conn(timeout)
        h = {"Authorization": f"Bearer {KEY}"}
        h.update(headers or {})
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        payload = r.read()
        c.close()
        try:
            return r.status, json.loads(payload)
        except ValueError:
            return r.status, payload.decode("utf-8", "replace")

    def stream(self, path, body, timeout=60):
        """Yields each SSE data payload (str) as it arrives."""
        c = self.conn(timeout)
        c.request("POST", path, body=json.dumps(body),
                  headers={"Authorization": f"Bearer {KEY}"})
        r = c.getresponse()
        if r.status != 200:
            yield r.status, r.read()
            return
        for raw in r:
            line = raw.decode("utf-8").rstrip("\n")
            if line.startswith("data: "):
                yield 200, line[6:]
        c.close()

    def metric(self, name):
        _, text = self.request("GET", "/metrics")
        m = re.search(r"^" + re.escape(name) + r" (\S+)$", text, re.M)
        return float(m.group(1)) if m else None

    def stop(self, sig=signal.SIGTERM, timeout=60):
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = "hung"
        return rc


def wait_until(pred, tries=200, pause=0.05):
    for _ in range(tries):
        if pred():
            return True
        time.sleep(pause)
    return False


def atlas_run(model, prompt, steps, *extra):
    r = subprocess.run([ATLAS, "run", "--model", model, "--backend", "host", "--prompt",
                        prompt, "--steps", str(steps), *extra],
                       capture_output=True, check=True)
    return r.stdout.decode("utf-8")[:-1]  # run ends the text with a newline


def collect(events):
    """An SSE stream's chunks as JSON, the [DONE] seen, errors."""
    chunks, done, errors = [], False, []
    for status, data in events:
        if status != 200:
            errors.append((status, data))
            break
        if data == "[DONE]":
            done = True
            continue
        check_no_more = done
        if check_no_more:
            errors.append(("after [DONE]", data))
        o = json.loads(data)
        (errors if "error" in o else chunks).append(o)
    return chunks, done, errors


def case_endpoints(m, m2):
    s = Server(m, "--api-key", KEY)
    try:
        st, body = s.request("GET", "/health")
        check("/health is 200 while a model serves", st == 200 and body["status"] == "ok", body)
        st, body = s.request("GET", "/v1/models")
        check("/v1/models lists the served name",
              st == 200 and [d["id"] for d in body["data"]] == ["m"], body)
        st, body = s.request("GET", "/v1/models/m")
        check("/v1/models/m is the model", st == 200 and body["id"] == "m", body)
        # Completions: greedy text equals atlas run's.
        want = atlas_run(m, "Hello wörld", 12)
        st, body = s.request("POST", "/v1/completions",
                             {"model": "m", "prompt": "Hello wörld", "max_tokens": 12,
                              "temperature": 0})
        check("completion: 200", st == 200, body)
        check("completion: greedy text is atlas run's",
              st == 200 and body["choices"][0]["text"] == want, (body, want))
        check("completion: object and usage",
              st == 200 and body["object"] == "text_completion"
              and isinstance(body["usage"]["prompt_tokens_details"]["cached_tokens"], int)
              and body["usage"]["completion_tokens"] == 12
              and body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + 12, body)
        # The same as a stream, with usage.
        chunks, done, errors = collect(s.stream(
            "/v1/completions", {"prompt": "Hello wörld", "max_tokens": 12, "temperature": 0,
                                "stream": True, "stream_options": {"include_usage": True}}))
        text = "".join(c["choices"][0]["text"] for c in chunks if c["choices"])
        check("completion stream: ends with [DONE], no error", done and not errors, errors)
        check("completion stream: the chunks make atlas run's text", text == want, (text, want))
        check("completion stream: the last chunk is the usage",
              chunks and chunks[-1]["choices"] == [] and
              chunks[-1]["usage"]["completion_tokens"] == 12, chunks[-1:])
        check("completion stream: finish_reason length on the last choice chunk",
              [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "length")
        # Chat, whole and streamed.
        want = atlas_run(m, "hi there", 8, "--chat", "--system", "be brief")
        msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}]
        st, body = s.request("POST", "/v1/chat/completions",
                             {"messages": msgs, "max_tokens": 8, "temperature": 0})
        check("chat: greedy message is atlas run --chat's",
              st == 200 and body["choices"][0]["message"]["content"] == want, (body, want))
        chunks, done, errors = collect(s.stream(
            "/v1/chat/completions", {"messages": msgs, "max_tokens": 8, "temperature": 0,
                                     "stream": True}))
        check("chat stream: the first delta has the role",
              chunks and chunks[0]["choices"][0]["delta"].get("role") == "assistant", chunks[:1])
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
        check("chat stream: the deltas make the message", done and text == want, (text, want))
        check("chat stream: no usage without include_usage",
              all("usage" not in c for c in chunks), chunks[-1:])
        # n, seed, sampling options.
        req = {"prompt": "Once", "max_tokens": 10, "temperature": 0.9, "top_p": 0.95,
               "top_k": 50, "min_p": 0.01, "repetition_penalty": 1.1, "seed": 7, "n": 3}
        st, a = s.request("POST", "/v1/completions", req)
        st2, b = s.request("POST", "/v1/completions", req)
        check("n=3: three choices, indexed",
              st == 200 and [c["index"] for c in a["choices"]] == [0, 1, 2], a)
        check("the same seed gives the same choices",
              st2 == 200 and [c["text"] for c in a["choices"]] == [c["text"] for c in b["choices"]])
        check("n=3: usage counts every choice's tokens", a["usage"]["completion_tokens"] == 30, a)
        # stop: the text ends before the stop string.
        full = atlas_run(m, "Hello wörld", 20)
        stop = full[len(full) // 2:len(full) // 2 + 2] if len(full) > 4 else None
        if stop and stop.strip():
            st, body = s.request("POST", "/v1/completions",
                                 {"prompt": "Hello wörld", "max_tokens": 20, "temperature": 0,
                                  "stop": [stop]})
            check("stop: the text stops before the stop string",
                  st == 200 and body["choices"][0]["text"] == full[:full.index(stop)]
                  and body["choices"][0]["finish_reason"] == "stop", (body, full, stop))
        # logprobs
        st, body = s.request("POST", "/v1/chat/completions",
                             {"messages": msgs, "max_tokens": 5, "temperature": 0,
                              "logprobs": True})
        lp = body["choices"][0]["logprobs"]["content"] if st == 200 else []
        check("chat logprobs: one entry a token, each <= 0",
              len(lp) == 5 and all(e["logprob"] <= 0 for e in lp), body)
        st, body = s.request("POST", "/v1/chat/completions",
                             {"messages": msgs, "logprobs": True, "top_logprobs": 21})
        check("top_logprobs past 20 is a 400 naming it",
              st == 400 and body["error"]["param"] == "top_logprobs", body)
        # Errors.
        st, body = s.request("POST", "/v1/completions", "{not json")
        check("bad JSON: 400 in OpenAI's error shape",
              st == 400 and set(body["error"]) == {"message", "type", "param", "code"}, body)
        st, body = s.request("POST", "/v1/completions", {"prompt": "x", "temperature": -1})
        check("a bad field: 400 naming it", st == 400 and body["error"]["param"] == "temperature",
              body)
        st, body = s.request("POST", "/v1/completions", {"prompt": "x", "model": "other"})
        check("an unknown model: 404", st == 404 and body["error"]["code"] == "model_not_found",
              body)
        st, body = s.request("POST", "/v1/completions", {"prompt": "x" * 2000})
        check("a prompt past the context: 400 naming prompt",
              st == 400 and body["error"]["param"] == "prompt", body)
        st, body = s.request("GET", "/v1/nothing")
        check("an unknown route: 404", st == 404, body)
        st, body = s.request("GET", "/v1/completions")
        check("a wrong method: 405", st == 405, body)
        for hdr in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
            c = s.conn()
            c.request("POST", "/v1/completions", body='{"prompt":"x"}', headers=hdr)
            r = c.getresponse()
            payload = json.loads(r.read())
            c.close()
            check(f"auth {list(hdr.values())}: 401",
                  r.status == 401 and payload["error"]["code"] == "invalid_api_key", payload)
        st, body = s.request("POST", "/admin/swap", {"model": m2}, headers={"Authorization": ""})
        check("admin without the key: 401", st == 401, body)
        st, body = s.request("GET", "/admin/report")
        check("/admin/report: the memory report", st == 200 and body["live_bytes"] > 0, body)
        st, text = s.request("GET", "/metrics")
        for name in ("atlas_requests_total{endpoint=\"/v1/completions\",status=\"200\"}",
                     "atlas_time_to_first_token_seconds_count", "atlas_kv_blocks{state=\"free\"}",
                     "atlas_sequences{state=\"running\"}", "atlas_swaps_total{outcome=\"lost\"}",
                     "atlas_ledger_live_bytes_total", "atlas_generation_tokens_total",
                     "atlas_prefix_cache_hit_tokens_total", "atlas_preempted_total"):
            check(f"/metrics has {name}", st == 200 and name in text)
        check("/metrics counts the 401s",
              'endpoint="/v1/completions",status="401"} 3' in text)
        check("the key never reaches the log", KEY not in s.stderr())
    finally:
        rc = s.stop()
    check("SIGTERM: exit 0", rc == 0, rc)
    check("SIGTERM: leaked: 0 bytes in the log", "leaked: 0 bytes" in s.stderr(), s.stderr()[-500:])


def case_n_and_logprobs(m):
    """n choices fork from one prefill; logprobs with alternatives."""
    s = Server(m)
    try:
        prompt = "Forked choices share one prompt"
        st, one = s.request("POST", "/v1/completions",
                            {"prompt": prompt, "max_tokens": 8, "temperature": 0})
        before = s.metric("atlas_prompt_tokens_computed_total")
        st, body = s.request("POST", "/v1/completions",
                             {"prompt": prompt + "!", "max_tokens": 8, "temperature": 0,
                              "n": 4})
        after = s.metric("atlas_prompt_tokens_computed_total")
        usage = body.get("usage", {}) if isinstance(body, dict) else {}
        want = usage.get("prompt_tokens", 0) - \
            usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)
        check("n=4: the prompt is computed once (the choices fork from it)",
              st == 200 and after - before == want, (before, after, usage))
        st2, one2 = s.request("POST", "/v1/completions",
                              {"prompt": prompt + "!", "max_tokens": 8, "temperature": 0})
        check("n=4 greedy: every choice is the n=1 answer",
              st == 200 and st2 == 200 and
              [c["text"] for c in body["choices"]] == [one2["choices"][0]["text"]] * 4,
              (body, one2))
        chunks, done, errors = collect(s.stream(
            "/v1/completions", {"prompt": prompt + "!", "max_tokens": 8, "temperature": 0,
                                "n": 3, "stream": True}))
        texts = ["", "", ""]
        for c in chunks:
            for ch in c["choices"]:
                texts[ch["index"]] += ch["text"]
        check("n=3 streamed: each index's chunks make the n=1 answer",
              done and not errors and texts == [one2["choices"][0]["text"]] * 3, texts)
        req = {"prompt": prompt, "max_tokens": 8, "temperature": 0.8, "seed": 11, "n": 3}
        st, a = s.request("POST", "/v1/completions", req)
        singles = []
        for i in range(3):
            st_i, b = s.request("POST", "/v1/completions",
                                dict(req, n=1, seed=11 + i))
            singles.append(b["choices"][0]["text"] if st_i == 200 else None)
        check("n=3 sampled: choice i draws as a request with seed + i",
              st == 200 and [c["text"] for c in a["choices"]] == singles, (a, singles))
        # Chat: logprobs with 5 alternatives, whole and streamed, alike.
        msgs = [{"role": "user", "content": "say something"}]
        req = {"messages": msgs, "max_tokens": 6, "temperature": 0, "logprobs": True,
               "top_logprobs": 5}
        st, body = s.request("POST", "/v1/chat/completions", req)
        content = body["choices"][0]["logprobs"]["content"] if st == 200 else []
        ok = len(content) == 6
        for e in content:
            lps = [t["logprob"] for t in e["top_logprobs"]]
            ok = ok and len(lps) == 5 and lps == sorted(lps, reverse=True) \
                and all(v <= 0 for v in lps) and abs(e["logprob"] - lps[0]) < 1e-6 \
                and isinstance(e["top_logprobs"][0]["bytes"], list)
        check("chat top_logprobs: 5 alternatives a token, largest first; greedy "
              "picks the first", ok, content[:1])
        chunks, done, errors = collect(s.stream("/v1/chat/completions",
                                                dict(req, stream=True)))
        streamed = [e for c in chunks if c["choices"] and c["choices"][0].get("logprobs")
                    for e in c["choices"][0]["logprobs"]["content"]]
        check("chat top_logprobs streamed: the same entries",
              done and not errors and streamed == content, (streamed[:1], content[:1]))
        st, body = s.request("POST", "/v1/completions",
                             {"prompt": prompt, "max_tokens": 4, "temperature": 0,
                              "logprobs": 3})
        lp = body["choices"][0]["logprobs"] if st == 200 else {}
        check("completions logprobs 3: a dict of 3 alternatives a token",
              st == 200 and len(lp["top_logprobs"]) == 4 and
              all(1 <= len(t) <= 3 for t in lp["top_logprobs"]) and
              all(abs(max(t.values()) - c) < 1e-6
                  for t, c in zip(lp["top_logprobs"], lp["token_logprobs"])), lp)
    finally:
        rc = s.stop()
    check("n and logprobs: exit 0, nothing leaked",
          rc == 0 and "leaked: 0 bytes" in s.stderr(), rc)


def raw(port, data, timeout=30):
    """Sends bytes on a fresh socket; returns the status line's code."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as so:
        so.sendall(data)
        reply = b""
        while b"\r\n" not in reply:
            part = so.recv(4096)
            if not part:
                break
            reply += part
    m = re.match(rb"HTTP/1\.\d (\d+)", reply)
    return int(m.group(1)) if m else None


def case_limits(m):
    s = Server(m)
    try:
        code = raw(s.port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                           b"Content-Length: 5000000\r\n\r\n")
        check("a body over the cap: 413 before it is read", code == 413, code)
        big = json.dumps({"prompt": "a" * (5 << 20)}).encode()
        try:
            code = raw(s.port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                               b"Transfer-Encoding: chunked\r\n\r\n" +
                       b"%x\r\n" % len(big) + big + b"\r\n0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            code = "reset"
        check("a chunked body past the cap: 413", code in (413, "reset"), code)
        code = raw(s.port, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 40000 +
                   b"\r\n\r\n")
        check("headers over the limit: 431 (or 413/414), never 500",
              code in (413, 414, 431), code)
        # Slowloris: eight clients sending one byte a second do not block
        # others: each second a completion and /health are answered.
        slow = [socket.create_connection(("127.0.0.1", s.port), timeout=30) for _ in range(8)]
        for so in slow:
            so.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le")
        answered = []
        tail = b"ngth: 5\r\n"
        for i in range(4):
            for so in slow:
                so.sendall(tail[i:i + 1])  # one byte a second each
            t0 = time.monotonic()
            st, body = s.request("POST", "/v1/completions",
                                 {"prompt": "still here", "max_tokens": 2}, timeout=10)
            st2, _ = s.request("GET", "/health", timeout=10)
            answered.append((st, st2))
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
        check("slow clients (a byte a second) do not block others",
              answered == [(200, 200)] * 4, answered)
        for so in slow:
            so.close()
        st, _ = s.request("GET", "/health")
        check("the server still answers after the slow client", st == 200)
    finally:
        rc = s.stop()
    check("limits: exit 0 after SIGTERM", rc == 0, rc)


def case_disconnect_and_queue(long_model):
    s = Server(long_model, "--max-seq", "4096", "--max-running", "1", "--max-waiting", "1")
    try:
        body = {"prompt": "Once", "max_tokens": 4000, "n": 4, "temperature": 0,
                "stream": True}
        c = s.conn()
        c.request("POST", "/v1/completions", body=json.dumps(body))
        r = c.getresponse()
        first = r.readline()
        check("a long stream starts", r.status == 200 and first.startswith(b"data: "), first)
        st, err = s.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 1})
        check("the queue is full: 429", st == 429 and err["error"]["code"] == "queue_full", err)
        c.close()  # the client goes away mid-stream
        gone = wait_until(lambda: s.metric("atlas_sequences{state=\"running\"}") == 0 and
                          s.metric("atlas_sequences{state=\"waiting\"}") == 0, tries=600)
        check("a disconnect mid-stream cancels its sequences", gone)
        gen = s.metric("atlas_generation_tokens_total")
        check("... before they ran to their end", gen is not None and gen < 16000, gen)
        st, _ = s.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 1})
        check("the server takes requests again", st == 200, st)
    finally:
        rc = s.stop()
    check("disconnect: exit 0, nothing leaked", rc == 0 and "leaked: 0 bytes" in s.stderr(), rc)


def case_timeout(long_model):
    s = Server(long_model, "--max-seq", "4096", "--timeout-s", "1", "--max-running", "1")
    try:
        st, body = s.request("POST", "/v1/completions",
                             {"prompt": "Once", "max_tokens": 4000, "n": 4})
        check("--timeout-s cuts a long request: 504", st == 504 and
              body["error"]["code"] == "timeout", (st, body))
        chunks, done, errors = collect(s.stream(
            "/v1/completions", {"prompt": "Once", "max_tokens": 4000, "n": 4, "stream": True}))
        reasons = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
        check("a timed-out stream ends with abort, an error event and [DONE]",
              done and "abort" in reasons and errors, (reasons[-3:], errors))
    finally:
        rc = s.stop()
    check("timeout: exit 0", rc == 0, rc)


def case_sigterm_mid_stream(long_model):
    s = Server(long_model, "--max-seq", "4096", "--drain-s", "0")
    events = s.stream("/v1/completions", {"prompt": "Once", "max_tokens": 4000, "n": 4,
                                          "stream": True})
    first = next(events)
    check("a stream is under way", first[0] == 200, first)
    s.proc.send_signal(signal.SIGTERM)
    chunks, done, errors = collect(events)
    reasons = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    check("SIGTERM mid-stream: the stream ends cleanly ([DONE], abort)",
          done and "abort" in reasons, (done, reasons[-4:], errors))
    try:
        rc = s.proc.wait(60)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        rc = "hung"
    check("SIGTERM mid-stream: exit 0", rc == 0, rc)
    check("SIGTERM mid-stream: leaked: 0 bytes", "leaked: 0 bytes" in s.stderr(), s.stderr()[-400:])


def case_swap_faults_under_load(m, m2, clients=16, swaps=20):
    """The issue's test, CI-sized: streaming clients while swaps alternate
    between two models, two of them faulted (--fail-swaps: the new model's
    n-th allocation fails, at two points) and one to a corrupt checkpoint.
    Every stream ends complete or with an OpenAI error event, none hangs,
    and the ledger ends at one model's bytes."""
    corrupt = os.path.join(TMP, "corrupt_f")
    os.makedirs(corrupt, exist_ok=True)
    for f in os.listdir(m2):
        with open(os.path.join(m2, f), "rb") as a, open(os.path.join(corrupt, f), "wb") as b:
            data = a.read()
            b.write(data[:len(data) // 2] if f == "model.safetensors" else data)
    faulted = {5: 1, 12: 3}  # swap number: the allocation that fails (the
    # first and the last of the new model's load; the 4th is its KV pool's)
    spec = ",".join(f"{k}:alloc:{n}" for k, n in faulted.items())
    s = Server(m, "--drain-s", "1", "--fail-swaps", spec)
    st, before = s.request("GET", "/admin/report")
    results, stop = [], threading.Event()

    def client(i):
        k = 0
        while not stop.is_set() and k < 200:
            k += 1
            try:
                chunks, done, errors = collect(s.stream(
                    "/v1/completions", {"prompt": f"client {i} {k}", "max_tokens": 24,
                                        "stream": True, "temperature": 0}, timeout=60))
                reasons = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
                complete = not errors and reasons and reasons[-1] in ("length", "stop")
                openai_error = errors and all(
                    isinstance(e, dict) and set(e["error"]) >= {"message", "type", "code"}
                    for e in errors if not isinstance(e, tuple)) and \
                    all(e[0] in (503, 504) for e in errors if isinstance(e, tuple))
                results.append(bool(done and (complete or openai_error)) or
                               (not done and errors and errors[0][0] == 503))
            except Exception as e:  # a hang shows as a timeout here
                results.append(False)
                print("client error:", repr(e))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    outcomes = []
    try:
        targets = [m2 if i % 2 == 0 else m for i in range(swaps)]
        targets[8] = corrupt  # the 9th
        targets[-1] = m  # ends on the model it started with
        for t in targets:
            st, body = s.request("POST", "/admin/swap", {"model": t}, timeout=120)
            outcomes.append((len(outcomes) + 1, os.path.basename(t), st, body.get("outcome")))
        stop.set()
        for t in threads:
            t.join(120)
        check("swap faults: every client ended (none hangs)",
              not any(t.is_alive() for t in threads))
        print("swaps:", outcomes)
        print("streams:", len(results), "bad:", results.count(False))
        check("swap faults: every stream ended complete or with an OpenAI error",
              results and all(results), results.count(False))
        check("swap faults: the two faulted swaps kept the old model (500)",
              [(o[2], o[3]) for o in outcomes if o[0] in faulted] == [(500, "kept")] * 2,
              outcomes)
        check("swap faults: the corrupt checkpoint was refused or restored",
              outcomes[8][3] in ("refused", "restored", "kept") and outcomes[8][2] != 200,
              outcomes[8])
        check("swap faults: every other swap swapped",
              all(o[2] == 200 and o[3] == "swapped" for o in outcomes
                  if o[0] not in faulted and o[0] != 9), outcomes)
        st, after = s.request("GET", "/admin/report")
        # One model: the same checkpoint's bytes as before the load (the
        # batch scratch may have grown with the load, never to a second
        # model's weights).
        weights = before["live_bytes"]
        check("swap faults: the ledger ends at one model",
              st == 200 and after["live_bytes"] < 1.5 * weights,
              (before["live_bytes"], after.get("live_bytes")))
        st, text = s.request("GET", "/metrics")
        check("swap faults: /metrics counts 2 kept",
              'atlas_swaps_total{outcome="kept"} 2' in text, text[-400:])
        st, health = s.request("GET", "/health")
        check("swap faults: /health 200 after", st == 200, health)
    finally:
        stop.set()
        rc = s.stop()
    check("swap faults: exit 0, nothing leaked", rc == 0 and "leaked: 0 bytes" in s.stderr(),
          (rc, s.stderr()[-300:]))


def case_swap_under_load(m, m2, rounds=1):
    corrupt = os.path.join(TMP, "corrupt")
    os.makedirs(corrupt, exist_ok=True)
    for f in os.listdir(m2):
        with open(os.path.join(m2, f), "rb") as a, open(os.path.join(corrupt, f), "wb") as b:
            data = a.read()
            b.write(data[:len(data) // 2] if f == "model.safetensors" else data)
    s = Server(m, "--api-key", KEY, "--drain-s", "2")
    results, stop = [], threading.Event()

    def client(i):
        while not stop.is_set() and len(results) < 400:
            try:
                if i % 2:
                    chunks, done, errors = collect(s.stream(
                        "/v1/completions", {"prompt": f"client {i}", "max_tokens": 20,
                                            "stream": True}))
                    reasons = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
                    ok = done and (errors or (reasons and reasons[-1] in ("length", "stop")))
                    results.append(("stream", bool(ok)))
                else:
                    st, body = s.request("POST", "/v1/completions",
                                         {"prompt": f"client {i}", "max_tokens": 20})
                    ok = (st == 200 and body["choices"][0]["finish_reason"] in ("length", "stop")) \
                        or (st in (500, 503) and "error" in body)
                    results.append(("whole", ok))
            except Exception as e:  # a hang shows as a timeout here
                results.append(("exception", False))
                print("client error:", repr(e))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    outcomes = []
    try:
        st, before = s.request("GET", "/admin/report")
        # Ten swaps a round, a corrupt and a missing checkpoint among them;
        # each round ends on m, the model the ledger started with.
        targets = [m2, m, m2, corrupt, m, m2, m, os.path.join(TMP, "missing"), m2, m]
        ledger = []  # live bytes at the end of each round, m serving
        for _ in range(rounds):
            for t in targets:
                st, body = s.request("POST", "/admin/swap", {"model": t}, timeout=120)
                outcomes.append((os.path.basename(t), st, body.get("outcome")))
            st, report = s.request("GET", "/admin/report")
            ledger.append(report["live_bytes"] if st == 200 else None)
        stop.set()
        for t in threads:
            t.join(120)
        check("swap clients all ended", not any(t.is_alive() for t in threads))
        print("swaps:", outcomes)
        print("requests:", len(results), "bad:", [r for r in results if not r[1]][:5])
        check("every request under swaps ended complete or with an OpenAI error",
              results and all(ok for _, ok in results), len(results))
        good = [o for o in outcomes if o[0] in ("m", "m2")]
        check("swaps to good checkpoints: swapped", all(o[2] == "swapped" and o[1] == 200
                                                        for o in good), outcomes)
        bad = [o for o in outcomes if o[0] in ("corrupt", "missing")]
        check("swaps to a corrupt or missing checkpoint: refused or restored, not lost",
              all(o[2] in ("refused", "restored", "kept") for o in bad), outcomes)
        # Scratch sized by the batches seen grows lazily, so the bytes vary a
        # little with the load; what must not happen is growth with swaps.
        st, after = s.request("GET", "/admin/report")
        print("ledger: before", before.get("live_bytes"), "each round", ledger,
              "after", after.get("live_bytes"))
        half = [before["live_bytes"]] + ledger[:(len(ledger) + 1) // 2]
        check("after the swaps the ledger holds one model's bytes (no growth with swaps)",
              st == 200 and None not in ledger and max(ledger) <= max(half) and
              after["live_bytes"] <= max(half), (before.get("live_bytes"), ledger))
        st, text = s.request("GET", "/metrics")
        check("/metrics counts the swaps",
              re.search(r'atlas_swaps_total\{outcome="swapped"\} [1-9]', text) is not None)
        st, health = s.request("GET", "/health")
        check("/health is 200 after the swaps", st == 200, health)
    finally:
        stop.set()
        rc = s.stop()
    check("swap under load: exit 0, nothing leaked", rc == 0 and "leaked: 0 bytes" in s.stderr(),
          (rc, s.stderr()[-300:]))


def case_sigterm_during_swap(m, long_model):
    # A long stream, a swap that drains it, and SIGTERM while the swap waits:
    # the server still ends cleanly, the stream with [DONE].
    s = Server(long_model, "--max-seq", "4096", "--drain-s", "2")
    events = s.stream("/v1/completions", {"prompt": "Once", "max_tokens": 4000, "n": 4,
                                          "stream": True})
    first = next(events)
    check("a long stream is under way", first[0] == 200, first)
    swap = threading.Thread(target=lambda: s.request("POST", "/admin/swap",
                                                     {"model": long_model}, timeout=120))
    swap.start()
    time.sleep(0.5)  # not an assertion: lets the swap start draining
    s.proc.send_signal(signal.SIGTERM)
    chunks, done, errors = collect(events)
    check("the stream ends with [DONE]", done, (len(chunks), errors))
    swap.join(120)
    try:
        rc = s.proc.wait(60)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        rc = "hung"
    check("SIGTERM during a swap: exit 0", rc == 0, (rc, s.stderr()[-400:]))
    check("SIGTERM during a swap: leaked: 0 bytes", "leaked: 0 bytes" in s.stderr())


def case_key_file(m):
    path = os.path.join(TMP, "key.txt")
    with open(path, "w") as f:
        f.write(KEY + "  \nsecond line ignored\n")
    s = Server(m, "--api-key-file", path)
    try:
        st, _ = s.request("GET", "/v1/models")
        check("--api-key-file: its first line is the key", st == 200, st)
        st, _ = s.request("GET", "/v1/models", headers={"Authorization": "Bearer second"})
        check("--api-key-file: another key is a 401", st == 401, st)
        check("--api-key-file: the key never reaches the log", KEY not in s.stderr())
    finally:
        rc = s.stop()
    check("--api-key-file: exit 0", rc == 0, rc)
    r = subprocess.run([ATLAS, "serve", "--model", m, "--api-key", "k", "--api-key-file", path],
                       capture_output=True, timeout=60)
    check("--api-key with --api-key-file is a usage error (exit 2)", r.returncode == 2,
          r.returncode)


def swap_budget(m, m2, *args):
    """--budget-mb that fits one model but not two: a swap replaces."""
    s = Server(m, *args)
    try:
        st, body = s.request("POST", "/admin/swap", {"model": m2})
    finally:
        s.stop()
    need, rel = body["needed_bytes"], body["releasable_bytes"]
    return (need + rel // 2) / 1e6


def case_lost(m, m2, long_model, long2):
    # ATLAS_FAULT=alloc:1 fails the new model's first allocation; both fit,
    # so the old one never left: KEPT, and it serves.
    s = Server(m, env={"ATLAS_FAULT": "alloc:1"})
    try:
        st, body = s.request("POST", "/admin/swap", {"model": m2})
        check("ATLAS_FAULT swap side by side: 500, kept",
              st == 500 and body.get("outcome") == "kept" and "injected fault" in body["error"],
              (st, body))
        st, comp = s.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
        check("kept: the old model serves", st == 200, comp)
    finally:
        rc = s.stop()
    check("kept: exit 0", rc == 0, rc)
    # Only one fits: the swap replaces the old model, the new one fails and
    # so does the restore (--fail-swaps 1:lost:1): no model is left.
    m, m2 = long_model, long2  # long streams, the same shape
    budget = swap_budget(m, m2, "--max-seq", "4096")
    s = Server(m, "--budget-mb", f"{budget:.6f}", "--fail-swaps",
               "1:lost:1,3:alloc:1", "--drain-s", "1", "--max-seq", "4096")
    try:
        events = s.stream("/v1/completions", {"prompt": "Once", "max_tokens": 4000,
                                              "stream": True})
        first = next(events)
        check("LOST: a stream runs before the swap", first[0] == 200, first)
        swap = {}
        t = threading.Thread(target=lambda: swap.update(
            r=s.request("POST", "/admin/swap", {"model": m2}, timeout=120)))
        t.start()
        swapping = wait_until(lambda: s.request("GET", "/health")[1].get("status") ==
                              "swapping", tries=400, pause=0.01)
        waiter = {}
        w = threading.Thread(target=lambda: waiter.update(
            r=s.request("POST", "/v1/completions", {"prompt": "y", "max_tokens": 2})))
        if swapping:
            w.start()
        chunks, done, errors = collect(events)
        reasons = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
        check("LOST: the running stream is cut (abort, an error event, [DONE])",
              done and "abort" in reasons and errors, (reasons[-2:], errors))
        t.join(120)
        if swapping:
            w.join(120)
        st, body = swap.get("r", (None, {}))
        check("LOST: the swap answers 503, outcome lost, saying why",
              st == 503 and body.get("outcome") == "lost" and body.get("serving") is None and
              "no model is loaded" in (body.get("error") or ""), (st, body))
        st, body = waiter.get("r", (None, {}))
        check("LOST: a request queued during the swap gets 503 model_unavailable",
              swapping and st == 503 and body["error"]["code"] == "model_unavailable",
              (swapping, st, body))
        st, health = s.request("GET", "/health")
        check("LOST: /health is 503 and says why",
              st == 503 and health["status"] == "unavailable" and
              "POST /admin/swap" in health["reason"], (st, health))
        for path, req in (("/v1/completions", {"prompt": "x", "max_tokens": 2}),
                          ("/v1/chat/completions",
                           {"messages": [{"role": "user", "content": "x"}], "stream": True})):
            st, body = s.request("POST", path, req)
            check(f"LOST: {path} gets 503 in OpenAI's shape (model_unavailable)",
                  st == 503 and body["error"]["code"] == "model_unavailable" and
                  body["error"]["type"] == "server_error" and
                  "no model is serving" in body["error"]["message"], (st, body))
        st, _ = s.request("GET", "/admin/report")
        check("LOST: /admin/report is 503", st == 503, st)
        st, text = s.request("GET", "/metrics")
        check("LOST: /metrics counts the lost swap, no model serving",
              'atlas_swaps_total{outcome="lost"} 1' in text and
              "atlas_model_serving 0" in text, text[-300:])
        st, body = s.request("POST", "/admin/swap", {"model": m2}, timeout=120)
        check("a later swap brings serving back", st == 200 and body["outcome"] == "swapped",
              (st, body))
        st, health = s.request("GET", "/health")
        st2, comp = s.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
        check("after it: /health 200 and requests 200", st == 200 and st2 == 200,
              (health, comp))
        st, body = s.request("POST", "/admin/swap", {"model": m}, timeout=120)
        check("a replace swap that fails restores the old model (--fail-swaps 3:alloc:1)",
              st == 500 and body["outcome"] == "restored" and not body["side_by_side"],
              (st, body))
        st, comp = s.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
        check("restored: it serves", st == 200, comp)
        st, text = s.request("GET", "/metrics")
        check("/metrics: lost 1, swapped 1, restored 1",
              all(f'atlas_swaps_total{{outcome="{o}"}} 1' in text
                  for o in ("lost", "swapped", "restored")), text[-400:])
    finally:
        rc = s.stop()
    check("LOST then back: exit 0, nothing leaked",
          rc == 0 and "leaked: 0 bytes" in s.stderr(), (rc, s.stderr()[-300:]))


def main():
    m = checkpoint("m", 3)
    m2 = checkpoint("m2", 4)
    long_model = checkpoint("long", 5, max_pos=4096)
    long2 = checkpoint("long2", 6, max_pos=4096)
    cases = {
        "endpoints": lambda: case_endpoints(m, m2),
        "n_logprobs": lambda: case_n_and_logprobs(m),
        "limits": lambda: case_limits(m),
        "disconnect": lambda: case_disconnect_and_queue(long_model),
        "timeout": lambda: case_timeout(long_model),
        "sigterm": lambda: case_sigterm_mid_stream(long_model),
        "swap": lambda: case_swap_under_load(m, m2),
        "swap100": lambda: case_swap_under_load(m, m2, rounds=10),
        "swap_faults": lambda: case_swap_faults_under_load(m, m2),
        "sigterm_swap": lambda: case_sigterm_during_swap(m, long_model),
        "lost": lambda: case_lost(m, m2, long_model, long2),
        "keyfile": lambda: case_key_file(m),
    }
    for name, run in cases.items():
        # By default every case, the swaps 100 times (swap: 10, for TSan).
        if (ONLY and name not in ONLY) or (not ONLY and name == "swap"):
            continue
        print(f"== {name}", flush=True)
        try:
            run()
        except Exception as e:  # noqa: BLE001 - a failing case must not stop the others
            import traceback
            traceback.print_exc()
            check(f"{name} ran without an exception", False, repr(e))
    print("all passed" if not FAILS else f"{len(FAILS)} failed: {FAILS}")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

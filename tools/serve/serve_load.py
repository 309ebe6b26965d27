#!/usr/bin/env python3
"""A bounded load generator for `atlas serve`, beside `atlas batch` on the same requests.

Starts `atlas serve` on a free loopback port, runs CLIENTS concurrent streaming clients, each
sending REQUESTS completions (fixed prompts, greedy, at most MAX_TOKENS each: an EOS may end
one sooner, and the usage counts what was generated), and measures from the client side: time
to first token and inter-token gaps (p50, p99), errors, and generated tokens a second. Then it
runs the same requests through `atlas batch --parallel CLIENTS`, less a one-token batch's time
(the load), and prints the server's throughput as a ratio of batch's (the HTTP layer's cost).
Every wait is bounded.

  serve_load.py ATLAS MODEL_DIR [--clients 64] [--requests 4] [--max-tokens 128]
                [--prompt-words 64] [--backend auto] [--timeout 600]
                [--url http://HOST:PORT] [--no-batch] [--json FILE] [--label NAME]

--url drives a server already listening there instead (another OpenAI-compatible server, such
as llama-server, under the same load); --no-batch skips the `atlas batch` run; --json writes the
figures as one JSON object. A server that sends no usage chunk has its tokens counted as the
chunks that carried text (one token each for llama-server).

Prints one block of results; exit 1 if any request failed. Measurements belong in
docs/PERFORMANCE.md with the date, the commit, the GPU and this command line.
"""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, int(round(p / 100.0 * (len(values) - 1)))))
    return values[k]


def prompts(count, words):
    base = ("the quick brown fox jumps over the lazy dog while seven wise owls "
            "count the silver stars above a quiet harbour").split()
    return [" ".join(base[(i + j) % len(base)] for j in range(words)) for i in range(count)]


def client(host, port, reqs, max_tokens, deadline, out, lock):
    for prompt in reqs:
        start = time.monotonic()
        stamps, error = [], None
        tokens = None
        try:
            c = http.client.HTTPConnection(host, port,
                                           timeout=max(1.0, deadline - time.monotonic()))
            c.request("POST", "/v1/completions", body=json.dumps(
                {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                 "stream": True, "stream_options": {"include_usage": True}}))
            r = c.getresponse()
            if r.status != 200:
                error = f"HTTP {r.status}"
            for raw in r:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                o = json.loads(line[6:])
                if "error" in o:
                    error = o["error"]["message"]
                elif o.get("choices"):
                    if o["choices"][0].get("text"):
                        stamps.append(time.monotonic())
                elif o.get("usage"):
                    tokens = o["usage"]["completion_tokens"]
            c.close()
        except Exception as e:  # noqa: BLE001 - counted as a failed request
            error = repr(e)
            tokens = 0
        if tokens is None:  # no usage chunk: a chunk a token
            tokens = len(stamps)
        with lock:
            out.append((start, stamps, tokens, error))


def start_atlas(args):
    proc = subprocess.Popen([args.atlas, "serve", "--model", args.model, "--port", "0",
                             "--backend", args.backend, "--max-running", str(args.clients),
                             "--max-waiting", str(args.clients * 4)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    m = re.search(r":(\d+)$", line.strip())
    if not m:
        proc.kill()
        sys.exit(f"serve_load: the server did not start ({line!r})")
    return proc, "127.0.0.1", int(m.group(1))


def run_server(args, reqs):
    proc = None
    if args.url:
        u = urllib.parse.urlsplit(args.url)
        host, port = u.hostname, u.port or 80
    else:
        proc, host, port = start_atlas(args)
    deadline = time.monotonic() + args.timeout
    results, lock = [], threading.Lock()
    threads = [threading.Thread(target=client, args=(host, port, reqs[i::args.clients],
                                                     args.max_tokens, deadline, results, lock))
               for i in range(args.clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    wall = time.monotonic() - t0
    if proc is not None:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    return results, wall


def run_batch(args, reqs, max_tokens=None):
    max_tokens = max_tokens or args.max_tokens
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = os.path.join(tmp, "in.jsonl"), os.path.join(tmp, "out.jsonl")
        with open(inp, "w") as f:
            for i, p in enumerate(reqs):
                f.write(json.dumps({"custom_id": str(i), "method": "POST", "url": "/v1/completions",
                                    "body": {"prompt": p, "max_tokens": max_tokens,
                                             "temperature": 0}}) + "\n")
        t0 = time.monotonic()
        r = subprocess.run([args.atlas, "batch", "--model", args.model, "--input", inp,
                            "--output", out, "--backend", args.backend, "--parallel",
                            str(args.clients)],
                           stderr=subprocess.PIPE, text=True, timeout=args.timeout)
        if r.returncode != 0:
            sys.exit(f"serve_load: atlas batch failed: {r.stderr.strip()[-500:]}")
        wall = time.monotonic() - t0
        tokens = 0
        with open(out) as f:
            for line in f:
                body = json.loads(line)["response"]["body"]
                tokens += body.get("usage", {}).get("completion_tokens", 0)
    return tokens, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("atlas")
    ap.add_argument("model")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--requests", type=int, default=4, help="per client")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--prompt-words", type=int, default=64)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--url", help="drive the server listening there instead")
    ap.add_argument("--no-batch", action="store_true", help="skip atlas batch")
    ap.add_argument("--json", help="write the figures here as JSON")
    ap.add_argument("--label", default="atlas serve")
    args = ap.parse_args()
    reqs = prompts(args.clients * args.requests, args.prompt_words)
    results, wall = run_server(args, reqs)
    ttft = [s[0] - start for start, s, _, err in results if s and not err]
    itl = [b - a for _, s, _, err in results if not err for a, b in zip(s, s[1:])]
    errors = [err for *_, err in results if err]
    tokens = sum(t for _, _, t, err in results if not err)
    s_rate = tokens / wall if wall else 0
    fig = {"label": args.label, "clients": args.clients, "requests": len(reqs),
           "done": len(results), "failed": len(errors),
           "first_error": errors[0] if errors else None,
           "max_tokens": args.max_tokens, "prompt_words": args.prompt_words,
           "backend": args.backend,
           "ttft_ms": {"p50": percentile(ttft, 50) * 1e3, "p99": percentile(ttft, 99) * 1e3},
           "itl_ms": {"p50": percentile(itl, 50) * 1e3, "p99": percentile(itl, 99) * 1e3,
                      "mean": statistics.mean(itl) * 1e3 if itl else float("nan")},
           "tokens": tokens, "wall_s": wall, "tokens_per_s": s_rate}
    print(f"serve_load: {args.label}: {args.clients} clients x {args.requests} requests, "
          f"max_tokens {args.max_tokens}, backend {args.backend}")
    print(f"  requests: {len(results)} done, {len(errors)} failed"
          + (f" (first: {errors[0]})" if errors else ""))
    print(f"  time to first token: p50 {fig['ttft_ms']['p50']:.1f} ms, "
          f"p99 {fig['ttft_ms']['p99']:.1f} ms")
    print(f"  inter-token latency: p50 {fig['itl_ms']['p50']:.2f} ms, "
          f"p99 {fig['itl_ms']['p99']:.2f} ms, mean {fig['itl_ms']['mean']:.2f} ms")
    print(f"  serve: {tokens} tokens in {wall:.2f} s = {s_rate:.1f} tokens/s")
    if not args.no_batch:
        b_tokens, b_wall = run_batch(args, reqs)
        _, load_wall = run_batch(args, reqs[:1], max_tokens=1)  # the load and setup
        b_wall = max(1e-9, b_wall - load_wall)
        b_rate = b_tokens / b_wall if b_wall else 0
        fig["batch"] = {"tokens": b_tokens, "wall_s": b_wall, "load_s": load_wall,
                        "tokens_per_s": b_rate,
                        "serve_over_batch": s_rate / b_rate if b_rate else None}
        print(f"  batch: {b_tokens} tokens in {b_wall:.2f} s = {b_rate:.1f} tokens/s "
              f"(less {load_wall:.2f} s for a one-token batch: the load)")
        if b_rate:
            print(f"  serve / batch throughput: {s_rate / b_rate:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(fig, f, indent=1)
    return 1 if errors or len(results) < len(reqs) else 0


if __name__ == "__main__":
    sys.exit(main())

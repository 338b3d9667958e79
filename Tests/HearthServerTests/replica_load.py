"""A bounded load test of hearth serve replicas behind a load balancer.

CLIENTS threads, each for SECONDS: create a thread, send it a question (the answer streams and
is stored), read the thread back through a random replica, now and then rename it. Afterwards
every stored answer a client was told about is looked up on every replica: one that is missing
or different is a lost message. Prints one JSON object: requests, errors, rates, latencies,
lost messages, requests per replica.

Usage: replica_load.py BASE REPLICA_URL... [--seconds 20] [--clients 8]
"""

import argparse
import json
import random
import sys
import threading
import time
import urllib.error
import urllib.request

QUESTIONS = ["Say hi in three words.", "Name a colour.", "Count to three.", "Say one word about the sea.",
             "Name a fruit.", "Give me a number.", "Say good morning.", "Name an animal."]


def request(base, method, path, body=None, timeout=600):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=timeout) as response:
        return response.status, response.headers.get("X-Hearth-Replica"), response.read()


def stream_message(base, thread_id, content):
    """Posts a question; returns (replica, stored answer message) from the stream's events."""
    req = urllib.request.Request(f"{base}/v1/threads/{thread_id}/messages",
                                 data=json.dumps({"content": content}).encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    done = None
    with urllib.request.urlopen(req, timeout=600) as response:
        replica = response.headers.get("X-Hearth-Replica")
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if event.get("type") == "done":
                done = event["message"]
            elif event.get("type") == "error":
                raise RuntimeError(f"error event: {event}")
    if done is None:
        raise RuntimeError("the stream ended without its stored message")
    return replica, done


def percentile(values, fraction):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("replicas", nargs="+")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=8)
    arguments = parser.parse_args()

    lock = threading.Lock()
    counts = {"create": 0, "message": 0, "read": 0, "rename": 0}
    errors = []
    per_replica = {}
    answers = []  # (thread id, question, stored answer)
    answer_seconds = []
    deadline = time.monotonic() + arguments.seconds

    def note(kind, replica):
        with lock:
            counts[kind] += 1
            per_replica[replica] = per_replica.get(replica, 0) + 1

    def client(number):
        rng = random.Random(number)
        while time.monotonic() < deadline:
            kind = "create"
            try:
                status, replica, body = request(arguments.base, "POST", "/v1/threads", {})
                thread_id = json.loads(body)["id"]
                note(kind, replica)
                kind = "message"
                question = rng.choice(QUESTIONS)
                started = time.monotonic()
                replica, stored = stream_message(arguments.base, thread_id, question)
                with lock:
                    answer_seconds.append(time.monotonic() - started)
                    answers.append((thread_id, question, stored["content"]))
                note(kind, replica)
                kind = "read"
                status, replica, body = request(rng.choice(arguments.replicas), "GET", f"/v1/threads/{thread_id}/messages")
                seen = [m["content"] for m in json.loads(body)["data"]]
                if seen != [question, stored["content"]]:
                    raise RuntimeError(f"read back {seen!r}")
                note(kind, replica)
                if rng.random() < 0.25:
                    kind = "rename"
                    status, replica, _ = request(arguments.base, "PATCH", f"/v1/threads/{thread_id}", {"name": f"load {number}"})
                    note(kind, replica)
            except (urllib.error.URLError, OSError, RuntimeError, ValueError, KeyError) as error:
                with lock:
                    errors.append(f"{kind}: {error}")

    started = time.monotonic()
    workers = [threading.Thread(target=client, args=(n,)) for n in range(arguments.clients)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.monotonic() - started

    # Every answer a client was given is stored, whole, on every replica's view.
    lost = []
    for replica in arguments.replicas:
        _, _, body = request(replica, "GET", "/v1/threads")
        threads = {t["id"] for t in json.loads(body)["data"]}
        for thread_id, question, answer in answers:
            if thread_id not in threads:
                lost.append(f"{replica}: thread {thread_id} missing")
                continue
            _, _, body = request(replica, "GET", f"/v1/threads/{thread_id}/messages")
            seen = [m["content"] for m in json.loads(body)["data"]]
            if seen[:2] != [question, answer]:
                lost.append(f"{replica}: thread {thread_id} holds {seen!r}")

    total = sum(counts.values())
    print(json.dumps({
        "clients": arguments.clients,
        "seconds": round(elapsed, 1),
        "requests": total,
        "requests_per_second": round(total / elapsed, 2),
        "answers_per_second": round(counts["message"] / elapsed, 2),
        "by_kind": counts,
        "by_replica": per_replica,
        "errors": len(errors),
        "error_samples": errors[:10],
        "answers_checked": len(answers) * len(arguments.replicas),
        "lost_messages": len(lost),
        "lost_samples": lost[:10],
        "answer_seconds_p50": round(percentile(answer_seconds, 0.5) or 0, 3),
        "answer_seconds_p95": round(percentile(answer_seconds, 0.95) or 0, 3),
    }))


if __name__ == "__main__":
    sys.exit(main())

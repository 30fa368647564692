#!/usr/bin/env python3
"""Clients for scripts/load and scripts/abuse (standard library only).

load:  CLIENTS clients act as the app does for SECONDS: register a device, upload a clip, poll its
       status every POLL seconds until it ends, download the highlight, and again. Every answer that
       is not the expected one is an error. Prints one JSON object: counts, latencies, errors.
abuse: the hostile requests of issue 14 against a running API, while one well-behaved client polls
       a job's status and times every answer: multipart floods (a part header with no line break,
       200,000 tiny fields, a second file part, a truncated file part, a huge field), and 1000
       Server-Sent-Events connections held open at once. Each abusive request must end in a 4xx with
       the error shape (or, for SSE, an open stream or 429). Then 50 connections pipeline status polls
       for 20 s and never read an answer (issue 51): the server's RSS meanwhile (MOMENTS_SERVER_PID)
       must stay within a few MB of before. Then PostgreSQL is frozen (SIGSTOP to MOMENTS_POSTGRES_PID
       and its backends) for 25 s: an upload, status polls and an authenticated read must each answer
       503 service_unavailable within 13 s, and, once it is woken, 200 again. Prints one JSON object.
"""
import http.client
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse
import uuid


def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000, 1)


def exchange(host, port, method, path, body, headers, timeout):
    """One request on a connection of its own: status, response headers, body, seconds."""
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        started = time.monotonic()
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        return response.status, response.headers, data, time.monotonic() - started
    finally:
        connection.close()


class Client:
    def __init__(self, base, token=None, timeout=60):
        self.url = urllib.parse.urlparse(base)
        self.token = token
        self.timeout = timeout

    def request(self, method, path, body=None, headers=None):
        headers = dict(headers or {})
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        status, _, data, took = exchange(self.url.hostname, self.url.port, method, path, body, headers, self.timeout)
        return status, data, took

    def download(self, path):
        """GET as the app does: a 302 to presigned storage is followed, without our token."""
        status, answer, data, _ = exchange(self.url.hostname, self.url.port, "GET", path, None,
                                           {"Authorization": "Bearer " + self.token}, self.timeout)
        if status != 302:
            return status, data
        target = urllib.parse.urlparse(answer.get("Location", ""))
        status, _, data, _ = exchange(target.hostname, target.port or 80, "GET",
                                      target.path + ("?" + target.query if target.query else ""), None, {}, self.timeout)
        return status, data

    def register(self, name):
        status, data, _ = self.request("POST", "/api/v1/devices", json.dumps({"name": name}), {"Content-Type": "application/json"})
        if status != 201:
            raise RuntimeError(f"registration answered {status}: {data[:200]!r}")
        self.token = json.loads(data)["token"]
        return self.token


def multipart(fields, files, boundary=None):
    boundary = boundary or uuid.uuid4().hex
    chunks = []
    for name, value in fields:
        chunks.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, filename, content in files:
        chunks.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                      f"Content-Type: video/mp4\r\n\r\n".encode() + content + b"\r\n")
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}"


# MARK: load

def load(base, clients, seconds, video_path, poll):
    video = open(video_path, "rb").read()
    lock = threading.Lock()
    figures = {"uploads": 0, "completed": 0, "failed_jobs": 0, "downloads": 0, "polls": 0, "errors": []}
    upload_times, poll_times = [], []
    deadline = time.monotonic() + seconds

    def error(text):
        with lock:
            figures["errors"].append(text)

    def run(index):
        client = Client(base)
        try:
            client.register(f"load-{index}")
        except Exception as exc:  # noqa: BLE001 (any failure is an error of the run)
            error(f"client {index}: {exc}")
            return
        while time.monotonic() < deadline:
            body, content_type = multipart([("target_duration", "5"), ("quality", "low")], [("file", f"clip-{index}.mp4", video)])
            try:
                status, data, took = client.request("POST", "/api/v1/upload", body, {"Content-Type": content_type})
            except Exception as exc:  # noqa: BLE001
                error(f"upload: {exc!r}")
                continue
            if status != 200:
                error(f"upload answered {status}: {data[:200]!r}")
                time.sleep(1)
                continue
            job = json.loads(data)["job_id"]
            with lock:
                figures["uploads"] += 1
                upload_times.append(took)
            while True:
                time.sleep(poll)
                try:
                    status, data, took = client.request("GET", f"/api/v1/jobs/{job}/status")
                except Exception as exc:  # noqa: BLE001
                    error(f"poll: {exc!r}")
                    continue
                with lock:
                    figures["polls"] += 1
                    poll_times.append(took)
                if status != 200:
                    error(f"poll answered {status}: {data[:200]!r}")
                    continue
                state = json.loads(data)["status"]
                if state == "completed":
                    with lock:
                        figures["completed"] += 1
                    try:
                        status, data = client.download(f"/api/v1/jobs/{job}/download")
                    except Exception as exc:  # noqa: BLE001
                        error(f"download: {exc!r}")
                        break
                    if status == 200 and data[4:8] == b"ftyp":
                        with lock:
                            figures["downloads"] += 1
                    else:
                        error(f"download answered {status} ({len(data)} bytes)")
                    break
                if state in ("failed", "cancelled"):
                    error(f"job {job} ended {state}: {data[:300]!r}")
                    with lock:
                        figures["failed_jobs"] += 1
                    break
                if time.monotonic() > deadline + 600:
                    error(f"job {job} still {state} 10 minutes after the run")
                    break

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    for thread in threads:
        thread.join()
    figures.update({
        "clients": clients, "seconds": round(time.monotonic() - started, 1),
        "upload_ms_p50": percentile(upload_times, 0.5), "upload_ms_p99": percentile(upload_times, 0.99),
        "poll_ms_p50": percentile(poll_times, 0.5), "poll_ms_p99": percentile(poll_times, 0.99),
        "error_count": len(figures["errors"]), "errors": figures["errors"][:20],
    })
    return figures


# MARK: abuse

def raw_exchange(base, head, body_chunks, timeout=60):
    """Sends a hand-made request (no client library between us and the bytes) while reading the
    answer: a server may answer and stop reading long before the body is sent. The status, body
    and seconds until the whole answer came."""
    url = urllib.parse.urlparse(base)
    sock = socket.create_connection((url.hostname, url.port), timeout=timeout)
    started = time.monotonic()

    def send():
        try:
            sock.sendall(head)
            for chunk in body_chunks:
                sock.sendall(chunk)
        except OSError:
            pass  # answered and closed, or stopped reading: the answer is what counts

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    data = b""
    try:
        while True:
            if b"\r\n\r\n" in data:
                head_part, rest = data.split(b"\r\n\r\n", 1)
                length = next((int(line.split(b":", 1)[1]) for line in head_part.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), None)
                if length is not None and len(rest) >= length:
                    break
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
    except (OSError, socket.timeout):
        pass
    took = time.monotonic() - started
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
    sender.join(timeout=5)
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
    body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
    return status, body, took


def flood(base, token, name, boundary, body_chunks, length):
    head = (f"POST /api/v1/upload HTTP/1.1\r\nHost: moments\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n").encode()
    status, body, took = raw_exchange(base, head, body_chunks)
    try:
        code = json.loads(body)["error"]["code"]
    except Exception:  # noqa: BLE001
        code = None
    return {"case": name, "status": status, "code": code, "seconds": round(took, 2), "ok": 400 <= status < 500 and code is not None}


def rss_mb(pid):
    """VmRSS of process `pid` in MB, or None without one."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return None


def never_reading(base, connections, seconds, server_pid):
    """CONNECTIONS connections (each with a 4 KB receive buffer) pipeline status polls with a bad
    token for SECONDS as fast as the server takes them, and never read an answer. What the server's
    RSS did meanwhile, how many polls went in, and how many connections it closed."""
    url = urllib.parse.urlparse(base)
    poll = (f"GET /api/v1/jobs/{uuid.uuid4()}/status HTTP/1.1\r\nHost: moments\r\n"
            f"Authorization: Bearer {uuid.uuid4().hex}{uuid.uuid4().hex[:11]}\r\n\r\n").encode()
    burst = poll * 64
    sockets = []
    for _ in range(connections):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((url.hostname, url.port))
        sock.setblocking(False)
        sockets.append([sock, 0])  # bytes of the current burst already sent
    before = rss_mb(server_pid)
    peak = before
    sent_bytes, closed = 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end and closed < connections:
        for entry in sockets:
            sock, offset = entry
            if sock is None:
                continue
            try:
                n = sock.send(burst[offset:])
                sent_bytes += n
                entry[1] = (offset + n) % len(burst)
            except BlockingIOError:
                pass
            except OSError:
                entry[0] = None
                closed += 1
                sock.close()
        now = rss_mb(server_pid)
        if now is not None:
            peak = max(peak, now)
        time.sleep(0.005)
    for sock, _ in sockets:
        if sock is not None:
            sock.close()
    growth = None if before is None else round(peak - before, 1)
    return {"case": f"{connections} connections pipeline polls for {seconds} s and never read",
            "polls_sent": sent_bytes // len(poll), "poll_bytes": len(poll), "closed_by_server": closed,
            "server_rss_before_mb": before and round(before), "server_rss_peak_mb": peak and round(peak),
            "server_rss_growth_mb": growth, "ok": growth is None or growth < 16}


def postgres_processes(postmaster):
    """The postmaster and its backends (from /proc)."""
    found = [postmaster]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == postmaster:
                        found.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return found


def postgres_freeze(base, video, token, job, postmaster, seconds=25):
    """Freezes PostgreSQL (SIGSTOP, as a frozen machine or a black-holed primary looks): each kind
    of call must answer 503 service_unavailable within 13 s (the database timeout, 10 s); after
    SIGCONT each must answer as before."""
    client = Client(base, token)
    body, content_type = multipart([("target_duration", "5")], [("file", "f.mp4", video)])
    calls = {
        "upload": lambda: client.request("POST", "/api/v1/upload", body, {"Content-Type": content_type}),
        "status poll": lambda: client.request("GET", f"/api/v1/jobs/{job}/status"),
        "GET /api/v1/me": lambda: client.request("GET", "/api/v1/me"),
        "job list": lambda: client.request("GET", "/api/v1/jobs"),
    }
    answers = {}

    def call(name):
        started = time.monotonic()
        try:
            status, data, _ = calls[name]()
            code = json.loads(data).get("error", {}).get("code") if status >= 400 else None
        except Exception as exc:  # noqa: BLE001
            status, code = 0, repr(exc)
        answers[name] = {"status": status, "code": code, "seconds": round(time.monotonic() - started, 1)}

    frozen = postgres_processes(postmaster)
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        threads = [threading.Thread(target=call, args=(name,)) for name in calls]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        during = dict(answers)
        time.sleep(max(0, seconds - max((a["seconds"] for a in during.values()), default=0)))
    finally:
        for pid in reversed(frozen):
            os.kill(pid, signal.SIGCONT)
    answers.clear()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for name in ["status poll", "GET /api/v1/me", "job list"]:
            call(name)
        if all(answers[name]["status"] == 200 for name in ["status poll", "GET /api/v1/me", "job list"]):
            break
        time.sleep(1)
    after = dict(answers)
    ok = all(a["status"] == 503 and a["code"] == "service_unavailable" and a["seconds"] < 13 for a in during.values()) \
        and all(a["status"] == 200 for a in after.values())
    return {"case": f"PostgreSQL frozen for {seconds} s", "during": during, "after": after, "ok": ok}


def abuse(base, video_path, sse_connections):
    video = open(video_path, "rb").read()
    good = Client(base)
    good.register("well-behaved")
    body, content_type = multipart([("target_duration", "5"), ("quality", "low")], [("file", "good.mp4", video)])
    status, data, _ = good.request("POST", "/api/v1/upload", body, {"Content-Type": content_type})
    if status != 200:
        raise RuntimeError(f"the well-behaved upload answered {status}: {data[:200]!r}")
    job = json.loads(data)["job_id"]

    # The well-behaved client polls all along and times each answer.
    stop = threading.Event()
    poll_times, poll_errors = [], []

    def poll():
        while not stop.is_set():
            try:
                status, _, took = good.request("GET", f"/api/v1/jobs/{job}/status")
                poll_times.append(took)
                if status != 200:
                    poll_errors.append(status)
            except Exception as exc:  # noqa: BLE001
                poll_errors.append(repr(exc))
            time.sleep(0.1)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    attacker = Client(base)
    token = attacker.register("attacker")
    results = []

    b = "x" + uuid.uuid4().hex
    # 1. A part header that never ends: 64 MiB of header bytes with no line break.
    chunk = b"A" * (1 << 20)
    head = f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp4\"\r\nX-Long: ".encode()
    results.append(flood(base, token, "part header with no line break (64 MiB)", b,
                         [head] + [chunk] * 64, len(head) + 64 * len(chunk)))
    # 2. 200,000 tiny fields.
    fields = b"".join(f"--{b}\r\nContent-Disposition: form-data; name=\"f{i}\"\r\n\r\n1\r\n".encode() for i in range(200_000))
    results.append(flood(base, token, "200,000 tiny fields", b, [fields, f"--{b}--\r\n".encode()], len(fields) + len(b) + 6))
    # 3. Two file parts.
    body, _ = multipart([], [("file", "a.mp4", video), ("file", "b.mp4", video)], boundary=b)
    results.append(flood(base, token, "a second file part", b, [body], len(body)))
    # 4. A file part cut short (the body ends without its closing boundary).
    body, _ = multipart([("quality", "low")], [("file", "a.mp4", video)], boundary=b)
    cut = body[: len(body) // 2]
    results.append(flood(base, token, "a truncated file part", b, [cut], len(cut)))
    # 5. One field of 256 MiB.
    head = f"--{b}\r\nContent-Disposition: form-data; name=\"quality\"\r\n\r\n".encode()
    results.append(flood(base, token, "a 256 MiB form field", b, [head] + [chunk] * 256, len(head) + 256 * len(chunk)))
    # 6. 1000 part headers of 8 KiB each.
    headers = "".join(f"X-H{i}: {'v' * 8000}\r\n" for i in range(1000)).encode()
    part = f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp4\"\r\n".encode() + headers + b"\r\n"
    results.append(flood(base, token, "1000 part headers of 8 KiB", b, [part], len(part)))

    # 7. SSE connections held open at once, from as many devices as the per-device limit needs.
    url = urllib.parse.urlparse(base)
    sockets, opened, refused, other = [], 0, 0, []
    devices = []
    for i in range(max(1, sse_connections // 10)):
        c = Client(base)
        c.register(f"sse-{i}")
        body, content_type = multipart([("target_duration", "5")], [("file", "s.mp4", video)])
        status, data, _ = c.request("POST", "/api/v1/upload", body, {"Content-Type": content_type})
        if status == 200:
            devices.append((c.token, json.loads(data)["job_id"]))
    sse_started = time.monotonic()
    for i in range(sse_connections):
        token_i, job_i = devices[i % len(devices)] if devices else (token, job)
        try:
            sock = socket.create_connection((url.hostname, url.port), timeout=30)
            sock.sendall(f"GET /api/v1/jobs/{job_i}/events HTTP/1.1\r\nHost: moments\r\nAuthorization: Bearer {token_i}\r\n"
                         f"Accept: text/event-stream\r\n\r\n".encode())
            sockets.append(sock)
        except OSError as exc:
            other.append(repr(exc))
    for sock in sockets:
        try:
            first = sock.recv(4096)
            status = int(first.split(b" ", 2)[1]) if first.startswith(b"HTTP/1.1 ") else 0
            if status == 200:
                opened += 1
            elif status == 429:
                refused += 1
            else:
                other.append(status)
        except OSError as exc:
            other.append(repr(exc))
    held_seconds = time.monotonic() - sse_started
    time.sleep(5)  # held open while the well-behaved client keeps polling
    for sock in sockets:
        sock.close()
    results.append({"case": f"{sse_connections} SSE connections at once", "open": opened, "refused_429": refused,
                    "other": other[:10], "seconds_to_open": round(held_seconds, 1), "ok": not other})

    # 8. Status polls pipelined on 50 connections that never read an answer.
    results.append(never_reading(base, 50, 20, os.environ.get("MOMENTS_SERVER_PID")))

    # The well-behaved client's figures are for the abuse above; the freeze below fails its polls too.
    stop.set()
    poller.join()

    # 9. PostgreSQL frozen.
    if os.environ.get("MOMENTS_POSTGRES_PID"):
        results.append(postgres_freeze(base, video, good.token, job, int(os.environ["MOMENTS_POSTGRES_PID"])))
    return {
        "cases": results, "all_refused_cleanly": all(r["ok"] for r in results),
        "good_client_polls": len(poll_times), "good_client_errors": poll_errors[:10],
        "good_client_poll_ms_p50": percentile(poll_times, 0.5), "good_client_poll_ms_p99": percentile(poll_times, 0.99),
        "good_client_poll_ms_max": percentile(poll_times, 1.0),
    }


if __name__ == "__main__":
    mode, base = sys.argv[1], sys.argv[2]
    if mode == "load":
        print(json.dumps(load(base, int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], float(os.environ.get("LOAD_POLL_SECONDS", "2")))))
    elif mode == "abuse":
        print(json.dumps(abuse(base, sys.argv[3], int(sys.argv[4]))))
    else:
        sys.exit("usage: load.py load BASE CLIENTS SECONDS VIDEO | abuse BASE VIDEO SSE_CONNECTIONS")

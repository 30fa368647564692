"""Sorts the CPU samples of `perf script` into the parts of a request, for scripts/bench-api.

Each sample's stack is read from the leaf outwards (for the status poll, up to where its answer
is written: see CUT) and given to the first part whose pattern one of
its frames matches, so an allocation made by the JSON encoder counts as JSON and one made by
PostgresNIO counts as the database client. The event loops' own parts (socket reads and writes,
waiting, task switches, channel pipelines) count only when no part of the request's work is on the
stack; what is left is the Swift runtime, the kernel and other. Then, for a few whole functions, the
share of samples with that function anywhere on the stack.

    perf script -i FILE | python3 benchmarks/perf_categories.py [--title TITLE]
"""

import re
import sys
from collections import Counter

# A sample goes to the first of these parts whose pattern a frame of its stack matches, frames read
# from the leaf outwards; the parts of the event loops and the runtime only when none of these did.
PARTS = [
    ("authentication: token hash", r"SHA256\.|SHA256Digest|DeviceToken\.sha256|CCryptoBoringSSL"),
    ("authentication: middleware", r"AuthenticationMiddleware"),
    ("JSON encoding", r"JSONEncoder|JSONWriter|JSONSerialization|JobStatusReport|MomentsJSON"),
    ("job row decoding", r"JobStore\.record|statusRow|PostgresRow\.decode|PostgresRandomAccessRow|PostgresCell"),
    ("PostgresNIO (pool, protocol, its socket writes)", r"PostgresNIO|_ConnectionPoolModule|ConnectionPool|PostgresClient|PostgresConnection|PSQL|PostgresChannelHandler|PoolStateMachine"),
    ("logging", r"Logging\.|Logger\b|LogHandler"),
    ("metrics", r"Prometheus|CoreMetrics|MetricsMiddleware|HTTPMetrics|Metrics\."),
    ("tracing", r"Tracing|Instrumentation|ServiceContext|OTel|IncomingTrace"),
    ("JobStore.database (task and timer)", r"JobStore\.database|Expiry|scheduleTask"),
    ("Hummingbird routing and responses", r"Hummingbird(?!Core)|Router|RouterMiddleware|ResponseEncodable|ErrorMiddleware|MomentsRequestContext"),
    ("HTTP parsing and writing (HummingbirdCore, NIOHTTP1)", r"HummingbirdCore|NIOHTTP1|HTTPTypes|HTTPServer|NIOHTTPTypes|HTTP1"),
]
# Then these, in the same way.
GENERIC = [
    ("socket reads and writes (kernel)", r"Socket\.(write|read)|__GI___libc_write|__libc_read|writev|readv|sendmsg|recvmsg"),
    ("waiting and waking threads (epoll, futex)", r"epoll_wait|whenReady0|_blockingWaitForWork|eventfd|futex|pthread_cond|wakeupSelector"),
    ("task switches (Swift concurrency)", r"swift_task|flagAsAndEnqueueOnExecutor|swift_job_run|Continuation|AsyncTask"),
    ("SwiftNIO (channels, buffers, event loop tasks)", r"ChannelPipeline|ChannelHandlerContext|ByteBuffer|NIOAsync|PendingWrites|BaseSocketChannel|BaseStreamSocketChannel|ByteToMessage|_popTasksLocked|EventLoop"),
    ("Foundation (dates, UUIDs, strings)", r"Foundation|NSString|ISO8601|DateFormatter|UUID|String\(format"),
    ("the status poll handler's own work", r"StatusPollHandler|StatusPollRoute|HTTPDate|StatusPollConnection"),
]
# The status poll's answer is written from inside PostgresNIO's read of the rows (one event loop,
# no task in between): frames from the answer outwards are the database read that delivered it,
# not the work of writing it, so a sample is sorted by the frames up to the answer only.
CUT = re.compile(r"StatusPollHandler\.answer")
RUNTIME = r"libswiftCore|swift_retain|swift_release|swift_alloc|swift_|malloc|free|_int_|libc"
# Whole functions: the share of samples with the function anywhere on the stack.
INCLUSIVE = [
    ("AuthenticationMiddleware.handle", r"AuthenticationMiddleware\.handle"),
    ("DeviceToken.sha256", r"DeviceToken\.sha256"),
    ("PostgresClient.query (unprepared)", r"PostgresClient\.query"),
    ("PostgresClient.execute (prepared)", r"PostgresClient\.execute"),
    ("JSONEncoder.encode", r"JSONEncoder\.encode"),
    ("TracingMiddleware.handle", r"TracingMiddleware"),
    ("MetricsMiddleware.handle", r"MetricsMiddleware"),
    ("StatusPollHandler (the poll in the channel pipeline)", r"StatusPollHandler|StatusPollRoute"),
    ("the lanes' prepared reads (PreparedQuery.execute)", r"PreparedQuery\.execute"),
    ("socket writes", r"__GI___libc_write|writev"),
    ("socket reads", r"readFromSocket"),
    ("epoll_wait", r"epoll_wait"),
]


def main():
    title = "profile"
    if len(sys.argv) > 2 and sys.argv[1] == "--title":
        title = sys.argv[2]
    compiled = [(name, re.compile(p)) for name, p in PARTS]
    generic = [(name, re.compile(p)) for name, p in GENERIC]
    inclusive = [(name, re.compile(p)) for name, p in INCLUSIVE]
    counts = Counter()
    within = Counter()
    total = 0
    stack = []

    def first(parts):
        frames = stack
        for index, frame in enumerate(stack):
            if CUT.search(frame):
                frames = stack[:index + 1]
                break
        for frame in frames:
            for name, pattern in parts:
                if pattern.search(frame):
                    return name
        return None

    def finish():
        nonlocal total
        if not stack:
            return
        total += 1
        for name, pattern in inclusive:
            if any(pattern.search(frame) for frame in stack):
                within[name] += 1
        part = first(compiled) or first(generic)
        if part is None:
            leaf = stack[0]
            if "[kernel" in leaf or "kallsyms" in leaf:
                part = "kernel (other)"
            elif re.search(RUNTIME, leaf):
                part = "Swift runtime and allocator (unattributed)"
            else:
                part = "other"
        counts[part] += 1

    for line in sys.stdin:
        if not line.strip():
            finish()
            stack = []
        elif line.startswith((" ", "\t")):
            stack.append(line.strip())
        else:
            finish()
            stack = []
    finish()
    if total == 0:
        print(f"{title}: no samples")
        return
    print(f"{title}: {total} samples of the API process")
    for name, n in counts.most_common():
        print(f"  {100 * n / total:5.1f} %  {name}")
    print("  whole functions (with what they call):")
    for name, _ in INCLUSIVE:
        print(f"  {100 * within[name] / total:5.1f} %  {name}")


if __name__ == "__main__":
    main()

"""The DynamoDB-API (and Scheduler-API) server on loopback: moto, in a child process.

moto answers on several threads, but its DynamoDB transactions are not isolated from each
other; DynamoDB serialises writes to an item, so the server runs moto's WSGI app one
request at a time, which is what the store's concurrency is written against.

A cancelled transaction is rolled back by putting a copy of each table taken before it in
place, stream and all. A shard iterator handed out before then still points at the
replaced stream, which holds the cancelled writes: a reader would get records DynamoDB
never wrote, move its position past them, and so skip the real records that reuse those
sequence numbers next. The server keeps each stream object and rolls back its records
instead, so an iterator always reads the table's one stream.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

SERIAL_MOTO = """
import os, sys, threading
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication, MotoRequestHandler, create_backend_app,
)
MotoRequestHandler.protocol_version = "HTTP/1.1"  # keep-alive: no new connection per call
from moto.dynamodb.models import DynamoDBBackend
_transact = DynamoDBBackend.transact_write_items
def transact_write_items(self, transact_items):
    streams = {n: t.stream_shard for n, t in self.tables.items() if t.stream_shard is not None}
    try:
        return _transact(self, transact_items)
    finally:
        for name, stream in streams.items():
            table = self.tables.get(name)
            if table is not None and table.stream_shard not in (None, stream):
                stream.items[:] = table.stream_shard.items  # the rolled-back records
                stream.table = table
                table.stream_shard = stream
DynamoDBBackend.transact_write_items = transact_write_items
app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()
def serial(environ, start_response):
    with lock:
        return list(app(environ, start_response))
from werkzeug.serving import make_server
server = make_server(sys.argv[1], 0, serial, threaded=True, request_handler=MotoRequestHandler)
print(server.port, flush=True)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
parent = os.getppid()
def orphaned():  # the emulator died without stopping us: go with it
    import time
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)
threading.Thread(target=orphaned, daemon=True).start()
server.serve_forever()
"""


def start_moto(timeout: float = 30.0) -> tuple[str, subprocess.Popen[bytes]]:
    """Start moto on a free loopback port (it binds port 0 and says which it got)."""
    env = dict(os.environ)
    env.setdefault("AWS_ACCESS_KEY_ID", "testing")
    env.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    proc = subprocess.Popen(
        [sys.executable, "-c", SERIAL_MOTO, "127.0.0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        proc.stdout.close()
        if not line.strip().isdigit():
            raise RuntimeError(f"moto did not start (exit {proc.wait()})")
        port = int(line)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto did not listen") from None
                time.sleep(0.05)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return f"http://127.0.0.1:{port}", proc


def stop_moto(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()

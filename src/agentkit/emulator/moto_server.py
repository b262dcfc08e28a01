"""The DynamoDB-API (and Scheduler-API) server on loopback: moto, in a child process.

moto answers on several threads, but its DynamoDB transactions are not isolated from each
other; DynamoDB serialises writes to an item, so the server runs moto's WSGI app one
request at a time, which is what the store's concurrency is written against.

moto backs up a transaction by deep-copying every table it names, before each transaction:
the whole table, stream records and all. That makes each write cost the size of the table
(a long session's events table grows with every append, so its appends grew quadratic
and a 1,000-turn bench ran the server out of memory), and its rollback, which puts the
copies in place, left a shard iterator handed out before pointing at the replaced stream,
holding the cancelled writes: a reader got records DynamoDB never wrote, moved past them,
and skipped the real records that reused those sequence numbers. The server backs up only
what a transaction can touch instead, the items its operations name (their keys) and the
length of each stream, and on cancellation puts those items back and drops the stream
records written since: the same tables, in place, so an iterator always reads the table's
one stream.

A query of a table (not of an index) gathers and sorts every item of the table, then
keeps the one partition it names and walks all of it, measuring each item, to find the
range asked for: a long session's reads cost the size of the whole events table. The
server keeps each partition's range keys in order as items come and go, and hands moto's
query the items of the range it finds there by bisection, which is what moto would have
kept: a read of the newest events costs what it returns, however long the session.
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
# Its access log (to /dev/null here) took a tenth of the server's time under load.
MotoRequestHandler.log_request = lambda self, code="-", size="-": None
import copy
import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.dynamodb.comparisons import get_comparison_func
class _TablesByReference:  # moto's module sees this as `copy`: tables are not copied
    def __getattr__(self, name):
        return getattr(copy, name)
    @staticmethod
    def deepcopy(value, memo=None):
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)
dynamodb_models.copy = _TablesByReference()
def _slot(table, attrs):  # (hash, range) of the item `attrs` names, or None
    if table.hash_key_attr not in attrs:
        return None
    hash_value = DynamoType(attrs[table.hash_key_attr])
    if table.range_key_attr is None:
        return hash_value, None
    if table.range_key_attr not in attrs:
        return None
    return hash_value, DynamoType(attrs[table.range_key_attr])
_transact = DynamoDBBackend.transact_write_items
def transact_write_items(self, transact_items):
    saved, streams = [], {}
    for entry in transact_items:
        for op in entry.values():
            table = self.tables.get(op.get("TableName")) if isinstance(op, dict) else None
            slot = None if table is None else _slot(table, op.get("Item") or op.get("Key") or {})
            if slot is None:
                continue
            saved.append((table, slot, copy.deepcopy(table.get_item(*slot))))
            if table.stream_shard is not None:
                streams.setdefault(id(table), (table.stream_shard, len(table.stream_shard.items)))
    try:
        return _transact(self, transact_items)
    except BaseException:
        for table, (hash_value, range_value), item in reversed(saved):
            home = table.items[hash_value] if range_value is not None else table.items
            key = range_value if range_value is not None else hash_value
            if item is None:
                home.pop(key, None)
            else:
                home[key] = item
        for stream, length in streams.values():
            del stream.items[length:]
        raise
DynamoDBBackend.transact_write_items = transact_write_items
from bisect import bisect_left, bisect_right, insort
from collections import defaultdict
from operator import itemgetter
_plain = itemgetter(0)
class _Partition(dict):  # a partition's items, and its range keys in order by plain value
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.order = sorted(((key.cast_value, key) for key in self), key=_plain)
    def __setitem__(self, key, value):
        if key not in self:
            insort(self.order, (key.cast_value, key), key=_plain)
        super().__setitem__(key, value)
    def __delitem__(self, key):
        super().__delitem__(key)
        self._unorder(key)
    def pop(self, key, *default):
        had = key in self
        value = super().pop(key, *default)
        if had:
            self._unorder(key)
        return value
    def _unorder(self, key):
        at = bisect_left(self.order, key.cast_value, key=_plain)
        del self.order[at]
    def __deepcopy__(self, memo):
        return _Partition({copy.deepcopy(k, memo): copy.deepcopy(v, memo) for k, v in self.items()})
    def between(self, low, high, low_open=False, high_open=False):  # keys in the range, in order
        order = self.order
        start, end = 0, len(order)
        if low is not None:
            start = (bisect_right if low_open else bisect_left)(order, low, key=_plain)
        if high is not None:
            end = (bisect_left if high_open else bisect_right)(order, high, key=_plain)
        return [key for _, key in order[start:end]]
_table_init = Table.__init__
def table_init(self, *args, **kwargs):
    _table_init(self, *args, **kwargs)
    if self.range_key_attr is not None:
        self.items = defaultdict(_Partition)
Table.__init__ = table_init
_RANGES = {  # a key condition as bounds: (low, high, low_open, high_open) from its values
    "EQ": lambda v: (v[0], v[0], False, False),
    "LT": lambda v: (None, v[0], False, True),
    "LE": lambda v: (None, v[0], False, False),
    "GT": lambda v: (v[0], None, True, False),
    "GE": lambda v: (v[0], None, False, False),
    "BETWEEN": lambda v: (v[0], v[1], False, False),
}
for symbol, word in (("=", "EQ"), ("<", "LT"), ("<=", "LE"), (">", "GT"), (">=", "GE")):
    _RANGES[symbol] = _RANGES[word]  # the same condition written as an expression
_query = Table.query
def query(self, hash_key, range_comparison, range_objs, *rest, **kwargs):
    index_name = rest[4] if len(rest) > 4 else kwargs.get("index_name")
    partition = None if hash_key is None else self.items.get(hash_key)
    if index_name or not isinstance(partition, _Partition):
        return _query(self, hash_key, range_comparison, range_objs, *rest, **kwargs)
    # The range by bisection over the partition's ordered keys: no walk of the partition.
    bounds = [obj.cast_value for obj in range_objs]
    if not range_comparison:
        keys = partition.between(None, None)
    elif range_comparison in _RANGES:
        keys = partition.between(*_RANGES[range_comparison](bounds))
    else:
        test = get_comparison_func(range_comparison)
        keys = [key for plain, key in partition.order if test(plain, *bounds)]
    found = [partition[key] for key in keys]
    self.all_items = lambda: found  # moto's query starts from every item of the table
    try:
        return _query(self, hash_key, range_comparison, range_objs, *rest, **kwargs)
    finally:
        del self.all_items
Table.query = query
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

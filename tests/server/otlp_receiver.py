"""A local OTLP/HTTP trace receiver: what a collector would get from `agentkit serve`.

It decodes each `POST /v1/traces` as an `ExportTraceServiceRequest` (opentelemetry-proto),
keeps the spans, and lets a test wait until the spans it expects have arrived.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


@dataclass(frozen=True)
class SpanRecord:
    """One received span, decoded into plain values."""

    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    status_message: str
    service: str | None


@dataclass(frozen=True)
class MetricPoint:
    """One data point of a received metric: a histogram's `count` and `sum`, or a sum's
    (a counter's, an up-down counter's) `value`, cumulative since the process started."""

    metric: str
    attributes: dict[str, Any]
    count: int = 0
    sum: float = 0.0
    value: float | None = None


def _points(metric: Any) -> list[MetricPoint]:
    kind = metric.WhichOneof("data")
    if kind == "histogram":
        return [
            MetricPoint(metric.name, _attributes(p), count=p.count, sum=p.sum)
            for p in metric.histogram.data_points
        ]
    if kind == "sum":
        return [
            MetricPoint(metric.name, _attributes(p), value=getattr(p, p.WhichOneof("value")))
            for p in metric.sum.data_points
        ]
    return []


def _attributes(point: Any) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in point.attributes}


@dataclass
class Receiver:
    port: int = 0
    spans: list[SpanRecord] = field(default_factory=list)
    points: list[MetricPoint] = field(default_factory=list)
    requests: int = 0
    paths: list[str] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add_metrics(self, path: str, body: bytes) -> None:
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        found = [
            point
            for rm in request.resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
            for point in _points(m)
        ]
        with self.changed:
            self.requests += 1
            self.paths.append(path)
            self.points.extend(found)
            self.changed.notify_all()

    def wait_for_points(
        self, ready: Callable[[list[MetricPoint]], bool], timeout: float = 30.0
    ) -> list[MetricPoint]:
        """The metric points received so far, once `ready(points)` holds."""
        with self.changed:
            if not self.changed.wait_for(lambda: ready(list(self.points)), timeout):
                names = sorted({p.metric for p in self.points})
                raise AssertionError(f"metrics never arrived; received: {names}")
            return list(self.points)

    def add(self, path: str, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found: list[SpanRecord] = []
        for rs in request.resource_spans:
            resource = {a.key: _value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    found.append(
                        SpanRecord(
                            name=s.name,
                            kind=s.kind,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_id=s.parent_span_id.hex(),
                            attributes={a.key: _value(a.value) for a in s.attributes},
                            events=[
                                (e.name, {a.key: _value(a.value) for a in e.attributes})
                                for e in s.events
                            ],
                            status_code=s.status.code,
                            status_message=s.status.message,
                            service=resource.get("service.name"),
                        )
                    )
        with self.changed:
            self.requests += 1
            self.paths.append(path)
            self.spans.extend(found)
            self.changed.notify_all()

    def wait_for(
        self, ready: Callable[[list[SpanRecord]], bool], timeout: float = 30.0
    ) -> list[SpanRecord]:
        """The spans received so far, once `ready(spans)` holds (AssertionError on timeout)."""
        with self.changed:
            if not self.changed.wait_for(lambda: ready(list(self.spans)), timeout):
                names = sorted(s.name for s in self.spans)
                raise AssertionError(f"spans never arrived; received: {names}")
            return list(self.spans)


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path.endswith("/v1/metrics"):
                receiver.add_metrics(self.path, body)
                reply = ExportMetricsServiceResponse().SerializeToString()
            else:
                receiver.add(self.path, body)
                reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


def run_receiver(port: int = 0) -> Iterator[Receiver]:
    """Serve a receiver on 127.0.0.1:`port` (0: any free port) until the generator closes."""
    receiver = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(receiver))
    receiver.port = server.server_address[1]
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

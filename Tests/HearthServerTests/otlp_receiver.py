"""An OTLP/HTTP trace receiver for tests: takes POST /v1/traces in protobuf (decoded with the
OpenTelemetry project's own opentelemetry-proto) or JSON, and appends each export to OUT as
one line of OTLP JSON (ids in hex, as the OTLP JSON encoding has them).

Usage: otlp_receiver.py OUT   (prints "listening PORT" once it listens on 127.0.0.1)
"""

import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def hex_ids(value):
    """MessageToDict writes bytes fields as base64; OTLP JSON writes trace and span ids in hex."""
    if isinstance(value, dict):
        return {key: (base64.b64decode(item).hex() if key in ("traceId", "spanId", "parentSpanId") and isinstance(item, str) and item
                      else hex_ids(item)) for key, item in value.items()}
    if isinstance(value, list):
        return [hex_ids(item) for item in value]
    return value


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        if self.headers.get("Content-Type", "").startswith("application/json"):
            export = json.loads(body)
        else:
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(body)
            export = hex_ids(json_format.MessageToDict(request))
        with open(sys.argv[1], "a") as out:
            out.write(json.dumps(export) + "\n")
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *arguments):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
print(f"listening {server.server_address[1]}", flush=True)
server.serve_forever()

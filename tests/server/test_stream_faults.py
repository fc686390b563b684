"""Stream faults on a loopback stand-in (no vLLM, no wait for the test servers): a
malformed chunk is one line, Stop during a long prefill ends the read within 2 s,
and one failing stream of a batch stops the others at once."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from space.common.cancel import Cancelled
from space.server.client import Server, ServerError, stream_completion
from space.server.compare import _streams

SILENT_S = 30.0  # a prefill far longer than any test waits


class _Handler(BaseHTTPRequestHandler):
    """prompt [1]: a malformed chunk after 0.2 s; [2]: one good chunk, then a chunk whose
    token ids are text; anything else: headers, then silence (a long prefill)."""

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.flush()
        prompt = body["prompt"]
        try:
            if prompt == [1]:
                time.sleep(0.2)
                self.wfile.write(b'data: {"choices": [{"token_ids": [5], "te\n\n')
            elif prompt == [2]:
                good = {"choices": [{"token_ids": [5], "text": "a"}]}
                self.wfile.write(f"data: {json.dumps(good)}\n\n".encode())
                self.wfile.write(b'data: {"choices": [{"token_ids": "six"}]}\n\n')
            else:
                self.server.stopped.wait(SILENT_S)  # type: ignore[attr-defined]
            self.wfile.flush()
        except OSError:
            pass  # the client closed the connection: what a Stop does

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def stand_in():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.stopped = threading.Event()  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield Server("speculative", f"http://127.0.0.1:{httpd.server_address[1]}/v1",
                 read_timeout_s=SILENT_S * 2)
    httpd.stopped.set()  # type: ignore[attr-defined]
    httpd.shutdown()
    httpd.server_close()


def _body(prompt):
    return {"prompt": prompt, "stream": True}


@pytest.mark.parametrize("prompt, why", [([1], "not JSON"), ([2], "not integers")])
def test_a_malformed_chunk_is_one_line(stand_in, prompt, why):
    with pytest.raises(ServerError) as exc:
        stream_completion(stand_in, _body(prompt))
    msg = str(exc.value)
    assert "\n" not in msg and "sent a malformed chunk" in msg and why in msg


def test_stop_during_a_long_prefill_ends_within_2_s(stand_in):
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    t0 = time.monotonic()
    with pytest.raises(Cancelled, match="closed by Stop"):
        stream_completion(stand_in, _body([3]), cancel=stop)
    assert time.monotonic() - t0 < 2.0


def test_one_failing_stream_stops_the_others_at_once(stand_in):
    t0 = time.monotonic()
    with pytest.raises(ServerError, match="malformed chunk"):  # the failure, not the closing
        _streams(stand_in, [_body([3]), _body([1]), _body([4])], None, lambda c: None)
    assert time.monotonic() - t0 < 2.0

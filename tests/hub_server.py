"""A local HTTP server that answers huggingface_hub's file download as the Hugging Face Hub does
(`HF_ENDPOINT=http://127.0.0.1:PORT`), so that fetching a model's config.json is tested without the real Hub.

`hf_hub_download` (huggingface_hub's file_download.py) sends HEAD `/{repo_id}/resolve/{revision}/{filename}` and
needs `X-Repo-Commit` (the revision's commit), `ETag` (the file's blob id) and `Content-Length`; then GET of the same
URL for the bytes. A failure is read from the status and `X-Error-Code` (`GatedRepo`, `RepoNotFound`,
`EntryNotFound`), as `hf_raise_for_status` reads the Hub's."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_RESOLVE = re.compile(r"/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<file>.+)")


class HubServer:
    """`configs`: repo id -> config.json dict; `gated`: repo ids that answer 401 as a gated model does without a
    token; `silent`: accept connections and never answer. Every request's path is kept in `requests`."""

    def __init__(self, configs: dict[str, dict] | None = None, gated=(), silent: bool = False):
        self.configs = dict(configs or {})
        self.gated = set(gated)
        self.silent = silent
        self.requests: list[str] = []
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()  # a silent handler returns
        self._server.shutdown()
        self._server.server_close()

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet: pytest shows what fails
                pass

            def do_HEAD(self):
                self._answer(body=False)

            def do_GET(self):
                self._answer(body=True)

            def _answer(self, body: bool) -> None:
                hub.requests.append(f"{self.command} {self.path}")
                if hub.silent:
                    hub._stop.wait(60)
                    return
                found = _RESOLVE.fullmatch(self.path.split("?")[0])
                repo = found["repo"] if found else ""
                if repo in hub.gated:
                    return self._fail(401, "GatedRepo", body)
                if repo not in hub.configs:
                    return self._fail(404, "RepoNotFound", body)
                if found["file"] != "config.json":
                    return self._fail(404, "EntryNotFound", body)
                data = json.dumps(hub.configs[repo]).encode()
                commit = hashlib.sha1(repo.encode()).hexdigest()  # 40 hex digits, as a commit id
                self.send_response(200)
                self.send_header("X-Repo-Commit", commit)
                self.send_header("ETag", f'"{hashlib.sha1(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def _fail(self, status: int, code: str, body: bool) -> None:
                message = json.dumps({"error": code}).encode()
                self.send_response(status)
                self.send_header("X-Error-Code", code)
                self.send_header("Content-Length", str(len(message)))
                self.end_headers()
                if body:
                    self.wfile.write(message)

        return Handler

#!/usr/bin/env python3
"""HTTP servers for kiln's source tests, on 127.0.0.1, started by the tests themselves.

    servers.py git-http ROOT            git's smart HTTP: `git http-backend` as a CGI over ROOT
                                        (KILN_TEST_SLOW_POST=SECONDS: each POST, the fetch
                                        itself, waits that long before it is answered;
                                        KILN_TEST_CLOSE_DELIMITED=1: no Content-Length, the
                                        HTTP/1.0 answer ends when the connection closes, as
                                        `python3 -m http.server --cgi` sends it)
    servers.py static ROOT [USER:PASS]  static files (a Helm chart repository), with basic auth
                                        (both: KILN_TEST_DENIED_STATUS=403 answers wrong
                                        credentials with 403 instead of 401)

Prints the port it listens on, then serves until killed. Standard library only.
"""
import base64
import http.server
import os
import subprocess
import sys
import threading
import time


class Handler(http.server.BaseHTTPRequestHandler):
    mode = None
    root = None
    login = None

    def log_message(self, *args):
        pass

    def authorized(self):
        if not self.login:
            return True
        want = "Basic " + base64.b64encode(self.login.encode()).decode()
        got = self.headers.get("Authorization")
        if got == want:
            return True
        # KILN_TEST_DENIED_STATUS=403: wrong credentials are denied with 403 (as GitHub
        # answers a token without access to the repository), none asked for with 401.
        denied = os.environ.get("KILN_TEST_DENIED_STATUS")
        if got and denied:
            self.send_response(int(denied))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return False
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="kiln-test"')
        self.send_header("Content-Length", "0")
        self.end_headers()
        return False

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def handle_any(self, method):
        # KILN_TEST_REQUEST_LOG: every request, one `METHOD path` line (tests count fetches).
        log = os.environ.get("KILN_TEST_REQUEST_LOG")
        if log:
            with open(log, "a") as f:
                f.write("%s %s\n" % (method, self.path))
        if not self.authorized():
            return
        if self.mode == "git-http":
            return self.cgi(method)
        path = os.path.normpath(self.path.split("?", 1)[0]).lstrip("/")
        full = os.path.join(self.root, path)
        if ".." in path.split("/") or not os.path.isfile(full):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(full, "rb") as f:
            data = f.read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def cgi(self, method):
        slow = os.environ.get("KILN_TEST_SLOW_POST")
        if slow and method == "POST":
            time.sleep(float(slow))
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = dict(os.environ)
        env.update({
            "GIT_PROJECT_ROOT": self.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": method,
            "CONTENT_TYPE": self.headers.get("Content-Type") or "",
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1",
            "GIT_PROTOCOL": self.headers.get("Git-Protocol") or "",
        })
        if self.headers.get("Content-Encoding") == "gzip":
            env["HTTP_CONTENT_ENCODING"] = "gzip"
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = out.partition(b"\n\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if not os.environ.get("KILN_TEST_CLOSE_DELIMITED"):
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def main():
    Handler.mode = sys.argv[1]
    Handler.root = os.path.abspath(sys.argv[2])
    Handler.login = sys.argv[3] if len(sys.argv) > 3 else None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # Until the test kills the process, or closes our stdin.
    try:
        sys.stdin.read()
    except Exception:
        pass
    server.shutdown()


if __name__ == "__main__":
    main()

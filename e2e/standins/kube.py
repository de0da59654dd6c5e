"""Minimal Kubernetes API access for the end-to-end stand-ins.

The stand-ins (node agent, JobSet controller) talk to the real apiserver only
through its API, like the components they replace. This module loads a
kubeconfig with Debian's python3-kubernetes (token, client certificate and CA
forms; TLS is always verified) and then sends raw JSON requests over that
client's urllib3 pool: the generated model classes are far too slow to
deserialize thousands of pods.

It is not a general client: JSON in, dicts out, plus a list-then-watch helper
that resumes from the last resourceVersion and re-lists on 410 Gone.
"""

import json
import threading
import time
import urllib.parse

from kubernetes import client, config


class ApiError(Exception):
    """A non-2xx answer from the apiserver."""

    def __init__(self, status, method, path, body):
        self.status = status
        self.body = body
        reason = body.get("message") if isinstance(body, dict) else str(body)[:200]
        super().__init__(f"{method} {path}: HTTP {status}: {reason}")


class Kube:
    """Raw JSON access to one apiserver. Thread-safe (urllib3 pool)."""

    def __init__(self, kubeconfig, pool_size=32, timeout=30.0):
        cfg = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        if not cfg.verify_ssl:
            raise ValueError(f"{kubeconfig}: insecure-skip-tls-verify is not allowed")
        cfg.connection_pool_maxsize = pool_size
        self._api = client.ApiClient(cfg)
        self._pool = self._api.rest_client.pool_manager
        self._host = cfg.host.rstrip("/")
        self._headers = {"Accept": "application/json"}
        token = cfg.get_api_key_with_prefix("authorization")
        if token:
            self._headers["Authorization"] = token
        self._timeout = timeout

    def request(self, method, path, body=None, query=None, content_type="application/json",
                ok=(200, 201, 202), timeout=None):
        """Sends one request and returns the decoded JSON body.

        Raises ApiError for a status outside `ok`."""
        response = self._send(method, path, body, query, content_type, timeout)
        try:
            decoded = json.loads(response.data) if response.data else {}
        except ValueError:
            decoded = {"message": response.data[:200].decode(errors="replace")}
        if response.status not in ok:
            raise ApiError(response.status, method, path, decoded)
        return decoded

    def _send(self, method, path, body=None, query=None, content_type="application/json", timeout=None):
        url = self._host + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = dict(self._headers)
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        return self._pool.request(method, url, body=data, headers=headers,
                                  timeout=timeout or self._timeout, retries=False)

    def get(self, path, **query):
        return self.request("GET", path, query=query or None)

    def text(self, path):
        """GET of a path that answers in text (the apiserver's /metrics)."""
        response = self._send("GET", path)
        if response.status != 200:
            raise ApiError(response.status, "GET", path, {"message": response.data[:200].decode(errors="replace")})
        return response.data.decode(errors="replace")

    def create(self, path, body):
        return self.request("POST", path, body=body)

    def delete(self, path, body=None, ok=(200, 202, 404)):
        return self.request("DELETE", path, body=body, ok=ok)

    def patch(self, path, body, kind="merge", ok=(200, 201)):
        """kind: merge, strategic or json (RFC 6902)."""
        types = {
            "merge": "application/merge-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "json": "application/json-patch+json",
        }
        return self.request("PATCH", path, body=body, content_type=types[kind], ok=ok)

    def put(self, path, body, ok=(200, 201)):
        return self.request("PUT", path, body=body, ok=ok)

    def list(self, path, **query):
        """Lists every page (limit/continue). Returns (items, resourceVersion)."""
        items = []
        query = dict(query)
        query.setdefault("limit", 500)
        while True:
            page = self.get(path, **query)
            items.extend(page.get("items", []))
            token = page.get("metadata", {}).get("continue")
            if not token:
                return items, page.get("metadata", {}).get("resourceVersion", "")
            query["continue"] = token

    def watch_forever(self, path, on_event, stop, query=None, on_relist=None):
        """Lists `path`, then watches it until `stop` (a threading.Event) is set.

        on_event(type, object) receives ADDED/MODIFIED/DELETED. After a re-list
        (at start and after 410 Gone or a broken stream), on_relist(items) gets
        the full list first, when given; otherwise every item comes as ADDED.
        Errors are retried with a short backoff; nothing is lost because the
        watch resumes from the last resourceVersion seen.
        """
        query = dict(query or {})
        backoff = 0.2
        while not stop.is_set():
            try:
                items, version = self.list(path, **query)
                if on_relist:
                    on_relist(items)
                else:
                    for item in items:
                        on_event("ADDED", item)
                while not stop.is_set():
                    version = self._watch_once(path, query, version, on_event, stop)
                    if version is None:
                        break  # 410 Gone: re-list
                backoff = 0.2
            except Exception as error:  # noqa: BLE001 - any failure means re-list
                if stop.is_set():
                    return
                print(f"watch {path}: {error}; re-listing in {backoff:.1f}s", flush=True)
                stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)

    def _watch_once(self, path, query, version, on_event, stop):
        """One watch request. Returns the last resourceVersion, or None on 410."""
        params = dict(query)
        params.pop("limit", None)
        params.update({"watch": "1", "resourceVersion": version, "allowWatchBookmarks": "true",
                       "timeoutSeconds": "60"})
        url = self._host + path + "?" + urllib.parse.urlencode(params)
        response = self._pool.request("GET", url, headers=self._headers, preload_content=False,
                                      timeout=urllib3_timeout(75), retries=False)
        try:
            if response.status == 410:
                return None
            if response.status != 200:
                raise ApiError(response.status, "WATCH", path, response.data)
            buffer = b""
            for chunk in response.stream(65536, decode_content=True):
                if stop.is_set():
                    return version
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    kind, obj = event.get("type"), event.get("object", {})
                    if kind == "ERROR":
                        if obj.get("code") == 410:
                            return None
                        raise ApiError(obj.get("code", 500), "WATCH", path, obj)
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if kind != "BOOKMARK":
                        on_event(kind, obj)
            return version
        finally:
            response.release_conn()


    def watch_raw(self, path, version, on_line, stop, query=None, read_timeout=75.0):
        """One watch request on `path` from resourceVersion `version`, for
        recording a stream: every line is handed to on_line(bytes) exactly as
        the apiserver sent it, newline included (bookmarks and errors too).

        Returns the resourceVersion of the last event when the stream ends,
        when `stop` is set, or when nothing arrives for read_timeout seconds:
        call again with it to go on without loss. Returns None on 410 Gone."""
        import urllib3
        params = dict(query or {})
        params.update({"watch": "1", "allowWatchBookmarks": "true"})
        if version:
            params["resourceVersion"] = version
        url = self._host + path + "?" + urllib.parse.urlencode(params)
        response = self._pool.request("GET", url, headers=self._headers, preload_content=False,
                                      timeout=urllib3_timeout(read_timeout), retries=False)
        try:
            if response.status == 410:
                return None
            if response.status != 200:
                raise ApiError(response.status, "WATCH", path, response.data)
            buffer = b""
            try:
                for chunk in response.stream(65536, decode_content=True):
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        on_line(line + b"\n")
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        obj = event.get("object", {})
                        if event.get("type") == "ERROR":
                            if obj.get("code") == 410:
                                return None
                            raise ApiError(obj.get("code", 500), "WATCH", path, obj)
                        version = obj.get("metadata", {}).get("resourceVersion", version)
                    if stop.is_set():
                        return version
            except urllib3.exceptions.ReadTimeoutError:
                pass  # quiet: the caller checks `stop` and resumes from `version`
            return version
        finally:
            response.release_conn()


def urllib3_timeout(read_seconds):
    import urllib3
    return urllib3.Timeout(connect=10.0, read=read_seconds)


def start_watch(kube, path, on_event, stop, query=None, on_relist=None, name=None):
    """Runs watch_forever in a daemon thread and returns the thread."""
    thread = threading.Thread(target=kube.watch_forever, args=(path, on_event, stop),
                              kwargs={"query": query, "on_relist": on_relist},
                              name=name or f"watch {path}", daemon=True)
    thread.start()
    return thread


def now_rfc3339():
    """The current UTC time as Kubernetes writes it (seconds precision)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

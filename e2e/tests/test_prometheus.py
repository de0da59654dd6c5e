"""muster's metrics read by the real tools (Debian's prometheus 2.42 and its
promtool), not only by tests that know what to expect:

- the example alerting rules (deploy/prometheus/alerts.yaml) load
  (`promtool check rules`) and pass their unit tests (`promtool test rules`:
  each alert fires when it should and not before);
- every /metrics endpoint passes `promtool check metrics` (the exposition
  format and Prometheus' naming lints): the webhook's (on --metrics-addr
  only, never on its admission port) after an admission, the controller's
  after a gang start;
- a real Prometheus scrapes the webhook and the controller
  every second while a gang-scheduled JobSet starts, and PromQL sees the
  group wait, with its timeout, and then its release.
"""

import json
import pathlib
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import ROOT, wait_for
from test_controller import cluster, jobset_body, JOBSETS  # noqa: F401 - the fixture is used by name
from test_webhook import free_port

PROMTOOL, PROMETHEUS = shutil.which("promtool"), shutil.which("prometheus")
RULES = ROOT / "deploy" / "prometheus"
WEBHOOK = ROOT / "bin" / "muster-webhook"

pytestmark = pytest.mark.skipif(not PROMTOOL or not PROMETHEUS,
                                reason="promtool/prometheus missing: scripts/deps installs Debian's prometheus")


def promtool(*args, stdin=None):
    result = subprocess.run([PROMTOOL, *args], input=stdin, capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout + result.stderr


def test_alert_rules_load_and_pass_their_unit_tests():
    code, out = promtool("check", "rules", str(RULES / "alerts.yaml"))
    assert code == 0 and "SUCCESS: 5 rules found" in out, out
    code, out = promtool("test", "rules", str(RULES / "alerts_test.yaml"))
    assert code == 0 and "SUCCESS" in out, out


def check_metrics(text, what):
    code, out = promtool("check", "metrics", stdin=text)
    assert code == 0, f"promtool check metrics on {what}:\n{out}\n--- the exposition ---\n{text[:4000]}"


@pytest.fixture
def webhook(tmp_path):
    """bin/muster-webhook on 127.0.0.1 with gen-certs.sh's certificate:
    (port, CA file, SSL context)."""
    certs = tmp_path / "certs"
    subprocess.run(["bash", str(ROOT / "deploy" / "gen-certs.sh"), "--out", str(certs), "--ip", "127.0.0.1"],
                   check=True, capture_output=True)
    port, health, metrics = free_port(), free_port(), free_port()
    log = open(tmp_path / "webhook.log", "w")
    proc = subprocess.Popen([str(WEBHOOK), "--tls-cert-file", str(certs / "tls.crt"), "--tls-key-file",
                             str(certs / "tls.key"), "--listen", f"127.0.0.1:{port}",
                             "--health-addr", f"127.0.0.1:{health}", "--metrics-addr", f"127.0.0.1:{metrics}"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))

    def ready():
        try:
            return urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=context, timeout=2).status == 200
        except OSError:
            return False
    wait_for(ready, timeout=20, what="muster-webhook ready")
    # The probes' own plain-HTTP port (deploy/base/webhook.yaml points
    # kubelet there): /healthz and /readyz, and no metrics.
    for path in ("/healthz", "/readyz"):
        assert urllib.request.urlopen(f"http://127.0.0.1:{health}{path}", timeout=5).status == 200
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{health}/metrics", timeout=5)
        raise AssertionError("/metrics served on --health-addr")
    except urllib.error.HTTPError as error:
        assert error.code == 404
    # Nor on the admission port, which every pod of the cluster may reach.
    try:
        urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=context, timeout=5)
        raise AssertionError("/metrics served on the admission port")
    except urllib.error.HTTPError as error:
        assert error.code == 404
    yield port, metrics, context
    proc.terminate()
    proc.wait(30)
    log.close()


def admit(port, context):
    body = (ROOT / "bench" / "webhook" / "admission-review.json").read_bytes()
    request = urllib.request.Request(f"https://127.0.0.1:{port}/mutate?timeout=10s", data=body,
                                     headers={"Content-Type": "application/json"})
    answer = json.loads(urllib.request.urlopen(request, context=context, timeout=10).read())
    assert answer["response"]["allowed"] and answer["response"].get("patch"), answer


class Prometheus:
    """A real Prometheus scraping `targets` ({job: (scheme, address, extra config)}) every second."""

    def __init__(self, tmp_path, targets):
        self.port = free_port()
        lines = ["global:", "  scrape_interval: 1s", "  evaluation_interval: 1s",
                 f"rule_files: [{RULES / 'alerts.yaml'}]", "scrape_configs:"]
        for job, (scheme, address, extra) in targets.items():
            lines += [f"  - job_name: {job}", f"    scheme: {scheme}", *[f"    {line}" for line in extra],
                      "    static_configs:", f"      - targets: ['{address}']"]
        config = tmp_path / "prometheus.yml"
        config.write_text("\n".join(lines) + "\n")
        code, out = promtool("check", "config", str(config))
        assert code == 0, out
        self.log = open(tmp_path / "prometheus.log", "w")
        self.proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                      f"--web.listen-address=127.0.0.1:{self.port}"],
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def query(self, promql):
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        try:
            data = json.loads(urllib.request.urlopen(url, timeout=5).read())
        except OSError:
            return []
        return data["data"]["result"] if data.get("status") == "success" else []

    def targets_up(self, count):
        return len(self.query("up == 1")) == count

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()
        print(pathlib.Path(self.log.name).read_text()[-3000:])


def test_the_webhooks_metrics_pass_promtool_and_prometheus_scrapes_them(webhook, tmp_path):
    port, metrics, context = webhook
    admit(port, context)
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=5).read().decode()
    assert "muster_http_request_duration_seconds_bucket" in text and "muster_tls_certificate_expiry" in text
    check_metrics(text, "muster-webhook /metrics")
    prometheus = Prometheus(tmp_path, {"muster-webhook": ("http", f"127.0.0.1:{metrics}", [])})
    try:
        wait_for(lambda: prometheus.targets_up(1), timeout=60, interval=0.5, what="the webhook scraped (up == 1)")
        admit(port, context)
        found = wait_for(lambda: prometheus.query(
            'sum(muster_http_request_duration_seconds_count{route="mutate"}) >= 2'), timeout=30, interval=0.5,
            what="PromQL sees the two admissions")
        assert float(found[0]["value"][1]) >= 2
        # The certificate gen-certs.sh made lasts 365 days: no expiry alert.
        days = prometheus.query("(muster_tls_certificate_expiry_timestamp_seconds - time()) / 86400")
        assert days and 360 < float(days[0]["value"][1]) <= 366, days
        assert not prometheus.query('ALERTS{alertname="MusterWebhookCertificateExpiring"}')
    finally:
        prometheus.stop()


def controller_metrics(controller):
    port = wait_for(controller.metrics_port, timeout=20, what="the controller's metrics port")
    return port, urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()


def test_prometheus_sees_a_gang_wait_and_its_release(kube, namespace, cluster, tmp_path):  # noqa: F811
    controller, _events = cluster
    port, _ = controller_metrics(controller)
    prometheus = Prometheus(tmp_path, {"muster-controller": ("http", f"127.0.0.1:{port}", [])})
    try:
        wait_for(lambda: prometheus.targets_up(1), timeout=60, interval=0.5, what="the controller scraped")
        created = time.time()
        kube.create(JOBSETS.format(namespace), jobset_body("gang"))
        selector = f'namespace="{namespace}",jobset="gang"'
        # The slow pool is Ready 8 s late: the group waits first, then is released.
        released = wait_for(lambda: prometheus.query(f"muster_group_released{{{selector}}} == 1"), timeout=120,
                            interval=0.5, what="PromQL sees the release")
        assert released
        since = prometheus.query(f"max_over_time(muster_group_waiting_since_timestamp_seconds{{{selector}}}[5m])")
        assert since and created - 5 <= float(since[0]["value"][1]) <= time.time(), (since, created)
        timeout = prometheus.query(f"muster_group_timeout_seconds{{{selector}}}")
        assert timeout and float(timeout[0]["value"][1]) == 120, timeout
        assert prometheus.query("muster_releases_total >= 1")
        # Released: it waits no more, so the waiting alert has nothing to judge.
        wait_for(lambda: prometheus.query(f"muster_group_waiting_since_timestamp_seconds{{{selector}}} == 0"),
                 timeout=10, interval=0.5, what="waiting since 0 once released")
        assert not prometheus.query('ALERTS{alertname="MusterGroupWaitingPastHalfItsTimeout"}')
    finally:
        prometheus.stop()
    _, text = controller_metrics(controller)
    assert "muster_group_released" in text
    check_metrics(text, "muster-controller /metrics")


def test_a_certificate_near_expiry_is_a_warning_event_on_the_webhooks_pod(kube, kubeconfig, namespace, tmp_path):
    """No silent expiry: a serving certificate with 10 days left is logged,
    exported, and posted as a Warning Event CertificateExpiring on the
    webhook's own Pod (POD_NAME/POD_NAMESPACE/POD_UID, as deploy/ sets them
    from the downward API), for `kubectl describe pod` and event alerts."""
    import os
    certs = tmp_path / "certs"
    subprocess.run(["bash", str(ROOT / "deploy" / "gen-certs.sh"), "--out", str(certs), "--ip", "127.0.0.1",
                    "--days", "10"], check=True, capture_output=True)
    port = free_port()
    log_path = tmp_path / "webhook.log"
    env = {**os.environ, "POD_NAME": "muster-webhook-0", "POD_NAMESPACE": namespace, "POD_UID": "uid-of-the-pod"}
    with open(log_path, "w") as log:
        proc = subprocess.Popen([str(WEBHOOK), "--tls-cert-file", str(certs / "tls.crt"), "--tls-key-file",
                                 str(certs / "tls.key"), "--listen", f"127.0.0.1:{port}", "--kubeconfig",
                                 str(kubeconfig)], stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        try:
            def events():
                items = kube.get(f"/api/v1/namespaces/{namespace}/events")["items"]
                return [e for e in items if e["reason"] == "CertificateExpiring"]
            found = wait_for(events, timeout=30, what="the CertificateExpiring Event")
        finally:
            proc.terminate()
            proc.wait(30)
    event = found[0]
    assert event["type"] == "Warning" and event["source"]["component"] == "muster-webhook", event
    assert event["involvedObject"] == {"apiVersion": "v1", "kind": "Pod", "name": "muster-webhook-0",
                                       "namespace": namespace, "uid": "uid-of-the-pod"}, event
    assert "(9 days left)" in event["message"] or "(10 days left)" in event["message"], event["message"]
    assert "deploy/gen-certs.sh --renew" in event["message"]
    assert "event=tls-certificate-expiring" in log_path.read_text()

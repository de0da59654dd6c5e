"""What a tenant's large objects can do to bin/muster-controller, on the real
control plane (issue 34 §1 and §6).

A tenant may make JobSets with annotations near the apiserver's 256 KiB
limit. 300 of them, which muster does not manage at all, make the placement
loop's first LIST page (500 items) about 75 MB: the client refused it and the
controller exited, in every replica, for every team. Now a page too large is
asked again with half the items (muster_api_list_pages_shrunk_total says so),
memory follows what muster keeps, and gangs are released meanwhile. A SIGTERM
while that LIST is going on ends the controller in seconds: every request it
makes gives up at once.
"""

import concurrent.futures
import re
import signal
import time
import urllib.request

import pytest

from conftest import CONTROLLER, Controller, wait_for
from test_controller import JOBSETS, cluster, get_configmap, jobset_body  # noqa: F401 - the fixture, by name
import muster_api as api  # noqa: E402

pytestmark = pytest.mark.skipif(not CONTROLLER.exists(), reason=f"{CONTROLLER} is not built (make)")

LARGE = 300
BALLAST = 250 * 1024  # an annotation's value; keys and values together may hold 256 KiB
RSS_GOAL_MB = 128


def ballast_jobset(name):
    """A JobSet muster does not manage: suspended, no gang, no topology."""
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "annotations": {"e2e.muster.dev/ballast": "x" * BALLAST}},
            "spec": {"suspend": True, "replicatedJobs": [{"name": "w", "template": {"spec": {"template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}]}}


@pytest.fixture
def large_jobsets(kube, namespace):
    """LARGE JobSets of a 250 KiB annotation each in the test's namespace
    (75 MB), made 8 at a time."""
    path = JOBSETS.format(namespace)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: kube.create(path, ballast_jobset(f"ballast-{i:03d}")), range(LARGE)))
    return namespace


def metric(port, name, labels=""):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    found = re.findall(rf"^{name}\{{[^}}]*{labels}[^}}]*\}} (\S+)$", text, re.M)
    return sum(float(v) for v in found) if found else None


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(r"^VmHWM:\s+(\d+) kB", status.read(), re.M).group(1)) / 1024


def test_large_jobsets_of_a_tenant_neither_stop_the_controller_nor_the_gangs(kube, namespace, large_jobsets,
                                                                            cluster):  # noqa: F811 - the fixture
    controller, _ = cluster
    port = wait_for(controller.metrics_port, timeout=30, what="the controller's metrics port")
    # Its first LISTs of 75 MB of JobSets complete: asked again in smaller pages.
    # (The process's one JobSet watch, whichever client makes it: watch_hub.)
    wait_for(lambda: (metric(port, "muster_api_list_pages_shrunk_total") or 0) > 0,
             timeout=120, interval=0.5, what="a LIST page asked again smaller")
    assert controller.alive(), controller.output()[-3000:]
    # A gang is released meanwhile.
    kube.create(JOBSETS.format(namespace), jobset_body("gang"))
    wait_for(lambda: (get_configmap(kube, namespace, "gang") or {}).get("data", {}).get(api.CONFIGMAP_KEY_STARTED)
             == "0", timeout=120, interval=0.5, what="gang released (its release of record)")
    assert controller.alive(), controller.output()[-3000:]
    rss = peak_rss_mb(controller.process.pid)
    print(f"controller peak RSS with {LARGE} JobSets of {BALLAST // 1024} KiB: {rss:.1f} MB (goal < {RSS_GOAL_MB})")
    assert rss < RSS_GOAL_MB, rss
    assert "event=exit" not in controller.output()


def test_sigterm_during_the_first_list_of_large_jobsets_ends_the_controller_in_seconds(kubeconfig, large_jobsets,
                                                                                      tmp_path):
    """Before, it went on for minutes after two SIGTERMs, past kubelet's grace
    period, and its Lease was never released."""
    namespace = large_jobsets
    controller = Controller(kubeconfig, namespace, tmp_path / "controller.log")
    try:
        wait_for(lambda: "event=started" in controller.output(), timeout=30, what="the controller's start")
        time.sleep(0.5)  # into its first LISTs of 75 MB
        sent = time.monotonic()
        controller.process.send_signal(signal.SIGTERM)
        controller.process.wait(timeout=30)
        took = time.monotonic() - sent
        print(f"stopped {took:.2f} s after SIGTERM (exit {controller.process.returncode})")
        # The Lease's release and the HTTP servers' stop are what remain.
        assert took < 5, (took, controller.output()[-3000:])
        assert controller.process.returncode == 0, controller.output()[-3000:]
    finally:
        controller.stop()

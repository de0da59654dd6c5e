"""End-to-end tests of bin/muster-controller's leader election and endpoints
on the real control plane.

Two replicas share the Lease `muster-controller` in the test's namespace
(conftest's Controller gives it a 3 s duration, 2 s renew deadline, 1 s
retry): exactly one acts; SIGKILLed while the group is still starting, the
other takes the Lease within the lease time and releases the group exactly
once. The new leader's /metrics, /readyz and /healthz then tell the story.
"""

import time
import urllib.request

import pytest

from conftest import CONTROLLER, Controller, wait_for
from test_controller import JOBSETS, SHAPES, get_configmap, jobset_body, read_events, starts
import muster_api as api  # noqa: E402

pytestmark = pytest.mark.skipif(not CONTROLLER.exists(), reason=f"{CONTROLLER} is not built (make)")

LEASE_SECONDS = 3  # Controller.LEASE_FLAGS
RETRY_SECONDS = 1


@pytest.fixture
def standins(run_standin, namespace, tmp_path):
    """Node agent (late slow pool, hourly volume sync) and JobSet stand-in."""
    events = tmp_path / "events.jsonl"
    shape = tmp_path / "late-pool.yaml"
    shape.write_text((SHAPES / "slow-pool.yaml").read_text().replace(
        "readyAfterSeconds: 8", "appearAfterSeconds: 8\n    readyAfterSeconds: 8"))
    run_standin("node_agent.py", "--shape", shape, "--work-dir", tmp_path / "agent",
                "--sync-period", 3600, "--events", events, "--delete-nodes", "--max-run-seconds", 30)
    run_standin("jobset_controller.py", "--namespace", namespace)
    return events


def get(port, path):
    """(status, body) of GET http://127.0.0.1:port/path."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def sample(metrics, name):
    """The value of the series `name` (with its labels, as rendered)."""
    for line in metrics.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def test_two_replicas_one_acts_and_the_standby_takes_over(kube, kubeconfig, namespace, standins, tmp_path):
    replicas = [Controller(kubeconfig, namespace, tmp_path / f"controller-{i}.log", fast_lease=True)
                for i in range(2)]
    try:
        leader = wait_for(lambda: [r for r in replicas if r.leading()] or None, timeout=15,
                          what="one replica holding the Lease")
        assert len(leader) == 1, [r.output() for r in replicas]
        leader = leader[0]
        standby = replicas[1 - replicas.index(leader)]
        # The leader logs lease-acquired, then starts its loop: a few ms later.
        wait_for(lambda: "event=started " in leader.output(), timeout=10, what="the leader's loop started")
        # The standby waits: it has not started its loop.
        time.sleep(2 * RETRY_SECONDS)
        assert "event=started " not in standby.output(), standby.output()
        assert "event=lease-held-by-other" in standby.output(), standby.output()
        port = wait_for(standby.metrics_port, timeout=5, what="standby metrics port")
        status, body = get(port, "/readyz")
        assert status == 200, body  # a standby is a valid replacement
        assert sample(get(port, "/metrics")[1], "muster_leader") == 0

        name = "gang"
        kube.create(JOBSETS.format(namespace), jobset_body(name))
        # The fast pods start at once and wait; the slow pool appears 8 s later.
        wait_for(lambda: len(starts(read_events(standins), api.BARRIER_CONTAINER, namespace)) >= 2,
                 timeout=60, interval=0.2, what="the fast pods at their barriers")
        assert get_configmap(kube, namespace, name) is None
        leader.kill()
        killed = leader.killed_at

        # Within the lease time (plus a retry and the restart of the loop).
        wait_for(standby.leading, timeout=LEASE_SECONDS + 2 * RETRY_SECONDS + 3, interval=0.1,
                 what="the standby taking the Lease")
        took_over = time.time() - killed
        print(f"standby took the Lease {took_over:.1f} s after the leader was killed")

        def all_main_started():
            main = starts(read_events(standins), "main", namespace)
            return main if len(main) == 4 else None

        main = wait_for(all_main_started, timeout=90, interval=0.2, what="all 4 main containers started")
        barrier = starts(read_events(standins), api.BARRIER_CONTAINER, namespace)
        assert min(main.values()) >= max(barrier.values()), (main, barrier)
        assert max(main.values()) - min(main.values()) < 1.0, main
        assert get_configmap(kube, namespace, name)["data"][api.CONFIGMAP_KEY_STARTED] == "0"
        releases = leader.releases() + standby.releases()
        assert len(releases) == 1 and releases[0] in standby.releases(), releases

        # The new leader's endpoints.
        port = standby.metrics_port()
        assert get(port, "/healthz")[0] == 200
        assert get(port, "/readyz")[0] == 200
        metrics = wait_for(lambda: (lambda m: m if sample(m, "muster_push_results_total{result=\"ok\"}") == 4
                                    else None)(get(port, "/metrics")[1]),
                           timeout=10, what="push results in /metrics")
        labels = f'{{namespace="{namespace}",jobset="{name}"}}'
        assert sample(metrics, "muster_leader") == 1
        assert sample(metrics, "muster_releases_total") == 1
        assert sample(metrics, "muster_group_pods_started" + labels) == 4
        assert sample(metrics, "muster_group_pods_expected" + labels) == 4
        assert sample(metrics, "muster_group_released" + labels) == 1
        assert sample(metrics, "muster_jobsets_tracked") == 1
        assert sample(metrics, 'muster_release_latency_seconds_count{path="push"}') == 1
        assert sample(metrics, 'muster_api_requests_total{client="writes"}') >= 1
        assert 'muster_watch_events_total{watch="pods"}' in metrics
    finally:
        for replica in replicas:
            replica.stop()
        for replica in replicas:
            print(replica.output())


def test_a_stopped_leader_hands_over_at_once(kube, kubeconfig, namespace, tmp_path):
    """SIGTERM: the leader stops acting, then releases the Lease, and the
    standby takes it within one retry period instead of a lease time."""
    first = Controller(kubeconfig, namespace, tmp_path / "first.log", fast_lease=True)
    try:
        wait_for(first.leading, timeout=15, what="first replica leading")
        second = Controller(kubeconfig, namespace, tmp_path / "second.log", fast_lease=True)
        try:
            wait_for(lambda: "event=lease-held-by-other" in second.output(), timeout=10,
                     what="second replica waiting")
            begun = time.time()
            first.stop()
            assert "event=lease-released" in first.output(), first.output()
            wait_for(second.leading, timeout=RETRY_SECONDS + 2, interval=0.05, what="second replica leading")
            print(f"handed over in {time.time() - begun:.2f} s")
            lease = kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/muster-controller")
            assert lease["spec"]["holderIdentity"] != "" and lease["spec"].get("leaseTransitions", 0) >= 1
        finally:
            second.stop()
            print(second.output())
    finally:
        first.stop()
        print(first.output())

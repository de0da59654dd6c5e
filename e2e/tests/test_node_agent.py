"""End-to-end tests of the node agent (the kubelet stand-in) on the real
control plane: nodes, scheduling through the real kube-scheduler, pod
lifecycle, and the real muster-barrier run as an init container.
"""

import hashlib
import json
import os
import pathlib
import socket
import threading
import time

import pytest

from conftest import ROOT, barrier_init_container, group_scheduling_volume, new_namespace, wait_for
from kube import ApiError
import muster_api as api  # noqa: E402

SHAPES = ROOT / "e2e" / "shapes"
TOKEN = "e2e-token-0123456789abcdef"


@pytest.fixture
def agent(run_standin, kube, tmp_path):
    """Starts the node agent on small.yaml (4 nodes) with a 2 s sync period."""
    events = tmp_path / "events.jsonl"

    def start(shape="small.yaml", sync_period=2, *extra):
        proc = run_standin("node_agent.py", "--shape", SHAPES / shape, "--work-dir", tmp_path / "agent",
                           "--sync-period", sync_period, "--events", events, "--delete-nodes",
                           "--max-run-seconds", 30, *extra)
        proc.events = events
        return proc

    yield start


def node_ready(kube, name):
    try:
        node = kube.get(f"/api/v1/nodes/{name}")
    except ApiError as error:
        if error.status == 404:
            return None
        raise
    ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
    taints = [t["key"] for t in node["spec"].get("taints") or []]
    return ready and ready[0]["status"] == "True" and "node.kubernetes.io/not-ready" not in taints and node


def pod_body(name, **spec):
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": {}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "command": ["sleep", "1"]}]}}
    body["spec"].update(spec)
    return body


def barrier_pod(name, attempt="0", timeout="60", token=TOKEN, restart_policy="Never"):
    """A pod as the muster webhook will shape it (KEP-498's example, with the
    real barrier instead of the bash loop)."""
    body = pod_body(name, restartPolicy=restart_policy)
    body["metadata"]["labels"] = {api.JOBSET_LABEL_RESTART_ATTEMPT: attempt}
    body["spec"]["initContainers"] = [barrier_init_container(token, timeout)]
    body["spec"]["volumes"] = [group_scheduling_volume("group-scheduling")]
    return body


def absent(kube, path):
    """True once the object at path is gone (404)."""
    try:
        kube.get(path)
        return False
    except ApiError as error:
        if error.status == 404:
            return True
        raise


def get_pod(kube, namespace, name):
    return kube.get(f"/api/v1/namespaces/{namespace}/pods/{name}")


def phase(kube, namespace, name, want):
    pod = get_pod(kube, namespace, name)
    return pod if pod["status"].get("phase") == want else None


def init_running(kube, namespace, name):
    pod = get_pod(kube, namespace, name)
    statuses = pod["status"].get("initContainerStatuses") or []
    return pod if statuses and "running" in statuses[0]["state"] else None


def test_nodes_are_ready_with_topology_and_leases(kube, agent):
    agent()
    for i in range(4):
        wait_for(lambda: node_ready(kube, f"node-{i}"), timeout=30, what=f"node-{i} Ready")
    labels = {i: kube.get(f"/api/v1/nodes/node-{i}")["metadata"]["labels"] for i in range(4)}
    pairs = [(labels[i]["cloud.provider.com/topology-block"], labels[i]["cloud.provider.com/topology-rack"])
             for i in range(4)]
    assert pairs == [("block-1", "rack-1"), ("block-1", "rack-2"), ("block-2", "rack-1"), ("block-2", "rack-2")]
    lease = kube.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-0")
    assert lease["spec"]["holderIdentity"] == "node-0"


def test_scheduler_honours_node_selector_and_pod_runs(kube, namespace, agent):
    agent()
    wait_for(lambda: all(node_ready(kube, f"node-{i}") for i in range(4)), what="nodes Ready")
    selector = {"cloud.provider.com/topology-block": "block-2", "cloud.provider.com/topology-rack": "rack-1"}
    kube.create(f"/api/v1/namespaces/{namespace}/pods", pod_body("picky", nodeSelector=selector))
    pod = wait_for(lambda: phase(kube, namespace, "picky", "Succeeded"), timeout=30, what="picky Succeeded")
    assert pod["spec"]["nodeName"] == "node-2"
    assert pod["status"]["podIP"].startswith("127.")
    status = pod["status"]["containerStatuses"][0]
    assert status["state"]["terminated"]["exitCode"] == 0
    assert pod["status"]["startTime"]


def test_failing_container_fails_the_pod(kube, namespace, agent):
    agent()
    body = pod_body("failing")
    body["metadata"]["annotations"] = {"e2e.muster.dev/exit-code": "3", "e2e.muster.dev/run-seconds": "0.5"}
    kube.create(f"/api/v1/namespaces/{namespace}/pods", body)
    pod = wait_for(lambda: phase(kube, namespace, "failing", "Failed"), timeout=30, what="failing Failed")
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3


def test_barrier_holds_until_configmap_release_reaches_the_volume(kube, namespace, agent, tmp_path):
    agent()
    kube.create(f"/api/v1/namespaces/{namespace}/pods", barrier_pod("gated", attempt="1"))
    wait_for(lambda: init_running(kube, namespace, "gated"), timeout=30, what="barrier running")
    # A release of an earlier attempt reaches the volume at the next sync
    # (2 s + jitter) and must not let the pod through.
    kube.create(f"/api/v1/namespaces/{namespace}/configmaps",
                {"metadata": {"name": "group-scheduling"}, "data": {api.CONFIGMAP_KEY_STARTED: "0"}})
    time.sleep(5)
    assert init_running(kube, namespace, "gated"), "a stale release let the pod through"
    kube.patch(f"/api/v1/namespaces/{namespace}/configmaps/group-scheduling", {"data": {api.CONFIGMAP_KEY_STARTED: "1"}})
    pod = wait_for(lambda: phase(kube, namespace, "gated", "Succeeded"), timeout=30, what="gated Succeeded")
    init = pod["status"]["initContainerStatuses"][0]["state"]["terminated"]
    assert init["exitCode"] == 0
    events = [json.loads(line) for line in pathlib.Path(agent_events(tmp_path)).read_text().splitlines()]
    mine = [e for e in events if e["pod"] == f"{namespace}/gated"]
    order = [(e["container"], e["event"]) for e in mine]
    assert order[:3] == [(api.BARRIER_CONTAINER, "started"), (api.BARRIER_CONTAINER, "exited"),
                         ("main", "started")]


def agent_events(tmp_path):
    return tmp_path / "events.jsonl"


def push(ip, line):
    with socket.create_connection((ip, api.BARRIER_PORT), timeout=5) as conn:
        conn.sendall(line.encode())
        return conn.recv(64).decode()


def test_barrier_released_by_push_at_once(kube, namespace, agent):
    # A sync period of an hour: only the push can release it in time.
    agent("small.yaml", 3600)
    kube.create(f"/api/v1/namespaces/{namespace}/pods", barrier_pod("pushed", attempt="2"))
    pod = wait_for(lambda: init_running(kube, namespace, "pushed"), timeout=30, what="barrier running")
    ip = pod["status"]["podIP"]

    def listening():
        try:
            return push(ip, "MUSTER1 RELEASE 2 wrong-token-0123456789\n") == "ERR bad-token\n"
        except OSError:
            return False

    wait_for(listening, timeout=10, what="barrier listening on the pod IP")
    assert push(ip, f"MUSTER1 RELEASE 1 {TOKEN}\n") == "ERR stale-attempt\n"
    begun = time.monotonic()
    assert push(ip, f"MUSTER1 RELEASE 2 {TOKEN}\n") == "OK\n"
    wait_for(lambda: phase(kube, namespace, "pushed", "Running") or phase(kube, namespace, "pushed", "Succeeded"),
             timeout=10, what="main container running")
    assert time.monotonic() - begun < 5


def test_barrier_timeout_fails_pod_with_reason(kube, namespace, agent):
    agent()
    kube.create(f"/api/v1/namespaces/{namespace}/pods", barrier_pod("late", timeout="2"))
    pod = wait_for(lambda: phase(kube, namespace, "late", "Failed"), timeout=30, what="late Failed")
    terminated = pod["status"]["initContainerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 3
    assert "timed out after 2 s" in terminated["message"]
    assert "not every pod of the group started in time" in terminated["message"]


def test_deleted_pod_stops_its_barrier(kube, namespace, agent):
    proc = agent()
    kube.create(f"/api/v1/namespaces/{namespace}/pods", barrier_pod("doomed"))
    wait_for(lambda: init_running(kube, namespace, "doomed"), timeout=30, what="barrier running")
    kube.delete(f"/api/v1/namespaces/{namespace}/pods/doomed")

    wait_for(lambda: absent(kube, f"/api/v1/namespaces/{namespace}/pods/doomed"), timeout=20, what="pod deleted")
    wait_for(lambda: "event=pod-removed" in proc.output(), timeout=10, what="agent forgot the pod")


def test_slow_node_pool_gets_pods_only_when_ready(kube, namespace, agent):
    agent("slow-pool.yaml")
    wait_for(lambda: node_ready(kube, "fast-0"), what="fast pool Ready")
    wait_for(lambda: not node_ready(kube, "slow-0"), timeout=5, what="slow pool not Ready yet")
    kube.create(f"/api/v1/namespaces/{namespace}/pods", pod_body("waits", nodeSelector={"pool": "slow"}))
    time.sleep(2)
    assert not get_pod(kube, namespace, "waits")["spec"].get("nodeName")
    wait_for(lambda: node_ready(kube, "slow-0"), timeout=30, what="slow pool Ready")
    pod = wait_for(lambda: phase(kube, namespace, "waits", "Succeeded"), timeout=60, what="waits Succeeded")
    assert pod["spec"]["nodeName"].startswith("slow-")


def test_agents_of_clusters_side_by_side_hand_out_different_addresses(kube, kubeconfig, namespace, run_standin,
                                                                   tmp_path):
    """Two node agents for two clusters (two state dirs: here two copies of the
    kubeconfig, as two suites or a demo beside a test run would have) give
    their pods and nodes addresses of different blocks, so barriers of both
    can listen on IP:9443 at once. The two state dirs are chosen so that
    both derive the same block (1 pair in 120 does; CI met one): the second
    agent takes the next free one. Before, both handed out 127.18.0.2."""
    def derived(directory):
        real = os.path.realpath(directory)
        return int(hashlib.sha256(real.encode()).hexdigest(), 16) % 120
    left = tmp_path / "left"
    right = next(tmp_path / f"right-{i}" for i in range(100000)
                 if derived(tmp_path / f"right-{i}") == derived(left))
    shapes, pods = [], []
    for side, state_dir in (("left", left), ("right", right)):
        state_dir.mkdir()
        copy = state_dir / "admin.kubeconfig"
        copy.write_text(pathlib.Path(kubeconfig).read_text())
        shape = tmp_path / f"{side}.yaml"
        shape.write_text(f"groups:\n  - name: side-{side}\n    count: 1\n"
                         "    allocatable: {cpu: \"4\", memory: 8Gi, pods: \"10\"}\n")
        shapes.append(shape)
        run_standin("node_agent.py", "--kubeconfig", copy, "--shape", shape, "--work-dir",
                    state_dir / "agent", "--delete-nodes", "--max-run-seconds", 30)
        wait_for(lambda: node_ready(kube, f"side-{side}-0"), timeout=60, what=f"node side-{side}-0")
        name = f"pod-{side}"
        kube.create(f"/api/v1/namespaces/{namespace}/pods",
                    pod_body(name, nodeName=f"side-{side}-0", containers=[
                        {"name": "main", "image": "busybox", "command": ["sleep", "20"]}]))
        pods.append(name)
    running = [wait_for(lambda n=n: phase(kube, namespace, n, "Running"), timeout=60, what=f"{n} running")
               for n in pods]
    pod_ips = [p["status"]["podIP"] for p in running]
    host_ips = [p["status"]["hostIP"] for p in running]
    assert pod_ips[0] != pod_ips[1], pod_ips
    # Whole blocks differ, not just the next address.
    assert pod_ips[0].split(".")[1] != pod_ips[1].split(".")[1], pod_ips
    assert host_ips[0].split(".")[1] != host_ips[1].split(".")[1], host_ips


def test_a_lease_renewal_still_queued_is_not_queued_again(kubeconfig, tmp_path):
    """On a busy apiserver a round of lease renewals can outlast
    --lease-seconds. Rounds queued behind each other used to renew every
    lease later and later, until kube-controller-manager marked healthy fake
    nodes NotReady (the placement benchmark's pinned pods then waited for
    them). A node whose renewal is still queued or running is skipped, and
    the agent says how many were."""
    import node_agent

    args = node_agent.arguments(["--kubeconfig", str(kubeconfig), "--shape", str(SHAPES / "small.yaml"),
                                 "--work-dir", str(tmp_path / "agent"), "--lease-workers", "2"])
    agent = node_agent.Agent(args)
    release, lock, writes = threading.Event(), threading.Lock(), []

    class SlowLeases:
        """A lease PATCH that waits for the test: the apiserver is busy."""

        def patch(self, path, body, **_):
            with lock:
                writes.append(path.rsplit("/", 1)[-1])
            assert release.wait(30), "the test did not release the renewals"

    agent.kube = SlowLeases()
    try:
        for node in agent.nodes.values():
            node["created"] = True
        agent.renew_leases()
        agent.renew_leases()  # the first round is still queued and running
        wait_for(lambda: len(writes) == 2, timeout=10, what="two renewals running")
        release.set()
        # Drained: one task per worker, queued behind every renewal, that
        # waits for the others; all run together only once every renewal
        # queued before them has finished (a pool takes its queue in order).
        together = threading.Barrier(args.lease_workers)
        for done in [agent.leases.submit(together.wait, 60) for _ in range(args.lease_workers)]:
            done.result(timeout=120)
        assert sorted(writes) == sorted(agent.nodes), "one renewal per node, not two"
        agent.renew_leases()  # done: the next round renews every node again
        wait_for(lambda: len(writes) == 2 * len(agent.nodes), timeout=10, what="the next round")
    finally:
        release.set()
        agent.writer.shutdown(wait=True)
        agent.heartbeats.shutdown(wait=True)
        agent.leases.shutdown(wait=True)


def test_a_slow_apiserver_delays_each_lease_renewal_by_its_own_latency(kubeconfig, tmp_path, monkeypatch):
    """1,000 kubelets renew their Leases each on its own, at its own phase: an
    apiserver that takes 0.6 s a PATCH under load delays each renewal by
    0.6 s. The agent renewed them all at once through 16 threads, so 1,000
    renewals took 37 s, leases aged past kube-controller-manager's 40 s grace
    and healthy fake nodes went NotReady in the placement benchmark. Here
    200 nodes renew every 2 s against PATCHes of 0.5 s: each node's renewals
    must stay about 2 s apart (through 16 threads they were 6 s apart), and
    spread over the period rather than in one burst."""
    import node_agent

    period, latency, count = 2.0, 0.5, 200
    args = node_agent.arguments(["--kubeconfig", str(kubeconfig), "--shape", str(SHAPES / "small.yaml"),
                                 "--work-dir", str(tmp_path / "agent"), "--lease-seconds", str(period)])
    monkeypatch.setattr(node_agent, "start_watch", lambda *a, **k: None)  # no pods in this test
    agent = node_agent.Agent(args)
    # Nodes that exist already (created by an agent before this one): only
    # their leases are renewed during the test.
    agent.nodes = {f"lease-{i}": {"name": f"lease-{i}", "created": True, "appear_after": 1e9,
                                  "ready_after": 1e9} for i in range(count)}
    lock, starts = threading.Lock(), {}

    class SlowLeases:
        """Every PATCH takes `latency` seconds: a saturated apiserver."""

        def patch(self, path, body, **_):
            with lock:
                starts.setdefault(path.rsplit("/", 1)[-1], []).append(time.monotonic())
            time.sleep(latency)

    agent.kube = SlowLeases()
    runner = threading.Thread(target=agent.run, daemon=True)
    began = time.monotonic()
    runner.start()
    try:
        time.sleep(4.5 * period)
    finally:
        agent.stop.set()
        runner.join(30)
        agent.leases.shutdown(wait=True, cancel_futures=True)
        agent.heartbeats.shutdown(wait=True)
        agent.writer.shutdown(wait=True)
    assert not runner.is_alive(), "the agent's loop did not stop"
    with lock:
        renewed = {name: list(times) for name, times in starts.items()}
    assert sorted(renewed) == sorted(agent.nodes), "every node renews its lease"
    gaps = [b - a for times in renewed.values() for a, b in zip(times, times[1:])]
    assert min(len(times) for times in renewed.values()) >= 3, renewed
    # kube-controller-manager's grace is twice the agent's period in the benchmarks (40 s, 20 s).
    assert max(gaps) < 1.5 * period, f"renewals of a node {max(gaps):.2f} s apart, every {period} s wanted"
    first = sorted(times[0] - began for times in renewed.values())
    burst = max(sum(1 for t in first if s <= t < s + period / 4) for s in first)
    assert burst <= count / 2, f"{burst} of {count} first renewals within {period / 4} s: not spread"


def test_periodic_node_statuses_are_spread_over_the_period(kubeconfig, tmp_path, monkeypatch):
    """kubelets started at different times report their node status at
    different moments. The agent's nodes appear within seconds of each other,
    and each reported every --node-status-seconds after it appeared: 1,000
    reports (a GET and a PATCH each) came at once every 5 minutes and slowed
    whichever placement benchmark round they fell in. Each node now reports
    at its own phase of the period."""
    import node_agent

    period = 2.0
    args = node_agent.arguments(["--kubeconfig", str(kubeconfig), "--shape", str(SHAPES / "small.yaml"),
                                 "--work-dir", str(tmp_path / "agent"), "--node-status-seconds", str(period),
                                 "--lease-seconds", "100"])
    monkeypatch.setattr(node_agent, "start_watch", lambda *a, **k: None)  # no pods in this test
    agent = node_agent.Agent(args)
    lock, reports = threading.Lock(), {}

    class Apiserver:
        """Takes the agent's node writes and notes when each node reports."""

        def create(self, path, body):
            return body

        def get(self, path):
            return {"metadata": {"resourceVersion": "1"}, "spec": {"taints": []}}

        def patch(self, path, body, **_):
            if path.endswith("/status"):
                with lock:
                    reports.setdefault(path.split("/")[-2], []).append(time.monotonic())

    agent.kube = Apiserver()
    runner = threading.Thread(target=agent.run, daemon=True)
    runner.start()
    try:
        wait_for(lambda: len(reports) == len(agent.nodes) and all(len(t) >= 2 for t in reports.values()),
                 timeout=30, what="two reports of every node")
    finally:
        agent.stop.set()
        runner.join(30)
        for pool in (agent.leases, agent.heartbeats, agent.writer):
            pool.shutdown(wait=True, cancel_futures=True)
    with lock:
        first = sorted(times[0] for times in reports.values())
        gaps = [b - a for times in reports.values() for a, b in zip(times, times[1:])]
    assert first[-1] - first[0] >= period / 2, f"the first reports came within {first[-1] - first[0]:.2f} s"
    assert max(gaps) < 1.5 * period, f"a node's reports {max(gaps):.2f} s apart, every {period} s wanted"


def test_a_namespace_whose_pods_lost_their_node_is_deleted(kube, agent):
    """The node agent deletes its nodes on exit (--delete-nodes), as a node
    pool scaled down or a machine gone for good. The pods bound there, left
    with no kubelet to confirm their end, must not hold their namespace
    Terminating for ever: the cluster's pod garbage collector deletes them
    (up.sh runs kube-controller-manager's podgc), and the namespace goes.
    Before that, every test's namespace whose agent went first stayed, and the
    benchmarks after the suite ran on an apiserver carrying their pods."""
    name = new_namespace(kube, "e2e-orphans-")
    try:
        proc = agent()
        wait_for(lambda: all(node_ready(kube, f"node-{i}") for i in range(4)), what="nodes Ready")
        body = pod_body("stranded")
        body["metadata"]["annotations"] = {"e2e.muster.dev/run-seconds": "600"}
        kube.create(f"/api/v1/namespaces/{name}/pods", body)
        wait_for(lambda: phase(kube, name, "stranded", "Running"), timeout=30, what="stranded Running")
        proc.stop()
        wait_for(lambda: not any(node_ready(kube, f"node-{i}") is not None for i in range(4)), timeout=10,
                 what="the agent's nodes deleted")
    finally:
        kube.delete(f"/api/v1/namespaces/{name}")
    # podgc checks every 20 s and deletes a pod 40 s after its node went;
    # then the namespace controller comes back after at most the pod's grace
    # period (30 s). Twice that, for a busy machine.
    wait_for(lambda: absent(kube, f"/api/v1/namespaces/{name}"), timeout=180, interval=1,
             what=f"namespace {name} deleted")


def test_fake_nodes_left_by_an_agent_that_is_gone_are_deleted_at_start(kube, agent):
    """A node agent killed before it deleted its nodes (a CI run stopped,
    SIGKILL) leaves them in etcd, which a reused machine keeps: a later run
    found 1,000 NotReady nodes of the scale shape carrying its tests' topology
    labels. An agent starting deletes the fake nodes that are not its own and
    whose Lease is long expired; a fake node renewed a moment ago (another
    agent running) and a node that is not a fake one stay."""
    from node_agent import FAKE_NODE_LABEL, NODE_LEASES as LEASES

    hour_ago = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(time.time() - 3600))
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    fake = dict([FAKE_NODE_LABEL])
    made = {"leftover-stale": (fake, hour_ago),
            "leftover-renewed": (fake, now),
            "not-fake-stale": ({"pool": "other"}, hour_ago)}
    for name in made:
        kube.delete(f"/api/v1/nodes/{name}")
        kube.delete(f"{LEASES}/{name}")
        wait_for(lambda: absent(kube, f"/api/v1/nodes/{name}") and absent(kube, f"{LEASES}/{name}"),
                 what=f"a leftover {name} of this test gone")
    try:
        for name, (labels, renewed) in made.items():
            kube.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                          "metadata": {"name": name, "labels": {**labels, "e2e": "leftovers"}}})
            kube.create(LEASES, {"metadata": {"name": name},
                                 "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                                          "renewTime": renewed}})
        agent()
        wait_for(lambda: all(node_ready(kube, f"node-{i}") for i in range(4)), what="the agent's nodes Ready")
        left = {n["metadata"]["name"] for n in kube.get("/api/v1/nodes", labelSelector="e2e=leftovers")["items"]}
        assert left == {"leftover-renewed", "not-fake-stale"}, left
        assert absent(kube, f"{LEASES}/leftover-stale")
    finally:
        for name in made:
            kube.delete(f"/api/v1/nodes/{name}")
            kube.delete(f"{LEASES}/{name}")

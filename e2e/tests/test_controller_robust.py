"""Robustness of bin/muster-controller on the real control plane: crashes
(SIGKILL) at random moments, a JobSet restart through controller crashes, a
kube-apiserver restart, and garbage collection of the release ConfigMap.

The invariant under test is the one the release ConfigMap exists for: a
group's restart attempt is released exactly once, never before its last pod
has started, whatever dies when. A release is: the ConfigMap
<jobset>-group-scheduling written with data.started = "<attempt>" (the
release of record), then one `event=release` log line, the push to every
barrier and one GroupReleased Event (their order differs between builds; the
log line always follows the ConfigMap write). A controller killed between the
ConfigMap write and its log line leaves a release with no line; a restarted
controller reads the ConfigMap back (`event=released-read`) and must not
release again. So the tests watch the ConfigMap themselves (the time each
value first appears) and check that the one release line, if any, comes from
the controller lifetime that was alive when the ConfigMap took that value,
and that every lifetime started afterwards released nothing.

Pods run through the node agent (real barriers, --events for µs container
times) and the JobSet stand-in, as in test_controller.py; the JobSets are in
their post-injection form. Volumes sync every 5 s here, not hourly: a
controller killed after the ConfigMap write but before its push leaves the
barriers to the volume path, because a restarted controller that reads the
release back does not push it again (measured: every barrier then released
by the volume, 5-7 s later here, up to kubelet's 90 s in a real cluster).

1. test_controller_killed_at_random_moments_releases_once: 3 Jobs x 4 pods
   on three pools (now, ~5 s, ~10 s); SIGKILL before the pods start, while
   they start (random moment), while the second pool starts (after a random
   number of its barriers), and at the release (randomly: the moment the
   ConfigMap appears, or the moment the release line is logged), each time
   restarted after a random outage.
2. test_jobset_restart_through_controller_crashes_releases_each_attempt_once:
   a failing pod restarts the JobSet; SIGKILL as it restarts, while attempt
   1's first half waits at the stale "0" (the other half Pending on cordoned
   nodes), and at attempt 1's release.
3. test_apiserver_restart_mid_start_controller_survives_and_releases_once:
   e2e/cluster/restart-apiserver.sh while a third of the group waits at its
   barriers; the other two thirds, bound but held by a missing required
   ConfigMap volume, are let go just before the apiserver goes down and start
   during the outage or right after it. [alone]: without leader election the
   process lives through it. [leader-elected] (builds with --leader-elect): a
   leader that cannot renew its Lease gives up (exit 1, leadership-lost) and
   a replacement is started, as a Deployment would. Either way one release.
   (Pools that *appear* during the outage are avoided on purpose: the node
   agent's registration then races its own Lease renewal, can leave the
   not-ready taint on, and the scheduler may not place the pods for a
   minute.)
4. test_configmap_garbage_collected_with_its_jobset: the ConfigMap's
   ownerReference, and its deletion by the garbage collector with the JobSet.

Fault moments are drawn from a seeded random generator; the seed is printed
at the start of each test (shown with a failure) and MUSTER_ROBUST_SEED=N
replays it.
"""

import json
import os
import random
import re
import subprocess
import threading
import time
import uuid

import pytest

from conftest import (BARRIER_BINARY, CONTROLLER, ROOT, Controller, barrier_init_container,
                      group_scheduling_volume, wait_for)
from kube import ApiError, Kube, start_watch
import muster_api as api  # noqa: E402

JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{}/jobsets"
# A token of this module's own: concurrent e2e runs on one host share the
# node agent's loopback pod IPs, so a push meant for another run's barrier
# can reach one of ours (and is refused for its token).
TOKEN = "e2e-robust-" + uuid.uuid4().hex
# For the same reason the barriers listen, and the controller pushes, on a
# port of this run's own instead of 9443: a barrier that cannot bind its pod
# IP's port (another run's barrier holds it) is left to the volume, and a
# push to 9443 could reach another run's barrier.
PUSH_PORT = random.SystemRandom().randrange(20000, 30000)
BARRIER = api.BARRIER_CONTAINER
ATTEMPT_LABEL = api.JOBSET_LABEL_RESTART_ATTEMPT
SYNC_PERIOD = 5  # seconds, + up to 50 % jitter: the volume path's worst case is 7.5 s

pytestmark = pytest.mark.skipif(not CONTROLLER.exists(), reason=f"{CONTROLLER} is not built (make)")

# Three pools: `fast` exists at once, `slow` appears (Ready) 5 s after the
# agent starts, `later` 10 s after. Nodes appear already Ready (see
# controller.md: a node that exists not-Ready can get a pod the agent then
# ignores until its next sync).
THREE_POOLS = """groups:
  - name: fast
    count: 2
    allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
    labels: {pool: fast}
  - name: slow
    count: 2
    allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
    labels: {pool: slow}
    appearAfterSeconds: 5
    readyAfterSeconds: 5
  - name: later
    count: 2
    allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
    labels: {pool: later}
    appearAfterSeconds: 10
    readyAfterSeconds: 10
"""
# Both pools there from the start.
TWO_POOLS = """groups:
  - name: fast
    count: 2
    allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
    labels: {pool: fast}
  - name: slow
    count: 2
    allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
    labels: {pool: slow}
"""


# ------------------------------------------------------------------ helpers

@pytest.fixture
def rng(request):
    seed = int(os.environ.get("MUSTER_ROBUST_SEED") or random.SystemRandom().randrange(2 ** 32))
    print(f"random seed of {request.node.name}: {seed} (replay with MUSTER_ROBUST_SEED={seed})", flush=True)
    generator = random.Random(seed)
    generator.seed_value = seed
    return generator


def barrier_on_push_port():
    barrier = barrier_init_container(TOKEN, "120")
    barrier["args"] = [arg.replace(f"$(POD_IP):{api.BARRIER_PORT}", f"$(POD_IP):{PUSH_PORT}") for arg in barrier["args"]]
    assert f"$(POD_IP):{PUSH_PORT}" in barrier["args"], barrier["args"]
    return barrier


_HELP = {}


def controller_supports(flag):
    """Whether the controller build under test lists `flag` in its --help."""
    if "text" not in _HELP:
        try:
            _HELP["text"] = subprocess.run([str(CONTROLLER), "--help"], stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            _HELP["text"] = ""
    return re.search(rf"(^|\s){re.escape(flag)}(\s|=|$)", _HELP["text"], re.M) is not None


def jobset_body(name, replicated_jobs, max_restarts=0, gated=()):
    """replicated_jobs: (name, pool, replicas, pods per Job, pod annotations).
    The pods of the replicated jobs named in `gated` also need the ConfigMap
    <name>-gate (a required volume): the node agent, like kubelet, starts them
    only at its first sync after the ConfigMap exists."""
    def pod_template(job, pool, annotations):
        volumes = [group_scheduling_volume(f"{name}{api.CONFIGMAP_SUFFIX}")]
        if job in gated:
            volumes.append({"name": "gate", "configMap": {"name": f"{name}-gate"}})
        return {
            "metadata": {"labels": {api.LABEL_GROUP_SCHEDULING: "true"},
                         "annotations": dict(annotations or {})},
            "spec": {
                "restartPolicy": "Never",
                "nodeSelector": {"pool": pool},
                "initContainers": [barrier_on_push_port()],
                "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3"]}],
                "volumes": volumes,
            },
        }

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "annotations": {
            api.ANNOTATION_BARRIER_TOKEN: TOKEN, api.ANNOTATION_GROUP_TIMEOUT: "120"}},
        "spec": {
            "groupSchedulingConfig": {"timeoutAfterSeconds": 120},
            "failurePolicy": {"maxRestarts": max_restarts},
            "replicatedJobs": [
                {"name": job, "replicas": replicas, "template": {"spec": {
                    "parallelism": pods, "completions": pods, "backoffLimit": 0,
                    "template": pod_template(job, pool, annotations)}}}
                for job, pool, replicas, pods, annotations in replicated_jobs],
        },
    }


# 3 Jobs x 4 pods, one Job per pool: 4 pods start at once, 4 about 5 s
# later, the last 4 about 10 s later.
TWELVE_PODS = [("fast", "fast", 1, 4, None), ("slow", "slow", 1, 4, None), ("later", "later", 1, 4, None)]


class Events:
    """The node agent's --events JSONL, for this test's namespace."""

    def __init__(self, path, namespace):
        self.path = path
        self.namespace = namespace

    def read(self):
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line being written
            if event["pod"].startswith(self.namespace + "/"):
                out.append(event)
        return out

    def times(self, container, what, uids=None, prefix=None):
        """uid -> time of the first `what` (started/exited) of `container`."""
        out = {}
        for e in self.read():
            if e["container"] != container or e["event"] != what:
                continue
            if uids is not None and e["uid"] not in uids:
                continue
            if prefix is not None and not e["pod"].startswith(f"{self.namespace}/{prefix}"):
                continue
            if what == "exited" and e.get("code") != 0:
                continue
            out.setdefault(e["uid"], e["t"])
        return out


class PodWatch:
    """uid -> restart attempt (and name, node) of every pod of the namespace ever seen."""

    def __init__(self, kube, namespace):
        self.attempts = {}
        self.names = {}
        self.nodes = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        start_watch(kube, f"/api/v1/namespaces/{namespace}/pods", self.on_event, self.stop,
                    name=f"test pods {namespace}")

    def on_event(self, _type, pod):
        meta = pod["metadata"]
        with self.lock:
            self.attempts[meta["uid"]] = (meta.get("labels") or {}).get(ATTEMPT_LABEL)
            self.names[meta["uid"]] = meta["name"]
            self.nodes[meta["uid"]] = pod["spec"].get("nodeName")

    def of_attempt(self, attempt):
        with self.lock:
            return {uid for uid, value in self.attempts.items() if value == str(attempt)}


class ConfigMapWatch:
    """Watches <jobset>-group-scheduling and records every distinct version:
    (time, type, data.started, resourceVersion). arm(value, callback) runs
    callback in the watch thread the moment data.started becomes value."""

    def __init__(self, kube, namespace, jobset):
        self.name = f"{jobset}{api.CONFIGMAP_SUFFIX}"
        self.history = []
        self.seen = set()
        self.lock = threading.Lock()
        self.trigger = None
        self.listed = threading.Event()
        self.stop = threading.Event()
        start_watch(kube, f"/api/v1/namespaces/{namespace}/configmaps", self.on_event, self.stop,
                    query={"fieldSelector": f"metadata.name={self.name}"}, on_relist=self.on_relist,
                    name=f"test configmap {namespace}")
        wait_for(self.listed.is_set, timeout=10, what=f"the test's watch on ConfigMap {self.name}")

    def on_relist(self, items):
        for item in items:
            self.on_event("ADDED", item)
        self.listed.set()

    def on_event(self, event_type, obj):
        now = time.time()
        started = None if event_type == "DELETED" else (obj.get("data") or {}).get(api.CONFIGMAP_KEY_STARTED)
        key = (event_type, obj["metadata"].get("resourceVersion"))
        with self.lock:
            if key in self.seen:
                return  # the same version again after a re-list
            self.seen.add(key)
            self.history.append((now, event_type, started, key[1]))
            if self.trigger and started == self.trigger[0]:
                callback, self.trigger = self.trigger[1], None
                callback()

    def current(self):
        with self.lock:
            return self.history[-1][2] if self.history else None

    def arm(self, value, callback):
        """False (and nothing armed) if data.started is already value."""
        with self.lock:
            if self.history and self.history[-1][2] == value:
                return False
            self.trigger = (value, callback)
            return True

    def disarm(self):
        with self.lock:
            self.trigger = None

    def first_time(self, value):
        with self.lock:
            return next((t for t, _, started, _ in self.history if started == value), None)

    def values(self):
        """The successive values of data.started (None: absent/deleted), no repeats."""
        out = []
        with self.lock:
            for _, _, started, _ in self.history:
                if not out or out[-1] != started:
                    out.append(started)
        return out


class Lifetimes:
    """Every muster-controller process of a test, in order, with a log of the
    faults injected (printed at teardown with every controller's output)."""

    def __init__(self, kubeconfig, namespace, tmp_path, rng=None):
        self.kubeconfig, self.namespace, self.tmp_path = kubeconfig, namespace, tmp_path
        self.extra = ["--push-port", str(PUSH_PORT)]
        self.all = []
        self.notes = []
        self.t0 = time.time()
        self.lock = threading.Lock()
        self.seed = getattr(rng, "seed_value", None)

    def note(self, text):
        line = f"t+{time.time() - self.t0:6.2f}s {text}"
        self.notes.append(line)
        print(line, flush=True)

    def start(self):
        with self.lock:
            controller = Controller(self.kubeconfig, self.namespace,
                                    self.tmp_path / f"controller.{len(self.all)}.log", extra=self.extra,
                                    fast_lease=True)
            self.all.append(controller)
        self.note(f"controller #{len(self.all) - 1} started (pid {controller.process.pid})")
        return controller

    @property
    def current(self):
        return self.all[-1]

    def kill(self, why):
        with self.lock:
            controller = self.all[-1]
            alive = controller.alive()
            controller.kill()
        self.note(f"controller #{len(self.all) - 1} SIGKILLed {why}" if alive else
                  f"controller #{len(self.all) - 1} had already exited ({controller.process.returncode}) {why}")

    def release_lines(self, attempt):
        return [(i, line) for i, c in enumerate(self.all) for line in c.releases()
                if re.search(rf" attempt={attempt}( |$)", line)]

    def describe(self):
        seed = f"seed {self.seed}; " if self.seed is not None else ""
        return seed + "faults:\n  " + "\n  ".join(self.notes)

    def stop(self):
        for controller in self.all:
            controller.stop()

    def dump(self):
        for i, controller in enumerate(self.all):
            print(f"---- controller #{i} ({controller.log_path})")
            print(controller.output())


def assert_released_once(lifetimes, configmaps, attempt):
    """The release of `attempt` happened exactly once over all controller
    lifetimes (see the module docstring); returns the release line or None."""
    context = lifetimes.describe()
    t_release = configmaps.first_time(str(attempt))
    assert t_release is not None, f"the ConfigMap never said started={attempt}\n{context}"
    lines = lifetimes.release_lines(attempt)
    assert len(lines) <= 1, f"attempt {attempt} released {len(lines)} times:\n" + \
        "\n".join(f"#{i}: {line}" for i, line in lines) + f"\n{context}"
    # Which lifetimes could have written it: alive when the test saw the
    # value (a lifetime killed a moment before the watch delivered it too).
    writers = [i for i, c in enumerate(lifetimes.all)
               if c.started_at <= t_release and (c.killed_at is None or c.killed_at >= t_release - 0.5)]
    assert writers, f"no controller was alive when started={attempt} appeared\n{context}"
    if lines:
        i, line = lines[0]
        assert i in writers, (
            f"controller #{i} logged the release of attempt {attempt} but started after the ConfigMap "
            f"already said {attempt} (at t+{t_release - lifetimes.t0:.2f}s): a second release\n{line}\n{context}")
        return line
    killed = [i for i in writers if lifetimes.all[i].killed_at is not None]
    assert killed, (f"the ConfigMap says {attempt} but no controller logged its release, and none was killed "
                    f"around it\n{context}")
    return None


def assert_later_lifetimes_read_it_back(lifetimes, configmaps, attempt, until=None):
    """Every lifetime started after the ConfigMap said `attempt` (and before
    `until`) that lived long enough logged released-read of it, and none logged
    a release of it (the release-line count covers that too)."""
    t_release = configmaps.first_time(str(attempt))
    for i, controller in enumerate(lifetimes.all):
        if controller.started_at <= t_release or (until is not None and controller.started_at >= until):
            continue
        output = controller.output()
        assert not [line for line in controller.releases() if f" attempt={attempt} " in line], \
            f"controller #{i} released attempt {attempt} again:\n{output}\n{lifetimes.describe()}"
        if controller.killed_at is None:
            assert re.search(rf"event=released-read .*attempt={attempt}\b", output), \
                f"controller #{i} never read attempt {attempt} back:\n{output}\n{lifetimes.describe()}"


def released_events(kube, namespace, jobset, attempt):
    """GroupReleased Events of the JobSet for `attempt`, listed as kubectl does."""
    items, _ = kube.list(f"/api/v1/namespaces/{namespace}/events",
                         fieldSelector=f"involvedObject.name={jobset},reason=GroupReleased")
    return [e for e in items if e.get("message", "").startswith(f"Released restart attempt {attempt}:")]


def get_configmap(kube, namespace, jobset):
    try:
        return kube.get(f"/api/v1/namespaces/{namespace}/configmaps/{jobset}{api.CONFIGMAP_SUFFIX}")
    except ApiError as error:
        if error.status == 404:
            return None
        raise


def barrier_logs(agent_dir, uids):
    """uid -> the barrier's own log (while the agent still has the pod)."""
    out = {}
    for uid in uids:
        path = agent_dir / "pods" / uid / "containers" / BARRIER / "log"
        try:
            out[uid] = path.read_text()
        except OSError:
            pass
    return out


def assert_gang_start(events, uids, context, what="the group"):
    """Every barrier of `uids` was released, none before the last of them started."""
    barrier_start = events.times(BARRIER, "started", uids)
    barrier_exit = events.times(BARRIER, "exited", uids)
    main_start = events.times("main", "started", uids)
    assert set(barrier_start) == set(uids), f"barriers never started: {set(uids) - set(barrier_start)}\n{context}"
    assert set(barrier_exit) == set(uids), f"barriers never released: {set(uids) - set(barrier_exit)}\n{context}"
    last_start = max(barrier_start.values())
    early = {uid: round(last_start - t, 3) for uid, t in barrier_exit.items() if t < last_start}
    assert not early, f"{what}: barriers released before the last pod started (s early): {early}\n{context}"
    early = {uid: round(last_start - t, 3) for uid, t in main_start.items() if t < last_start}
    assert not early, f"{what}: main containers started before the last pod did (s early): {early}\n{context}"
    return barrier_start, barrier_exit, main_start


@pytest.fixture
def harness(run_standin, kube, kubeconfig, namespace, tmp_path, request):
    """start(shape_text) runs the node agent (volume sync every 5 s, --events)
    and the JobSet stand-in for this namespace; yields (start, lifetimes)."""
    lifetimes = Lifetimes(kubeconfig, namespace, tmp_path, request.getfixturevalue("rng")
                          if "rng" in request.fixturenames else None)
    state = {}

    def start(shape_text):
        shape = tmp_path / "shape.yaml"
        shape.write_text(shape_text)
        agent_dir = tmp_path / "agent"
        run_standin("node_agent.py", "--shape", shape, "--work-dir", agent_dir, "--barrier", BARRIER_BINARY,
                    "--sync-period", SYNC_PERIOD, "--events", tmp_path / "events.jsonl", "--delete-nodes",
                    "--max-run-seconds", 30)
        run_standin("jobset_controller.py", "--namespace", namespace)
        lifetimes.t0 = time.time()
        state["pods"] = PodWatch(kube, namespace)
        return Events(tmp_path / "events.jsonl", namespace), agent_dir, state["pods"]

    yield start, lifetimes
    lifetimes.stop()
    if "pods" in state:
        state["pods"].stop.set()
    lifetimes.dump()


def fast_configmap_kill(lifetimes):
    fired = threading.Event()

    def callback():
        lifetimes.kill("the moment the release ConfigMap appeared (before its push could finish)")
        fired.set()
    return fired, callback


# ------------------------------------------------------------------- tests

def test_controller_killed_at_random_moments_releases_once(kube, namespace, harness, rng):
    start, lifetimes = harness
    events, agent_dir, pods = start(THREE_POOLS)
    name = "crashy"
    configmaps = ConfigMapWatch(kube, namespace, name)
    try:
        lifetimes.start()
        kube.create(JOBSETS.format(namespace), jobset_body(name, TWELVE_PODS))
        jobset = kube.get(JOBSETS.format(namespace) + f"/{name}")
        lifetimes.note("JobSet created (3 Jobs x 4 pods: fast now, slow at ~5 s, later at ~10 s)")

        def started(prefix=None):
            return len(events.times(BARRIER, "started", prefix=f"{name}-{prefix}" if prefix else None))

        def down_then_restart(limit):
            downtime = rng.uniform(0.0, limit)
            lifetimes.note(f"controller down for {downtime:.2f} s")
            time.sleep(downtime)  # a random outage is the fault itself, not a wait for something
            return lifetimes.start()

        # 1. Before the pods start (they do about 0.5 s after the create).
        time.sleep(rng.uniform(0.0, 0.25))  # a random moment right after the create
        lifetimes.kill(f"before the pods start ({started()} of 12 barriers started, "
                       f"ConfigMap {configmaps.current()!r})")
        down_then_restart(1.0)

        # 2. While the fast pool's pods start and wait: once the new
        # controller has its picture of the group, at a random moment.
        current = lifetimes.current
        wait_for(lambda: "event=group-state" in current.output(), timeout=15, interval=0.02,
                 what=f"the restarted controller tracking the JobSet\n{current.output()}")
        time.sleep(rng.uniform(0.0, 2.0))  # the random moment of the crash
        lifetimes.kill(f"while the pods start ({started()} of 12 barriers started)")
        down_then_restart(1.5)

        # 3. While the slow pool's pods start (the later pool still absent),
        # once the new controller has its picture of the group.
        current = lifetimes.current
        wait_for(lambda: "event=group-state" in current.output(), timeout=15, interval=0.02,
                 what=f"the restarted controller tracking the JobSet\n{current.output()}")
        k = rng.randint(1, 4)
        wait_for(lambda: started("slow") >= k, timeout=30, interval=0.02,
                 what=f"{k} slow barriers started\n{lifetimes.describe()}")
        lifetimes.kill(f"after {started()} of 12 barriers started (aimed at {k} slow), "
                       f"ConfigMap {configmaps.current()!r}")
        # 4. Right at the release, one of two ways (random): from the
        # ConfigMap watch the moment the release appears, before the push can
        # finish; or the moment the release line is logged (before or after
        # the push and the GroupReleased Event, depending on the build).
        at_configmap = rng.random() < 0.5
        if at_configmap:
            fired, callback = fast_configmap_kill(lifetimes)
            armed = configmaps.arm("0", callback)
            assert armed, f"released while the controller was down after kill 3\n{lifetimes.describe()}"
            down_then_restart(1.5)
            wait_for(fired.is_set, timeout=40, interval=0.02,
                     what=f"the release ConfigMap (to kill the controller at it)\n{lifetimes.describe()}")
        else:
            assert configmaps.current() is None, f"released while the controller was down after kill 3\n" \
                                                 f"{lifetimes.describe()}"
            current = down_then_restart(1.5)
            wait_for(lambda: " event=release " in current.output(), timeout=40, interval=0.005,
                     what=f"the release line (to kill the controller at it)\n{lifetimes.describe()}")
            lifetimes.kill("the moment its release line was logged")
        released = started()
        lifetimes.note(f"at the kill: {released} of 12 barriers started, "
                       f"{len(events.times(BARRIER, 'exited'))} released")
        assert released == 12, f"released with {released} of 12 started\n{lifetimes.describe()}"
        down_then_restart(1.0)

        # Every barrier released (by push, or by the volume when the push was
        # cut short), none before the last pod started.
        uids = wait_for(lambda: (lambda u: u if len(u) == 12 else None)(pods.of_attempt(0)),
                        timeout=10, what="the 12 pods of attempt 0")
        wait_for(lambda: len(events.times("main", "started", uids)) == 12, timeout=3 * SYNC_PERIOD, interval=0.2,
                 what=f"all 12 main containers started\n{lifetimes.describe()}")
        assert_gang_start(events, uids, lifetimes.describe())
        logs = barrier_logs(agent_dir, uids)
        via = sorted(re.search(r"event=released via=(\w+)", text).group(1) for text in logs.values()
                     if "event=released" in text)
        lifetimes.note(f"barriers released via: {via} (of {len(logs)} logs read)")

        # The ConfigMap: attempt 0, written once, owned by the JobSet.
        configmap = get_configmap(kube, namespace, name)
        assert configmap["data"][api.CONFIGMAP_KEY_STARTED] == "0", configmap
        assert configmaps.values() == ["0"], (configmaps.history, lifetimes.describe())
        assert [(o["kind"], o["uid"], o.get("controller")) for o in configmap["metadata"]["ownerReferences"]] \
            == [("JobSet", jobset["metadata"]["uid"], True)], configmap["metadata"]

        # Exactly one release of attempt 0 over every lifetime; the last
        # controller read it back and settled.
        final = lifetimes.current
        wait_for(lambda: "action=released" in final.output(), timeout=10,
                 what=f"the last controller settled on released\n{final.output()}")
        assert_released_once(lifetimes, configmaps, 0)
        assert_later_lifetimes_read_it_back(lifetimes, configmaps, 0)
        assert final.alive(), final.output()
        assert len(released_events(kube, namespace, name, 0)) <= 1, released_events(kube, namespace, name, 0)
        assert all(c.alive() or c.killed_at for c in lifetimes.all)
    finally:
        configmaps.stop.set()


def cordon(kube, nodes, unschedulable, ok=(200,)):
    for node in nodes:
        kube.patch(f"/api/v1/nodes/{node}", {"spec": {"unschedulable": unschedulable}}, ok=ok)


def test_jobset_restart_through_controller_crashes_releases_each_attempt_once(kube, namespace, harness, rng):
    start, lifetimes = harness
    events, agent_dir, pods = start(TWO_POOLS)
    name = "restarts"
    slow_nodes = ["slow-0", "slow-1"]
    configmaps = ConfigMapWatch(kube, namespace, name)
    # Index 0 of each `fast` Job exits 1 8 s after its release: the JobSet
    # restarts once (maxRestarts 1); attempt 1 fails the same way and the
    # JobSet fails for good, deleting its pods. 8 s: longer than a volume
    # sync takes (7.5 s at most), so that barriers left to the volume by a
    # cut push are released before their pods go.
    failing = {"e2e.muster.dev/exit-code": "1", "e2e.muster.dev/fail-completion-index": "0",
               "e2e.muster.dev/run-seconds": "8"}
    try:
        lifetimes.start()
        kube.create(JOBSETS.format(namespace), jobset_body(
            name, [("fast", "fast", 2, 1, failing), ("slow", "slow", 2, 1, None)], max_restarts=1))
        lifetimes.note("JobSet created (fast 2x1 failing index 0, slow 2x1, maxRestarts 1)")
        wait_for(lambda: configmaps.current() == "0", timeout=30, interval=0.05,
                 what=f"attempt 0 released\n{lifetimes.describe()}")
        # Attempt 1's slow pods will stay Pending until the slow nodes are
        # uncordoned: attempt 1 starts half now, half later, like attempt 0.
        cordon(kube, slow_nodes, True)
        lifetimes.note("attempt 0 released; slow nodes cordoned")

        def restarts():
            return int(kube.get(JOBSETS.format(namespace) + f"/{name}").get("status", {}).get("restarts") or 0)

        def down_then_restart(limit):
            downtime = rng.uniform(0.0, limit)
            lifetimes.note(f"controller down for {downtime:.2f} s")
            time.sleep(downtime)  # a random outage is the fault itself, not a wait for something
            return lifetimes.start()

        def attempt_one_started():
            return len(events.times(BARRIER, "started", pods.of_attempt(1)))

        # 1. As the JobSet restarts.
        wait_for(lambda: restarts() >= 1, timeout=30, interval=0.02,
                 what=f"the JobSet's restart (status.restarts 1)\n{lifetimes.describe()}")
        lifetimes.kill(f"as the JobSet restarted ({len(pods.of_attempt(1))} attempt-1 pods, "
                       f"ConfigMap {configmaps.current()!r})")
        current = down_then_restart(1.0)

        # 2. While attempt 1's fast pods wait at the stale release "0" and its
        # slow pods are Pending: at a random moment once the new controller
        # has its picture of the group.
        wait_for(lambda: attempt_one_started() >= 2 and "action=wait attempt=1" in current.output(), timeout=30,
                 interval=0.02, what=f"attempt 1's fast pods started, the controller waiting\n"
                                     f"{current.output()}\n{lifetimes.describe()}")
        time.sleep(rng.uniform(0.0, 1.5))  # the random moment of the crash
        lifetimes.kill(f"after {attempt_one_started()} of 4 attempt-1 barriers started, "
                       f"ConfigMap {configmaps.current()!r}")
        current = down_then_restart(1.0)

        # 3. Right at attempt 1's release, from the ConfigMap watch.
        fired, callback = fast_configmap_kill(lifetimes)
        assert configmaps.arm("1", callback), f"attempt 1 released too early\n{lifetimes.describe()}"
        wait_for(lambda: "event=group-state" in current.output(), timeout=15, interval=0.02,
                 what=f"the restarted controller tracking the JobSet\n{current.output()}")
        cordon(kube, slow_nodes, False)
        lifetimes.note("slow nodes uncordoned")
        wait_for(fired.is_set, timeout=40, interval=0.02,
                 what=f"attempt 1's release ConfigMap (to kill the controller at it)\n{lifetimes.describe()}")
        uids = pods.of_attempt(1)
        assert len(uids) == 4, pods.attempts
        lifetimes.note(f"at the kill: {attempt_one_started()} of 4 attempt-1 barriers started, "
                       f"{len(events.times(BARRIER, 'exited', uids))} released")
        down_then_restart(1.0)

        # Every attempt-1 barrier released; each one's log read as it exits
        # (the JobSet fails and its pods go a second later).
        logs = {}

        def all_released():
            for uid in events.times(BARRIER, "exited", uids):
                if uid not in logs:
                    logs.update(barrier_logs(agent_dir, [uid]))
            return len(logs) == 4

        wait_for(all_released, timeout=3 * SYNC_PERIOD, interval=0.05,
                 what=f"all 4 attempt-1 barriers released (logs read: {len(logs)})\n{lifetimes.describe()}")
        wait_for(lambda: len(events.times("main", "started", uids)) == 4, timeout=10, interval=0.1,
                 what=f"attempt 1's main containers started\n{lifetimes.describe()}")

        # Attempt 1's pods were not released by attempt 0's ConfigMap: none
        # before its own last pod started; each saw the stale "0" at its start
        # and was released for attempt 1.
        assert_gang_start(events, uids, lifetimes.describe(), "attempt 1")
        summary = []
        for uid, text in logs.items():
            released = re.search(r"event=released via=(\w+) attempt=(\d+) released_attempt=(\d+)", text)
            assert released and released.group(2) == "1" and released.group(3) == "1", \
                f"pod {pods.names.get(uid)}: {text}"
            assert "verdict=stale released_attempt=0 attempt=1" in text, f"pod {pods.names.get(uid)}: {text}"
            summary.append(f"{pods.names.get(uid)} via {released.group(1)}")
        lifetimes.note("attempt-1 barriers (each saw the stale 0 first): " + ", ".join(sorted(summary)))
        # Attempt 0's pods were all started before its release too.
        assert_gang_start(events, pods.of_attempt(0), lifetimes.describe(), "attempt 0")

        # Each attempt released exactly once; the ConfigMap went 0 -> 1 only.
        assert configmaps.values() == ["0", "1"], (configmaps.history, lifetimes.describe())
        final = lifetimes.current
        wait_for(lambda: re.search(r"action=released attempt=1\b", final.output()), timeout=10,
                 what=f"the last controller settled on attempt 1 released\n{final.output()}")
        line0 = assert_released_once(lifetimes, configmaps, 0)
        assert line0 and "started=4" in line0, (line0, lifetimes.describe())
        assert_released_once(lifetimes, configmaps, 1)
        assert_later_lifetimes_read_it_back(lifetimes, configmaps, 0, until=configmaps.first_time("1"))
        assert_later_lifetimes_read_it_back(lifetimes, configmaps, 1)
        for attempt in (0, 1):
            found = released_events(kube, namespace, name, attempt)
            assert len(found) <= 1, (attempt, found)
        assert final.alive(), final.output()
    finally:
        configmaps.stop.set()
        cordon(kube, slow_nodes, False, ok=(200, 404))


def cluster_dir(kubeconfig):
    """The state dir of a cluster started by up.sh (its kubeconfig lives in it)."""
    directory = os.path.dirname(os.path.abspath(kubeconfig))
    return directory if os.path.exists(os.path.join(directory, "kube-apiserver.pid")) else None


def apiserver_ready(kube):
    try:
        return kube.request("GET", "/readyz", timeout=2) is not None
    except Exception:  # noqa: BLE001 - down, starting, or not ready
        return False


@pytest.mark.parametrize("leader_elect", [False, True], ids=["alone", "leader-elected"])
def test_apiserver_restart_mid_start_controller_survives_and_releases_once(kube, kubeconfig, namespace,
                                                                           harness, tmp_path, leader_elect):
    """alone: --leader-elect false (when the build has the flag): the one
    process must live through the outage, its watches resuming. leader-elected:
    the Lease cannot be renewed while the apiserver is down, so the leader may
    give up (exit 1, leadership-lost) as client-go's leader election does; the
    test then starts a replacement, as its Deployment would."""
    state_dir = cluster_dir(kubeconfig)
    if state_dir is None:
        pytest.skip(f"{kubeconfig} is not in a state dir of e2e/cluster/up.sh: cannot restart its apiserver")
    if leader_elect and not controller_supports("--leader-elect"):
        pytest.skip(f"{CONTROLLER} has no leader election")
    env = dict(os.environ, MUSTER_CLUSTER_DIR=state_dir)
    start, lifetimes = harness
    if controller_supports("--leader-elect"):
        lifetimes.extra += ["--leader-elect", "true" if leader_elect else "false"]
    events, agent_dir, pods = start(TWO_POOLS)
    name = "apirestart"
    configmaps = ConfigMapWatch(kube, namespace, name)
    others = {component: (pathlib_read(state_dir, f"{component}.pid"))
              for component in ("etcd", "kube-scheduler", "kube-controller-manager")}
    try:
        controller = lifetimes.start()
        # 4 pods start at once; 8 are bound but held by a missing required
        # ConfigMap volume, created just before the apiserver goes down.
        kube.create(JOBSETS.format(namespace), jobset_body(
            name, [("fast", "fast", 1, 4, None), ("gated", "slow", 2, 4, None)], gated=("gated",)))
        lifetimes.note("JobSet created (4 pods, and 2 Jobs x 4 pods held by the missing ConfigMap gate)")

        def waiting():
            uids = pods.of_attempt(0)
            bound = [uid for uid in uids if pods.nodes.get(uid)]
            started = events.times(BARRIER, "started", uids)
            return len(uids) == 12 and len(bound) == 12 and len(started) == 4 \
                and "event=group-state" in controller.output()

        wait_for(waiting, timeout=30, interval=0.05,
                 what=f"12 pods bound, 4 barriers started, the controller tracking them\n{controller.output()}")
        assert configmaps.current() is None
        # Taken before the create: the node agent may see the gate and start
        # a held pod before this process runs again after the create returns
        # (it did so once, on a loaded machine, 7 of 8 counted "after").
        gate_opened = time.time()
        kube.create(f"/api/v1/namespaces/{namespace}/configmaps",
                    {"metadata": {"name": f"{name}-gate"}, "data": {"open": "yes"}})
        lifetimes.note("gate ConfigMap created (the 8 held pods start at their next sync, within 7.5 s); "
                       "restarting kube-apiserver (e2e/cluster/restart-apiserver.sh)")
        restarted = subprocess.run(["bash", str(ROOT / "e2e" / "cluster" / "restart-apiserver.sh")], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=90)
        restart_done = time.time()
        lifetimes.note("restart-apiserver.sh: " + restarted.stdout.strip().replace("\n", "\n    "))
        assert restarted.returncode == 0, restarted.stdout
        if not leader_elect:
            assert controller.alive(), f"the controller died with the apiserver:\n{controller.output()}"
        elif not controller.alive():
            # It must have given up its leadership cleanly, not crashed.
            assert controller.process.returncode == 1 and "event=leadership-lost" in controller.output(), \
                f"exit {controller.process.returncode}:\n{controller.output()}"
            lifetimes.note("controller #0 exited 1 (leadership-lost) during the outage; starting a replacement")
            controller = lifetimes.start()

        # The held pods start during or right after the outage; one release.
        wait_for(lambda: configmaps.current() == "0", timeout=40, interval=0.05,
                 what=f"the release after the apiserver restart\n{lifetimes.describe()}\n{controller.output()}")
        uids = pods.of_attempt(0)
        wait_for(lambda: len(events.times("main", "started", uids)) == 12, timeout=3 * SYNC_PERIOD, interval=0.2,
                 what=f"all 12 main containers started\n{lifetimes.describe()}")
        barrier_start, _, _ = assert_gang_start(events, uids, lifetimes.describe())
        after = [t for t in barrier_start.values() if t > gate_opened]
        assert len(after) == 8, f"{len(after)} of 12 pods started after the gate opened, not 8\n" \
                                f"{lifetimes.describe()}"
        during = sum(1 for t in after if t < restart_done)
        # Released from the resumed watches, promptly after the last start
        # became visible (the agent retries its status writes with a back-off
        # of up to 5 s while the apiserver is away).
        lag = configmaps.first_time("0") - max(max(barrier_start.values()), restart_done)
        lifetimes.note(f"{during} of the 8 held pods started while the apiserver was restarting; released "
                       f"{lag:.3f} s after the later of the last start and the end of the restart")
        assert lag < 10, f"released {lag:.3f} s late\n{lifetimes.describe()}"

        line = wait_for(lambda: controller.releases(), timeout=10, what="the release line")
        assert len(line) == 1 and "attempt=0 " in line[0] and "started=12 " in line[0], line
        assert_released_once(lifetimes, configmaps, 0)
        assert configmaps.values() == ["0"], configmaps.history
        events_found = wait_for(lambda: released_events(kube, namespace, name, 0), timeout=10,
                                what="the GroupReleased Event")
        assert len(events_found) == 1, events_found
        assert controller.alive(), controller.output()

        # The cluster is whole for the tests that follow: a ready apiserver,
        # the same etcd, scheduler and controller-manager processes, and the
        # scheduler still binding pods.
        assert apiserver_ready(kube)
        kube.create(f"/api/v1/namespaces/{namespace}/pods", {
            "metadata": {"name": "probe"},
            "spec": {"nodeSelector": {"pool": "fast"}, "restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "1"]}]}})
        wait_for(lambda: kube.get(f"/api/v1/namespaces/{namespace}/pods/probe")["spec"].get("nodeName"),
                 timeout=20, what="a new pod bound by the scheduler after the apiserver restart")
        # kube-controller-manager's informers back off (up to 30 s) while the
        # apiserver is away: a namespace made right after the restart waits
        # ~40 s for its service-account token, which the next test's
        # namespace fixture needs. Wait for that here.
        recovered = wait_for_service_account_token(kube, f"{namespace}-after", timeout=90)
        lifetimes.note(f"a new namespace got its service-account token {recovered:.1f} s after the check began")
        for component, pid in others.items():
            assert pathlib_read(state_dir, f"{component}.pid") == pid and pid_alive(pid), \
                f"{component} (pid {pid}) did not survive the apiserver restart"
    finally:
        configmaps.stop.set()
        if not apiserver_ready(kube):
            # Leave a working cluster for the tests that follow.
            subprocess.run(["bash", str(ROOT / "e2e" / "cluster" / "up.sh")], env=env, stdout=subprocess.DEVNULL,
                           timeout=120)
            wait_for(lambda: apiserver_ready(Kube(kubeconfig)), timeout=60, what="the apiserver back up")


def wait_for_service_account_token(kube, name, timeout):
    """Creates namespace `name`, waits until its default service account has
    its token (as conftest's namespace fixture does), deletes it; returns the
    seconds it took."""
    begun = time.monotonic()
    kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
    try:
        def token():
            try:
                return kube.get(f"/api/v1/namespaces/{name}/serviceaccounts/default").get("secrets")
            except ApiError:
                return None

        wait_for(token, timeout=timeout, interval=0.2,
                 what=f"the service-account token of a new namespace ({name}) after the apiserver restart")
        return time.monotonic() - begun
    finally:
        kube.delete(f"/api/v1/namespaces/{name}")


def pathlib_read(directory, name):
    try:
        with open(os.path.join(directory, name)) as handle:
            return handle.read().strip()
    except OSError:
        return None


def pid_alive(pid):
    try:
        os.kill(int(pid), 0)
        return True
    except (OSError, ValueError, TypeError):
        return False


def test_configmap_garbage_collected_with_its_jobset(kube, namespace, harness):
    start, lifetimes = harness
    start(TWO_POOLS)
    name = "collected"
    controller = lifetimes.start()
    jobset = kube.create(JOBSETS.format(namespace), jobset_body(name, [("fast", "fast", 2, 1, None)]))
    configmap = wait_for(lambda: get_configmap(kube, namespace, name), timeout=30, interval=0.1,
                         what=f"the release ConfigMap\n{controller.output()}")
    # The release names the JobSet and its gang generation (the barrier checks both).
    assert configmap["data"] == {api.CONFIGMAP_KEY_STARTED: "0", api.CONFIGMAP_KEY_JOBSET_UID: jobset["metadata"]["uid"], api.CONFIGMAP_KEY_GENERATION: "0"}, \
        configmap
    owners = configmap["metadata"]["ownerReferences"]
    assert [(o["apiVersion"], o["kind"], o["name"], o["uid"], o.get("controller")) for o in owners] == \
        [("jobset.x-k8s.io/v1alpha2", "JobSet", name, jobset["metadata"]["uid"], True)], owners
    wait_for(controller.releases, timeout=5, what="the release line")

    # As `kubectl delete jobset` does: background propagation.
    kube.delete(JOBSETS.format(namespace) + f"/{name}",
                body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})

    def gone(path):
        try:
            kube.get(path)
            return False
        except ApiError as error:
            return error.status == 404

    wait_for(lambda: gone(JOBSETS.format(namespace) + f"/{name}"), timeout=10, what="the JobSet deleted")
    wait_for(lambda: gone(f"/api/v1/namespaces/{namespace}/configmaps/{name}{api.CONFIGMAP_SUFFIX}"), timeout=30,
             interval=0.2, what="the ConfigMap garbage-collected with its JobSet")
    wait_for(lambda: not kube.list(f"/apis/batch/v1/namespaces/{namespace}/jobs",
                                   labelSelector=f"{api.JOBSET_LABEL_NAME}={name}")[0],
             timeout=30, interval=0.2, what="the JobSet's Jobs garbage-collected")
    # The controller forgot the JobSet and did not write the ConfigMap again.
    wait_for(lambda: f"event=jobset-forgotten jobset={namespace}/{name}" in controller.output(), timeout=10,
             what=f"the controller forgetting the JobSet\n{controller.output()}")
    assert get_configmap(kube, namespace, name) is None
    assert len(controller.releases()) == 1, controller.output()
    assert controller.alive(), controller.output()

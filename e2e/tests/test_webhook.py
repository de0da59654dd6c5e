"""End-to-end tests of bin/muster-webhook with the real kube-apiserver.

The webhook runs on the host over HTTPS with a certificate from
deploy/gen-certs.sh and is registered by URL with the configurations that
deploy/render-webhooks.sh prints (caBundle from the same script); the JobSet
CRD carries muster's schema patch (deploy/crd/patch-crd.sh), so
spec.groupSchedulingConfig survives the create. The registrations are
limited to namespaces labelled e2e.muster.dev/webhook=on, so the rest of the
suite (which creates post-injection JobSets by hand) never goes through it,
and they are removed (and the CRD restored) when the module ends.

JobSets are then created as a user writes them: the KEP's Story 1 and
Story 2, every upstream example with a groupSchedulingConfig added, and
each invalid case, which the apiserver must refuse with the webhook's
message.
"""

import base64
import contextlib
import http.client
import json
import os
import socket
import ssl
import subprocess
import time

import pytest
import yaml

from conftest import CONTROLLER, ROOT, Controller, wait_for
from kube import ApiError
import muster_api as api  # noqa: E402

WEBHOOK = ROOT / "bin" / "muster-webhook"
DEPLOY = ROOT / "deploy"
EXAMPLES = ROOT.parent / "shared" / "jobset" / "examples"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{}/jobsets"
SELECTOR_LABEL = "e2e.muster.dev/webhook"
BARRIER = api.BARRIER_CONTAINER

pytestmark = pytest.mark.skipif(not WEBHOOK.exists() or not CONTROLLER.exists(),
                                reason=f"{WEBHOOK} or {CONTROLLER} is not built (make)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Webhook:
    """bin/muster-webhook on 127.0.0.1 with a certificate from gen-certs.sh."""

    def __init__(self, work, extra=(), barrier_image="muster-barrier:dev"):
        self.certs = work / "certs"
        subprocess.run(["bash", str(DEPLOY / "gen-certs.sh"), "--out", str(self.certs), "--ip", "127.0.0.1"],
                       check=True, capture_output=True)
        self.port = free_port()
        self.metrics_port = free_port()
        self.log_path = work / "webhook.log"
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [str(WEBHOOK), "--tls-cert-file", str(self.certs / "tls.crt"), "--tls-key-file",
             str(self.certs / "tls.key"), "--listen", f"127.0.0.1:{self.port}", "--barrier-image",
             barrier_image, "--shutdown-delay", "0", "--metrics-addr", f"127.0.0.1:{self.metrics_port}", *extra], stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.context = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        wait_for(lambda: self.ready(), timeout=10, what="the webhook's /readyz")

    def connection(self):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=10)

    def ready(self):
        assert self.process.poll() is None, self.output()
        try:
            conn = self.connection()
            conn.request("GET", "/readyz")
            return conn.getresponse().status == 200
        except OSError:
            return False

    def post(self, path, body, conn=None, headers=None):
        own = conn is None
        conn = conn or self.connection()
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        data = response.read()
        if own:
            conn.close()
        return response.status, data

    def output(self):
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.log.close()


def registration_path(config):
    plural = "mutatingwebhookconfigurations" if config["kind"].startswith("Mutating") \
        else "validatingwebhookconfigurations"
    return f"/apis/admissionregistration.k8s.io/v1/{plural}"


@contextlib.contextmanager
def serving_webhook(kube, kubeconfig, work, selector_label, barrier_image="muster-barrier:dev", extra=()):
    """A webhook on 127.0.0.1, registered (all three configurations, named
    *-e2e-<label value>) for the namespaces labelled selector_label=on, the
    JobSet CRD patched for groupSchedulingConfig; all undone at the end."""
    # The pod route reads placement records; the local controller acts as the admin.
    server = Webhook(work, extra=("--kubeconfig", kubeconfig, "--controller-user", "admin", *extra),
                     barrier_image=barrier_image)
    crd = subprocess.run(["bash", str(DEPLOY / "crd" / "patch-crd.sh"), "--kubeconfig", kubeconfig, "--status"],
                         check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["bash", str(DEPLOY / "crd" / "patch-crd.sh"), "--kubeconfig", kubeconfig], check=True,
                   capture_output=True)
    rendered = subprocess.run(["bash", str(DEPLOY / "render-webhooks.sh"), "--ca-file",
                               str(server.certs / "ca.crt"), "--url", f"https://127.0.0.1:{server.port}"],
                              check=True, capture_output=True, text=True).stdout
    configs = [doc for doc in yaml.safe_load_all(rendered) if doc]
    assert {c["kind"] for c in configs} == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    suffix = "-e2e" if selector_label == SELECTOR_LABEL else "-e2e-" + selector_label.rsplit("/", 1)[-1]
    for config in configs:
        config["metadata"]["name"] += suffix
        for hook in config["webhooks"]:
            hook["namespaceSelector"] = {"matchLabels": {selector_label: "on"}}
    for config in configs:
        # Through the API: kubectl validates against 1.20's schema, which has no
        # matchConditions; the apiserver itself drops the field (1.28+ uses it).
        kube.delete(f"{registration_path(config)}/{config['metadata']['name']}")
        kube.create(registration_path(config), config)
    try:
        yield server
    finally:
        for config in configs:
            kube.delete(f"{registration_path(config)}/{config['metadata']['name']}")
        if crd == "absent":
            # --force: this module's JobSets may still be on their way out.
            subprocess.run(["bash", str(DEPLOY / "crd" / "patch-crd.sh"), "--kubeconfig", kubeconfig, "--remove",
                            "--force"], check=True, capture_output=True)
        server.stop()
        print(server.output()[-4000:])


@pytest.fixture(scope="module")
def webhook(kube, kubeconfig, tmp_path_factory):
    with serving_webhook(kube, kubeconfig, tmp_path_factory.mktemp("webhook"), SELECTOR_LABEL) as server:
        yield server


def admitted(kube, namespace, selector_label=SELECTOR_LABEL, value="on"):
    """Labels the namespace for the webhook and waits until the apiserver has
    picked the registration up (its informer takes a moment): a dry-run create
    comes back injected."""
    kube.patch(f"/api/v1/namespaces/{namespace}", {"metadata": {"labels": {selector_label: value}}})

    def injected():
        created = kube.request("POST", JOBSETS.format(namespace), probe_jobset(), query={"dryRun": "All"})
        template = created["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        return any(c["name"] == BARRIER for c in template["spec"].get("initContainers", []))

    wait_for(injected, timeout=30, interval=0.5, what="the webhook registration to take effect")
    return namespace


def probe_jobset(name="probe"):
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
            "spec": {"groupSchedulingConfig": {"timeoutAfterSeconds": 60}, "replicatedJobs": [
                {"name": "w", "template": {"spec": {"template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}]}}


@pytest.fixture
def hooked(kube, namespace, webhook):
    """A namespace the webhook admits."""
    return admitted(kube, namespace)


def read_events(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def starts(events, container, namespace, prefix=""):
    return {e["pod"]: e["t"] for e in events if e["container"] == container and e["event"] == "started"
            and e["pod"].startswith(f"{namespace}/{prefix}")}


def pods_of(kube, namespace, name):
    items, _ = kube.list(f"/api/v1/namespaces/{namespace}/pods",
                         labelSelector=f"{api.JOBSET_LABEL_NAME}={name}")
    return items


def kep_story(number):
    """Story 1 or 2 of KEP-498 (seed 001), as written there."""
    seed = next((ROOT.parent / "shared" / "seeds").glob("001_*.txt")).read_text()
    blocks = [b.split("```", 1)[0] for b in seed.split("```yaml")[1:]]
    stories = [yaml.safe_load(b) for b in blocks if "groupSchedulingConfig" in b and "initContainers" not in b]
    doc = stories[number - 1]
    doc["metadata"]["name"] = f"story-{number}"
    del doc["metadata"]["namespace"]
    return doc


def check_injected(jobset, targeted):
    """The stored JobSet: settings kept, token written, barrier injected into
    exactly the targeted replicated jobs."""
    assert jobset["spec"]["groupSchedulingConfig"]["timeoutAfterSeconds"] == 300
    token = jobset["metadata"]["annotations"][api.ANNOTATION_BARRIER_TOKEN]
    assert len(token) == 32
    for job in jobset["spec"]["replicatedJobs"]:
        template = job["template"]["spec"]["template"]
        init = template["spec"].get("initContainers", [])
        if job["name"] not in targeted:
            assert not init and "volumes" not in template["spec"], job["name"]
            continue
        assert init[0]["name"] == BARRIER
        assert init[0]["args"][init[0]["args"].index("--timeout") + 1] == "300"
        assert {"name": "MUSTER_BARRIER_TOKEN", "value": token} in init[0]["env"]
        assert template["metadata"]["labels"][api.LABEL_GROUP_SCHEDULING] == "true"
        volume = [v for v in template["spec"]["volumes"] if v["name"] == api.BARRIER_VOLUME][0]
        assert volume["configMap"] == {"name": f"{jobset['metadata']['name']}{api.CONFIGMAP_SUFFIX}", "optional": True}
        assert init[0]["volumeMounts"] == [{"name": api.BARRIER_VOLUME, "mountPath": api.BARRIER_MOUNT,
                                            "readOnly": True}]


@pytest.fixture
def gang_cluster(run_standin, kubeconfig, tmp_path):
    """start() runs the node agent with an early pool for about half the pods
    and a pool that appears 20 s later (volumes sync hourly: only the push
    releases), and returns its events file. The test starts it once its
    JobSets exist, so the late pool is late for their pods however long the
    set-up took on a busy machine."""
    events = tmp_path / "events.jsonl"
    shape = tmp_path / "staggered.yaml"
    shape.write_text(yaml.safe_dump({"groups": [
        {"name": "early", "count": 2, "allocatable": {"cpu": "400", "memory": "1Ti", "pods": "150"}},
        {"name": "late", "count": 3, "allocatable": {"cpu": "400", "memory": "1Ti", "pods": "150"},
         "appearAfterSeconds": 20, "readyAfterSeconds": 20}]}))

    def start():
        run_standin("node_agent.py", "--shape", shape, "--work-dir", tmp_path / "agent", "--sync-period", 3600,
                    "--events", events, "--delete-nodes", "--max-run-seconds", 5, "--default-run-seconds", 3)
        return events
    return start


def test_kep_stories_are_injected_held_and_released_together(kube, kubeconfig, hooked, gang_cluster, run_standin,
                                                             tmp_path):
    namespace = hooked
    run_standin("jobset_controller.py", "--namespace", namespace)
    controller = Controller(kubeconfig, namespace, tmp_path / "controller.log")
    try:
        for number in (1, 2):
            kube.create(JOBSETS.format(namespace), kep_story(number))
        events_path = gang_cluster()
        check_injected(kube.get(JOBSETS.format(namespace) + "/story-1"), {"workers"})
        check_injected(kube.get(JOBSETS.format(namespace) + "/story-2"), {"workers"})

        def all_started():
            main = starts(read_events(events_path), "pytorch", namespace)
            return main if len(main) == 600 else None

        main = wait_for(all_started, timeout=240, interval=1, what="600 pytorch containers started")
        events = read_events(events_path)
        held = {}
        for story in ("story-1", "story-2"):
            barrier = starts(events, BARRIER, namespace, story + "-workers-")
            workers = {pod: t for pod, t in main.items() if pod.startswith(f"{namespace}/{story}-workers-")}
            assert len(barrier) == 300 and set(barrier) == set(workers), story
            last_barrier = max(barrier.values())
            held[story] = last_barrier - min(barrier.values())
            # Released together, after the last start, by the push: the
            # volumes sync hourly, so anything well under a minute is the
            # push. The gap is mostly the node agent reporting 300 barriers
            # started at once (status writes, seconds on a busy machine).
            assert min(workers.values()) >= last_barrier, story
            assert max(workers.values()) - min(workers.values()) < 5, story
            assert min(workers.values()) - last_barrier < 60, story
            print(f"{story}: barrier held {last_barrier - min(barrier.values()):.1f} s; mains started "
                  f"{min(workers.values()) - last_barrier:.2f}..{max(workers.values()) - last_barrier:.2f} s "
                  "after the last barrier start")
        # Held: early pods waited for the late pool (20 s after the agent
        # started). The early pool holds 300 pods, one story's worth: which
        # story's pods the scheduler puts there first is its order, so one
        # story may run wholly early or wholly late (CI saw story-1 wholly
        # early once); the stories together always span both pools.
        assert max(held.values()) > 5, held
        # Story 2's auxiliary pod is not held: it runs with no barrier. The
        # scheduler may put it on the late pool, after the workers' start, so
        # its start is waited for rather than expected in the events already
        # read (CI saw it missing there once).
        aux = wait_for(lambda: starts(read_events(events_path), "auxiliary", namespace, "story-2-auxiliary-"),
                       timeout=60, interval=1, what="the auxiliary container started")
        assert len(aux) == 1 and not starts(read_events(events_path), BARRIER, namespace, "story-2-auxiliary-")
        releases = controller.releases()
        assert len(releases) == 2, releases
    finally:
        controller.stop()
        print(controller.output()[-3000:])


def with_group_scheduling(doc):
    """An upstream example with groupSchedulingConfig added: every replicated
    job, or, where InOrder startup forbids a group over several jobs, the last
    one (the workers that start after the driver is ready)."""
    spec = doc["spec"]
    config = {"timeoutAfterSeconds": 120}
    if spec.get("startupPolicy", {}).get("startupPolicyOrder") == "InOrder" and len(spec["replicatedJobs"]) > 1:
        config["targetReplicatedJobs"] = [spec["replicatedJobs"][-1]["name"]]
    spec["groupSchedulingConfig"] = config
    return doc


def test_every_example_with_group_scheduling_runs(kube, kubeconfig, hooked, run_standin, tmp_path):
    namespace = hooked
    events_path = tmp_path / "events.jsonl"
    run_standin("node_agent.py", "--shape", ROOT / "e2e" / "shapes" / "examples.yaml", "--work-dir",
                tmp_path / "agent", "--sync-period", 3600, "--events", events_path, "--max-run-seconds", 3,
                "--default-run-seconds", 2, "--backoff-scale", 0.05, "--delete-nodes")
    run_standin("jobset_controller.py", "--namespace", namespace)
    controller = Controller(kubeconfig, namespace, tmp_path / "controller.log")
    try:
        docs = []
        for path in sorted(EXAMPLES.glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc and doc.get("kind") == "JobSet":
                    docs.append(with_group_scheduling(doc))
                    kube.create(JOBSETS.format(namespace), doc)
        assert len(docs) >= 6

        def finished():
            states = {d["metadata"]["name"]: kube.get(JOBSETS.format(namespace) + "/" + d["metadata"]["name"])
                      .get("status", {}).get("terminalState") for d in docs}
            return states if all(states.values()) else None

        states = wait_for(finished, timeout=int(os.environ.get("EXAMPLES_TIMEOUT", "300")), interval=1,
                          what="every example JobSet to finish")
        assert set(states.values()) == {"Completed"}, states
        events = read_events(events_path)
        for doc in docs:
            name = doc["metadata"]["name"]
            targets = doc["spec"]["groupSchedulingConfig"].get("targetReplicatedJobs") or \
                [j["name"] for j in doc["spec"]["replicatedJobs"]]
            pods = pods_of(kube, namespace, name)
            held = [p for p in pods if p["metadata"]["labels"][api.JOBSET_LABEL_REPLICATED_JOB] in targets]
            assert held and all(p["spec"]["initContainers"][0]["name"] == BARRIER for p in held), name
            free = [p for p in pods if p not in held]
            assert all(BARRIER not in [c["name"] for c in p["spec"].get("initContainers", [])] for p in free), name
            # No held pod's first container ran before the last barrier of its group started.
            keys = {f"{namespace}/{p['metadata']['name']}" for p in held}
            barrier = {k: t for k, t in starts(events, BARRIER, namespace).items() if k in keys}
            assert set(barrier) == keys, name
            others = [e["t"] for e in events if e["event"] == "started" and e["pod"] in keys
                      and e["container"] != BARRIER]
            assert others and min(others) >= max(barrier.values()), name
        assert len(controller.releases()) == len(docs)
    finally:
        controller.stop()
        print(controller.output()[-3000:])


def denied(kube, namespace, body, needle, update=None):
    """Creates body (or, with update, creates it and then applies update as a
    merge patch) and expects the apiserver to refuse with the webhook's
    message containing needle."""
    path = JOBSETS.format(namespace)
    try:
        if update is None:
            kube.create(path, body)
        else:
            kube.create(path, body)
            kube.patch(f"{path}/{body['metadata']['name']}", update)
    except ApiError as error:
        message = error.body.get("message", "") if isinstance(error.body, dict) else str(error.body)
        assert "denied the request" in message and needle in message, message
        return message
    raise AssertionError(f"not denied: {needle}")


def jobset(name, jobs=("w",), config=None, annotations=None, startup=None, containers=None):
    spec = {"replicatedJobs": [{"name": job, "template": {"spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": containers or [{"name": "main", "image": "busybox"}]}}}}}
        for job in jobs]}
    if config is not None:
        spec["groupSchedulingConfig"] = config
    if startup:
        spec["startupPolicy"] = {"startupPolicyOrder": startup}
    metadata = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": metadata, "spec": spec}


def huge_jobset(args):
    body = jobset("huge", config={"timeoutAfterSeconds": 60})
    body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["args"] = [""] * args
    return body


def test_each_invalid_case_is_denied_through_the_apiserver(kube, hooked):
    namespace = hooked
    messages = [
        denied(kube, namespace, jobset("in-order", ("driver", "workers"), {"timeoutAfterSeconds": 60}, startup="InOrder"),
               "startupPolicy InOrder cannot be combined with a group that spans 2 replicated jobs"),
        denied(kube, namespace, jobset("reserved", config={"timeoutAfterSeconds": 60}, containers=[{"name": BARRIER, "image": "busybox"}]),
               f'the container name "{api.BARRIER_CONTAINER}" is reserved'),
        denied(kube, namespace, jobset("no-target", ("workers",), {"timeoutAfterSeconds": 60, "targetReplicatedJobs": ["wrkers"]}),
               'targetReplicatedJobs[0] "wrkers" names no replicated job of this JobSet (its replicated jobs: '
               'workers)'),
        denied(kube, namespace, jobset("timeout", annotations={api.ANNOTATION_GROUP_TIMEOUT: "0"}),
               "must be between 1 and 86400"),
        denied(kube, namespace, jobset("timeout2", annotations={api.ANNOTATION_GROUP_TIMEOUT: "90000"}),
               "must be between 1 and 86400"),
        denied(kube, namespace, jobset("n" * 240, config={"timeoutAfterSeconds": 60}), "use a name of at most 236 characters"),
        denied(kube, namespace, jobset("changed", config={"timeoutAfterSeconds": 60}),
               "groupSchedulingConfig cannot change after the JobSet is created (was: timeout 60 s",
               update={"spec": {"groupSchedulingConfig": {"timeoutAfterSeconds": 120}}}),
        denied(kube, namespace, jobset("both", config={"timeoutAfterSeconds": 60},
                                       annotations={api.ANNOTATION_GROUP_TIMEOUT: "30"}), "disagree"),
        # 300,000 empty args (900 KB, within the apiserver's limits) would
        # cost the webhook about 30 MB to parse: refused unparsed, by uid.
        denied(kube, namespace, huge_jobset(300000),
               "the AdmissionReview is too large for muster-webhook: about 3000"),
    ]
    for message in messages:
        print(message)
    # The in-range forms pass: InOrder over one targeted job, the annotation form.
    kube.create(JOBSETS.format(namespace), jobset("in-order-one", ("driver", "workers"),
                                                  {"timeoutAfterSeconds": 60, "targetReplicatedJobs": ["workers"]}, startup="InOrder"))
    kube.create(JOBSETS.format(namespace), jobset("annotated", ("a", "b"), annotations={
        api.ANNOTATION_GROUP_TIMEOUT: "45", api.ANNOTATION_GROUP_TARGETS: "b"}))
    stored = kube.get(JOBSETS.format(namespace) + "/annotated")
    init = [job["template"]["spec"]["template"]["spec"].get("initContainers", []) for job in stored["spec"]["replicatedJobs"]]
    assert init[0] == [] and init[1][0]["name"] == BARRIER and "45" in init[1][0]["args"]
    # A change elsewhere in an injected JobSet is allowed by the validator.
    kube.patch(JOBSETS.format(namespace) + "/annotated", {"metadata": {"labels": {"team": "a"}}})
    # A user's init container of the reserved name in a held job cannot stand
    # in for the barrier: the real one replaces it, first among the init containers.
    impostor = jobset("impostor", config={"timeoutAfterSeconds": 60})
    impostor["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox"}, {"name": BARRIER, "image": "busybox", "command": ["true"]}]
    kube.create(JOBSETS.format(namespace), impostor)
    stored = kube.get(JOBSETS.format(namespace) + "/impostor")
    init = stored["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["initContainers"]
    assert [c["name"] for c in init] == [BARRIER, "setup"], init
    assert "command" not in init[0] and "--timeout" in init[0]["args"] and init[0]["image"] != "busybox", init[0]


def test_timed_out_group_shows_the_reason(kube, kubeconfig, hooked, run_standin, tmp_path):
    """Two pods, one of which can never be scheduled: the barrier of the
    other times out after 5 s, the pod fails, and with backoffLimit 0 and no
    JobSet restarts the JobSet fails; `kubectl describe` shows why."""
    namespace = hooked
    shape = tmp_path / "one.yaml"
    shape.write_text(yaml.safe_dump({"groups": [{"name": "only", "count": 1, "labels": {"pool": "here"},
                                                 "allocatable": {"cpu": "8", "memory": "8Gi", "pods": "20"}}]}))
    run_standin("node_agent.py", "--shape", shape, "--work-dir", tmp_path / "agent", "--sync-period", 3600,
                "--delete-nodes")
    run_standin("jobset_controller.py", "--namespace", namespace)
    controller = Controller(kubeconfig, namespace, tmp_path / "controller.log")
    try:
        body = jobset("stuck", ("here", "nowhere"), {"timeoutAfterSeconds": 5})
        for job in body["spec"]["replicatedJobs"]:
            job["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"pool": job["name"]}
            job["template"]["spec"]["backoffLimit"] = 0
        body["spec"]["failurePolicy"] = {"maxRestarts": 0}
        kube.create(JOBSETS.format(namespace), body)

        def describe():
            out = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "describe", "jobset",
                                  "stuck"], capture_output=True, text=True).stdout
            return out if "GroupTimedOut" in out else None

        out = wait_for(describe, timeout=60, interval=1, what="GroupTimedOut in kubectl describe jobset")
        print(out)
        assert "1 of 2 pods reached the barrier and 1 never did" in out, out
        def timed_out_pod():
            for p in pods_of(kube, namespace, "stuck"):
                for status in p.get("status", {}).get("initContainerStatuses", []):
                    if status.get("state", {}).get("terminated", {}).get("exitCode") == 3:
                        return p
            return None

        pod = wait_for(timed_out_pod, timeout=10, what="the pod whose barrier exited 3")
        pod_out = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "describe", "pod",
                                  pod["metadata"]["name"]], capture_output=True, text=True).stdout
        print(pod_out)
        assert "Exit Code:    3" in pod_out and "timed out" in pod_out, pod_out

        # The failed pod fails its Job (backoffLimit 0), which fails the
        # JobSet (maxRestarts 0): the JobSet ends, it does not hang.
        def failed():
            conditions = kube.get(JOBSETS.format(namespace) + "/stuck").get("status", {}).get("conditions", [])
            return [c for c in conditions if c.get("type") == "Failed" and c.get("status") == "True"] or None

        print(wait_for(failed, timeout=60, interval=1, what="the JobSet's Failed condition"))
        out = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "describe", "jobset",
                              "stuck"], capture_output=True, text=True).stdout
        print(out)
        assert "GroupTimedOut" in out and "Failed" in out, out
    finally:
        controller.stop()
        print(controller.output()[-2000:])


def review(obj, kind=("jobset.x-k8s.io", "v1alpha2", "JobSet"), operation="CREATE"):
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "e2e-1", "kind": {"group": kind[0], "version": kind[1], "kind": kind[2]},
        "operation": operation, "namespace": "default", "name": "x", "object": obj}}).encode()


def test_bad_requests_get_clear_answers(webhook):
    conn = webhook.connection()
    good = review(probe_jobset("x"))
    # Keep-alive: several reviews on one connection.
    for _ in range(3):
        status, data = webhook.post("/mutate", good, conn=conn)
        assert status == 200 and json.loads(data)["response"]["allowed"] is True
    patch = json.loads(base64.b64decode(json.loads(data)["response"]["patch"]))
    assert any(op["path"].endswith("/initContainers") for op in patch)
    conn.close()
    cases = [
        (b"{not json", 400, b"not valid JSON"),
        (good[:len(good) // 2], 400, b"malformed or truncated"),
        (json.dumps({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                     "request": {"uid": "a"}}).encode(), 400, b"admissionReviewVersions [v1]"),
        (b'{"kind":"Pod"}', 400, b"not an AdmissionReview"),
    ]
    for body, code, needle in cases:
        for route in ("/mutate", "/validate"):
            status, data = webhook.post(route, body)
            assert status == code and needle in data, (route, body[:40], status, data)
    status, data = webhook.post("/validate", review({"metadata": {"name": "p"}}, kind=("", "v1", "Pod")))
    response = json.loads(data)["response"]
    assert status == 200 and response["allowed"] is False and "admits only" in response["status"]["message"]
    # Oversized (5 MiB, over the 4 MiB limit): refused without being read
    # whole. curl sends "Expect: 100-continue" and gets the 413 before the
    # body; a client that sends the body anyway sees the 413 or the closed
    # connection, and the webhook carries on.
    big = webhook.certs.parent / "big.json"
    big.write_bytes(b"[" + b" " * (5 * 1024 * 1024) + b"]")
    code = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert",
                           str(webhook.certs / "ca.crt"), "-H", "Content-Type: application/json", "--data-binary",
                           f"@{big}", f"https://127.0.0.1:{webhook.port}/mutate"],
                          capture_output=True, text=True).stdout
    assert code == "413", code
    try:
        status, data = webhook.post("/mutate", big.read_bytes())
        assert status == 413, (status, data[:200])
    except (ssl.SSLError, ConnectionError):
        pass
    assert webhook.ready()
    # Wrong method and unknown path.
    conn = webhook.connection()
    conn.request("GET", "/mutate")
    assert conn.getresponse().status == 405
    conn.close()
    assert webhook.process.poll() is None
    # /metrics only on its own port, never on the admission port.
    conn = webhook.connection()
    conn.request("GET", "/metrics")
    assert conn.getresponse().status == 404
    conn.close()
    conn = http.client.HTTPConnection("127.0.0.1", webhook.metrics_port, timeout=10)
    conn.request("GET", "/metrics")
    metrics = conn.getresponse().read().decode()
    assert 'route="mutate"' in metrics and 'result="bad_request"' in metrics, metrics[:2000]


def test_text_that_is_not_utf8_is_denied_without_echoing_a_byte(tmp_path):
    """Issue 34: a review whose text is not UTF-8 (a metadata.name of raw
    FF FE C0 80, a pod label of a raw FF) or holds a raw NUL inside a string
    is denied by its uid with code 400 at /mutate, /validate and /pin, saying
    where the bad byte is, and no byte of the answer is outside ASCII. The
    real binary, started without a cluster (the pod route then has no API
    access, which these reviews never reach)."""
    server = Webhook(tmp_path)
    try:
        jobset = review(probe_jobset("NAME")).replace(b'"name": "NAME"', b'"name": "\xff\xfe\xc0\x80"')
        pod = review({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "train-w-0-", "labels": {
            "jobset.sigs.k8s.io/jobset-name": "tr\xffn", "muster.dev/placement": "true"}},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}, kind=("", "v1", "Pod"))
        pod = pod.replace(b"tr\\u00ffn", b"tr\xffn")
        assert b"\xff" in jobset and b"\xff" in pod
        cases = [("/mutate", jobset, b"not valid UTF-8 (byte 0xFF at offset %d)" % jobset.index(b"\xff")),
                 ("/validate", jobset, b"not valid UTF-8 (byte 0xFF at offset"),
                 ("/pin", pod, b"not valid UTF-8 (byte 0xFF at offset %d)" % pod.index(b"\xff")),
                 ("/mutate", jobset.replace(b"\xff\xfe\xc0\x80", b"a\x00b"), b"holds a NUL byte"),
                 ("/pin", pod.replace(b"\xff", b"\x00"), b"holds a NUL byte")]
        for route, body, needle in cases:
            status, data = server.post(route, body)
            assert status == 200, (route, status, data)
            assert all(0x20 <= b < 0x7f for b in data), (route, data)
            response = json.loads(data)["response"]
            assert response["uid"] == "e2e-1" and response["allowed"] is False, (route, response)
            assert response["status"]["code"] == 400, (route, response)
            assert needle.decode() in response["status"]["message"], (route, response)
        # No uid to answer by: HTTP 400, in ASCII too.
        status, data = server.post("/mutate", b'{"kind":"AdmissionReview","a":"\xc0\x80"}')
        assert status == 400 and b"not valid UTF-8 (byte 0xC0 at offset 31)" in data, (status, data)
        assert all(b < 0x80 for b in data)
        assert server.process.poll() is None
        server.output()  # flushed
        assert all(b < 0x80 for b in server.log_path.read_bytes()), "a raw byte reached the log"
    finally:
        server.stop()


def process_cpu_seconds(pid):
    """User + system CPU seconds a process has used so far."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_clients_that_stall_their_tls_handshake_cost_the_webhook_no_cpu(webhook):
    """The apiserver opens a connection to the webhook for many of its calls
    (it keeps 25 idle ones), and on a busy machine it is slow to finish the
    handshake. muster-webhook's thread pool ran on libmicrohttpd's epoll
    loop, which retried a waiting handshake without waiting: each one kept a
    thread spinning a core, and 5 bytes of a TLS record from anyone who can
    reach the port held it for --idle-timeout. Two clients here send 5 bytes
    of a record header, two a ClientHello whose answer they never read; the
    webhook process's CPU over 2 s is measured (CPU time, not wall time: a
    busy machine does not make it larger)."""
    stalled = []
    try:
        for _ in range(2):
            raw = socket.create_connection(("127.0.0.1", webhook.port), timeout=5)
            raw.sendall(b"\x16\x03\x01\x02\x00")
            stalled.append(raw)
        for _ in range(2):
            raw = socket.create_connection(("127.0.0.1", webhook.port), timeout=5)
            outgoing = ssl.MemoryBIO()
            hello = webhook.context.wrap_bio(ssl.MemoryBIO(), outgoing, server_hostname="127.0.0.1")
            with contextlib.suppress(ssl.SSLWantReadError):
                hello.do_handshake()
            raw.sendall(outgoing.read())  # the ClientHello; the server's answer is never read
            stalled.append(raw)
        time.sleep(0.3)  # the webhook reads what was sent, then waits
        before = process_cpu_seconds(webhook.process.pid)
        time.sleep(2)
        used = process_cpu_seconds(webhook.process.pid) - before
        assert webhook.ready(), "the webhook did not answer /readyz while handshakes waited"
    finally:
        for raw in stalled:
            raw.close()
    assert used < 0.5, f"muster-webhook used {used:.2f} CPU s in 2 s while 4 TLS handshakes waited"


def served_certificate(webhook):
    with socket.create_connection(("127.0.0.1", webhook.port), timeout=5) as raw:
        with webhook.context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return tls.getpeercert(binary_form=True)


def pem_to_der(path):
    return ssl.PEM_cert_to_DER_cert(path.read_text().split("-----END CERTIFICATE-----")[0] +
                                    "-----END CERTIFICATE-----\n")


def test_renewed_certificate_is_served_without_a_restart(kube, hooked, webhook):
    """gen-certs.sh --renew re-issues the serving certificate (same CA, as a
    renewed Secret would); the running webhook serves it to new connections
    and the apiserver keeps calling it, with no restart."""
    namespace = hooked
    before = served_certificate(webhook)
    assert before == pem_to_der(webhook.certs / "tls.crt")
    subprocess.run(["bash", str(DEPLOY / "gen-certs.sh"), "--out", str(webhook.certs), "--ip", "127.0.0.1",
                    "--renew"], check=True, capture_output=True)
    renewed = pem_to_der(webhook.certs / "tls.crt")
    assert renewed != before
    wait_for(lambda: served_certificate(webhook) == renewed, timeout=10, what="the renewed certificate served")
    assert "event=tls-reloaded" in webhook.output()
    pid = webhook.process.pid
    kube.create(JOBSETS.format(namespace), jobset("after-renewal", config={"timeoutAfterSeconds": 60}))
    stored = kube.get(JOBSETS.format(namespace) + "/after-renewal")
    assert stored["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["initContainers"][0][
        "name"] == BARRIER
    assert webhook.process.pid == pid and webhook.process.poll() is None


def pinned_pod(labels, index="0"):
    """A bare pod as a tenant may write it, carrying the labels that send it
    to the pin route."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "forged", "labels": {api.LABEL_PLACEMENT: "true", **labels},
                         "annotations": {"batch.kubernetes.io/job-completion-index": index}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}


def test_a_pod_label_never_reads_another_namespaces_configmap(kube, hooked):
    """Issue 34 §3: mutating admission runs before the apiserver validates a
    pod, so a tenant's label reaches the pin route as written. A JobSet name
    that would walk the record's path into kube-system (with a query to cut
    off the suffix) is refused for its syntax: the webhook reads nothing
    there, and its answer says nothing of what is there. Before, it read
    kube-system/muster-e2e-victim with its cluster-wide rights and named it
    in the denial."""
    namespace = hooked
    victims = "/api/v1/namespaces/kube-system/configmaps"
    try:
        kube.delete(f"{victims}/muster-e2e-victim")
    except ApiError:
        pass
    kube.create(victims, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "muster-e2e-victim"},
                          "data": {api.PLACEMENT_KEY: "a secret of kube-system"}})
    try:
        for name in ("../../kube-system/configmaps/muster-e2e-victim?x=", "../../kube-system/configmaps/muster-e2e-victim"):
            labels = {api.JOBSET_LABEL_NAME: name, api.JOBSET_LABEL_UID: "u-1",
                      api.JOBSET_LABEL_REPLICATED_JOB: "w", api.JOBSET_LABEL_JOB_INDEX: "0"}
            try:
                kube.create(f"/api/v1/namespaces/{namespace}/pods", pinned_pod(labels))
                raise AssertionError("the forged pod was admitted")
            except ApiError as error:
                message = error.body.get("message", "") if isinstance(error.body, dict) else str(error.body)
            assert "denied the request" in message, message
            assert "is not a JobSet's name" in message, message
            assert "victim" not in message and "secret" not in message and "kube-system" not in message, message
    finally:
        kube.delete(f"{victims}/muster-e2e-victim")


class HangingApiserver:
    """An HTTPS apiserver of the test's (gen-certs.sh's CA): GETs of the
    records of JobSets named slow-* hang `hang` seconds (as a stuck
    apiserver does) before answering 503; every other GET answers 404."""

    def __init__(self, work, hang):
        import http.server
        import threading
        certs = work / "api-certs"
        subprocess.run(["bash", str(DEPLOY / "gen-certs.sh"), "--out", str(certs), "--ip", "127.0.0.1"],
                       check=True, capture_output=True)

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if "/configmaps/slow-" in self.path:
                    time.sleep(hang)
                    code = 503
                else:
                    code = 404
                body = json.dumps({"kind": "Status", "code": code, "message": "not here"}).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(certs / "tls.crt"), str(certs / "tls.key"))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.kubeconfig = work / "hanging.kubeconfig"
        self.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{self.server.server_port}",
                                                   "certificate-authority": str(certs / "ca.crt")}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def pin_review(jobset, index):
    return review({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"{jobset}-w-0-{index}", "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
        "labels": {api.LABEL_PLACEMENT: "true", api.JOBSET_LABEL_NAME: jobset, api.JOBSET_LABEL_UID: "u-1",
                   api.JOBSET_LABEL_REPLICATED_JOB: "w", api.JOBSET_LABEL_JOB_INDEX: "0"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]}}, kind=("", "v1", "Pod"))


def test_a_hanging_apiserver_holds_up_no_other_jobsets_pods_and_every_pin_answer_comes_in_time(tmp_path):
    """Issue 34 §5, the real binary against an apiserver that hangs on some
    records: with a 3 s --pin-deadline-ms (reads cut at 1.5 s), a pod of a
    JobSet whose record read hangs is refused well within the webhook's 5 s
    timeoutSeconds, and a pod of another JobSet, sent meanwhile, is answered
    without waiting for the hanging reads. A request can wait behind other
    reads on its worker thread (libmicrohttpd serves a thread's connections
    one at a time; with 6 reads in flight on 8 threads, two were seen ahead
    of one): the bounds allow for two, never for the 30 s hang.
    Before, one lock around every read made the others wait behind the
    hanging one (answers of up to 14 s)."""
    import concurrent.futures
    api_server = HangingApiserver(tmp_path, hang=30)
    server = Webhook(tmp_path, extra=("--kubeconfig", str(api_server.kubeconfig), "--pin-deadline-ms", "3000"))

    def timed(jobset, index):
        began = time.monotonic()
        status, data = server.post("/pin", pin_review(jobset, index))
        return time.monotonic() - began, status, json.loads(data)["response"]

    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            slow = [pool.submit(timed, f"slow-{i % 3}", i) for i in range(4)]
            time.sleep(0.5)  # the slow reads are in flight
            fast = [pool.submit(timed, "train", i) for i in range(2)]
            for future in fast:
                seconds, status, response = future.result()
                assert status == 200 and response["allowed"] is False, response
                assert "no placement of record yet" in response["status"]["message"], response
                # At most two other reads (1.5 s each) before it, never the whole hang.
                assert seconds < 2 * 1.5 + 0.5, f"another JobSet's pod waited {seconds:.2f} s behind hanging reads"
            for future in slow:
                seconds, status, response = future.result()
                assert status == 200 and response["allowed"] is False, response
                # Its own read (1.5 s) and two others' before it, with half a
                # second for a busy machine: not 14 s, nor the 30 s hang.
                assert seconds < 3 * 1.5 + 0.5, (seconds, response["status"]["message"])
                assert "slow-" in response["status"]["message"], response
    finally:
        server.stop()
        api_server.stop()


def test_a_configmap_its_jobset_does_not_control_never_pins_a_pod(kube, hooked):
    """Issue 34 §2: a tenant's ConfigMap of a record's name, holding a valid
    record for the pod's labels but controlled by no JobSet of that uid, is
    nobody's record: the pod is refused, saying so, and the webhook keeps
    nothing of it. Before, the webhook parsed and cached any such ConfigMap
    (about 10 MB each at 900 KiB) and pinned the pod by it."""
    namespace = hooked
    record = json.dumps({"uid": "u-forged", "attempt": 0,
                         "replicatedJobs": {"w": [[[0, 0, "kubernetes.io/hostname=anywhere"]]]}})
    kube.create(f"/api/v1/namespaces/{namespace}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"forged{api.PLACEMENT_SUFFIX}"},
        "data": {api.PLACEMENT_KEY: record}})
    labels = {api.JOBSET_LABEL_NAME: "forged", api.JOBSET_LABEL_UID: "u-forged",
              api.JOBSET_LABEL_REPLICATED_JOB: "w", api.JOBSET_LABEL_JOB_INDEX: "0"}
    with pytest.raises(ApiError) as refused:
        kube.create(f"/api/v1/namespaces/{namespace}/pods", pinned_pod(labels))
    message = refused.value.body.get("message", "") if isinstance(refused.value.body, dict) else str(refused.value)
    assert "is not the placement of record of JobSet forged of uid u-forged" in message, message
    assert "anywhere" not in message, message

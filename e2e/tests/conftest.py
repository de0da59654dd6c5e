"""Shared fixtures of the end-to-end suite.

The suite runs against a real kube-apiserver, etcd, kube-scheduler and
kube-controller-manager (e2e/cluster/up.sh). Set MUSTER_KUBECONFIG to use a
running cluster; otherwise the first test brings one up (idempotent) and the
cluster is left running for the next run (`make cluster-down` stops it).
"""

import os
import pathlib
import subprocess
import sys
import time
import uuid

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "e2e" / "standins"))

from kube import ApiError, Kube  # noqa: E402
import muster_api as api  # noqa: E402

# MUSTER_CONTROLLER / MUSTER_BARRIER point the tests at other builds (e.g. one
# with ASan, or a copy taken while the tree is being edited).
CONTROLLER = pathlib.Path(os.environ.get("MUSTER_CONTROLLER", ROOT / "bin" / "muster-controller"))
BARRIER_BINARY = pathlib.Path(os.environ.get("MUSTER_BARRIER", ROOT / "bin" / "muster-barrier"))


def _cluster_kubeconfig():
    path = os.environ.get("MUSTER_KUBECONFIG")
    if path:
        return path
    out = subprocess.run(["bash", str(ROOT / "e2e" / "cluster" / "up.sh")], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return out.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def kubeconfig():
    return _cluster_kubeconfig()


@pytest.fixture(scope="session")
def kube(kubeconfig):
    return Kube(kubeconfig)


def new_namespace(kube, prefix="e2e-"):
    """Creates a namespace with a fresh name and returns that name once pods
    can be created in it."""
    name = prefix + uuid.uuid4().hex[:8]
    kube.create("/api/v1/namespaces", {"metadata": {"name": name}})

    # The ServiceAccount admission plugin refuses pods until the controllers
    # have made the default service account and its token.
    def token_ready():
        try:
            return kube.get(f"/api/v1/namespaces/{name}/serviceaccounts/default").get("secrets")
        except ApiError:
            return None

    wait_for(token_ready, timeout=30, what=f"the default service account of {name}")
    return name


@pytest.fixture
def namespace(kube):
    """A fresh namespace per test, deleted afterwards (its objects with it)."""
    name = new_namespace(kube)
    yield name
    kube.delete(f"/api/v1/namespaces/{name}")


class Standin:
    """A stand-in process (node agent, JobSet controller) run for one test."""

    def __init__(self, args, log_path):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def stop(self, timeout=30):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

    def output(self):
        self.log.flush()
        return pathlib.Path(self.log_path).read_text()


class Controller:
    """bin/muster-controller (or $MUSTER_CONTROLLER) as a subprocess, its
    output to log_path; stopped with SIGTERM by stop(), or SIGKILLed by kill()
    to play a crash."""

    # The Lease is in the test's namespace (the default for --namespace); the
    # metrics server listens on an ephemeral loopback port. With fast_lease
    # the Lease is short, so that a replica started after a SIGKILLed one
    # takes over in seconds: for the tests of takeovers. The others keep the
    # shipped timings (15 s, renew deadline 10 s), which a busy apiserver
    # meets: a 2 s renew deadline lost the Lease under load and ended the
    # controller in the middle of a test about something else.
    LEASE_FLAGS = ["--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "1"]

    def __init__(self, kubeconfig, namespace, log_path, binary=None, extra=(), fast_lease=False):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.started_at = time.time()
        self.killed_at = None
        self.process = subprocess.Popen([str(binary or CONTROLLER), "--kubeconfig", kubeconfig,
                                         "--namespace", namespace, "--metrics-addr", "127.0.0.1:0",
                                         *(self.LEASE_FLAGS if fast_lease else []), *extra],
                                        stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def metrics_port(self):
        """The port of /metrics, from the server's start line (None until then)."""
        import re
        found = re.search(r"event=http-started listen=\S*:(\d+)", self.output())
        return int(found.group(1)) if found else None

    def leading(self):
        return "event=lease-acquired" in self.output()

    def output(self):
        if not self.log.closed:
            self.log.flush()
        return pathlib.Path(self.log_path).read_text()

    def releases(self):
        return [line for line in self.output().splitlines() if " event=release " in line]

    def alive(self):
        return self.process.poll() is None

    def kill(self):
        """SIGKILL, as a crash or an OOM kill would: no chance to finish anything."""
        if self.process.poll() is None:
            self.process.kill()
            self.killed_at = time.time()
        self.process.wait()
        self.log.close()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


@pytest.fixture
def run_standin(kubeconfig, tmp_path):
    """run_standin(script, *args) starts e2e/standins/<script> with --kubeconfig."""
    started = []

    def start(script, *args):
        log = tmp_path / f"{script}.{len(started)}.log"
        proc = Standin(["/usr/bin/python3", str(ROOT / "e2e" / "standins" / script),
                        "--kubeconfig", kubeconfig, *map(str, args)], log)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


def wait_for(predicate, timeout=30.0, interval=0.1, what="condition"):
    """Polls predicate() until it returns a truthy value; returns that value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


# muster's label on the targeted pod templates: the JobSet's resumes (lib/muster/muster_api.h).
GANG_GENERATION_LABEL = api.LABEL_GANG_GENERATION


def barrier_init_container(token, timeout="60"):
    """muster's barrier as an init container, shaped as the webhook will inject
    it (docs/barrier.md, "How a pod runs it"): attempt from the restart-attempt
    label, the gang generation and the JobSet's uid from their labels, and the
    listen address from the pod IP, all through the downward API, the
    ConfigMap volume `group-scheduling` mounted read-only."""
    return {
        "name": api.BARRIER_CONTAINER,
        "image": "muster-barrier:dev",
        "args": ["--dir", api.BARRIER_MOUNT, "--attempt", "$(RESTART_ATTEMPT)",
                 "--generation", "$(GANG_GENERATION)", "--jobset-uid", "$(JOBSET_UID)",
                 "--listen", f"$(POD_IP):{api.BARRIER_PORT}", "--timeout", str(timeout)],
        "env": [
            {"name": "RESTART_ATTEMPT", "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.labels['{api.JOBSET_LABEL_RESTART_ATTEMPT}']"}}},
            {"name": "GANG_GENERATION", "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.labels['{GANG_GENERATION_LABEL}']"}}},
            {"name": "JOBSET_UID", "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.labels['{api.JOBSET_LABEL_UID}']"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "MUSTER_BARRIER_TOKEN", "value": token},
        ],
        "volumeMounts": [{"name": api.BARRIER_VOLUME, "mountPath": api.BARRIER_MOUNT, "readOnly": True}],
    }


def group_scheduling_volume(configmap):
    """The optional ConfigMap volume the barrier watches."""
    return {"name": api.BARRIER_VOLUME, "configMap": {"name": configmap, "optional": True}}

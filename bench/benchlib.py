"""Pieces shared by the end-to-end benchmarks (scale.py, release_latency.py):
the cluster's kubeconfig, subprocesses with their logs, the fake nodes coming
Ready, namespaces, the JobSet body, raw watch recording and small statistics.
Run under /usr/bin/python3 (Debian's python3-kubernetes and python3-yaml).
"""

import fcntl
import json
import math
import socket
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
STANDINS = ROOT / "e2e" / "standins"
PYTHON = "/usr/bin/python3"
sys.path.insert(0, str(STANDINS))

from kube import ApiError, Kube  # noqa: E402 - re-exported for the benchmarks
from node_agent import FAKE_NODE_LABEL, load_shape  # noqa: E402

JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{}/jobsets"

__all__ = ["ROOT", "STANDINS", "PYTHON", "JOBSETS", "ApiError", "Kube", "load_shape", "cluster_kubeconfig",
           "proc_figures", "Proc", "stop_all", "start_standin", "hold_fake_nodes", "wait_nodes_ready", "create_namespace",
           "delete_namespace", "terminating_namespaces", "wait_namespaces_gone", "wait_pods_gone", "jobset_body", "percentile", "logfmt", "EventsTail",
           "WatchRecorder", "register_webhook", "clean_up_on_sigterm"]


def clean_up_on_sigterm():
    """Makes SIGTERM (CI's time budget through `timeout`, a stopped job) stop
    the benchmark like Ctrl-C: its `finally` blocks run, so the processes it
    started stop and what it created in the cluster (namespaces, webhook
    registrations, a Kueue Topology) is deleted instead of changing the next
    test or benchmark. One-shot: `timeout` signals make's process group and
    make signals its children again, and a second KeyboardInterrupt inside a
    `finally` would cut the clean-up short (SIGKILL stays the backstop)."""
    def on_sigterm(*_):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)


def free_port():
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cluster_kubeconfig(given=None):
    """`given`, else the kubeconfig of the local control plane (e2e/cluster/up.sh
    starts it or reuses it; its last line on stdout is the path)."""
    if given:
        return given
    out = subprocess.run(["bash", str(ROOT / "e2e" / "cluster" / "up.sh")], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return out.strip().splitlines()[-1]


def proc_figures(pid):
    """(VmHWM in MB, CPU seconds) of a running process."""
    hwm = 0
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    return hwm, cpu_seconds(pid)


def cpu_seconds(pid):
    """CPU seconds (user + system, all threads) a process has used so far."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The processes of a benchmark round, by a word of their command line.
CPU_PROCESSES = (("apiserver", "kube-apiserver"), ("etcd", "etcd "), ("scheduler", "kube-scheduler"),
                 ("kcm", "kube-controller-manager"), ("jobset-standin", "jobset_controller.py"),
                 ("node-agent", "node_agent.py"), ("muster-controller", "muster-controller"),
                 ("muster-webhook", "muster-webhook"))


def processes():
    """(pid, raw command line) of each process running now; one gone
    meanwhile is left out."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                yield entry, handle.read()
        except OSError:
            continue


def cpu_by_process():
    """CPU seconds (user + system, all threads) so far of each process of
    CPU_PROCESSES, summed per name, plus "all" for the whole machine (from
    /proc/stat, every CPU's busy time). Subtract two readings for a round."""
    seconds = {name: 0.0 for name, _ in CPU_PROCESSES}
    for entry, cmdline in processes():
        program = cmdline.replace(b"\0", b" ").decode(errors="replace").split(" --", 1)[0] + " "
        name = next((name for name, word in CPU_PROCESSES if word in program), None)
        if name:
            try:
                seconds[name] += cpu_seconds(entry)
            except OSError:
                continue  # gone meanwhile
    with open("/proc/stat") as handle:
        cpu = [int(v) for v in handle.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest is inside user)
    seconds["all"] = sum(cpu[:8]) - cpu[3] - cpu[4] - cpu[7]
    seconds["steal"] = cpu[7]
    for key in ("all", "steal"):
        seconds[key] /= os.sysconf("SC_CLK_TCK")
    return seconds


def cpu_used(before, after):
    """One line: each process's CPU seconds between two cpu_by_process()
    readings, the machine's busy CPU seconds, and the seconds the hypervisor
    ran something else while this VM had work (steal: not in the machine's)."""
    parts = [f"{name} {after[name] - before[name]:.1f}" for name, _ in CPU_PROCESSES]
    return (f"CPU s: {', '.join(parts)}; machine {after['all'] - before['all']:.1f}, "
            f"stolen by the hypervisor {after['steal'] - before['steal']:.1f}")


def scheduler_url(kubeconfig):
    """Where the cluster's kube-scheduler serves /metrics (e2e/cluster/up.sh
    writes it beside the kubeconfig), or None."""
    path = pathlib.Path(kubeconfig).resolve().parent / "kube-scheduler.url"
    return (path.read_text().strip() if path.is_file() else "") or None  # empty: it serves nowhere


SCHEDULER_SUMS = {"scheduler_scheduling_algorithm_duration_seconds": "algorithm",
                  "scheduler_binding_duration_seconds": "binding",
                  "scheduler_e2e_scheduling_duration_seconds": "attempt"}


def scheduler_counts(url):
    """kube-scheduler's counters so far: its attempts by result, and the
    seconds (sum, count) of its algorithm, its bindings and whole attempts.
    An error instead of the counters when it does not answer."""
    if not url:
        return "kube-scheduler serves no metrics (see e2e/cluster/up.sh)"
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:
            text = answer.read().decode()
    except OSError as error:
        return f"kube-scheduler's metrics at {url}: {error}"
    counts = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name, value = line.split("{", 1)[0].split(" ", 1)[0], line.rsplit(" ", 1)[-1]
        if name == "scheduler_schedule_attempts_total":
            result = dict(re.findall(r'(\w+)="([^"]*)"', line)).get("result", "?")
            counts[result] = counts.get(result, 0) + float(value)
        elif name.endswith(("_sum", "_count")) and name.rsplit("_", 1)[0] in SCHEDULER_SUMS:
            key = (SCHEDULER_SUMS[name.rsplit("_", 1)[0]], name.rsplit("_", 1)[1])
            counts[key] = counts.get(key, 0) + float(value)
    return counts


def scheduling_done(before, after):
    """One line: kube-scheduler's attempts by result between two
    scheduler_counts(), and the mean milliseconds of each timed step."""
    if isinstance(before, str) or isinstance(after, str):
        return f"scheduler: {before if isinstance(before, str) else after}"
    results = [f"{key} {after[key] - before.get(key, 0):.0f}" for key in sorted(k for k in after if isinstance(k, str))]
    means = []
    for step in SCHEDULER_SUMS.values():
        count = after.get((step, "count"), 0) - before.get((step, "count"), 0)
        if count:
            total = after[(step, "sum")] - before.get((step, "sum"), 0)
            means.append(f"{step} {1000 * total / count:.2f} ms ({total:.1f} s in all)")
    return f"scheduler attempts: {', '.join(results) or 'none'}; mean {', '.join(means) or '-'}"


def request_counts(kube):
    """The apiserver's requests so far by (verb, resource/subresource), from
    its apiserver_request_total counters."""
    counts = {}
    for line in kube.text("/metrics").splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        resource = labels.get("resource", "") + ("/" + labels["subresource"] if labels.get("subresource") else "")
        key = (labels.get("verb", ""), resource)
        counts[key] = counts.get(key, 0) + float(line.rsplit(" ", 1)[1])
    return counts


def requests_made(before, after, top=8):
    """One line: the `top` most frequent requests between two request_counts()."""
    made = sorted(((after[k] - before.get(k, 0), k) for k in after), reverse=True)
    parts = [f"{verb} {resource} {int(n)}" for n, (verb, resource) in made[:top] if n > 0]
    return f"requests: {sum(n for n, _ in made):.0f}, most: {', '.join(parts)}"


class Proc:
    """A subprocess with its output in a log file, in a session of its own (a
    Ctrl-C reaches the benchmark only, which then stops it in order)."""

    def __init__(self, argv, log_path, name=None):
        self.name = name or pathlib.Path(str(argv[0])).name
        self.log_path = pathlib.Path(log_path)
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen([str(a) for a in argv], stdout=self.log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        self.pid = self.process.pid

    def output(self):
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")

    def alive(self):
        return self.process.poll() is None

    def terminate(self):
        if self.process.poll() is None:
            self.process.terminate()

    def wait(self, timeout):
        """After terminate(): waits, then SIGKILL. Returns the exit code."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            print(f"{self.name} (pid {self.pid}) did not stop in {timeout:.0f} s: killed", flush=True)
            self.process.kill()
            self.process.wait()
        if not self.log.closed:
            self.log.close()
        return self.process.returncode

    def stop(self, timeout=30):
        self.terminate()
        return self.wait(timeout)


def stop_all(procs, timeout=120):
    """Stops several Procs at once (SIGTERM to all, then waits for each)."""
    procs = [p for p in procs if p is not None]
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(timeout)


_held = []  # lock files held for the process's life


def hold_fake_nodes(kubeconfig, poll=1.0):
    """Waits until no other benchmark runs fake nodes on this cluster, then
    holds that until this process ends (an flock on `fake-nodes.lock` beside
    the kubeconfig; the kernel drops it however the process ends). Two
    benchmarks' node agents manage Nodes of the same names: a run started
    while an earlier one still deleted its nodes counted them Ready, saw
    them deleted under its own agent and waited out its 900 s timeout."""
    path = pathlib.Path(kubeconfig).resolve().parent / "fake-nodes.lock"
    if any(held.name == str(path) for held in _held):
        return path  # this process holds it already (a second flock would wait for itself)
    lock = open(path, "a+")
    said = False
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if not said:
                lock.seek(0)
                holder = lock.read().strip() or "another process"
                print(f"waiting for {holder} to end: it runs the fake nodes of this cluster ({path})", flush=True)
                said = True
            time.sleep(poll)
    lock.seek(0)
    lock.truncate()
    lock.write(f"pid {os.getpid()} ({' '.join(sys.argv[:1])})\n")
    lock.flush()
    _held.append(lock)
    return path


def start_standin(script, kubeconfig, *args, log_path, name=None):
    if script == "node_agent.py":
        hold_fake_nodes(kubeconfig)
    return Proc([PYTHON, STANDINS / script, "--kubeconfig", kubeconfig, *args], log_path, name=name or script)


def wait_nodes_ready(kube, expected, timeout, check=None):
    """Waits until `expected` fake nodes are Ready with the not-ready taint gone.
    Returns (nodes, seconds). check() is called every poll (e.g. to fail when a
    stand-in died)."""
    begun = time.monotonic()
    while True:
        nodes, _ = kube.list("/api/v1/nodes", labelSelector="=".join(FAKE_NODE_LABEL))
        ready = sum(1 for n in nodes if any(c["type"] == "Ready" and c["status"] == "True"
                                            for c in n["status"].get("conditions", []))
                    and not any(t["key"] == "node.kubernetes.io/not-ready"
                                for t in n["spec"].get("taints") or []))
        if ready >= expected:
            return nodes, time.monotonic() - begun
        if time.monotonic() - begun > timeout:
            raise SystemExit(f"nodes not Ready in time: {ready}/{len(nodes)}")
        if check:
            check()
        time.sleep(1)


def create_namespace(kube, name, timeout=60):
    """Creates the namespace and waits for its default service account's token
    (the ServiceAccount admission plugin refuses pods before)."""
    kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if kube.get(f"/api/v1/namespaces/{name}/serviceaccounts/default").get("secrets"):
                return
        except ApiError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"namespace {name}: no default service account token after {timeout} s")


def delete_namespace(kube, name):
    """Best effort; never raises (used in cleanup)."""
    try:
        kube.delete(f"/api/v1/namespaces/{name}")
    except Exception as error:  # noqa: BLE001
        print(f"cleanup: namespace {name}: {error}", flush=True)


def terminating_namespaces(kube):
    """The names of the namespaces being deleted, sorted."""
    return sorted(ns["metadata"]["name"] for ns in kube.list("/api/v1/namespaces")[0]
                  if ns.get("status", {}).get("phase") == "Terminating")


def wait_namespaces_gone(kube, timeout, names=None, poll=2.0):
    """Waits at most `timeout` seconds until no namespace is Terminating or,
    given `names`, until those namespaces are gone. A namespace's deletion
    (thousands of Events, Jobs, pods) loads the apiserver and etcd for tens of
    seconds after its pods went; a benchmark timed meanwhile measures it too.
    Returns (seconds waited, the names still there)."""
    begun = time.monotonic()
    while True:
        if names is None:
            left = terminating_namespaces(kube)
        else:
            present = {ns["metadata"]["name"] for ns in kube.list("/api/v1/namespaces")[0]}
            left = [name for name in names if name in present]
        waited = time.monotonic() - begun
        if not left or waited >= timeout:
            return waited, left
        time.sleep(poll)


def wait_pods_gone(kube, namespace, timeout):
    """Waits until the namespace holds no pod: the node agent has confirmed
    every deletion (stop it before, and they stay Terminating until the pod
    garbage collector removes them, 40 s after the nodes went) and their
    nodes are free."""
    deadline = time.monotonic() + timeout
    left = None
    while time.monotonic() < deadline:
        page = kube.get(f"/api/v1/namespaces/{namespace}/pods", limit=500)
        left = len(page.get("items", [])) + int(page.get("metadata", {}).get("remainingItemCount") or 0)
        if left == 0:
            return True
        time.sleep(2)
    print(f"  {namespace}: {left} pods still there after {timeout:.0f} s", flush=True)
    return False


def jobset_body(name, replicas, parallelism, pod_template, annotations=None):
    """One replicated job `workers` of `replicas` child Jobs × `parallelism` pods."""
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "annotations": dict(annotations or {})},
        "spec": {"replicatedJobs": [{"name": "workers", "replicas": replicas, "template": {"spec": {
            "parallelism": parallelism, "completions": parallelism, "backoffLimit": 0,
            "template": pod_template}}}]},
    }


class SpeedGauge:
    """How fast this machine does a fixed piece of work, apart from how busy
    it is: every `period` seconds a thread of the benchmark runs the same
    arithmetic loop and the same strided read of 16 MB, and records the CPU
    time that took (time.thread_time counts the time it ran, not its wait
    for a core). On a VM the same work can cost more CPU at some moments than
    at others (another guest's load on the host's shared caches, memory and
    clock, which steal time does not count): the placement benchmark's rounds
    cost 92 to 174 CPU s for the same work. Costs about 1 % of a core."""

    def __init__(self, period=1.0):
        self.period, self.samples, self.stop = period, [], threading.Event()
        self.data = bytes(16 << 20)
        self.thread = threading.Thread(target=self._run, daemon=True, name="speed-gauge")

    def _work(self):
        began, total = time.thread_time(), 0
        for i in range(100000):
            total += i * i
        total += sum(self.data[::64]) + sum(self.data[32::64])
        return time.thread_time() - began

    def _run(self):
        while not self.stop.wait(self.period):
            self.samples.append((time.monotonic(), 1000 * self._work()))

    def start(self):
        self.thread.start()
        return self

    def close(self):
        self.stop.set()
        self.thread.join(10)

    def between(self, began, ended):
        """The median CPU ms of the work over samples taken in [began, ended]
        (time.monotonic()), and how many there were."""
        taken = sorted(ms for t, ms in list(self.samples) if began <= t <= ended)
        return (taken[len(taken) // 2] if taken else float("nan")), len(taken)


def percentile(values, p):
    """Nearest-rank percentile of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def logfmt(line):
    """key=value fields of one log line (values may be "quoted")."""
    return {m.group(1): (m.group(3) if m.group(3) is not None else m.group(2))
            for m in re.finditer(r'(\w[\w.-]*)=(?:"([^"]*)"|(\S+))', line)}


class EventsTail:
    """Reads the node agent's --events JSONL file as it grows."""

    def __init__(self, path):
        self.path = pathlib.Path(path)
        self.offset = 0
        self.rest = b""

    def read(self):
        """The events appended since the last call."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self.rest + data
        lines = data.split(b"\n")
        self.rest = lines.pop()
        return [json.loads(line) for line in lines if line.strip()]


class WatchRecorder:
    """Records one watch stream as the apiserver sends it (Kube.watch_raw):
    one JSON event per line, bytes as received, into `out_path`, from
    resourceVersion `version` until stop(). A stream that ends or goes quiet is
    resumed from the last event's resourceVersion, so nothing is lost."""

    def __init__(self, kube, path, version, out_path, query=None):
        self.kube, self.path, self.version, self.query = kube, path, version, query
        self.out_path = pathlib.Path(out_path)
        self.lines = 0
        self.bytes = 0
        self.times = []  # wall-clock receive time of each line
        self.last_line = time.monotonic()
        self.connections = 0
        self.error = None
        self._stop = threading.Event()
        self._out = open(self.out_path, "wb")
        self._thread = threading.Thread(target=self._run, name=f"record {path}", daemon=True)
        self._thread.start()

    def _on_line(self, line):
        self._out.write(line)
        self.times.append(time.time())
        self.lines += 1
        self.bytes += len(line)
        self.last_line = time.monotonic()

    def _run(self):
        version = self.version
        try:
            while not self._stop.is_set():
                self.connections += 1
                version = self.kube.watch_raw(self.path, version, self._on_line, self._stop, query=self.query,
                                              read_timeout=3.0)
                if version is None:
                    self.error = "410 Gone: the recording has a gap"
                    return
        except Exception as error:  # noqa: BLE001 - reported by stop()
            self.error = repr(error)
        finally:
            self._out.flush()

    def quiet_for(self):
        return time.monotonic() - self.last_line

    def stop(self):
        """Stops and closes the recording; also writes <name>.times beside it,
        one receive time (wall clock, seconds) per line. Returns an error or None."""
        self._stop.set()
        self._thread.join(15)
        if not self._out.closed:
            self._out.close()
            self.out_path.with_suffix(".times").write_text("".join(f"{t:.6f}\n" for t in self.times))
        return self.error


def register_webhook(kube, kubeconfig, work, run, label, barrier_image=None, barrier_port=None):
    """Starts bin/muster-webhook on 127.0.0.1 and registers its three
    configurations for the namespaces labelled `label`=run. Returns the
    webhook's Proc and the registrations' paths (to delete)."""
    import yaml
    subprocess.run(["bash", str(ROOT / "deploy" / "gen-certs.sh"), "--out", str(work / "certs"), "--ip", "127.0.0.1"],
                   check=True, capture_output=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    extra = (["--barrier-image", barrier_image] if barrier_image else []) + \
        (["--barrier-port", str(barrier_port)] if barrier_port is not None else [])
    webhook = Proc([ROOT / "bin" / "muster-webhook", "--tls-cert-file", work / "certs/tls.crt", "--tls-key-file",
                    work / "certs/tls.key", "--listen", f"127.0.0.1:{port}", "--shutdown-delay", "0", "--quiet",
                    "--kubeconfig", kubeconfig, "--controller-user", "admin", *extra], work / "webhook.log",
                   name="muster-webhook")
    rendered = subprocess.run(["bash", str(ROOT / "deploy" / "render-webhooks.sh"), "--ca-file",
                               str(work / "certs/ca.crt"), "--url", f"https://127.0.0.1:{port}"],
                              check=True, capture_output=True, text=True).stdout
    paths = []
    for config in (d for d in yaml.safe_load_all(rendered) if d):
        config["metadata"]["name"] += f"-bench-{run}"
        for hook in config["webhooks"]:
            hook["namespaceSelector"] = {"matchLabels": {label: run}}
        plural = "mutatingwebhookconfigurations" if config["kind"].startswith("Mutating") \
            else "validatingwebhookconfigurations"
        path = f"/apis/admissionregistration.k8s.io/v1/{plural}"
        kube.create(path, config)
        paths.append(f"{path}/{config['metadata']['name']}")
    return webhook, paths

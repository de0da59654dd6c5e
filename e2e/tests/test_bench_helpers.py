"""The benchmarks' own helpers, where a mistake would change a figure."""

import copy
import os
import subprocess
import sys
import threading
import time

from conftest import ROOT, wait_for

sys.path.insert(0, str(ROOT / "bench"))

import benchlib  # noqa: E402
import placement  # noqa: E402
from kube import Kube  # noqa: E402


def pod(name, node=""):
    return {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {}}


def test_placement_pods_forget_a_pod_deleted_while_the_watch_relisted():
    """The placement benchmark waits, between rounds, for its namespace to be
    empty, and counts the next round's bound pods from the same watch. When
    5,000 pods are deleted at once the watch can expire (410 Gone) and list
    again; a pod deleted meanwhile sends no DELETED event. It stayed in the
    benchmark's view: the wait held for its whole 900 s timeout, and the pod
    would have counted as bound in the next round. The real watch loop
    (Kube.watch_forever) runs here against a fake apiserver that lists two
    bound pods, expires the watch, and lists one."""
    stop, listed = threading.Event(), []

    class Apiserver(Kube):
        def __init__(self):  # no kubeconfig: list and watch are faked below
            pass

        def list(self, path, **query):
            listed.append(path)
            if len(listed) == 2:
                stop.set()  # the watch loop ends once this list is handled
                return [pod("b", "n-2")], "2"
            return [pod("a", "n-1"), pod("b", "n-2")], "1"

        def _watch_once(self, path, query, version, on_event, stop):
            return None  # 410 Gone: list again

    pods = placement.watch_pods(Apiserver(), "bench", stop)
    assert stop.wait(10), "the fake apiserver was not listed twice"
    wait_for(lambda: len(listed) == 2 and pods.bound() == 1, timeout=5,
             what=f"one bound pod after the second list, not {pods.seen}")
    assert sorted(pods.seen) == ["b"], "pod a was deleted between the lists"
    assert not pods.empty()
    pods.on_event("DELETED", pod("b", "n-2"))
    assert pods.empty()


def test_placement_counts_pods_pinned_with_their_job_from_its_watch():
    """The count of pods pinned with their Job comes from the benchmark's pod
    watch. Before, it was a LIST of the round's 5,000 pods by label, which
    timed out (30 s) on the busy apiserver after the last round of a
    full-size run and lost the run's summary."""
    pods = placement.Pods()
    pinned = pod("a", "n-1")
    pinned["metadata"]["labels"] = {placement.api.LABEL_JOB_PINNED: "true"}
    pods.on_event("ADDED", pinned)
    pods.on_event("ADDED", pod("b"))
    assert (pods.bound(), pods.pinned()) == (1, 1)
    pods.on_relist([pod("b", "n-2")])
    assert (pods.bound(), pods.pinned()) == (1, 0)


def test_placement_counts_pods_left_in_their_jobs_share_from_its_watch():
    """A pod of a Job pinned pod by pod counts as admitted with no patch when
    its nodeSelector holds every pair of the annotation its Job's template
    was given; one whose rack the pod route replaced does not."""
    pods = placement.Pods()
    share = f"{placement.BLOCK}=b1,{placement.RACK}=r2"
    for name, rack in (("a", "r2"), ("b", "r3")):
        item = pod(name, "n-1")
        item["metadata"]["annotations"] = {placement.api.ANNOTATION_JOB_SELECTOR: share}
        item["spec"]["nodeSelector"] = {placement.BLOCK: "b1", placement.RACK: rack, "pool": "x"}
        pods.on_event("ADDED", item)
    pods.on_event("ADDED", pod("c", "n-2"))
    assert (pods.bound(), pods.pinned(), pods.in_share()) == (3, 0, 1)


def test_placement_notes_when_the_first_and_the_last_pod_of_a_round_were_created():
    """Each round prints when its first and its last pod appeared, so that a
    slow round with placement shows whether the time went before the pods
    (the gate, the decision, the resume) or while they were made and bound:
    nothing before expect(), the first pod at once, the last at the count."""
    pods = placement.Pods()
    pods.on_event("ADDED", pod("left-over"))
    assert pods.created() == (None, None)
    pods.on_event("DELETED", pod("left-over"))
    before = time.monotonic()
    pods.expect(3)
    pods.on_event("ADDED", pod("a"))
    first, last = pods.created()
    assert first is not None and first >= before and last is None
    pods.on_event("MODIFIED", pod("a", "n-1"))
    pods.on_event("ADDED", pod("b"))
    assert pods.created() == (first, None)
    pods.on_event("ADDED", pod("c"))
    first_again, last = pods.created()
    assert first_again == first and last is not None and last >= first
    pods.expect(1)
    assert pods.created() == (None, None)


def test_placement_asks_with_kueues_slices_or_with_upstream_jobsets_exclusive_topology():
    """A round with placement asks for each Job in one domain by Kueue's
    slice annotations on the pod template; with --exclusive by upstream
    JobSet's exclusive-topology on the JobSet (the request of upstream's own
    exclusive-placement figure), and then by nothing else."""
    template = {"metadata": {"annotations": {"keep": "1"}}, "spec": {"containers": []}}
    sliced = benchlib.jobset_body("a", 2, 100, copy.deepcopy(template))
    placement.ask_for_placement(sliced, "block", 100, exclusive=False)
    annotations = sliced["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"keep": "1", "kueue.x-k8s.io/podset-slice-required-topology": placement.BLOCK,
                           "kueue.x-k8s.io/podset-slice-size": "100"}
    assert placement.EXCLUSIVE not in (sliced["metadata"].get("annotations") or {})

    exclusive = benchlib.jobset_body("b", 2, 50, copy.deepcopy(template))
    placement.ask_for_placement(exclusive, "rack", 50, exclusive=True)
    assert exclusive["metadata"]["annotations"] == {placement.EXCLUSIVE: placement.RACK}
    annotations = exclusive["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"keep": "1"}


def test_placement_counts_etcd_slow_requests_and_compactions_of_the_round_only(tmp_path):
    """The per-round etcd line counts what etcd logged after the round began
    (lines before the offset belong to earlier rounds) and names the longest
    compaction, whatever unit etcd printed its duration in."""
    log = tmp_path / "etcd.log"
    before = ('2026-11-26 21:02:30.580015 I | mvcc: finished scheduled compaction at 1 (took 9.5s)\n'
              '2026-11-26 21:02:31.000000 W | etcdserver: read-only range request "key:\\"/a\\" " '
              'with result "range_response_count:1 size:5" took too long (120ms) to execute\n')
    log.write_text(before +
                   '2026-11-26 21:11:00.000000 W | etcdserver: read-only range request "key:\\"/b\\" " '
                   'with result "range_response_count:1 size:5" took too long (1.2s) to execute\n'
                   '2026-11-26 21:11:01.000000 W | etcdserver: request "header:<ID:1 > txn:<...>" '
                   'with result "size:20" took too long (150.5ms) to execute\n'
                   '2026-11-26 21:12:28.987704 I | mvcc: store.index: compact 3335104\n'
                   '2026-11-26 21:12:30.000000 I | mvcc: finished scheduled compaction at 2 (took 850.1ms)\n'
                   '2026-11-26 21:12:32.815542 I | mvcc: finished scheduled compaction at 3 (took 3.59906892s)\n')
    line = placement.etcd_slowness(str(log), len(before.encode()))
    assert line == "etcd: 2 requests took over 100 ms; 2 compactions (longest 3.59906892s)"
    assert placement.etcd_slowness(None, 0) == "etcd: log not found"
    assert abs(placement.go_seconds("850.1ms") - 0.8501) < 1e-9
    assert abs(placement.go_seconds("12µs") - 12e-6) < 1e-12


def test_benchmarks_wait_for_namespaces_being_deleted():
    """A benchmark started while an earlier one's namespace was still being
    deleted measured that deletion too (a CI-size placement ratio of 1.767
    right after one of 1.023). wait_namespaces_gone waits for every
    Terminating namespace, or for the named ones to be gone, and says what
    is left when its time is up."""
    class Apiserver(Kube):
        def __init__(self, pages):  # no kubeconfig: list is faked below
            self.pages = pages

        def list(self, path, **query):
            assert path == "/api/v1/namespaces"
            page = self.pages.pop(0) if len(self.pages) > 1 else self.pages[0]
            return [{"metadata": {"name": name}, "status": {"phase": phase}} for name, phase in page], "1"

    active, going = ("mine", "Active"), ("old", "Terminating")
    kube = Apiserver([[active, going], [active, going], [active]])
    waited, left = benchlib.wait_namespaces_gone(kube, 10, poll=0.01)
    assert left == [] and not kube.pages[0].count(going)
    assert benchlib.wait_namespaces_gone(Apiserver([[active, going]]), 0.05, poll=0.01)[1] == ["old"]
    assert benchlib.wait_namespaces_gone(Apiserver([[active, going]]), 0.05, ["old", "gone"], poll=0.01)[1] == ["old"]
    kube = Apiserver([[active, going], [active]])
    assert benchlib.wait_namespaces_gone(kube, 10, ["old"], poll=0.01)[1] == []
    assert benchlib.terminating_namespaces(Apiserver([[going, ("a", "Terminating"), active]])) == ["a", "old"]


def test_a_second_benchmark_waits_for_the_fake_nodes_of_the_first(tmp_path):
    """Two benchmarks' node agents manage Nodes of the same names. A
    placement run started while the run before it still deleted its nodes
    counted those Ready, lost them under its own agent and waited out its
    900 s timeout. The second now waits, saying for whom, until the first
    process ends (here: holds the lock 2 s), and holds it after."""
    kubeconfig = tmp_path / "admin.kubeconfig"
    kubeconfig.write_text("")
    first = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; sys.path.insert(0, sys.argv[1]); import benchlib; "
         "benchlib.hold_fake_nodes(sys.argv[2]); print('held', flush=True); time.sleep(2)",
         str(ROOT / "bench"), str(kubeconfig)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().strip() == "held"
        began = time.monotonic()
        path = benchlib.hold_fake_nodes(str(kubeconfig), poll=0.05)
        waited = time.monotonic() - began
        # The first holds it 2 s after saying so, then exits (the kernel
        # drops the lock as its files close, just before its exit status).
        assert waited > 1.5, f"the second holder got the lock after {waited:.2f} s, while the first ran"
        assert first.wait(timeout=10) == 0
        assert f"pid {os.getpid()}" in path.read_text()
        assert benchlib.hold_fake_nodes(str(kubeconfig)) == path, "a second call in one process waits for itself"
    finally:
        first.kill()
        first.wait()


def test_the_clusters_scheduler_serves_the_counters_a_round_subtracts(kubeconfig):
    """e2e/cluster/up.sh serves kube-scheduler's metrics on loopback and says
    where beside the kubeconfig; the placement benchmark prints, per round,
    the difference of two readings: attempts by result and mean step times."""
    url = benchlib.scheduler_url(kubeconfig)
    assert url and url.startswith("http://127.0.0.1:"), url
    counts = benchlib.scheduler_counts(url)
    assert isinstance(counts, dict) and ("binding", "count") in counts, counts
    before = {"scheduled": 10.0, ("binding", "sum"): 1.0, ("binding", "count"): 10.0}
    after = {"scheduled": 5010.0, "unschedulable": 7.0, ("binding", "sum"): 11.0, ("binding", "count"): 5010.0}
    assert benchlib.scheduling_done(before, after) == \
        "scheduler attempts: scheduled 5000, unschedulable 7; mean binding 2.00 ms (10.0 s in all)"
    assert benchlib.scheduling_done(before, "down") == "scheduler: down"


def test_the_speed_gauge_reports_the_cpu_time_of_its_work_in_a_window():
    """The placement benchmark prints, per round, the median CPU ms of the
    gauge's fixed work in that round's window only."""
    gauge = benchlib.SpeedGauge(period=0.05).start()
    began = time.monotonic()
    # Samples, not sleeps: on 2 busy cores one piece of work can take long.
    wait_for(lambda: sum(1 for t, _ in list(gauge.samples) if t >= began) >= 5, timeout=60,
             what="5 samples of the gauge")
    ended = time.monotonic()
    wait_for(lambda: gauge.samples[-1][0] > ended, timeout=60, what="a sample after the window")
    gauge.close()
    median, count = gauge.between(began, ended)
    assert 5 <= count < len(gauge.samples), (count, len(gauge.samples))
    assert 0 < median < 1000, median
    nothing, none = gauge.between(ended + 100, ended + 200)
    assert none == 0 and nothing != nothing  # NaN: no sample in the window

"""The benchmarks' own helpers, where a mistake would change a figure."""

import sys
import threading

from conftest import ROOT, wait_for

sys.path.insert(0, str(ROOT / "e2e" / "bench"))

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

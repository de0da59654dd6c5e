"""End-to-end: nodes that become Ready minutes apart.

The slow pool appears (Ready) 70 s after the fast one; the node agent's
volume sync period is shortened to 10 s (kubelet's is 60 s), so both release
paths are live: the push, and the ConfigMap volume at the next sync. No main
container may start before the last pod has started, and all main containers
start within 1 s of each other.
"""

import pytest

from conftest import CONTROLLER, Controller, wait_for
from test_controller import JOBSETS, SHAPES, get_configmap, jobset_body, read_events, starts
import muster_api as api  # noqa: E402

pytestmark = pytest.mark.skipif(not CONTROLLER.exists(), reason=f"{CONTROLLER} is not built (make)")

LATE_SECONDS = 70


def test_pools_ready_minutes_apart_start_together(kube, kubeconfig, namespace, run_standin, tmp_path):
    events = tmp_path / "events.jsonl"
    shape = tmp_path / "minutes-pool.yaml"
    shape.write_text((SHAPES / "slow-pool.yaml").read_text().replace(
        "readyAfterSeconds: 8", f"appearAfterSeconds: {LATE_SECONDS}\n    readyAfterSeconds: {LATE_SECONDS}"))
    run_standin("node_agent.py", "--shape", shape, "--work-dir", tmp_path / "agent",
                "--sync-period", 10, "--events", events, "--delete-nodes", "--max-run-seconds", 30)
    run_standin("jobset_controller.py", "--namespace", namespace)
    controller = Controller(kubeconfig, namespace, tmp_path / "controller.log")
    try:
        name = "gang"
        kube.create(JOBSETS.format(namespace), jobset_body(name))  # barrier timeout 120 s

        # The fast pods are at their barriers long before the slow pool exists,
        # through several volume syncs: none may pass.
        wait_for(lambda: len(starts(read_events(events), api.BARRIER_CONTAINER, namespace)) >= 2,
                 timeout=60, interval=0.5, what="the fast pods at their barriers")
        wait_for(lambda: False if get_configmap(kube, namespace, name) is None else True,
                 timeout=LATE_SECONDS + 60, interval=1, what="the release ConfigMap")

        def all_main_started():
            main = starts(read_events(events), "main", namespace)
            return main if len(main) == 4 else None

        main = wait_for(all_main_started, timeout=60, interval=0.2, what="all 4 main containers started")
        barrier = starts(read_events(events), api.BARRIER_CONTAINER, namespace)
        assert len(barrier) == 4, barrier
        waited = max(barrier.values()) - min(barrier.values())
        assert waited > LATE_SECONDS - 15, f"the pools were only {waited:.0f} s apart"
        assert min(main.values()) >= max(barrier.values()), (main, barrier)
        spread = max(main.values()) - min(main.values())
        assert spread < 1.0, main
        print(f"barriers started {waited:.0f} s apart; main containers started within {spread * 1000:.0f} ms, "
              f"{(min(main.values()) - max(barrier.values())) * 1000:.0f} ms after the last barrier start")
        assert len(controller.releases()) == 1, controller.output()
    finally:
        controller.stop()
        print(controller.output())

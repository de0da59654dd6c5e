"""`make demo` (scripts/demo.py), the README's first command, on the local
control plane: it must gang-start its JobSet (two of its pods real containers
on the real node), then place two JobSets by rack (the second waits for the
first's racks and is placed when it finishes), print both summaries and exit
0, and leave nothing behind but the control plane."""

import re
import subprocess

from conftest import ROOT


def test_demo_shows_both_halves_and_cleans_up(kube, kubeconfig):
    result = subprocess.run(["/usr/bin/python3", str(ROOT / "scripts" / "demo.py"), "--stagger", "6"],
                            capture_output=True, text=True, timeout=600)
    print(result.stdout[-6000:], result.stderr[-3000:])
    assert result.returncode == 0
    out = result.stdout
    # The gang start: 16 pods on the fake nodes, 2 as real containers on the real node.
    assert "OK: no main container started before the last of the 18 pods" in out
    assert "Summary of muster-demo-" in out and "held" in out
    assert "run as real containers on 127.0.0.2" in out
    assert out.count(" train-real-0-") == 2
    # Placement: the tree with its free room, before and after, by the plugin.
    assert "kubectl muster tree --topology muster-demo" in out and "the tree after" in out
    assert out.count("block-1") >= 2 and "rack-2" in out
    # The first JobSet's replicated jobs each land in one rack, shown per pod.
    assert re.search(r"first: workers block-\d/rack-\d +\[[RD]{8}\]", out), out
    # The second waits, with the reason the user sees, then is placed.
    assert "Event PlacementWaiting on second" in out
    assert "kubectl muster status second: placement waiting" in out
    assert re.search(r"second: workers block-\d/rack-\d +\[[RD]{8}\]", out), out
    assert "OK: every replicated job's pods share one rack" in out
    assert re.search(r"  first: workers in block-\d/rack-\d, ps in block-\d/rack-\d; released", out), out
    # Its namespace is going away, its webhook registrations and Topology are gone.
    namespaces, _ = kube.list("/api/v1/namespaces")
    assert all(not n["metadata"]["name"].startswith("muster-demo-") or n["metadata"].get("deletionTimestamp")
               or n["status"].get("phase") == "Terminating" for n in namespaces)
    for plural in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        configs, _ = kube.list(f"/apis/admissionregistration.k8s.io/v1/{plural}")
        assert not [c for c in configs if "muster-demo-" in c["metadata"]["name"]]
    topologies, _ = kube.list("/apis/kueue.x-k8s.io/v1beta2/topologies")
    assert not [t for t in topologies if t["metadata"]["name"] == "muster-demo"]

"""`make demo` (scripts/demo.py), the README's first command, on the local
control plane: it must gang-start its JobSet (two of its pods real containers
on the real node), print the summary and exit 0, and leave nothing behind but
the control plane."""

import subprocess

from conftest import ROOT


def test_demo_gang_starts_its_jobset_and_cleans_up(kube, kubeconfig):
    result = subprocess.run(["/usr/bin/python3", str(ROOT / "scripts" / "demo.py"), "--stagger", "6"],
                            capture_output=True, text=True, timeout=300)
    print(result.stdout[-3000:], result.stderr[-3000:])
    assert result.returncode == 0
    # 16 pods on the fake nodes, 2 as real containers on the real node.
    assert "OK: no main container started before the last of the 18 pods" in result.stdout
    assert "Summary of muster-demo-" in result.stdout and "held" in result.stdout
    assert "run as real containers on 127.0.0.2" in result.stdout
    assert result.stdout.count(" train-real-0-") == 2
    # Its namespace is going away, its webhook registrations are gone.
    namespaces, _ = kube.list("/api/v1/namespaces")
    assert all(not n["metadata"]["name"].startswith("muster-demo-") or n["metadata"].get("deletionTimestamp")
               or n["status"].get("phase") == "Terminating" for n in namespaces)
    for plural in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        configs, _ = kube.list(f"/apis/admissionregistration.k8s.io/v1/{plural}")
        assert not [c for c in configs if "muster-demo-" in c["metadata"]["name"]]

"""The controller against an apiserver whose certificate its CA does not
verify (a rotated certificate, a stale CA bundle): it keeps retrying with
backoff, says why on /readyz and in its log, and does not exit, so a pod is
not put into a crash loop (issue 16)."""

import base64
import pathlib
import subprocess

import pytest
import yaml

from conftest import Controller, wait_for
from test_controller_ha import get


def wrong_ca_kubeconfig(kubeconfig, tmp_path):
    """The cluster's kubeconfig with another CA (made here) as the trust root."""
    key, crt = tmp_path / "other-ca.key", tmp_path / "other-ca.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(key), "-out", str(crt), "-days", "2", "-subj", "/CN=not-the-cluster-ca"],
                   check=True, capture_output=True)
    config = yaml.safe_load(pathlib.Path(kubeconfig).read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["certificate-authority-data"] = base64.b64encode(crt.read_bytes()).decode()
    path = tmp_path / "wrong-ca.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return str(path)


@pytest.mark.parametrize("leader_elect", [True, False], ids=["leader-elected", "alone"])
def test_tls_verification_failure_is_retried_and_reported_not_fatal(kubeconfig, namespace, tmp_path, leader_elect):
    bad = wrong_ca_kubeconfig(kubeconfig, tmp_path)
    controller = Controller(bad, namespace, tmp_path / "controller.log", fast_lease=leader_elect,
                            extra=() if leader_elect else ("--leader-elect", "false"))
    try:
        port = wait_for(controller.metrics_port, timeout=30, what="the controller's HTTP server")

        def not_ready_with_reason():
            status, body = get(port, "/readyz")
            return (status, body) if status == 503 and ("TLS" in body or "certificate" in body) else None

        status, body = wait_for(not_ready_with_reason, timeout=60, interval=0.5,
                                what="/readyz saying why (TLS)")
        print(body)
        # Still running well past several attempts: no crash loop.
        wait_for(lambda: ("lease-acquire-failed" if leader_elect else "watch-relisted") in controller.output(),
                 timeout=60, interval=0.5, what="the retries logged")
        assert controller.alive(), controller.output()[-2000:]
        assert get(port, "/healthz")[0] == 200
        line = next(line for line in controller.output().splitlines()
                    if ("lease-acquire-failed" if leader_elect else "watch-relisted") in line)
        assert "TLS" in line or "certificate" in line, line
    finally:
        controller.stop()
        print(controller.output()[-3000:])

"""The images `make images` wrote (build/images/images.txt: archive,
reference, manifest digest per line) and the real nodes' label, for the
tests, the benchmarks and the demo that run pods on the local cluster's real
nodes."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
IMAGES_TXT = ROOT / "build" / "images" / "images.txt"
# The label and NoSchedule taint key of the real nodes (e2e/cluster/node.sh).
REAL_NODE_LABEL = "muster.dev/real-node"


class Image:
    def __init__(self, archive, ref, digest):
        self.archive, self.ref, self.digest = pathlib.Path(archive), ref, digest


def images():
    """Archive stem ("muster-barrier", "busybox", ...) -> Image."""
    found = {}
    for line in IMAGES_TXT.read_text().splitlines():
        archive, ref, digest = line.split()
        found[pathlib.Path(archive).stem] = Image(archive, ref, digest)
    return found


def image_refs():
    """Archive stem -> image reference."""
    return {name: image.ref for name, image in images().items()}

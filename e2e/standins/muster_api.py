"""muster's contract with the cluster, for the e2e suite, the stand-ins, the
benchmarks and the demo: read from lib/muster/muster_api.h, where each name is
defined once, so a name changed there changes here too.

    import muster_api as api
    api.BARRIER_CONTAINER      # "group-scheduling-init"
    api.configmap_name("js")   # "js-group-scheduling"

Every `#define MUSTER_X "..."` (or number) of the header is an attribute X
here (the MUSTER_ prefix dropped); the upstream names keep their prefixes
(JOBSET_LABEL_UID, KUEUE_ANNOTATION_REQUIRED), and the enum
muster_barrier_exit's members are BARRIER_EXIT_* numbers.
"""
import pathlib
import re

HEADER = pathlib.Path(__file__).resolve().parent.parent.parent / "lib" / "muster" / "muster_api.h"


def _load(text):
    names = {}
    for m in re.finditer(r'^#define ([A-Z][A-Z0-9_]*) (?:"([^"]*)"|(\d+))\s*$', text, re.M):
        key, string, number = m.groups()
        names[key] = string if string is not None else int(number)
    enum = re.search(r"enum muster_barrier_exit \{([^}]*)\}", text)
    for m in re.finditer(r"([A-Z][A-Z0-9_]*) = (\d+)", enum.group(1)):
        names[m.group(1)] = int(m.group(2))
    out = {}
    for key, value in names.items():
        out[key[len("MUSTER_"):] if key.startswith("MUSTER_") else key] = value
    return out


globals().update(_load(HEADER.read_text()))


def configmap_name(jobset):
    """The release of record's ConfigMap for a JobSet name."""
    return jobset + CONFIGMAP_SUFFIX  # noqa: F821 (from the header)

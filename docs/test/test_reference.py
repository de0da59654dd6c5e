"""The flag reference is the binaries' own --help: docs/reference/<binary>.md
is what scripts/gen-reference writes from `bin/<binary> --help` now, and no
table of README.md or docs/ lists a binary's flags by hand (the tables drifted
from the code; a link to the reference replaces them). Needs `make all`, no
cluster."""

import difflib
import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARIES = ["muster-controller", "muster-webhook", "muster-topology", "muster-barrier", "kubectl-muster"]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def binary_flags():
    """Every --flag some binary's --help names."""
    flags = set()
    for name in BINARIES:
        out = subprocess.run([str(ROOT / "bin" / name), "--help"], check=True, stdout=subprocess.PIPE,
                             text=True).stdout
        flags.update(FLAG.findall(out))
    return flags


def hand_written_flag_rows(text, flags):
    """The table rows whose first cell begins with one of `flags` (a flag
    table's rows), as 'LINE: FLAGS'; a figure's row that names a flag further
    on is not one."""
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        cells = line.strip().split("|")
        if line.lstrip().startswith("|") and len(cells) > 2 and cells[1].strip().lstrip("`").startswith("--"):
            named = [f for f in FLAG.findall(cells[1]) if f in flags]
            if named:
                rows.append(f"{number}: {' '.join(named)}")
    return rows


def test_each_committed_reference_is_what_help_prints_now(tmp_path):
    subprocess.run([str(ROOT / "scripts" / "gen-reference"), str(tmp_path)], check=True)
    stale = []
    for name in BINARIES:
        committed = (ROOT / "docs" / "reference" / f"{name}.md").read_text().splitlines()
        now = (tmp_path / f"{name}.md").read_text().splitlines()
        if committed != now:
            stale.append("\n".join(difflib.unified_diff(committed, now, f"docs/reference/{name}.md",
                                                        f"bin/{name} --help", lineterm="")))
    assert not stale, "run `make reference`:\n" + "\n".join(stale)


def test_the_reference_index_links_every_binary():
    index = (ROOT / "docs" / "reference" / "README.md").read_text()
    assert [n for n in BINARIES if f"({n}.md)" not in index] == []


def test_no_table_of_the_readme_or_docs_lists_flags_by_hand():
    flags = binary_flags()
    assert {"--placement-replace-after", "--barrier-port", "--watch", "--explain"} <= flags
    pages = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    # The history quotes benchmark command lines as they were run.
    found = [f"{p.relative_to(ROOT)}:{row}" for p in pages if p.name != "benchmarks-history.md"
             for row in hand_written_flag_rows(p.read_text(), flags)]
    assert found == [], "flag tables by hand (link docs/reference/ instead):\n" + "\n".join(found)


def test_a_flag_table_is_found_and_other_tables_are_not():
    text = ("| flag | default |\n|---|---|\n| `--push-port N` | 9443 |\n"
            "| `--rounds 1 --replicas 20` | 51.5 s |\n| push, `--push-port 0` | 1 s |\n"
            "| figure | `--push-port` in prose |\n")
    assert hand_written_flag_rows(text, {"--push-port", "--levels"}) == ["3: --push-port"]

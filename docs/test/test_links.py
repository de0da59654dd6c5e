"""Every relative link of README.md and docs/ resolves: the file or folder
exists, and an #anchor is a heading of that file by GitHub's slug rules
(docs/test/mdlinks.py). No cluster is needed."""

import pathlib

import mdlinks

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_link_of_the_readme_and_docs_resolves():
    cache = {}
    files = mdlinks.markdown_files([ROOT / "README.md", ROOT / "docs"])
    assert len(files) > 10, files
    problems = [p for f in files for p in mdlinks.broken_links(f, cache)]
    assert problems == [], "broken links:\n" + "\n".join(problems)


def test_slugs_follow_githubs_rules():
    # Each pair is a heading of this repository and the anchor GitHub gives it.
    assert mdlinks.slug("The namespaced install: `deploy/namespaced`") == "the-namespaced-install-deploynamespaced"
    assert mdlinks.slug("Not covered (stated plainly)") == "not-covered-stated-plainly"
    assert mdlinks.slug("1. Let JobSets ask for a gang start") == "1-let-jobsets-ask-for-a-gang-start"
    assert mdlinks.slug("`kubectl muster tree [JOBSET]`") == "kubectl-muster-tree-jobset"
    assert mdlinks.slug("Metrics and NetworkPolicy") == "metrics-and-networkpolicy"
    assert mdlinks.slug("**Bold** and [a link](x.md) — a dash") == "bold-and-a-link--a-dash"
    assert mdlinks.slug("kube_client, 5,000 pods") == "kube_client-5000-pods"


def test_repeated_headings_are_numbered_and_fenced_ones_do_not_count():
    text = "# Logs\n\n## Logs\n\n```sh\n# not a heading\n```\n\n## Logs\n"
    assert mdlinks.anchors(text) == {"logs", "logs-1", "logs-2"}


def test_a_missing_file_and_a_missing_anchor_are_reported(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## Install steps\n")
    (tmp_path / "page.md").write_text(
        "# Page\n\n"
        "[fine](other.md#install-steps) [here](#page) [folder](.)\n"
        "[gone](missing.md) and [no anchor](other.md#install)\n"
        "[self](#nowhere) ![image](pic.png)\n"
        "`[in code](missing-too.md)` [out](https://example.com/x.md)\n"
        "```\n[fenced](missing-three.md)\n```\n"
        "[ref]: also-missing.md\n")
    problems = mdlinks.broken_links(tmp_path / "page.md")
    # "FILE:LINE: TARGET: why" -> "LINE TARGET"
    assert [" ".join(p[len(str(tmp_path / "page.md")) + 1:].split(": ")[:2]) for p in problems] == [
        "4 missing.md", "4 other.md#install", "5 #nowhere", "5 pic.png", "10 also-missing.md"]

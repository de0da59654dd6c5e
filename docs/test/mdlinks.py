"""The links of Markdown files, checked the way GitHub renders them.

A relative link must name a file or folder that exists; a `#anchor` (alone,
or after a .md file) must be the slug of a heading of that file, by GitHub's
rules: the heading's text as rendered (code spans, emphasis and link syntax
gone), lowercased, every character that is not a letter, digit, space,
hyphen or underscore dropped, spaces turned into hyphens, and a repeated slug
given -1, -2, ... in order. Links inside fenced code blocks and code spans
are text, not links; so are headings inside fenced code blocks. External
links (a scheme such as https: or mailto:) are not fetched.

    python3 docs/test/mdlinks.py FILE_OR_FOLDER...   prints each broken link, exit 1 if any
"""

import pathlib
import re
import sys
import unicodedata

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# [text](target) or [text](target "title"), and ![alt](target); the text may hold
# one level of brackets ([`a[0]`](x)).
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _text_lines(text):
    """Yields (line number, line, in a fenced block) for every line."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            yield number, line, True
            continue
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip()[len(m.group(1)):].strip():
                fence = None
            yield number, line, True
            continue
        yield number, line, False


def _rendered(heading):
    """A heading's text as GitHub renders it, before the slug is taken."""
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links and images keep their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = re.sub(r"(\*\*|__|\*|~~)", "", text)  # emphasis (a lone _ stays: GitHub keeps it)
    return text


def slug(heading):
    """GitHub's anchor for a heading's text (without the -N of a repeat)."""
    out = []
    for ch in _rendered(heading).strip().lower():
        if ch in " -_" or unicodedata.category(ch)[0] in "LN":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def anchors(text):
    """Every anchor a file's headings give, repeats numbered as GitHub does."""
    seen = {}
    found = set()
    for _, line, fenced in _text_lines(text):
        m = None if fenced else HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(text):
    """Yields (line number, target) for every link outside code."""
    for number, line, fenced in _text_lines(text):
        if fenced:
            continue
        m = REFERENCE_DEFINITION.match(line)
        if m:
            yield number, m.group(1)
            continue
        bare = CODE_SPAN.sub(lambda c: " " * len(c.group(0)), line)
        for m in INLINE_LINK.finditer(bare):
            yield number, m.group(1)


def broken_links(path, _anchor_cache=None):
    """Every broken link of one Markdown file, as 'FILE:LINE: TARGET: why'."""
    cache = {} if _anchor_cache is None else _anchor_cache
    path = pathlib.Path(path)
    problems = []
    for number, target in links(path.read_text(encoding="utf-8")):
        if not target or SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, anchor = target.partition("#")
        where = path if not file_part else (path.parent / file_part)
        if not where.exists():
            problems.append(f"{path}:{number}: {target}: no such file or folder")
            continue
        if not anchor:
            continue
        if where.is_dir() or where.suffix.lower() != ".md":
            problems.append(f"{path}:{number}: {target}: an anchor into something that is not a Markdown file")
            continue
        key = where.resolve()
        if key not in cache:
            cache[key] = anchors(where.read_text(encoding="utf-8"))
        if anchor not in cache[key]:
            problems.append(f"{path}:{number}: {target}: no heading of {where.name} has the anchor #{anchor}")
    return problems


def markdown_files(paths):
    """The .md files named, and those under the folders named, sorted."""
    files = []
    for p in map(pathlib.Path, paths):
        files.extend(sorted(p.rglob("*.md")) if p.is_dir() else [p])
    return files


def main(argv):
    cache = {}
    problems = [p for f in markdown_files(argv) for p in broken_links(f, cache)]
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["README.md", "docs"]))

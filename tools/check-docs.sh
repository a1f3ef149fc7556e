#!/usr/bin/env bash
# Checks the documentation, fast and without a build (CI runs it first; ctest runs it too):
# - every relative link and image in README.md and docs/**/*.md names a file or folder that
#   exists, and every #anchor into a Markdown file (or within one) names one of its headings,
#   slugged as GitHub does (lower case, punctuation dropped, spaces to hyphens, -1, -2 ... for
#   repeated headings);
# - the repository speaks of the project, not of how its work was organised: no tracked file
#   uses the word for a working period (spelt in two parts below, so that this file passes).
# Prints each problem as file:line and exits 1 if there is any. Needs bash, python3 and git.
#
# usage: bash tools/check-docs.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

status=0
python3 - <<'EOF' || status=1
import os
import re
import sys
import urllib.parse

ROOT = os.getcwd()


def markdown_files():
    files = ["README.md"] if os.path.isfile("README.md") else []
    for folder, dirs, names in os.walk("docs"):
        dirs.sort()
        files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".md")]
    return files


def slug(heading):
    text = re.sub(r"`([^`]*)`", r"\1", heading)          # code spans keep their text
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def lines_outside_code(path):
    """(line number, text) of each line outside fenced code blocks, code spans blanked."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            stripped = line.lstrip()
            match = re.match(r"(`{3,}|~{3,})", stripped)
            if match:
                if fence is None:
                    fence = match.group(1)[0] * len(match.group(1))
                    continue
                if stripped.startswith(fence):
                    fence = None
                    continue
            if fence is not None:
                continue
            # A code span's text cannot hold a link: blank it, keeping a placeholder so that a
            # link whose text is code, [`x`](y), is still seen.
            yield number, re.sub(r"`[^`]*`", "CODE", line)


def raw_headings(path):
    """The headings' slugs computed from the raw text (code spans kept)."""
    seen, found, fence = {}, set(), None
    with open(path, encoding="utf-8") as f:
        for line in f:
            stripped = line.lstrip()
            match = re.match(r"(`{3,}|~{3,})", stripped)
            if match:
                fence = None if fence else match.group(1)
                continue
            if fence:
                continue
            match = re.match(r"\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            found.add(f"{base}-{count}" if count else base)
            seen[base] = count + 1
    return found


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
problems = []
for md in markdown_files():
    for number, line in lines_outside_code(md):
        for target in LINK.findall(line):
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, https:, mailto:, ...
                continue
            path_part, _, fragment = target.partition("#")
            path_part = urllib.parse.unquote(path_part)
            if path_part:
                if path_part.startswith("/"):
                    problems.append(f"{md}:{number}: absolute path {target}")
                    continue
                resolved = os.path.normpath(os.path.join(os.path.dirname(md), path_part))
            else:
                resolved = md
            if resolved.startswith(".."):
                problems.append(f"{md}:{number}: {target} points outside the repository")
                continue
            if not os.path.exists(resolved):
                problems.append(f"{md}:{number}: {target}: no such file")
                continue
            if fragment and resolved.endswith(".md") and os.path.isfile(resolved):
                if fragment.lower() not in raw_headings(resolved):
                    problems.append(f"{md}:{number}: {target}: no heading '#{fragment}' in "
                                    f"{resolved}")

for p in problems:
    print(p)
if problems:
    print(f"check-docs: {len(problems)} broken link(s)")
    sys.exit(1)
EOF

# The word, in any case, as a word of its own, singular or plural (git grep -niwE).
word="ses""sion"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  found=$(git grep -n -i -w -E "${word}s?" || true)
else
  found=$(grep -rn -i -w -E "${word}s?" --exclude-dir=.git --exclude-dir='build*' . || true)
fi
if [ -n "$found" ]; then
  echo "$found"
  echo "check-docs: the word '${word}' appears above"
  status=1
fi

if [ "$status" -eq 0 ]; then
  echo "check-docs: links and wording OK"
fi
exit "$status"

"""Make ``tests/golden/hashes.json``: the regression lock for issue 12's restructure.

Runs the README's commands (the main job, mips, the texture-file round trip, resize/sheet,
pot/swizzle) and, for every committed sample image, ``gputex capture SAMPLE --mips --level all
-o DIR`` and ``gputex upload SAMPLE --mips -o X.ktx2`` / ``-o X.dds``, in-process through
Typer's ``CliRunner``; records the SHA-256 of every file written and each command's stdout
(the adapter's name replaced by ``<adapter>``).

The committed hashes were made from main at commit f212c5a (before the restructure) on
lavapipe, with::

    PYTHONPATH=$PWD python3 tests/golden/make_hashes.py

``tests/golden/test_golden.py`` runs the same commands (``run_all`` below) and compares. Regenerate only
for a change that is meant to change output bytes, and say so in the commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HASHES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hashes.json")
SAMPLES = ["deep16_61x37.png", "disc_alpha_61x37.png", "gamma_lines_64x32.png",
           "gradient_61x37.png", "grey_61x37.png"]

# The README's commands, in its order ("S/" is the samples folder, "O/" the output folder).
README = [
    ["capture", "S/disc_alpha_61x37.png", "S/deep16_61x37.png", "-o", "O/"],
    ["capture", "S/gradient_61x37.png", "-o", "O/", "--mips", "--level", "all"],
    ["upload", "S/gradient_61x37.png"],
    ["upload", "S/gradient_61x37.png", "--mips", "-o", "O/gradient.ktx2"],
    ["validate", "O/gradient.ktx2"],
    ["info", "O/gradient.ktx2"],
    ["capture", "O/gradient.ktx2", "--level", "all", "-o", "O/again/"],
    ["capture", "S/gradient_61x37.png", "--resize", "32x0", "--mips", "--level", "1", "--sheet",
     "-o", "O/small/"],
    ["capture", "S/disc_alpha_61x37.png", "--pot", "--swizzle", "bgra", "-o", "O/disc_pot.png"],
]


def commands() -> list[list[str]]:
    """Every command the lock runs, with placeholders S/ and O/."""
    out = list(README)
    for name in SAMPLES:
        stem = name[:-4]
        out.append(["capture", f"S/{name}", "--mips", "--level", "all", "-o", f"O/mips/{stem}/"])
        out.append(["upload", f"S/{name}", "--mips", "-o", f"O/tex/{stem}.ktx2"])
        out.append(["upload", f"S/{name}", "--mips", "-o", f"O/tex/{stem}.dds"])
    return out


def run_all(out_dir: str) -> dict:
    """Run every command with outputs under ``out_dir``; return {"files": {relpath: sha256},
    "stdout": [[command, stdout], ...]} (paths relative, the adapter's name masked)."""
    from typer.testing import CliRunner

    from gputex.cli import app

    runner = CliRunner()
    samples = os.path.join(ROOT, "samples")
    transcripts = []
    cwd = os.getcwd()
    os.chdir(out_dir)  # relative paths in the transcripts, whatever the temp folder is called
    try:
        os.symlink(samples, "S")
        os.mkdir("O")
        for cmd in commands():
            r = runner.invoke(app, cmd)
            if r.exit_code != 0:
                raise AssertionError(f"{' '.join(cmd)}: exit {r.exit_code}\n{r.output}")
            text = re.sub(r"^adapter: .*$", "adapter: <adapter>", r.stdout, flags=re.M)
            transcripts.append([" ".join(cmd), text])
    finally:
        os.chdir(cwd)
    files = {}
    base = os.path.join(out_dir, "O")
    for d, _, names in sorted(os.walk(base)):
        for n in sorted(names):
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                files[os.path.relpath(p, base)] = hashlib.sha256(f.read()).hexdigest()
    return {"files": dict(sorted(files.items())), "stdout": transcripts}


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        got = run_all(d)
    import gputex

    got = {"made_from": "main f212c5a, lavapipe", "adapter": gputex.Session().name, **got}
    with open(HASHES, "w") as f:
        json.dump(got, f, indent=1)
        f.write("\n")
    print(f"{HASHES}: {len(got['files'])} files, {len(got['stdout'])} commands")


if __name__ == "__main__":
    sys.exit(main())

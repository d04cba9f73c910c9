"""Scale-out: the Converter, ``serve --stdio``, deterministic outputs, cache keys, manifests,
thread and memory caps."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

import imagecodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gputex.cli import app

runner = CliRunner()


def _sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def _tree_hashes(folder) -> dict[str, str]:
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            p = os.path.join(root, name)
            out[os.path.relpath(p, folder)] = _sha(p)
    return out


def _corpus(folder, seed: int, n: int = 6) -> list[str]:
    """8-bit RGBA, 8-bit grey, 16-bit RGB and odd sizes, built here."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for i in range(n):
        h, w = 17 + 5 * i, 23 + 3 * i
        kind = i % 3
        a = (rng.integers(0, 256, (h, w, 4), np.uint8) if kind == 0 else
             rng.integers(0, 256, (h, w), np.uint8) if kind == 1 else
             rng.integers(0, 65536, (h, w, 3), np.uint16))
        p = os.path.join(folder, f"img{i}.png")
        with open(p, "wb") as f:
            f.write(imagecodecs.png_encode(a))
        paths.append(p)
    return paths


def _levels(paths) -> int:
    """Files a ``capture --mips --level all`` of these inputs writes (one per level)."""
    from PIL import Image

    from gputex.layout import mip_count

    return sum(mip_count(*Image.open(p).size) for p in paths)


def _gputex(*args, input=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "gputex", *args], capture_output=True, input=input,
                          timeout=timeout)


# -- settings (pure) -----------------------------------------------------------------------

def test_settings_refuse_unknown_and_bad_values():
    from gputex.settings import SettingsError, make_options, normalised

    with pytest.raises(SettingsError, match=r"^levle: unknown option for capture \(known: alpha, "):
        make_options("capture", {"levle": 1})
    with pytest.raises(SettingsError, match=r"^color_space: 'lin' is not one of srgb, linear$"):
        make_options("capture", {"color_space": "lin"})
    with pytest.raises(SettingsError, match=r"^zstd: 30 is not a whole number in 1-22$"):
        make_options("upload", {"zstd": 30}, out="x.ktx2")
    with pytest.raises(SettingsError, match=r"^zstd: needs KTX2 output"):
        make_options("upload", {"zstd": 3}, out="x.dds")
    with pytest.raises(SettingsError, match=r"^threads: is a setting of the whole run"):
        make_options("capture", {"threads": 2})
    with pytest.raises(SettingsError, match=r"^mips: 1 is not true or false$"):
        make_options("capture", {"mips": 1})
    opts = make_options("capture", {"level": 2, "mips": True, "budget": 8, "png_compression": 6})
    assert (opts.level, opts.mips, opts.budget, opts.png_level) == ("2", True, 8 << 20, 6)
    # neutral settings do not enter the normalised form; mip settings only with mips
    assert normalised("capture", {"budget": 8, "max_pixels": 5}) == normalised("capture", {})
    assert normalised("capture", {"filter": "kaiser"}) == normalised("capture", {})
    assert normalised("capture", {"filter": "kaiser", "mips": True}) != normalised("capture", {"mips": True})
    assert normalised("capture", {"levels": 3}) == normalised("capture", {"levels": 3, "mips": True})
    assert normalised("capture", {"format": "RGBA8UNORM"})["format"] == "rgba8unorm"


def test_settings_cover_the_cli_options():
    """Every capture/upload option is a setting (same default) or known not to change bytes: an
    option added to the CLI but not to gputex.settings fails here, before it makes wrong keys."""
    import typer

    from gputex.cli_scale import _NOT_SETTINGS
    from gputex.settings import SPEC

    group = typer.main.get_command(app)
    for command in ("capture", "upload"):
        params = {p.name: p for p in group.commands[command].params}
        assert set(SPEC[command]) <= set(params), command
        assert set(params) - set(SPEC[command]) <= _NOT_SETTINGS, command
        for name, (_, default) in SPEC[command].items():
            d = params[name].default
            assert (d.value if hasattr(d, "value") else d) == default, (command, name)


def test_adapter_dependence():
    from gputex.settings import adapter_dependent

    assert not adapter_dependent("capture", {})
    assert not adapter_dependent("upload", {"format": "rgba16unorm"})
    assert adapter_dependent("capture", {"mips": True})
    assert adapter_dependent("upload", {"levels": 2})
    assert adapter_dependent("capture", {"bc_decode": "sampler"})


def test_memory_gate_admits_in_order_within_the_cap(tmp_path):
    from gputex.batch import Item
    from gputex.caps import MemoryGate, estimate_bytes

    rng = np.random.default_rng(5)
    paths = []
    for i, side in enumerate((512, 300, 700, 100)):
        p = tmp_path / f"{i}.png"
        p.write_bytes(imagecodecs.png_encode(rng.integers(0, 256, (side, side, 3), np.uint8)))
        paths.append(str(p))
    p16 = tmp_path / "deep.png"
    p16.write_bytes(imagecodecs.png_encode(rng.integers(0, 65536, (10, 20, 3), np.uint16)))
    assert [estimate_bytes(p) for p in paths] == [s * s * 4 for s in (512, 300, 700, 100)]
    assert estimate_bytes(str(p16)) == 10 * 20 * 4 * 2
    assert estimate_bytes(str(tmp_path / "missing.png")) == 0
    gate = MemoryGate(1)  # 1 MiB: one 512^2 RGBA (exactly 1 MiB) fits, then nothing else
    lane = gate.lane()
    assert lane.admit(Item(paths[0]), busy=False) and gate.used == 1 << 20
    assert not lane.admit(Item(paths[1]), busy=True)
    assert lane.admit(Item(paths[2]), busy=False)  # nothing else of this batch in flight: runs alone
    lane.done()
    lane.done()
    assert gate.used == 0
    assert lane.admit(Item(paths[1]), busy=True) and lane.admit(Item(paths[3]), busy=True)
    assert gate.used == (300 * 300 + 100 * 100) * 4
    lane.close()
    assert gate.used == 0


def test_thread_cap(monkeypatch):
    from gputex.caps import capped, set_thread_cap

    # setenv first so that monkeypatch restores the variables' absence: cap_jobs and
    # set_thread_cap set them, and a delenv of an absent variable records nothing to undo.
    for name in ("GPUTEX_THREADS", "LP_NUM_THREADS", "GPUTEX_WORKERS"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    assert capped(16) == 16
    set_thread_cap(3)
    assert (capped(16), capped(2), os.environ["LP_NUM_THREADS"]) == (3, 2, "3")
    from gputex.caps import cap_jobs

    assert cap_jobs(16, None) == 16 and "GPUTEX_WORKERS" not in os.environ
    assert cap_jobs(16, 8) == 4 and os.environ["GPUTEX_THREADS"] == "8"  # 2 pools x 4 processes
    assert "GPUTEX_WORKERS" not in os.environ
    assert cap_jobs(16, 4) == 4 and os.environ["GPUTEX_WORKERS"] == "0"  # under 6: threads only
    assert cap_jobs(2, 4) == 2


# -- Converter -----------------------------------------------------------------------------

@pytest.mark.gpu
def test_converter_matches_the_cli_and_memory_outputs(gpu, tmp_path, monkeypatch):
    import tempfile

    import gputex

    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where in-memory runs stage files

    paths = _corpus(tmp_path / "src", seed=11)
    r = runner.invoke(app, ["capture", *paths, "-o", str(tmp_path / "cli"), "--mips", "--level", "all",
                            "--jobs", "2"])
    assert r.exit_code == 0, r.stderr
    want = _tree_hashes(tmp_path / "cli")
    with gputex.Converter(threads=2) as conv:
        results = list(conv.convert(paths, "capture", out=str(tmp_path / "lib"), mips=True, level="all"))
        assert [x.source for x in results] == paths and all(x.ok for x in results)
        assert _tree_hashes(tmp_path / "lib") == want
        # bytes in, bytes out: the same files
        blobs = [(os.path.basename(p), open(p, "rb").read()) for p in paths] + [("junk.png", b"\x89PNG junk")]
        mem = list(conv.convert(blobs, "capture", out="-", mips=True, level="all"))
        assert [x.source for x in mem] == [b[0] for b in blobs]
        got = {name: hashlib.sha256(data).hexdigest() for x in mem if x.ok for name, data in x.data.items()}
        assert got == want
        assert not mem[-1].ok and mem[-1].error.startswith("junk.png: ")
        assert os.listdir(tmp_path / "tmp") == []  # staged inputs and outputs removed
        unstarted = conv.convert(blobs, "capture", out="-")
        del unstarted
        assert os.listdir(tmp_path / "tmp") == []
        # upload to KTX2 in memory == upload -o folder
        up = list(conv.convert(paths[:2], "upload", out="-", mips=True))
        r = runner.invoke(app, ["upload", *paths[:2], "-o", str(tmp_path / "up"), "--mips"])
        assert r.exit_code == 0, r.stderr
        assert {k: hashlib.sha256(v).hexdigest() for x in up for k, v in x.data.items()} == \
            _tree_hashes(tmp_path / "up")
        from gputex.settings import SettingsError

        with pytest.raises(SettingsError, match="^levle: unknown option"):
            conv.convert(paths, "capture", out=str(tmp_path / "x"), levle=1)


@pytest.mark.gpu
def test_converter_is_thread_safe(gpu, tmp_path):
    import gputex

    paths = _corpus(tmp_path / "src", seed=12, n=8)
    with gputex.Converter(threads=2) as conv:
        list(conv.convert(paths, "capture", out=str(tmp_path / "seq"), mips=True, level="all"))
        errors = []

        def run(i: int) -> None:
            try:
                res = list(conv.convert(paths, "capture", out=str(tmp_path / f"t{i}"), mips=True, level="all"))
                assert all(x.ok for x in res)
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    want = _tree_hashes(tmp_path / "seq")
    assert len(want) == _levels(paths)
    for i in range(3):
        assert _tree_hashes(tmp_path / f"t{i}") == want


@pytest.mark.gpu
def test_converter_memory_cap(gpu, tmp_path):
    import gputex

    paths = _corpus(tmp_path / "src", seed=13, n=6)
    with gputex.Converter(threads=2, memory=1) as conv:
        conv.gate.cap = 20000  # bytes: two of these images at most
        res = list(conv.convert(paths, "capture", out=str(tmp_path / "a")))
        assert all(x.ok for x in res)
        assert 0 < conv.gate.peak <= 20000 and conv.gate.used == 0
    r = runner.invoke(app, ["capture", *paths, "-o", str(tmp_path / "b")])
    assert r.exit_code == 0, r.stderr
    assert _tree_hashes(tmp_path / "a") == _tree_hashes(tmp_path / "b")


# -- determinism, keys, manifest -----------------------------------------------------------

@pytest.mark.gpu
def test_outputs_do_not_depend_on_jobs_or_time(gpu, tmp_path):
    """The same batch with --jobs 1 and --jobs 4 (worker processes), twice each: equal bytes."""
    paths = _corpus(tmp_path / "src", seed=21, n=5)
    runs = []
    for n, jobs in enumerate((1, 4, 1, 4)):
        out = tmp_path / f"run{n}"
        for args in (["capture", *paths, "-o", str(out / "png"), "--mips", "--level", "all"],
                     ["capture", *paths[:2], "-o", str(out / "float"), "--format", "rgba32float"],
                     ["upload", *paths, "-o", str(out / "ktx2"), "--mips", "--zstd", "3"],
                     ["upload", *paths, "-o", str(out / "dds"), "--mips", "--container", "dds"]):
            r = _gputex(*args, "--jobs", str(jobs))
            assert r.returncode == 0, r.stderr.decode()
        runs.append(_tree_hashes(out))
        if n == 1:
            time.sleep(1.1)  # a timestamp in any header would now differ
    assert len(runs[0]) == _levels(paths) + 2 + 5 + 5
    assert runs[0] == runs[1] == runs[2] == runs[3]
    # capped: 2 threads (so no worker processes), 1 MiB of images in flight
    r = _gputex("capture", *paths, "-o", str(tmp_path / "capped"), "--mips", "--level", "all", "--jobs", "4",
                "--threads", "2", "--memory", "1")
    assert r.returncode == 0, r.stderr.decode()
    assert {k: v for k, v in runs[0].items() if k.startswith("png/")} == \
        {"png/" + k: v for k, v in _tree_hashes(tmp_path / "capped").items()}
    ktx = open(tmp_path / "run0" / "ktx2" / "img0.ktx2", "rb").read()
    from gputex import __version__

    assert f"KTXwriter\0gputex {__version__}\0".encode() in ktx
    assert str(tmp_path).encode() not in ktx


@pytest.mark.gpu
def test_key_and_manifest(gpu, tmp_path):
    paths = _corpus(tmp_path / "src", seed=31, n=2)
    moved = tmp_path / "elsewhere" / "renamed.png"
    moved.parent.mkdir()
    moved.write_bytes(open(paths[0], "rb").read())

    def key(*args) -> list[str]:
        r = runner.invoke(app, ["key", *args])
        assert r.exit_code == 0, r.stderr
        return [ln.split("  ", 1)[0] for ln in r.stdout.splitlines()]

    k0, k1 = key(*paths)
    assert len(k0) == 64 and k0 != k1
    assert key(str(moved)) == [k0]  # content, not path
    assert key(paths[0], "--budget", "8", "--jobs", "3", "--max-pixels", "100000") == [k0]  # neutral options
    assert key(paths[0], "--mips") != [k0]
    assert key(paths[0], "--mips", "--filter", "kaiser") != key(paths[0], "--mips")
    assert key("--for", "upload", paths[0], "-o", "x.ktx2") != key("--for", "upload", paths[0], "-o", "x.dds")
    r = runner.invoke(app, ["key", paths[0], "--json", "--mips"])
    assert json.loads(r.stdout)["adapter"]["name"] == gpu.info.name
    assert json.loads(runner.invoke(app, ["key", paths[0], "--json"]).stdout)["adapter"] is None
    r = runner.invoke(app, ["key", paths[0], "--levle", "2"])
    assert r.exit_code == 2 and "No such option: --levle" in r.stderr

    man = tmp_path / "m" / "manifest.json"
    out = tmp_path / "out"
    r = runner.invoke(app, ["capture", *paths, str(tmp_path / "missing.png"), "-o", str(out), "--mips",
                            "--level", "all", "--manifest", str(man)])
    assert r.exit_code == 1
    doc = json.loads(man.read_text())
    assert doc["adapter"]["name"] == gpu.info.name and doc["adapter_dependent"] is True
    assert doc["failed"] == [{"source": str(tmp_path / "missing.png"),
                              "error": f"{tmp_path / 'missing.png'}: no such file"}]
    files = sorted(os.listdir(out))
    assert sorted(os.path.basename(e["output"]) for e in doc["outputs"]) == files
    want = {p: k for p, k in zip(paths, key(*paths, "--mips", "--level", "all"))}
    for e in doc["outputs"]:
        assert e["key"] == want[e["source"]]
        assert e["sha256"] == _sha(e["output"]) and e["bytes"] == os.path.getsize(e["output"])
        assert e["driver"] == gpu.info.driver and set(e["timings"]) >= {"decode", "upload", "mips", "capture"}

    # an assembled texture: one key over all its inputs
    rng = np.random.default_rng(32)
    layers = []
    for i in range(2):
        p = tmp_path / f"layer{i}.png"
        p.write_bytes(imagecodecs.png_encode(rng.integers(0, 256, (8, 8, 4), np.uint8)))
        layers.append(str(p))
    arr = tmp_path / "arr.ktx2"
    r = runner.invoke(app, ["upload", *layers, "--array", "-o", str(arr), "--manifest", str(man)])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(man.read_text())
    assert [e["output"] for e in doc["outputs"]] == [str(arr)] and doc["adapter_dependent"] is False
    assert doc["outputs"][0]["key"] == key("--for", "upload", *layers, "--array", "-o", str(arr))[0]
    assert doc["outputs"][0]["sha256"] == _sha(arr)


# -- serve ---------------------------------------------------------------------------------

def _serve(lines: list[bytes], *extra, timeout=120) -> tuple[subprocess.CompletedProcess, list[dict]]:
    r = _gputex("serve", "--stdio", "--threads", "2", *extra, input=b"".join(ln + b"\n" for ln in lines),
                timeout=timeout)
    return r, [json.loads(ln) for ln in r.stdout.decode().splitlines()]


@pytest.mark.gpu
def test_serve_requests(gpu, tmp_path):
    paths = _corpus(tmp_path / "src", seed=41, n=3)
    blob = base64.b64encode(open(paths[1], "rb").read()).decode()
    reqs = [
        {"id": 1, "command": "capture", "inputs": paths, "out": str(tmp_path / "s"), "mips": True, "level": "all",
         "key": True},
        {"id": "two", "command": "capture", "inputs": [{"name": "mem.png", "data": blob}], "out": "-"},
        {"id": 3, "command": "upload", "inputs": [paths[0]], "out": str(tmp_path / "t.ktx2"), "mips": True},
        {"id": 4, "command": "capture", "inputs": [str(tmp_path / "nope.png")], "out": str(tmp_path / "s")},
        {"id": 5, "command": "capture", "inputs": paths, "out": str(tmp_path / "s"), "color_space": "lin"},
        {"id": 6, "command": "key", "for": "capture", "inputs": paths, "mips": True, "level": "all"},
        {"id": 7, "command": "key", "inputs": [str(tmp_path / "nope.png")]},
    ]
    r, replies = _serve([json.dumps(q).encode() for q in reqs])
    assert r.returncode == 0, r.stderr.decode()
    by_id = {d["id"]: d for d in replies}
    assert sorted(by_id, key=str) == sorted([1, "two", 3, 4, 5, 6, 7], key=str) and len(replies) == 7
    assert by_id[1]["ok"] and [x["source"] for x in by_id[1]["results"]] == paths
    cli = runner.invoke(app, ["capture", *paths, "-o", str(tmp_path / "c"), "--mips", "--level", "all"])
    assert cli.exit_code == 0
    assert _tree_hashes(tmp_path / "s") == _tree_hashes(tmp_path / "c")
    keys = runner.invoke(app, ["key", *paths, "--mips", "--level", "all"]).stdout.split()[::2]
    assert [x["key"] for x in by_id[1]["results"]] == keys
    assert by_id[6] == {"id": 6, "ok": True, "results": [{"source": p, "key": k} for p, k in zip(paths, keys)]}
    assert by_id[7] == {"id": 7, "ok": False, "error": f"line 7: {tmp_path / 'nope.png'}: no such file"}
    mem = by_id["two"]["results"][0]
    assert mem["source"] == "mem.png" and mem["outputs"] == ["mem.png"]
    assert runner.invoke(app, ["capture", paths[1], "-o", str(tmp_path / "c1")]).exit_code == 0
    assert base64.b64decode(mem["data"]["mem.png"]) == open(tmp_path / "c1" / "img1.png", "rb").read()
    assert by_id[3]["ok"] and os.path.exists(tmp_path / "t.ktx2")
    assert not by_id[4]["ok"] and by_id[4]["results"][0]["error"] == f"{tmp_path / 'nope.png'}: no such file"
    assert by_id[5] == {"id": 5, "ok": False, "error": "line 5: color_space: 'lin' is not one of srgb, linear"}


def _fuzz_lines(rng) -> list[bytes]:
    """Malformed requests: none of them may run, each must get one error reply."""
    valid = {"command": "capture", "inputs": ["a.png"], "out": "o"}
    text = json.dumps(valid)
    lines: list[bytes] = []
    for i in range(60):
        kind = i % 10
        if kind == 0:  # random bytes (no newline)
            b = bytes(rng.integers(0, 256, int(rng.integers(1, 80)), np.uint8))
            lines.append(b.replace(b"\n", b" ").replace(b"\r", b" ") or b"x")
        elif kind == 1:  # truncated JSON
            lines.append(text[: int(rng.integers(1, len(text) - 1))].encode())
        elif kind == 2:  # JSON that is not an object
            lines.append(json.dumps([None, 1, "x", [], 2.5, True][int(rng.integers(0, 6))]).encode())
        elif kind == 3:  # unknown command
            lines.append(json.dumps(dict(valid, id=i, command=["x", None, 3, "serve", "key"][i % 5])).encode())
        elif kind == 4:  # bad inputs
            bad = [5, [], [""], [{"data": "@@@"}], [{"name": 3, "data": "aGk="}], [["a"]], None, "-"]
            lines.append(json.dumps(dict(valid, id=i, inputs=bad[int(rng.integers(0, len(bad)))])).encode())
        elif kind == 5:  # wrong-typed settings
            k, v = [("mips", "yes"), ("level", -1), ("levels", 0), ("zstd", 3), ("alpha_coverage", 2),
                    ("filter", "cubic"), ("budget", "big"), ("format", "nope8"), ("key", 1)][int(rng.integers(0, 9))]
            lines.append(json.dumps(dict(valid, id=i, **{k: v})).encode())
        elif kind == 6:  # unknown option / run option / bad id / bad out
            extra = [{"bogus": 1}, {"threads": 2}, {"id": {"a": 1}}, {"out": 7}, {"out": ""}][int(rng.integers(0, 5))]
            lines.append(json.dumps({**valid, "id": i, **extra}).encode())
        elif kind == 7:  # deep nesting
            lines.append(b"[" * 100000 + b"]" * 100000)
        elif kind == 8:  # not UTF-8
            lines.append(b'{"id": 1, "command": "\xff\xfe"}')
        else:  # empty or whitespace
            lines.append(b" " * int(rng.integers(0, 4)))
    return lines


@pytest.mark.gpu
def test_serve_survives_fuzzed_lines(gpu, tmp_path):
    rng = np.random.default_rng(1717)
    lines = _fuzz_lines(rng)
    good = json.dumps({"id": "last", "command": "capture", "inputs": _corpus(tmp_path / "src", 51, 1),
                       "out": str(tmp_path / "o")}).encode()
    r, replies = _serve(lines + [good])
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert len(replies) == len(lines) + 1
    assert replies[-1]["id"] == "last" and replies[-1]["ok"], replies[-1]
    for d in replies[:-1]:
        assert d["ok"] is False and d["error"].startswith("line "), d
        assert "internal error" not in d["error"], d
    # one reply per line, each naming its line
    assert sorted(int(d["error"].split()[1].rstrip(":")) for d in replies[:-1]) == list(range(1, len(lines) + 1))


@pytest.mark.gpu
def test_serve_sigterm_exits_cleanly(gpu, tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "gputex", "serve", "--stdio", "--threads", "2"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    src = _corpus(tmp_path / "src", 61, 1)
    p.stdin.write(json.dumps({"id": 1, "command": "capture", "inputs": src, "out": str(tmp_path / "o")}).encode()
                  + b"\n")
    p.stdin.flush()
    first = json.loads(p.stdout.readline())
    assert first["id"] == 1 and first["ok"]
    p.send_signal(signal.SIGTERM)  # stdin still open: the server is waiting for a line
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err.decode()
    assert out == b""


@pytest.mark.gpu
def test_serve_sigterm_during_a_request(gpu, tmp_path):
    """SIGTERM while a request runs: it stops between inputs, replies once, every output is whole."""
    from PIL import Image

    src = _corpus(tmp_path / "src", 62, 12)
    p = subprocess.Popen([sys.executable, "-m", "gputex", "serve", "--stdio", "--threads", "2"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(json.dumps({"id": 1, "command": "capture", "inputs": src[:1], "out": str(tmp_path / "w")}).encode()
                  + b"\n")
    p.stdin.flush()
    assert json.loads(p.stdout.readline())["ok"]  # warm
    p.stdin.write(json.dumps({"id": 2, "command": "capture", "inputs": src, "out": str(tmp_path / "o"),
                              "mips": True, "level": "all"}).encode() + b"\n")
    p.stdin.flush()
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err.decode()
    replies = [json.loads(ln) for ln in out.decode().splitlines()]
    assert [r["id"] for r in replies] == [2]
    done = replies[0]["results"]
    assert len(done) <= len(src) and all(r["ok"] for r in done)
    if len(done) < len(src):
        assert replies[0]["error"] == f"line 2: stopped (server shutting down) after {len(done)} result(s)"
    for r in done:
        for o in r["outputs"]:
            Image.open(o).load()  # whole
    assert not [n for n in os.listdir(tmp_path / "o") if n.startswith(".gputex-")]


class _CheckingConverter:
    """Checks a request's settings as the Converter does, converts nothing."""

    def convert(self, inputs, command, out, **settings):
        from gputex.settings import make_options

        settings.pop("key", None)
        make_options(command, settings, out=out)
        return iter(())

    def keys(self, inputs, command, out, **settings):
        return []


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
                     max_leaves=8)
_keys = st.sampled_from(["id", "command", "inputs", "out", "mips", "level", "format", "zstd", "key", "threads",
                         "color_space", "array", "bogus"])
_requests = st.dictionaries(_keys, _json | st.sampled_from(["capture", "upload", "key", ["a.png"], "all", True]),
                            max_size=6)


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")) |
                      _requests.map(lambda d: json.dumps(d).encode()), min_size=1, max_size=8))
def test_server_answers_every_line_once(lines):
    import io

    from gputex.serve import Server

    out = io.StringIO()
    server = Server(_CheckingConverter(), out, requests=2)
    for line in lines:
        server.submit(line)
    server.close()
    replies = [json.loads(ln) for ln in out.getvalue().splitlines()]
    assert len(replies) == len(lines)
    for d in replies:
        assert set(d) >= {"id", "ok"} and (d["ok"] or d["error"].startswith("line ")), d
        assert "internal error" not in d.get("error", ""), d


def test_serve_needs_stdio():
    r = runner.invoke(app, ["serve"])
    assert r.exit_code == 2 and "serve needs --stdio" in r.stderr


def test_serve_without_an_adapter_exits_3():
    r = _gputex("serve", "--stdio", "--adapter", "no-such-gpu-here", input=b"{}\n")
    assert r.returncode == 3 and r.stdout == b""
    assert r.stderr.decode().startswith("gputex: no GPU adapter matching 'no-such-gpu-here'")


def test_manifest_of_an_upload_that_made_no_device(gpu, tmp_path, monkeypatch):
    """``upload X.png --mips -o X.ktx2 --manifest M`` made by the inline host split (no device):
    the keys are those of the adapter a session would choose (``gputex key --for upload``), the
    manifest names it (``chosen`` false: no device was made); with no adapter at all the file is
    still written, its key is null with a warning, and the manifest is written."""
    from gputex import keys
    from gputex.errors import NoAdapterError

    for name in ("GPUTEX_ADAPTER", "GPUTEX_BACKEND", "GPUTEX_SPLIT_DEVICE", "GPUTEX_MIPS_ENGINE"):
        monkeypatch.delenv(name, raising=False)
    src = _corpus(tmp_path / "src", seed=33, n=1)[0]
    out, man = tmp_path / "x.ktx2", tmp_path / "m.json"
    r = runner.invoke(app, ["upload", src, "--mips", "-o", str(out), "--manifest", str(man), "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["adapter"] is None  # no device made
    doc = json.loads(man.read_text())
    assert doc["adapter"]["name"] == gpu.info.name and doc["adapter"]["chosen"] is False
    [entry] = doc["outputs"]
    k = runner.invoke(app, ["key", "--for", "upload", src, "--mips", "-o", str(out)])
    assert entry["key"] == k.stdout.split("  ", 1)[0] and entry["sha256"] == _sha(out)

    def none(*a, **k):
        raise NoAdapterError("no GPU adapter")

    monkeypatch.setattr(keys, "adapter_identity", none)
    out.unlink()
    r = runner.invoke(app, ["upload", src, "--mips", "-o", str(out), "--manifest", str(man)])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(man.read_text())
    assert doc["adapter"]["name"] is None and doc["outputs"][0]["key"] is None and out.exists()
    assert f"warning: {src}: no cache key (no GPU adapter)" in r.stderr

"""Hostile files, small machines and signals (issue 15): each class the attacks found, built
here from scratch, reproduced, and held."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bombs  # noqa: E402

# -- class 2: decompression bombs, refused before the large allocation -----------------------

_PEAK = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))  # a failing run must not take the machine
import gputex
from gputex.ktx2 import validate
from gputex.texfile import is_texture_file, read_texture_file
mode, path = sys.argv[1], sys.argv[2]
try:
    if mode == "validate":
        problems = [p for p in validate(open(path, "rb").read(), path) if p.severity != "warning"]  # + limits
        print("refused" if problems else "accepted", problems[:1])
    else:
        if mode == "info":
            read_texture_file(path, inflate=False)
        elif is_texture_file(path):
            read_texture_file(path)
        else:
            gputex.decode(path)
        print("accepted")
except gputex.LimitError as e:
    print("refused", e)
except gputex.GputexError as e:
    print("error", e)
except MemoryError:
    print("memoryerror")
print(int([l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]) // 1024)
"""


@pytest.fixture(scope="module")
def bomb_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bombs")
    out = {}
    for name, make in bombs.ALL.items():
        p = folder / name
        p.write_bytes(make())
        out[name] = str(p)
    return out


def _peak(mode: str, path: str) -> tuple[str, int]:
    r = subprocess.run([sys.executable, "-c", _PEAK, mode, path], capture_output=True, text=True,
                       timeout=300)
    lines = r.stdout.strip().splitlines()
    assert r.returncode == 0 and lines, r.stderr
    return lines[0], int(lines[-1])


@pytest.mark.parametrize("name", list(bombs.ALL))
def test_bomb_refused_from_the_header_under_300_mb(bomb_files, name):
    verdict, peak = _peak("decode", bomb_files[name])
    assert verdict.startswith("refused " + bomb_files[name] + ": "), verdict
    assert "raise it with --max-" in verdict, verdict
    assert peak < 300, f"{name}: peak RSS {peak} MB"


@pytest.mark.parametrize("name", [n for n in bombs.ALL if n.endswith(".ktx2")])
def test_info_and_validate_do_not_inflate_bombs(bomb_files, name):
    verdict, peak = _peak("info", bomb_files[name])
    assert verdict == "accepted" and peak < 300, (verdict, peak)
    verdict, peak = _peak("validate", bomb_files[name])
    assert verdict.startswith("refused") and "not inflated" in verdict and peak < 300, (verdict, peak)


# -- class 1: a small /dev/shm (Docker's 64 MB) --------------------------------------------

def _gputex(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "gputex", *args], capture_output=True, text=True,
                          errors="surrogateescape", env=dict(os.environ, **(env or {})), **kw)


def _large_images(folder, n, side, seed):
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    folder.mkdir()
    paths = []
    y, x = np.mgrid[0:side, 0:side]
    for i in range(n):
        a = np.stack([(x + i) % 256, (y * 3) % 256, (x ^ y) % 256, np.full_like(x, 255 - i)], axis=2).astype(np.uint8)
        a[rng.integers(0, side, 500), rng.integers(0, side, 500)] = rng.integers(0, 256, (500, 4), dtype=np.uint8)
        p = folder / f"big{i}.png"
        Image.fromarray(a).save(p, compress_level=1)
        paths.append(str(p))
    return paths


@pytest.fixture
def small_shm(tmp_path):
    mnt = tmp_path / "shm64"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"cannot mount a 64 MB tmpfs here (needs root): {r.stderr.strip()}")
    yield str(mnt)
    subprocess.run(["umount", "-l", str(mnt)])


@pytest.mark.gpu
def test_small_shared_memory_falls_back_with_identical_outputs(gpu, tmp_path, small_shm):
    """Four 3000x3000 RGBA images (36 MB each decoded) with --jobs 4 through a 64 MB tmpfs:
    every output written, byte-identical to the default run, nothing left in the tmpfs."""
    paths = _large_images(tmp_path / "src", 4, 3000, seed=15)
    outs = {}
    for name, env in (("default", {}), ("small", {"GPUTEX_SHM_DIR": small_shm})):
        out = tmp_path / name
        r = _gputex("capture", *paths, "-o", str(out), "--jobs", "4", env=env, timeout=600)
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
        outs[name] = {n: (out / n).read_bytes() for n in sorted(os.listdir(out))}
    assert sorted(outs["small"]) == [f"big{i}.png" for i in range(4)]
    assert outs["small"] == outs["default"]
    assert os.listdir(small_shm) == []


def _png(path, seed, shape=(6, 7, 3)):
    import numpy as np
    from PIL import Image

    a = np.random.default_rng(seed).integers(0, 256, shape, np.uint8)
    Image.fromarray(a).save(path)
    return a


# -- class 5: per-input errors instead of "internal error" ---------------------------------

@pytest.mark.gpu
def test_output_subfolder_that_is_a_file_fails_only_its_inputs(gpu, tmp_path):
    src = tmp_path / "tree"
    (src / "sub").mkdir(parents=True)
    a = _png(src / "top.png", 1)
    _png(src / "sub" / "inner.png", 2)
    out = tmp_path / "out"
    out.mkdir()
    (out / "sub").write_bytes(b"a file where the sub-folder goes")
    r = _gputex("capture", str(src), "-r", "-o", str(out), "--jobs", "1", timeout=120)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [f"gputex: {out / 'sub'}: cannot create output folder (exists and is not a folder)"]
    import numpy as np
    from PIL import Image

    assert np.array_equal(np.asarray(Image.open(out / "top.png"))[..., :3], a)


@pytest.mark.gpu
def test_list_file_that_is_not_utf8_names_its_files(gpu, tmp_path):
    """Latin-1 names in an @list: read as file names are (bytes kept), not refused."""
    name = os.fsdecode(b"caf\xe9.png")
    a = _png(tmp_path / name, 3)
    lst = tmp_path / "list.txt"
    lst.write_bytes(os.fsencode(str(tmp_path / name)) + b"\n# comment\n")
    out = tmp_path / "out"
    r = _gputex("capture", f"@{lst}", "-o", str(out), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert os.listdir(os.fsencode(str(out))) == [b"caf\xe9.png"]
    import numpy as np
    from PIL import Image

    assert np.array_equal(np.asarray(Image.open(out / name))[..., :3], a)


@pytest.mark.gpu
def test_unexpected_exception_in_a_batch_names_the_file_and_goes_on(gpu, tmp_path, monkeypatch):
    """Any exception inside a batch (here one gputex does not raise itself) is that input's
    error, naming it; "internal error" marks it as a gputex bug; the other inputs go on."""
    from typer.testing import CliRunner

    import gputex.pipeline as pipeline
    from gputex.cli import app

    good, bad = tmp_path / "good.png", tmp_path / "bad.png"
    _png(good, 4)
    _png(bad, 5)
    real = pipeline.upload_image

    def flaky(session, image, *args, **kwargs):
        if getattr(image, "source", "") == str(bad):
            raise KeyError("surprise")
        return real(session, image, *args, **kwargs)

    monkeypatch.setattr(pipeline, "upload_image", flaky)
    r = CliRunner().invoke(app, ["capture", str(bad), str(good), "-o", str(tmp_path / "out"), "--jobs", "1"])
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [f"gputex: {bad}: internal error: KeyError: 'surprise' "
                                     "(run with --debug for the traceback)"]
    assert os.listdir(tmp_path / "out") == ["good.png"]


# -- class 8 and 12: names that are not UTF-8, names with a newline ------------------------

@pytest.mark.gpu
def test_names_not_utf8_and_with_newlines(gpu, tmp_path):
    latin = os.fsdecode(b"caf\xe9.png")
    a = _png(tmp_path / latin, 6)
    nl = tmp_path / "two\nlines.png"
    nl.write_bytes(b"not an image")
    out = tmp_path / "out"
    r = _gputex("capture", str(tmp_path / latin), str(nl), "-o", str(out), timeout=120)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [f"gputex: {tmp_path}/two\\nlines.png: not an image (unknown or unsupported "
                                     "file format)"]
    assert os.listdir(os.fsencode(str(out))) == [b"caf\xe9.png"]
    import numpy as np
    from PIL import Image

    assert np.array_equal(np.asarray(Image.open(out / latin))[..., :3], a)
    r = _gputex("upload", str(tmp_path / latin), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "exact round trip" in r.stdout


# -- class 6: one dead codec worker --------------------------------------------------------

def _workers_of(pid: int) -> list[int]:
    """Codec worker processes of process ``pid``: its multiprocessing spawn children, or the
    children of its early fork server (``gputex.early``), living ones (not zombies)."""
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
            cmd = open(f"/proc/{entry}/cmdline", "rb").read()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if state != "Z":
            procs[int(entry)] = (int(ppid), cmd)
    own = procs.get(pid, (0, None))[1]  # the server forked from gputex itself has gputex's command line
    servers = {p for p, (ppid, cmd) in procs.items()
               if ppid == pid and (b"multiprocessing.forkserver" in cmd or cmd == own)}
    return sorted(p for p, (ppid, cmd) in procs.items()
                  if ppid == pid and b"spawn_main" in cmd or ppid in servers)


def _alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (not zombies)."""
    out = []
    for pid in pids:
        try:
            if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
                out.append(pid)
        except OSError:
            pass
    return out


def _random_batch(folder, n, side, seed):
    import numpy as np
    from PIL import Image

    folder.mkdir()
    rng = np.random.default_rng(seed)
    arrays = {}
    for i in range(n):
        a = rng.integers(0, 256, (side, side, 4), np.uint8)
        Image.fromarray(a).save(folder / f"img{i:02d}.png", compress_level=1)
        arrays[f"img{i:02d}.png"] = a
    return arrays


@pytest.mark.gpu
def test_a_killed_worker_is_replaced_and_the_batch_goes_on(gpu, tmp_path):
    import signal
    import time

    import numpy as np
    from PIL import Image

    arrays = _random_batch(tmp_path / "src", 14, 512, seed=6)
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "gputex", "capture", *sorted(str(tmp_path / "src" / n) for n in arrays),
                          "-o", str(out), "--jobs", "3", "--png-compression", "9"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not (out.exists() and os.listdir(out)):
        time.sleep(0.02)
    workers = _workers_of(p.pid)
    assert workers, "no codec worker processes"
    os.kill(workers[-1], signal.SIGKILL)
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 0, stderr
    assert stderr == ""
    assert stdout.count(" -> ") == 14
    assert sorted(os.listdir(out)) == sorted(arrays)
    for name, a in arrays.items():
        assert np.array_equal(np.asarray(Image.open(out / name)), a), name


def test_an_input_that_kills_workers_is_named_and_the_pool_lives_on():
    """A decoder crash on a hostile file kills its worker every time: after one retry alone on
    a fresh pool the input is blamed by name, and the next input is decoded as usual."""
    from gputex import workers
    from gputex.errors import GputexError

    with workers.codec_workers(2):
        with pytest.raises(GputexError) as e:
            workers._call("decode", os._exit, 3, path="evil.png")
        assert str(e.value) == ("evil.png: a codec worker process died while decoding it, twice (killed, out of "
                                "memory, or a decoder crash on this file)")
        assert workers._call("decode", abs, -7, path="next.png") == 7


# -- class 4: inputs are never overwritten -------------------------------------------------

@pytest.mark.gpu
def test_compare_diff_image_never_overwrites_an_input(gpu, tmp_path):
    from typer.testing import CliRunner

    from gputex.cli import app

    a, b = tmp_path / "A.png", tmp_path / "B.png"
    _png(a, 7)
    _png(b, 8)
    before = a.read_bytes()
    link = tmp_path / "hard.png"
    os.link(a, link)
    for target in (a, link):
        r = CliRunner().invoke(app, ["compare", str(a), str(b), "--diff-image", str(target)])
        assert r.exit_code == 2
        assert r.stderr.splitlines() == [f"gputex: {target}: output would overwrite the input {a}; choose another "
                                         "output name"]
        assert a.read_bytes() == before


@pytest.mark.gpu
@pytest.mark.parametrize("suffix", [".ktx2", ".dds"])
def test_upload_never_rewrites_its_input_texture_file(gpu, tmp_path, suffix):
    from typer.testing import CliRunner

    from gputex.cli import app

    src = tmp_path / "x.png"
    _png(src, 9, (4, 4, 4))
    tex = tmp_path / f"x{suffix}"
    r = CliRunner().invoke(app, ["upload", str(src), "-o", str(tex)])
    assert r.exit_code == 0, r.stderr
    before, mtime = tex.read_bytes(), tex.stat().st_mtime_ns
    r = CliRunner().invoke(app, ["upload", str(tex), "-o", str(tex)])
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [f"gputex: {tex}: output would overwrite the input {tex}; choose another "
                                     "output name"]
    assert tex.read_bytes() == before and tex.stat().st_mtime_ns == mtime


# -- class 9: hangs and runaway reads -------------------------------------------------------

@pytest.mark.gpu
def test_fifo_and_device_inputs_are_refused_at_once(gpu, tmp_path):
    fifo = tmp_path / "x.png"
    os.mkfifo(fifo)
    good = tmp_path / "good.png"
    _png(good, 10)
    out = tmp_path / "out"
    for args in (["capture", str(fifo), "/dev/zero", str(good), "-o", str(out)], ["upload", str(fifo), "/dev/zero"]):
        r = _gputex(*args, timeout=60)  # the FIFO used to block forever, /dev/zero to eat all memory
        assert r.returncode == 1
        assert r.stderr.splitlines() == [f"gputex: {fifo}: is a FIFO (named pipe), not a regular file",
                                         "gputex: /dev/zero: is a character device, not a regular file"]
    assert os.listdir(out) == ["good.png"]
    r = _gputex("info", str(fifo), timeout=60)
    assert r.returncode == 1 and r.stderr == f"gputex: {fifo}: is a FIFO (named pipe), not a regular file\n"
    r = _gputex("validate", str(fifo), timeout=60)
    assert r.returncode == 1 and r.stderr == f"gputex: {fifo}: is a FIFO (named pipe), not a regular file\n"


def test_glob_and_recursive_follow_each_real_folder_once(tmp_path):
    from gputex.batch import expand_inputs

    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    for name in ("a.png", "sub/b.png", "sub/c.txt", ".hidden.png"):
        (tree / name).write_bytes(b"x")
    os.symlink(".", tree / "link")  # a loop
    os.symlink("..", tree / "sub" / "up")  # a second one: Python's glob never ends
    got = subprocess.run([sys.executable, "-c", "import sys; from gputex.batch import expand_inputs; "
                          "print([i.path for i in expand_inputs([sys.argv[1]])])", f"{tree}/**/*.png"],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == repr([f"{tree}/a.png", f"{tree}/sub/b.png"])
    items = expand_inputs([str(tree)], recursive=True)
    assert [(i.path, i.subdir) for i in items] == [(f"{tree}/.hidden.png", ""), (f"{tree}/a.png", ""),
                                                   (f"{tree}/sub/b.png", "sub")]


# -- class 13: a palette PNG without PLTE ---------------------------------------------------

def test_palette_png_without_plte_is_refused(tmp_path):
    import zlib

    import gputex
    from gputex.errors import DecodeError

    def chunk(t, body):
        import struct

        return struct.pack(">I", len(body)) + t + body + struct.pack(">I", zlib.crc32(t + body))

    import struct

    ihdr = struct.pack(">IIBBBBB", 3, 2, 8, 3, 0, 0, 0)
    idat = zlib.compress(b"\0\x01\x02\x03" * 2)
    p = tmp_path / "noplte.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
    with pytest.raises(DecodeError) as e:
        gputex.decode(str(p))
    assert str(e.value) == f"{p}: palette image (colour type 3) without a PLTE chunk"
    good = tmp_path / "plte.png"  # the same with a palette decodes to it
    good.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"PLTE", bytes(range(12)))
                     + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
    assert gputex.decode(str(good)).pixels[:, :, :3].tolist() == [[[3, 4, 5], [6, 7, 8], [9, 10, 11]]] * 2


# -- class 7, 11 and SIGPIPE: signals as a terminal, kill and a pipe send them --------------

def _start_batch(tmp_path, n=14, side=384, jobs="3"):
    arrays = _random_batch(tmp_path / "src", n, side, seed=7)
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "gputex", "capture", *sorted(str(tmp_path / "src" / k) for k in arrays),
                          "-o", str(out), "--jobs", jobs, "--png-compression", "9"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    return p, out, arrays


def _outputs_whole(out, arrays):
    import numpy as np
    from PIL import Image

    names = sorted(os.listdir(out)) if out.exists() else []
    assert not [n for n in names if n.startswith(".gputex-")], names
    for name in names:
        assert np.array_equal(np.asarray(Image.open(out / name)), arrays[name]), name


def _no_shared_files_of(pid: int):
    import tempfile

    for folder in ("/dev/shm", tempfile.gettempdir()):
        if os.path.isdir(folder):
            left = [n for n in os.listdir(folder) if n.startswith(f".gputex-{pid}-")]
            assert not left, left


@pytest.mark.gpu
@pytest.mark.parametrize("delay", [0.0, 0.1, 0.3, 0.6, 1.0])
def test_ctrl_c_to_the_process_group_in_the_first_second(gpu, tmp_path, delay):
    """Ctrl-C on a terminal signals every process of the group, workers still starting
    included (``delay`` after the first worker process appears): one summary line on stderr
    (or one 'interrupted' before the batch began), exit 130, every output whole, no worker
    left, nothing left in shared memory."""
    import signal
    import time

    # enough work to outlast the 1 s delay on an idle machine: on the 2-core lavapipe machine 48
    # 384^2 images came to end 0.97 s after the first worker appeared, 96 512^2 ones take 2.1 s
    p, out, arrays = _start_batch(tmp_path, n=96, side=512)
    deadline = time.time() + 60
    while time.time() < deadline and not _workers_of(p.pid):
        time.sleep(0.005)
    time.sleep(delay)
    seen = _workers_of(p.pid)  # (forked by the early server they are not gputex's children: checked by pid)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=120)
    lines = err.splitlines()
    assert p.returncode == 130, err
    assert len(lines) == 1, err
    assert lines[0] == "gputex: interrupted" or (lines[0].startswith("gputex: interrupted after ")
                                                  and lines[0].endswith("; every output written is complete")), err
    _outputs_whole(out, arrays)
    time.sleep(1.0)
    assert _workers_of(p.pid) == [] and _alive(seen) == []
    _no_shared_files_of(p.pid)


@pytest.mark.gpu
@pytest.mark.parametrize("group", [False, True], ids=["process", "group"])
def test_sigterm_stops_with_a_summary_and_143(gpu, tmp_path, group):
    import signal
    import time

    p, out, arrays = _start_batch(tmp_path)
    deadline = time.time() + 60
    while time.time() < deadline and not (out.exists() and os.listdir(out)):
        time.sleep(0.02)
    (os.killpg if group else os.kill)(p.pid, signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    lines = err.splitlines()
    assert p.returncode == 143, err
    assert len(lines) == 1, err  # no "leaked semaphore" warning, no traceback
    assert lines[0].startswith("gputex: terminated after ") and lines[0].endswith("every output written is complete")
    _outputs_whole(out, arrays)
    _no_shared_files_of(p.pid)


@pytest.mark.gpu  # needs an adapter: `gputex info` in a subprocess lists it
def test_broken_pipe_exits_0_quietly():
    r = subprocess.run(f"{sys.executable} -m gputex info | head -2 >/dev/null; echo $? ${{PIPESTATUS[0]}}",
                       shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120)
    assert r.stderr == ""
    r = subprocess.run(f"{sys.executable} -m gputex info | true; echo ${{PIPESTATUS[0]}}",
                       shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120)
    assert (r.stdout, r.stderr) == ("0\n", "")


# -- class 10: stray temporaries -----------------------------------------------------------

def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.mark.gpu
def test_any_batch_sweeps_shared_files_of_killed_runs(gpu, tmp_path):
    """kill -9 leaves a shared-memory file (a batch's own cleanup cannot run); the next batch
    removes it whatever its --jobs (it used to take one with worker processes)."""
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    if shm is None:
        pytest.skip("no /dev/shm here")
    stale = os.path.join(shm, f".gputex-{_dead_pid()}-leftover.part")
    with open(stale, "wb") as f:
        f.write(b"\0" * 4096)
    src = tmp_path / "x.png"
    _png(src, 11)
    r = _gputex("capture", str(src), "-o", str(tmp_path / "out"), "--jobs", "1", timeout=120)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(stale)


@pytest.mark.gpu
@pytest.mark.parametrize("command", ["capture", "upload"])
def test_an_output_name_that_is_a_folder_leaves_no_temporary(gpu, tmp_path, command):
    src = tmp_path / "x.png"
    _png(src, 12)
    out = tmp_path / "out"
    taken = out / ("x.png" if command == "capture" else "x.ktx2")
    taken.mkdir(parents=True)
    r = _gputex(command, str(src), "-o", str(out), timeout=120)
    assert r.returncode == 1
    assert sorted(os.listdir(out)) == [taken.name]  # no .gputex-<pid>-*.part beside it
    assert os.listdir(taken) == []
    assert r.stderr.splitlines() == [f"gputex: {taken}: is a folder; cannot write the output there"]


# -- class 14: --jobs capped by the inputs -------------------------------------------------

def test_jobs_never_exceed_the_inputs():
    from gputex.workers import worker_count

    assert [worker_count(48, n) for n in (1, 2, 3, 100)] == [0, 2, 3, 48]
    assert [worker_count(j, 10) for j in (1, 2, 3)] == [0, 0, 3]


@pytest.mark.gpu
def test_two_inputs_with_jobs_48_start_at_most_four_workers(gpu, tmp_path):
    import time

    paths = []
    for i in range(2):
        _png(tmp_path / f"{i}.png", 20 + i, (64, 64, 3))
        paths.append(str(tmp_path / f"{i}.png"))
    p = subprocess.Popen([sys.executable, "-m", "gputex", "capture", *paths, "-o", str(tmp_path / "out"),
                          "--jobs", "48"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    most = 0
    while p.poll() is None:
        most = max(most, len(_workers_of(p.pid)))
        time.sleep(0.01)
    assert p.returncode == 0, p.stderr.read()
    assert 0 < most <= 4  # 2 decode + 2 encode processes (it was 96)


# -- class 15 and the portable fallbacks: same outputs, same file modes --------------------

@pytest.mark.gpu
@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_portable_fallbacks_give_the_same_outputs_and_modes(gpu, tmp_path, umask):
    """With /dev/shm, O_TMPFILE, MAP_POPULATE and the spawn signal mask all turned off
    (GPUTEX_PORTABLE=all, what macOS/Windows/FUSE get), a worker-process batch and a KTX2
    write give byte-identical files with the umask's modes (the rename fallback made 0600)."""
    import stat

    srcs = []
    for i in range(3):
        _png(tmp_path / f"p{i}.png", 30 + i, (40, 50, 4))
        srcs.append(str(tmp_path / f"p{i}.png"))
    got = {}
    for name, env in (("default", {}), ("portable", {"GPUTEX_PORTABLE": "all"})):
        out = tmp_path / name
        old = os.umask(umask)
        try:
            r = _gputex("capture", *srcs, "-o", str(out), "--jobs", "3", "--mips", "--level", "all", env=env,
                        timeout=300)
            assert r.returncode == 0 and r.stderr == "", r.stderr
            r = _gputex("upload", srcs[0], "--mips", "-o", str(out / "t.ktx2"), env=env, timeout=300)
            assert r.returncode == 0 and r.stderr == "", r.stderr
        finally:
            os.umask(old)
        got[name] = {n: ((out / n).read_bytes(), stat.S_IMODE((out / n).stat().st_mode)) for n in os.listdir(out)}
    assert len(got["default"]) == 3 * 6 + 1
    assert got["portable"] == got["default"]
    assert {mode for _, mode in got["portable"].values()} == {0o666 & ~umask}


# -- class 12: C-library chatter becomes at most one line per input -------------------------

def _png_with_bad_sbit(path):
    import struct
    import zlib

    import imagecodecs
    import numpy as np

    def chunk(t, body):
        return struct.pack(">I", len(body)) + t + body + struct.pack(">I", zlib.crc32(t + body))

    a = np.random.default_rng(12).integers(0, 256, (4, 5, 3), np.uint8)
    png = imagecodecs.png_encode(a)
    # libpng: "sBIT: invalid". The suggested palette (PLTE, allowed in RGB images) keeps the file
    # on libpng's path: gputex's own PNG decoder (gputex.pngdec) ignores sBIT and says nothing.
    path.write_bytes(png[:33] + chunk(b"sBIT", b"\x00\x09\x00") + chunk(b"PLTE", b"\x10\x20\x30") + png[33:])
    return a


@pytest.mark.gpu
@pytest.mark.parametrize("jobs", ["1", "3"], ids=["threads", "workers"])
def test_c_library_chatter_is_one_warning_line_per_input(gpu, tmp_path, jobs):
    import numpy as np
    from PIL import Image

    sbit = tmp_path / "sbit.png"
    a = _png_with_bad_sbit(sbit)
    tile = tmp_path / "tile.tiff"
    tile.write_bytes(bombs.tiff_tile_bomb(4096))  # within the budget; libtiff complains, then fails
    good = tmp_path / "good.png"
    _png(good, 13)
    out = tmp_path / "out"
    r = _gputex("capture", str(sbit), str(tile), str(good), "-o", str(out), "--jobs", jobs, timeout=300)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [f"gputex: warning: {sbit}: PNG warning: sBIT: invalid",
                                     f"gputex: {tile}: corrupt image data (decoder error -2)"]
    assert np.array_equal(np.asarray(Image.open(out / "sbit.png"))[..., :3], a)
    assert sorted(os.listdir(out)) == ["good.png", "sbit.png"]


def test_chatter_summary():
    from gputex.chatter import summarize

    assert summarize("f.png", []) is None
    assert summarize("f.png", ["", "  "]) is None
    assert summarize("f.png", ["PNG warning: a", "PNG warning: a"]) == "f.png: PNG warning: a"
    assert summarize("f.png", ["x  y", "z", "w"]) == "f.png: x y (+2 more lines)"


# -- class 3: backends refuse what they cannot do, never zeros ------------------------------

def test_capability_check_without_gl():
    """The check itself, with sessions that only say their backend (no GL needed)."""
    from types import SimpleNamespace

    from gputex.capabilities import require
    from gputex.errors import GPUError, UnsupportedError

    gl = SimpleNamespace(info=SimpleNamespace(backend="OpenGL"))
    vk = SimpleNamespace(info=SimpleNamespace(backend="Vulkan"))
    for op in ("mips", "bc-decode", "compressed-copy"):
        require(vk, op, "a.png")
        with pytest.raises(UnsupportedError) as e:
            require(gl, op, "a.png")
        assert isinstance(e.value, GPUError) and isinstance(e.value, NotImplementedError)
    with pytest.raises(UnsupportedError) as e:
        require(gl, "mips", "a.png")
    assert str(e.value) == ("a.png: mip generation is not supported on the OpenGL backend (wgpu's GL backend "
                            "returns zeros for some levels); use --backend vulkan, metal or dx12")
    require(gl, "upload", "a.png")  # what works there is not refused


@pytest.mark.gpu
def test_generate_mips_refuses_on_a_gl_session_before_any_work(gpu, monkeypatch):
    import numpy as np

    import gputex
    from gputex.errors import UnsupportedError

    monkeypatch.setattr(gpu.info, "backend", "OpenGL")
    with pytest.raises(UnsupportedError) as e:
        gputex.upload(gpu, gputex.from_array(np.zeros((8, 8, 4), np.uint8), source="z.png"), mips=True)
    assert str(e.value).startswith("z.png: mip generation is not supported on the OpenGL backend")


@pytest.fixture(scope="module")
def gl_backend():
    """Skips unless an OpenGL session can be made, tried in a child process: where the GL device
    fails (the H200 machine: "Parent device is lost"), the process that tried could make no
    Vulkan device afterwards, and later tests in this one would fail for it."""
    import subprocess
    import sys

    probe = ("import gputex\n"
             "try:\n"
             "    s = gputex.Session(backend='gl')\n"
             "except Exception as e:\n"
             "    print(f'no OpenGL adapter here: {type(e).__name__}: {e}'.splitlines()[0])\n"
             "else:\n"
             "    print('ok' if s.info.backend == 'OpenGL' else f'--backend gl gave {s.name}')\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    said = done.stdout.strip().splitlines()[-1:] or [f"the probe exited {done.returncode}"]
    if said != ["ok"]:
        pytest.skip(said[0])


@pytest.mark.gpu
def test_gl_backend_refuses_mips_and_bc_and_matches_vulkan_elsewhere(gpu, gl_backend, tmp_path):
    """On wgpu's OpenGL backend (Mesa llvmpipe through EGL here): mips and BC files are one
    error line each (they were zeros / garbage with exit 0); plain captures, compare and stats
    equal the Vulkan run."""
    import numpy as np
    from PIL import Image

    s = tmp_path / "s.png"
    _png(s, 40, (32, 64, 4))
    g = tmp_path / "g.png"
    _png(g, 41, (32, 64, 1)[:2])
    bc = tmp_path / "bc1.dds"
    from gputex.dds import write_dds
    from gputex.formats import get_format
    from gputex.texfile import TextureFile

    blocks = np.random.default_rng(42).integers(0, 256, 2 * 2 * 8, np.uint8).tobytes()
    bc.write_bytes(b"".join(bytes(p) for p in write_dds(TextureFile(get_format("bc1-rgba-unorm"), 8, 8,
                                                                    levels=[blocks]))))
    outs = {}
    for backend in ("vulkan", "gl"):
        out = tmp_path / backend
        r = _gputex("capture", str(s), str(g), "-o", str(out), "--backend", backend, "--jobs", "1", timeout=300)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        outs[backend] = {n: np.asarray(Image.open(out / n)) for n in sorted(os.listdir(out))}
    assert outs["gl"].keys() == outs["vulkan"].keys() and all(
        np.array_equal(outs["gl"][n], outs["vulkan"][n]) for n in outs["gl"])
    r = _gputex("capture", str(s), str(g), str(bc), "--mips", "-o", str(tmp_path / "m"), "--backend", "gl",
                "--jobs", "1", timeout=300)
    assert r.returncode == 1
    why = "is not supported on the OpenGL backend"
    assert r.stderr.splitlines() == [
        f"gputex: {s}: mip generation {why} (wgpu's GL backend returns zeros for some levels); "
        "use --backend vulkan, metal or dx12",
        f"gputex: {g}: mip generation {why} (wgpu's GL backend returns zeros for some levels); "
        "use --backend vulkan, metal or dx12",
        f"gputex: {bc}: decoding block-compressed textures {why} (wgpu's GL backend decodes them wrongly); "
        "use --backend vulkan, metal or dx12"]
    assert not (tmp_path / "m").exists() or os.listdir(tmp_path / "m") == []
    r = _gputex("upload", str(bc), "--backend", "gl", timeout=300)
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == (f"gputex: {bc}: reading block-compressed textures back {why} "
                                         "(not implemented in wgpu's GL backend); use --backend vulkan, metal or dx12")
    import json

    for cmd in (["compare", str(s), str(g), "--format", "rgba8unorm", "--json"], ["stats", str(s), "--json"]):
        got = {b: _gputex(*cmd, "--backend", b, timeout=300) for b in ("vulkan", "gl")}
        assert got["gl"].returncode == got["vulkan"].returncode, got["gl"].stderr
        same = [json.loads(got[b].stdout) for b in ("vulkan", "gl")]
        key = "stats" if cmd[0] == "stats" else "levels"
        assert same[0][key] == same[1][key] and same[0][key]


# -- the done-when batch: 1 GB memory limit, one bomb among good files ----------------------

@pytest.fixture
def memory_cgroup():
    """A cgroup (v1 memory controller, or v2) limited to 1 GiB; skipped where none can be made."""
    limit = 1 << 30
    v1 = "/sys/fs/cgroup/memory"
    if os.path.isdir(v1):
        path, knob, peak = os.path.join(v1, f"gputex-test-{os.getpid()}"), "memory.limit_in_bytes", \
            "memory.max_usage_in_bytes"
    else:
        path, knob, peak = f"/sys/fs/cgroup/gputex-test-{os.getpid()}", "memory.max", "memory.peak"
    try:
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, knob), "w") as f:
            f.write(str(limit))
    except OSError as e:
        pytest.skip(f"cannot make a memory-limited cgroup here: {e}")
    yield path, peak
    try:
        os.rmdir(path)
    except OSError:
        pass


@pytest.mark.gpu
def test_batch_under_1_gb_with_a_bomb_writes_every_good_output(gpu, tmp_path, memory_cgroup):
    import numpy as np
    from PIL import Image

    group, peak_file = memory_cgroup
    src = tmp_path / "src"
    src.mkdir()
    arrays = {}
    for i in range(6):
        a = np.random.default_rng(100 + i).integers(0, 256, (300, 400, 4), np.uint8)
        Image.fromarray(a).save(src / f"good{i}.png")
        arrays[f"good{i}.png"] = a
    bomb = src / "icon.ico"
    bomb.write_bytes(bombs.ico_png_bomb())  # 2.5 GB decoded: OOM-killed the whole run before
    paths = ([str(src / f"good{i}.png") for i in range(3)] + [str(bomb)]
             + [str(src / f"good{i}.png") for i in range(3, 6)])
    out = tmp_path / "out"

    def enter():
        with open(os.path.join(group, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    r = subprocess.run([sys.executable, "-m", "gputex", "capture", *paths, "-o", str(out), "--jobs", "3"],
                       capture_output=True, text=True, preexec_fn=enter, timeout=600)
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [f"gputex: {bomb}: icon 0: embedded PNG 50000x50000 is 2500000000 pixels, over "
                                     "the limit of 268435456 (raise it with --max-pixels)"]
    assert sorted(os.listdir(out)) == sorted(arrays)
    for name, a in arrays.items():
        assert np.array_equal(np.asarray(Image.open(out / name)), a), name
    with open(os.path.join(group, peak_file)) as f:
        print(f"peak memory of the batch's cgroup: {int(f.read()) / 2**20:.0f} MiB")


def test_texture_budget_takes_the_same_overrides(tmp_path):
    """--max-ratio / --max-pixels apply to KTX2 levels as to images: a 64 MiB + 8 KiB Zstandard
    level of RLE blocks (~2 KB) is refused at the default ratio, read with the limit lifted."""
    from gputex.errors import LimitError
    from gputex.texfile import read_texture_file

    w, h = 8192, 8193  # r8unorm: just over the 64 MiB floor
    data = bombs.ktx2_supercompressed(w, h, bombs.zstd_rle(w * h), 2, vk=9, format_name="r8unorm",
                                      bytes_per_texel=1)
    p = tmp_path / "rle.ktx2"
    p.write_bytes(data)
    with pytest.raises(LimitError) as e:
        read_texture_file(str(p))
    stored = len(bombs.zstd_rle(w * h))
    assert str(e.value) == (f"{p}: zstd level 0 would inflate to {w * h} bytes from a {stored}-byte stored level "
                            f"({w * h / stored:.0f}:1, over the limit of 1000:1 for a likely decompression bomb; "
                            "raise it with --max-ratio)")
    with pytest.raises(LimitError) as e:
        read_texture_file(str(p), max_ratio=0, max_pixels=w * h - 1)
    assert "raise it with --max-pixels" in str(e.value)
    tf = read_texture_file(str(p), max_ratio=0)
    assert len(tf.levels[0]) == w * h and not any(tf.levels[0][:: 1 << 16])


def test_chatter_capture_leaves_wgpus_logger_to_wgpu():
    """wgpu-py installs its own logger class when imported: a capture made before (the device
    is made on another thread while the batch starts) must not create the ``wgpu`` logger
    (it made 1 run in 4-6 fail with "wgpu could not start ()")."""
    code = ("from gputex.chatter import captured, watch\n"
            "w = []\n"
            "with captured():\n"
            "    import wgpu\n"
            "    with watch('x', w):\n"
            "        import logging; logging.getLogger('wgpu').warning('hal says\\nsecond line')\n"
            "        logging.getLogger('wgpu').info('quiet')\n"
            "print(w)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['x: hal says (+1 more line)']"
    assert r.stderr == ""


# -- the budget's own header readers never fail on hostile bytes ----------------------------

_HEADERS = [bombs.ico_with(bombs.png_zeros(20, 10)), bombs.ico_bmp_bomb(), bombs.tiff_tile_bomb(),
            bombs.tiff_tile_behind_a_broken_tag(), b"MM\0+" + b"\0\x08\0\0" + b"\0" * 8 + b"\0" * 64]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_HEADERS), st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=8),
       st.integers(0, 400))
def test_budget_header_readers_take_any_bytes(seed, flips, cut):
    from gputex.budget import check_ico, check_tiff, tiff_fields
    from gputex.errors import DecodeError, LimitError

    data = bytearray(seed)
    for i, v in flips:
        if i < len(data):
            data[i] = v
    data = bytes(data[: max(cut, 1)] if cut < len(data) else data)
    fields = tiff_fields(data)
    assert all(isinstance(v, int) and v >= 0 for v in fields.values())
    for check in (lambda: check_ico("f", data, 1 << 22, 1000.0), lambda: check_tiff("f", data, 1 << 22, 1000.0)):
        try:
            check()
        except (LimitError, DecodeError) as e:
            assert str(e).startswith("f: ") and "\n" not in str(e)

"""The command line's conventions: --version, 80-column help with examples and choices,
-q/-v, streamed result lines, counts after Ctrl-C, -o FILE, --sheet with any --level, output
folders, upload --skip-existing, usage errors exit 2, the adapter list, shell completion."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image as PILImage
from typer.testing import CliRunner

import gputex
from gputex.cli import app

from factory import noise, write

runner = CliRunner()
COMMANDS = ["upload", "capture", "compare", "stats", "layout", "info", "validate"]


def run(*args, **kw):
    return runner.invoke(app, [str(a) for a in args], **kw)


def _pngs(tmp_path, n, size=(37, 61), seed=0, folder="in"):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        a = noise(rng, *size, 4)
        out.append((write(tmp_path / folder / f"img{i}.png", a), a))
    return out


# -- no GPU needed -----------------------------------------------------------------------------

def test_version():
    for flag in ("--version", "-V"):
        r = run(flag)
        assert r.exit_code == 0 and r.stdout == f"gputex {gputex.__version__}\n"


@pytest.mark.parametrize("command", [None] + COMMANDS)
def test_help_fits_80_columns_with_an_example(command):
    args = ([command] if command else []) + ["--help"]
    r = run(*args, terminal_width=80, env={"COLUMNS": "80"})
    assert r.exit_code == 0
    text = r.stdout
    long = [line for line in text.splitlines() if len(line) > 80]
    assert not long, long
    for bad in ("<bool>", "<str>", "<int", "<float", "list[", "{"):
        assert bad not in text, bad
    assert re.search(r"Examples:\n(    gputex .*\n)+", text), text
    if command:
        assert f"    gputex {command} " in text
    # no broken words: every word of every help string appears whole in the output
    from typer.main import get_command

    cmd = get_command(app)
    cmd = cmd.commands[command] if command else cmd
    words = set(text.split())
    for param in cmd.params:
        if getattr(param, "hidden", False) or not getattr(param, "help", None):
            continue
        missing = [w for w in param.help.split() if w not in words]
        assert not missing, (param.name, missing)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_choice_option_lists_its_choices(command):
    import enum
    import typing

    import gputex.cli as cli

    text = " ".join(run(command, "--help", terminal_width=80).stdout.split())
    hints = typing.get_type_hints(getattr(cli, command))
    fn_defaults = {k: v.default for k, v in __import__("inspect").signature(getattr(cli, command)).parameters.items()}
    for name, hint in hints.items():
        kind = next((t for t in typing.get_args(hint) or (hint,) if isinstance(t, type) and issubclass(t, enum.Enum)),
                    None)
        if kind is None:
            continue
        flag = next(d for d in fn_defaults[name].param_decls if d.startswith("--"))
        assert f"{flag} [{'|'.join(e.value for e in kind)}]" in text, flag
    if "--backend" in text:
        assert "--backend [vulkan|metal|dx12|gl]" in text


def test_jobs_help_says_threads_then_processes():
    from gputex.workers import worker_count

    text = " ".join(run("capture", "--help", terminal_width=80).stdout.split())
    assert "threads for 1-2 jobs or one input, else N decoding and N encoding processes" in text
    assert ("-j, --jobs N Decode workers: threads for 1-2 jobs or one input, else N/2 (at least 3) decoding "
            "processes (with --mips -o DIR, where they may write mipped files themselves: N, or N-1 when a "
            "device is made at the start); with -o, N threads write the files.") in " ".join(
        run("upload", "--help", terminal_width=80).stdout.split())
    from gputex.pipeline import Options
    from gputex.run import stages

    processes = stages("upload", Options(out="out"), None).processes  # what the help says
    assert processes is not None and [processes(j) for j in (3, 4, 5, 16)] == [3, 3, 3, 8]
    from gputex.run import _split_processes

    assert [_split_processes(j) for j in (3, 4, 5, 16)] == [3, 3, 4, 15]  # N-1, at least 3
    os.environ.pop("GPUTEX_WORKERS", None)
    assert worker_count(2, 10) == 0 and worker_count(3, 1) == 0 and worker_count(3, 10) == 3


def test_json_help_per_command():
    def h(cmd):
        return " ".join(run(cmd, "--help", terminal_width=80).stdout.split())

    assert "--json Print the report as one JSON object." in h("compare")
    assert "--json Print the layout as one JSON object." in h("layout")
    assert "--json One JSON object per input on stdout." in h("capture")


def test_levels_is_a_hidden_alias_of_mip_count():
    text = run("capture", "--help", terminal_width=80).stdout
    assert "--mip-count N" in text and "--levels" not in text


def test_usage_errors_exit_2(tmp_path):
    r = run("upload", *[f"f{i}.png" for i in range(5)], "--cube", "-o", tmp_path / "c.ktx2")
    assert r.exit_code == 2
    assert r.stderr == "gputex: --cube needs 6 images per cube (+x -x +y -y +z -z), got 5\n"
    r = run("upload", "a.png", "--skip-existing")
    assert r.exit_code == 2 and r.stderr == "gputex: --skip-existing needs -o (the texture files to compare with)\n"
    r = run("capture", "a.png", "b.png", "-o", tmp_path / "one.png")
    assert r.exit_code == 2
    assert r.stderr == f"gputex: {tmp_path / 'one.png'}: one output file, but it takes one input; give -o a folder\n"
    r = run("capture", "a.png", "--mips", "--level", "all", "-o", tmp_path / "one.png")
    assert r.exit_code == 2 and "--level all with a mip chain writes several" in r.stderr
    r = run("stats", "a.png", "--level", "top")
    assert r.exit_code == 2 and r.stderr == "gputex: --level must be a number or 'all', got 'top'\n"
    r = run("capture", "a.png", "--backend", "cuda", "-o", tmp_path)
    assert r.exit_code == 2 and "'cuda' is not one of vulkan, metal, dx12, gl." in r.stderr
    assert not os.path.exists(tmp_path / "one.png")


def test_shell_completion_is_enabled():
    env = dict(os.environ, _GPUTEX_COMPLETE="complete_bash", COMP_WORDS="gputex capture --filter ", COMP_CWORD="3")
    code = "import sys; sys.argv = ['gputex']; from gputex.cli import main; main()"
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.split() == ["box", "kaiser", "lanczos", "triangle"]
    assert "--install-completion" in run("--help").stdout


# -- on the GPU --------------------------------------------------------------------------------

@pytest.mark.gpu
def test_quiet_and_verbose(gpu, tmp_path):
    (path, _), = _pngs(tmp_path, 1)
    r = run("capture", path, "-o", tmp_path / "q", "-q")
    assert r.exit_code == 0 and r.stdout == "" and r.stderr == ""
    assert os.path.exists(tmp_path / "q" / "img0.png")
    r = run("capture", path, tmp_path / "missing.png", "-o", tmp_path / "q2", "-q")
    assert r.exit_code == 1 and r.stdout == "" and r.stderr == f"gputex: {tmp_path / 'missing.png'}: no such file\n"
    r = run("capture", path, "-o", tmp_path / "v", "-v")
    lines = r.stdout.splitlines()
    assert r.exit_code == 0 and lines[0] == f"adapter: {gpu.name}"
    assert re.search(r"\(rgba8unorm-srgb 61x37\)  \[decode [0-9.]+ ms, upload [0-9.]+ ms, capture [0-9.]+ ms, "
                     r"encode [0-9.]+ ms\]$", lines[1]), lines[1]
    r = run("stats", path, "-q")
    assert r.exit_code == 0 and r.stdout == ""


@pytest.mark.gpu
def test_result_lines_stream_as_inputs_finish(gpu, tmp_path, monkeypatch):
    """The first input's line is printed before the GPU step of the last input starts (the
    lines used to come only after the whole batch)."""
    import gputex.capture_stage as pipeline
    import gputex.cli as cli

    events = []
    real_stage, real_render = pipeline.capture_gpu_stage, cli.render_capture

    def stage(session, names, opts):
        run_one = real_stage(session, names, opts)

        def wrapped(item, holder, result):
            events.append(("gpu", item.path))
            return run_one(item, holder, result)

        return wrapped

    def render(results, session):
        events.extend(("line", r.source) for r in results)
        real_render(results, session)

    monkeypatch.setattr(pipeline, "capture_gpu_stage", stage)
    monkeypatch.setattr(cli, "render_capture", render)
    paths = [p for p, _ in _pngs(tmp_path, 5)]
    r = run("capture", *paths, "-o", tmp_path / "out", "--jobs", "1")
    assert r.exit_code == 0, r.output
    assert [s for kind, s in events if kind == "line"] == paths  # input order
    assert events.index(("line", paths[0])) < events.index(("gpu", paths[-1])), events
    assert [line.split(" -> ")[0] for line in r.stdout.splitlines()] == paths


@pytest.mark.gpu
def test_ctrl_c_prints_what_finished_and_counts_it(gpu, tmp_path):
    rng = np.random.default_rng(3)
    src = tmp_path / "src"
    src.mkdir()
    a = rng.integers(0, 256, (384, 384, 4), np.uint8)
    files = []
    for i in range(40):
        files.append(str(src / f"img{i:03d}.png"))
        PILImage.fromarray(np.roll(a, i, axis=1)).save(files[-1], compress_level=1)
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "gputex", "capture", *files, "-o", str(out), "--png-compression", "9"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not (out.exists() and os.listdir(out)):
        time.sleep(0.01)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 130, stderr
    m = re.search(r"interrupted after (\d+) of 40 inputs \((\d+) ok, 0 failed\)", stderr)
    assert m and m.group(1) == m.group(2), stderr
    done = int(m.group(1))
    lines = stdout.splitlines()
    assert len(lines) == done and 0 < done < 40
    assert [line.split(" -> ")[0] for line in lines] == files[:done]
    written = sorted(n for n in os.listdir(out) if not n.startswith("."))
    assert written == [f"img{i:03d}.png" for i in range(done)]


@pytest.mark.gpu
def test_capture_to_one_file(gpu, tmp_path):
    (path, a), = _pngs(tmp_path, 1)
    target = tmp_path / "new" / "deeper" / "one.png"
    r = run("capture", path, "-o", target, "--mips", "--level", "2")
    assert r.exit_code == 0, r.output
    assert r.stdout == f"{path} -> {target}  (rgba8unorm-srgb 61x37, 6 levels)\n"
    assert np.asarray(PILImage.open(target)).shape == (9, 15, 4)
    assert sorted(os.listdir(target.parent)) == ["one.png"]
    # a texture file with a chain, all levels: more than one output, found after decoding
    ktx = tmp_path / "t.ktx2"
    assert run("upload", path, "--mips", "-o", ktx).exit_code == 0
    r = run("capture", ktx, "--level", "all", "-o", tmp_path / "two.png")
    assert r.exit_code == 2
    assert (f"gputex: {tmp_path / 'two.png'}: this capture has more than one output (levels, layers, faces or a "
            "sheet); give -o a folder\n") in r.stderr
    assert not os.path.exists(tmp_path / "two.png")
    r = run("capture", path, "-o", tmp_path / "x.tiff")  # 8-bit data is PNG
    assert r.exit_code == 2 and "this capture is written as .png" in r.stderr


@pytest.mark.gpu
def test_sheet_with_any_level(gpu, tmp_path):
    (path, _), = _pngs(tmp_path, 1)
    r = run("capture", path, "-o", tmp_path / "all", "--mips", "--level", "all")
    assert r.exit_code == 0
    levels = [np.asarray(PILImage.open(tmp_path / "all" / f"img0_level{i}.png")) for i in range(6)]
    r = run("capture", path, "-o", tmp_path / "one", "--mips", "--level", "1", "--sheet")
    assert r.exit_code == 0, r.output
    assert sorted(os.listdir(tmp_path / "one")) == ["img0_level1.png", "img0_sheet.png"]
    sheet = np.asarray(PILImage.open(tmp_path / "one" / "img0_sheet.png"))
    x = 0
    for lv in levels:
        h, w = lv.shape[:2]
        assert np.array_equal(sheet[:h, x:x + w], lv)
        x += w + 1
    assert sheet.shape[1] == x - 1
    r = run("capture", path, "-o", tmp_path / "flat", "--sheet")
    assert r.exit_code == 0
    assert r.stderr == f"gputex: warning: {path}: one level, no sheet written (add --mips for a chain)\n"


@pytest.mark.gpu
def test_diff_image_folder_is_created(gpu, tmp_path):
    (a, _), (b, _) = _pngs(tmp_path, 2)
    target = tmp_path / "d1" / "d2" / "diff.png"
    r = run("compare", a, b, "--diff-image", target)
    assert r.exit_code == 1 and target.exists()


@pytest.mark.gpu
def test_upload_skip_existing(gpu, tmp_path):
    (path, _), = _pngs(tmp_path, 1)
    out = tmp_path / "tex"
    r = run("upload", path, "-o", out)
    assert r.exit_code == 0 and (out / "img0.ktx2").exists()
    r = run("upload", path, "-o", out, "--skip-existing")
    assert r.exit_code == 0 and r.stdout == f"adapter: {gpu.name}\n{path}: up to date\n"
    later = time.time() + 5
    os.utime(path, (later, later))
    r = run("upload", path, "-o", out, "--skip-existing", "--verify")
    assert r.exit_code == 0 and "exact round trip" in r.stdout and "up to date" not in r.stdout
    single = tmp_path / "s.ktx2"
    os.utime(path, (time.time() - 100, time.time() - 100))
    assert run("upload", path, "-o", single).exit_code == 0
    r = run("upload", path, "-o", single, "--skip-existing")
    assert r.exit_code == 0 and r.stdout.endswith(f"{path}: up to date\n")


@pytest.mark.gpu
def test_unknown_adapter_lists_the_adapters(gpu, tmp_path):
    (path, _), = _pngs(tmp_path, 1)
    r = run("stats", path, "--adapter", "no-such-gpu-xyz")
    assert r.exit_code == 3
    assert r.stderr.startswith("gputex: no GPU adapter matching 'no-such-gpu-xyz'; the adapters here are: ")
    assert f"{gpu.info.name} ({gpu.info.backend}, {gpu.info.adapter_type})" in r.stderr


@pytest.mark.gpu
def test_info_shows_the_version(gpu):
    import json

    import wgpu

    r = run("info")
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == f"gputex {gputex.__version__} (wgpu-py {wgpu.__version__})"
    d = json.loads(run("info", "--json").stdout)
    assert d["version"] == gputex.__version__ and d["wgpu"] == wgpu.__version__

"""The CLI: outputs, naming, JSON, and every error path with its message and exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import imagecodecs
import numpy as np
import pytest
from PIL import Image as PILImage
from typer.testing import CliRunner

from gputex.cli import app

from factory import noise, write

runner = CliRunner()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "samples")


def run(*args, env=None):
    return runner.invoke(app, [str(a) for a in args], env=env)


@pytest.fixture
def rgba65(rng, tmp_path):
    a = noise(rng, 7, 65, 4)
    return write(tmp_path / "in" / "pic.png", a), a


def test_upload_reports_layout_and_exactness(gpu, rgba65):
    path, _ = rgba65
    r = run("upload", path)
    assert r.exit_code == 0, r.output
    assert (f"{path}: rgba8unorm-srgb 65x7 (srgb), 1820 bytes; write_texture bytes_per_row 260; "
            "capture bytes_per_row 512 (+252 padding per row), staging 3332 bytes; path write_texture; "
            "exact round trip") in r.stdout


def test_upload_json_one_object_per_input(gpu, rgba65):
    path, _ = rgba65
    r = run("upload", path, os.path.join(SAMPLES, "deep16_61x37.png"), "--json")
    assert r.exit_code == 0
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [o["source"] for o in objs] == [path, os.path.join(SAMPLES, "deep16_61x37.png")]
    assert objs[0]["layout"]["bytes_per_row"] == 260 and objs[0]["verified"] is True
    assert objs[1]["format"] == "rgba16unorm" and objs[1]["layout"]["padded_bytes_per_row"] == 512
    assert "llvmpipe" in objs[0]["adapter"].lower() or objs[0]["adapter"]


def test_batch_goes_on_past_a_bad_file(gpu, rgba65, tmp_path):
    path, _ = rgba65
    missing = str(tmp_path / "nope.png")
    text = tmp_path / "notes.png"
    text.write_text("not an image")
    r = run("upload", missing, str(text), path)
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [f"gputex: {missing}: no such file",
                                     f"gputex: {text}: not an image (unknown or unsupported file format)"]
    assert "exact round trip" in r.stdout


def test_truncated_image(gpu, rgba65, tmp_path):
    path, _ = rgba65
    data = open(path, "rb").read()
    bad = tmp_path / "cut.png"
    bad.write_bytes(data[: len(data) - 20])
    r = run("upload", str(bad))
    assert r.exit_code == 1
    assert r.stderr.strip().startswith(f"gputex: {bad}: truncated PNG (")


def test_image_over_device_limit(gpu, tmp_path):
    limit = gpu.limits["max-texture-dimension-2d"]
    p = tmp_path / "wide.png"
    p.write_bytes(imagecodecs.png_encode(np.zeros((1, limit + 1), np.uint8)))
    r = run("upload", str(p))
    assert r.exit_code == 1
    assert r.stderr.strip() == (f"gputex: {p}: {limit + 1}x1 exceeds the device's "
                                f"max-texture-dimension-2d of {limit}")


def test_unwritable_output_folder(gpu, rgba65, tmp_path):
    path, _ = rgba65
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = run("capture", path, "-o", str(blocker / "sub"))
    assert r.exit_code == 1
    assert r.stderr.strip() == f"gputex: {blocker / 'sub'}: cannot create output folder (Not a directory)"


def test_output_never_overwrites_an_input(gpu, rgba65):
    path, _ = rgba65
    r = run("capture", path, "-o", os.path.dirname(path))
    assert r.exit_code == 1
    assert r.stderr.strip() == (f"gputex: {path}: output would overwrite an input; choose another -o folder")


@pytest.mark.parametrize("args,message", [
    (["upload", "x.png", "--format", "rgb8unorm"], "gputex: unknown texture format 'rgb8unorm'; use one of: "),
    (["capture", "x.png", "-o", "out", "--format", "bc7-rgba-unorm"],
     "gputex: format bc7-rgba-unorm cannot be filled from an image"),
    (["upload", "x.png", "--format", "etc2-rgb8unorm"], "gputex: format etc2-rgb8unorm cannot be filled from an image"),
    (["capture", "x.png", "-o", "out", "--level", "top"], "gputex: --level must be a number or 'all', got 'top'"),
])
def test_usage_errors_exit_2(args, message):
    r = run(*args)
    assert r.exit_code == 2
    assert r.stderr.startswith(message)


def test_click_usage_error_exits_2():
    assert run("upload").exit_code == 2
    assert run("upload", "x.png", "--color-space", "cmyk").exit_code == 2


@pytest.mark.gpu  # needs an adapter: the message lists the adapters there are
def test_no_adapter_exits_3(rgba65):
    path, _ = rgba65
    r = run("upload", path, "--adapter", "no-such-gpu-anywhere")
    assert r.exit_code == 3
    assert r.stderr.startswith("gputex: no GPU adapter matching 'no-such-gpu-anywhere'; the adapters here are: ")


def test_capture_writes_exact_png(gpu, rgba65, tmp_path):
    path, a = rgba65
    out = tmp_path / "out"
    r = run("capture", path, "-o", out)
    assert r.exit_code == 0, r.stderr
    assert os.listdir(out) == ["pic.png"]
    assert np.array_equal(np.asarray(PILImage.open(out / "pic.png")), a)
    assert b"sRGB" in (out / "pic.png").read_bytes()[:100]


def test_capture_16bit_writes_16bit_png(gpu, tmp_path):
    out = tmp_path / "out"
    src = os.path.join(SAMPLES, "deep16_61x37.png")
    r = run("capture", src, "-o", out)
    assert r.exit_code == 0, r.stderr
    got = imagecodecs.png_decode((out / "deep16_61x37.png").read_bytes())
    want = imagecodecs.png_decode(open(src, "rb").read())
    assert got.dtype == np.uint16
    assert np.array_equal(got[:, :, :3], want) and (got[:, :, 3] == 65535).all()


def test_capture_float_as_tiff_is_exact(rng, gpu, tmp_path):
    a = noise(rng, 5, 7, None, np.float32)
    p = write(tmp_path / "f.tiff", a)
    out = tmp_path / "out"
    r = run("capture", p, "-o", out)
    assert r.exit_code == 0, r.stderr
    assert np.array_equal(imagecodecs.tiff_decode((out / "f.tiff").read_bytes()), a)
    r = run("capture", p, "-o", out, "--float-as", "png")
    assert r.exit_code == 0
    assert r.stderr.strip() == (f"gputex: warning: {out / 'f.png'}: float data clamped to [0, 1] "
                                "and quantized to 16 bits")


def test_capture_names_levels_and_never_collides(rng, gpu, tmp_path):
    a = noise(rng, 6, 10, 3)
    write(tmp_path / "a" / "x.png", a)
    write(tmp_path / "b" / "x.png", a)
    out = tmp_path / "out"
    r = run("capture", tmp_path / "a" / "x.png", tmp_path / "b" / "x.png", "-o", out)
    assert r.exit_code == 0, r.stderr
    assert sorted(os.listdir(out)) == ["x-2.png", "x.png"]
    out2 = tmp_path / "out2"
    r = run("capture", tmp_path / "a" / "x.png", "-o", out2, "--mips", "--level", "all", "--sheet")
    assert r.exit_code == 0, r.stderr
    assert sorted(os.listdir(out2)) == ["x_level0.png", "x_level1.png", "x_level2.png", "x_level3.png", "x_sheet.png"]
    assert PILImage.open(out2 / "x_level3.png").size == (1, 1)
    assert PILImage.open(out2 / "x_sheet.png").size == (10 + 5 + 2 + 1 + 3, 6)


def test_layout_without_gpu():
    r = run("layout", "65", "7", "--json")
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert (d["bytes_per_row"], d["padded_bytes_per_row"], d["staging_bytes"]) == (260, 512, 3332)
    r = run("layout", "13", "5", "--format", "bc7-rgba-unorm", "--layers", "3", "--json")
    d = json.loads(r.stdout)
    assert (d["blocks_across"], d["blocks_down"], d["bytes_per_row"], d["rows_per_image"]) == (4, 2, 64, 2)
    assert d["staging_bytes"] == 256 * (2 * 3 - 1) + 64


def test_info_lists_adapter_and_formats(gpu):
    r = run("info", "--json")
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert d["chosen"] == gpu.name
    assert d["formats"]["rgba8unorm"] == {"upload": True, "render": True, "filter": True, "storage": True,
                                          "capture": True}
    assert d["formats"]["rgba8unorm-srgb"]["storage"] is False
    assert d["limits"]["max-texture-dimension-2d"] == gpu.limits["max-texture-dimension-2d"]


def test_help_documents_exit_codes():
    r = runner.invoke(app, ["--help"], terminal_width=200, env={"COLUMNS": "200"})
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    assert ("Exit codes: 0 every input ok; 1 one or more inputs failed (the others are still processed); "
            "2 usage error; 3 no usable GPU adapter or device; 130 interrupted (Ctrl-C); "
            "143 terminated (SIGTERM).") in text


def test_help_imports_nothing_heavy():
    code = ("import sys, gputex.cli; "
            "print(sorted(m for m in ('numpy', 'wgpu', 'rich', 'PIL') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_installed_entry_point_runs_the_main_job(gpu, tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "gputex")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "gputex"]
    src = os.path.join(SAMPLES, "disc_alpha_61x37.png")
    p = subprocess.run(cmd + ["capture", src, "-o", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert np.array_equal(np.asarray(PILImage.open(tmp_path / "disc_alpha_61x37.png")), np.asarray(PILImage.open(src)))
    p = subprocess.run([sys.executable, "-m", "gputex", "upload", str(tmp_path / "missing.png")],
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stderr == f"gputex: {tmp_path / 'missing.png'}: no such file\n"


@pytest.mark.parametrize("command", ["upload", "capture"])
def test_fsync_only_with_the_option(gpu, rgba65, tmp_path, monkeypatch, command):
    """Outputs are not fsynced by default (whole or nothing comes from the link/rename alone);
    --fsync flushes each output file, then its folder, before the run ends."""
    from factory import recorded_fsyncs

    path, _ = rgba65
    calls = recorded_fsyncs(monkeypatch)
    monkeypatch.setenv("GPUTEX_FSYNC", "0")  # restored after the test: --fsync sets it for the process
    out = tmp_path / "out"
    args = ["upload", path, "--mips", "-o", out / "pic.ktx2"] if command == "upload" else \
        ["capture", path, "--mips", "--level", "all", "-o", out, "--workers", "0"]
    os.makedirs(out)
    r = run(*args)
    assert r.exit_code == 0, r.output
    assert calls == []
    first = sorted(os.listdir(out))
    assert first == (["pic.ktx2"] if command == "upload" else [f"pic_level{i}.png" for i in range(7)])
    before = {n: (out / n).read_bytes() for n in first}
    r = run(*args, "--fsync")
    assert r.exit_code == 0, r.output
    assert calls == ["file", "folder"] * len(first)
    assert {n: (out / n).read_bytes() for n in sorted(os.listdir(out))} == before

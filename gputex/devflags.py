"""Developer overrides read from the environment: every ``GPUTEX_*`` switch, in one place.

What a user chooses is a parameter (``--workers``/``workers=``, ``--jobs``, ``copy_threads=``,
``--threads``, ``generate_mips(path=..., precision=...)``). The variables below are overrides
for benchmarks, tests and bisecting: each is read through :func:`flag` when it is needed (not
frozen at import, unless its entry says so), and an explicit parameter always wins over it.

==========================  ===================================================================
variable                    what it overrides
==========================  ===================================================================
``GPUTEX_WORKERS``          codec worker processes per kind for a batch (0: codecs in threads);
                            default from ``--jobs`` (:func:`gputex.workers.worker_count`).
                            ``--threads`` under 6 sets it to 0 for the process and its children.
``GPUTEX_COPY_THREADS``     threads for one band's host copy (:mod:`gputex.parallel`; 1: none);
                            default the cores, at most 4.
``GPUTEX_READ_THREADS``     threads copying out of mapped read-back memory
                            (:func:`gputex.parallel.read_threads`); default the cores, at most 16.
``GPUTEX_DECODE_THREADS``   threads inflating one large PNG with restart points
                            (:mod:`gputex.pngdec`; read at its import; worker processes set 1).
``GPUTEX_THREADS``          the thread cap of ``--threads`` (:mod:`gputex.caps`; set by it, and
                            inherited by worker processes).
``GPUTEX_SHM_DIR``          where pixels travel between processes (default ``/dev/shm``).
``GPUTEX_PORTABLE``         Linux-only mechanisms to turn off (:mod:`gputex.portable`).
``GPUTEX_TRACE``            append a JSON timeline of the run to this file (:mod:`gputex.trace`;
                            read at import).
``GPUTEX_PROFILE``          cProfile the batch's in-order GPU thread into this file.
``GPUTEX_MIPS_PATH``        ``compute`` or ``render`` for renderable non-storage formats when the
                            caller did not choose (``generate_mips(path=...)``, :mod:`gputex.mips`).
``GPUTEX_MIPS_F64``         ``0`` turns the float64 (``shader-f64``) mip and resize paths off (as on
                            an adapter without ``shader-f64``).
``GPUTEX_MIPS_KERNEL``      ``sep`` or ``2d``: the float64 Kaiser/Lanczos shader of the mip chains
                            (default ``sep``; exceptions by adapter type: :func:`gputex.mips.exact.kernel_shader`).
``GPUTEX_MIPS_ENGINE``      ``auto``, ``shader`` or ``cpu``: who makes the exact integer mip chain
                            (default ``auto``: the host's C engine on a CPU adapter where it
                            serves the chain, else the shader; :mod:`gputex.mips.cpu`). It also
                            steers ``upload --mips -o DIR`` batches' split (``shader``: every
                            chain on the GPU step; ``cpu``: every one the engine serves made by
                            the decode workers; :class:`gputex.upload_stage.HostSplit`).
``GPUTEX_MIPS_STORE``       ``1`` or ``0``: textures made for the exact chain to store their levels
                            (``textureStore``, no copies; :func:`gputex.mips.stored.stored_format`)
                            on every adapter, or on none (default: on every adapter but a CPU one).
``GPUTEX_GPU_SLOTS``        images the GPU step of a split batch takes at once (default 8,
                            :data:`gputex.upload_stage.GPU_SLOTS`).
``GPUTEX_GPU_SLOTS_AT``     ``ready`` or ``start``: when a split batch making its own device offers the
                            GPU's slots (default ``ready``: once the device is made and rehearsed;
                            :class:`gputex.upload_stage.HostSplit`).
``GPUTEX_SPAWN_FIRST``      ``1`` (default) or ``0``: a split batch asks for its worker processes
                            before its device thread starts (:func:`gputex.run._spawn_first`);
                            only with ``GPUTEX_PRESPAWN=0``: prespawned, they are asked for
                            as the pool is made, before either.
``GPUTEX_PRESPAWN``         ``1`` (default) or ``0``: a batch's worker processes forked from the early
                            server are asked for as their pool is made, with no task
                            (:func:`gputex.workers.codec_workers`), or by its first tasks as before.
``GPUTEX_SPLIT_DEVICE``     ``demand`` or ``start``: when ``upload --mips -o`` with no adapter chosen
                            makes its device (default ``demand``: when an input needs the GPU step
                            or the work left outlasts :data:`gputex.run.DEVICE_AFTER`, and without
                            decode workers the host engine writes files in-process, the inline
                            split; ``start``: as it starts, and no inline split, as before;
                            :class:`gputex.run.DeviceOnDemand`).
``GPUTEX_GPU_GROUP``        decoded inputs one in-order step of ``upload -o`` takes together, their
                            read-backs in one map (default 8, :data:`gputex.batch.GPU_GROUP`;
                            ``1``: one input a step).
``GPUTEX_PRESTART``         ``1`` or ``0``: the CLI's ``upload``/``capture`` begin wgpu's import and
                            the adapter list on a thread as they start (:func:`gputex.device.prestart`),
                            or not (default: yes, but not for an ``upload`` command line taken for
                            a batch, its workers' fork server started: :func:`gputex.cli._prestart`).
``GPUTEX_FSYNC``            ``1``: every output is fsynced before it is named (``--fsync`` sets it
                            for the process and its workers: :func:`gputex.atomic.set_fsync`).
==========================  ===================================================================

``GPUTEX_ADAPTER`` and ``GPUTEX_BACKEND`` are not developer flags: they are the documented
defaults of ``--adapter`` and ``--backend`` (:mod:`gputex.device`).
"""

from __future__ import annotations

import os

__all__ = ["FLAGS", "flag", "int_flag", "choice_flag", "SLOTS_AT", "SPLIT_DEVICE"]

#: ``GPUTEX_GPU_SLOTS_AT``'s values, the default first (why: :class:`gputex.upload_stage.HostSplit`).
SLOTS_AT = ("ready", "start")
#: ``GPUTEX_SPLIT_DEVICE``'s values, the default first (why: :class:`gputex.run.DeviceOnDemand`).
SPLIT_DEVICE = ("demand", "start")

#: Every developer override and one line on it (the table above says more).
FLAGS = {
    "GPUTEX_WORKERS": "codec worker processes per kind (0: threads)",
    "GPUTEX_COPY_THREADS": "threads for one band's host copy",
    "GPUTEX_READ_THREADS": "threads copying out of mapped read-back memory",
    "GPUTEX_DECODE_THREADS": "threads inflating one large PNG",
    "GPUTEX_THREADS": "the --threads cap of this process",
    "GPUTEX_SHM_DIR": "folder for pixels shared between processes",
    "GPUTEX_PORTABLE": "Linux-only mechanisms to turn off",
    "GPUTEX_TRACE": "JSON timeline file",
    "GPUTEX_PROFILE": "cProfile file of the in-order GPU thread",
    "GPUTEX_MIPS_PATH": "compute or render mips for renderable non-storage formats",
    "GPUTEX_MIPS_F64": "0: no float64 mip/resize paths",
    "GPUTEX_MIPS_KERNEL": "sep or 2d: the float64 kernel mip shader",
    "GPUTEX_MIPS_ENGINE": "auto, shader or cpu: who makes the exact integer mip chain",
    "GPUTEX_MIPS_STORE": "1 or 0: the exact mip chain stores its levels on every adapter, or on none",
    "GPUTEX_FSYNC": "1: outputs fsynced before they are named (--fsync)",
    "GPUTEX_PRESTART": "1 or 0: upload/capture begin wgpu and the adapter list on a thread at once (default: not for upload batches)",
    "GPUTEX_GPU_SLOTS": "images the GPU step of a split upload -o batch takes at once",
    "GPUTEX_GPU_SLOTS_AT": "ready or start: when a split upload -o batch offers the GPU's slots",
    "GPUTEX_SPAWN_FIRST": "1 or 0: a split upload -o batch asks for its worker processes before the device thread starts (default 1)",
    "GPUTEX_PRESPAWN": "1 or 0: a batch's worker processes forked from the early server are asked for as their pool is made (default 1)",
    "GPUTEX_SPLIT_DEVICE": "demand or start: when upload --mips -o with no adapter chosen makes its device (start: no inline split)",
    "GPUTEX_GPU_GROUP": "decoded inputs one in-order step of upload -o takes together (1: one a step)",
}


def flag(name: str) -> str | None:
    """The value of developer override ``name`` (stripped), or None when unset or empty."""
    if name not in FLAGS:
        raise KeyError(f"{name} is not a gputex developer flag (gputex.devflags.FLAGS)")
    value = os.environ.get(name, "").strip()
    return value or None


def int_flag(name: str) -> int | None:
    """:func:`flag` as a non-negative integer; None when unset or not a number."""
    value = flag(name)
    return int(value) if value is not None and value.isdigit() else None


def choice_flag(name: str, choices: tuple[str, ...]) -> str:
    """:func:`flag` as one of ``choices`` (any case; the first when unset); another value is a
    :class:`~gputex.errors.UsageError` naming the flag and what it takes."""
    value = (flag(name) or choices[0]).lower()
    if value not in choices:
        from .errors import UsageError

        raise UsageError(f"{name} must be {', '.join(choices[:-1])} or {choices[-1]}, got {value!r}")
    return value

"""Device selection: pick an adapter, create one device with its own limits.

Order of preference: discrete GPU, integrated GPU, virtual, then software adapters
(lavapipe / llvmpipe) as the embedded fallback. ``adapter`` (a case-insensitive
substring of the adapter's name) and ``backend`` narrow the choice; the
``GPUTEX_ADAPTER`` and ``GPUTEX_BACKEND`` environment variables give defaults.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from .errors import DeviceLostError, GPUError, NoAdapterError

__all__ = ["Session", "AdapterInfo", "list_adapters", "BACKENDS"]

BACKENDS = {"vulkan": "Vulkan", "metal": "Metal", "dx12": "D3D12", "gl": "OpenGL"}
_TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3, "Unknown": 4}
#: Features requested when the adapter has them.
WANTED_FEATURES = (
    "texture-format16bit-norm",
    "float32-filterable",
    "texture-compression-bc",
    "texture-compression-etc2",
    "texture-compression-astc",
    "timestamp-query",
    "bgra8unorm-storage",
    "rg11b10ufloat-renderable",
    "shader-f64",
    "subgroup",  # (wgpu-native's name; mips/spd.py's subgroup form)
)
#: Limits taken from the adapter (its own maxima, not WebGPU's defaults).
WANTED_LIMITS = (
    "max-texture-dimension-1d",
    "max-texture-dimension-2d",
    "max-texture-dimension-3d",
    "max-texture-array-layers",
    "max-buffer-size",
    "max-storage-buffer-binding-size",
    "max-compute-workgroup-storage-size",
    "max-storage-textures-per-shader-stage",  # the exact chain's levels stored a binding each (mips/spd.py)
)


@dataclass
class AdapterInfo:
    name: str
    backend: str
    adapter_type: str
    driver: str = ""
    chosen: bool = False
    limits: dict[str, int] = field(default_factory=dict)
    features: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "backend": self.backend, "type": self.adapter_type,
                "driver": self.driver, "chosen": self.chosen}


#: The C types wgpu-py 0.32 builds cdata of during a capture run. cffi parses each one the first
#: time it is used, re-reading every typedef of wgpu's header (~430) with pycparser: 1.0 s of pure
#: Python per process here (52 types), 1-2 s on a 16-core host while worker processes start.
#: :func:`warm_types` makes the pointer and array types from cffi's own parsed declarations
#: instead (0.1 s), before the device is made.
WGPU_CTYPES = (
    'WGPUAdapterInfo *',
    'WGPUAdapter[]',
    'WGPUBindGroupDescriptor *',
    'WGPUBindGroupEntry *',
    'WGPUBindGroupEntry[]',
    'WGPUBindGroupLayoutDescriptor *',
    'WGPUBindGroupLayoutEntry *',
    'WGPUBindGroupLayoutEntry[]',
    'WGPUBindGroupLayout[]',
    'WGPUBufferBindingLayout *',
    'WGPUBufferDescriptor *',
    'WGPUBufferMapCallbackInfo *',
    'WGPUChainedStruct *',
    'WGPUChainedStruct * ',
    'WGPUCommandBufferDescriptor *',
    'WGPUCommandBuffer[]',
    'WGPUCommandEncoderDescriptor *',
    'WGPUComputePassDescriptor *',
    'WGPUComputePipelineDescriptor *',
    'WGPUComputeState *',
    'WGPUConstantEntry *',
    'WGPUConstantEntry[]',
    'WGPUDeviceDescriptor *',
    'WGPUDeviceExtras *',
    'WGPUDeviceLostCallbackInfo *',
    'WGPUExtent3D *',
    'WGPUFeatureName[]',
    'WGPUInstanceDescriptor *',
    'WGPULimits *',
    'WGPUNativeLimits *',
    'WGPUOrigin3D *',
    'WGPUPipelineLayoutDescriptor *',
    'WGPUQueueDescriptor *',
    'WGPURequestDeviceCallbackInfo *',
    'WGPUShaderModuleDescriptor *',
    'WGPUShaderSourceWGSL *',
    'WGPUStorageTextureBindingLayout *',
    'WGPUStringView *',
    'WGPUTexelCopyBufferInfo *',
    'WGPUTexelCopyBufferLayout *',
    'WGPUTexelCopyTextureInfo *',
    'WGPUTextureBindingLayout *',
    'WGPUTextureDescriptor *',
    'WGPUTextureFormat[]',  # the view formats of a texture made for stored mip levels (wgpu_compat.py)
    'WGPUTextureViewDescriptor *',
    'WGPUUncapturedErrorCallbackInfo *',
    'char []',
    'intptr_t',
    'uint32_t []',
    'void(WGPUDevice const *, WGPUDeviceLostReason, WGPUStringView, void *, void *)',
    'void(WGPUDevice const *, WGPUErrorType, WGPUStringView, void *, void *)',
    'void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)',
    'void(WGPURequestDeviceStatus, WGPUDevice, WGPUStringView, void *, void *)',
    # used while wgpu-py's module is imported (its log callback) and by every buffer write or
    # map: each was one more parse of the whole typedef list (~12 ms alone, 30-80 ms on the
    # device thread beside a decode); they are parsed with the rest, once
    'void(WGPULogLevel, WGPUStringView, void *)',
    'uint8_t []',
    'uint8_t[]',
    'uint8_t *',
    'uintptr_t',
)


def warm_types() -> None:
    """Put :data:`WGPU_CTYPES` in wgpu's cffi type cache (see there); idempotent, never raises.

    ``NAME *`` and ``NAME[]`` of a typedef'd NAME are built from the declaration cffi parsed when
    wgpu loaded (the same objects a parse gives: the first one is checked against a real parse,
    and where it differs they are dropped and cffi parses them when used); the few others
    (function types, ``char []``) are parsed, all in one pycparser run (:func:`_parse_at_once`).
    """
    try:
        _warm(import_wgpu_ffi())
    except Exception:  # noqa: BLE001 - cffi parses what is missing when it is used
        pass


def _warm(ffi) -> None:
    """:func:`warm_types` on ``ffi``: called as soon as wgpu's header is declared (inside
    :func:`import_wgpu_ffi`, so the types wgpu-py's own import uses are ready too) and again,
    finding them all, by :func:`warm_types`."""
    from cffi import model

    declarations = ffi._parser._declarations
    cache = ffi._parsed_types
    if all(name in cache for name in WGPU_CTYPES):
        return
    built: dict[str, Any] = {}
    rest: list[str] = []  # parsed, all at once
    for name in WGPU_CTYPES:
        if name in cache:
            continue
        stem = name.strip()
        kind = "*" if stem.endswith("*") else "[]" if stem.endswith("[]") else ""
        decl = declarations.get("typedef " + stem[: -len(kind)].strip()) if kind else None
        if decl is not None:
            try:
                tp = model.PointerType(decl[0]) if kind == "*" else model.ArrayType(decl[0], None)
                with ffi._lock:
                    built[name] = ffi._get_cached_btype(tp)
                continue
            except Exception:
                pass
        rest.append(name)
    probe = " " + next(iter(built)) if built else None  # a differently spelt key: cffi parses it
    _parse_at_once(ffi, rest + [probe] if probe else rest)
    if probe and cache.get(probe, (None,))[0] is built[probe[1:]]:  # what a parse gives: keep them
        for name, btype in built.items():
            cache.setdefault(name, (btype, False))


def import_wgpu_ffi():
    """wgpu-py's cffi ``ffi``, imported with its header's parse taken from a per-user cache.

    Importing wgpu-py's backend hands its whole C header (~3500 declarations) to ``ffi.cdef``,
    which parses it with pycparser: 0.15-0.2 s of pure Python in every process here, on the
    device thread while the first image decodes (holding the GIL the decode thread needs
    between its C calls). The parser's result is plain data, so the first process pickles it
    (:func:`_cdef_cache`) and later ones load it (2 ms) instead of parsing. Only for the cdef
    calls made while wgpu-py's module is imported here, only for a header with no types left
    to complete, keyed by the header's SHA-256 and the cffi, pycparser and Python versions, and
    only from a regular file and folder this user owns that nobody else can write, opened
    without following symlinks and checked on the open descriptors; anything else (or any
    error) parses as before. Where wgpu-py is already imported, its ``ffi`` is returned.
    """
    import sys

    name = "wgpu.backends.wgpu_native._ffi"
    with _CDEF_PATCH_LOCK:  # cffi.FFI.cdef is patched for the whole process: one thread at a time
        if name not in sys.modules:
            import cffi

            original = cffi.FFI.cdef

            def cdef(self, csource, override=False, packed=False, pack=None):
                if override or packed or pack is not None or not isinstance(csource, str) or len(csource) < 4096:
                    return original(self, csource, override=override, packed=packed, pack=pack)
                _cdef_cached(self, csource, original)
                try:
                    _warm(self)  # before wgpu-py's import goes on to use some of them
                except Exception:  # noqa: BLE001 - cffi parses what is missing when it is used
                    pass

            cffi.FFI.cdef = cdef
            try:
                import wgpu.backends.wgpu_native._ffi  # noqa: F401
            finally:
                if cffi.FFI.__dict__.get("cdef") is cdef:  # not where someone else has patched it since
                    cffi.FFI.cdef = original
    return sys.modules[name].ffi


#: Held while :func:`import_wgpu_ffi` has cffi.FFI.cdef patched (an RLock: an import it triggers
#: may come back to it).
_CDEF_PATCH_LOCK = threading.RLock()


def _cdef_cache(csource: str) -> tuple[int, str, str] | None:
    """(descriptor of the cache folder, file name, key) of the cached parse of ``csource``, or
    None where there is no private cache folder (``$XDG_CACHE_HOME/gputex``, else
    ``~/.cache/gputex``, made 0700). The folder is opened without following a symlink and
    checked on that descriptor (a directory this user owns that nobody else can write), so it
    cannot be swapped between the check and its use; the caller closes the descriptor. None
    where the system cannot open files that way (no ``O_NOFOLLOW``, no ``dir_fd``)."""
    import hashlib
    import stat
    import sys

    import cffi
    import pycparser  # type: ignore[import-untyped]

    if not (hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY") and os.open in os.supports_dir_fd
            and os.rename in os.supports_dir_fd and os.unlink in os.supports_dir_fd):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "gputex")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISDIR(st.st_mode) or not _private(st):
        os.close(fd)
        return None
    key = hashlib.sha256("\0".join((csource, cffi.__version__, pycparser.__version__, sys.version)).encode()).hexdigest()
    return fd, f"wgpu-cdef-{key[:24]}.pickle", key


def _private(st: os.stat_result) -> bool:
    """Whether the file of ``st`` belongs to this user and nobody else may write it."""
    return (not hasattr(os, "getuid") or st.st_uid == os.getuid()) and not st.st_mode & 0o022


def _load_cached(folder: int, name: str) -> Any:
    """The pickled parse ``name`` in the folder open as ``folder``; None where there is none.
    Opened without following a symlink (nor waiting on a FIFO), and loaded only where that
    descriptor is a regular file this user owns that nobody else can write."""
    import pickle
    import stat

    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=folder)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _private(st):
            return None
        return pickle.load(f)


def _cdef_cached(ffi, csource: str, original) -> None:
    """``ffi.cdef(csource)`` through the cache of :func:`import_wgpu_ffi`."""
    where = None
    try:
        try:
            where = _cdef_cache(csource)
            saved = _load_cached(where[0], where[1]) if where is not None and not ffi._parser._declarations else None
            if where is not None and isinstance(saved, dict) and saved.get("key") == where[2]:
                with ffi._lock:  # what FFI._cdef does, with the parse's result loaded
                    ffi._cdef_version = object()
                    ffi._parser.__dict__.update(saved["parser"])
                    ffi._cdefsources.append(csource)
                return
        except Exception:  # noqa: BLE001 - a cache that cannot be read is parsed again (and rewritten)
            pass
        original(ffi, csource)
        if where is not None and not ffi._parser._recomplete:
            _write_cached(ffi, *where)
    finally:
        if where is not None:
            os.close(where[0])


def _write_cached(ffi, folder: int, name: str, key: str) -> None:
    """Pickle ``ffi``'s parse as ``name`` in the folder open as ``folder`` (a new 0600 file
    renamed over it); any error leaves no cache, and the next process parses too."""
    import contextlib
    import pickle

    try:
        state = {k: v for k, v in ffi._parser.__dict__.items() if k != "_structnode2type"}  # weak refs
        data = pickle.dumps({"key": key, "parser": state}, protocol=pickle.HIGHEST_PROTOCOL)
        tmp = f".wgpu-cdef-{os.getpid()}-{os.urandom(6).hex()}.part"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600,
                     dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            raise
    except Exception:  # noqa: BLE001 - no cache written: the next process parses too
        pass


def _parse_at_once(ffi, names: list[str]) -> None:
    """Parse the C types ``names`` into cffi's type cache in one pycparser run, not one each.

    cffi's parser prefixes every parse with a ``typedef int X;`` for each of wgpu's ~430
    typedefs, so eight types parsed one by one cost eight parses of that list: 0.25 s of pure
    Python here, on the device thread while the first image decodes, against 0.04 s at once.
    The steps after the parse are cffi's own (``FFI._typeof_locked``); any surprise leaves the
    names to cffi, which parses each one when it is first used, as it always did.
    """
    try:
        parser, cache = ffi._parser, ffi._parsed_types
        dummies = [f"__gputex_warm{i}" for i in range(len(names))]
        source = "\n".join(f"void {d}(\n{name}\n);" for d, name in zip(dummies, names))
        with ffi._lock:
            decls = parser._parse(source)[0].ext[-len(names):]
            if [d.name for d in decls] != dummies:
                return
            for name, decl in zip(names, decls):
                tp = parser._get_type_and_quals(decl.type.args.params[0].type)[0]
                really_a_function_type = tp.is_raw_function
                if really_a_function_type:
                    tp = tp.as_function_pointer()
                cache.setdefault(name, (ffi._get_cached_btype(tp), really_a_function_type))
    except Exception:  # noqa: BLE001 - cffi parses what is missing when it is used
        pass


def session_soon(adapter: str | None = None, backend: str | None = None, warm=None):
    """A Future of a :class:`Session` made on a thread of its own: a batch's worker processes
    start and its first images decode meanwhile, and the in-order thread only waits
    (``result()`` raises what ``Session`` raised). ``warm(session)``, if given, runs on that
    thread before the session is handed over (:func:`gputex.run.rehearsal`: the first
    chains' pipelines made while the first image still decodes); its errors are ignored."""
    import threading
    from concurrent.futures import Future

    future: Future = Future()

    def run() -> None:
        from .trace import span

        try:
            with span("device"):
                session = Session(adapter=adapter, backend=backend)
        except BaseException as e:  # handed to whoever waits for the session
            resume_gc()
            future.set_exception(e)
            return
        if warm is not None:
            try:
                with span("warm"):
                    warm(session)
            except Exception:  # noqa: BLE001 - a rehearsal never fails the run
                pass
        resume_gc()
        future.set_result(session)

    threading.Thread(target=run, name="gputex-device", daemon=True).start()
    _pending(future)
    return future


#: Sessions being made on their own threads (:func:`session_soon`), and :func:`prestart`'s work, while
#: they are (a Future leaves it when it is done: it would keep its session, and the session its device,
#: alive for as long as the process; each in-process run or Converter made one more).
_PENDING: set = set()


def _pending(future) -> None:
    """``future`` in :data:`_PENDING` until it is done."""
    _PENDING.add(future)
    future.add_done_callback(_PENDING.discard)  # (at once where it is done already)

#: :func:`prestart`'s Future of :func:`list_adapters` ``(None)`` (None: not started, or taken).
_EARLY: Any = None


def prestart(enumerate_adapters: bool = True) -> None:
    """Begin what every device needs on a thread of its own, as a command starts (the CLI's
    ``upload`` and ``capture``, before their options are parsed and their inputs listed):
    wgpu imported and its C types built (:func:`warm_types`) and, with
    ``enumerate_adapters`` (the CLI passes False when a backend is chosen: the instance is
    made for it), the adapters listed. The first :class:`Session` made without a backend
    takes that list instead of listing them again. On the H200 host the device thread's
    0.27 s (wgpu's import and types 0.10 s, adapters and device 0.17 s) began 0.11-0.16 s
    after the process started, once ``run`` was reached; the CLI's own imports and parsing
    now overlap its native part. Errors are left to the session, which lists the adapters
    itself then."""
    import threading
    from concurrent.futures import Future

    global _EARLY
    if _EARLY is not None:
        return
    future: Future = Future()

    def run() -> None:
        from .trace import span

        adapters = None
        try:
            with span("prestart"):
                warm_types()
                if enumerate_adapters:
                    adapters = list_adapters(None)
        except BaseException:  # noqa: BLE001 - the session lists them itself and meets the error
            adapters = None
        future.set_result(adapters)

    _EARLY = future
    _pending(future)
    threading.Thread(target=run, name="gputex-prestart", daemon=True).start()


def _early_adapters() -> list | None:
    """:func:`prestart`'s adapter list (waited for), once; None where there is none."""
    global _EARLY
    future, _EARLY = _EARLY, None
    return future.result() if future is not None else None

#: Whether :func:`pause_gc` turned the cyclic garbage collector off.
_GC_PAUSED = False


def pause_gc() -> None:
    """Turn Python's cyclic garbage collector off until the first :func:`session_soon` session
    (and its rehearsal) is ready, for a command's start-up. Imports, the device and the first
    decode allocate ~10^5 objects, and the collector went through them ~100 times (33-46 ms
    of CPU in a 2048² ``upload -o`` on two cores, in whichever thread allocated); when it comes
    back on, what start-up made is frozen (never scanned again: start-up's objects live as long
    as the process) so the first collection after it stays small. The CLI's ``upload`` and
    ``capture`` call it."""
    import gc

    global _GC_PAUSED
    if gc.isenabled():
        gc.disable()
        _GC_PAUSED = True


def resume_gc() -> None:
    """:func:`pause_gc` undone (start-up's objects frozen first); no-op where it did nothing.
    Called when the :func:`session_soon` session is ready or failed, and by the CLI where a
    command makes its session another way (``gputex.cli_run.open_session``)."""
    import gc

    global _GC_PAUSED
    if _GC_PAUSED:
        _GC_PAUSED = False
        gc.freeze()
        gc.enable()


def settle(timeout: float = 10.0) -> None:
    """Wait (up to ``timeout`` s) for sessions still being made on their own threads. A run
    stopped early (Ctrl-C, SIGTERM) calls this before the interpreter exits: finalizing it while
    a daemon thread is inside wgpu-native's device creation crashed the process (SIGSEGV, seen
    once on the H200 with Ctrl-C sent as the first worker process started)."""
    from concurrent.futures import wait

    pending = [f for f in list(_PENDING) if not f.done()]
    if pending:
        wait(pending, timeout=timeout)


def shader_cache_dir(environ=os.environ) -> str | None:
    """Where Mesa drivers (lavapipe) keep compiled shaders between processes, or None if off.

    Mesa's on-disk shader cache is on by default (``$MESA_SHADER_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/mesa_shader_cache``, else ``~/.cache/mesa_shader_cache``;
    ``MESA_SHADER_CACHE_DISABLE=true`` turns it off). wgpu/naga's SPIR-V is the same from one
    process to the next, so it hits: on this 2-core lavapipe machine the first mip chain of a
    process takes 8.6 s cold and 0.5-1.1 s warm (``benchmarks/startup.py``). Where that
    directory cannot be written (a read-only or missing home, as in some containers) Mesa
    silently caches nothing; a per-user directory under the temp dir is set instead. Call
    before the first device is made (Mesa reads the variables then).
    """
    if environ.get("MESA_SHADER_CACHE_DISABLE", "").lower() in ("1", "true", "yes"):
        return None
    if environ.get("MESA_SHADER_CACHE_DIR"):
        return environ["MESA_SHADER_CACHE_DIR"]
    base = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".cache")
    probe = base
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)  # Mesa makes the missing directories: the nearest existing one must be writable
    if os.path.isdir(probe) and os.access(probe, os.W_OK | os.X_OK):
        return os.path.join(base, "mesa_shader_cache")
    import tempfile

    uid = os.getuid() if hasattr(os, "getuid") else 0
    environ["MESA_SHADER_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), f"gputex-mesa-shader-cache-{uid}")
    return environ["MESA_SHADER_CACHE_DIR"]


def _setup_instance(backend: str | None) -> None:
    import wgpu
    from wgpu.backends.wgpu_native import extras

    shader_cache_dir()

    # Mesa's GL loader complains to stderr when XDG_RUNTIME_DIR is missing; give it one.
    if "XDG_RUNTIME_DIR" not in os.environ:
        import tempfile

        os.environ["XDG_RUNTIME_DIR"] = tempfile.gettempdir()
    if backend:
        key = backend.lower()
        if key not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; use one of: {', '.join(BACKENDS)}")
        flag = {"vulkan": "Vulkan", "metal": "Metal", "dx12": "DX12", "gl": "GL"}[key]
        try:
            extras.set_instance_extras(backends=[flag])
        except Exception:  # instance already made in this process: filtering below still applies
            pass
    _ = wgpu


def adapter_info(adapter) -> AdapterInfo:
    info = adapter.info
    return AdapterInfo(
        name=info.get("device", "") or info.get("description", "") or "unknown",
        backend=info.get("backend_type", ""),
        adapter_type=info.get("adapter_type", "Unknown"),
        driver=info.get("description", ""),
        limits={k: adapter.limits[k] for k in WANTED_LIMITS if k in adapter.limits},
        features=sorted(adapter.features),
    )


def list_adapters(backend: str | None = None) -> list:
    """All wgpu adapters on this machine (optionally for one backend), best first."""
    import wgpu

    _setup_instance(backend)
    adapters = wgpu.gpu.enumerate_adapters_sync()
    if backend:
        want = BACKENDS[backend.lower()]
        adapters = [a for a in adapters if a.info.get("backend_type", "") == want]
    backend_rank = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 1}
    return sorted(adapters, key=lambda a: (_TYPE_RANK.get(a.info.get("adapter_type"), 4),
                                           backend_rank.get(a.info.get("backend_type"), 2)))


class Session:
    """One adapter and one device, shared by every image of a run.

    Parameters
    ----------
    adapter
        Case-insensitive substring of the adapter name (default: ``GPUTEX_ADAPTER``).
    backend
        ``vulkan``, ``metal``, ``dx12`` or ``gl`` (default: ``GPUTEX_BACKEND``).

    Raises
    ------
    NoAdapterError
        When no adapter matches or the device cannot be created.
    """

    def __init__(self, adapter: str | None = None, backend: str | None = None):
        adapter = adapter or os.environ.get("GPUTEX_ADAPTER") or None
        backend = backend or os.environ.get("GPUTEX_BACKEND") or None
        from .trace import span

        with span("warm-types"):
            warm_types()
        try:
            candidates = _early_adapters() if backend is None else None
            if candidates is None:
                candidates = list_adapters(backend)
        except ValueError:
            raise
        except Exception as e:
            raise NoAdapterError(f"no GPU adapter: wgpu could not start ({e})") from e
        everyone = candidates
        if adapter:
            candidates = [a for a in candidates if adapter.lower() in adapter_info(a).name.lower()]
        if not candidates:
            what = " ".join(x for x in (f"matching {adapter!r}" if adapter else "",
                                        f"on backend {backend}" if backend else "") if x)
            if everyone:  # a name that matches none of the adapters there are: list them
                names = "; ".join(f"{i.name} ({i.backend}, {i.adapter_type})" for i in map(adapter_info, everyone))
                raise NoAdapterError(f"no GPU adapter {what}; the adapters here are: {names}")
            raise NoAdapterError(
                f"no GPU adapter {what}".rstrip() + " (install a Vulkan driver, or Mesa's lavapipe: "
                "apt-get install mesa-vulkan-drivers)"
            )
        self.adapter = candidates[0]
        self.info = adapter_info(self.adapter)
        self.info.chosen = True
        self._cache: dict[Any, Any] = {}  # pipelines, buffers reused across images
        self.device = self._create_device("create")
        self.features = set(self.device.features)
        self.limits = dict(self.device.limits)

    # -- small helpers used by the step modules ---------------------------------
    @property
    def name(self) -> str:
        return f"{self.info.name} ({self.info.backend}, {self.info.adapter_type})"

    def has_feature(self, feature: str) -> bool:
        return not feature or feature in self.features

    def cached(self, key: Any, make):
        """Return ``self._cache[key]``, creating it with ``make()`` the first time."""
        value = self._cache.get(key)
        if value is None:
            value = self._cache[key] = make()
        return value

    def cache(self, name: str):
        """The session's named cache ``name`` (:class:`gputex.caches.Cache`: pipelines, reused
        GPU resources, with hit/miss counts); dropped with the device on :meth:`recreate`."""
        from .caches import Cache

        return self.cached(("named-cache", name), lambda: Cache(name))

    def caches(self) -> dict:
        """Every named cache made so far, by name."""
        return {k[1]: v for k, v in self._cache.items() if isinstance(k, tuple) and k[:1] == ("named-cache",)}

    def check(self, what: str, fn, *args, **kwargs):
        """Call a wgpu function; turn its errors into :class:`GPUError` naming ``what``."""
        try:
            return fn(*args, **kwargs)
        except MemoryError as e:
            raise GPUError(f"{what}: out of GPU memory") from e
        except Exception as e:
            first = _first_line(e)
            if "lost" in str(e).lower():
                raise DeviceLostError(f"{what}: GPU device lost ({first})") from e
            raise GPUError(f"{what}: {first}") from e

    def _create_device(self, verb: str):
        try:
            return self.adapter.request_device_sync(
                required_features=[f for f in WANTED_FEATURES if f in self.adapter.features],
                required_limits=dict(self.info.limits), label="gputex")
        except Exception as e:
            raise NoAdapterError(f"could not {verb} a device on {self.info.name}: {e}") from e

    def recreate(self) -> None:
        """Make a new device on the same adapter (after a device loss); caches are dropped."""
        self._cache.clear()
        self.device = self._create_device("recreate")

    def uniform(self, data: bytes):
        """A uniform buffer holding ``data`` (padded to 16 bytes, as WGSL structs are)."""
        import wgpu

        return self.device.create_buffer_with_data(data=data.ljust(-(-len(data) // 16) * 16, b"\0"),
                                                   usage=wgpu.BufferUsage.UNIFORM)

    def wait(self) -> None:
        """Block until all submitted GPU work is done (a buffer map; see README)."""
        import wgpu

        buf = self.cached("wait-buffer", lambda: self.device.create_buffer(
            size=4, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST))
        # a map waits only for the submissions that use the buffer: without this one, none did,
        # and the map returned at once (the benchmarks' "wall" figures timed only the encoding)
        enc = self.device.create_command_encoder()
        enc.clear_buffer(buf, 0, 4)
        self.device.queue.submit([enc.finish()])
        buf.map_sync(wgpu.MapMode.READ)
        buf.unmap()


def _first_line(e: Exception) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    # wgpu validation errors read "Validation Error / Caused by: / In X / <reason>": keep the reason
    if lines and lines[0].lower().startswith("validation error") and len(lines) > 1:
        return lines[-1]
    return lines[0] if lines else type(e).__name__

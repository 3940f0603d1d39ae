"""The module road: StableHLO text verified, compiled on XLA:CPU, run with numpy arrays.

Contract:
- Works on StableHLO text alone. It knows nothing of networks, plans or parameter tables
  (:mod:`topos.xla.executable` builds on it for those); of topos it imports only the
  errors and the IR's element table, never a reading.
- Importing it never imports jax. :func:`available` and the first call that needs jax load
  it once, under the road's one lock; without the ``xla`` extra that call raises
  :class:`~topos.errors.XlaUnavailableError` saying how to install it.
- The road's mutable state lives here and only here: the loaded jax pieces, the lock, the
  signature and compile caches (least recently used entries go first) and
  :data:`FAST_ROAD_FALLBACKS`. ``topos.xla`` re-exports the names; a test that swaps the
  state (a cold cache, a smaller size, a counting compile) patches this module.
- :func:`verify` reports MLIR's diagnostics and never raises for bad text; every compile,
  run and evaluation verifies first and raises :class:`~topos.errors.EmissionError` when
  the text does not verify. Arrays are checked against ``@main``'s signature before they
  reach XLA (which checks only byte sizes): a mismatch raises
  :class:`~topos.errors.FeedError` naming the argument.
- Every module is compiled with :data:`IEEE_COMPILER_OPTIONS`; a pure module runs through a
  jitted ``jax.export`` wrapper, any other through the client's executable, never both.
- :func:`evaluate_module` runs the StableHLO reference interpreter bundled with jaxlib,
  whose order of folding is the reference kernels'; :func:`portable` and
  :func:`exported_module` hand the module on as a versioned artifact.

Example:
    >>> import numpy as np
    >>> text = '''func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    ...   %y = stablehlo.add %x, %x : tensor<2xf32>
    ...   return %y : tensor<2xf32>
    ... }'''
    >>> verify(text).ok
    True
    >>> run_module(text, np.array([1.0, 2.5], np.float32))[0].tolist()
    [2.0, 5.0]
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, Final, TypeVar, final

import attrs
import numpy as np
import numpy.typing as npt

from topos.errors import EmissionError, FeedError, ToposError, XlaUnavailableError, user_site
from topos.ir.element import stablehlo_storage

__all__ = [
    "CompiledModule", "Signature", "Verification", "XlaDeviceError", "available", "compile_module",
    "device_count", "evaluate_module", "exported_module", "portable", "run_module", "signature",
    "verify"
]

Array = np.ndarray[Any, Any]

_INSTALL: Final = (
    "the XLA road needs the optional 'xla' extra; install it with "
    "`pip install 'topos-autodiff[xla]'` (jax==0.10.2 and jaxlib==0.10.2)"
)


class XlaDeviceError(ToposError):
    """More XLA devices were requested than this process has (or a split does not fit)."""


# --------------------------------------------------------------------------- loading jax lazily


@final
class _Jax:
    """The jax/jaxlib pieces the road uses, imported once and only when needed."""

    def __init__(self) -> None:
        import jax
        from jax.extend import backend
        from jaxlib.mlir import ir
        from jaxlib.mlir._mlir_libs import _jax_mlir_ext  # private: registers func and friends
        from jaxlib.mlir.dialects import chlo, sdy, stablehlo

        self.jax: ModuleType = jax
        self.backend: ModuleType = backend
        self.ir: ModuleType = ir
        self.stablehlo: ModuleType = stablehlo
        context = ir.Context()
        registry = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(registry)
        context.append_dialect_registry(registry)
        context.load_all_available_dialects()
        stablehlo.register_dialect(context)
        chlo.register_dialect(context)
        sdy.register_dialect(context)
        self.context: Any = context


_LOADED: _Jax | None = None
_LOCK = threading.RLock()


def _jax() -> _Jax:
    global _LOADED
    with _LOCK:
        if _LOADED is None:
            try:
                _LOADED = _Jax()
            except ImportError as error:
                raise XlaUnavailableError(f"{_INSTALL}; the import failed with: {error}") from None
        return _LOADED


def available() -> bool:
    """True when jax and jaxlib import (the ``xla`` extra is installed)."""
    try:
        _jax()
    except XlaUnavailableError:
        return False
    return True


# --------------------------------------------------------------------------- verification


@final
@attrs.frozen(slots=True)
class Verification:
    """The verdict on one module: ``ok``, and the MLIR diagnostics when it is not.

    Example:
        >>> from topos.xla import verify
        >>> verify("func.func @main() -> () { return }").ok
        True
    """

    ok: bool
    diagnostics: tuple[str, ...] = ()
    message: str = ""

    def __bool__(self) -> bool:
        return self.ok


def verify(text: str, strict: bool = False) -> Verification:
    """Parse and verify ``text``; with ``strict`` also demand pure, portable StableHLO."""
    j = _jax()
    ir = j.ir
    with _LOCK, j.context:
        try:
            module = ir.Module.parse(text)
            module.operation.verify()
        except ir.MLIRError as error:
            notes = tuple(f"{d.location}: {d.message}" for d in error.error_diagnostics)
            return Verification(False, notes, str(error))
        except Exception as error:  # the bindings raise ValueError for some malformed input
            return Verification(False, (str(error),), str(error))
        if strict:
            try:
                j.stablehlo.serialize_portable_artifact(module, j.stablehlo.get_current_version())
            except Exception as error:
                return Verification(
                    False, (f"not pure StableHLO (chlo, sdy or another dialect is present): {error}",),
                    f"not pure StableHLO: {error}",
                )
    return Verification(True)


def _checked(text: str) -> None:
    verdict = verify(text)
    if not verdict.ok:
        raise EmissionError("the module does not verify:\n" + "\n".join(verdict.diagnostics or (verdict.message,)))


# --------------------------------------------------------------------------- signatures

# Index and predicate types; floating types are the elements' (topos.ir.element.stablehlo_storage).
_INDEX_DTYPES: Final[dict[str, str]] = {"i1": "bool", "i32": "int32", "i64": "int64"}


@final
@attrs.frozen(slots=True)
class Signature:
    """Shapes and dtypes of ``@main``'s arguments and results."""

    inputs: tuple[tuple[tuple[int, ...], np.dtype[Any]], ...]
    outputs: tuple[tuple[tuple[int, ...], np.dtype[Any]], ...]


def _dtype(name: str) -> np.dtype[Any]:
    floating = stablehlo_storage(name)
    if floating is not None:
        return floating
    if name not in _INDEX_DTYPES:
        raise EmissionError(f"the module uses type {name}, which has no numpy dtype here")
    return np.dtype(_INDEX_DTYPES[name])


SIGNATURE_CACHE_SIZE: Final = 256
"""How many module signatures :func:`signature` keeps (least recently used goes first)."""

COMPILE_CACHE_SIZE: Final = 32
"""How many compiled modules :func:`compile_module` keeps (least recently used goes first)."""

_SIGNATURES: OrderedDict[str, Signature] = OrderedDict()


_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(cache: OrderedDict[_K, _V], key: _K, value: _V, size: int) -> None:
    """Insert under ``_LOCK`` and drop the least recently used entries beyond ``size``."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)


def signature(text: str) -> Signature:
    """The signature of ``@main`` (the text must verify)."""
    with _LOCK:
        cached = _SIGNATURES.get(text)
        if cached is not None:
            _SIGNATURES.move_to_end(text)
            return cached
    _checked(text)
    j = _jax()
    ir = j.ir
    with _LOCK, j.context:
        module = ir.Module.parse(text)
        main = None
        for operation in module.body.operations:
            attributes = operation.attributes
            if "sym_name" in attributes and ir.StringAttr(attributes["sym_name"]).value == "main":
                main = operation
        if main is None:
            raise EmissionError("the module has no @main function")
        function = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)

        def describe(kind: Any) -> tuple[tuple[int, ...], np.dtype[Any]]:
            ranked = ir.RankedTensorType(kind)
            return tuple(int(a) for a in ranked.shape), _dtype(str(ranked.element_type))

        found = Signature(
            tuple(describe(t) for t in function.inputs), tuple(describe(t) for t in function.results)
        )
    with _LOCK:
        _remember(_SIGNATURES, text, found, SIGNATURE_CACHE_SIZE)
    return found


def _check_arrays(text: str, arrays: Sequence[npt.ArrayLike], labels: Sequence[str] | None = None) -> list[Array]:
    """The arrays as numpy, each checked against ``@main``'s signature.

    ``labels`` name the arguments in errors (the plan's symbols); without them an argument
    is named by its position in ``@main``.
    """
    return _checked_against(signature(text).inputs, arrays, labels)


def _checked_against(
    expected: Sequence[tuple[tuple[int, ...], np.dtype[Any]]], arrays: Sequence[npt.ArrayLike], labels: Sequence[str] | None
) -> list[Array]:
    """:func:`_check_arrays` once the signature is at hand (a compiled module keeps its own)."""
    if len(arrays) != len(expected):
        raise FeedError(f"the module takes {len(expected)} arguments, got {len(arrays)} (called at {user_site()})")
    checked: list[Array] = []
    for position, (value, (shape, dtype)) in enumerate(zip(arrays, expected, strict=True)):
        array = value if type(value) is np.ndarray else np.asarray(value)
        if array.shape != shape or array.dtype != dtype:
            label = labels[position] if labels is not None else f"argument {position} of @main"
            raise FeedError(
                f"{label} (argument %arg{position} of @main) must be {dtype.name}{list(shape)}, "
                f"got {array.dtype.name}{list(array.shape)} (called at {user_site()})"
            )
        checked.append(array)
    return checked


# --------------------------------------------------------------------------- compile and run


def device_count() -> int:
    """How many XLA:CPU devices this process has (set before jax starts with
    ``XLA_FLAGS=--xla_force_host_platform_device_count=N``)."""
    return len(_jax().backend.get_backend("cpu").devices())


@final
class CompiledModule:
    """One module compiled for ``devices`` XLA:CPU devices. Call it with numpy arrays."""

    __slots__ = ("_call", "_in_shardings", "_out_shardings", "_wide", "devices", "executable", "signature", "text")

    def __init__(self, text: str, devices: int) -> None:
        j = _jax()
        self.text = text
        self.devices = devices
        self.signature = signature(text)
        client = j.backend.get_backend("cpu")
        available_devices = client.devices()
        if devices < 1 or devices > len(available_devices):
            raise XlaDeviceError(
                f"asked for {devices} XLA devices, this process has {len(available_devices)}; "
                "start Python with XLA_FLAGS=--xla_force_host_platform_device_count=N "
                "(set before jax starts) for more host devices"
            )
        chosen = available_devices[:devices]
        self._call: Any = None
        self._wide = any(dtype.itemsize == 8 for _, dtype in (*self.signature.inputs, *self.signature.outputs))
        self._in_shardings: Any = None
        self._out_shardings: Any = None
        self.executable: Any = None
        if devices == 1:
            # One compile: the jitted wrapper when the module is pure StableHLO (jax's C++
            # dispatch), else the client's executable. Never both.
            self._call = _compile_exported(j, text, self.signature, self._wide)
            if self._call is None:
                self.executable = _compile_on_client(j, client, text, [chosen[0]], _options(j, 1, chosen))
            return
        import importlib

        xla_client: Any = importlib.import_module("jax._src.lib").xla_client
        from jax._src.sharding_impls import GSPMDSharding  # private, pinned by the extra

        options = _options(j, devices, chosen)
        options.executable_build_options.use_shardy_partitioner = "sdy." in text
        self.executable = _compile_on_client(j, client, text, xla_client.DeviceList(tuple(chosen)), options)
        # Shardings come from the executable itself (a wrong one crashes the process), named
        # over the module's sdy.mesh where they read over it.
        self._in_shardings = _named(j, chosen, text, [GSPMDSharding(chosen, s) for s in self.executable.get_parameter_shardings()], self.signature.inputs)
        self._out_shardings = _named(j, chosen, text, [GSPMDSharding(chosen, s) for s in self.executable.get_output_shardings()], self.signature.outputs)

    @property
    def fast(self) -> bool:
        """True when calls go through the jitted ``jax.export`` wrapper (jax's C++ dispatch)."""
        return self._call is not None

    def __call__(self, *arrays: npt.ArrayLike) -> list[Array]:
        """Run with numpy arrays matching the signature exactly; returns numpy arrays."""
        return self.run(arrays)

    def run(self, arrays: Sequence[npt.ArrayLike], labels: Sequence[str] | None = None) -> list[Array]:
        """The same, with ``labels`` naming the arguments in a :class:`FeedError`."""
        return self.run_trusted(_checked_against(self.signature.inputs, arrays, labels))

    def run_trusted(self, checked: list[Array]) -> list[Array]:
        """Run with numpy arrays the caller has already checked against the signature.

        The step behind :meth:`run`, for a caller that settled every argument's shape and
        dtype itself (:class:`~topos.xla.executable.XlaExecutable` does, once per call):
        nothing is checked here, so a misfit meets only XLA's own checks.

        Example:
            >>> module = compile_module("func.func @main(%x: tensor<f32>) -> tensor<f32> { return %x : tensor<f32> }")
            >>> module.run_trusted([np.array(1.5, np.float32)])[0].tolist()
            1.5
        """
        if self._call is not None:
            # jax's own dispatch moves numpy arguments in C++; device_put costs ~20 us each.
            if self._wide:
                with _jax().jax.enable_x64(True):
                    return [np.asarray(o) for o in self._call(*checked)]
            return [np.asarray(o) for o in self._call(*checked)]
        j = _jax()
        jax = j.jax
        with jax.enable_x64(True):  # else device_put silently narrows f64 to f32
            if self._in_shardings is None:
                device = self.executable.local_devices()[0]
                buffers = jax.device_put(checked, device)
                outputs = self.executable.execute(buffers)
                return [np.asarray(o) for o in outputs]
            return [np.asarray(o) for o in self._sharded(checked)]

    def _sharded(self, arrays: Sequence[Any]) -> list[Any]:
        """One SPMD run: each argument laid out as ``@main`` wants it (a device array already
        so laid out stays put, any other is placed or resharded), results left on the devices."""
        jax = _jax().jax
        with jax.enable_x64(True):
            buffers = [
                a if isinstance(a, jax.Array) and a.sharding.is_equivalent_to(s, a.ndim) else jax.device_put(a, s)
                for a, s in zip(arrays, self._in_shardings, strict=True)
            ]
            pieces = self.executable.execute_sharded(buffers).disassemble_into_single_device_arrays()
            return [
                jax.make_array_from_single_device_arrays(shape, sharding, shards)
                for (shape, _), sharding, shards in zip(self.signature.outputs, self._out_shardings, pieces, strict=True)
            ]

    @property
    def shardings(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """The (arguments', results') jax shardings of a many-device module (``NamedSharding``
        over the module's ``sdy.mesh`` where one reads over it); empty on one device."""
        return tuple(self._in_shardings or ()), tuple(self._out_shardings or ())

    def on_device(self, arrays: Sequence[Any]) -> list[Any]:
        """Run with arguments that are numpy arrays or jax arrays already on the device, and
        leave the results there (jax arrays, not copied back to the host).

        For loops that feed one call's results to the next (a decode step's caches): the
        values never cross to the host between calls. Host (numpy) arguments are checked
        against ``@main``'s shapes and dtypes, device arrays by jax; a misfit raises
        :class:`~topos.errors.FeedError` naming the argument. On many devices every argument
        is checked here, and results stay sharded as ``@main`` lays them out (FSDP's
        parameters live sharded between steps).

        Example:
            >>> from topos import Tape
            >>> from topos.xla import XlaExecutable
            >>> network, y = Tape.record(lambda t: t.input([1.0, 2.0]) * 2.0)
            >>> module = XlaExecutable.of_network(network, [y]).compiled
            >>> first = module.on_device([np.ones(2, np.float32)])
            >>> [float(x) for x in module.on_device(first)[0]]
            [4.0, 4.0]
        """
        jax = _jax().jax
        expected = self.signature.inputs
        # Host arrays are checked here: jax would narrow a float64 one to float32 in silence.
        if len(arrays) != len(expected) or any(
            (isinstance(a, np.ndarray) or self.devices > 1) and (tuple(a.shape) != shape or a.dtype != dtype)
            for a, (shape, dtype) in zip(arrays, expected, strict=False)
        ):
            raise self._misfit(arrays, ValueError("arguments do not fit @main"))
        if self.devices > 1:
            return self._sharded(arrays)
        try:
            if self._call is not None:
                if self._wide:
                    with jax.enable_x64(True):
                        return list(self._call(*arrays))
                return list(self._call(*arrays))
            with jax.enable_x64(True):  # else device_put silently narrows f64 to f32
                device = self.executable.local_devices()[0]
                return list(self.executable.execute([a if isinstance(a, jax.Array) else jax.device_put(a, device) for a in arrays]))
        except Exception as error:  # jax's own complaint, said the road's way
            raise self._misfit(arrays, error) from None

    def _misfit(self, arrays: Sequence[Any], error: Exception) -> FeedError:
        """The :class:`FeedError` for arguments jax refused: the first that does not fit
        ``@main``, else jax's message."""
        expected = self.signature.inputs
        if len(arrays) != len(expected):
            return FeedError(f"the module takes {len(expected)} arguments, got {len(arrays)} (called at {user_site()})")
        for position, (value, (shape, dtype)) in enumerate(zip(arrays, expected, strict=True)):
            got_shape = tuple(getattr(value, "shape", np.shape(value)))
            got_dtype = np.dtype(getattr(value, "dtype", np.asarray(value).dtype))
            if got_shape != shape or got_dtype != dtype:
                return FeedError(
                    f"argument %arg{position} of @main must be {dtype.name}{list(shape)}, "
                    f"got {got_dtype.name}{list(got_shape)} (called at {user_site()})"
                )
        return FeedError(f"XLA refused the call: {type(error).__name__}: {error} (called at {user_site()})")

    def to_device(self, arrays: Sequence[npt.ArrayLike]) -> list[Any]:
        """Host arrays moved to this module's device once (e.g. parameters reused by many
        :meth:`on_device` calls), each checked against the signature first; on many
        devices each is laid out (sharded) as ``@main`` wants it."""
        j = _jax()
        checked = _checked_against(self.signature.inputs, arrays, None)
        if self.devices > 1:
            with j.jax.enable_x64(True):
                return [j.jax.device_put(a, s) for a, s in zip(checked, self._in_shardings, strict=True)]
        device = j.backend.get_backend("cpu").devices()[0]
        with j.jax.enable_x64(True):
            return [j.jax.device_put(a, device) for a in checked]


IEEE_COMPILER_OPTIONS: Final[Mapping[str, str]] = {"xla_disable_hlo_passes": "algsimp"}
"""XLA debug options every module is compiled with.

XLA's algebraic simplifier rewrites floating-point expressions as if they were real numbers:
``(x + c) - c`` becomes ``x`` (which breaks magic-number rounding), ``A / sqrt(B)`` becomes
``A * rsqrt(B)``, ``ln(exp(A))`` becomes ``A``. Only the whole pass can be switched off
(jax 0.10.2 exposes no finer knob), so it is. What XLA still does is the envelope
(docs/acceleration.md): fused multiply-adds, flushed denormals, its own summation order and
transcendentals, and folding a literal ``x + 0`` to ``x`` while importing StableHLO.
"""


_MESH: Final = re.compile(r"sdy\.mesh @mesh = <\[([^\]]*)\]>")


def _named(j: _Jax, devices: Sequence[Any], text: str, shardings: list[Any], types: Sequence[tuple[tuple[int, ...], Any]]) -> list[Any]:
    """Each GSPMD sharding as the equal ``NamedSharding`` over the module's ``sdy.mesh`` (the
    mesh's devices in row-major order, as Shardy numbers them); kept as it is otherwise."""
    found = _MESH.search(text)
    if found is None:
        return shardings
    # private, pinned by the extra
    from jax._src.sharding_impls import _gspmd_to_named_sharding_via_mesh

    axes = re.findall(r'"(\w+)"=(\d+)', found.group(1))
    mesh = j.jax.sharding.Mesh(np.array(devices).reshape([int(n) for _, n in axes]), [a for a, _ in axes])
    named = []
    for sharding, (shape, _) in zip(shardings, types, strict=True):
        try:
            candidate = _gspmd_to_named_sharding_via_mesh(sharding, mesh)
        except Exception:  # a layout the mesh cannot name stays GSPMD's
            candidate = sharding
        named.append(candidate if candidate.is_equivalent_to(sharding, len(shape)) else sharding)
    return named


def _options(j: _Jax, devices: int, chosen: Sequence[Any]) -> Any:
    if devices == 1:
        options = j.backend.get_compile_options(num_replicas=1, num_partitions=1)
    else:
        options = j.backend.get_compile_options(
            num_replicas=1, num_partitions=devices, device_assignment=np.array(chosen).reshape(1, devices)
        )
    options.env_option_overrides = list(IEEE_COMPILER_OPTIONS.items())
    return options


def _compile_on_client(j: _Jax, client: Any, text: str, devices: Any, options: Any) -> Any:
    """The one place a module is compiled through the client (tests count calls here)."""
    return client.compile_and_load(text, devices, options)


def _compile_exported(j: _Jax, text: str, sig: Signature, wide: bool) -> Any:
    """Compile a pure module through jax once, now; None when it is not pure StableHLO.

    The result is called with numpy arrays (jax's dispatch moves them in C++).
    """
    jitted = _exported_call(j, text, sig)
    if jitted is None:
        return None
    jax = j.jax
    avals = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in sig.inputs]
    if wide:
        with jax.enable_x64(True):
            return jitted.lower(*avals).compile()
    return jitted.lower(*avals).compile()


FAST_ROAD_FALLBACKS: Final[list[str]] = []
"""Why a module with no ``chlo`` op missed the fast ``jax.export`` road, newest last (at most 16).

Such a module should always take it; an entry here means jax's private ``Exported`` fields
moved (or the template changed) and every call now pays the slower ``device_put`` road.
``tests/test_xla.py`` asserts this stays empty for a pure module.
"""


def _exported_call(j: _Jax, text: str, sig: Signature) -> Any:
    """A jitted ``jax.export.Exported`` wrapper around a pure module, or None.

    Pure StableHLO only (the wrapper goes through the portable artifact); modules with
    ``chlo`` ops keep the ``device_put`` + ``execute`` road. A pure module that still falls
    back is recorded in :data:`FAST_ROAD_FALLBACKS`.
    """
    try:
        exported = exported_module(text, sig, expand=False)
        return j.jax.jit(exported.call, compiler_options=dict(IEEE_COMPILER_OPTIONS))
    except Exception as error:  # not pure StableHLO, or jax's private fields moved: plain road
        if "chlo." not in text:
            with _LOCK:
                FAST_ROAD_FALLBACKS.append(f"{type(error).__name__}: {error}")
                del FAST_ROAD_FALLBACKS[:-16]
        return None


def portable(text: str, expand: bool = True) -> bytes:
    """The module as a versioned StableHLO portable artifact, ``chlo`` expanded first (``expand``).

    Raises whatever the bindings raise when the text holds ops outside StableHLO after the
    expansion (sdy meshes, unknown dialects).
    """
    j = _jax()
    with _LOCK, j.context, j.ir.Location.unknown():
        module = j.ir.Module.parse(text)
        if expand and "chlo." in text:
            from jaxlib.mlir import passmanager

            j.stablehlo.register_stablehlo_passes()
            passmanager.PassManager.parse("builtin.module(func.func(chlo-legalize-to-stablehlo))").run(module.operation)
        blob: bytes = j.stablehlo.serialize_portable_artifact(module, j.stablehlo.get_current_version())
        return blob


def exported_module(text: str, sig: Signature | None = None, expand: bool = True) -> Any:
    """A ``jax.export.Exported`` for a module on XLA:CPU: ``.call(*arrays)`` runs it under jax,
    ``.serialize()`` gives bytes that ``jax.export.deserialize`` reads without topos.

    jax offers no public constructor from StableHLO text, so a trivial export is taken as a
    template and its fields replaced (two are private: jax 0.10.2 is pinned for that reason).
    """
    import dataclasses

    j = _jax()
    jax = j.jax
    from jax import export as jexport
    from jax import tree_util

    sig = signature(text) if sig is None else sig
    blob = portable(text, expand)
    with jax.enable_x64(True):
        template = jexport.export(jax.jit(lambda x: x), platforms=["cpu"])(jax.ShapeDtypeStruct((), np.float32))
    inputs, outputs = len(sig.inputs), len(sig.outputs)
    return dataclasses.replace(
        template,
        fun_name="main",
        in_tree=tree_util.tree_structure((tuple(range(inputs)), {})),
        out_tree=tree_util.tree_structure(tuple(range(outputs))),
        in_avals=tuple(jax.core.ShapedArray(shape, dtype) for shape, dtype in sig.inputs),
        out_avals=tuple(jax.core.ShapedArray(shape, dtype) for shape, dtype in sig.outputs),
        _in_named_shardings=(None,) * inputs,
        _out_named_shardings=(None,) * outputs,
        in_shardings_hlo=(None,) * inputs,
        out_shardings_hlo=(None,) * outputs,
        module_kept_var_idx=tuple(range(inputs)),
        mlir_module_serialized=blob,
        _get_vjp=None,
    )


_COMPILED: OrderedDict[tuple[str, int], CompiledModule] = OrderedDict()


def compile_module(text: str, devices: int = 1) -> CompiledModule:
    """Verify and compile ``text`` for ``devices`` devices, cached by (text, devices).

    The cache keeps the :data:`COMPILE_CACHE_SIZE` most recently used modules. Compiling
    holds the road's lock, so threads asking for the same text compile it once.
    """
    key = (text, devices)
    with _LOCK:
        compiled = _COMPILED.get(key)
        if compiled is None:
            _checked(text)
            compiled = CompiledModule(text, devices)
        _remember(_COMPILED, key, compiled, COMPILE_CACHE_SIZE)
        return compiled


def run_module(text: str, *arrays: npt.ArrayLike, devices: int = 1) -> list[Array]:
    """Compile (cached) and run ``text`` on XLA:CPU with numpy arrays."""
    return compile_module(text, devices)(*arrays)


def evaluate_module(text: str, *arrays: npt.ArrayLike) -> list[Array]:
    """Run ``text`` on the StableHLO reference interpreter bundled with jaxlib.

    Sequential reductions, no fused multiply-add, no flushing: the reference kernels' order.
    It can take the process down on integer division by zero; call it in a subprocess when
    the input is untrusted.
    """
    checked = _check_arrays(text, arrays)
    j = _jax()
    ir = j.ir
    expected = signature(text).outputs
    with _LOCK, j.context, ir.Location.unknown():
        module = ir.Module.parse(text)
        if "chlo." in text:
            # The interpreter knows only StableHLO (chlo.erf aborts it): expand chlo first.
            from jaxlib.mlir import passmanager

            j.stablehlo.register_stablehlo_passes()
            passmanager.PassManager.parse("builtin.module(func.func(chlo-legalize-to-stablehlo))").run(module.operation)
        attributes = [_attribute(j, a) for a in checked]
        outputs = j.stablehlo.eval_module(module, attributes)
        return [_from_attribute(o, shape, dtype) for o, (shape, dtype) in zip(outputs, expected, strict=True)]


def _attribute(j: _Jax, array: Array) -> Any:
    ir = j.ir
    if array.dtype.name == "bfloat16":
        # The bindings' buffer protocol has no bf16: hand over the bits with an explicit type.
        return ir.DenseElementsAttr.get(
            np.ascontiguousarray(array).view(np.uint16).reshape(-1), type=ir.BF16Type.get(), shape=list(array.shape)
        )
    # Rank 0 needs its shape stated, or the bindings make it tensor<1x...>.
    return ir.DenseElementsAttr.get(np.ascontiguousarray(array).reshape(-1), shape=list(array.shape))


_TOKEN: Final = re.compile(r"0x[0-9A-Fa-f]+|[-+]?(?:inf|nan|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")
_BLOB: Final = re.compile(r'^dense<"0x([0-9A-Fa-f]*)">')


def _from_attribute(attribute: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Array:
    """A result attribute as an array of ``dtype``, bit for bit, whatever its size or splat-ness."""
    volume = int(np.prod(shape, dtype=np.int64))
    text = str(attribute)
    blob = _BLOB.match(text)
    if blob is not None:
        # MLIR prints a large attribute as its raw little-endian buffer: one element for a
        # splat, else every element, each ``itemsize`` bytes.
        raw = bytes.fromhex(blob.group(1))
        unsigned = np.dtype(f"<u{dtype.itemsize}")
        if len(raw) % dtype.itemsize:
            raise EmissionError(f"a {dtype.name} result blob of {len(raw)} bytes is not whole elements")
        words = np.frombuffer(raw, dtype=unsigned)
        return _filled(words.astype(unsigned.newbyteorder("="), copy=False).view(dtype), volume, shape)
    if dtype.name != "bfloat16":
        flat = np.array(attribute).reshape(-1).astype(dtype, copy=False)
        return _filled(flat, volume, shape)
    # No bf16 buffer: read the printed literal (bf16 needs 4 digits; it prints 7, non-finite
    # values print as their bits). Small attributes print as literals, large ones as a blob.
    body = text[text.index("<") + 1 : text.rindex(">", 0, text.rindex(" : "))]
    bits = []
    for token in _TOKEN.findall(body):
        if token.startswith("0x"):
            bits.append(int(token, 16))
        else:
            bits.append(int(np.asarray(float(token)).astype(dtype).view(np.uint16)))
    return _filled(np.array(bits, dtype=np.uint16).view(dtype), volume, shape)


def _filled(flat: Array, volume: int, shape: tuple[int, ...]) -> Array:
    if flat.size == 1 and volume != 1:  # a splat holds its one element
        flat = np.full(volume, flat[0], dtype=flat.dtype)
    if flat.size != volume:
        raise EmissionError(f"a result of shape {list(shape)} came back with {flat.size} elements")
    return np.ascontiguousarray(flat).reshape(shape)


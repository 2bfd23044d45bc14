"""The type a function returns for argument types, from Numba's typing alone.

A shape stand-in (``passes/stand_ins.py``) needs only the dtype of a fused kernel's values,
and the kernel, whose values are computed by another loop, is compiled for nothing
else: typing it (Numba's untyped passes, then its type inference) takes a few
milliseconds where compiling it took 0.1 s (the square of a difference in ``jit(grad)``
of the dict MLP of ``python -m benchmarks.compile``: 6 ms against 133 ms). Functions the
kernel calls are compiled as typing them requires, as they would be for compiling it.
"""

from __future__ import annotations

from typing import Any

from numba.core import compiler
from numba.core.compiler import CompilerBase, DefaultPassBuilder, _EarlyPipelineCompletion
from numba.core.compiler_machinery import AnalysisPass, register_pass
from numba.core.registry import cpu_target
from numba.core.typed_passes import NopythonTypeInference


@register_pass(mutates_CFG=False, analysis_only=True)
class _ReturnTypeFound(AnalysisPass):
    """Ends the pipeline with the return type inferred."""

    _name = "numbax_return_type_found"

    def __init__(self) -> None:
        AnalysisPass.__init__(self)

    def run_pass(self, state: Any) -> bool:
        raise _EarlyPipelineCompletion(state.return_type)


class _TypingOnly(CompilerBase):
    """Numba's untyped passes and type inference, then :class:`_ReturnTypeFound`."""

    def define_pipelines(self) -> list:
        manager = DefaultPassBuilder.define_untyped_pipeline(self.state)
        manager.add_pass(NopythonTypeInference, "nopython frontend")
        manager.add_pass(_ReturnTypeFound, "the return type, and stop")
        manager.finalize()
        return [manager]


def result_type(function: Any, argument_types: tuple) -> Any:
    """The Numba type ``function`` (Python) returns for ``argument_types``, as
    ``numba.njit(error_model="numpy")`` would type it, without compiling it."""
    flags = compiler.Flags()
    flags.nrt = True
    flags.error_model = "numpy"
    return compiler.compile_extra(
        cpu_target.typing_context,
        cpu_target.target_context,
        function,
        argument_types,
        None,
        flags,
        {},
        pipeline_class=_TypingOnly,
    )

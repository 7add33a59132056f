"""``prefetch(array, i)`` for compiled loops (numba): a hint to the CPU that ``array[i]`` will be
read soon, so the cache line is on its way while the loop works on what it already has.

A walk's reads are scattered over arrays far larger than the cache (which vertex it pushes next,
where that vertex's edges start, the state of each target), and each miss stalls it; numba has no
way to say "read this soon", so this is LLVM's ``llvm.prefetch`` as a numba intrinsic. It loads
nothing into a register and never faults: an index past the end is only a wasted hint.
"""

from __future__ import annotations

from llvmlite import binding, ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# LLVM names the intrinsic by its pointer type: typed pointers before LLVM 15 (numba 0.60's), opaque after
_NAME = "llvm.prefetch.p0" if binding.llvm_version_info[0] >= 15 else "llvm.prefetch.p0i8"
_READ, _KEEP, _DATA = 0, 3, 1  # a read (not a write), kept in every cache level, data (not code)


@intrinsic
def prefetch(typingctx, array, index):  # noqa: ANN001, ANN201, ARG001 - numba's intrinsic signature
    """Ask for ``array[index]``'s cache line now (``array``: a 1-d array; ``index``: an integer)."""
    if not isinstance(array, types.Array) or array.ndim != 1 or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
        held, at = args
        kind = signature.args[0]
        address = cgutils.get_item_pointer(context, builder, kind, context.make_array(kind)(context, builder, held),
                                           [at])
        byte, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        hint = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32]),
                                              _NAME)
        builder.call(hint, [builder.bitcast(address, byte), ir.Constant(i32, _READ), ir.Constant(i32, _KEEP),
                            ir.Constant(i32, _DATA)])
        return context.get_dummy_value()

    return types.void(array, index), codegen

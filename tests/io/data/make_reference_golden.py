"""Writes reference_golden.safetensors with the reference implementation
(pip package `safetensors`, numpy API; made with safetensors 0.8.0, numpy 2.4.6).

The C++ tests read it back and also check that SafetensorsWriter, in the
reference order, reproduces it byte for byte. Values are simple formulas so the
test can recompute them:  v[i] = (i - 3) * 0.5 for float dtypes, i - 3 for
signed, i for unsigned, i % 3 == 0 for bool, over the flattened index i.
"""
import sys

import numpy as np
from safetensors.numpy import save_file


def values(dtype, shape):
    n = int(np.prod(shape)) if len(shape) else 1
    i = np.arange(n)
    if np.issubdtype(dtype, np.floating):
        v = (i - 3) * 0.5
    elif dtype == np.bool_:
        v = i % 3 == 0
    elif np.issubdtype(dtype, np.signedinteger):
        v = i - 3
    else:
        v = i
    return np.asarray(v, dtype=dtype).reshape(shape)


tensors = {
    "f64": values(np.float64, (3,)),
    "f32.matrix": values(np.float32, (2, 3)),
    "f32.scalar": values(np.float32, ()),
    "f32.empty": values(np.float32, (0, 4)),
    "f16": values(np.float16, (5,)),
    "i64": values(np.int64, (2,)),
    "u64": values(np.uint64, (1, 2)),
    "i32": values(np.int32, (4,)),
    "u32": values(np.uint32, (3,)),
    "i16": values(np.int16, (3,)),
    "u16": values(np.uint16, (2, 2)),
    "i8": values(np.int8, (7,)),
    "u8": values(np.uint8, (5,)),
    "bool": values(np.bool_, (4,)),
}
save_file(tensors, sys.argv[1], metadata={"format": "np", "note": "golden"})

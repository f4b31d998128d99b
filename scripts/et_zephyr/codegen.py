# SPDX-License-Identifier: Apache-2.0
"""What the et-zephyr firmware build needs, besides the .pte, to register kernels without torch.

The Zephyr module (zephyr/cmake/et_zephyr_gen.py) writes the kernel registration for the
operators of a model at build time. It takes ``cortex_m::`` schemas from ExecuTorch's
operators.yaml, but ExecuTorch's portable functions.yaml names ``aten::`` operators without
their schemas. This module writes them, from torch's operator registry, to
``NAME.schemas.yaml`` beside the .pte (a mapping "ns::op.overload" -> schema string), so that
a firmware build from the exported files needs no torch.

torch (and, for cortex_m operators, executorch) are imported only when a function is called.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable


def operator_schemas(operators: Iterable[str]) -> dict[str, str]:
    """Schema strings of operators named "ns::op.overload", as torch registers them.

    Raises KeyError naming the first operator torch does not know.
    """
    import torch

    # Registers torch.ops.cortex_m.* (the ops module alone has an import cycle).
    with contextlib.suppress(ImportError):
        import executorch.backends.cortex_m.quantizer.quantizer  # noqa: F401

    schemas: dict[str, str] = {}
    for name in operators:
        namespace, _, rest = name.partition("::")
        op_name, _, overload = rest.partition(".")
        try:
            packet = getattr(getattr(torch.ops, namespace), op_name)
            schemas[name] = str(getattr(packet, overload or "default")._schema)
        except (AttributeError, RuntimeError) as error:
            raise KeyError(f"torch has no operator {name}") from error
    return schemas


def schemas_yaml(operators: Iterable[str]) -> str:
    """NAME.schemas.yaml: each operator's schema, for the firmware build."""
    import yaml

    return "# Operator schemas for the et-zephyr kernel registration (generated).\n" + (
        yaml.safe_dump(operator_schemas(sorted(operators)), sort_keys=True, width=1000)
    )

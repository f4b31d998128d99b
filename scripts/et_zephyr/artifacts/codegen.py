# SPDX-License-Identifier: Apache-2.0
"""What the et-zephyr firmware build needs, besides the .pte, to register kernels without torch.

The Zephyr module (zephyr/cmake/et_zephyr_gen.py) writes the kernel registration for the
operators of a model at build time. It takes ``cortex_m::`` schemas from ExecuTorch's
operators.yaml, but ExecuTorch's portable functions.yaml names ``aten::`` operators without
their schemas. This module writes them, from torch's operator registry, to
``NAME.schemas.yaml`` beside the .pte (a mapping "ns::op.overload" -> schema string), so that
a firmware build from the exported files needs no torch. It also writes the C++ headers of
ExecuTorch's program schema (``NAME.schema/``), so that the build needs no flatc either.

torch (and, for cortex_m operators, executorch) are imported only when a function is called.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ..errors import ExportError

# The program schema's .fbs files and the headers flatc makes of them (program_generated.h
# includes scalar_type_generated.h).
_SCHEMAS = ("program", "scalar_type")
# ExecuTorch's own build (schema/CMakeLists.txt) generates the headers with these flags.
_FLATC_FLAGS = ("--cpp", "--cpp-std", "c++11", "--gen-mutable", "--scoped-enums")


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


def program_schema_headers() -> dict[str, bytes]:
    """ExecuTorch's program schema as C++ headers, by file name.

    Made with the flatc and the .fbs files of the installed executorch package, the same release
    as the runtime sources the firmware is built from.
    """
    import executorch

    package = Path(list(executorch.__path__)[0])
    flatc = package / "data" / "bin" / "flatc"
    schemas = [package / "schema" / f"{schema}.fbs" for schema in _SCHEMAS]
    with tempfile.TemporaryDirectory(prefix="et-export-schema-") as out_dir:
        try:
            subprocess.run(
                [str(flatc), *_FLATC_FLAGS, "-o", out_dir, *map(str, schemas)],
                check=True,
                capture_output=True,
                text=True,
            )
        except (OSError, subprocess.CalledProcessError) as error:
            detail = getattr(error, "stderr", None) or str(error)
            message = f"flatc of the executorch package failed: {detail.strip()}"
            raise ExportError(message) from error
        return {
            f"{schema}_generated.h": (Path(out_dir) / f"{schema}_generated.h").read_bytes()
            for schema in _SCHEMAS
        }

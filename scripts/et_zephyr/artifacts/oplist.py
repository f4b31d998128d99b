# SPDX-License-Identifier: Apache-2.0
"""The selective-build operator list of a .pte, in ExecuTorch's YAML format."""

from __future__ import annotations

import yaml
from executorch.codegen.tools.selective_build import (  # type: ignore[import-not-found]
    _get_io_metadata_for_program_operators,
    _get_program_from_buffer,
)

# Kernel-key argument kinds that carry a dtype and dim order (gen_oplist.py).
_TENSOR_KINDS = (5, 10, 11)


def program_kernels(pte: bytes) -> dict[str, list[str]]:
    """Each operator the program calls with its sorted kernel keys.

    A kernel key (`v1/<dtype>;<dim order>|...`) says which dtype and dim-order
    specialisation of an operator the program needs.
    """
    program = _get_program_from_buffer(pte)
    kernels: dict[str, list[str]] = {}
    for operator, variants in _get_io_metadata_for_program_operators(program).items():
        keys = set()
        for variant in variants:
            args = [
                f"{io.dtype};{','.join(map(str, io.dim_order))}"
                for io in variant
                if io.kernel_type in _TENSOR_KINDS
            ]
            keys.add("v1/" + "|".join(args))
        kernels[operator] = sorted(keys)
    return dict(sorted(kernels.items()))


def ops_yaml(kernels: dict[str, list[str]], model_name: str) -> str:
    """The selected_operators.yaml that ExecuTorch's gen_oplist.py would write."""
    document = {
        "build_features": [],
        "custom_classes": [],
        "et_kernel_metadata": kernels,
        "include_all_non_op_selectives": False,
        "include_all_operators": False,
        "kernel_metadata": {},
        "operators": {
            operator: {
                "debug_info": [model_name],
                "include_all_overloads": False,
                "is_root_operator": True,
                "is_used_for_training": True,
            }
            for operator in kernels
        },
    }
    return yaml.safe_dump(document, default_flow_style=False, sort_keys=True)

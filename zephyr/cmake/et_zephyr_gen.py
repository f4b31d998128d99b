#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Build-time generator of the et-zephyr Zephyr module.

From a model's .pte (and, when et-export wrote them, its NAME.ops.yaml,
NAME.json manifest and NAME.conf Kconfig fragment) it writes:

  et_zephyr_registration.cpp  kernel registration for exactly the model's operators
  et_zephyr_kernel_slots.h    MAX_KERNEL_NUM for ExecuTorch's kernel registry
  NAME_pte.S                  the .pte, 16-byte aligned, in the configured section
  NAME_model.c / NAME_model.h the arenas and a ready et_zephyr_config
  et_zephyr_sources.cmake     the ExecuTorch kernel sources to compile

It needs only the Python standard library, PyYAML (part of any Zephyr
build) and flatbuffers (a dependency of the et-zephyr package and of
executorch); operator schemas come from ExecuTorch's YAML files, from a
NAME.schemas.yaml written by et-export, or from torch when it is installed.
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from flatbuffers import encode, number_types, packer
from flatbuffers.table import Table

# The fit check is et-export's own (et-export --board says the same before any build).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from et_zephyr.firmware.fit import (  # noqa: E402
    Footprint,
    MemoryRegion,
    aligned16,
    firmware_method_arena,
    fit_problem,
    fit_summary,
)

# Manifest dtype names that lib/include/et_zephyr/et_zephyr.h has an ET_ZEPHYR_DTYPE_ for.
_C_DTYPES = {"UINT8", "INT8", "INT16", "INT32", "INT64", "FLOAT16", "FLOAT32", "FLOAT64", "BOOL"}


class GenError(Exception):
    """A problem the user has to fix; printed without a traceback."""


# --------------------------------------------------------------------------
# .pte reading: the generator's one reader of the program flatbuffer
# (ExecuTorch's schema/program.fbs), on the flatbuffers package's tables.

# Field slots of program.fbs's tables, in declaration order.
_PROGRAM_EXECUTION_PLAN = 1
_PLAN_NAME, _PLAN_OPERATORS, _PLAN_NON_CONST_BUFFER_SIZES = 0, 6, 8
_OPERATOR_NAME, _OPERATOR_OVERLOAD = 0, 1


def _slot(table: Table, slot: int) -> int:
    return table.Offset(4 + 2 * slot)


def _tables(table: Table, slot: int) -> list[Table]:
    offset = _slot(table, slot)
    if not offset:
        return []
    start = table.Vector(offset)
    return [
        Table(table.Bytes, table.Indirect(start + 4 * i)) for i in range(table.VectorLen(offset))
    ]


def _text(table: Table, slot: int) -> str:
    offset = _slot(table, slot)
    return table.String(table.Pos + offset).decode() if offset else ""


def read_pte(path: Path, method: str = "forward") -> tuple[list[str], list[int]]:
    """Operators ("ns::name.overload") and planned buffer sizes (ids >= 1) of a method."""
    buf = bytearray(path.read_bytes())
    if len(buf) < 8 or buf[4:8] != b"ET12":
        raise GenError(f"{path}: not an ExecuTorch program (no ET12 identifier)")
    try:
        program = Table(buf, encode.Get(packer.uoffset, buf, 0))
        for plan in _tables(program, _PROGRAM_EXECUTION_PLAN):
            if _text(plan, _PLAN_NAME) != method:
                continue
            ops = []
            for op in _tables(plan, _PLAN_OPERATORS):
                name, overload = _text(op, _OPERATOR_NAME), _text(op, _OPERATOR_OVERLOAD)
                ops.append(f"{name}.{overload}" if overload else name)
            offset = _slot(plan, _PLAN_NON_CONST_BUFFER_SIZES)
            sizes = list(plan.GetVectorAsNumpy(number_types.Int64Flags, offset)) if offset else []
            return ops, [int(size) for size in sizes[1:]]
    except (IndexError, struct.error, UnicodeDecodeError) as error:
        raise GenError(f"{path}: truncated or corrupt ExecuTorch program ({error})") from None
    raise GenError(f"{path}: no method {method!r}")


# --------------------------------------------------------------------------
# Operator schemas and C++ unboxing


@dataclass
class Arg:
    name: str
    type: str


@dataclass
class Op:
    name: str  # ns::name.overload
    schema: str
    kernel: str  # C++ function, e.g. torch::executor::native::add_out
    args: list[Arg] = field(default_factory=list)
    returns: list[str] = field(default_factory=list)


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_schema(schema: str) -> tuple[list[Arg], list[str]]:
    m = re.match(r"^\s*([\w:.]+)\((.*)\)\s*->\s*(.*)$", schema)
    if not m:
        raise GenError(f"cannot parse schema {schema!r}")
    args = []
    for part in _split_top(m.group(2)):
        if part == "*":
            continue
        part = part.split("=", 1)[0].strip()
        typ, name = part.rsplit(" ", 1)
        args.append(Arg(name=name, type=typ.strip()))
    ret = m.group(3).strip()
    if ret.startswith("(") and ret.endswith(")"):
        ret = ret[1:-1]
    returns = [r.strip().split(" ")[0] for r in _split_top(ret)] if ret else []
    return args, returns


T = "torch::executor::"
R = "::executorch::ET_RUNTIME_NAMESPACE::"

# schema base type -> (C++ value type, EValue conversion)
_BASE = {
    "int": ("int64_t", "to<int64_t>()"),
    "SymInt": ("int64_t", "to<int64_t>()"),
    "float": ("double", "to<double>()"),
    "bool": ("bool", "to<bool>()"),
    "ScalarType": (T + "ScalarType", "to<" + T + "ScalarType>()"),
    "MemoryFormat": (T + "MemoryFormat", "to<" + T + "MemoryFormat>()"),
    "Layout": (T + "Layout", "to<" + T + "Layout>()"),
    "Device": (T + "Device", "to<" + T + "Device>()"),
    # gelu's `str approximate`
    "str": ("std::string_view", "to<std::string_view>()"),
}
_LIST = {
    "int": (T + "ArrayRef<int64_t>", "toIntList()"),
    "SymInt": (T + "ArrayRef<int64_t>", "toIntList()"),
    "float": (T + "ArrayRef<double>", "toDoubleList()"),
    "bool": (T + "ArrayRef<bool>", "toBoolList()"),
    "Tensor": (T + "ArrayRef<" + T + "Tensor>", "toTensorList()"),
    "Tensor?": (T + "ArrayRef<std::optional<" + T + "Tensor>>", "toListOptionalTensor()"),
}


def cpp_arg(typ: str) -> tuple[str, str]:
    """(C++ parameter type, conversion expression suffix for an EValue)."""
    mutable = "!" in typ
    base = re.sub(r"\([^)]*\)", "", typ).strip()
    m = re.match(r"^(\w+\??)\[\d*\](\??)$", base)
    if m:
        elem, opt = m.group(1), m.group(2)
        if elem not in _LIST:
            raise GenError(f"unsupported list type {typ!r}")
        cpp, conv = _LIST[elem]
        if opt:
            return f"std::optional<{cpp}>", f"toOptional<{cpp}>()"
        return cpp, conv
    optional = base.endswith("?")
    base = base.rstrip("?")
    if base == "Tensor":
        if optional:
            return f"const std::optional<{T}Tensor> &", f"toOptional<{T}Tensor>()"
        if mutable:
            return f"{T}Tensor &", f"to<{T}Tensor>()"
        return f"const {T}Tensor &", f"to<{T}Tensor>()"
    if base == "Scalar":
        if optional:
            return f"const std::optional<{T}Scalar> &", f"toOptional<{T}Scalar>()"
        return f"const {T}Scalar &", f"to<{T}Scalar>()"
    if base not in _BASE:
        raise GenError(f"unsupported argument type {typ!r}")
    cpp, conv = _BASE[base]
    if optional:
        return f"std::optional<{cpp}>", f"toOptional<{cpp}>()"
    return cpp, conv


_BASE_TAGS = {
    "int": "isInt()",
    "SymInt": "isInt()",
    "ScalarType": "isInt()",
    "MemoryFormat": "isInt()",
    "Layout": "isInt()",
    "float": "isDouble()",
    "bool": "isBool()",
    "Tensor": "isTensor()",
    "Scalar": "isScalar()",
    "str": "isString()",
}
_LIST_TAGS = {
    "int": "isIntList()",
    "SymInt": "isIntList()",
    "float": "isDoubleList()",
    "bool": "isBoolList()",
    "Tensor": "isTensorList()",
    "Tensor?": "isListOptionalTensor()",
}


def arg_check(typ: str, value: str) -> str:
    """A C++ condition true when the EValue `value` holds what the schema type needs.

    EValue's to<T>() aborts on another tag: a program that passes the flatbuffer
    verifier can still hand a kernel an int where it takes a tensor, so the wrapper
    checks first and fails the call instead of the firmware."""
    base = re.sub(r"\([^)]*\)", "", typ).strip()
    m = re.match(r"^(\w+\??)\[\d*\](\??)$", base)
    if m:
        tag, optional = _LIST_TAGS[m.group(1)], bool(m.group(2))
    else:
        optional = base.endswith("?")
        tag = _BASE_TAGS.get(base.rstrip("?"), "")
    if not tag:
        return ""
    check = f"{value}->{tag}"
    return f"({value}->isNone() || {check})" if optional else check


def cpp_return(returns: list[str]) -> str:
    if not returns:
        return "void"
    types = []
    for r in returns:
        if not r.startswith("Tensor"):
            raise GenError(f"unsupported return type {r!r}")
        types.append(f"{T}Tensor &")
    return types[0] if len(types) == 1 else f"std::tuple<{', '.join(types)}>"


def native_name(kernel_name: str) -> str:
    """torch::executor::add_out -> torch::executor::native::add_out (ExecuTorch convention)."""
    ns, _, fn = kernel_name.rpartition("::")
    return f"{ns}::native::{fn}" if ns else f"native::{fn}"


OWN_NAMESPACE = "et_zephyr"
OWN_KERNELS_DIR = Path(__file__).resolve().parents[2] / "lib/src/kernels"


def own_kernel(name: str) -> tuple[str, Path] | None:
    """et_zephyr::NAME.out -> (et_zephyr::native::NAME_out, lib/src/kernels/NAME.cpp): the
    module's own operators follow that convention (scripts/et_zephyr/reference/own_ops.py)."""
    base, _, overload = name.split("::", 1)[1].partition(".")
    source = OWN_KERNELS_DIR / f"{base}.cpp"
    if overload != "out" or not source.is_file():
        return None
    return f"{OWN_NAMESPACE}::native::{base}_out", source


def load_schemas(
    functions_yaml: list[Path], extra_schemas: Path | None
) -> tuple[dict[str, str], dict[str, str]]:
    """op name -> schema, op name -> kernel C++ name (from ExecuTorch's YAML)."""
    schemas: dict[str, str] = {}
    kernels: dict[str, str] = {}
    for path in functions_yaml:
        for entry in yaml.safe_load(path.read_text()) or []:
            if "func" in entry:
                schema = entry["func"]
                name = schema.split("(", 1)[0]
                if "::" not in name:
                    name = "aten::" + name
                schemas[name] = schema
            elif "op" in entry:
                name = entry["op"] if "::" in entry["op"] else "aten::" + entry["op"]
            else:
                continue
            for k in entry.get("kernels") or []:
                if k.get("arg_meta") is None and "kernel_name" in k:
                    kernels[name] = k["kernel_name"]
    if extra_schemas is not None and extra_schemas.exists():
        for name, schema in (yaml.safe_load(extra_schemas.read_text()) or {}).items():
            schemas.setdefault(name, schema)
    return schemas, kernels


def schema_from_torch(names: list[str]) -> dict[str, str]:
    try:
        import torch  # noqa: PLC0415  (optional, only when no schema file exists)
    except ImportError:
        return {}
    out = {}
    for name in names:
        ns, rest = name.split("::", 1)
        base, _, overload = rest.partition(".")
        try:
            packet = getattr(getattr(torch.ops, ns), base)
            out[name] = str(getattr(packet, overload or "default")._schema)
        except (AttributeError, RuntimeError):
            continue
    return out


@dataclass
class Fault:
    """A test build's deliberately wrong kernel: `op`'s `call`-th call of every
    inference (of `calls_per_run`) gets one bit of its output flipped."""

    op: str
    call: int
    calls_per_run: int


def _fault_code(op: Op, fault: Fault | None, n_stack: int) -> str:
    if fault is None or fault.op != op.name:
        return ""
    if len(op.returns) != 1:
        raise GenError(f"{op.name} returns no single tensor to perturb")
    return (
        "        // CONFIG_ET_ZEPHYR_TEST_FAULT_OPERATOR: a wrong result on purpose.\n"
        "        static unsigned fault_calls;\n"
        f"        if (fault_calls++ % {fault.calls_per_run}u == {fault.call}u) {{\n"
        f"            auto &out = stack[{n_stack - 1}]->toTensor();\n"
        "            auto *bytes = static_cast<unsigned char *>(out.mutable_data_ptr());\n"
        "            bytes[out.nbytes() / 2] ^= 1u;\n"
        "        }\n"
    )


def generate_registration(ops: list[Op], profiling: bool, fault: Fault | None = None) -> str:
    decls: dict[str, list[str]] = {}
    bodies = []
    for op in ops:
        params, convs = [], []
        for i, a in enumerate(op.args):
            cpp, conv = cpp_arg(a.type)
            params.append(cpp)
            convs.append(f"        auto &&a{i} = stack[{i}]->{conv};")
        ns, _, fn = op.kernel.rpartition("::")
        sig = f"{cpp_return(op.returns)} {fn}({T}KernelRuntimeContext &, {', '.join(params)});"
        decls.setdefault(ns, []).append(sig)
        # ExecuTorch's emitter passes one value for the result: the tensor, a list of
        # the tensors where the schema returns several (native_layer_norm.out), and an
        # empty list (unchecked) where it returns nothing (split_with_sizes_copy.out).
        n_stack = len(op.args) + 1
        checks = [arg_check(a.type, f"stack[{i}]") for i, a in enumerate(op.args)]
        if op.returns:
            result = "isTensor()" if len(op.returns) == 1 else "isTensorList()"
            checks.append(f"stack[{len(op.args)}]->{result}")
        condition = "\n            && ".join(c for c in checks if c)
        call_args = ", ".join(["context"] + [f"a{i}" for i in range(len(op.args))])
        scope = (
            f"        {T}internal::EventTracerProfileOpScope scope(\n"
            f'            context.internal_event_tracer(), "{op.name}");\n'
            if profiling
            else ""
        )
        bodies.append(
            f"    {R}Kernel(\n"
            f'        "{op.name}",\n'
            f"        []({T}KernelRuntimeContext &context, {T}Span<{T}EValue *> stack) {{\n"
            f"        if (stack.size() != {n_stack}\n"
            f"            || !({condition or 'true'})) {{\n"
            f"            context.fail({T}Error::InvalidProgram);\n"
            f"            return;\n"
            f"        }}\n"
            + "\n".join(convs)
            + "\n"
            + scope
            + f"        {op.kernel}({call_args});\n"
            + _fault_code(op, fault, n_stack)
            + "    }),"
        )
    out = [
        "// SPDX-License-Identifier: Apache-2.0",
        "// Generated by et-zephyr (zephyr/cmake/et_zephyr_gen.py): kernel registration",
        "// for exactly the operators of the model. Do not edit.",
        "",
        "#include <optional>",
        "#include <string_view>",
        "#include <tuple>",
        "",
        "#include <executorch/runtime/core/evalue.h>",
        "#include <executorch/runtime/core/exec_aten/exec_aten.h>",
        "#include <executorch/runtime/core/event_tracer_hooks.h>",
        "#include <executorch/runtime/kernel/kernel_runtime_context.h>",
        "#include <executorch/runtime/kernel/operator_registry.h>",
        "",
    ]
    for ns, sigs in decls.items():
        out.append(f"namespace {ns} {{")
        out.extend(sigs)
        out.append(f"}} // namespace {ns}")
        out.append("")
    out.append("namespace {")
    out.append(f"const {R}Kernel kKernels[] = {{")
    out.extend(bodies)
    out.append("};")
    out.append("} // namespace")
    out.append("")
    out.append('extern "C" int et_zephyr_register_kernels(void) {')
    out.append(
        f"    return static_cast<int>({R}register_kernels("
        f"::executorch::runtime::Span<const {R}Kernel>(kKernels, "
        "sizeof(kKernels) / sizeof(kKernels[0]))));"
    )
    out.append("}")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------
# Kernel sources


def _find_source(directory: Path, base: str, fn: str) -> Path | None:
    candidate = directory / f"op_{base}.cpp"
    if candidate.exists():
        return candidate
    pattern = re.compile(r"\b" + re.escape(fn) + r"\s*\(")
    for path in sorted(directory.glob("op_*.cpp")):
        if pattern.search(path.read_text(errors="replace")):
            return path
    return None


def _util_sources(sources: list[Path], et_dir: Path) -> list[Path]:
    """Portable util/pattern .cpp files whose headers the sources include, transitively."""
    seen: set[Path] = set()
    found: list[Path] = []
    todo = list(sources)
    include = re.compile(r'#include\s*[<"]executorch/(kernels/portable/cpu/[\w/]+)\.h[>"]')
    local = re.compile(r'#include\s*"([\w]+\.h)"')
    while todo:
        path = todo.pop()
        if path in seen or not path.exists():
            continue
        seen.add(path)
        text = path.read_text(errors="replace")
        todo.extend(path.parent / h for h in local.findall(text))
        for rel in include.findall(text):
            header = et_dir / f"{rel}.h"
            todo.append(header)
            cpp = et_dir / f"{rel}.cpp"
            if cpp.exists() and cpp not in found:
                found.append(cpp)
                todo.append(cpp)
    return found


# --------------------------------------------------------------------------
# Model embedding


def read_conf(path: Path | None) -> dict[str, int]:
    values: dict[str, int] = {}
    if path is None or not path.exists():
        return values
    for line in path.read_text().splitlines():
        m = re.match(r"^\s*(CONFIG_\w+)\s*=\s*(\d+)\s*$", line)
        if m:
            values[m.group(1)] = int(m.group(2))
    return values


@dataclass(frozen=True)
class Region:
    """A devicetree memory region an arena goes to: its linker section and size."""

    section: str
    size: int


def parse_region(text: str) -> tuple[str, Region]:
    """ARENA=SECTION:SIZE, ARENA one of planned1, planned2, method, temp."""
    arena, _, rest = text.partition("=")
    section, _, size = rest.rpartition(":")
    try:
        size_bytes = int(size, 0)  # Zephyr's dt_reg_size() gives hex: 0x400000
    except ValueError:
        size_bytes = -1
    if arena not in ("planned1", "planned2", "method", "temp") or not section or size_bytes < 0:
        raise argparse.ArgumentTypeError(f"--region {text!r} is not ARENA=SECTION:SIZE")
    return arena, Region(section, size_bytes)


def parse_memory(kind: str):
    """NODE:SIZE of a chosen devicetree node, as the fit check names it."""

    def parse(text: str) -> MemoryRegion:
        node, _, size = text.rpartition(":")
        try:
            size_bytes = int(size, 0)
        except ValueError:
            size_bytes = -1
        if not node or size_bytes <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} is not NODE:SIZE")
        return MemoryRegion(f"{kind} ({node.rsplit('/', 1)[-1]})", size_bytes)

    return parse


def regions_size(regions: dict[str, Region], section: str) -> int:
    return next(r.size for r in regions.values() if r.section == section)


def check_board_fit(
    args: argparse.Namespace, program: int, placed: dict[str, int], regions: dict[str, Region]
) -> None:
    """Stop before compiling anything when the model cannot fit the board's memories."""
    in_flash = args.model_section.startswith(".rodata")
    in_ram = not args.arena_section or args.arena_section.startswith((".noinit", ".bss"))
    flash = args.board_flash if in_flash else None
    ram = args.board_ram if in_ram else None
    arenas = {k: s for k, s in placed.items() if s and region_of(regions, k) is None}
    footprint = Footprint(program, arenas)
    problem = fit_problem(args.board, footprint, flash, ram)
    if problem:
        raise GenError(problem)
    if flash is not None or ram is not None:
        # Arenas in a region of their own (e.g. the DTCM), with that region's size.
        used: dict[str, int] = {}
        for kind, size in placed.items():
            region = region_of(regions, kind)
            if region is not None and size:
                used[region.section] = used.get(region.section, 0) + aligned16(size)
        others = [
            (f"arenas in {section}", bytes_, regions_size(regions, section))
            for section, bytes_ in used.items()
        ]
        print(f"et-zephyr: {fit_summary(args.board, footprint, flash, ram, others)}")


def region_of(regions: dict[str, Region], kind: str) -> Region | None:
    """The region of an arena; a single planned buffer is memory id 1's."""
    return regions.get("planned1" if kind == "planned" else kind)


def check_regions(regions: dict[str, Region], placed: dict[str, int]) -> None:
    """Fail with the bytes needed when the arenas given to one region do not fit it."""
    per_section: dict[str, list[tuple[str, int]]] = {}
    for kind, size in placed.items():
        region = region_of(regions, kind)
        if region is not None and size:
            per_section.setdefault(region.section, []).append((kind, size))
    for section, arenas in per_section.items():
        need = sum(aligned16(size) for _, size in arenas)
        have = regions_size(regions, section)
        if need > have:
            names = ", ".join(f"{kind} {size} B" for kind, size in arenas)
            raise GenError(
                f"memory region {section} has {have} bytes, the model's arenas placed there "
                f"need {need} ({names}): give some of them another region "
                "(CONFIG_ET_ZEPHYR_PLANNED_REGION_1/_2, _METHOD_ARENA_REGION, _TEMP_ARENA_REGION; "
                "CONFIG_ET_ZEPHYR_ARENAS_IN_DTCM=n keeps them in the main RAM)"
            )


def chosen_regions(args: argparse.Namespace, placed: dict[str, int]) -> dict[str, Region]:
    """The regions the arenas go to: those Kconfig names, and the board's DTCM by default
    (CONFIG_ET_ZEPHYR_ARENAS_IN_DTCM) where the arenas fit it; where they do not, they stay
    in the main RAM, which is said."""
    regions: dict[str, Region] = dict(args.region)
    defaults = {arena: r for arena, r in args.default_region if arena not in regions}
    if defaults:
        try:
            check_regions(regions | defaults, placed)
            return regions | defaults
        except GenError:
            region = next(iter(defaults.values()))
            need = sum(aligned16(s) for k, s in placed.items() if region_of(defaults, k))
            print(
                f"et-zephyr: note: the arenas ({need:,} B) do not fit the board's "
                f"{region.section} ({region.size:,} B): they stay in the main RAM "
                "(et-export --fast-arena BYTES puts the largest activations there)"
            )
    check_regions(regions, placed)
    return regions


def model_sources(args: argparse.Namespace, planned: list[int], manifest: dict) -> None:
    name = args.name
    out = args.out_dir
    pte = args.pte.resolve()
    size = pte.stat().st_size
    conf = read_conf(args.conf)

    def pick(option: str, kconfig: int, fallback: int) -> int:
        return kconfig if kconfig > 0 else conf.get(option, fallback)

    planned_need = sum(aligned16(b) for b in planned)
    planned_size = pick("CONFIG_ET_ZEPHYR_PLANNED_ARENA_SIZE", args.planned_arena, planned_need)
    if planned_size < planned_need:
        raise GenError(
            f"{pte.name}: planned arena of {planned_size} bytes is smaller than the "
            f"{planned_need} bytes its planned buffers need (CONFIG_ET_ZEPHYR_PLANNED_ARENA_SIZE)"
        )
    method_size = pick("CONFIG_ET_ZEPHYR_METHOD_ARENA_SIZE", args.method_arena, 8192)
    if args.method_arena <= 0 and "CONFIG_ET_ZEPHYR_METHOD_ARENA_SIZE" in conf:
        method_size = firmware_method_arena(method_size)
    temp_size = pick("CONFIG_ET_ZEPHYR_TEMP_ARENA_SIZE", args.temp_arena, 0)

    section = args.model_section
    (out / f"{name}_pte.S").write_text(
        "/* SPDX-License-Identifier: Apache-2.0 */\n"
        "/* Generated by et-zephyr: the program, executed in place from flash. */\n"
        f'\t.section {section},"a"\n'
        "\t.balign 16\n"
        f"\t.global {name}_pte\n"
        f"\t.type {name}_pte, %object\n"
        f"{name}_pte:\n"
        f'\t.incbin "{pte}"\n'
        f"\t.size {name}_pte, . - {name}_pte\n"
    )

    def quant(entries: list[dict]) -> tuple[str, int]:
        items = []
        for e in entries:
            scale, zp = e.get("scale"), e.get("zero_point")
            if scale is None or zp is None:
                return "NULL", 0
            items.append(f"{{{float(scale)!r}f, {int(zp)}}}")
        return ", ".join(items), len(items)

    def dtypes(entries: list[dict]) -> tuple[str, int]:
        """The C API's dtype constants, so init checks them against the program."""
        names = [f"ET_ZEPHYR_DTYPE_{str(e.get('dtype', '')).upper()}" for e in entries]
        if not names or any(n.removeprefix("ET_ZEPHYR_DTYPE_") not in _C_DTYPES for n in names):
            return "NULL", 0
        return ", ".join(names), len(names)

    in_types, n_in_types = dtypes(manifest.get("inputs", [])) if manifest else ("NULL", 0)
    out_types, n_out_types = dtypes(manifest.get("outputs", [])) if manifest else ("NULL", 0)
    in_q, n_in = quant(manifest.get("inputs", [])) if manifest else ("NULL", 0)
    out_q, n_out = quant(manifest.get("outputs", [])) if manifest else ("NULL", 0)
    # Several planned buffers (et-export --fast-arena): one array each, in its own region.
    buffers = planned if len(planned) > 1 else []
    if buffers:
        placed = {f"planned{i}": size_ for i, size_ in enumerate(buffers, start=1)}
    else:
        placed = {"planned": planned_size}
    # et-export --stateful: the recurrent states the runtime keeps between runs, carved
    # from one array (each 16-byte aligned).
    states = manifest.get("states", []) if manifest else []
    state_offsets = [
        sum(aligned16(int(s["nbytes"])) for s in states[:k]) for k in range(len(states))
    ]
    state_size = sum(aligned16(int(s["nbytes"])) for s in states)
    placed |= {"method": method_size, "temp": temp_size, "state": state_size}
    regions = chosen_regions(args, placed)
    check_board_fit(args, size, placed, regions)

    def arena(kind: str, size_: int) -> str:
        if size_ == 0:
            return ""
        region = region_of(regions, kind)
        # REGION.<symbol>: Zephyr's region output section keeps *(REGION.*), and the input
        # section's name tells et-size (and a reader of the map) which arena it is.
        section = f"{region.section}.{name}_{kind}_arena" if region else args.arena_section
        attr = f' __attribute__((section("{section}")))' if section else ""
        aligned = "__attribute__((aligned(16)))"
        return f"static uint8_t {name}_{kind}_arena[{size_}] {aligned}{attr};\n"

    planned_arrays = "".join(
        arena(kind, size_) for kind, size_ in placed.items() if "planned" in kind
    )

    c = [
        "/* SPDX-License-Identifier: Apache-2.0 */",
        f"/* Generated by et-zephyr from {pte.name}: arenas and configuration. */",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        f'#include "{name}_model.h"',
        "",
        f"extern const uint8_t {name}_pte[];",
        "",
        planned_arrays
        + arena("method", method_size)
        + arena("temp", temp_size)
        + arena("state", state_size),
    ]
    if buffers:
        items = ", ".join(
            f"{name}_planned{i}_arena" if size_ else "NULL"
            for i, size_ in enumerate(buffers, start=1)
        )
        sizes = ", ".join(str(size_) for size_ in buffers)
        c.append(f"static uint8_t *const {name}_planned_buffers[] = {{{items}}};")
        c.append(f"static const size_t {name}_planned_buffer_sizes[] = {{{sizes}}};")
    if n_in:
        c.append(f"static const struct et_zephyr_quant {name}_input_quant[] = {{{in_q}}};")
    if n_out:
        c.append(f"static const struct et_zephyr_quant {name}_output_quant[] = {{{out_q}}};")
    if n_in_types:
        c.append(f"static const int32_t {name}_input_dtypes[] = {{{in_types}}};")
    if n_out_types:
        c.append(f"static const int32_t {name}_output_dtypes[] = {{{out_types}}};")
    if states:
        items = ", ".join(
            f"{{{name}_state_arena + {offset}, {int(s['nbytes'])}, {int(s['reset_value'])}}}"
            for s, offset in zip(states, state_offsets)
        )
        c.append(f"static const struct et_zephyr_state {name}_states[] = {{{items}}};")

    def ref(kind: str, size_: int) -> str:
        return f"{name}_{kind}_arena" if size_ else "NULL"

    c += [
        "",
        f"const struct et_zephyr_config {name}_config = {{",
        f"    .pte = {name}_pte,",
        f"    .pte_size = {size},",
        "    .method_name = NULL,",
        f"    .planned_arena = {ref('planned', 0 if buffers else planned_size)},",
        f"    .planned_arena_size = {0 if buffers else planned_size},",
        f"    .planned_buffers = {name + '_planned_buffers' if buffers else 'NULL'},",
        f"    .planned_buffer_sizes = {name + '_planned_buffer_sizes' if buffers else 'NULL'},",
        f"    .num_planned_buffers = {len(buffers)},",
        f"    .method_arena = {ref('method', method_size)},",
        f"    .method_arena_size = {method_size},",
        f"    .temp_arena = {ref('temp', temp_size)},",
        f"    .temp_arena_size = {temp_size},",
        f"    .verify = {'true' if args.verify else 'false'},",
        f"    .input_quant = {name + '_input_quant' if n_in else 'NULL'},",
        f"    .num_input_quant = {n_in},",
        f"    .output_quant = {name + '_output_quant' if n_out else 'NULL'},",
        f"    .num_output_quant = {n_out},",
        f"    .input_dtypes = {name + '_input_dtypes' if n_in_types else 'NULL'},",
        f"    .num_input_dtypes = {n_in_types},",
        f"    .output_dtypes = {name + '_output_dtypes' if n_out_types else 'NULL'},",
        f"    .num_output_dtypes = {n_out_types},",
        f"    .states = {name + '_states' if states else 'NULL'},",
        f"    .num_states = {len(states)},",
        "};",
    ]
    (out / f"{name}_model.c").write_text("\n".join(c) + "\n")
    guard = f"ET_ZEPHYR_MODEL_{name.upper()}_H_"
    (out / f"{name}_model.h").write_text(
        "/* SPDX-License-Identifier: Apache-2.0 */\n"
        f"/* Generated by et-zephyr from {pte.name}. */\n"
        f"#ifndef {guard}\n#define {guard}\n\n"
        "#include <et_zephyr/et_zephyr.h>\n\n"
        '#ifdef __cplusplus\nextern "C" {\n#endif\n\n'
        f"/** The {name} model: pass to et_zephyr_init(). */\n"
        f"extern const struct et_zephyr_config {name}_config;\n\n"
        f"#define {name.upper()}_PTE_SIZE {size}\n"
        f"#define {name.upper()}_PLANNED_ARENA_SIZE {planned_size}\n"
        f"#define {name.upper()}_METHOD_ARENA_SIZE {method_size}\n"
        f"#define {name.upper()}_TEMP_ARENA_SIZE {temp_size}\n"
        f"#define {name.upper()}_STATE_SIZE {state_size}\n\n"
        "#ifdef __cplusplus\n}\n#endif\n\n"
        f"#endif /* {guard} */\n"
    )
    print(
        f"et-zephyr: {name}: .pte {size} B in {section}; arenas planned {planned_size} B, "
        f"method {method_size} B, temp {temp_size} B"
        + (f"; {len(states)} carried state(s) {state_size} B" if states else "")
    )


# --------------------------------------------------------------------------


def check_target(manifest: dict, isa: str, cpu: str, path: Path | None) -> None:
    target = manifest.get("target") or {}
    m_isa, m_cpu = target.get("isa"), target.get("cpu")
    if m_isa and m_isa != isa:
        raise GenError(
            f"{path}: the model was exported for the {m_isa!r} ISA tier ({m_cpu}), but this "
            f"firmware builds CMSIS-NN for {isa!r} ({cpu}); CMSIS-NN scratch sizes differ "
            f"between tiers. Re-export with `et-export --target {cpu} --isa {isa}` or set "
            f"CONFIG_ET_ZEPHYR_ISA_{m_isa.upper()}=y."
        )
    if m_cpu and cpu and m_cpu != cpu:
        print(f"et-zephyr: note: model exported for {m_cpu}, firmware CPU is {cpu} (same ISA tier)")


def check_scratch_kernels(manifest: dict, built: list[str], path: Path | None) -> None:
    """A program whose scratch buffers were sized for et-zephyr's own kernels runs only
    where they are built: upstream's kernels refuse any scratch but CMSIS-NN's size."""
    for kernel in (manifest.get("target") or {}).get("scratch_for", []):
        if kernel not in built:
            raise GenError(
                f"{path}: the model's scratch buffers are planned for et-zephyr's {kernel} "
                f"kernel, which this firmware does not build; set "
                f"CONFIG_ET_ZEPHYR_{kernel.upper()}=y or re-export with "
                f"`et-export --kernels cmsis-nn`."
            )


def sources_without_fallback(
    manifest: dict, overrides: dict[str, tuple[str, Path]], keep: bool
) -> list[Path]:
    """The own kernels' sources to build without their upstream fallback: those the
    manifest says take every call of the model's (a kernel is named by its source's
    stem), unless the firmware keeps the fallbacks."""
    if keep:
        return []
    without = set((manifest.get("target") or {}).get("kernels_without_fallback", []))
    return sorted({source for _, source in overrides.values() if source.stem in without})


def injected_fault(args: argparse.Namespace, manifest: dict, ops: list[str]) -> Fault | None:
    if not args.fault_operator:
        return None
    if args.fault_operator not in ops:
        raise GenError(
            f"CONFIG_ET_ZEPHYR_TEST_FAULT_OPERATOR={args.fault_operator}: the model calls no "
            f"such operator (it calls {', '.join(ops)})"
        )
    calls = (manifest.get("operators") or {}).get(args.fault_operator, {}).get("calls")
    if not calls:
        raise GenError("a fault can be injected only with et-export's manifest (NAME.json)")
    if not 0 <= args.fault_call < calls:
        raise GenError(
            f"CONFIG_ET_ZEPHYR_TEST_FAULT_CALL={args.fault_call}: {args.fault_operator} runs "
            f"{calls} time(s) per inference"
        )
    return Fault(args.fault_operator, args.fault_call, calls)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pte", type=Path, required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--ops-yaml", type=Path)
    p.add_argument("--manifest", type=Path)
    p.add_argument("--conf", type=Path)
    p.add_argument("--schemas", type=Path, help="NAME.schemas.yaml (op -> schema) from et-export")
    p.add_argument("--executorch-dir", type=Path, required=True)
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--isa", required=True)
    p.add_argument("--cpu", default="")
    p.add_argument("--model-section", default=".rodata.et_zephyr_model")
    p.add_argument("--arena-section", default="")
    p.add_argument(
        "--region",
        type=parse_region,
        action="append",
        default=[],
        metavar="ARENA=SECTION:SIZE",
        help="place an arena (planned1, planned2, method, temp) in a devicetree memory "
        "region's linker section of SIZE bytes",
    )
    p.add_argument(
        "--default-region",
        type=parse_region,
        action="append",
        default=[],
        metavar="ARENA=SECTION:SIZE",
        help="as --region, for an arena Kconfig places nowhere: taken only when the arenas "
        "given such regions fit them (the board's DTCM, CONFIG_ET_ZEPHYR_ARENAS_IN_DTCM)",
    )
    p.add_argument("--planned-arena", type=int, default=0)
    p.add_argument("--method-arena", type=int, default=0)
    p.add_argument("--temp-arena", type=int, default=0)
    p.add_argument("--kernel-slots", type=int, default=0)
    p.add_argument("--board", default="the board", help="board name, for the fit check's message")
    p.add_argument(
        "--board-flash",
        type=parse_memory("flash"),
        metavar="NODE:SIZE",
        help="the board's flash (chosen zephyr,flash or code partition): the program must fit",
    )
    p.add_argument(
        "--board-ram",
        type=parse_memory("RAM"),
        metavar="NODE:SIZE",
        help="the board's RAM (chosen zephyr,sram): the arenas with no region of their own fit it",
    )
    p.add_argument("--cortex-m", type=int, default=1)
    p.add_argument("--portable", type=int, default=1)
    p.add_argument("--profiling", type=int, default=0)
    p.add_argument("--verify", type=int, default=0)
    p.add_argument(
        "--kernel-override",
        nargs=3,
        action="append",
        default=[],
        metavar=("OP", "FUNCTION", "SOURCE"),
        help="register FUNCTION (defined in SOURCE, with the upstream kernel's signature) for "
        "OP; the upstream kernel is still compiled, for FUNCTION to fall back on",
    )
    p.add_argument(
        "--scratch-kernel",
        action="append",
        default=[],
        metavar="KERNEL",
        help="an et-zephyr kernel this firmware builds that a program may size scratch for "
        "(e.g. depthwise_conv_mve)",
    )
    p.add_argument(
        "--keep-fallbacks",
        type=int,
        default=0,
        help="1: build every own kernel with its upstream fallback, even where the model's "
        "manifest says the kernel takes every call",
    )
    p.add_argument(
        "--fault-operator",
        metavar="OP",
        help="test builds: flip one bit of OP's output at call --fault-call of each inference",
    )
    p.add_argument("--fault-call", type=int, default=0, metavar="N")
    p.add_argument(
        "--no-kernel-sources",
        action="store_true",
        help="do not look for kernel sources (e.g. with the executorch wheel's YAML only)",
    )
    args = p.parse_args(argv)

    try:
        et = args.executorch_dir
        out = args.out_dir
        out.mkdir(parents=True, exist_ok=True)
        pte_ops, planned = read_pte(args.pte)
        manifest = {}
        if args.manifest is not None and args.manifest.exists():
            manifest = json.loads(args.manifest.read_text())
            check_target(manifest, args.isa, args.cpu, args.manifest)
            check_scratch_kernels(manifest, args.scratch_kernel, args.manifest)
        else:
            print(f"et-zephyr: warning: no manifest for {args.pte.name}: ISA tier not checked")
        if args.ops_yaml is not None and args.ops_yaml.exists():
            selected = yaml.safe_load(args.ops_yaml.read_text()) or {}
            ops = sorted((selected.get("operators") or {}).keys())
            missing = sorted(set(pte_ops) - set(ops))
            if missing:
                raise GenError(f"{args.ops_yaml}: lacks operators the .pte calls: {missing}")
        else:
            ops = sorted(set(pte_ops))

        cortex_yaml = et / "backends/cortex_m/ops/operators.yaml"
        portable_yaml = et / "kernels/portable/functions.yaml"
        schemas, kernel_names = load_schemas([cortex_yaml, portable_yaml], args.schemas)
        unknown = [o for o in ops if o not in schemas]
        if unknown:
            schemas.update(schema_from_torch(unknown))

        overrides = {op: (function, Path(source)) for op, function, source in args.kernel_override}
        selected_ops: list[Op] = []
        cortex_srcs: list[Path] = []
        portable_srcs: list[Path] = []
        prim = False
        problems = []
        for name in ops:
            if name.startswith("executorch_prim::") or name.startswith("aten::sym_"):
                prim = True
                continue
            ns = name.split("::", 1)[0]
            if ns == OWN_NAMESPACE:
                if not args.cortex_m:
                    problems.append(f"{name}: CONFIG_ET_ZEPHYR_CORTEX_M_KERNELS is off")
                    continue
                own = own_kernel(name)
                if own is None:
                    problems.append(f"{name}: no kernel in {OWN_KERNELS_DIR}")
                    continue
                if name not in schemas:
                    problems.append(f"{name}: schema unknown (export with et-export)")
                    continue
                op_args, returns = parse_schema(schemas[name])
                selected_ops.append(Op(name, schemas[name], own[0], op_args, returns))
                cortex_srcs.append(own[1])
                continue
            if ns == "cortex_m" and not args.cortex_m:
                problems.append(f"{name}: CONFIG_ET_ZEPHYR_CORTEX_M_KERNELS is off")
                continue
            if ns != "cortex_m" and not args.portable:
                problems.append(f"{name}: CONFIG_ET_ZEPHYR_PORTABLE_KERNELS is off")
                continue
            if name not in kernel_names:
                problems.append(f"{name}: no kernel in {cortex_yaml.name} or {portable_yaml.name}")
                continue
            if name not in schemas:
                problems.append(
                    f"{name}: schema unknown (export with et-export, which writes "
                    f"NAME.schemas.yaml, or install torch)"
                )
                continue
            op_args, returns = parse_schema(schemas[name])
            kernel = native_name(kernel_names[name])
            if name in overrides:
                kernel, source = overrides[name]
                (cortex_srcs if ns == "cortex_m" else portable_srcs).append(source)
            selected_ops.append(Op(name, schemas[name], kernel, op_args, returns))
            base = name.split("::", 1)[1].split(".", 1)[0]
            fn = kernel_names[name].rpartition("::")[2]
            directory = et / (
                "backends/cortex_m/ops" if ns == "cortex_m" else "kernels/portable/cpu"
            )
            if args.no_kernel_sources:
                continue
            src = _find_source(directory, base, fn)
            if src is None:
                problems.append(f"{name}: no source defining {fn} in {directory}")
                continue
            (cortex_srcs if ns == "cortex_m" else portable_srcs).append(src)
        if problems:
            raise GenError("operators the build cannot provide:\n  " + "\n  ".join(problems))

        util_srcs = _util_sources(cortex_srcs + portable_srcs, et)
        prim_srcs: list[Path] = []
        prim_kernels = 0
        if prim:
            prim_dir = et / "kernels/prim_ops"
            prim_srcs = sorted(prim_dir.glob("*.cpp"))
            text = (prim_dir / "register_prim_ops.cpp").read_text()
            prim_kernels = len(re.findall(r"^\s*Kernel\(", text, re.M))

        fault = injected_fault(args, manifest, [op.name for op in selected_ops])
        (out / "et_zephyr_registration.cpp").write_text(
            generate_registration(selected_ops, bool(args.profiling), fault)
        )
        needed = len(selected_ops) + prim_kernels
        slots = args.kernel_slots or needed
        if slots < needed:
            raise GenError(
                f"CONFIG_ET_ZEPHYR_KERNEL_SLOTS={slots} but the model registers {needed} kernels"
            )
        (out / "et_zephyr_kernel_slots.h").write_text(
            "/* SPDX-License-Identifier: Apache-2.0 */\n"
            "/* Generated by et-zephyr: kernel registry size for this model. */\n"
            f"#define MAX_KERNEL_NUM {max(slots, 1)}\n"
        )

        def cmake_list(var: str, paths: list[Path]) -> str:
            items = "\n".join(f'  "{p.resolve()}"' for p in paths)
            return f"set({var}\n{items}\n)\n"

        without_fallback = sources_without_fallback(manifest, overrides, bool(args.keep_fallbacks))
        (out / "et_zephyr_sources.cmake").write_text(
            "# Generated by et-zephyr: kernel sources for the model's operators.\n"
            + cmake_list("ET_ZEPHYR_CORTEX_M_SOURCES", cortex_srcs)
            + cmake_list("ET_ZEPHYR_PORTABLE_SOURCES", portable_srcs + util_srcs)
            + cmake_list("ET_ZEPHYR_PRIM_SOURCES", prim_srcs)
            + cmake_list("ET_ZEPHYR_SOURCES_WITHOUT_FALLBACK", without_fallback)
            + f'set(ET_ZEPHYR_OPERATORS "{";".join(ops)}")\n'
            + f"set(ET_ZEPHYR_KERNEL_COUNT {needed})\n"
        )
        model_sources(args, planned, manifest)
        if without_fallback:
            print(
                f"et-zephyr: {args.name}: "
                + ", ".join(source.stem for source in without_fallback)
                + " take every call: their upstream fallbacks are not built"
            )
        print(
            f"et-zephyr: {args.name}: {len(ops)} operator(s), {needed} kernel slot(s): "
            + ", ".join(ops)
        )
    except GenError as e:
        print(f"et-zephyr: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
